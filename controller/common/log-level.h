/* SPDX-License-Identifier: MIT */
/* LogLevel=: the daemon's log levels (their meanings: gpreemptd/log.h). */
#pragma once

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_NOTICE,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
        _LOG_LEVEL_MAX,
};

const char *log_level_to_string(enum log_level l);
