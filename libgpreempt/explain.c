/* SPDX-License-Identifier: MIT */
#include "explain.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "kfd-abi.h"
#include "kfd.h"
#include "opts.h"
#include "proc-status.h"

/* A kernel thread's task flag (include/linux/sched.h), in /proc/<pid>/stat's flags. */
#define PF_KTHREAD 0x00200000u

#define AMDGPU_SCHED_POLICY_PATH "/sys/module/amdgpu/parameters/sched_policy"

static const char *op_verb(enum gp_op op)
{
        switch (op) {
        case GP_OP_OPEN:
                return "open /dev/kfd";
        case GP_OP_ATTACH:
                return "attach to";
        case GP_OP_SNAPSHOT:
                return "list the GPU queues of";
        case GP_OP_SUSPEND:
                return "suspend the GPU queues of";
        case GP_OP_RESUME:
                return "resume the GPU queues of";
        case GP_OP_EVENTS:
                return "read the GPU debug events of";
        case GP_OP_PTRACE:
                return "service the ptrace stops of";
        case GP_OP_DETACH:
                return "detach from";
        }
        return "operate on";
}

static bool is_kernel_debug_op(enum gp_op op)
{
        return op == GP_OP_ATTACH || op == GP_OP_SNAPSHOT || op == GP_OP_SUSPEND ||
               op == GP_OP_RESUME || op == GP_OP_EVENTS || op == GP_OP_DETACH;
}

static char *open_cause(const struct explain_facts *f)
{
        char *s = NULL;
        int r = -1;

        switch (-f->error) {
        case ENOENT:
        case ENODEV:
        case ENXIO:
                r = asprintf(&s, "Cannot open /dev/kfd: the device does not exist; load the "
                                 "amdgpu driver (modprobe amdgpu) on a node with an AMD GPU");
                break;
        case EACCES:
        case EPERM:
                r = asprintf(&s, "Cannot open /dev/kfd: permission denied; run as root or as a "
                                 "member of the group that owns /dev/kfd (usually 'render')");
                break;
        case GP_ERR_KFD_TOO_OLD:
                if (f->kfd_major)
                        r = asprintf(&s,
                                     "The kernel's KFD interface is version %u.%u, older than "
                                     "1.13, so it has no debugger API to suspend GPU queues; run "
                                     "Linux 6.5 or newer, or install a recent amdgpu-dkms",
                                     f->kfd_major, f->kfd_minor);
                else
                        r = asprintf(&s, "The kernel's KFD interface is older than 1.13, so it "
                                         "has no debugger API to suspend GPU queues; run Linux "
                                         "6.5 or newer, or install a recent amdgpu-dkms");
                break;
        case ENOTTY:
                r = asprintf(&s, "/dev/kfd does not answer KFD ioctls (ENOTTY); check that it is "
                                 "the amdkfd device and that the kernel is Linux 6.5 or newer");
                break;
        }
        return r < 0 ? NULL : s;
}

/*
 * A kernel thread or a zombie, which no debugger can ever have, whatever
 * the error said (ptrace's EPERM, or no KFD process): ptrace_attach
 * refuses a kernel thread (PF_KTHREAD) and a task that has exited
 * (exit_state), and amdkfd debugs a process only through the tracer of its
 * main thread (kfd-interface.md §3 step 5).
 */
static char *untraceable_cause(const struct explain_facts *f, const char *verb)
{
        char *s = NULL;
        int r;

        if (f->target_kernel_thread)
                r = asprintf(&s,
                             "Cannot %s process %d: it is a kernel thread, which cannot be traced "
                             "and has no GPU queues; give the PID of a user process",
                             verb, f->pid);
        else if (f->target_state == 'Z' && f->target_threads > 1)
                r = asprintf(&s,
                             "Cannot %s process %d: its main thread has exited while its other "
                             "threads run on, and the kernel lets a debugger in only through its "
                             "main thread; such a process cannot be held",
                             verb, f->pid);
        else if (f->target_state == 'Z' && f->target_parent > 0)
                r = asprintf(&s,
                             "Cannot %s process %d: it has exited, and is a zombie until its "
                             "parent (pid %d) collects its exit status; it has no GPU queues "
                             "left to hold",
                             verb, f->pid, (int)f->target_parent);
        else
                r = asprintf(&s,
                             "Cannot %s process %d: it has exited, and is a zombie until its "
                             "parent collects its exit status; it has no GPU queues left to hold",
                             verb, f->pid);
        return r < 0 ? NULL : s;
}

