/* SPDX-License-Identifier: MIT */
/*
 * One client connection: an open /dev/kfd (a *file*) or one thread's call
 * *channel* (protocol.h). Every function here runs with node.lock held.
 *
 * A client that breaks the protocol (unknown or mis-sized message, a
 * second call while one is in flight) is disconnected: that is what
 * happens to its fd, never to the server. What a file connection sends
 * after OPEN is discarded: that is its application writing to /dev/kfd.
 */
#include <errno.h>
#include <poll.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "call-trace.h"
#include "caller.h"
#include "cleanup.h"
#include "gpu.h"
#include "protocol.h"
#include "server.h"

enum connection_kind {
        CONNECTION_NEW,                  /* nothing received yet */
        CONNECTION_FILE,
        CONNECTION_CHANNEL,
};

/* What the server knows of an open /dev/kfd beyond kernel/'s emu_file
 * (emu_file.transport points here). */
struct emu_file_transport {
        uint64_t inode;                  /* the client socket's: how calls name the file */
        /* A parked ioctl holds the file like the kernel's fdget() does:
         * kfd_release waits until the last in-flight call returns. */
        unsigned calls_in_flight;
        bool client_closed;
};

static uint64_t monotonic_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct connection {
        struct connection *prev, *next;
        struct kfdemu_server *server;
        int fd;
        sd_event_source *source;
        enum connection_kind kind;
        struct emu_caller caller;        /* opener (file) or owner thread (channel), host ids */

        /* CONNECTION_FILE */
        struct emu_file *file;
        struct emu_file_transport file_state;

        /* CONNECTION_CHANNEL: the call in flight and the file it names. */
        struct emu_call *call;
        struct connection *call_file;
        /* with kfdemu-run --trace: the call's line, written once it has ended */
        struct call_trace_entry traced;
        bool trace_pending;
};

/* ---- connection registry ---- */

static int compare_inode(const void *a, const void *b)
{
        const struct connection *x = a, *y = b;

        return x->file_state.inode < y->file_state.inode ? -1 : x->file_state.inode > y->file_state.inode;
}

static struct connection *file_by_inode(struct kfdemu_server *server, uint64_t inode)
{
        struct connection key = { .file_state.inode = inode };
        void *found = tfind(&key, &server->files_by_inode, compare_inode);

        return found ? *(struct connection **)found : NULL;
}

static void connection_unlink(struct connection *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                c->server->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->server->n_connections--;
}

/* The socket goes away, the connection may live on (a file with calls in
 * flight). Must run on the loop thread: it touches the event source. */
static void connection_close_socket(struct connection *c)
{
        c->source = sd_event_source_disable_unref(c->source);
        closep(&c->fd);
        c->fd = -1;
        if (c->kind == CONNECTION_FILE && !c->file_state.client_closed)
                tdelete(c, &c->server->files_by_inode, compare_inode);
        c->file_state.client_closed = true;
}

/* The fd's last reference went: kfd_release or the render node's release. */
static void file_release(struct emu_file *file)
{
        if (file->render_gpu)
                emu_drm_release(file);
        else
                emu_kfd_release(file);
}

static void file_release_if_unused(struct connection *f)
{
        if (!f->file_state.client_closed || f->file_state.calls_in_flight > 0)
                return;
        file_release(f->file);
        connection_unlink(f);
        free(f);
}

/* ---- replies ---- */

static int send_reply(struct connection *c, const void *reply, size_t size)
{
        /* Never block the loop (or the model thread) on a client: a
         * well-behaved client is waiting in recv for exactly this message. */
        if (c->fd < 0)
                return -EPIPE;
        if (send(c->fd, reply, size, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                return NEG_ERRNO();
        return 0;
}

static int send_result(struct connection *c, enum kfdemu_reply_status status, long result)
{
        struct kfdemu_reply reply = { .status = status, .result = result };

        return send_reply(c, &reply, sizeof(reply));
}

/* A reply with fds for the client (SCM_RIGHTS): the server's copies stay
 * the caller's to close. */
static int send_reply_fds(struct connection *c, const void *reply, size_t size, const int *fds, unsigned n_fds)
{
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * KFDEMU_MMAP_MAX_SEGMENTS)];
        } control;
        struct iovec iov = { .iov_base = (void *)reply, .iov_len = size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct cmsghdr *cmsg;

        if (c->fd < 0)
                return -EPIPE;
        if (n_fds > KFDEMU_MMAP_MAX_SEGMENTS)
                return -EINVAL;
        memset(&control, 0, sizeof(control));
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
        cmsg = CMSG_FIRSTHDR(&mh);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
        memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * n_fds);
        if (sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                return NEG_ERRNO();
        return 0;
}

