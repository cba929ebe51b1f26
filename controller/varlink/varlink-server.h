/* SPDX-License-Identifier: MIT */
/*
 * A Varlink server on sd-event: non-blocking Unix-socket connections with
 * bounded buffers, callers identified by SO_PEERCRED and authorised per
 * method, org.varlink.service introspection answered here.
 *
 * Calls are answered in order, one at a time per connection; a client may
 * send several without waiting (pipelining). Every string a reply carries
 * is made UTF-8 on the way out (printable.h), whatever a method put in it.
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
#include <sys/stat.h>
#include <systemd/sd-event.h>

struct json_object;
struct varlink_server;
struct varlink_call;

/*
 * Connections: at most _MAX at once. A user other than root holds at most
 * _PER_UID of them, and users who may not read the server's state (neither
 * root nor the read group) share all but _RESERVED: one local user can
 * never lock root or the read group out. A connection over a budget is
 * answered TooManyConnections at its first call, with the budget's scope
 * ("user", "unprivileged" or "all") and limit, then closed. Such
 * connections are short-lived (VARLINK_SERVER_PARTIAL_TIMEOUT_USEC to ask)
 * and few: while _REFUSED_MAX of them wait for their call, a further one is
 * closed at once, unanswered, and its client sees the connection closed
 * before any reply, as when the server exits.
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
 * or varlink_call_error() before returning (oneway calls' answers are dropped),
 * or defer the answer with varlink_call_defer().
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
                                  * TooManyConnections (limit: int, scope: (user, unprivileged, all)) */
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
/*
 * Binds a new socket at path, mode 0666: authorisation is per call. A stale
 * socket there (connect() refused: its server is gone) is replaced; a live
 * one gives -EADDRINUSE, and anything that is not a socket -ENOTSOCK, both
 * left in place. *ret_st is the socket bound, for its owner to remove it at
 * exit only if it is still that one.
 */
int varlink_server_listen_path(struct varlink_server *s, const char *path, struct stat *ret_st);
void varlink_server_free(struct varlink_server *s);

/*
 * Both answer with parameters (taken, also on failure; NULL for none), whose
 * strings that are not UTF-8 are rewritten in place on the way out
 * (printable_json()), so a tree the caller still holds may change.
 */
int varlink_call_reply(struct varlink_call *call, struct json_object *parameters);
/* error is the unqualified name within the server's interface ("NoSuchProcess") or a full one. */
int varlink_call_error(struct varlink_call *call, const char *error, struct json_object *parameters);
uid_t varlink_call_peer_uid(const struct varlink_call *call);

typedef void (*varlink_call_drop_fn)(void *userdata);
/*
 * Keeps the call open after the method returns, for an answer that must
 * wait for something (a debugger call on another thread). *ret_deferred is
 * the call's handle from now on (call's own is spent): answered with
 * varlink_call_reply() or varlink_call_error(), which free it. Until then
 * the connection's further calls wait. If the connection goes first (the
 * client left, its idle timeout, the server freed), on_drop(userdata) is
 * called and the handle freed unanswered: not to be used after that.
 * Returns 0 or -ENOMEM (call is then still the method's to answer).
 */
int varlink_call_defer(struct varlink_call *call, varlink_call_drop_fn on_drop, void *userdata,
                       struct varlink_call **ret_deferred);
