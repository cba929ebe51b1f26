/* SPDX-License-Identifier: MIT */
/*
 * A Varlink server on sd-event: non-blocking Unix-socket connections with
 * bounded buffers, callers identified by SO_PEERCRED and authorised per
 * method, org.varlink.service introspection answered here.
 *
 * Hostile clients: a message without its NUL within VARLINK_MESSAGE_MAX,
 * a partial message left hanging, an idle connection, or a client that does
 * not read its replies is disconnected; anything that is not a valid call is
 * answered with an error. Nothing a client sends can block the loop.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

struct json_object;
struct varlink_server;
struct varlink_call;

/* Connections beyond this are closed at once. */
/*
 * Connections: at most _MAX at once. A user other than root holds at most
 * _PER_UID of them, and users who may not read the server's state (neither
 * root nor the read group) share all but _RESERVED: one local user can
 * never lock root or the read group out. A connection over its budget is
 * answered TooManyConnections at its first call, then closed; such
 * connections are few (_REFUSED_MAX) and short-lived.
 */
#define VARLINK_SERVER_CONNECTIONS_MAX 64
#define VARLINK_SERVER_CONNECTIONS_PER_UID 8
#define VARLINK_SERVER_CONNECTIONS_RESERVED 16
#define VARLINK_SERVER_CONNECTIONS_REFUSED_MAX 16
/* A started message must be completed within this. */
#define VARLINK_SERVER_PARTIAL_TIMEOUT_USEC (2u * 1000000u)
/* A connection with no call for this long is closed. */
#define VARLINK_SERVER_IDLE_TIMEOUT_USEC (60u * 1000000u)
/* Replies a client has not read yet. */
#define VARLINK_SERVER_OUTPUT_MAX (4u * 1024u * 1024u)

enum varlink_access {
        VARLINK_ACCESS_READ,  /* root and members of the read group */
        VARLINK_ACCESS_WRITE, /* root */
};

/*
 * Called for a call to this method. It must answer with varlink_call_reply()
 * or varlink_call_error() before returning (oneway calls' answers are dropped).
 */
typedef void (*varlink_method_fn)(struct varlink_call *call, struct json_object *parameters,
                                  void *userdata);

struct varlink_method {
        const char *name; /* without the interface, e.g. "Status" */
        enum varlink_access access;
        varlink_method_fn fn;
};

struct varlink_interface {
        const char *name;        /* e.g. "io.gpreempt" */
        const char *description; /* the Varlink IDL text; must declare PermissionDenied, InternalError and
                                  * TooManyConnections (limit: int) */
        const struct varlink_method *methods;
        size_t n_methods;
};

struct varlink_service_info {
        const char *vendor, *product, *version, *url;
};

int varlink_server_new(sd_event *event, const struct varlink_service_info *info,
                       const struct varlink_interface *iface, gid_t read_gid, void *userdata,
                       struct varlink_server **ret_server);
/* Serves a listening socket (takes the fd, also on failure). */
int varlink_server_listen_fd(struct varlink_server *s, int fd);
/* Binds a new socket at path (replacing a stale one), mode 0666: authorisation is per call. */
int varlink_server_listen_path(struct varlink_server *s, const char *path);
void varlink_server_free(struct varlink_server *s);

int varlink_call_reply(struct varlink_call *call, struct json_object *parameters);
/* error is the unqualified name within the server's interface ("NoSuchProcess") or a full one. */
int varlink_call_error(struct varlink_call *call, const char *error, struct json_object *parameters);
uid_t varlink_call_peer_uid(const struct varlink_call *call);