/* The ioctl's result, with the new fd its kernel made for the caller
 * (kernel.h, emu_call.reply_fd) when it succeeded. */
static void send_call_result(struct connection *ch, const struct emu_call *call, long result)
{
        struct kfdemu_reply reply = { .status = KFDEMU_REPLY_RESULT, .result = result };

        if (result < 0 || !call->reply_fd_arg_offset) {
                send_reply(ch, &reply, sizeof(reply));
                return;
        }
        reply.fd_arg_offset = call->reply_fd_arg_offset;
        send_reply_fds(ch, &reply, sizeof(reply), &call->reply_fd, 1);
}

/* The server's copy of a call's new fd goes with the call. */
static void call_free(struct emu_call *call)
{
        if (call->reply_fd_arg_offset)
                close(call->reply_fd);
        free(call);
}

/* The call is over: from the loop (a synchronous result) or, for a parked
 * call, from whoever completes it (emu_call_complete, maybe the model thread). */
static void channel_finish_call(struct connection *ch, long result, bool reply)
{
        struct connection *file = ch->call_file;

        if (reply)
                send_call_result(ch, ch->call, result);
        if (ch->trace_pending) {
                /* after the reply: tracing delays nothing */
                ch->traced.ended_ns = monotonic_ns();
                call_trace_write(ch->server->trace_fd, &ch->traced);
                ch->trace_pending = false;
        }
        call_free(ch->call);
        ch->call = NULL;
        ch->call_file = NULL;
        /* A debugfs read is a call without a file. */
        if (file) {
                file->file_state.calls_in_flight--;
                file_release_if_unused(file);
        }
}

static void call_reply(struct emu_call *call, long ret)
{
        channel_finish_call(call->transport_data, ret, true);
}

void emu_transport_call_spins(struct emu_call *call, uint64_t duration_ns)
{
        send_result(call->transport_data, KFDEMU_REPLY_SPINNING, (long)duration_ns);
}

/* ---- messages ---- */

static int handle_open(struct connection *c, const struct kfdemu_msg_open *msg)
{
        struct kfdemu_server *server = c->server;
        pid_t tid;
        int r;

        r = caller_resolve_tid(c->caller.tgid, msg->tid, &tid);
        if (r < 0)
                return send_result(c, KFDEMU_REPLY_RESULT, r);
        c->caller.tid = tid;

        /* Socket inodes are unique while the socket lives; a duplicate is a
         * client lying about its identity. */
        if (file_by_inode(server, msg->file_inode))
                return send_result(c, KFDEMU_REPLY_RESULT, -EEXIST);

        if (msg->render_minor)
                r = emu_drm_open(&server->node, msg->render_minor, &c->file);
        else
                r = emu_kfd_open(&server->node, &c->caller, &c->file);
        if (r < 0)
                return send_result(c, KFDEMU_REPLY_RESULT, r);
        c->kind = CONNECTION_FILE;
        c->file_state.inode = msg->file_inode;
        c->file->transport = &c->file_state;
        if (!tsearch(c, &server->files_by_inode, compare_inode)) {
                file_release(c->file);
                c->file = NULL;
                c->kind = CONNECTION_NEW;
                return send_result(c, KFDEMU_REPLY_RESULT, -ENOMEM);
        }
        return send_result(c, KFDEMU_REPLY_RESULT, 0);
}

static int handle_hello(struct connection *c, const struct kfdemu_msg_hello *msg)
{
        pid_t tid;
        int r;

        r = caller_resolve_tid(c->caller.tgid, msg->tid, &tid);
        if (r < 0)
                return r;
        c->caller.tid = tid;
        c->kind = CONNECTION_CHANNEL;
        return 0;
}

