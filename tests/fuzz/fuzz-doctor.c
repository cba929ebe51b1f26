/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what gpreemptctl doctor parses from /proc and /sys
 * (controller/gpreemptctl/doctor-parse.c): the lockdown file and a
 * process's maps,
 * whose library names another user's process decides. The first byte picks
 * the parser, the rest is the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doctor-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct doctor_rocm rocm;
        char *text, mode[32];

        if (size == 0)
                return 0;
        /* the files are read whole and NUL-terminated, as doctor does */
        text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        /* even: lockdown, odd: maps (the corpus's selectors 2 and 3 from when numbers and a status were parsed
         * here too; those are queue_finder's qf_read_s64 and fuzz-proc's now) */
        switch (data[0] % 2) {
        case 0:
                if (doctor_parse_lockdown(text, mode, sizeof(mode)) == 0 && strlen(mode) >= sizeof(mode))
                        abort();
                break;
        default:
                doctor_parse_rocm(text, &rocm);
                /* a version is only ever taken from a library that was seen */
                if ((rocm.version_known && !rocm.mapped) || strlen(rocm.library) >= sizeof(rocm.library))
                        abort();
                break;
        }
        free(text);
        return 0;
}
