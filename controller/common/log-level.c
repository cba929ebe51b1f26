/* SPDX-License-Identifier: MIT */
#include "log-level.h"

static const char *const log_level_names[_LOG_LEVEL_MAX] = {
        [LOG_LEVEL_ERROR] = "error", [LOG_LEVEL_WARNING] = "warning", [LOG_LEVEL_NOTICE] = "notice",
        [LOG_LEVEL_INFO] = "info",   [LOG_LEVEL_DEBUG] = "debug",
};

const char *log_level_to_string(enum log_level l)
{
        return l < _LOG_LEVEL_MAX ? log_level_names[l] : "unknown";
}
