/* SPDX-License-Identifier: MIT */
#include "array.h"

#include <stdlib.h>
#include <string.h>

void *qf_array_append(void *items_ptr, size_t *n, size_t size)
{
        char **items = items_ptr;
        size_t count = *n;

        if (count == 0 || (count & (count - 1)) == 0) {
                size_t cap = count ? count * 2 : 1;
                char *p = reallocarray(*items, cap, size);
                if (!p)
                        return NULL;
                *items = p;
        }
        char *slot = *items + count * size;
        memset(slot, 0, size);
        *n = count + 1;
        return slot;
}
