/* SPDX-License-Identifier: MIT */
/*
 * The undoer holds one end of a stream socket whose other end only the run
 * holds. The run sends each mount point, NUL-terminated, once it has
 * mounted there; end of file, which the kernel delivers when the run's end
 * closes for whatever reason, has the undoer unmount them newest first
 * and exit, which the run (if still there) sees as end of file in turn.
 *
 * It ignores every signal it may: a terminal's ^C or a service manager's
 * SIGTERM reaches the whole group, and the undoer must outlive the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "mount-undoer.h"

/* Everything the run sends until end of file. NULL if it cannot be kept:
 * then nothing is unmounted, rather than a guess. */
static char *read_records(int fd, size_t *ret_len)
{
        size_t len = 0, size = 4096;
        char *buf = malloc(size);
        ssize_t n;

        while (buf && (n = read(fd, buf + len, size - len)) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        free(buf);
                        return NULL;
                }
                len += (size_t)n;
                if (len == size) {
                        char *bigger = realloc(buf, size *= 2);
                        if (!bigger)
                                free(buf);
                        buf = bigger;
                }
        }
        *ret_len = len;
        return buf;
}

static int unmount_recorded(const char *records, size_t len)
{
        int status = EXIT_SUCCESS;

        /* Newest first: a mount made inside a covering tmpfs goes before it. */
        while (len > 0) {
                size_t start = len - 1;
                while (start > 0 && records[start - 1] != '\0')
                        start--;
                const char *path = records + start;
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
                        fprintf(stderr, "kfdemu-run: cannot unmount the node's %s: %m. Unmount it with: umount -l %s\n",
                                path, path);
                        status = EXIT_FAILURE;
                }
                len = start;
        }
        return status;
}

static _Noreturn void undoer_main(int fd)
{
        _cleanup_free_ char *records = NULL;
        size_t len = 0;

        for (int sig = 1; sig < NSIG; sig++)
                signal(sig, SIG_IGN); /* fails, harmlessly, for SIGKILL and SIGSTOP */
        prctl(PR_SET_NAME, "kfdemu-undo");
        /* Only stderr stays: a pipe the run's caller reads to its end
         * must not wait for the undoer, nor a directory stay busy. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, STDIN_FILENO);
                dup2(null, STDOUT_FILENO);
                close(null);
        }
        if (chdir("/") < 0)
                _exit(EXIT_FAILURE);
        records = read_records(fd, &len);
        if (!records) {
                fprintf(stderr, "kfdemu-run: lost track of the node's mounts: %m. Unmount them with umount -l "
                                "(findmnt lists them).\n");
                _exit(EXIT_FAILURE);
        }
        while (len > 0 && records[len - 1] != '\0')
                len--; /* a record cut off: the run died sending it */
        _exit(unmount_recorded(records, len));
}

int mount_undoer_start(void)
{
        int pair[2], status;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return NEG_ERRNO();
        /* Twice, so that the undoer's parent is not the run. */
        pid_t pid = fork();
        if (pid < 0) {
                int r = NEG_ERRNO();
                close(pair[0]);
                close(pair[1]);
                return r;
        }
        if (pid == 0) {
                close(pair[0]);
                pid_t undoer = fork();
                if (undoer == 0)
                        undoer_main(pair[1]);
                _exit(undoer < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        close(pair[1]);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != EXIT_SUCCESS) {
                close(pair[0]);
                return -ECHILD;
        }
        return pair[0];
}

int mount_undoer_record(int fd, const char *path)
{
        size_t len = strlen(path) + 1;

        /* MSG_NOSIGNAL: an undoer gone is an error to report, not SIGPIPE. */
        return send(fd, path, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : errno ? NEG_ERRNO() : -EIO;
}

void mount_undoer_finish(int fd)
{
        char byte;

        shutdown(fd, SHUT_WR);
        while (read(fd, &byte, 1) < 0 && errno == EINTR)
                ;
        close(fd);
}
