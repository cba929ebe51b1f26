/* SPDX-License-Identifier: MIT */
#include "eventfifo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/*
 * Why a FIFO opened O_RDWR and nothing else (kfd-interface.md §5):
 *  - an eventfd rejects kfd's 1-byte writes with EINVAL, and kfd ignores
 *    write errors, so events would be lost silently;
 *  - a blocking pipe that fills up blocks the raiser, which can be the
 *    target's CREATE_QUEUE holding event_mutex;
 *  - a pipe whose read end is closed makes pipe_write send SIGPIPE to the
 *    raising thread, i.e. the target; one O_RDWR file is its own reader.
 */
int eventfifo_open(int *ret_fd)
{
        char dir[PATH_MAX], path[PATH_MAX + 8];
        const char *tmp = secure_getenv("TMPDIR");
        int fd, r = 0;

        if (!tmp || tmp[0] != '/')
                tmp = "/tmp";
        if (snprintf(dir, sizeof(dir), "%s/gpreempt-XXXXXX", tmp) >= (int)sizeof(dir))
                return -ENAMETOOLONG;
        /* A 0700 directory of our own, so nobody can swap the FIFO. */
        if (!mkdtemp(dir))
                return NEG_ERRNO();
        snprintf(path, sizeof(path), "%s/events", dir);

        if (mkfifo(path, 0600) < 0)
                r = NEG_ERRNO();
        else {
                fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0)
                        r = NEG_ERRNO();
                (void)unlink(path);
        }
        (void)rmdir(dir);
        if (r < 0)
                return r;

        *ret_fd = fd;
        return 0;
}

int eventfifo_drain(int fd)
{
        char buf[256];
        int total = 0;
        ssize_t n;

        for (;;) {
                n = read(fd, buf, sizeof(buf));
                if (n > 0) {
                        total += (int)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        return NEG_ERRNO();
                return total;
        }
}
