/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: gpreemptd's configuration, as the daemon and
 * gpreemptctl verify-config load it. The first byte picks where the input
 * goes: the main file (gpreemptd.conf) or a drop-in (workloads.d/), the
 * rest is the file. Written to a directory of its own on each run, so the
 * real loading code, opening and all, is what is fuzzed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *config_dir(void)
{
        static char dir[64];

        if (!dir[0]) {
                char dropins[96];

                snprintf(dir, sizeof(dir), "/tmp/fuzz-config-%d", (int)getpid());
                snprintf(dropins, sizeof(dropins), "%s/workloads.d", dir);
                if ((mkdir(dir, 0700) < 0 && access(dir, W_OK) < 0) ||
                    (mkdir(dropins, 0700) < 0 && access(dropins, W_OK) < 0))
                        abort();
        }
        return dir;
}

static void write_only(const char *dir, const char *name, const uint8_t *data, size_t size)
{
        static const char *const names[] = { "gpreemptd.conf", "workloads.d/50-fuzz.conf" };
        char path[128];
        int fd;

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                unlink(path);
        }
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
                abort();
        close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *dir = config_dir();
        struct config *config = NULL;
        struct diag diag = { 0 };
        int r;

        if (size == 0)
                return 0;
        write_only(dir, data[0] & 1 ? "workloads.d/50-fuzz.conf" : "gpreemptd.conf", data + 1, size - 1);
        r = config_load(dir, &config, &diag);
        /* a configuration is loaded whole, or refused with at least one problem named */
        if ((r == 0) != (config != NULL) || (r == -EINVAL && diag.n_messages == 0))
                abort();
        for (size_t i = 0; i < diag.n_messages; i++)
                if (!diag.messages[i] ||
                    (!strstr(diag.messages[i], dir) && !strstr(diag.messages[i], "out of memory")))
                        abort(); /* every problem names its file */
        config_free(config);
        diag_clear(&diag);
        return 0;
}
