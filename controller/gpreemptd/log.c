/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "printable.h"

/* atomic: the preemption worker's thread logs too (libgpreempt's messages) */
static _Atomic enum log_level max_level = LOG_LEVEL_NOTICE;

/* syslog priorities: err 3, warning 4, notice 5, info 6, debug 7 */
static const int priority[_LOG_LEVEL_MAX] = { 3, 4, 5, 6, 7 };

void log_set_level(enum log_level level)
{
        max_level = level;
}

/*
 * printable_escape() of text, each backslash written as \x5c too: else a
 * process named with a literal "\x0a" would read as one whose name holds a
 * newline. (gpreemptctl's printable_dup() leaves backslashes be: it prints
 * text the daemon may have escaped already.) out has PRINTABLE_SIZE(len).
 */
static void escape_line(char *out, const char *text, size_t len)
{
        for (;;) {
                const char *backslash = memchr(text, '\\', len);
                size_t n = backslash ? (size_t)(backslash - text) : len;

                out += printable_escape(out, text, n);
                if (!backslash)
                        return;
                out = stpcpy(out, "\\x5c");
                text += n + 1;
                len -= n + 1;
        }
}

enum log_level log_get_level(void)
{
        return max_level;
}

int log_full_errno(enum log_level level, int error, const char *fmt, ...)
{
        char text[2048], inert[PRINTABLE_SIZE(sizeof(text))];
        va_list ap;
        int saved = errno;

        if (level <= max_level) {
                va_start(ap, fmt);
                vsnprintf(text, sizeof(text), fmt, ap);
                va_end(ap);
                /* messages quote text from outside (a process's name, a configuration file): a newline
                 * there would make a journal line of its own, with any priority, and an escape sequence
                 * would act on the terminal that shows the log */
                escape_line(inert, text, strlen(text));
                if (error)
                        fprintf(stderr, "<%d>%s: %s\n", priority[level], inert, strerror(error < 0 ? -error : error));
                else
                        fprintf(stderr, "<%d>%s\n", priority[level], inert);
        }
        errno = saved;
        return error < 0 ? error : -error;
}
