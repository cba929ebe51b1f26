/* SPDX-License-Identifier: MIT */
/*
 * Files the kernel generates when they are read: debugfs kfd/{mqds,hqds,rls}
 * (seq_file show functions walking the queues at read time) and sysfs
 * proc/<pid>/stats_<gpu_id>/cu_occupancy (kfd_procfs_stats_show samples
 * the hardware). The server renders them only when asked: before an open
 * of one is let through, the preload sends REFRESH and waits until the
 * file is current, so a read sees the state of that moment.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "preload.h"
#include "protocol.h"

static const struct {
        const char *path;
        enum kfdemu_refresh_file file;
} debugfs_files[] = {
        { "/sys/kernel/debug/kfd/mqds", KFDEMU_REFRESH_MQDS },
        { "/sys/kernel/debug/kfd/hqds", KFDEMU_REFRESH_HQDS },
        { "/sys/kernel/debug/kfd/rls", KFDEMU_REFRESH_RLS },
};

/* Both spellings of the KFD's sysfs directory (one is a symlink to the other). */
static const char *const proc_dirs[] = {
        "/sys/class/kfd/kfd/proc/",
        "/sys/devices/virtual/kfd/kfd/proc/",
};

static bool parse_cu_occupancy(const char *path, struct kfdemu_msg_refresh *ret)
{
        for (size_t i = 0; i < sizeof(proc_dirs) / sizeof(proc_dirs[0]); i++) {
                size_t n = strlen(proc_dirs[i]);
                int tgid, end = 0;
                unsigned gpu_id;

                if (strncmp(path, proc_dirs[i], n) != 0)
                        continue;
                if (sscanf(path + n, "%d/stats_%u/cu_occupancy%n", &tgid, &gpu_id, &end) != 2 ||
                    path[n + (size_t)end] != '\0' || end == 0)
                        return false;
                ret->file = KFDEMU_REFRESH_CU_OCCUPANCY;
                ret->tgid = tgid;
                ret->gpu_id = gpu_id;
                return true;
        }
        return false;
}

void preload_refresh_on_read(const char *path)
{
        struct kfdemu_msg_refresh msg = { .type = KFDEMU_MSG_REFRESH };
        struct kfdemu_reply reply;
        int saved_errno = errno;

        for (size_t i = 0; i < sizeof(debugfs_files) / sizeof(debugfs_files[0]) && !msg.file; i++)
                if (strcmp(path, debugfs_files[i].path) == 0)
                        msg.file = debugfs_files[i].file;
        if (!msg.file && !parse_cu_occupancy(path, &msg))
                return;
        /* Rendering does not sleep: nothing for a signal to interrupt. A
         * server that cannot be reached leaves the file as last rendered. */
        preload_call(&msg, sizeof(msg), false, &reply, sizeof(reply), NULL, 0, NULL);
        errno = saved_errno;
}
