/* SPDX-License-Identifier: MIT */
/*
 * Reading the growable options structs of gpreempt.h: a caller built against
 * an older header passes a smaller .sz, and only the fields it knows about
 * are read; the rest keep their defaults.
 */
#pragma once

#include <stddef.h>

#define GP_EXPORT __attribute__((visibility("default")))

#define OPTS_HAS(opts, field)                                                    \
        ((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field))

#define OPTS_GET(opts, field, fallback) (OPTS_HAS(opts, field) ? (opts)->field : (fallback))

/* A struct smaller than its size field cannot be valid. */
#define OPTS_VALID(opts) (!(opts) || (opts)->sz >= sizeof(size_t))
