/* SPDX-License-Identifier: MIT */
/*
 * Which workload a process belongs to. A workload matches when every
 * Match*= key it gives matches (a key matches when any of its values does);
 * the first matching workload, in configuration order, wins. The same code
 * explains the decision for `gpreemptctl verify-config --pid`.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "process-facts.h"

/*
 * Returns true if w matches p. If ret_reason is not NULL it receives a
 * sentence: for a non-match, the first key that failed and what the process
 * has instead; for a match, the keys that matched. (NULL on allocation failure.)
 */
bool workload_match(const struct workload *w, const struct process_facts *p, char **ret_reason);

struct json_object;
/*
 * One line of an explanation, as the Varlink API and `gpreemptctl
 * verify-config --json` both give it: {"workload", "file", "line",
 * "matched", "reason"}. The caller owns the object.
 */
struct json_object *workload_match_to_json(const struct workload *w, bool matched, const char *reason);

/* Returns the first matching workload, or NULL. */
const struct workload *workload_match_first(const struct config *c, const struct process_facts *p);

/*
 * Whether w raises processes to online on what their owners write alone:
 * Class=online with MatchEnvironment= its only key, so that any user can
 * start a process that matches it. gpreemptctl verify-config warns of it.
 */
bool workload_online_by_environment_alone(const struct workload *w);

/* The systemd unit a cgroup path belongs to: its innermost .service or .scope component, or NULL. */
char *workload_match_cgroup_unit(const char *cgroup);
