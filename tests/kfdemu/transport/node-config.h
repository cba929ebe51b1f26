/* SPDX-License-Identifier: MIT */
/*
 * The emulated node's configuration file (kfdemu-run --config), INI:
 *
 *   [Node]  KfdVersion=1.13  SchedPolicy=0  QueuePreemptionTimeoutMs=9000
 *           MaxNumOfQueuesPerDevice=4096  Gpus=2
 *   [GPU0] .. [GPU15]  one key per emu_gpu_config field (see node-config.c)
 *
 * Keys override what the caller put in `cfg` (the defaults). Every error is
 * a sentence naming the file, the line and what is wrong.
 */
#pragma once

#include <stddef.h>

#include "state.h"

/* What the file says about the node, kept apart from `cfg` so the caller
 * can let the command line win over the file. */
struct node_config_file {
        unsigned n_gpus;                  /* 0 = the file does not say */
        unsigned highest_gpu_section;     /* 1 + the highest [GPUn] seen; 0 = none */
};

/* Applies `path` to `cfg`. On failure returns -EINVAL (or -errno if the file
 * cannot be read) and writes a sentence to `error`. */
int node_config_parse_file(const char *path, struct emu_config *cfg, struct node_config_file *ret_file,
                           char *error, size_t error_size);

/* The last check, once the GPU count is known: no [GPUn] beyond it. */
int node_config_check_gpu_count(const char *path, const struct node_config_file *file, unsigned n_gpus,
                                char *error, size_t error_size);
