/* SPDX-License-Identifier: MIT */
/*
 * A test target whose ROCm runtime starts only when told: it prints
 * "WAITING", waits for a line on stdin, then enables the runtime (which
 * blocks until an attached debugger acknowledges), prints "RUNTIME-UP",
 * disables it again (blocks again) and exits 0. It lets a test attach
 * before the runtime starts, as a daemon does with a process it sees exec.
 */
#include <stdio.h>
#include <string.h>

#include "emu-runtime.h"

int main(void)
{
        struct emu_runtime_options options = { .runtime_enable = true };
        struct emu_runtime *rt;
        char line[64];
        int r;

        printf("WAITING\n");
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
                return 1;
        r = emu_runtime_open(&options, &rt);
        if (r < 0) {
                fprintf(stderr, "runtime-cycler: runtime enable failed: %s\n", strerror(-r));
                return 1;
        }
        printf("RUNTIME-UP\n");
        fflush(stdout);
        r = emu_runtime_close(rt);
        if (r < 0) {
                fprintf(stderr, "runtime-cycler: runtime disable failed: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
