/* SPDX-License-Identifier: MIT */
/*
 * One GPU's fault back-off and preemption rate limit.
 *
 * On an HWS GPU every SUSPEND_QUEUES and RESUME_QUEUES is an unmap of every
 * queue of every process on the device (kfd-hazards.md §1). A preemption
 * that fails (an errno, -ETIME when the unmap fence timed out, queues the
 * scheduler flagged with ERROR) or a GPU reset says the device is in trouble; preempting it again at once would turn one
 * firmware corner case into a reset of the online service too. So a fault
 * stops preemption on that GPU until a deadline. The deadline doubles for
 * every fault that comes within a quiet period after the last back-off
 * ended, from FaultBackoffSec= up to FaultBackoffMaxSec=; a GPU that ran
 * without a fault for FaultBackoffMaxSec= (the longest back-off) is trusted
 * again and the next fault starts from the base. Faults while the GPU is in
 * back-off are one incident (a reset is a timed-out call, a PRE_RESET and a
 * POST_RESET): they push the deadline out by the current delay, not double it.
 *
 * The kinds are what a daemon can observe of a failed preemption
 * (kfd-interface.md §16). A per-queue reset (Linux 6.12) leaves no mark a
 * debugger can see: the unmap completes, the kernel's has_reset_queue is not
 * reported by any ioctl, and the reset queue's process learns of it through
 * its HW exception event and aborts (§16.2, §16.3). Queues that vanish under
 * a call are an application destroying them (hipStreamDestroy, its exit),
 * never a reset, which leaves the queues in place. Neither is a kind here.
 *
 * The rate limit is a token bucket of MaxPreemptionsPerSecond= tokens a
 * second holding at most one second's worth: a suspension takes a token. The
 * policy coalesces an online burst into one suspension; the bucket bounds
 * what a service sending many short bursts (or a small CoalesceMs=) can make
 * of it (gpreemptd.conf(5) gives the default's reason).
 *
 * Pure logic on a clock the caller passes (µs, CLOCK_MONOTONIC), no I/O and
 * no logging: the caller logs the transitions gpu_backoff_fault() and
 * gpu_backoff_expire() report, with gpu_backoff_describe()'s text.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gpu_fault_kind {
        GPU_FAULT_CALL_ERROR,      /* SUSPEND/RESUME failed with an errno other than the ones below */
        GPU_FAULT_TIMEOUT,         /* -ETIME: the kernel's unmap fence wait timed out */
        GPU_FAULT_QUEUE_ERROR,     /* the call returned queues flagged with KFD_DBG_QUEUE_ERROR_MASK */
        GPU_FAULT_RESET,           /* an SMI GPU_PRE_RESET or GPU_POST_RESET event */
        _GPU_FAULT_KIND_MAX,
};

/* "call-error", "timeout", ...: the name Status and the log use. */
const char *gpu_fault_kind_to_string(enum gpu_fault_kind kind);

struct gpu_backoff_settings {
        uint64_t base_us;                  /* FaultBackoffSec= */
        uint64_t max_us;                   /* FaultBackoffMaxSec=, >= base_us */
        unsigned max_preemptions_per_second; /* MaxPreemptionsPerSecond=; 0 = no limit */
};

struct gpu_backoff {
        struct gpu_backoff_settings settings;
        bool active;                /* preemption stopped until until_us */
        enum gpu_fault_kind reason; /* the fault that started the current or last back-off */
        int error;                  /* its -errno, 0 when it had none */
        uint64_t until_us;
        uint64_t delay_us;          /* the current back-off's length; doubled by the next streak fault */
        uint64_t last_end_us;       /* when the last back-off ended; 0 before the first */
        uint64_t faults;            /* every fault recorded, for Status */
        uint64_t rate_limited;      /* suspensions the bucket refused, for Status */
        uint64_t tokens;            /* in millionths of a token */
        bool token_kept;            /* one taken and kept for the next suspension: the bucket refills around it */
        uint64_t refilled_us;       /* when tokens was last brought up to date */
};

/* A GPU starts with no fault and a full bucket. */
void gpu_backoff_init(struct gpu_backoff *b, const struct gpu_backoff_settings *settings, uint64_t now_us);

