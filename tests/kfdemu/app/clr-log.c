/* SPDX-License-Identifier: MIT */
/* HIP/CLR log lines; see clr-log.h for the generations and their sources. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clr-log.h"

/* CLR formats each message into a 4 KiB buffer (log_printf). */
#define CLR_MESSAGE_MAX 4096
/* The HIP API trace wraps the call in ANSI green ... reset, as in the real log. */
#define ANSI_GREEN "\x1b[32m"
#define ANSI_RESET "\x1b[0m"

/* Where CLR prints each line from: file and line per generation. */
struct clr_site {
        const char *file;
        int line[3]; /* indexed by enum clr_log_format */
};

static const struct clr_site SITE_QUEUE_COUNT = {"rocdevice.cpp", {2491, 2706, 2967}};
static const struct clr_site SITE_QUEUE_CREATED = {"rocdevice.cpp", {2557, 2771, 3048}};
static const struct clr_site SITE_ACQUIRE_QUEUE = {"rocdevice.cpp", {0, 2826, 3141}};
static const struct clr_site SITE_RELEASE_QUEUE = {"rocdevice.cpp", {0, 0, 3173}};
static const struct clr_site SITE_DELETE_QUEUE = {"rocdevice.cpp", {0, 0, 286}};
static const struct clr_site SITE_SHADER_NAME = {"rocvirtual.cpp", {2745, 3006, 3351}};
static const struct clr_site SITE_DISPATCH = {"rocvirtual.cpp", {858, 924, 1083}};
static const struct clr_site SITE_STREAM_CREATE_CALL = {"hip_stream.cpp", {0, 0, 293}};
static const struct clr_site SITE_STREAM_CREATE_RETURN = {"hip_stream.cpp", {0, 0, 308}};
static const struct clr_site SITE_STREAM_DESTROY_CALL = {"hip_stream.cpp", {0, 0, 390}};
static const struct clr_site SITE_STREAM_DESTROY_RETURN = {"hip_stream.cpp", {0, 0, 428}};

/* GPU_MAX_HW_QUEUES per priority: 4 by default before 6.2; the ROCm 7.0
 * log shows 8. */
static const int MAX_QUEUES_PER_PRIORITY[3] = {4, 4, 8};

struct clr_log {
        FILE *out;
        int level;
        enum clr_log_format format;
        pid_t pid;
        struct clr_log_clock clock;
        pthread_mutex_t lock;                  /* the per-priority counts */
        int allocated[CLR_PRIORITY_COUNT];
};

static uint64_t monotonic_usec(void *userdata)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t pthread_id(void *userdata)
{
        return (uint64_t)pthread_self();
}

int clr_log_new(FILE *out, int level, enum clr_log_format format, pid_t pid,
                const struct clr_log_clock *clock, struct clr_log **ret_log)
{
        struct clr_log *log;

        if (level < 0 || level > CLR_LOG_LEVEL_MAX || (unsigned)format > CLR_LOG_FORMAT_6_2)
                return -EINVAL;
        log = calloc(1, sizeof(*log));
        if (!log)
                return -ENOMEM;
        log->out = out;
        log->level = level;
        log->format = format;
        log->pid = pid;
        log->clock = clock ? *clock : (struct clr_log_clock){monotonic_usec, pthread_id, NULL};
        pthread_mutex_init(&log->lock, NULL);
        *ret_log = log;
        return 0;
}

void clr_log_free(struct clr_log *log)
{
        if (!log)
                return;
        pthread_mutex_destroy(&log->lock);
        free(log);
}

int clr_log_format_from_string(const char *s, enum clr_log_format *ret)
{
        static const char *const names[] = {"5.2", "6.0", "6.2"};

        for (unsigned i = 0; i < 3; i++)
                if (strcmp(s, names[i]) == 0) {
                        *ret = (enum clr_log_format)i;
                        return 0;
                }
        return -EINVAL;
}

enum clr_queue_priority clr_priority_from_kfd(uint32_t kfd_priority)
{
        if (kfd_priority < EMU_QUEUE_DEFAULT_PRIORITY)
                return CLR_PRIORITY_LOW;
        if (kfd_priority > EMU_QUEUE_DEFAULT_PRIORITY)
                return CLR_PRIORITY_HIGH;
        return CLR_PRIORITY_NORMAL;
}

