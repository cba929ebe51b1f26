/* SPDX-License-Identifier: MIT */
/* The io.gpreempt Varlink interface: what gpreemptctl (and varlinkctl) can ask the daemon. */
#pragma once

#include <sys/types.h>

#include "varlink-server.h"

struct manager;

/* The control socket's name inside the runtime directory (gpreemptctl connects to it). */
#define API_SOCKET_NAME "io.gpreempt"

extern const struct varlink_interface api_interface;

/* The group allowed to read (status, verify-config); (gid_t)-1 when it does not exist. */
gid_t api_read_group(const char *name);
