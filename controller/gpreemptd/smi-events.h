/* SPDX-License-Identifier: MIT */
/*
 * A GPU's KFD SMI events on the loop: GPU resets, queue evictions and
 * restores, VM faults.
 *
 * The interface (kfd_chardev.c kfd_ioctl_smi_events, kfd_smi_events.c;
 * Linux 5.9 and later): AMDKFD_IOC_SMI_EVENTS on an open /dev/kfd with a
 * gpu_id returns an anonymous fd for that GPU; -EINVAL when the gpu_id is
 * not one of the caller's KFD process's GPUs (older kernels: not a GPU;
 * kfd_init_apertures gives a process, when it opens /dev/kfd, every GPU its
 * device cgroup allows), -EMFILE when the caller has no fd number left
 * (anon_inode_getfd). Every kernel with the debugger calls (6.5 and later)
 * has it; before 5.9 kfd_ioctl refuses its number with -EINVAL. Writing a
 * u64 to the fd sets which events it gets (bit N-1 for event N; a new mask
 * replaces the old). Reads return text
 * records (smi-record.h); the fd polls readable while its FIFO holds any,
 * and a read of an empty FIFO fails with EAGAIN. Events of one process
 * (evictions, restores, page faults) reach another process's subscriber only
 * when that subscriber had CAP_SYS_ADMIN at the ioctl and, before a 2025
 * change, set the SMI_EVENT_ALL_PROCESS bit; resets (pid 0) reach everyone.
 * The FIFO holds 1 KiB (8 KiB in later kernels); what does not fit is
 * dropped.
 *
 * Records go to the callbacks by kind (NULL ones are passed over); text
 * from the record (a task name, a reset's cause) is made printable first.
 * A record that does not parse goes to bad_record and the stream goes on. A
 * read error or hang-up ends the subscription: ended() is called once and
 * the source is disabled.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "smi-record.h"

/* What the daemon asks for: resets, evictions and restores, VM faults, of every process. */
#define SMI_EVENTS_DAEMON_MASK                                                                        \
        (SMI_EVENT_MASK(SMI_EVENT_GPU_PRE_RESET) | SMI_EVENT_MASK(SMI_EVENT_GPU_POST_RESET) |         \
         SMI_EVENT_MASK(SMI_EVENT_QUEUE_EVICTION) | SMI_EVENT_MASK(SMI_EVENT_QUEUE_RESTORE) |         \
         SMI_EVENT_MASK(SMI_EVENT_VMFAULT) | SMI_EVENT_MASK(SMI_EVENT_ALL_PROCESS))

struct smi_events_callbacks {
        /* post: GPU_POST_RESET, else GPU_PRE_RESET; cause is "" where the kernel gives none */
        void (*gpu_reset)(uint32_t gpu_id, bool post, uint32_t seq, const char *cause, void *userdata);
        void (*queue_eviction)(uint32_t gpu_id, pid_t pid, int trigger, void *userdata);
        void (*queue_restore)(uint32_t gpu_id, pid_t pid, bool rescheduled, void *userdata);
        void (*vm_fault)(uint32_t gpu_id, pid_t pid, const char *task_name, void *userdata);
        void (*bad_record)(uint32_t gpu_id, const char *why, const char *line, void *userdata);
        /* error: the read's -errno, or 0 at hang-up */
        void (*ended)(uint32_t gpu_id, int error, void *userdata);
};

struct smi_events;

/*
 * Opens gpu_id's SMI event fd on kfd_fd and sets mask on it. Returns the fd,
 * or -errno: -EINVAL the gpu_id is not one of this process's GPUs (or the
 * kernel has no SMI events), -EMFILE no fd number left, -ENOTTY kfd_fd is
 * not /dev/kfd.
 */
int smi_events_subscribe(int kfd_fd, uint32_t gpu_id, uint64_t mask);

/* Sets which events the fd gets. Returns 0 or -errno. */
int smi_events_set_mask(int event_fd, uint64_t mask);

/*
 * Watches event_fd (from smi_events_subscribe(), which it now owns) on e at
 * priority, calling back with userdata. Returns 0 or -errno; on failure the
 * fd is closed.
 */
int smi_events_new(sd_event *e, int64_t priority, int event_fd, uint32_t gpu_id,
                   const struct smi_events_callbacks *cb, void *userdata, struct smi_events **ret);
struct smi_events *smi_events_free(struct smi_events *s);

/* "the kernel does not know this GPU id for this process (...)", ...: what a subscription error means. */
const char *smi_events_strerror(int error);
