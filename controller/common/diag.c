/* SPDX-License-Identifier: MIT */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

void diag_add(struct diag *d, const char *file, unsigned line, const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        char *message = NULL;
        char **grown;
        va_list ap;
        int r;

        if (d->n_messages >= DIAG_MAX_MESSAGES) {
                d->n_dropped++;
                return;
        }

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0) {
                text = NULL;
                d->n_dropped++;
                return;
        }

        if (file && line > 0)
                r = asprintf(&message, "%s:%u: %s", file, line, text);
        else if (file)
                r = asprintf(&message, "%s: %s", file, text);
        else
                r = asprintf(&message, "%s", text);
        if (r < 0) {
                d->n_dropped++;
                return;
        }

        grown = realloc(d->messages, (d->n_messages + 1) * sizeof(*grown));
        if (!grown) {
                free(message);
                d->n_dropped++;
                return;
        }
        d->messages = grown;
        d->messages[d->n_messages++] = message;
}

void diag_add_unreadable(struct diag *d, const char *path, const char *what, int r)
{
        diag_add(d, path, 0, "%s: %s", what, strerror(-r));
        if ((r == -EACCES || r == -EPERM) && !d->unreadable)
                d->unreadable = strdup(path); /* NULL on ENOMEM: then only the message tells */
}

size_t diag_count(const struct diag *d)
{
        return d->n_messages + d->n_dropped;
}

void diag_clear(struct diag *d)
{
        for (size_t i = 0; i < d->n_messages; i++)
                free(d->messages[i]);
        free(d->messages);
        free(d->unreadable);
        *d = (struct diag){ 0 };
}
