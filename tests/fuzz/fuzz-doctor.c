/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what gpreemptctl doctor parses from /proc and /sys
 * (controller/gpreemptctl/doctor-parse.c): a file holding one number, the
 * lockdown file, and a process's maps,
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
        long long value;

        if (size == 0)
                return 0;
        /* the files are read whole and NUL-terminated, as doctor does */
        text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        /* 1 was a process's status, now read with the process's facts (fuzz-proc) */
        switch (data[0] % 4) {
        case 0:
        case 1:
                (void)doctor_parse_int(text, &value);
                break;
        case 2:
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
