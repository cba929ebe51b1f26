/* SPDX-License-Identifier: MIT */
/*
 * The debug session with one offline process, through libgpreempt: attach
 * (ptrace seize + kfd debug enable), suspend and resume its queues per GPU,
 * and service its events on the loop: runtime events (acknowledged by the
 * library), queues created while their GPU is suspended (suspended at once),
 * ptrace stops and exit. Ending the session (or the daemon dying) makes the
 * kernel resume all its queues.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct manager;
struct tracked_process;
struct session;

/* Attaches to p. On failure *ret_error (may be NULL) says why in a sentence. */
int session_start(struct manager *m, struct tracked_process *p, char **ret_error);
/* Detaches (which resumes every queue) and frees. */
void session_stop(struct session *s);

/*
 * Suspends or resumes p's queues on gpu_id (0: every GPU). Returns the queue
 * count or -errno; -EIO for a resume the hardware scheduler failed on some
 * queues, which stay suspended.
 */
int session_set_suspended(struct session *s, uint32_t gpu_id, bool suspend);
bool session_is_suspended(const struct session *s, uint32_t gpu_id);
/* Services ptrace stops (called on SIGCHLD). Returns false once the process is gone. */
bool session_service_ptrace(struct session *s);
/*
 * The target was sent a termination signal (seen at its signal-delivery
 * stop). It is about to destroy its queues, and destroying a suspended queue
 * blocks until it is resumed (kfd-interface.md §4.4): it must not stay suspended.
 */
bool session_is_terminating(const struct session *s);
unsigned session_runtime_state(const struct session *s);
uint64_t session_suspend_count(const struct session *s);
uint64_t session_resume_count(const struct session *s);
