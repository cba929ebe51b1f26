/* SPDX-License-Identifier: MIT */
/* DetectorMode=: how gpreemptd notices online work, named as gpreemptd.conf(5) spells it. */
#pragma once

/* How online queues are watched (gpreemptd.conf(5) DetectorMode=). */
enum detector_mode {
        DETECTOR_MODE_AUTO,       /* breakpoints where the kernel grants them, polling elsewhere */
        DETECTOR_MODE_BREAKPOINT, /* the same, but a refused breakpoint is a warning */
        DETECTOR_MODE_POLL,       /* polling only */
        _DETECTOR_MODE_MAX,
};

const char *detector_mode_to_string(enum detector_mode mode);