static int handle_ioctl(struct connection *ch, const struct kfdemu_msg_ioctl *msg)
{
        struct connection *file = file_by_inode(ch->server, msg->file_inode);
        struct emu_call *call;

        /* The preload forwards requests of kfd's type and DRM's; amdkfd
         * sees only its own (anything else meets the socket). */
        if (!file || (!file->file->render_gpu && _IOC_TYPE(msg->cmd) != AMDKFD_IOCTL_BASE))
                return send_result(ch, KFDEMU_REPLY_NOT_MINE, 0);

        call = calloc(1, sizeof(*call));
        if (!call)
                return send_result(ch, KFDEMU_REPLY_RESULT, -ENOMEM);
        *call = (struct emu_call){
                .file = file->file,
                .caller = ch->caller,
                .cmd = msg->cmd,
                .arg = msg->arg,
                .reply = call_reply,
                .transport_data = ch,
        };
        /* Account the call before the kernel runs it: it may complete a
         * parked call (call_reply) before emu_kfd_ioctl even returns. */
        ch->call = call;
        ch->call_file = file;
        file->file_state.calls_in_flight++;

        long r = file->file->render_gpu ? emu_drm_ioctl(call) : emu_kfd_ioctl(call);

        /* the arguments as kernel/ copied them in; the line is written when the call ends */
        ch->trace_pending = ch->server->trace_fd >= 0 &&
                            call_trace_capture(call, msg->entered_ns, ch->server->received_ns, &ch->traced);
        if (r != EMU_CALL_PARKED)
                channel_finish_call(ch, r, true);
        return 0;
}

static int handle_interrupted(struct connection *ch)
{
        /* The signal may have arrived after the reply left: nothing to do. */
        if (ch->call)
                emu_call_interrupt(ch->call);
        return 0;
}

static int send_mmap_reply(struct connection *ch, long result, const struct emu_mmap_result *map)
{
        struct kfdemu_reply_mmap reply = { .status = KFDEMU_REPLY_RESULT, .result = result };
        int fds[KFDEMU_MMAP_MAX_SEGMENTS];

        if (result < 0 || map->n_segments == 0)
                return send_reply(ch, &reply, sizeof(reply));
        if (map->n_segments > KFDEMU_MMAP_MAX_SEGMENTS)
                return send_result(ch, KFDEMU_REPLY_RESULT, -EIO);

        reply.n_segments = map->n_segments;
        reply.flags = map->pfnmap ? KFDEMU_MMAP_PFNMAP : 0;
        for (unsigned i = 0; i < map->n_segments; i++) {
                fds[i] = map->segments[i].memfd;
                reply.segments[i].memfd_offset = map->segments[i].memfd_offset;
                reply.segments[i].length = map->segments[i].length;
        }
        return send_reply_fds(ch, &reply, sizeof(reply), fds, map->n_segments);
}

static int handle_mmap(struct connection *ch, const struct kfdemu_msg_mmap *msg)
{
        struct connection *file = file_by_inode(ch->server, msg->file_inode);
        struct emu_mmap_result map = { 0 };

        if (!file)
                return send_result(ch, KFDEMU_REPLY_NOT_MINE, 0);
        int r = file->file->render_gpu ? emu_drm_mmap(file->file, msg->offset, msg->length, &map)
                                       : emu_kfd_mmap(file->file, &ch->caller, msg->offset, msg->length, &map);
        return send_mmap_reply(ch, r, &map);
}

static int handle_exec(struct connection *ch)
{
        /* exec_mmap() drops the old mm: kfd_process_notifier_release runs
         * before the new image's first instruction. */
        emu_process_mm_release(&ch->server->node, ch->caller.tgid);
        return send_result(ch, KFDEMU_REPLY_RESULT, 0);
}

static void mqds_reply(struct emu_call *call, long ret)
{
        struct connection *ch = call->transport_data;

        emu_render_on_read(&ch->server->node, EMU_RENDER_MQDS, 0, 0);
        channel_finish_call(ch, ret, true);
}

/* The mqds dump takes every process's mutex: the opener may sleep on one
 * (kernel/kfd-debugfs.c), and the file is rendered when it gets through. */
static int refresh_mqds(struct connection *ch)
{
        struct emu_call *call = calloc(1, sizeof(*call));

        if (!call)
                return send_result(ch, KFDEMU_REPLY_RESULT, -ENOMEM);
        *call = (struct emu_call){ .caller = ch->caller, .reply = mqds_reply, .transport_data = ch };
        ch->call = call;
        if (emu_debugfs_mqds_open(&ch->server->node, call) != EMU_CALL_PARKED)
                mqds_reply(call, 0);
        return 0;
}

