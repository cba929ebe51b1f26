/* SPDX-License-Identifier: MIT */
/*
 * The names both ends of the control socket agree on: the Varlink interface
 * gpreemptd serves (gpreemptd/api.c) and gpreemptctl calls, the socket's
 * file name inside the runtime directory, and the runtime directory the
 * shipped unit gives the daemon (RuntimeDirectory=gpreempt).
 */
#pragma once

#define API_INTERFACE "io.gpreempt"
/* An error or method name is the interface's name, a dot, and its own. */
#define API_QUALIFIED(name) API_INTERFACE "." name
#define API_SOCKET_NAME API_INTERFACE
#define API_DEFAULT_RUNTIME_DIR "/run/gpreempt"