/* A reload: new settings; a back-off under way keeps its deadline, the bucket is refilled. */
void gpu_backoff_update_settings(struct gpu_backoff *b, const struct gpu_backoff_settings *settings,
                                 uint64_t now_us);

/*
 * Records a fault of this kind (error: its -errno, or 0). Returns true when
 * it put the GPU into back-off, so that the caller says so once; a fault
 * during a back-off extends it silently.
 */
bool gpu_backoff_fault(struct gpu_backoff *b, enum gpu_fault_kind kind, int error, uint64_t now_us);

/*
 * Ends the back-off once its deadline has passed. Returns true on the call
 * that ended it (the caller says so once), false otherwise. The caller calls
 * it from a timer at gpu_backoff_deadline(), or before asking whether it may
 * preempt.
 */
bool gpu_backoff_expire(struct gpu_backoff *b, uint64_t now_us);

/* The deadline of a back-off under way, for the caller's timer; 0 when none is. */
uint64_t gpu_backoff_deadline(const struct gpu_backoff *b);

/*
 * Whether a suspension may start now, taking nothing. Returns 0; -EBUSY
 * while the GPU is in back-off (*ret_retry_us: its deadline); -EAGAIN when
 * the rate is used up (*ret_retry_us: when the next token is there; counted
 * in rate_limited). Ends an expired back-off first (gpu_backoff_expire()
 * has said so or will not). A suspension that preempts several GPUs (a
 * hold's, on every GPU of its process) asks each, then takes a token of
 * each with gpu_backoff_take_token().
 */
int gpu_backoff_check_suspend(struct gpu_backoff *b, uint64_t now_us, uint64_t *ret_retry_us);

/* Takes the token a gpu_backoff_check_suspend() that returned 0 found, at the same time. */
void gpu_backoff_take_token(struct gpu_backoff *b);

/* gpu_backoff_check_suspend(), and on 0 gpu_backoff_take_token(). */
int gpu_backoff_claim_suspend(struct gpu_backoff *b, uint64_t now_us, uint64_t *ret_retry_us);

/*
 * gpu_backoff_claim_suspend(), with the token kept for a suspension that may
 * come later (a suspend-on-trap mark's) instead of spent now. While it is
 * kept the bucket holds one token less, so the kept one still counts
 * against MaxPreemptionsPerSecond=. Returns as gpu_backoff_claim_suspend().
 */
int gpu_backoff_keep_token(struct gpu_backoff *b, uint64_t now_us, uint64_t *ret_retry_us);

/* Spends the kept token: true if one was kept. */
bool gpu_backoff_spend_kept_token(struct gpu_backoff *b);

/* Whether a token is kept (gpu_backoff_keep_token()). */
bool gpu_backoff_token_kept(const struct gpu_backoff *b);

/*
 * When the next suspension could take a token: now_us when one is there,
 * later when the rate is used up. Takes nothing. Asked before a resume: a
 * suspension that ends while the bucket is empty leaves the next online
 * burst unprotected, so the caller keeps it (within MaxSuspendMs= and the
 * offline share) until then rather than resume and be refused the next one.
 */
uint64_t gpu_backoff_next_suspend_us(struct gpu_backoff *b, uint64_t now_us);

/* What Status shows of a GPU (gpreemptctl status). */
struct gpu_backoff_status {
        bool active;
        const char *reason; /* gpu_fault_kind_to_string(), NULL before the first fault */
        int error;
        uint64_t until_us;  /* CLOCK_MONOTONIC; 0 when not active */
        uint64_t remaining_us;
        uint64_t faults;
        uint64_t rate_limited;
};

void gpu_backoff_status(const struct gpu_backoff *b, uint64_t now_us, struct gpu_backoff_status *ret);

/*
 * The one line for a transition, into buf: on entering, why, for how long
 * and what to do; on leaving, that preemption resumes. gpu_id names the GPU.
 * Returns the length snprintf() would have written.
 */
int gpu_backoff_describe(const struct gpu_backoff *b, uint32_t gpu_id, uint64_t now_us, char *buf, size_t size);
