/* SPDX-License-Identifier: MIT */
/*
 * The text the doctor reads from /proc and /sys, parsed: the lockdown mode,
 * and which ROCm a process has mapped (a file holding one number is
 * queue_finder's qf_read_s64, through doctor_read_number()). Pure functions over a NUL-terminated buffer, so that
 * tests/fuzz/fuzz-doctor can feed them anything a process or the kernel
 * could put there.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * /sys/kernel/security/lockdown: "[none] integrity confidentiality", the
 * mode in effect in brackets. Writes the mode (NUL-terminated, cut to size).
 * Returns 0, or -EINVAL when no mode is in brackets.
 */
int doctor_parse_lockdown(const char *text, char *ret_mode, size_t size);

/* Which ROCm a process has mapped, as far as the names of its libraries tell. */
struct doctor_rocm {
        bool mapped;          /* libamdhip64, libhsa-runtime64 or libhsakmt is mapped */
        bool version_known;   /* and one of them says which ROCm it is */
        unsigned major, minor;
        char library[256];    /* the mapping that said (or, without a version, the first one seen) */
};

/*
 * Reads /proc/<pid>/maps text (rocm-userspace.md §11): a version from
 * libamdhip64.so.MAJOR.MINOR.*, from libhsa-runtime64.so.1.N.MMmmpp (AMD's
 * builds), or from an /opt/rocm-MAJOR.MINOR.* directory. When the mapped
 * libraries say different versions, the oldest is kept: the runtime can be
 * no newer than its oldest part. Always succeeds.
 */
void doctor_parse_rocm(const char *maps, struct doctor_rocm *ret);
