/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-app --threads: threads that submit nothing and block no signal, so
 * the app is a multi-threaded target for group stops and can take a
 * signal directed at one of its other threads (tgkill).
 */
#pragma once

struct idle_threads;

/* Starts n threads (n may be 0). */
int idle_threads_start(unsigned n, struct idle_threads **ret);

/* Ends and joins them; NULL is fine. */
void idle_threads_stop(struct idle_threads *t);
