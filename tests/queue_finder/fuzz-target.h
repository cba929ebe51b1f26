/* SPDX-License-Identifier: MIT */
/*
 * One fuzz input through one parser, shared by the libFuzzer harness
 * (fuzz-parsers.c, clang builds only) and the deterministic mutation test
 * that runs in CI (test-mutation.c). The first byte chooses the parser.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum fuzz_parser {
        FUZZ_MQDS,
        FUZZ_HQDS,
        FUZZ_LOG,
        FUZZ_PARSERS,
};

/* Parses data[1..] with parser data[0] % FUZZ_PARSERS (the log parser with
 * or without a pid for lines that name none, by the next bit of data[0])
 * and checks what every parser promises: success, and warnings only with a
 * file name. */
void fuzz_one(const uint8_t *data, size_t size);

/* Same, with the parser and the log's unmarked pid (qf_log_parse) chosen
 * by the caller. */
void fuzz_parser(enum fuzz_parser parser, const pid_t *unmarked_pid, const uint8_t *data, size_t size);
