/* SPDX-License-Identifier: MIT */
/*
 * The kfdemu server's lifecycle: node up, listening socket, node down.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpu.h"
#include "server.h"

void server_log(struct kfdemu_server *server, const char *fmt, ...)
{
        va_list ap;

        if (server->node.log_fd < 0)
                return;
        va_start(ap, fmt);
        dprintf(server->node.log_fd, "kfdemu transport: ");
        vdprintf(server->node.log_fd, fmt, ap);
        dprintf(server->node.log_fd, "\n");
        va_end(ap);
}

static int on_listen_ready(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct kfdemu_server *server = userdata;

        pthread_mutex_lock(&server->node.lock);
        /* Accept a bounded batch per wake-up so one flood cannot starve the
         * clients already connected. */
        for (int i = 0; i < 64; i++) {
                int r = connection_accept(server, fd);
                if (r == -EMFILE || r == -ENFILE) {
                        /* The socket stays readable: without a pause the
                         * loop would spin on it. */
                        server_log(server, "out of file descriptors with %u clients; accepting again when one goes",
                                   server->n_connections);
                        server_pause_accepting(server);
                }
                if (r <= 0)
                        break;
        }
        pthread_mutex_unlock(&server->node.lock);
        return 0;
}

void server_pause_accepting(struct kfdemu_server *server)
{
        sd_event_source_set_enabled(server->listen_source, SD_EVENT_OFF);
        server->accept_paused = true;
}

void server_resume_accepting(struct kfdemu_server *server)
{
        if (!server->accept_paused)
                return;
        sd_event_source_set_enabled(server->listen_source, SD_EVENT_ON);
        server->accept_paused = false;
}

static unsigned max_connections(void)
{
        struct rlimit limit;

        if (getrlimit(RLIMIT_NOFILE, &limit) < 0 || limit.rlim_cur == RLIM_INFINITY)
                return SERVER_MAX_CONNECTIONS;
        if (limit.rlim_cur <= 2 * SERVER_RESERVED_FDS)
                return (unsigned)limit.rlim_cur / 2;
        if (limit.rlim_cur - SERVER_RESERVED_FDS < SERVER_MAX_CONNECTIONS)
                return (unsigned)(limit.rlim_cur - SERVER_RESERVED_FDS);
        return SERVER_MAX_CONNECTIONS;
}

static int listen_on(const char *socket_path, int *ret_fd)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        if (strlen(socket_path) >= sizeof(addr.sun_path))
                return -ENAMETOOLONG;
        memcpy(addr.sun_path, socket_path, strlen(socket_path) + 1);

        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return NEG_ERRNO();
        if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
                return NEG_ERRNO();
        if (listen(fd, SOMAXCONN) < 0)
                return NEG_ERRNO();
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int server_start(struct kfdemu_server *server, sd_event *event, const struct emu_config *cfg,
                 const char *socket_path, int log_fd)
{
        int r;

        *server = (struct kfdemu_server){
                .event = sd_event_ref(event),
                .listen_fd = -1,
                .trace_fd = -1,
                .max_connections = max_connections(),
        };

        r = emu_node_init(&server->node, cfg);
        if (r < 0)
                goto fail;
        server->node_ready = true;
        server->node.log_fd = log_fd;

        r = emu_gpu_start(&server->node);
        if (r < 0)
                goto fail;
        server->gpus_started = true;

        r = listen_on(socket_path, &server->listen_fd);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(event, &server->listen_source, server->listen_fd, EPOLLIN, on_listen_ready, server);
        if (r < 0)
                goto fail;
        return 0;

fail:
        server_stop(server);
        return r;
}

void server_stop(struct kfdemu_server *server)
{
        server->listen_source = sd_event_source_disable_unref(server->listen_source);
        stop_watch_stop(server);
        closep(&server->listen_fd);
        server->listen_fd = -1;

        /* The model thread completes parked calls: stop it before the
         * clients' calls are dropped. */
        if (server->gpus_started)
                emu_gpu_stop(&server->node);
        server->gpus_started = false;

        if (server->node_ready) {
                pthread_mutex_lock(&server->node.lock);
                connection_drop_all(server);
                process_watch_drop_all(server);
                pthread_mutex_unlock(&server->node.lock);
                emu_node_fini(&server->node);
        }
        server->node_ready = false;
        server->event = sd_event_unref(server->event);
}
