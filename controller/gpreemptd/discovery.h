/* SPDX-License-Identifier: MIT */
/*
 * Noticing processes as they start using the GPU: every process that opens
 * /dev/kfd gets a directory under /sys/class/kfd/kfd/proc/ (named by its
 * host pid, so container processes are covered). sysfs has no change
 * notification, so the directory is listed every DiscoveryIntervalMs; a
 * listing of a few hundred entries costs tens of microseconds. Exits are
 * noticed at once through each process's pidfd (manager.c).
 */
#pragma once

struct manager;
struct tracked_process;

int discovery_start(struct manager *m);
void discovery_stop(struct manager *m);
/* The interval may have changed with a reload. */
void discovery_reconfigure(struct manager *m);
/* Looks for new and vanished processes and queue changes now. */
void discovery_scan(struct manager *m);
/* Re-reads p's queues from sysfs (GPUs, count, signature). */
void discovery_refresh_process(struct manager *m, struct tracked_process *p);
