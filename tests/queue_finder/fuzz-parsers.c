/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry point for the debugfs and log parsers. Built only with
 * clang (CC=clang meson setup build-fuzz); run as
 *   cp -r tests/queue_finder/corpus new
 *   build-fuzz/tests/queue_finder/fuzz-queue-finder -max_total_time=600 new
 * and fold what it found back into the kept corpus, by edge coverage so it
 * stays small enough for the CI mutation test:
 *   build-fuzz/tests/queue_finder/fuzz-queue-finder -merge=1 -use_counters=0 \
 *       tests/queue_finder/corpus new
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
