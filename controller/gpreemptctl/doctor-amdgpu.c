/* SPDX-License-Identifier: MIT */
/*
 * doctor: the amdgpu module parameters gpreempt depends on, read from
 * /sys/module/amdgpu/parameters (under $GPREEMPT_SYSFS_ROOT):
 * sched_policy (kfd-interface.md §9.1), cwsr_enable and
 * queue_preemption_timeout_ms (§9.5, kfd-hazards.md §1 and §5).
 */
#include "doctor.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kfd-abi.h"


/* The shipped gpreemptd.service's WatchdogSec=. */
#define UNIT_WATCHDOG_MS 10000

/* The parameter's value; -errno when it cannot be read or is not a number. */
static int read_parameter(const struct doctor *d, const char *name, long long *ret_value)
{
        char relative[NAME_MAX + 64], path[PATH_MAX];

        snprintf(relative, sizeof(relative), "module/amdgpu/parameters/%s", name);
        return doctor_read_number(d->paths.sysfs_root, relative, path, sizeof(path), ret_value);
}

/* A parameter that is not there: amdgpu is not loaded, or too old or new to have it. */
static void add_unreadable(struct doctor *d, const char *check, const char *name, int error)
{
        struct doctor_check *c;

        if (error == -ENOENT) {
                c = doctor_add(d, check, DOCTOR_WARNING, "%s/module/amdgpu/parameters/%s does not exist",
                               d->paths.sysfs_root, name);
                doctor_advise(c, "load the amdgpu driver (modprobe amdgpu); if it is loaded, this kernel's amdgpu "
                                 "has no such parameter, and gpreempt cannot check it");
                return;
        }
        c = doctor_add(d, check, DOCTOR_WARNING, "cannot read amdgpu.%s: %s", name, strerror(-error));
        doctor_advise(c, "check /sys/module/amdgpu/parameters/%s by hand", name);
}

static void check_sched_policy(struct doctor *d)
{
        struct doctor_check *c;
        long long v;
        int r = read_parameter(d, "sched_policy", &v);

        if (r < 0) {
                add_unreadable(d, "sched-policy", "sched_policy", r);
                return;
        }
        switch (v) {
        case GP_KFD_SCHED_POLICY_HWS:
                doctor_add(d, "sched-policy", DOCTOR_OK,
                           "amdgpu.sched_policy=0: the hardware scheduler runs, so the debugger interface is on");
                return;
        case GP_KFD_SCHED_POLICY_HWS_NO_OVERSUBSCRIPTION:
                doctor_add(d, "sched-policy", DOCTOR_OK,
                           "amdgpu.sched_policy=1: the hardware scheduler runs (without oversubscription), so the "
                           "debugger interface is on");
                return;
        case GP_KFD_SCHED_POLICY_NO_HWS:
                c = doctor_add(d, "sched-policy", DOCTOR_FAILED,
                               "amdgpu.sched_policy=2: amdgpu runs without the hardware scheduler, which turns the "
                               "debugger interface off (every DBG_TRAP call fails with EINVAL)");
                doctor_advise(c, "load amdgpu with sched_policy=0 (options amdgpu sched_policy=0 in "
                                 "/etc/modprobe.d/, then reboot); the parameter cannot change while amdgpu is loaded");
                return;
        default:
                c = doctor_add(d, "sched-policy", DOCTOR_WARNING,
                               "amdgpu.sched_policy=%lld, which gpreempt does not know (0 and 1 use the hardware "
                               "scheduler, 2 does not)",
                               v);
                doctor_advise(c, "load amdgpu with sched_policy=0");
        }
}

static void check_cwsr(struct doctor *d)
{
        struct doctor_check *c;
        long long v;
        int r = read_parameter(d, "cwsr_enable", &v);

        if (r < 0) {
                add_unreadable(d, "cwsr", "cwsr_enable", r);
                return;
        }
        if (v != 0) {
                doctor_add(d, "cwsr", DOCTOR_OK,
                           "amdgpu.cwsr_enable=%lld: a suspended queue's running waves are saved and restored", v);
                return;
        }
        c = doctor_add(d, "cwsr", DOCTOR_FAILED,
                       "amdgpu.cwsr_enable=0: without compute wave save/restore a suspension waits for the running "
                       "waves to finish, and a long kernel makes it time out, which resets the GPU");
        doctor_advise(c, "load amdgpu with cwsr_enable=1 (the default)");
}

static void check_preemption_timeout(struct doctor *d)
{
        struct doctor_check *c;
        long long v;
        int r = read_parameter(d, "queue_preemption_timeout_ms", &v);

        if (r < 0) {
                add_unreadable(d, "preemption-timeout", "queue_preemption_timeout_ms", r);
                return;
        }
        /* Every suspend and resume is a preemption on HWS GPUs; one the GPU does not finish stalls
         * the GPU's queues, and gpreemptd's loop spinning in the kernel, until this timeout, then
         * resets queues or the GPU (kfd-hazards.md §1, §5). */
        if (v < UNIT_WATCHDOG_MS) {
                c = doctor_add(d, "preemption-timeout", DOCTOR_OK,
                               "amdgpu.queue_preemption_timeout_ms=%lld: a preemption the GPU does not finish stalls "
                               "that GPU and gpreemptd for up to %lld ms, then queues or the GPU are reset",
                               v, v);
                return;
        }
        c = doctor_add(d, "preemption-timeout", DOCTOR_WARNING,
                       "amdgpu.queue_preemption_timeout_ms=%lld: a preemption the GPU does not finish keeps "
                       "gpreemptd in the kernel for up to %lld ms, past the %d s of the shipped unit's WatchdogSec=, "
                       "so systemd also restarts gpreemptd",
                       v, v, UNIT_WATCHDOG_MS / 1000);
        doctor_advise(c, "set it below %d ms (echo 9000 > /sys/module/amdgpu/parameters/queue_preemption_timeout_ms; "
                         "the default is 9000), or raise WatchdogSec= in a drop-in for gpreemptd.service",
                      UNIT_WATCHDOG_MS);
}

void doctor_check_amdgpu(struct doctor *d)
{
        check_sched_policy(d);
        check_cwsr(d);
        check_preemption_timeout(d);
}
