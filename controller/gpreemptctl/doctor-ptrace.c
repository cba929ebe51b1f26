/* SPDX-License-Identifier: MIT */
/*
 * doctor: what attaching to an offline process takes (kfd-interface.md
 * §9.7): Yama's ptrace_scope, and CAP_SYS_PTRACE and CAP_PERFMON.
 * The capabilities are this process's own: gpreemptd runs as root with
 * both kept by its unit (CapabilityBoundingSet=CAP_SYS_PTRACE CAP_PERFMON),
 * so doctor run as root sees what the daemon gets.
 */
#include "doctor.h"

#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


/* security/yama/yama_lsm.c */
#define YAMA_SCOPE_DISABLED 0
#define YAMA_SCOPE_RELATIONAL 1
#define YAMA_SCOPE_CAPABILITY 2
#define YAMA_SCOPE_NO_ATTACH 3

/* Whether this process has the capability in its effective set; false when it cannot tell. */
static bool has_capability(int cap)
{
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

        if (syscall(SYS_capget, &header, data) < 0 || cap / 32 >= _LINUX_CAPABILITY_U32S_3)
                return false;
        return data[cap / 32].effective & (1u << (cap % 32));
}

static void check_ptrace_scope(struct doctor *d, bool sys_ptrace)
{
        char path[PATH_MAX];
        struct doctor_check *c;
        long long scope;
        int r;

        r = doctor_read_number(d->paths.proc_root, "sys/kernel/yama/ptrace_scope", path, sizeof(path), &scope);
        if (r == -ENOENT) {
                doctor_add(d, "ptrace-scope", DOCTOR_OK,
                           "Yama is not active (%s does not exist): the usual ptrace permissions apply, which root "
                           "passes",
                           path);
                return;
        }
        if (r < 0) {
                c = doctor_add(d, "ptrace-scope", DOCTOR_WARNING, "cannot read %s: %s", path, strerror(-r));
                doctor_advise(c, "check kernel.yama.ptrace_scope (sysctl kernel.yama.ptrace_scope); 3 forbids "
                                 "gpreemptd's attach");
                return;
        }
        switch (scope) {
        case YAMA_SCOPE_DISABLED:
                doctor_add(d, "ptrace-scope", DOCTOR_OK,
                           "Yama ptrace_scope=0: the usual ptrace permissions apply, which root passes");
                return;
        case YAMA_SCOPE_RELATIONAL:
        case YAMA_SCOPE_CAPABILITY:
                doctor_add(d, "ptrace-scope", DOCTOR_OK,
                           "Yama ptrace_scope=%lld: attaching to a process that is not a descendant needs "
                           "CAP_SYS_PTRACE, which gpreemptd's unit keeps%s",
                           scope, sys_ptrace ? "" : " (this process lacks it: see capabilities)");
                return;
        case YAMA_SCOPE_NO_ATTACH:
                c = doctor_add(d, "ptrace-scope", DOCTOR_FAILED,
                               "Yama ptrace_scope=3: no process may attach to another, so neither gpreemptd nor "
                               "gpreemptctl hold can suspend anything");
                doctor_advise(c, "set kernel.yama.ptrace_scope=2 (or lower) in /etc/sysctl.d/ and reboot: once 3, "
                                 "Yama lets no one lower it until the next boot");
                return;
        default:
                c = doctor_add(d, "ptrace-scope", DOCTOR_WARNING, "Yama ptrace_scope=%lld, a value gpreempt does not know",
                               scope);
                doctor_advise(c, "set kernel.yama.ptrace_scope to 2 or lower");
        }
}

static void check_capabilities(struct doctor *d, bool sys_ptrace, bool perfmon)
{
        struct doctor_check *c;

        if (sys_ptrace && perfmon) {
                doctor_add(d, "capabilities", DOCTOR_OK,
                           "this process (uid %d) has CAP_SYS_PTRACE and CAP_PERFMON, as gpreemptd's unit gives "
                           "the daemon",
                           (int)geteuid());
                return;
        }
        c = doctor_add(d, "capabilities", DOCTOR_WARNING,
                       "this process (uid %d) lacks %s%s%s; gpreemptd's unit runs the daemon as root with both, so "
                       "only the checks doctor makes as itself (breakpoint, debugfs) may differ from the daemon's",
                       (int)geteuid(), sys_ptrace ? "" : "CAP_SYS_PTRACE (to attach to other users' processes)",
                       !sys_ptrace && !perfmon ? " and " : "",
                       perfmon ? "" : "CAP_PERFMON (to open breakpoints where perf_event_paranoid > 2)");
        doctor_advise(c, "run gpreemptctl doctor as root (sudo) to check with the daemon's privileges");
}

void doctor_check_ptrace(struct doctor *d)
{
        bool sys_ptrace = has_capability(CAP_SYS_PTRACE), perfmon = has_capability(CAP_PERFMON);

        check_ptrace_scope(d, sys_ptrace);
        check_capabilities(d, sys_ptrace, perfmon);
}
