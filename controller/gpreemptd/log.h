/* SPDX-License-Identifier: MIT */
/*
 * The daemon's log: one line per message on stderr, prefixed with the
 * syslog priority in the "<N>" form the journal understands, its control
 * characters and bytes that are not UTF-8 written as \xNN (printable.h),
 * so that what it quotes cannot break the line or act on a terminal. Levels:
 *   error    something the daemon was asked to do failed
 *   warning  something unexpected it worked around
 *   notice   what an operator wants to see: start, reload, processes joining
 *   info     every suspend and resume
 *   debug    every decision, poll-level detail
 * log_*_errno() return the -errno they were given, so a caller can log and
 * return in one statement.
 */
#pragma once

#include "log-level.h"

/* The one piece of global state: every object logs, and the level is set once from the config. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
int log_full_errno(enum log_level level, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error_errno(e, ...) log_full_errno(LOG_LEVEL_ERROR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_error(...) ((void)log_full_errno(LOG_LEVEL_ERROR, 0, __VA_ARGS__))
#define log_warning(...) ((void)log_full_errno(LOG_LEVEL_WARNING, 0, __VA_ARGS__))
#define log_notice(...) ((void)log_full_errno(LOG_LEVEL_NOTICE, 0, __VA_ARGS__))
#define log_info(...) ((void)log_full_errno(LOG_LEVEL_INFO, 0, __VA_ARGS__))
#define log_debug(...) ((void)log_full_errno(LOG_LEVEL_DEBUG, 0, __VA_ARGS__))
