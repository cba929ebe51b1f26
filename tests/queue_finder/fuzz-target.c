/* SPDX-License-Identifier: MIT */
#include "fuzz-target.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sources.h"

/* Neither cmocka nor libFuzzer is assumed here: a broken promise aborts,
 * which both report with the input that caused it. */
static void check(bool ok)
{
        if (!ok)
                abort();
}

void fuzz_parser(enum fuzz_parser parser, const pid_t *unmarked_pid, const uint8_t *data, size_t size)
{
        int fd = memfd_create("fuzz", MFD_CLOEXEC);
        check(fd >= 0);
        for (size_t done = 0; done < size;) {
                ssize_t n = write(fd, data + done, size - done);
                check(n > 0);
                done += (size_t) n;
        }
        check(lseek(fd, 0, SEEK_SET) == 0);

        struct qf_diags d = { 0 };
        switch (parser) {
        case FUZZ_MQDS: {
                struct qf_mqds m;
                check(qf_mqds_parse(fd, "fuzz", &d, &m) == 0);
                for (size_t i = 0; i < m.n; i++)
                        check(m.queues[i].n_xcc <= QF_MAX_XCC);
                qf_mqds_clear(&m);
                break;
        }
        case FUZZ_HQDS: {
                struct qf_hqds h;
                check(qf_hqds_parse(fd, "fuzz", &d, &h) == 0);
                qf_hqds_clear(&h);
                break;
        }
        case FUZZ_LOG:
        default: {
                struct qf_log l;
                check(qf_log_parse(fd, "fuzz", unmarked_pid, &d, &l) == 0);
                check(l.n <= QF_MAX_LOG_QUEUES);
                qf_log_clear(&l);
                break;
        }
        }
        check(d.n <= QF_DIAG_MAX);
        for (size_t i = 0; i < d.n; i++)
                check(d.items[i].file && d.items[i].message);
        qf_diags_clear(&d);
        close(fd);
}

void fuzz_one(const uint8_t *data, size_t size)
{
        if (size == 0)
                return;
        /* The bits above the parser's choose whether log lines that name no
         * process get one, so that the kept seeds (parser bytes '0'-'2',
         * which have them clear) mean what they did. */
        static const pid_t log_pid = 4242;
        bool with_log_pid = (data[0] / FUZZ_PARSERS) & 1;
        fuzz_parser((enum fuzz_parser) (data[0] % FUZZ_PARSERS), with_log_pid ? &log_pid : NULL, data + 1, size - 1);
}
