/* SPDX-License-Identifier: MIT */
/*
 * The emulated kernel log: where amdkfd would pr_err()/dev_warn() to dmesg,
 * kfdemu writes one line to the node's log (node->log_fd), so a test or a
 * person can see the same explanation a real node gives.
 */
#include <stdarg.h>
#include <stdio.h>

#include "kfd-priv.h"

void kfd_log(struct emu_node *node, const char *fmt, ...)
{
        char line[512];
        va_list ap;
        int n;

        if (node->log_fd < 0)
                return;

        va_start(ap, fmt);
        n = vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        /* A log line that cannot be written is dropped, as printk drops
         * what the ring buffer cannot hold; the emulated call goes on. */
        (void)dprintf(node->log_fd, "amdkfd: %s\n", line);
}
