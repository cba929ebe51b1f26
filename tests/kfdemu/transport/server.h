/* SPDX-License-Identifier: MIT */
/*
 * The kfdemu server: the emulated node plus the sd-event loop that carries
 * every client's open/ioctl/mmap/close to it (see protocol.h).
 *
 * Threads: the loop runs on the thread that calls sd_event_loop(); the GPU
 * model runs on its own thread and may complete parked calls. Everything
 * below, like the node, is protected by node.lock; the loop takes it in
 * every callback.
 */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "kernel.h"
#include "state.h"

struct connection;
struct process_watch;

/* Bounds what a flood of clients can make the server hold; the fd limit
 * may bound it lower (server_start). */
#define SERVER_MAX_CONNECTIONS 16384
/* Fds kept for everything but connections: pidfds, memfds, the log. */
#define SERVER_RESERVED_FDS 256

struct kfdemu_server {
        struct emu_node node;
        sd_event *event;
        int listen_fd;
        sd_event_source *listen_source;
        void *files_by_inode;            /* tsearch tree of open file connections */
        struct connection *connections;  /* every live connection */
        unsigned n_connections, max_connections;
        int trace_fd;                    /* kfdemu-run --trace (call-trace.h), -1 = none */
        uint64_t received_ns;            /* when the message being handled was received (with trace_fd) */
        bool accept_paused;              /* out of fds: wait for a client to go */
        struct process_watch *watches;   /* emu_transport_watch_process */
        sd_event_source *stop_watch;     /* armed while callers sleep interruptibly (stop-watch.c) */
        bool node_ready, gpus_started;
        unsigned smi_sockets;            /* SMI event sockets made so far: their names (smi-socket.c) */
};

/* The server a node belongs to (kernel/ hands transport/ only the node). */
static inline struct kfdemu_server *server_of(struct emu_node *node)
{
        return (struct kfdemu_server *)((char *)node - offsetof(struct kfdemu_server, node));
}

/* Brings up the node (emu_node_init, emu_gpu_start) and listens on
 * `socket_path`. `log_fd` (or -1) receives what dmesg would show. On
 * failure everything set up so far is torn down again. */
int server_start(struct kfdemu_server *server, sd_event *event, const struct emu_config *cfg,
                 const char *socket_path, int log_fd);
/* Stops the GPUs, drops every client and tears the node down. */
void server_stop(struct kfdemu_server *server);

/* kfdemu's own messages go where the kernel's would (node.log_fd). */
void server_log(struct kfdemu_server *server, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Accepting stops when no fd is left and starts again when a client goes. */
void server_pause_accepting(struct kfdemu_server *server);
void server_resume_accepting(struct kfdemu_server *server);

/* connection.c: > 0 accepted (or refused), 0 nothing pending, < 0 error. */
int connection_accept(struct kfdemu_server *server, int listen_fd);
void connection_drop_all(struct kfdemu_server *server);

/* stop-watch.c: called with node.lock held after anything that may have
 * put a caller to sleep in the runtime-enable wait. */
void stop_watch_update(struct kfdemu_server *server);
void stop_watch_stop(struct kfdemu_server *server);

/* process-watch.c */
void process_watch_drop_all(struct kfdemu_server *server);
