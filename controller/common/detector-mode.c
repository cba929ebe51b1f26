/* SPDX-License-Identifier: MIT */
#include "detector-mode.h"

static const char *const mode_names[_DETECTOR_MODE_MAX] = {
        [DETECTOR_MODE_AUTO] = "auto",
        [DETECTOR_MODE_BREAKPOINT] = "breakpoint",
        [DETECTOR_MODE_POLL] = "poll",
};

const char *detector_mode_to_string(enum detector_mode mode)
{
        return mode < _DETECTOR_MODE_MAX ? mode_names[mode] : "unknown";
}
