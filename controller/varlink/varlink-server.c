/* SPDX-License-Identifier: MIT */
#include "varlink-server.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "printable.h"
#include "utf8.h"
#include "varlink-protocol.h"

#define LISTENERS_MAX 8
/* SO_PEERGROUPS answers with at most this many supplementary groups; more are not looked at. */
#define PEER_GROUPS_MAX 256

/* The signatures are the protocol (varlinkctl relies on them); the comments are ours. */
static const char service_description[] =
        "# Introspection, answered by every Varlink service.\n"
        "interface org.varlink.service\n"
        "\n"
        "# Who implements this service and which interfaces it speaks.\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "# The interface definition text of one of those interfaces.\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "error InterfaceNotFound (interface: string)\n"
        "error MethodNotFound (method: string)\n"
        "error MethodNotImplemented (method: string)\n"
        "error InvalidParameter (parameter: string)\n";

/* The budget a connection is over (varlink-server.h), if any. */
enum refusal {
        REFUSAL_NONE,
        REFUSAL_ALL,          /* every connection the server serves is taken */
        REFUSAL_UNPRIVILEGED, /* the share of users who may not read is taken */
        REFUSAL_USER,         /* the user's own share is taken */
};

/* What TooManyConnections says of each: the interface's description declares the scopes. */
static const struct {
        const char *scope;
        int limit;
} refusals[] = {
        [REFUSAL_ALL] = { "all", VARLINK_SERVER_CONNECTIONS_MAX },
        [REFUSAL_UNPRIVILEGED] = { "unprivileged",
                                   VARLINK_SERVER_CONNECTIONS_MAX - VARLINK_SERVER_CONNECTIONS_RESERVED },
        [REFUSAL_USER] = { "user", VARLINK_SERVER_CONNECTIONS_PER_UID },
};

struct connection {
        struct varlink_server *server;
        struct connection *prev, *next;
        int fd;
        sd_event_source *io;
        sd_event_source *timer;
        struct ucred peer;
        bool can_read;
        enum refusal refused; /* over a budget: its first call is answered TooManyConnections */
        bool close_after_flush;
        struct varlink_buffer in;
        struct varlink_buffer out;
        uint64_t partial_since; /* 0: no partial message buffered */
        uint64_t last_call;
        struct varlink_call *deferred; /* a call answered later (varlink_call_defer()): the next ones wait */
};

struct varlink_server {
        sd_event *event;
        struct varlink_service_info info;
        const struct varlink_interface *iface;
        gid_t read_gid;
        void *userdata;
        sd_event_source *listeners[LISTENERS_MAX];
        size_t n_listeners;
        struct connection *connections;
        size_t n_connections; /* refused ones included */
        size_t n_refused;
};

struct varlink_call {
        struct connection *connection;
        bool oneway;
        bool answered;
        bool deferred; /* this is the heap copy varlink_call_defer() returned */
        varlink_call_drop_fn on_drop;
        void *drop_userdata;
};

static void connection_update_events(struct connection *c);

/* The connection goes with its deferred call unanswered: its owner is told, and the call freed. */
static void drop_deferred(struct connection *c)
{
        struct varlink_call *call = c->deferred;

        if (!call)
                return;
        c->deferred = NULL;
        call->on_drop(call->drop_userdata);
        free(call);
}

static void connection_free(struct connection *c)
{
        struct varlink_server *s = c->server;

        if (c->prev)
                c->prev->next = c->next;
        else
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_connections--;
        s->n_refused -= c->refused != REFUSAL_NONE;
        drop_deferred(c);
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        varlink_buffer_done(&c->in);
        varlink_buffer_done(&c->out);
        free(c);
}

static uint64_t now_usec(struct varlink_server *s)
{
        uint64_t now = 0;

        sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        return now;
}

