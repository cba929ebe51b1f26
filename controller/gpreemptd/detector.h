/* SPDX-License-Identifier: MIT */
/*
 * Online activity detection by queue pointers: the AQL write_dispatch_id
 * and read_dispatch_id u64s that ROCr keeps in the online process's own
 * memory (amd_queue_t; kfd-interface.md §7-8, rocm-userspace.md §5). A write
 * index that moved since the last look, or a write index ahead of the read
 * index, means the process has work on that queue's GPU, unless the packet
 * at the read index is a barrier waiting for a signal (aql-barrier.h): such
 * a queue is *waiting*, and the GPU does nothing for it. A waiting queue is
 * read at every look, armed or not, and keeps its GPU on the busy cadence
 * while offline work runs there (cadence.h): the signal
 * releases the packets after the barrier without a store, so no write index
 * moves and no breakpoint fires; its read index moving past the barrier
 * onto more packets is new work.
 *
 * The online process is only read, never attached: debug activation costs
 * the target a runlist refresh and, on GC 11.0.0-11.0.3, half its CUs
 * (kfd-interface.md §9.4, §9.6). Each poll reads a process's queues on a
 * GPU with one process_vm_readv, or through /proc/PID/mem where that cannot
 * reach them (queue-memory.h), all but those under an armed breakpoint and
 * idle (a store there traps); a queue neither can read counts as busy.
 *
 * Where the kernel grants it, a queue's write index also carries a hardware
 * write breakpoint (write-watch.h), armed only while its GPU's online side
 * is idle and the owner does not hold the arming (arming_held(): offline
 * work suspended there): the store that starts new work wakes the
 * loop at once, and a GPU whose every queue is armed needs no polling at all
 * until then. On a trap the writer's breakpoints on that GPU are disarmed
 * (it would otherwise pay a debug trap per store), the other processes'
 * staying armed, so a quiet process on a busy GPU traps once when it starts
 * work; polling follows the work until the queues drain; then they are
 * armed again at once (at the end of the hold, if held) and read once more,
 * so a store between the last poll and the arming is not missed. At most
 * four queues of a process are watched so (the debug registers of x86); the
 * others, and any queue the kernel refuses a breakpoint for, are polled.
 *
 * Polls are per GPU (detector_poll_gpu): the caller decides each GPU's
 * cadence (cadence.c: cadence_gpu_interval()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "detector-mode.h"
#include "poll-watch.h"
#include "write-watch.h"

/* process_vm_readv takes at most IOV_MAX (1024) remote iovecs: two per queue. */
#define DETECTOR_QUEUES_PER_READ 512
#define DETECTOR_MAX_QUEUES_PER_PROCESS 1024
#define DETECTOR_MAX_PROCESSES 1024
#define DETECTOR_MAX_GPUS 64
/* Breakpoints per process: every one takes a debug register in each of its threads. */
#define DETECTOR_BREAKPOINTS_PER_PROCESS WRITE_WATCH_MAX_PER_THREAD

struct detector_queue_addr {
        uint32_t gpu_id;
        uint64_t read_pointer_address;
        uint64_t write_pointer_address;
        /* the ring, from the MQD: where a queue stopped at a barrier is told from one with work (aql-barrier.h) */
        uint64_t ring_base_address;
        uint64_t ring_size; /* bytes; 0: unknown, a queue with packets left always counts busy */
};

