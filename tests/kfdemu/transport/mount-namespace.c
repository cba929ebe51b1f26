/* SPDX-License-Identifier: MIT */
/*
 * A mount namespace of kfdemu-run's own. Creating one needs CAP_SYS_ADMIN
 * (unshare(2)); a user who lacks it gets it inside a new user namespace,
 * which unshare(CLONE_NEWUSER | CLONE_NEWNS) creates together with the
 * mount namespace it owns (user_namespaces(7)). That user namespace maps
 * the caller's uid and gid to themselves and nothing else: COMMAND keeps
 * the identity it would have had, and since that uid is not 0 there,
 * execve(2) leaves it no capabilities (capabilities(7), "Capabilities and
 * execution of programs by root"); only kfdemu-run itself, which does not
 * exec, keeps the capabilities the namespace's creator gets.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "cleanup.h"
#include "mount-namespace.h"

static int write_proc_self(const char *name, const char *text)
{
        char path[64];
        _cleanup_close_ int fd = -1;
        size_t len = strlen(text);

        snprintf(path, sizeof(path), "/proc/self/%s", name);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return NEG_ERRNO();
        if (write(fd, text, len) != (ssize_t)len)
                return NEG_ERRNO();
        return 0;
}

/* An unprivileged process may map only its own ids, and its gid only once
 * setgroups(2) is denied in the namespace (user_namespaces(7), "Writing
 * "deny" to the /proc/pid/setgroups file"). */
static int map_own_ids(uid_t uid, gid_t gid)
{
        char line[64];
        int r;

        r = write_proc_self("setgroups", "deny");
        if (r < 0)
                return r;
        snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        r = write_proc_self("uid_map", line);
        if (r < 0)
                return r;
        snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
        return write_proc_self("gid_map", line);
}

int mount_namespace_enter_private(void)
{
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (unshare(CLONE_NEWNS) < 0) {
                if (errno != EPERM)
                        return NEG_ERRNO();
                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return NEG_ERRNO();
                int r = map_own_ids(uid, gid);
                if (r < 0)
                        return r;
        }
        /* A namespace unshared by a privileged process shares its mounts'
         * propagation with the one it came from: what kfdemu-run mounts
         * would appear outside the run too. As a slave it still receives
         * what is mounted outside, but sends nothing back. */
        return mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ? NEG_ERRNO() : 0;
}
