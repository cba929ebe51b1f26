/* SPDX-License-Identifier: MIT */
/*
 * Noticing processes as they start using the GPU: every process that opens
 * /dev/kfd gets a directory under /sys/class/kfd/kfd/proc/ (named by its
 * host pid, so container processes are covered). sysfs has no change
 * notification, so the directory is listed every DiscoveryIntervalMs; a
 * listing of a few hundred entries costs tens of microseconds. Exits are
 * noticed at once through each process's pidfd (manager.c).
 *
 * Each listed process then costs a stat and a read of its queue directory.
 * At 72 processes on the loaded 2-CPU test VM a whole scan took 1.1-6.6 ms
 * (median 2.7) every 100 ms, and an online write landing in it waited for
 * the rest of it: part of the scale case's reaction tail. So a scan after
 * the first is a pass over the listing in steps at the lowest priority: one
 * process each while a GPU is on a fast cadence, up to ~100 us otherwise.
 * The detector's looks, which are due every 20 us while a GPU is busy, and
 * every other event go between any two.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

struct manager;
struct tracked_process;

struct discovery {
        sd_event_source *timer; /* the next pass */
        sd_event_source *step;  /* a pass under way: a few listed processes per dispatch */
        pid_t *pids;            /* the listing the pass walks */
        size_t n_pids, next;
        bool under_way;
        bool listing_failed;    /* warned about it already */
};

int discovery_start(struct manager *m);
void discovery_stop(struct manager *m);
/* The interval may have changed with a reload. */
void discovery_reconfigure(struct manager *m);
/* Looks for new and vanished processes and queue changes now, in one go. */
void discovery_scan(struct manager *m);
/* Re-reads p's queues from sysfs (GPUs, count, signature). */
void discovery_refresh_process(struct manager *m, struct tracked_process *p);