static char *not_traced_cause(const struct explain_facts *f, const char *verb)
{
        char *s = NULL;
        int r;

        if (f->tracer_pid > 0 && !f->tracer_is_self)
                r = asprintf(&s,
                             "Cannot %s process %d: it is traced by %s (pid %d), and a process "
                             "can have only one tracer; stop that debugger or strace, then try "
                             "again",
                             verb, f->pid, f->tracer_comm ? f->tracer_comm : "another process",
                             f->tracer_pid);
        else if (f->tracer_is_self && f->op == GP_OP_ATTACH)
                r = asprintf(&s,
                             "Cannot %s process %d: this program traces it already (thread %d); "
                             "use that session, or detach it first",
                             verb, f->pid, f->tracer_pid);
        else if (f->op == GP_OP_ATTACH && f->caller_has_cap_sys_ptrace)
                r = asprintf(&s,
                             "Cannot %s process %d: the kernel does not let this program trace it "
                             "although it has CAP_SYS_PTRACE; check /proc/sys/kernel/yama/ptrace_scope "
                             "(3 forbids tracing to everyone) and the security modules (SELinux, "
                             "AppArmor)",
                             verb, f->pid);
        else if (f->op == GP_OP_ATTACH)
                r = asprintf(&s,
                             "Cannot %s process %d: not allowed to trace it; run as root (or "
                             "with CAP_SYS_PTRACE), and check /proc/sys/kernel/yama/ptrace_scope",
                             verb, f->pid);
        else if (f->tracer_is_self)
                r = asprintf(&s,
                             "Cannot %s process %d: this program traces it, yet the kernel refused "
                             "the call: the process is exiting, which ends its GPU debug session "
                             "(nothing is left to do then), or the call came from another thread "
                             "than the tracer",
                             verb, f->pid);
        else
                r = asprintf(&s,
                             "Cannot %s process %d: this thread is no longer its ptrace tracer, "
                             "and the kernel accepts debugger calls only from the tracer thread; "
                             "attach again",
                             verb, f->pid);
        return r < 0 ? NULL : s;
}

static char *gone_cause(const struct explain_facts *f, const char *verb)
{
        char *s = NULL;
        int r;

        if (!f->process_exists && f->caller_in_child_pid_namespace)
                r = asprintf(&s,
                             "Cannot %s process %d: there is no such process in this PID "
                             "namespace, and this program runs inside a container's PID "
                             "namespace; give the PID as seen from here, or run on the host",
                             verb, f->pid);
        else if (!f->process_exists)
                r = asprintf(&s,
                             "Cannot %s process %d: there is no such process (it exited, or the "
                             "PID was taken from another PID namespace); check the PID",
                             verb, f->pid);
        else if (f->op == GP_OP_ATTACH)
                r = asprintf(&s,
                             "Cannot %s process %d: it is exiting or has no GPU context the "
                             "kernel can debug; check that it is still running",
                             verb, f->pid);
        else
                r = asprintf(&s,
                             "Cannot %s process %d: it exited or exec'd, which ended its GPU "
                             "debug session (the kernel resumed its queues); nothing is left "
                             "to do",
                             verb, f->pid);
        return r < 0 ? NULL : s;
}

