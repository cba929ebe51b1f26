/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the amdkfd conformance suite. Everything here speaks to
 * the kernel interface directly (open/ioctl on /dev/kfd, ptrace, mkfifo,
 * process_vm_readv, sysfs reads), so the suite means the same thing on a real
 * node as under kfdemu. Functions return 0 / a non-negative value or -errno.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kfd-abi.h"

#define CONF_MAX_GPUS 16
/* Bounded waits: long enough for a loaded CI machine, short enough that a
 * hang fails quickly with a message instead of running into meson's timeout. */
#define CONF_REPLY_TIMEOUT_MS 5000
/* How long "this call must still be blocked" is watched before concluding it is. */
#define CONF_BLOCKED_MS 150
/* r_debug the helper application passes to RUNTIME_ENABLE; rinfo must echo it. */
#define CONF_APP_R_DEBUG 0x7e5700001000ull
/* capabilities_mask the helper passes to RUNTIME_ENABLE (the kernel leaves it alone). */
#define CONF_APP_CAPS_MARKER 0x5a5a0000u
/* Ring of the helper's queues: 64 AQL packets. */
#define CONF_APP_RING_SIZE 4096u

#define CONF_DEV_KFD "/dev/kfd"
#define CONF_SYSFS_KFD "/sys/class/kfd/kfd"
#define CONF_DEBUGFS_MQDS "/sys/kernel/debug/kfd/mqds"
#define CONF_DEBUGFS_HQDS "/sys/kernel/debug/kfd/hqds"

/* The INVALID slot bit of SUSPEND/RESUME as u32. The uapi mask is an int
 * shift, and 1 << 31 on an int is undefined behaviour in C (UBSan traps it). */
#define CONF_QUEUE_INVALID (1u << KFD_DBG_QUEUE_INVALID_BIT)

/* Called from main() of every test program: argv[1] is the helper application. */
void conf_init(int argc, char **argv);
const char *conf_app_path(void);

/* ---- raw ioctls -------------------------------------------------------- */
/* ioctl() on a kfd fd; returns the ioctl's value or -errno. */
long conf_ioctl(int fd, unsigned long request, void *arg);
/* The test program's own /dev/kfd (opened once, kept for the whole program). */
int conf_kfd(void);
int conf_open_kfd(void);
/* What a runtime does after opening /dev/kfd (the thunk's
 * fmm_init_process_apertures): ACQUIRE_VM of every GPU with its render
 * node, which amdkfd requires before a queue (kfd-interface.md §12).
 * Returns 0 or the first -errno. */
long conf_acquire_vms(int kfd);
long conf_dbg_trap(int kfd, pid_t pid, uint32_t op, struct kfd_ioctl_dbg_trap_args *args);
long conf_dbg_enable(int kfd, pid_t pid, uint64_t mask, int dbg_fd, struct kfd_runtime_info *ret_rinfo);
long conf_dbg_disable(int kfd, pid_t pid);
long conf_dbg_suspend(int kfd, pid_t pid, uint32_t *ids, uint32_t n, uint64_t clear_mask);
long conf_dbg_resume(int kfd, pid_t pid, uint32_t *ids, uint32_t n);
long conf_dbg_queue_snapshot(int kfd, pid_t pid, uint64_t clear_mask, void *buf, uint32_t *inout_num,
                             uint32_t *inout_entry_size);
/* Clears NEW on every queue of the target (what kfdtest's SuspendQueues does first). */
long conf_dbg_clear_new(int kfd, pid_t pid);
long conf_dbg_query_event(int kfd, pid_t pid, uint64_t clear_mask, uint64_t *ret_mask, uint32_t *ret_gpu_id,
                          uint32_t *ret_queue_id);
long conf_dbg_send_runtime_event(int kfd, pid_t pid, uint64_t mask, uint32_t gpu_id, uint32_t queue_id);
long conf_dbg_set_exceptions_enabled(int kfd, pid_t pid, uint64_t mask);

/* ---- the event channel ---------------------------------------------------- */
/* A FIFO opened O_RDWR|O_NONBLOCK|O_CLOEXEC (kfd-interface.md §5), already unlinked. */
int conf_event_fifo(void);
/* Waits up to timeout_ms for bytes, then drains: returns how many '.' were read. */
int conf_event_wait(int fifo, int timeout_ms);

/* ---- ptrace ----------------------------------------------------------------- */
int conf_seize(pid_t pid);
/* Interrupt, wait for the stop, detach. */
int conf_detach(pid_t pid);
/* Services pending ptrace stops of a tracee without reaping an exit:
 * signal-delivery stops are continued with their signal, group stops listened. */
void conf_service_stops(pid_t pid);

/* ---- the helper application (conf-gpu-app) ------------------------------- */
struct conf_target {
        pid_t pid;
        int cmd_fd;          /* its stdin */
        int out_fd;          /* its stdout */
        bool traced;         /* service its stops while waiting for replies */
        bool reaped;
        char buf[4096];
        size_t len;
};

