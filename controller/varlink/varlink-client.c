/* SPDX-License-Identifier: MIT */
#include "varlink-client.h"

#include <errno.h>
#include <json.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "varlink-protocol.h"

struct varlink_client {
        int fd;
        struct varlink_buffer in;
};

int varlink_client_connect(const char *path, int timeout_ms, struct varlink_client **ret_client)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval timeout = { .tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000 };
        _cleanup_close_ int fd = -1;
        struct varlink_client *c;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /*
         * A server whose loop is stuck accepts nothing, and once its queue of
         * pending connections (listen()'s backlog) is full, connect() waits
         * for room: as long as the socket's send timeout, and fails with
         * EAGAIN then (unix_stream_connect()). Without one it would wait
         * forever. The timeout stays: it bounds each send of a call too.
         */
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return errno == EAGAIN ? -ETIMEDOUT : -errno;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = TAKE_FD(fd);
        c->in.limit = VARLINK_MESSAGE_MAX;
        *ret_client = c;
        return 0;
}

void varlink_client_free(struct varlink_client *c)
{
        if (!c)
                return;
        close(c->fd);
        varlink_buffer_done(&c->in);
        free(c);
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        /* SO_SNDTIMEO passed: the server does not read */
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                }
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Waits for one whole message; returns its length (without the NUL) or -errno. */
static int receive_message(struct varlink_client *c, int timeout_ms, size_t *ret_len)
{
        int64_t deadline = now_ms() + timeout_ms;

        for (;;) {
                char *nul = varlink_buffer_find_nul(&c->in);
                struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
                char chunk[16384];
                int64_t left;
                ssize_t n;
                int r;

                if (nul) {
                        *ret_len = (size_t)(nul - varlink_buffer_head(&c->in));
                        return 0;
                }
                if (c->in.size >= VARLINK_MESSAGE_MAX)
                        return -EBADMSG;
                left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                r = poll(&pfd, 1, (int)left);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                n = recv(c->fd, chunk, sizeof(chunk), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -ECONNRESET;
                r = varlink_buffer_append(&c->in, chunk, (size_t)n);
                if (r < 0)
                        return r == -ENOBUFS ? -EBADMSG : r;
        }
}

int varlink_client_call(struct varlink_client *c, const char *method, struct json_object *parameters,
                        int timeout_ms, struct json_object **ret_parameters, char **ret_error)
{
        struct varlink_buffer out = { .limit = VARLINK_MESSAGE_MAX };
        struct json_object *call = json_object_new_object(), *reply = NULL, *p = NULL, *e;
        char *error = NULL;
        size_t len;
        int r;

        if (!call)
                return -ENOMEM;
        json_object_object_add(call, "method", json_object_new_string(method));
        if (parameters)
                json_object_object_add(call, "parameters", json_object_get(parameters));
        r = varlink_buffer_append_json(&out, call);
        json_object_put(call);
        if (r >= 0)
                r = send_all(c->fd, varlink_buffer_head(&out), out.size);
        varlink_buffer_done(&out);
        if (r < 0)
                return r;

        r = receive_message(c, timeout_ms, &len);
        if (r < 0)
                return r;
        r = varlink_parse_message(varlink_buffer_head(&c->in), len, &reply);
        varlink_buffer_consume(&c->in, len + 1);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(reply, "error", &e)) {
                if (!json_object_is_type(e, json_type_string)) {
                        json_object_put(reply);
                        return -EBADMSG;
                }
                error = strdup(json_object_get_string(e));
                if (!error) {
                        json_object_put(reply);
                        return -ENOMEM;
                }
        }
        if (json_object_object_get_ex(reply, "parameters", &p))
                json_object_get(p);
        else
                p = json_object_new_object();
        json_object_put(reply);
        *ret_parameters = p;
        *ret_error = error;
        return 0;
}
