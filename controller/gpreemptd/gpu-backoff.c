/* SPDX-License-Identifier: MIT */
#include "gpu-backoff.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The bucket counts millionths of a token, so that a refill per microsecond is a whole number. */
#define TOKEN_UNITS UINT64_C(1000000)

static const char *const fault_kind_names[_GPU_FAULT_KIND_MAX] = {
        [GPU_FAULT_CALL_ERROR] = "call-error",
        [GPU_FAULT_TIMEOUT] = "timeout",
        [GPU_FAULT_QUEUE_ERROR] = "queue-error",
        [GPU_FAULT_RESET] = "gpu-reset",
};

/* What each fault means, for the log line. */
static const char *const fault_kind_phrases[_GPU_FAULT_KIND_MAX] = {
        [GPU_FAULT_CALL_ERROR] = "a suspend or resume failed",
        [GPU_FAULT_TIMEOUT] = "a suspend or resume timed out waiting for the GPU to preempt its queues",
        [GPU_FAULT_QUEUE_ERROR] = "the GPU's scheduler flagged queues with an error during a suspend or resume",
        [GPU_FAULT_RESET] = "the GPU is being reset",
};

const char *gpu_fault_kind_to_string(enum gpu_fault_kind kind)
{
        return kind < _GPU_FAULT_KIND_MAX ? fault_kind_names[kind] : NULL;
}

static uint64_t bucket_capacity(const struct gpu_backoff_settings *s)
{
        return (uint64_t)s->max_preemptions_per_second * TOKEN_UNITS;
}

/* What the bucket may hold now: its capacity less a kept token, which was taken from it. */
static uint64_t bucket_room(const struct gpu_backoff *b)
{
        uint64_t capacity = bucket_capacity(&b->settings);

        return b->token_kept && capacity >= TOKEN_UNITS ? capacity - TOKEN_UNITS : capacity;
}

void gpu_backoff_init(struct gpu_backoff *b, const struct gpu_backoff_settings *settings, uint64_t now_us)
{
        *b = (struct gpu_backoff){
                .settings = *settings,
                .delay_us = settings->base_us,
                .tokens = bucket_capacity(settings),
                .refilled_us = now_us,
        };
}

void gpu_backoff_update_settings(struct gpu_backoff *b, const struct gpu_backoff_settings *settings,
                                 uint64_t now_us)
{
        b->settings = *settings;
        if (b->delay_us > settings->max_us)
                b->delay_us = settings->max_us;
        if (b->delay_us < settings->base_us)
                b->delay_us = settings->base_us;
        b->tokens = bucket_room(b);
        b->refilled_us = now_us;
}

bool gpu_backoff_fault(struct gpu_backoff *b, enum gpu_fault_kind kind, int error, uint64_t now_us)
{
        b->faults++;
        if (b->active) {
                /* the same incident: it lasts the current delay from its latest sign */
                if (now_us + b->delay_us > b->until_us)
                        b->until_us = now_us + b->delay_us;
                return false;
        }
        if (b->last_end_us != 0 && now_us - b->last_end_us < b->settings.max_us)
                b->delay_us = b->delay_us > b->settings.max_us / 2 ? b->settings.max_us : 2 * b->delay_us;
        else
                b->delay_us = b->settings.base_us;
        b->active = true;
        b->reason = kind;
        b->error = error;
        b->until_us = now_us + b->delay_us;
        return true;
}

bool gpu_backoff_expire(struct gpu_backoff *b, uint64_t now_us)
{
        if (!b->active || now_us < b->until_us)
                return false;
        b->active = false;
        b->last_end_us = now_us;
        return true;
}

uint64_t gpu_backoff_deadline(const struct gpu_backoff *b)
{
        return b->active ? b->until_us : 0;
}

static void refill(struct gpu_backoff *b, uint64_t now_us)
{
        uint64_t capacity = bucket_room(b);
        uint64_t elapsed = now_us > b->refilled_us ? now_us - b->refilled_us : 0;

        b->refilled_us = now_us;
        /* a whole second refills the bucket whatever the rate; avoids the product overflowing */
        if (elapsed >= TOKEN_UNITS || b->tokens >= capacity ||
            capacity - b->tokens <= elapsed * b->settings.max_preemptions_per_second)
                b->tokens = capacity;
        else
                b->tokens += elapsed * b->settings.max_preemptions_per_second;
}

