/* SPDX-License-Identifier: MIT */
/*
 * gp_explain() for a caller that has an error in hand: the sentence that
 * says what failed, why, and what to do, with the KFD version of the open
 * context when there is one. Every component reports library errors so.
 */
#pragma once

#include <sys/types.h>

#include <gpreempt/gpreempt.h>

/*
 * runtime_state: the target's gp_runtime_state, or -1 when unknown; gp may
 * be NULL. Returns a malloc'd sentence (strerror's words when gp_explain
 * cannot say more), or NULL when out of memory.
 */
char *explain_sentence(int error, enum gp_op op, pid_t pid, int runtime_state, const struct gp_context *gp);