/* Re-arms the connection's single timer to whichever limit comes first. */
static void connection_arm_timer(struct connection *c)
{
        /* a refused connection has a call's worth of time to ask, and is told why */
        uint64_t deadline = c->last_call + (c->refused != REFUSAL_NONE ? VARLINK_SERVER_PARTIAL_TIMEOUT_USEC
                                                                       : VARLINK_SERVER_IDLE_TIMEOUT_USEC);

        if (c->partial_since && c->partial_since + VARLINK_SERVER_PARTIAL_TIMEOUT_USEC < deadline)
                deadline = c->partial_since + VARLINK_SERVER_PARTIAL_TIMEOUT_USEC;
        sd_event_source_set_time(c->timer, deadline);
        sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

/*
 * Every reply goes out through here, and its strings are made UTF-8 here
 * (what is not written as \xNN): methods pass on text from outside that
 * need not be (a tracer's name, a command line, a configuration file), and
 * a reply that is not UTF-8 is not JSON, which every client refuses. The
 * serialised text is checked once (json-c writes string bytes as they are,
 * and keys are ours); only a reply that fails has its tree walked and is
 * serialised again.
 */
static int queue_message(struct connection *c, struct json_object *message)
{
        size_t len;
        const char *text = json_object_to_json_string_length(message, JSON_C_TO_STRING_PLAIN, &len);
        int r;

        if (text && !utf8_is_valid(text, len)) {
                printable_json(message, false);
                text = json_object_to_json_string_length(message, JSON_C_TO_STRING_PLAIN, &len);
        }
        r = text ? varlink_buffer_append_message(&c->out, text, len) : -ENOMEM;
        json_object_put(message);
        return r;
}

static int send_reply(struct connection *c, const char *error, struct json_object *parameters)
{
        struct json_object *message = json_object_new_object();

        if (!message) {
                json_object_put(parameters);
                return -ENOMEM;
        }
        if (error)
                json_object_object_add(message, "error", json_object_new_string(error));
        json_object_object_add(message, "parameters", parameters ? parameters : json_object_new_object());
        return queue_message(c, message);
}

static int send_error_with(struct connection *c, const char *error, const char *key, const char *value)
{
        struct json_object *p = json_object_new_object();

        if (p && key)
                json_object_object_add(p, key, json_object_new_string(value));
        return send_reply(c, error, p);
}

/*
 * Sends the answer (error: NULL for a reply), or drops it for a oneway call.
 * A deferred call is freed, and its connection goes on with the calls that
 * waited for it: the reply is written, and the next call handled, at the
 * loop's next turn (connection_update_events()).
 */
static int answer(struct varlink_call *call, const char *error, struct json_object *parameters)
{
        struct connection *c = call->connection;
        int r = 0;

        if (call->answered) {
                json_object_put(parameters);
                return -EALREADY;
        }
        call->answered = true;
        if (call->oneway)
                json_object_put(parameters);
        else
                r = send_reply(c, error, parameters);
        if (call->deferred) {
                c->deferred = NULL;
                free(call);
                connection_update_events(c);
        }
        return r;
}

int varlink_call_reply(struct varlink_call *call, struct json_object *parameters)
{
        return answer(call, NULL, parameters);
}

int varlink_call_error(struct varlink_call *call, const char *error, struct json_object *parameters)
{
        _cleanup_free_ char *qualified = NULL;

        if (!call->answered && !strchr(error, '.')) {
                if (asprintf(&qualified, "%s.%s", call->connection->server->iface->name, error) < 0) {
                        json_object_put(parameters);
                        return -ENOMEM;
                }
                error = qualified;
        }
        return answer(call, error, parameters);
}

int varlink_call_defer(struct varlink_call *call, varlink_call_drop_fn on_drop, void *userdata,
                       struct varlink_call **ret_deferred)
{
        struct varlink_call *deferred;

        assert(!call->answered && !call->deferred && on_drop);
        deferred = malloc(sizeof(*deferred));
        if (!deferred)
                return -ENOMEM;
        *deferred = *call;
        deferred->deferred = true;
        deferred->on_drop = on_drop;
        deferred->drop_userdata = userdata;
        /* the method's own handle is spent: it is answered through the new one */
        call->answered = true;
        call->connection->deferred = deferred;
        *ret_deferred = deferred;
        return 0;
}

uid_t varlink_call_peer_uid(const struct varlink_call *call)
{
        return call->connection->peer.uid;
}

static void service_get_info(struct varlink_call *call)
{
        const struct varlink_server *s = call->connection->server;
        struct json_object *p = json_object_new_object();
        struct json_object *ifaces = json_object_new_array();

        json_object_array_add(ifaces, json_object_new_string(VARLINK_SERVICE_INTERFACE));
        json_object_array_add(ifaces, json_object_new_string(s->iface->name));
        json_object_object_add(p, "vendor", json_object_new_string(s->info.vendor));
        json_object_object_add(p, "product", json_object_new_string(s->info.product));
        json_object_object_add(p, "version", json_object_new_string(s->info.version));
        json_object_object_add(p, "url", json_object_new_string(s->info.url));
        json_object_object_add(p, "interfaces", ifaces);
        varlink_call_reply(call, p);
}

static void service_get_interface_description(struct varlink_call *call, struct json_object *params)
{
        const struct varlink_server *s = call->connection->server;
        struct json_object *name_obj, *p;
        const char *name, *text;

        if (!json_object_object_get_ex(params, "interface", &name_obj) ||
            !json_object_is_type(name_obj, json_type_string)) {
                p = json_object_new_object();
                json_object_object_add(p, "parameter", json_object_new_string("interface"));
                varlink_call_error(call, VARLINK_ERROR_INVALID_PARAMETER, p);
                return;
        }
        name = json_object_get_string(name_obj);
        if (strcmp(name, VARLINK_SERVICE_INTERFACE) == 0)
                text = service_description;
        else if (strcmp(name, s->iface->name) == 0)
                text = s->iface->description;
        else {
                p = json_object_new_object();
                json_object_object_add(p, "interface", json_object_new_string(name));
                varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND, p);
                return;
        }
        p = json_object_new_object();
        json_object_object_add(p, "description", json_object_new_string(text));
        varlink_call_reply(call, p);
}

