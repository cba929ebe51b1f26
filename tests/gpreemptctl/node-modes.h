/* SPDX-License-Identifier: MIT */
/*
 * The tests that run once per emulated node (meson.build's gpreemptctl_nodes:
 * node, nohws, old-kfd, one-vmid, ...) pick their group by the node's name,
 * their first argument.
 */
#pragma once

#include <stddef.h>

struct CMUnitTest;

struct node_mode {
        const char *name;
        const struct CMUnitTest *tests;
        size_t n_tests;
};

#define NODE_MODE(name, tests) { name, tests, sizeof(tests) / sizeof((tests)[0]) }

/* Runs the group of the mode called name: cmocka's exit code, or 2 for a name not in modes. */
int node_mode_run(const char *name, const struct node_mode *modes, size_t n_modes);
