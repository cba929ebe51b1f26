/* SPDX-License-Identifier: MIT */
/*
 * Reading the growable options structs of gpreempt.h: a caller built against
 * an older header passes a smaller .sz, and only the fields it knows about
 * are read; the rest keep their defaults.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define GP_EXPORT __attribute__((visibility("default")))

#define OPTS_HAS(opts, field)                                                    \
        ((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field))

#define OPTS_GET(opts, field, fallback) (OPTS_HAS(opts, field) ? (opts)->field : (fallback))

/*
 * Whether the bytes of a caller's struct past the size this library knows
 * are all zero. A caller built against a newer header passes a larger .sz;
 * its extra fields are fine while unset, but a set one asks for something
 * this library cannot do, and ignoring it would do something else quietly
 * (libbpf's libbpf_validate_opts has the same rule).
 */
static inline bool opts_tail_is_zero(const void *opts, size_t known_size, size_t size)
{
        const unsigned char *bytes = opts;

        for (size_t i = known_size; i < size; i++)
                if (bytes[i])
                        return false;
        return true;
}

/* A struct smaller than its size field cannot be valid; a larger one only with a zero tail. */
#define OPTS_VALID(opts)                                                                        \
        (!(opts) || ((opts)->sz >= sizeof(size_t) &&                                             \
                     ((opts)->sz <= sizeof(*(opts)) || opts_tail_is_zero((opts), sizeof(*(opts)), (opts)->sz))))
