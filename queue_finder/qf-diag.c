/* SPDX-License-Identifier: MIT */
#include "qf-diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

void qf_diag_add(struct qf_diags *d, const char *file, unsigned long line, const char *fmt, ...)
{
        if (d->n >= QF_DIAG_MAX) {
                d->dropped++;
                return;
        }

        _cleanup_free_ char *message = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r < 0) {
                message = NULL;
                d->dropped++;
                return;
        }

        _cleanup_free_ char *name = strdup(file ? file : "");
        struct qf_diag *items = reallocarray(d->items, d->n + 1, sizeof(*items));
        if (!name || !items) {
                if (items)
                        d->items = items;
                d->dropped++;
                return;
        }
        d->items = items;
        d->items[d->n++] = (struct qf_diag){
                .file = TAKE_PTR(name),
                .line = line,
                .message = TAKE_PTR(message),
        };
}

void qf_diags_clear(struct qf_diags *d)
{
        for (size_t i = 0; i < d->n; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
        }
        free(d->items);
        *d = (struct qf_diags){ 0 };
}