struct detector_callbacks {
        void (*gpu_busy)(uint32_t gpu_id, uint64_t now_us, void *userdata);
        void (*gpu_idle)(uint32_t gpu_id, uint64_t since_us, uint64_t now_us, void *userdata);
        /* The process's memory can no longer be read (it exited); it is no longer watched. */
        void (*process_gone)(pid_t pid, void *userdata);
        /*
         * A breakpoint was opened, disarmed (key: its trap key; fds: one per
         * thread of pid it covers, the detector's, valid until closed), or
         * closed: for a waiter on the trap set that disarms a writer itself
         * (detector_trapped()). Either may be NULL; neither is called from
         * detector_free().
         */
        void (*breakpoint_opened)(uint64_t key, pid_t pid, const int *fds, size_t n_fds, void *userdata);
        void (*breakpoint_closed)(uint64_t key, void *userdata);
        /*
         * Whether gpu_id's breakpoints are to stay disarmed when a look finds
         * it idle: the owner holds them while its offline work there is
         * suspended. A store then changes nothing until the resume, before
         * which the owner looks once more (detector_fresh_look_gpu(), which
         * arms them whatever this says; work that started and ended meanwhile
         * is seen as a move, and delays the resume); armed, each online
         * request would trap (a wake-up, a report, the writer disarmed) and
         * each drain arm again. An idle GPU whose arming is held needs no
         * looks (detector_gpus()). Breakpoints armed already stay armed; the
         * first look after the hold ends arms the others and reads once more,
         * also when it ends within that look's gpu_idle(). Asked at each idle
         * look and by detector_gpus(), so cheap; NULL: never held.
         */
        bool (*arming_held)(uint32_t gpu_id, void *userdata);
};

/* How one queue is watched, for gpreemptctl status. */
struct detector_queue_status {
        uint32_t gpu_id;
        uint64_t write_pointer_address;
        bool breakpoint;
        const char *poll_reason; /* when polled: why not a breakpoint */
        int read_error;          /* its process's last read could not reach it (-errno): counted busy, not idle */
        bool read_proc_mem;      /* read through /proc/PID/mem: process_vm_readv could not (VM_PFNMAP memory) */
};

/* A GPU's polling needs, for the caller's cadence. */
struct detector_gpu_status {
        uint32_t gpu_id;
        /* false: nothing watched, or every queue under an armed breakpoint (or its arming held, idle) and none waiting */
        bool needs_poll;
        uint64_t last_poll_us; /* 0: never polled */
};

struct detector;

/* Returns 0, -EINVAL, -ENOMEM, or epoll_create1()'s -errno. */
int detector_new(const struct detector_callbacks *cb, void *userdata, enum detector_mode mode,
                 struct detector **ret_detector);
void detector_free(struct detector *d);
/*
 * The trap set: an epoll fd holding every breakpoint's fd, each with its
 * trap key (trap-key.h) as data. The owner waits on it, on any thread, with
 * epoll_wait() on this very fd, and hands each event back on the detector's
 * thread with detector_trapped(). Never through another epoll set (an
 * sd-event io source): a nested set polls the perf fds to see whether it is
 * ready, and perf_poll() gives a store's wake-up to the first poll alone
 * (kernel/events/core.c), so the inner epoll_wait() would get nothing. The
 * fd is the detector's, valid until detector_free().
 */
int detector_trap_fd(const struct detector *d);
/*
 * An event of the trap set (its epoll data and events), on the detector's
 * thread: a store, or a thread gone. A store disarms the writer's
 * breakpoints on that GPU, the other processes' staying armed: by the
 * detector, or, when writer_disarmed, by the waiter already (with the fds
 * breakpoint_opened() gave), which the detector then only records.
 */
void detector_trapped(struct detector *d, uint64_t key, uint32_t revents, uint64_t now_us, bool writer_disarmed);
/*
 * A process whose queues on a GPU moved within this long is active: the
 * busy cadence's quick looks read it every time (default 0: every process
 * is quiet, read in turn).
 */
void detector_set_active_window(struct detector *d, uint64_t active_window_us);
/* Changes the mode; every watched queue is planned again. Returns 0 or -EINVAL. */
int detector_set_mode(struct detector *d, enum detector_mode mode);

/* Where /proc/PID/mem is read when process_vm_readv cannot (default /proc). Returns 0 or -ENOMEM. */
int detector_set_proc_root(struct detector *d, const char *proc_root);

