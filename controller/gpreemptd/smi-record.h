/* SPDX-License-Identifier: MIT */
/*
 * The records of KFD's SMI event file, parsed.
 *
 * What the kernel writes (kfd_smi_events.c and the KFD_EVENT_FMT_* macros of
 * include/uapi/linux/kfd_ioctl.h; read at torvalds/linux for the 5.9 form
 * and at a 6.x tree for the current one): one text line per event, the event
 * number in hex, a space, the event's fields, "\n". The fields of the events
 * the daemon acts on:
 *
 *   GPU_PRE_RESET (3), GPU_POST_RESET (4)   "%x\n" reset sequence number
 *                                           (5.9 to 6.x), "%x %s\n" with the
 *                                           reset's cause (later kernels)
 *   QUEUE_EVICTION (9)                      "%lld -%d %x %d\n": ns, pid, gpu_id,
 *                                           trigger
 *   QUEUE_RESTORE (10, written "a")         "%lld -%d %x %c\n" ns, pid, gpu_id,
 *                                           'R' when rescheduled (or "%lld -%d %x\n"
 *                                           where that field was dropped)
 *   VMFAULT (1)                             "%x:%s\n" pid (hex), task name
 *
 * Other known events (thermal throttling, migrations, page faults, unmaps,
 * process start/end) are recognised and passed over. A record is at most
 * KFD_SMI_EVENT_MSG_SIZE (96) bytes in current kernels; a read() returns
 * whatever the FIFO holds up to the buffer's size, so a record may arrive in
 * pieces (in 5.9 a read returned at most 8 bytes), and the stream
 * reassembles lines. Anything else (garbage, an unknown event, a field out of
 * range, an overlong line, a NUL) is reported with the reason and skipped up
 * to the next newline: the kernel's format may change, and a daemon must not
 * stop on it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* enum kfd_smi_event in include/uapi/linux/kfd_ioctl.h */
enum smi_event {
        SMI_EVENT_VMFAULT = 1,
        SMI_EVENT_THERMAL_THROTTLE = 2,
        SMI_EVENT_GPU_PRE_RESET = 3,
        SMI_EVENT_GPU_POST_RESET = 4,
        SMI_EVENT_MIGRATE_START = 5,
        SMI_EVENT_MIGRATE_END = 6,
        SMI_EVENT_PAGE_FAULT_START = 7,
        SMI_EVENT_PAGE_FAULT_END = 8,
        SMI_EVENT_QUEUE_EVICTION = 9,
        SMI_EVENT_QUEUE_RESTORE = 10,
        SMI_EVENT_UNMAP_FROM_GPU = 11,
        SMI_EVENT_PROCESS_START = 12,
        SMI_EVENT_PROCESS_END = 13,
        /* not an event: the mask bit that asks for other processes' events (CAP_SYS_ADMIN) */
        SMI_EVENT_ALL_PROCESS = 64,
};

#define SMI_EVENT_MASK(event) (UINT64_C(1) << ((event) - 1))

/* Longer than any record the kernel writes (KFD_SMI_EVENT_MSG_SIZE, 96): a longer line is not one. */
#define SMI_RECORD_MAX 255
#define SMI_TASK_NAME_MAX 16  /* TASK_COMM_LEN */
#define SMI_RESET_CAUSE_MAX 95 /* the whole of a record, KFD_SMI_EVENT_MSG_SIZE, less its event number */

struct smi_record {
        enum smi_event event;
        bool parsed;          /* false: a known event whose fields the daemon does not read */
        uint64_t timestamp_ns; /* QUEUE_*: boot time, stops during suspend */
        pid_t pid;            /* QUEUE_*, VMFAULT */
        uint32_t gpu_id;      /* QUEUE_*: the node the event names */
        int trigger;          /* QUEUE_EVICTION: enum KFD_QUEUE_EVICTION_TRIGGERS */
        bool rescheduled;     /* QUEUE_RESTORE: the restore failed and is tried again */
        uint32_t reset_seq;   /* GPU_*_RESET */
        char reset_cause[SMI_RESET_CAUSE_MAX + 1]; /* GPU_*_RESET, "" where the kernel gives none */
        char task_name[SMI_TASK_NAME_MAX + 1];     /* VMFAULT */
};

/*
 * Parses one record without its "\n" (len bytes, no NUL needed). Returns 0
 * with *ret, or -EINVAL with *ret_why saying what is wrong with it
 * (-EOPNOTSUPP for an event number this code does not know).
 */
int smi_record_parse(const char *line, size_t len, struct smi_record *ret, const char **ret_why);

struct smi_stream_callbacks {
        void (*record)(const struct smi_record *r, void *userdata);
        /* a line that is not a record: why, and the line (printable or not; at most SMI_RECORD_MAX bytes) */
        void (*bad_record)(const char *why, const char *line, size_t len, void *userdata);
};

/* Reassembles lines from a byte stream. Zero-initialised is empty. */
struct smi_stream {
        char line[SMI_RECORD_MAX];
        size_t len;
        bool overlong; /* dropping the rest of a line longer than SMI_RECORD_MAX */
};

/* Feeds bytes as read(); calls back for every complete line. */
void smi_stream_feed(struct smi_stream *s, const char *data, size_t n, const struct smi_stream_callbacks *cb,
                     void *userdata);
