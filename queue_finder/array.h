/* SPDX-License-Identifier: MIT */
/*
 * Appending to a (pointer, count) array without a separate capacity field:
 * the capacity is the next power of two >= count, so the storage is
 * reallocated only when count reaches a power of two.
 */
#pragma once

#include <stddef.h>

/* Returns a pointer to a new zeroed element at index *n and increments *n,
 * or NULL (and nothing changes) when memory runs out. */
void *qf_array_append(void *items_ptr, size_t *n, size_t size);

#define QF_APPEND(items, n) ((__typeof__(items)) qf_array_append(&(items), &(n), sizeof(*(items))))
