/* SPDX-License-Identifier: MIT */
/*
 * emu_transport_watch_process: the stand-in for the mmu notifier that
 * amdkfd registers on a process's mm (kfd_process_notifier_release). A
 * pidfd becomes readable once the whole thread group has exited, after
 * exit_mm() dropped the mm, which is when the kernel tears the kfd_process
 * down. (exec, the other way an mm goes, is reported by the preload.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "server.h"

struct process_watch {
        struct process_watch *next;
        struct kfdemu_server *server;
        pid_t tgid;
        int pidfd;
        sd_event_source *source;
};

static void process_watch_free(struct process_watch *w)
{
        struct process_watch **pp = &w->server->watches;

        while (*pp != w)
                pp = &(*pp)->next;
        *pp = w->next;
        sd_event_source_disable_unref(w->source);
        close(w->pidfd);
        free(w);
}

static int on_process_exit(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct process_watch *w = userdata;
        struct kfdemu_server *server = w->server;

        pthread_mutex_lock(&server->node.lock);
        emu_process_mm_release(&server->node, w->tgid);
        process_watch_free(w);
        pthread_mutex_unlock(&server->node.lock);
        return 0;
}

/* kernel/ keeps a pidfd of its own in p->pidfd (to reach the process's fd
 * table, e.g. the debugger's dbg_fd) and closes it when p is freed; the
 * watch holds another, whose lifetime is the process's. */
static int give_pidfd(struct emu_process *p, int pidfd)
{
        p->pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
        return p->pidfd < 0 ? NEG_ERRNO() : 0;
}

int emu_transport_watch_process(struct emu_node *node, struct emu_process *p)
{
        struct kfdemu_server *server = server_of(node);
        struct process_watch *w;
        int r;

        /* After an exec the new kfd_process belongs to the same task, and
         * the pidfd already watching it stays valid. */
        for (w = server->watches; w; w = w->next)
                if (w->tgid == p->tgid)
                        return give_pidfd(p, w->pidfd);

        _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, p->tgid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? -ESRCH : NEG_ERRNO();
        r = give_pidfd(p, pidfd);
        if (r < 0)
                return r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (struct process_watch){ .server = server, .tgid = p->tgid, .pidfd = -1 };
        r = sd_event_add_io(server->event, &w->source, pidfd, EPOLLIN, on_process_exit, w);
        if (r < 0) {
                free(w);
                return r;
        }
        w->pidfd = TAKE_FD(pidfd);
        w->next = server->watches;
        server->watches = w;
        return 0;
}

void process_watch_drop_all(struct kfdemu_server *server)
{
        while (server->watches)
                process_watch_free(server->watches);
}