static int handle_refresh(struct connection *ch, const struct kfdemu_msg_refresh *msg)
{
        static const enum emu_render_on_read files[] = {
                [KFDEMU_REFRESH_MQDS] = EMU_RENDER_MQDS,
                [KFDEMU_REFRESH_HQDS] = EMU_RENDER_HQDS,
                [KFDEMU_REFRESH_RLS] = EMU_RENDER_RLS,
                [KFDEMU_REFRESH_CU_OCCUPANCY] = EMU_RENDER_CU_OCCUPANCY,
        };

        if (msg->file < KFDEMU_REFRESH_MQDS || msg->file >= ELEMENTSOF(files))
                return -EBADMSG;
        if (msg->file == KFDEMU_REFRESH_MQDS)
                return refresh_mqds(ch);
        emu_render_on_read(&ch->server->node, files[msg->file], msg->tgid, msg->gpu_id);
        return send_result(ch, KFDEMU_REPLY_RESULT, 0);
}

static int handle_stat(struct connection *ch, const struct kfdemu_msg_stat *msg)
{
        struct connection *file = file_by_inode(ch->server, msg->file_inode);

        if (!file)
                return send_result(ch, KFDEMU_REPLY_NOT_MINE, 0);
        return send_result(ch, KFDEMU_REPLY_RESULT,
                           file->file->render_gpu ? file->file->render_gpu->cfg.drm_render_minor : 0);
}

#define IS_MSG(type_name, size) ((size) == sizeof(struct type_name))

/* Returns < 0 when the client broke the protocol. */
static int dispatch(struct connection *c, const void *buf, size_t size)
{
        uint32_t type;

        if (size > KFDEMU_MSG_MAX)
                return -EMSGSIZE;
        if (size < sizeof(type))
                return -EBADMSG;
        memcpy(&type, buf, sizeof(type));

        switch (c->kind) {
        case CONNECTION_NEW:
                if (type == KFDEMU_MSG_OPEN && IS_MSG(kfdemu_msg_open, size))
                        return handle_open(c, buf);
                if (type == KFDEMU_MSG_HELLO && IS_MSG(kfdemu_msg_hello, size))
                        return handle_hello(c, buf);
                return -EBADMSG;
        case CONNECTION_FILE:
                return 0;                /* never reached: file_drain discards its records */
        case CONNECTION_CHANNEL:
                if (type == KFDEMU_MSG_INTERRUPTED && IS_MSG(kfdemu_msg_interrupted, size))
                        return handle_interrupted(c);
                if (c->call)
                        return -EBUSY;   /* one call per thread at a time */
                if (type == KFDEMU_MSG_IOCTL && IS_MSG(kfdemu_msg_ioctl, size))
                        return handle_ioctl(c, buf);
                if (type == KFDEMU_MSG_MMAP && IS_MSG(kfdemu_msg_mmap, size))
                        return handle_mmap(c, buf);
                if (type == KFDEMU_MSG_EXEC && IS_MSG(kfdemu_msg_exec, size))
                        return handle_exec(c);
                if (type == KFDEMU_MSG_REFRESH && IS_MSG(kfdemu_msg_refresh, size))
                        return handle_refresh(c, buf);
                if (type == KFDEMU_MSG_STAT && IS_MSG(kfdemu_msg_stat, size))
                        return handle_stat(c, buf);
                return -EBADMSG;
        }
        return -EBADMSG;
}

/* ---- lifetime ---- */

static void connection_free(struct connection *c)
{
        connection_close_socket(c);
        switch (c->kind) {
        case CONNECTION_FILE:
                file_release_if_unused(c);
                return;
        case CONNECTION_CHANNEL:
                /* The thread died (or closed its channel) while the kernel
                 * had it asleep: nobody is left to reply to. */
                if (c->call) {
                        emu_call_abandon(c->call);
                        channel_finish_call(c, 0, false);
                }
                break;
        case CONNECTION_NEW:
                break;
        }
        connection_unlink(c);
        free(c);
}

/* Whether the client's end is closed: what an empty read means on a
 * SOCK_SEQPACKET socket, unless the client sent an empty record. */
