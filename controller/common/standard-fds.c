/* SPDX-License-Identifier: MIT */
#include "standard-fds.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cleanup.h"

int standard_fds_fill(void)
{
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
                int null;

                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                /* the lowest free descriptor: fd itself, as those below it are open */
                null = open("/dev/null", O_RDONLY | O_NOCTTY);
                if (null < 0)
                        return NEG_ERRNO();
                if (null != fd) {
                        int r = dup2(null, fd) < 0 ? NEG_ERRNO() : 0;

                        close(null);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}