/* HIP's stream priority argument for a CLR priority (lower = more urgent). */
static int hip_stream_priority(enum clr_queue_priority p)
{
        return p == CLR_PRIORITY_HIGH ? -1 : p == CLR_PRIORITY_LOW ? 1 : 0;
}

__attribute__((format(printf, 4, 5))) static void clr_print(struct clr_log *log, int level,
                                                            const struct clr_site *site,
                                                            const char *format, ...)
{
        char message[CLR_MESSAGE_MAX];
        uint64_t usec, tid;
        va_list ap;

        if (level > log->level)
                return;
        va_start(ap, format);
        vsnprintf(message, sizeof(message), format, ap);
        va_end(ap);
        usec = log->clock.now_usec(log->clock.userdata);
        tid = log->clock.thread_id(log->clock.userdata);

        if (log->format == CLR_LOG_FORMAT_6_2) {
                char pidtid[64] = "";

                /* clr prints pid and tid only when AMD_LOG_LEVEL >= 4 and
                 * keeps the separating space either way. */
                if (log->level >= CLR_LOG_LEVEL_DEBUG)
                        snprintf(pidtid, sizeof(pidtid), "[pid:%d tid: 0x%5" PRIx64 "]", (int)log->pid, tid);
                fprintf(log->out, ":%d:%-25s:%-4d: %010" PRIu64 " us: %s %s\n", level, site->file,
                        site->line[log->format], usec, pidtid, message);
        } else {
                fprintf(log->out, ":%d:%-25s:%-4d: %010" PRIu64 " us: %-5d: [tid:0x%" PRIx64 "] %s\n",
                        level, site->file, site->line[log->format], usec, (int)log->pid, tid, message);
        }
        fflush(log->out);
}

void clr_log_queue_created(struct clr_log *log, const struct emu_queue_identity *q, uintptr_t stream)
{
        enum clr_queue_priority prio = clr_priority_from_kfd(q->priority);
        int counts[CLR_PRIORITY_COUNT];
        /* CLR receives the stream handle's address; a stack address stands in. */
        uintptr_t stream_out = (uintptr_t)&counts;

        pthread_mutex_lock(&log->lock);
        memcpy(counts, log->allocated, sizeof(counts));
        log->allocated[prio]++;
        pthread_mutex_unlock(&log->lock);

        if (log->format == CLR_LOG_FORMAT_6_2)
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_STREAM_CREATE_CALL,
                          ANSI_GREEN " hipStreamCreateWithPriority ( 0x%" PRIxPTR ", 0, %d ) " ANSI_RESET,
                          stream_out, hip_stream_priority(prio));
        clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_QUEUE_COUNT,
                  "%s of allocated hardware queues with low priority: %d, with normal priority: %d, "
                  "with high priority: %d, maximum per priority is: %d",
                  log->format == CLR_LOG_FORMAT_6_2 ? "Number" : "number", counts[CLR_PRIORITY_LOW],
                  counts[CLR_PRIORITY_NORMAL], counts[CLR_PRIORITY_HIGH],
                  MAX_QUEUES_PER_PRIORITY[log->format]);
        switch (log->format) {
        case CLR_LOG_FORMAT_5_2:
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_QUEUE_CREATED,
                          "created hardware queue 0x%" PRIxPTR " with size %u with priority %d, cooperative: %i",
                          q->amd_queue, q->ring_packets, (int)prio, 0);
                break;
        case CLR_LOG_FORMAT_6_0:
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_QUEUE_CREATED,
                          "created hardware queue 0x%" PRIxPTR " with size %u with priority %d, cooperative: %i",
                          q->amd_queue, q->ring_packets, (int)prio, 0);
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_ACQUIRE_QUEUE, "acquireQueue refCount: 0x%" PRIxPTR " (%d)",
                          q->amd_queue, 1);
                break;
        case CLR_LOG_FORMAT_6_2:
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_QUEUE_CREATED,
                          "Created SWq=0x%" PRIxPTR " to map on HWq=0x%" PRIxPTR
                          " with size %u with priority %d, cooperative: %i",
                          q->amd_queue, q->ring, q->ring_packets, (int)prio, 0);
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_ACQUIRE_QUEUE, "acquireQueue refCount: 0x%" PRIxPTR " (%d)",
                          q->ring, 1);
                clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_STREAM_CREATE_RETURN,
                          "hipStreamCreateWithPriority: Returned hipSuccess : stream:0x%" PRIxPTR, stream);
                break;
        }
}