struct conf_queue {
        uint32_t id;
        uint32_t gpu_id;
        uint32_t type;       /* KFD_IOC_QUEUE_TYPE_* */
        uint64_t ring;
        uint64_t wptr;
        uint64_t rptr;
        uint64_t ctx_save;
        uint32_t ring_size;
        uint32_t ctx_save_size;
};

/* Forks and execs the helper application, waits for its READY line. */
int conf_target_spawn(struct conf_target *t);
/* Kills (SIGKILL) and reaps it; safe to call twice. */
void conf_target_kill(struct conf_target *t);
int conf_target_send(struct conf_target *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One reply line, without the newline; -ETIMEDOUT or -EPIPE (the target is gone). */
int conf_target_reply(struct conf_target *t, char *line, size_t size, int timeout_ms);
/* Sends a command whose reply is "ok [N]" or "err -ERRNO"; returns N (0) or -ERRNO. */
long conf_target_call(struct conf_target *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses an "ok"/"err" reply line as conf_target_call does. */
long conf_parse_result(const char *line);
/* True when no reply arrives within CONF_BLOCKED_MS: the command still sleeps in the kernel. */
bool conf_target_still_blocked(struct conf_target *t);
int conf_target_create_queue(struct conf_target *t, uint32_t gpu_id, struct conf_queue *ret);
/* The same with an ioctl queue type (KFD_IOC_QUEUE_TYPE_*). */
int conf_target_create_queue_type(struct conf_target *t, uint32_t gpu_id, uint32_t queue_type, struct conf_queue *ret);
/* Queues `count` kernels of `ns` each on queue `qid`; returns the new write index. */
long conf_target_submit(struct conf_target *t, uint32_t qid, uint64_t ns, unsigned count);

/* ---- memory of another process ------------------------------------------- */
int conf_read_u64(pid_t pid, uint64_t addr, uint64_t *ret);
/* Waits until *addr >= value in `pid`; the target is serviced meanwhile. */
int conf_wait_u64_at_least(struct conf_target *t, uint64_t addr, uint64_t value, int timeout_ms);
/* True when *addr does not change during ms milliseconds. */
bool conf_u64_stays(struct conf_target *t, uint64_t addr, int ms);

/* ---- sysfs ------------------------------------------------------------------ */
/* gpu_ids of the topology's GPU nodes, in node order; returns how many. */
int conf_gpu_ids(uint32_t *ids, int max);
/* A decimal key of the GPU's topology node properties (§8.2); -ENOENT if
 * the GPU or the key is not there. */
long long conf_gpu_property(uint32_t gpu_id, const char *key);
/* The same from another file of the GPU's topology node, e.g.
 * "mem_banks/0/properties". */
long long conf_gpu_topology_value(uint32_t gpu_id, const char *file, const char *key);
/* Waits until /sys/class/kfd/kfd/proc/<pid> is gone: the kernel removes a
 * kfd_process (its queues included) from a work item after the mm went. */
int conf_wait_kfd_process_gone(pid_t pid);
/* Whole file into buf (NUL-terminated); returns the byte count. */
ssize_t conf_read_file(const char *path, char *buf, size_t size);
bool conf_path_exists(const char *path);
/* A pid that no process has now (a reaped child's). */
pid_t conf_unused_pid(void);
void conf_sleep_ms(int ms);

/* ---- fixtures ----------------------------------------------------------------- */
/* The subscription a preemption daemon uses (kfd-interface.md §5). */
#define CONF_SUBSCRIPTION                                                          \
        (KFD_EC_MASK(EC_QUEUE_NEW) | KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE) |         \
         KFD_EC_MASK(EC_PROCESS_RUNTIME))

/* A target and, optionally, this thread's debug session on it. */
struct conf_session {
        struct conf_target target;
        int fifo;
        bool enabled;
        struct kfd_runtime_info rinfo;
        uint32_t gpu_ids[CONF_MAX_GPUS];
        int n_gpus;
};

/* Nothing started yet (what conf_session_end accepts). */
void conf_session_init(struct conf_session *s);
/* Spawns the target (opened /dev/kfd; runtime enabled if asked). */
int conf_session_spawn(struct conf_session *s, bool runtime_enable);
/* PTRACE_SEIZE from this thread (unless already traced), the FIFO, ENABLE with `mask`. */
int conf_session_attach(struct conf_session *s, uint64_t mask);
/* DISABLE if still enabled, kill the target, close the FIFO. */
void conf_session_end(struct conf_session *s);

/* cmocka fixtures over a conf_session in *state:
 *   spawned:  target opened /dev/kfd, runtime enabled, not traced;
 *   attached: the same, traced by this thread and debug-enabled with CONF_SUBSCRIPTION. */
int conf_fixture_empty(void **state);    /* no target yet: the test spawns it */
int conf_fixture_spawned(void **state);
int conf_fixture_attached(void **state);
int conf_fixture_end(void **state);
