/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

#include "log.h"

struct gp_context {
        int kfd_fd;
        uint32_t kfd_major, kfd_minor;
        struct gp_logger logger;
};
