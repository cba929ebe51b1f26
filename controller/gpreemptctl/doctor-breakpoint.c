/* SPDX-License-Identifier: MIT */
/*
 * doctor: what gpreemptd's breakpoint detector needs (DetectorMode=auto,
 * controller/gpreemptd/write-watch.c): kernel.perf_event_paranoid, and
 * whether a hardware write breakpoint can be opened at all, tried on a
 * variable of doctor's own and closed at once. Without breakpoints the
 * daemon polls online queues instead (kfd-hazards.md §6 on their cost).
 */
#include "doctor.h"

#include <errno.h>
#include <limits.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>


/*
 * kernel/events/core.c perf_event_open: a breakpoint that excludes the
 * kernel, on the caller's own task, needs no privilege up to
 * perf_event_paranoid 2; Debian's and Ubuntu's level 3 (their
 * CONFIG_SECURITY_PERF_EVENTS_RESTRICT patch, not mainline) refuses every
 * event without CAP_PERFMON. On another process, as gpreemptd watches, the
 * kernel also asks ptrace_may_access(PTRACE_MODE_READ_REALCREDS), which
 * CAP_SYS_PTRACE passes.
 */
#define PARANOID_USER_ONLY 2

/* What the breakpoint watches: written by nobody, never read but by its address. */
static volatile uint64_t watched;

static void check_paranoid(struct doctor *d)
{
        char path[PATH_MAX];
        struct doctor_check *c;
        long long level;
        int r;

        r = doctor_read_number(d->paths.proc_root, "sys/kernel/perf_event_paranoid", path, sizeof(path), &level);
        if (r == -ENOENT) {
                c = doctor_add(d, "perf-paranoid", DOCTOR_WARNING,
                               "%s does not exist: this kernel has no perf events, so gpreemptd polls online queues",
                               path);
                doctor_advise(c, "nothing is needed; polling costs more CPU (DetectorMode= in gpreemptd.conf(5))");
                return;
        }
        if (r < 0) {
                c = doctor_add(d, "perf-paranoid", DOCTOR_WARNING, "cannot read %s: %s", path, strerror(-r));
                doctor_advise(c, "see the breakpoint check: it tries what the daemon needs");
                return;
        }
        if (level <= PARANOID_USER_ONLY) {
                doctor_add(d, "perf-paranoid", DOCTOR_OK,
                           "kernel.perf_event_paranoid=%lld: breakpoints on user memory need no privilege", level);
                return;
        }
        doctor_add(d, "perf-paranoid", DOCTOR_OK,
                   "kernel.perf_event_paranoid=%lld: breakpoints need CAP_PERFMON, which gpreemptd's unit keeps", level);
}

static const char *breakpoint_failure(int error)
{
        switch (error) {
        case -EACCES:
        case -EPERM:
                return "perf_event_open refused it: this process lacks CAP_PERFMON where perf_event_paranoid asks "
                       "for it, or a security module forbids perf events";
        case -ENOSPC:
                return "no debug register was free (a debugger holds them)";
        case -ENOENT:
        case -ENODEV:
        case -EOPNOTSUPP:
                return "this kernel or CPU has no hardware breakpoints (virtual machines often hide the debug "
                       "registers)";
        default:
                return strerror(-error);
        }
}

/* Kernels before 6.1 count breakpoint slots in O(CPUs x breakpoints) under one mutex (kfd-hazards.md §6). */
static bool kernel_before_6_1(char *release, size_t size)
{
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return false;
        snprintf(release, size, "%s", u.release);
        return major < 6 || (major == 6 && minor < 1);
}

static void check_breakpoint(struct doctor *d)
{
        struct perf_event_attr attr = {
                .type = PERF_TYPE_BREAKPOINT,
                .size = sizeof(attr),
                .bp_type = HW_BREAKPOINT_W,
                .bp_addr = (uintptr_t)&watched,
                .bp_len = HW_BREAKPOINT_LEN_8,
                .sample_period = 1,
                .disabled = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
        struct doctor_check *c;
        char release[65];
        int fd;

        /* this very process, any CPU: doctor watches nobody but itself */
        fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
                int error = -errno;

                c = doctor_add(d, "breakpoint", DOCTOR_WARNING,
                               "a hardware write breakpoint could not be opened: %s; gpreemptd then polls online "
                               "queues instead",
                               breakpoint_failure(error));
                doctor_advise(c, error == -EACCES || error == -EPERM
                                         ? "run gpreemptctl doctor as root to check with CAP_PERFMON; without "
                                           "breakpoints polling costs more CPU (DetectorMode= in gpreemptd.conf(5))"
                                         : "nothing is needed; polling costs more CPU (DetectorMode= in "
                                           "gpreemptd.conf(5))");
                return;
        }
        close(fd);
        if (kernel_before_6_1(release, sizeof(release))) {
                c = doctor_add(d, "breakpoint", DOCTOR_WARNING,
                               "a hardware write breakpoint opens, but this kernel (%s) is older than 6.1, where "
                               "arming one costs time in proportion to CPUs and breakpoints and slows thread creation "
                               "in watched processes",
                               release);
                doctor_advise(c, "on many-CPU nodes consider DetectorMode=poll in gpreemptd.conf(5)");
                return;
        }
        doctor_add(d, "breakpoint", DOCTOR_OK,
                   "a hardware write breakpoint opened and closed: gpreemptd can watch online queues without polling");
}

void doctor_check_breakpoint(struct doctor *d)
{
        check_paranoid(d);
        check_breakpoint(d);
}