static char *debug_cause(const struct explain_facts *f, const char *verb)
{
        char *s = NULL;
        int r = -1;

        switch (-f->error) {
        case EPERM:
                if ((f->op == GP_OP_SUSPEND || f->op == GP_OP_RESUME) &&
                    f->runtime_state == GP_RUNTIME_DISABLED)
                        r = asprintf(&s,
                                     "Cannot %s process %d: its ROCm runtime never enabled "
                                     "debugging (it needs ROCm 5.7 or newer; Debian 12's ROCm "
                                     "5.2.3 never enables it); run the application with ROCm "
                                     "5.7 or newer",
                                     verb, f->pid);
                else if ((f->op == GP_OP_SUSPEND || f->op == GP_OP_RESUME) &&
                         f->runtime_state == GP_RUNTIME_ENABLED_BUSY)
                        r = asprintf(&s,
                                     "Cannot %s process %d: another process holds the GPU's "
                                     "only debug VMID (GPUs before MI200 and RDNA1/2 allow one "
                                     "debugged process each); release the other process first",
                                     verb, f->pid);
                else
                        return not_traced_cause(f, verb);
                break;
        case EALREADY:
                r = asprintf(&s,
                             "Cannot %s process %d: another debugger (gdb/rocgdb, or another "
                             "gpreempt) already has a GPU debug session on it, and only one is "
                             "possible; detach that debugger first",
                             verb, f->pid);
                break;
        case EINVAL:
                if (f->sched_policy == GP_KFD_SCHED_POLICY_NO_HWS)
                        r = asprintf(&s,
                                     "Cannot %s process %d: amdgpu runs without the hardware "
                                     "scheduler (sched_policy=2), which disables the GPU "
                                     "debugger interface; load amdgpu with sched_policy=0",
                                     verb, f->pid);
                else if (f->op == GP_OP_ATTACH)
                        r = asprintf(&s,
                                     "Cannot %s process %d: the kernel refused to create a GPU "
                                     "debug session for it (a thread with its own memory map, "
                                     "or KFD is locked); check dmesg",
                                     verb, f->pid);
                else
                        r = asprintf(&s,
                                     "Cannot %s process %d: its GPU debug session was ended by "
                                     "someone else (any process can disable it); attach again",
                                     verb, f->pid);
                break;
        case ENODEV:
                r = asprintf(&s,
                             "Cannot %s process %d: it uses a GPU older than gfx9, which has no "
                             "debugger support; such GPUs cannot be managed",
                             verb, f->pid);
                break;
        case EBUSY:
                r = asprintf(&s,
                             "Cannot %s process %d: it holds a GWS queue (cooperative groups) on "
                             "a GPU that cannot debug one; such processes cannot be managed",
                             verb, f->pid);
                break;
        case GP_ERR_VMID_BUSY:
                r = asprintf(&s,
                             "Cannot %s process %d: another process holds the GPU's only debug "
                             "VMID (GPUs before MI200 and RDNA1/2 allow one debugged process "
                             "each); release the other process first",
                             verb, f->pid);
                break;
        case GP_ERR_RUNTIME_ERROR:
                r = asprintf(&s,
                             "Cannot %s process %d: the kernel failed to activate GPU debugging "
                             "for it (runtime state ENABLED_ERROR); check dmesg for amdgpu "
                             "errors",
                             verb, f->pid);
                break;
        case GP_ERR_NO_QUEUES:
                r = asprintf(&s,
                             "Cannot %s process %d: it has no GPU queues (on the requested "
                             "GPUs); check the PID and the GPU ids",
                             verb, f->pid);
                break;
        case EBADF:
                r = asprintf(&s,
                             "Cannot %s process %d: the /dev/kfd file in use was opened by "
                             "another process, and the kernel accepts only the caller's own; "
                             "open it in this process",
                             verb, f->pid);
                break;
        }
        return r < 0 ? NULL : s;
}

int explain_format(const struct explain_facts *f, char **ret_sentence)
{
        const char *verb = op_verb(f->op);
        char *s = NULL;

        if (f->error >= 0)
                return -EINVAL;

        if (f->op == GP_OP_OPEN)
                s = open_cause(f);
        else if (f->op == GP_OP_ATTACH && (f->target_kernel_thread || f->target_state == 'Z'))
                s = untraceable_cause(f, verb);
        else if (-f->error == GP_ERR_WRONG_THREAD) {
                if (asprintf(&s,
                             "Cannot %s process %d: called from another thread than the one "
                             "that attached it, and the kernel accepts debugger calls only from "
                             "the tracer thread; make every call from the attaching thread",
                             verb, f->pid) < 0)
                        s = NULL;
        } else if (-f->error == GP_ERR_SELF && f->op == GP_OP_ATTACH) {
                if (asprintf(&s,
                             "Cannot %s process %d: it is this very process, and a process cannot "
                             "hold or debug itself; give the PID of another process",
                             verb, f->pid) < 0)
                        s = NULL;
        } else if (-f->error == GP_ERR_NOT_GPU_PROCESS && f->op == GP_OP_ATTACH) {
                if (asprintf(&s,
                             "Cannot %s process %d: it does not use the GPU (it has not opened "
                             "/dev/kfd), and attaching would make the kernel create GPU state for "
                             "it; check the PID, or wait until the process has started using the GPU",
                             verb, f->pid) < 0)
                        s = NULL;
        } else if (-f->error == ESRCH)
                s = gone_cause(f, verb);
        else if (f->op == GP_OP_ATTACH && -f->error == EPERM)
                s = not_traced_cause(f, verb);
        else if (is_kernel_debug_op(f->op))
                s = debug_cause(f, verb);

        if (!s) {
                int r = f->op == GP_OP_OPEN || f->pid <= 0
                                ? asprintf(&s, "Cannot open /dev/kfd: %s", strerror(-f->error))
                                : asprintf(&s, "Cannot %s process %d: %s", verb, f->pid,
                                           strerror(-f->error));
                if (r < 0)
                        return -ENOMEM;
        }
        /* A container's view of the PID is what the user knows; say both. */
        if (f->target_nspid && f->process_exists) {
                char *longer;

                if (asprintf(&longer, "%s (PIDs of that process, outermost namespace first: %s)",
                             s, f->target_nspid) < 0) {
                        free(s);
                        return -ENOMEM;
                }
                free(s);
                s = longer;
        }
        *ret_sentence = s;
        return 0;
}