void clr_log_kernel_dispatch(struct clr_log *log, const struct emu_queue_identity *q,
                             const struct emu_dispatch_record *d, const char *shader_name)
{
        char packet[1024];
        unsigned header = d->header;

        clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_SHADER_NAME, "ShaderName : %s", shader_name);
        if (log->level < CLR_LOG_LEVEL_DEBUG)
                return;
        /* The packet decode is common to all generations; what precedes and
         * follows it is not. */
        snprintf(packet, sizeof(packet),
                 "Dispatch Header = 0x%x (type=%u, barrier=%u, acquire=%u, release=%u), setup=%u, "
                 "grid=[%u, %u, %u], workgroup=[%u, %u, %u], private_seg_size=%u, group_seg_size=%u, "
                 "kernel_obj=0x%" PRIx64 ", kernarg_address=0x%" PRIx64 ", completion_signal=0x%" PRIx64,
                 header, header & 0xffu, (header >> 8) & 1u, (header >> 9) & 3u, (header >> 11) & 3u,
                 (unsigned)d->setup, d->grid[0], d->grid[1], d->grid[2], (unsigned)d->workgroup[0],
                 (unsigned)d->workgroup[1], (unsigned)d->workgroup[2], d->private_segment_size,
                 d->group_segment_size, d->kernel_object, d->kernarg_address, d->completion_signal);
        switch (log->format) {
        case CLR_LOG_FORMAT_5_2:
                clr_print(log, CLR_LOG_LEVEL_DEBUG, &SITE_DISPATCH, "HWq=0x%" PRIxPTR ", %s", q->amd_queue, packet);
                break;
        case CLR_LOG_FORMAT_6_0:
                clr_print(log, CLR_LOG_LEVEL_DEBUG, &SITE_DISPATCH, "HWq=0x%" PRIxPTR ", %s", q->ring, packet);
                break;
        case CLR_LOG_FORMAT_6_2:
                /* rptr/wptr are printed as 32-bit values: the read index CLR
                 * saw and the index of this packet. */
                clr_print(log, CLR_LOG_LEVEL_DEBUG, &SITE_DISPATCH,
                          "SWq=0x%" PRIxPTR ", HWq=0x%" PRIxPTR ", id=%d, %s, correlation_id=%d, rptr=%u, wptr=%u",
                          q->amd_queue, q->ring, (int)q->hsa_queue_id, packet, 0, (unsigned)d->read_index,
                          (unsigned)d->index);
                break;
        }
}

void clr_log_queue_destroyed(struct clr_log *log, const struct emu_queue_identity *q, uintptr_t stream)
{
        enum clr_queue_priority prio = clr_priority_from_kfd(q->priority);

        pthread_mutex_lock(&log->lock);
        if (log->allocated[prio] > 0)
                log->allocated[prio]--;
        pthread_mutex_unlock(&log->lock);

        /* Only the ROCm 7.0 log shows what CLR prints on teardown. */
        if (log->format != CLR_LOG_FORMAT_6_2)
                return;
        clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_STREAM_DESTROY_CALL,
                  ANSI_GREEN " hipStreamDestroy ( stream:0x%" PRIxPTR " ) " ANSI_RESET, stream);
        /* No space after the colon: the real log has none. */
        clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_RELEASE_QUEUE, "releaseQueue refCount:0x%" PRIxPTR " (%d)",
                  q->ring, 0);
        clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_STREAM_DESTROY_RETURN, "hipStreamDestroy: Returned hipSuccess : ");
        clr_print(log, CLR_LOG_LEVEL_INFO, &SITE_DELETE_QUEUE, "Deleting hardware queue 0x%" PRIxPTR " with refCount %d",
                  q->ring, 0);
}
