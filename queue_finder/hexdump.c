/* SPDX-License-Identifier: MIT */
#include "hexdump.h"

#include "scan.h"

bool qf_hexdump_looks_like_row(const char *p, size_t len)
{
        struct qf_scan s = qf_scan_init(p, len);
        uint64_t address;
        if (!QF_SCAN_LIT(&s, " "))
                return false;
        qf_scan_spaces(&s);
        return qf_scan_hex(&s, 16, &address) && QF_SCAN_LIT(&s, ":");
}

bool qf_hexdump_parse_row(const char *p, size_t len, struct qf_hexdump_row *ret)
{
        struct qf_scan s = qf_scan_init(p, len);
        struct qf_hexdump_row row = { 0 };
        uint64_t v;

        qf_scan_spaces(&s);
        if (!qf_scan_hex(&s, 8, &v) || !QF_SCAN_LIT(&s, ":"))
                return false;
        row.address = (uint32_t) v;

        while (!qf_scan_at_end(&s)) {
                if (!QF_SCAN_LIT(&s, " "))
                        return false;
                /* seq_file rows may end in a space before the newline. */
                if (qf_scan_at_end(&s))
                        break;
                /* both print each value as %08x: fewer digits are a row cut short */
                const char *value = s.p;
                if (row.n_values == QF_HEXDUMP_MAX_VALUES || !qf_scan_hex(&s, 8, &v) || s.p - value != 8)
                        return false;
                row.values[row.n_values++] = (uint32_t) v;
        }
        if (row.n_values == 0)
                return false;
        *ret = row;
        return true;
}
