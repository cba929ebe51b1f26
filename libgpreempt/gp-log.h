/* SPDX-License-Identifier: MIT */
/* The library's only way to say something: the caller's log callback. */
#pragma once

#include <gpreempt/gpreempt.h>

struct gp_logger {
        gp_log_fn fn;
        void *userdata;
        enum gp_log_level max_level;
};

void gp_log(const struct gp_logger *logger, enum gp_log_level level, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

#define log_err(l, ...) gp_log((l), GP_LOG_ERR, __VA_ARGS__)
#define log_warning(l, ...) gp_log((l), GP_LOG_WARNING, __VA_ARGS__)
#define log_info(l, ...) gp_log((l), GP_LOG_INFO, __VA_ARGS__)
#define log_debug(l, ...) gp_log((l), GP_LOG_DEBUG, __VA_ARGS__)