static const struct varlink_method *find_method(const struct varlink_interface *iface, const char *name)
{
        for (size_t i = 0; i < iface->n_methods; i++)
                if (strcmp(iface->methods[i].name, name) == 0)
                        return &iface->methods[i];
        return NULL;
}

static int invalid_parameter(struct connection *c, const char *which)
{
        return send_error_with(c, VARLINK_ERROR_INVALID_PARAMETER, "parameter", which);
}

/* One complete message (without its NUL): validate, authorise, dispatch. */
static int handle_message(struct connection *c, const char *text, size_t len)
{
        struct varlink_server *s = c->server;
        struct json_object *msg = NULL, *m, *params = NULL, *flag;
        struct varlink_call call = { .connection = c };
        const struct varlink_method *method;
        const char *name, *dot;
        size_t iface_len;
        int r;

        if (c->refused != REFUSAL_NONE) {
                struct json_object *p = json_object_new_object();
                _cleanup_free_ char *error = NULL;

                c->close_after_flush = true;
                if (!p || asprintf(&error, "%s.TooManyConnections", c->server->iface->name) < 0) {
                        json_object_put(p);
                        return -ENOMEM;
                }
                json_object_object_add(p, "limit", json_object_new_int(refusals[c->refused].limit));
                json_object_object_add(p, "scope", json_object_new_string(refusals[c->refused].scope));
                return send_reply(c, error, p);
        }
        if (varlink_parse_message(text, len, &msg) < 0)
                return invalid_parameter(c, "message");
        /* a name with a NUL in it ("\u0000") would be compared up to the NUL only, as another method */
        if (!json_object_object_get_ex(msg, "method", &m) || !json_object_is_type(m, json_type_string) ||
            strlen(json_object_get_string(m)) != (size_t)json_object_get_string_len(m)) {
                r = invalid_parameter(c, "method");
                goto out;
        }
        if (json_object_object_get_ex(msg, "parameters", &params) && !json_object_is_type(params, json_type_object)) {
                r = invalid_parameter(c, "parameters");
                goto out;
        }
        if (json_object_object_get_ex(msg, "oneway", &flag)) {
                if (!json_object_is_type(flag, json_type_boolean)) {
                        r = invalid_parameter(c, "oneway");
                        goto out;
                }
                call.oneway = json_object_get_boolean(flag);
        }
        if (json_object_object_get_ex(msg, "upgrade", &flag) && json_object_get_boolean(flag)) {
                r = invalid_parameter(c, "upgrade");
                goto out;
        }
        if (!params) {
                params = json_object_new_object();
                json_object_object_add(msg, "parameters", params);
        }
        c->last_call = now_usec(s);

        name = json_object_get_string(m);
        dot = strrchr(name, '.');
        iface_len = dot ? (size_t)(dot - name) : 0;
        if (iface_len == strlen(VARLINK_SERVICE_INTERFACE) &&
            strncmp(name, VARLINK_SERVICE_INTERFACE, iface_len) == 0) {
                r = 0;
                if (strcmp(dot + 1, "GetInfo") == 0)
                        service_get_info(&call);
                else if (strcmp(dot + 1, "GetInterfaceDescription") == 0)
                        service_get_interface_description(&call, params);
                else
                        r = send_error_with(c, VARLINK_ERROR_METHOD_NOT_FOUND, "method", name);
                goto out;
        }
        if (!dot || iface_len != strlen(s->iface->name) || strncmp(name, s->iface->name, iface_len) != 0) {
                _cleanup_free_ char *iface = strndup(name, iface_len);

                r = send_error_with(c, VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", iface ? iface : "");
                goto out;
        }
        method = find_method(s->iface, dot + 1);
        if (!method) {
                r = send_error_with(c, VARLINK_ERROR_METHOD_NOT_FOUND, "method", name);
                goto out;
        }
        if (c->peer.uid != 0 && (method->access == VARLINK_ACCESS_WRITE || !c->can_read)) {
                varlink_call_error(&call, "PermissionDenied", NULL);
                r = 0;
                goto out;
        }
        method->fn(&call, params, s->userdata);
        if (!call.answered) /* a deferred call's handle was spent by varlink_call_defer() */
                varlink_call_error(&call, "InternalError", NULL);
        r = 0;
out:
        json_object_put(msg);
        return r;
}

/* Whether a whole message waits in the input: calls sent together (pipelined) are read together. */
static bool has_message(struct connection *c)
{
        return varlink_buffer_find_nul(&c->in);
}

static void connection_update_events(struct connection *c)
{
        /*
         * EPOLLOUT while a reply is unwritten, and while a whole call waits:
         * no EPOLLIN announces bytes read already. With nothing unwritten
         * the socket is writable, so EPOLLOUT comes at the loop's next turn
         * and process_input() answers the call then, after what else is
         * due: a client that pipelines gets one reply per turn, and cannot
         * hold the loop.
         */
        uint32_t events = c->out.size > 0 || has_message(c) ? EPOLLOUT : EPOLLIN;

        /*
         * While a call is deferred the next ones wait: only reading, until
         * the input is full (a closed connection still reports EPOLLHUP),
         * so that a client that leaves is seen and its call dropped.
         */
        if (c->deferred)
                events = c->in.size < VARLINK_MESSAGE_MAX ? EPOLLIN : 0;
        sd_event_source_set_io_events(c->io, events);
}

/*
 * Handles at most one buffered call per turn of the loop, and only once the
 * previous reply is fully written: a client that does not read its replies
 * cannot make the daemon queue unbounded output, and one that pipelines
 * calls without replies (oneway, or refused ones of those) cannot hold the
 * loop with a buffer full of them. connection_update_events() brings the
 * next call's turn.
 */
static int process_input(struct connection *c)
{
        if (c->out.size == 0 && !c->close_after_flush && !c->deferred) {
                char *nul = varlink_buffer_find_nul(&c->in);
                int r;

                if (nul) {
                        size_t len = (size_t)(nul - varlink_buffer_head(&c->in));

                        r = handle_message(c, varlink_buffer_head(&c->in), len);
                        varlink_buffer_consume(&c->in, len + 1);
                        c->partial_since = 0;
                        if (r < 0)
                                return r;
                } else if (c->in.size >= VARLINK_MESSAGE_MAX) {
                        r = invalid_parameter(c, "message");
                        c->close_after_flush = true;
                        return r;
                }
        }
        /* only bytes after the last whole message are a partial one: a whole one waits for its turn */
        if (c->in.size > 0 && !c->partial_since && !has_message(c))
                c->partial_since = now_usec(c->server);
        connection_arm_timer(c);
        return 0;
}

static int flush_output(struct connection *c)
{
        while (c->out.size > 0) {
                ssize_t n = send(c->fd, varlink_buffer_head(&c->out), c->out.size, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                varlink_buffer_consume(&c->out, (size_t)n);
        }
        return 0;
}

static int read_input(struct connection *c)
{
        char chunk[16384];
        size_t room = VARLINK_MESSAGE_MAX - c->in.size;
        ssize_t n;

        if (room == 0)
                return 0;
        n = recv(c->fd, chunk, room < sizeof(chunk) ? room : sizeof(chunk), MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0)
                return -ECONNRESET;
        return varlink_buffer_append(&c->in, chunk, (size_t)n);
}

static int on_connection_io(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct connection *c = userdata;
        int r = 0;

        if (revents & EPOLLOUT)
                r = flush_output(c);
        if (r >= 0 && (revents & EPOLLIN) && c->out.size == 0)
                r = read_input(c);
        if (r >= 0 && c->out.size == 0)
                r = process_input(c);
        if (r >= 0 && c->out.size > 0)
                r = flush_output(c);
        if (r >= 0 && c->out.size > VARLINK_SERVER_OUTPUT_MAX)
                r = -ENOBUFS;
        if (r >= 0 && c->out.size == 0 && c->close_after_flush)
                r = -ECONNRESET;
        if (r >= 0 && (revents & (EPOLLHUP | EPOLLERR)) && !(revents & EPOLLIN))
                r = -ECONNRESET;
        if (r < 0) {
                connection_free(c);
                return 0;
        }
        connection_update_events(c);
        return 0;
}

static int on_connection_timer(sd_event_source *source, uint64_t usec, void *userdata)
{
        connection_free(userdata);
        return 0;
}

static bool peer_in_group(int fd, gid_t primary, gid_t wanted)
{
        gid_t groups[PEER_GROUPS_MAX];
        socklen_t len = sizeof(groups);

        if (wanted == (gid_t)-1)
                return false;
        if (primary == wanted)
                return true;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
                return false;
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                if (groups[i] == wanted)
                        return true;
        return false;
}

/* Which budget a new connection of c's peer is over, if any (c is not counted yet). */
static enum refusal over_budget(const struct varlink_server *s, const struct connection *c)
{
        size_t same_uid = 0, accepted = s->n_connections - s->n_refused;

        if (accepted >= VARLINK_SERVER_CONNECTIONS_MAX)
                return REFUSAL_ALL;
        if (c->peer.uid == 0)
                return REFUSAL_NONE;
        for (const struct connection *o = s->connections; o; o = o->next)
                same_uid += o->refused == REFUSAL_NONE && o->peer.uid == c->peer.uid;
        if (same_uid >= VARLINK_SERVER_CONNECTIONS_PER_UID)
                return REFUSAL_USER;
        if (!c->can_read && accepted >= VARLINK_SERVER_CONNECTIONS_MAX - VARLINK_SERVER_CONNECTIONS_RESERVED)
                return REFUSAL_UNPRIVILEGED;
        return REFUSAL_NONE;
}

static void accept_one(struct varlink_server *s, int fd)
{
        socklen_t len = sizeof(struct ucred);
        struct connection *c;

        if (s->n_connections >= VARLINK_SERVER_CONNECTIONS_MAX + VARLINK_SERVER_CONNECTIONS_REFUSED_MAX) {
                close(fd);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(fd);
                return;
        }
        c->server = s;
        c->fd = fd;
        c->in.limit = VARLINK_MESSAGE_MAX;
        /* one reply plus slack: the reply is complete before the limit is checked */
        c->out.limit = VARLINK_SERVER_OUTPUT_MAX + VARLINK_MESSAGE_MAX;
        c->last_call = now_usec(s);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) < 0) {
                close(fd);
                free(c);
                return;
        }
        c->can_read = c->peer.uid == 0 || peer_in_group(fd, c->peer.gid, s->read_gid);
        c->refused = over_budget(s, c);
        if (c->refused != REFUSAL_NONE && s->n_refused >= VARLINK_SERVER_CONNECTIONS_REFUSED_MAX) {
                close(fd);
                free(c);
                return;
        }
        c->next = s->connections;
        if (c->next)
                c->next->prev = c;
        s->connections = c;
        s->n_connections++;
        s->n_refused += c->refused != REFUSAL_NONE;
        if (sd_event_add_io(s->event, &c->io, fd, EPOLLIN, on_connection_io, c) < 0 ||
            sd_event_add_time(s->event, &c->timer, CLOCK_MONOTONIC, 0, 0, on_connection_timer, c) < 0) {
                connection_free(c);
                return;
        }
        connection_arm_timer(c);
}