static bool client_hung_up(int fd)
{
        struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };

        return poll(&pfd, 1, 0) < 0 || (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * What a file's socket brings after OPEN is its application writing to
 * /dev/kfd past the preload (stdio, a raw syscall): amdkfd has no write,
 * so it changes nothing (kfd-interface.md §10), and the kernel fails such
 * a write without taking any lock. Discarded here without the node's lock,
 * so that a raw writer does not delay other processes' calls. Returns
 * true when the client's end is closed (or dead): the file is released.
 */
static bool file_drain(int fd)
{
        char buf[64];

        /* A bounded batch: a client streaming writes cannot hold the loop. */
        for (int i = 0; i < 16; i++) {
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return false;
                /* an empty record is a write of 0 bytes, not a close */
                if (n > 0 || (n == 0 && !client_hung_up(fd)))
                        continue;
                return true;
        }
        return false;
}

static int on_connection_ready(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct connection *c = userdata;
        struct kfdemu_server *server = c->server;
        uint64_t buf[KFDEMU_MSG_MAX / sizeof(uint64_t) + 1];

        /* c->kind changes only on this thread (dispatch) */
        if (c->kind == CONNECTION_FILE) {
                if (file_drain(fd)) {
                        /* EOF (the client's last reference closed) or a dead peer. */
                        pthread_mutex_lock(&server->node.lock);
                        connection_free(c);
                        server_resume_accepting(server);
                        pthread_mutex_unlock(&server->node.lock);
                }
                return 0;
        }

        pthread_mutex_lock(&server->node.lock);
        /* A bounded batch: a client streaming garbage cannot hold the loop. */
        for (int i = 0; i < 16; i++) {
                /* became a file (OPEN): what follows is drained unlocked
                 * at the next wake-up */
                if (c->kind == CONNECTION_FILE)
                        break;
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        break;
                if (server->trace_fd >= 0)
                        server->received_ns = monotonic_ns();
                if (n <= 0) {
                        /* EOF (the client's last reference closed) or a dead peer. */
                        connection_free(c);
                        server_resume_accepting(server);
                        break;
                }
                int r = dispatch(c, buf, (size_t)n);
                stop_watch_update(server);
                if (r < 0 && r != -EAGAIN && r != -EPIPE && r != -ECONNRESET) {
                        server_log(server, "dropping client pid %d: %s", (int)c->caller.tgid, strerror(-r));
                        connection_free(c);
                        server_resume_accepting(server);
                        break;
                }
        }
        pthread_mutex_unlock(&server->node.lock);
        return 0;
}

int connection_accept(struct kfdemu_server *server, int listen_fd)
{
        _cleanup_close_ int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct connection *c;
        int r;

        if (fd < 0)
                return errno == EAGAIN ? 0 : NEG_ERRNO();
        if (server->n_connections >= server->max_connections) {
                server_log(server, "refusing a connection: %u clients already", server->n_connections);
                return 1;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
                return 1;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->server = server;
        c->caller.tgid = cred.pid;
        r = sd_event_add_io(server->event, &c->source, fd, EPOLLIN, on_connection_ready, c);
        if (r < 0) {
                free(c);
                return r;
        }
        c->fd = TAKE_FD(fd);
        c->next = server->connections;
        if (c->next)
                c->next->prev = c;
        server->connections = c;
        server->n_connections++;
        return 1;
}

struct emu_file *emu_transport_file_of_fd(struct emu_node *node, int fd)
{
        struct connection *c;
        struct stat st;

        /* A client's file is its socket; the socket's inode names it. */
        if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
                return NULL;
        c = file_by_inode(server_of(node), st.st_ino);
        return c ? c->file : NULL;
}

void connection_drop_all(struct kfdemu_server *server)
{
        /* First the calls (they hold files), then every connection. */
        for (struct connection *c = server->connections; c; c = c->next)
                if (c->kind == CONNECTION_CHANNEL && c->call) {
                        emu_call_abandon(c->call);
                        if (c->call_file)
                                c->call_file->file_state.calls_in_flight--;
                        call_free(c->call);
                        c->call = NULL;
                        c->call_file = NULL;
                }
        while (server->connections) {
                struct connection *c = server->connections;

                connection_close_socket(c);
                if (c->kind == CONNECTION_FILE)
                        file_release(c->file);
                connection_unlink(c);
                free(c);
        }
}
