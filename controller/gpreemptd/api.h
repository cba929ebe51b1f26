/* SPDX-License-Identifier: MIT */
/* The io.gpreempt Varlink interface: what gpreemptctl (and varlinkctl) can ask the daemon. */
#pragma once

#include <sys/types.h>

#include "api-names.h"
#include "varlink-server.h"

struct manager;

extern const struct varlink_interface api_interface;

/* The group allowed to read (status, verify-config); (gid_t)-1 when it does not exist. */
gid_t api_read_group(const char *name);