static int on_listener(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        for (;;) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (cfd < 0)
                        return 0; /* EAGAIN, or a transient error: the next wakeup retries */
                accept_one(userdata, cfd);
        }
}

int varlink_server_new(sd_event *event, const struct varlink_service_info *info,
                       const struct varlink_interface *iface, gid_t read_gid, void *userdata,
                       struct varlink_server **ret_server)
{
        struct varlink_server *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(event);
        s->info = *info;
        s->iface = iface;
        s->read_gid = read_gid;
        s->userdata = userdata;
        *ret_server = s;
        return 0;
}

int varlink_server_listen_fd(struct varlink_server *s, int fd)
{
        int r;

        int flags;

        if (s->n_listeners >= LISTENERS_MAX) {
                close(fd);
                return -E2BIG;
        }
        /* accept() loops until EAGAIN, and systemd hands sockets over blocking unless NonBlocking=yes */
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        r = sd_event_add_io(s->event, &s->listeners[s->n_listeners], fd, EPOLLIN, on_listener, s);
        if (r < 0) {
                close(fd);
                return r;
        }
        sd_event_source_set_io_fd_own(s->listeners[s->n_listeners], true);
        s->n_listeners++;
        return 0;
}

/*
 * Clears path for bind(): nothing there, or a socket nobody accepts on (its
 * server was killed before it could remove it). connect() tells the two
 * kinds of socket apart; a non-blocking one also counts a server whose
 * backlog is full (EAGAIN) as live.
 */
static int clear_stale_socket(const struct sockaddr_un *sa)
{
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (lstat(sa->sun_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ENOTSOCK;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 || errno == EAGAIN)
                return -EADDRINUSE;
        if (errno != ECONNREFUSED)
                return -errno;
        if (unlink(sa->sun_path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int varlink_server_listen_path(struct varlink_server *s, const char *path, struct stat *ret_st)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        r = clear_stale_socket(&sa);
        if (r < 0)
                return r;
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        /* fstat() of a socket describes the socket, not the file bind() made */
        if (lstat(path, &st) < 0 || chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0)
                return -errno;
        r = varlink_server_listen_fd(s, TAKE_FD(fd));
        if (r < 0)
                return r;
        *ret_st = st;
        return 0;
}

void varlink_server_free(struct varlink_server *s)
{
        if (!s)
                return;
        while (s->connections)
                connection_free(s->connections);
        for (size_t i = 0; i < s->n_listeners; i++)
                sd_event_source_disable_unref(s->listeners[i]);
        sd_event_unref(s->event);
        free(s);
}
