/* SPDX-License-Identifier: MIT */
#include "gp-log.h"

#include <stdarg.h>
#include <stdio.h>

/* Long enough for any message the library writes; longer ones are cut. */
#define GP_LOG_LINE_MAX 512

void gp_log(const struct gp_logger *logger, enum gp_log_level level, const char *format, ...)
{
        char line[GP_LOG_LINE_MAX];
        va_list ap;

        /* Formatting costs more than the suspend ioctl's overhead budget:
         * skip it unless somebody listens at this level. */
        if (!logger || !logger->fn || level > logger->max_level)
                return;

        va_start(ap, format);
        vsnprintf(line, sizeof(line), format, ap);
        va_end(ap);
        logger->fn(level, line, logger->userdata);
}