/* When the bucket holds a whole token again, given that it does not now. */
static uint64_t token_due_us(const struct gpu_backoff *b, uint64_t now_us)
{
        unsigned rate = b->settings.max_preemptions_per_second;

        /* rounded up: at that time a whole token is there */
        return now_us + (TOKEN_UNITS - b->tokens + rate - 1) / rate;
}

uint64_t gpu_backoff_next_suspend_us(struct gpu_backoff *b, uint64_t now_us)
{
        if (b->settings.max_preemptions_per_second == 0)
                return now_us;
        refill(b, now_us);
        return b->tokens >= TOKEN_UNITS ? now_us : token_due_us(b, now_us);
}

int gpu_backoff_check_suspend(struct gpu_backoff *b, uint64_t now_us, uint64_t *ret_retry_us)
{
        gpu_backoff_expire(b, now_us);
        if (b->active) {
                *ret_retry_us = b->until_us;
                return -EBUSY;
        }
        if (b->settings.max_preemptions_per_second == 0)
                return 0;
        refill(b, now_us);
        if (b->tokens < TOKEN_UNITS) {
                b->rate_limited++;
                *ret_retry_us = token_due_us(b, now_us);
                return -EAGAIN;
        }
        return 0;
}

void gpu_backoff_take_token(struct gpu_backoff *b)
{
        if (b->settings.max_preemptions_per_second > 0 && b->tokens >= TOKEN_UNITS)
                b->tokens -= TOKEN_UNITS;
}

int gpu_backoff_claim_suspend(struct gpu_backoff *b, uint64_t now_us, uint64_t *ret_retry_us)
{
        int r = gpu_backoff_check_suspend(b, now_us, ret_retry_us);

        if (r >= 0)
                gpu_backoff_take_token(b);
        return r;
}

int gpu_backoff_keep_token(struct gpu_backoff *b, uint64_t now_us, uint64_t *ret_retry_us)
{
        int r = gpu_backoff_claim_suspend(b, now_us, ret_retry_us);

        if (r >= 0)
                b->token_kept = true;
        return r;
}

bool gpu_backoff_spend_kept_token(struct gpu_backoff *b)
{
        bool spent = b->token_kept;

        b->token_kept = false;
        return spent;
}

bool gpu_backoff_token_kept(const struct gpu_backoff *b)
{
        return b->token_kept;
}

void gpu_backoff_status(const struct gpu_backoff *b, uint64_t now_us, struct gpu_backoff_status *ret)
{
        bool active = b->active && now_us < b->until_us;

        *ret = (struct gpu_backoff_status){
                .active = active,
                .reason = b->faults ? gpu_fault_kind_to_string(b->reason) : NULL,
                .error = b->faults ? b->error : 0,
                .until_us = active ? b->until_us : 0,
                .remaining_us = active ? b->until_us - now_us : 0,
                .faults = b->faults,
                .rate_limited = b->rate_limited,
        };
}

int gpu_backoff_describe(const struct gpu_backoff *b, uint32_t gpu_id, uint64_t now_us, char *buf, size_t size)
{
        char error[96] = "";

        if (!b->active)
                return snprintf(buf, size,
                                "GPU %" PRIu32 ": back-off over (it began with: %s; faults on it so far: %" PRIu64
                                "); preempting it again",
                                gpu_id, gpu_fault_kind_to_string(b->reason), b->faults);
        if (b->error < 0)
                snprintf(error, sizeof(error), " (%s)", strerror(-b->error));
        return snprintf(buf, size,
                        "GPU %" PRIu32 ": %s%s; not preempting it for %" PRIu64 " s, offline work runs beside "
                        "online work until then. If this repeats, look for amdgpu errors in the kernel log and "
                        "check the GPU's health; FaultBackoffSec= and FaultBackoffMaxSec= set the pause",
                        gpu_id, fault_kind_phrases[b->reason], error,
                        (b->until_us > now_us ? b->until_us - now_us + 999999 : 0) / 1000000);
}
