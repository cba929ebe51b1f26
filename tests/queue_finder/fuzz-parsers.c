/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry point for the debugfs and log parsers. Built only with
 * clang (see meson.build here); run as
 *   build-fuzz/tests/queue_finder/fuzz-queue-finder -max_total_time=600 \
 *       tests/queue_finder/corpus/
 * and keep new interesting inputs in the corpus directory.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_one(data, size);
        return 0;
}