static int read_sched_policy(void)
{
        _cleanup_free_ char *line = NULL;

        if (read_first_line(AMDGPU_SCHED_POLICY_PATH, &line) < 0)
                return -1;
        return atoi(line);
}

/* NSpid lists the PID in each namespace from the one /proc belongs to down
 * to the process's own: more than one entry means the process lives in a
 * namespace below ours (a container). */
static bool nspid_nested(const char *nspid)
{
        return nspid && strchr(nspid, '\t') != NULL;
}

/* The initial PID namespace has a fixed inode (PROC_PID_INIT_INO in
 * include/linux/proc_ns.h); any other means we run inside a container, where
 * a host PID means nothing. */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

static bool in_child_pid_namespace(void)
{
        struct stat st;

        return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != PROC_PID_INIT_INO;
}

/*
 * Whether CAP_SYS_PTRACE is in this thread's effective set: capget(2) of pid
 * 0 is the calling thread, where /proc/self/status is the main thread's.
 */
static bool has_cap_sys_ptrace(void)
{
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

        if (syscall(SYS_capget, &header, data) < 0)
                return false;
        return (data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective & CAP_TO_MASK(CAP_SYS_PTRACE)) != 0;
}

static void query_kfd_version(uint32_t *ret_major, uint32_t *ret_minor)
{
        _cleanup_close_ int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);

        if (fd >= 0)
                (void)kfd_get_version(fd, ret_major, ret_minor);
}

GP_EXPORT int gp_explain(const struct gp_explain_opts *opts, char **ret_sentence)
{
        _cleanup_free_ char *tracer = NULL, *tracer_comm = NULL, *target_nspid = NULL;
        struct explain_facts facts = { .tracer_pid = -1, .runtime_state = -1 };
        struct proc_stat target;
        char path[64];

        if (!opts || !ret_sentence || !OPTS_HAS(opts, op))
                return -EINVAL;
        facts.error = opts->error;
        facts.op = opts->op;
        facts.pid = OPTS_GET(opts, pid, 0);
        facts.runtime_state = OPTS_GET(opts, runtime_state, -1);
        facts.kfd_major = OPTS_GET(opts, kfd_major, 0);
        facts.kfd_minor = OPTS_GET(opts, kfd_minor, 0);
        if (facts.op == GP_OP_OPEN && -facts.error == GP_ERR_KFD_TOO_OLD && !facts.kfd_major)
                query_kfd_version(&facts.kfd_major, &facts.kfd_minor);

        if (facts.pid > 0) {
                snprintf(path, sizeof(path), "/proc/%d", (int)facts.pid);
                facts.process_exists = access(path, F_OK) == 0;
                if (proc_status_field(facts.pid, "TracerPid", &tracer) >= 0) {
                        facts.tracer_pid = atoi(tracer);
                        /* TracerPid names the tracing thread, which may be any of this process's */
                        snprintf(path, sizeof(path), "/proc/self/task/%d", facts.tracer_pid);
                        facts.tracer_is_self = facts.tracer_pid > 0 && access(path, F_OK) == 0;
                        if (facts.tracer_pid > 0 && proc_comm(facts.tracer_pid, &tracer_comm) >= 0)
                                facts.tracer_comm = tracer_comm;
                }
                if (proc_status_field(facts.pid, "NSpid", &target_nspid) >= 0 &&
                    nspid_nested(target_nspid))
                        facts.target_nspid = target_nspid;
                /* only attach sentences tell of the target's state, and the daemon explains failed
                 * suspensions from its real-time loop */
                if (facts.op == GP_OP_ATTACH && proc_stat_read(facts.pid, &target) >= 0) {
                        facts.target_state = target.state;
                        facts.target_threads = target.threads;
                        facts.target_parent = target.parent;
                        facts.target_kernel_thread = target.flags & PF_KTHREAD;
                }
        }
        if (facts.op == GP_OP_ATTACH)
                facts.caller_has_cap_sys_ptrace = has_cap_sys_ptrace();
        facts.caller_in_child_pid_namespace = in_child_pid_namespace();
        facts.sched_policy = read_sched_policy();

        return explain_format(&facts, ret_sentence);
}
