/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

#include "gp-log.h"

struct gp_context {
        int kfd_fd;
        uint32_t kfd_major, kfd_minor;
        struct gp_logger logger;
};