/* Watches pid's queues (replacing what was watched for it). Returns 0, -E2BIG, -ENOMEM. */
int detector_watch(struct detector *d, pid_t pid, const struct detector_queue_addr *queues, size_t n_queues);
void detector_unwatch(struct detector *d, pid_t pid);
size_t detector_n_queues(const struct detector *d);

/* Reads the queues on gpu_id once and reports its busy/idle transitions. */
void detector_poll_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us);
/*
 * The same in pieces: between two processes, once CLOCK_MONOTONIC has
 * reached give_way_at_us (one process at least is read per call), the look
 * stops and returns false; the next call on the GPU goes on with the
 * processes this look has not read yet, and the one that reads the last of
 * them returns true and reports the transitions. The GPU's last_poll_us is
 * when a look began, set once it is complete, so a GPU whose look gave way
 * stays due. A look that finds work does not give way. An idle GPU's look
 * reads every online process on it (8 at scale), but for its queues under an
 * armed breakpoint and idle: a write on a busy GPU landing in it waited for
 * all of it (docs/benchmarks/daemon-internals.md).
 */
bool detector_poll_gpu_until(struct detector *d, uint32_t gpu_id, uint64_t now_us, uint64_t give_way_at_us);
/*
 * The same in a look of its own: a look under way that gave way is given up
 * (the next call begins afresh), so every process is read now; for a look
 * whose answer must be current, the one before a resume, which arms an idle
 * GPU's breakpoints whatever arming_held() says.
 */
void detector_fresh_look_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us);
/*
 * The same, for the busy cadence: reads only the processes whose queues
 * moved within the active window or had work outstanding at their last read,
 * and, on a GPU that is idle, in turn one of the quiet ones (the one read
 * longest ago); the other quiet ones count as idle, as at their last read.
 * A quiet process that starts work there is seen when its turn comes: within
 * as many looks as the GPU has quiet processes. On a busy GPU the look that
 * finds the others done reads every process before reporting the GPU idle.
 */
void detector_quick_look_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us);
/* Polls every GPU. */
void detector_poll(struct detector *d, uint64_t now_us);
/* The GPUs that have watched queues, up to max; returns how many were written. */
size_t detector_gpus(const struct detector *d, struct detector_gpu_status *out, size_t max);
/* How pid's queues are watched, up to max; returns how many were written. */
size_t detector_process_queues(const struct detector *d, pid_t pid, struct detector_queue_status *out, size_t max);

/*
 * Whether gpu_id's online side is busy, a queue there waits at a barrier
 * (its release is work that only a look sees), or one of its polled queues
 * (no breakpoint) moved within the last recent_us: work that only a look
 * would see may come soon. Work on queues under breakpoints does not count:
 * a store there wakes the loop.
 */
bool detector_gpu_polled_recently_busy(const struct detector *d, uint32_t gpu_id, uint64_t now_us,
                                       uint64_t recent_us);

/*
 * A watch of gpu_id's polled queues for another thread (poll-watch.h): its
 * processes' reads, and their indices as the last look found them, polled
 * every interval_us until recent_us after the last of them moved. *ret is
 * NULL (and 0 returned) where only the loop's looks will do: a GPU that is
 * busy, waits at a barrier, has no polled queue that moved within recent_us
 * (the busy cadence would not look at it either), or a process read
 * through /proc/PID/mem or with its read failing. Returns 0 or -ENOMEM.
 */
int detector_poll_watch(const struct detector *d, uint32_t gpu_id, uint64_t now_us, uint64_t recent_us,
                        uint64_t interval_us, struct poll_watch **ret_watch);
/* Changes whenever a watch of gpu_id made now would differ from one made before, but by the time. */
uint64_t detector_gpu_watch_serial(const struct detector *d, uint32_t gpu_id);
/*
 * Another thread's poll saw gpu_id's queues move (a watch's change): the GPU
 * is busy, as after a trap, until a look that reads every process finds it
 * idle.
 */
void detector_work_seen(struct detector *d, uint32_t gpu_id, uint64_t now_us);
