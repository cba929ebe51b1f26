/* SPDX-License-Identifier: MIT */
/*
 * Noticing processes as they start and stop using the GPU: every process
 * that opens /dev/kfd gets a directory under /sys/class/kfd/kfd/proc/ (named
 * by its host pid, so container processes are covered). sysfs has no change
 * notification, so the directory is listed every DiscoveryIntervalMs.
 *
 * Each listed process then costs a read of its queue directory (its KFD
 * identity comes with the listing), and an online write landing in a long
 * scan would wait for the rest of it.
 * So a pass after the first goes over the listing in steps at the lowest
 * priority: one process a step while the owner says a GPU is watched
 * closely, up to DISCOVERY_IDLE_STEP_US otherwise. The detector's looks and
 * every other event go between any two.
 *
 * Discovery keeps only what tells a pass's findings apart (each pid's KFD
 * identity and queue-directory signature) and reports them upward; the
 * owner decides what to track. Exits are noticed by the owner at once
 * through each process's pidfd.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

struct discovery_callbacks {
        /* A process opened /dev/kfd (or exec'd into a new KFD process). Returns whether it is tracked. */
        bool (*pid_appeared)(pid_t pid, void *userdata);
        /* Its KFD process is another one now: it exec'd, and the old one is gone. pid_appeared follows. */
        void (*pid_replaced)(pid_t pid, void *userdata);
        /* It is no longer listed: it closed /dev/kfd without exiting. */
        void (*pid_vanished)(pid_t pid, void *userdata);
        /* A tracked process seen again; relisted: its sysfs queue directories changed since the last pass. */
        void (*pid_seen)(pid_t pid, bool relisted, void *userdata);
        /* Whether a GPU is watched closely now: a pass then takes one process a step. */
        bool (*busy)(void *userdata);
};

struct discovery;

/* sysfs_root: where /sys is (tests point it elsewhere). Nothing is looked at before discovery_start(). */
int discovery_new(sd_event *event, const char *sysfs_root, uint64_t interval_us,
                  const struct discovery_callbacks *callbacks, void *userdata, struct discovery **ret_discovery);
struct discovery *discovery_free(struct discovery *d);
/* The first pass, whole and at once, so the processes are known before the daemon says it is ready; the next in interval_us. */
void discovery_start(struct discovery *d);
/* A reload may have changed the interval. */
void discovery_set_interval(struct discovery *d, uint64_t interval_us);
/* Whether the last listing found KFD's sysfs at all (no: amdgpu not loaded, or no AMD GPU). */
bool discovery_kfd_present(const struct discovery *d);
/* The owner stopped tracking pid on its own: a later listing reports it as appearing again. */
void discovery_forget(struct discovery *d, pid_t pid);
