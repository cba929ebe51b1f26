/* SPDX-License-Identifier: MIT */
/*
 * The register/memory dump lines both debugfs files use:
 * "    <8 hex digit address>: <8 hex digit value> ..." with up to 8 values
 * (mqds: seq_hex_dump, 32 bytes per row; hqds: seq_reg_dump, 1 + up to 7).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QF_HEXDUMP_MAX_VALUES 8

struct qf_hexdump_row {
        uint32_t address;
        uint32_t values[QF_HEXDUMP_MAX_VALUES];
        unsigned n_values;
};

/* true for a well-formed row; false for anything else, including a row with
 * more than QF_HEXDUMP_MAX_VALUES values, a value wider than 32 bits, or one
 * of fewer than 8 digits (a row cut short: the last of a truncated file). */
bool qf_hexdump_parse_row(const char *p, size_t len, struct qf_hexdump_row *ret);

/* true when the line looks like a dump row at all (indented, hex, colon), so
 * the caller can tell "malformed row" from "some other line". */
bool qf_hexdump_looks_like_row(const char *p, size_t len);
