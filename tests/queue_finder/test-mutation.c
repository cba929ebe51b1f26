/* SPDX-License-Identifier: MIT */
/*
 * Deterministic mutation run over the kept fuzz corpus (corpus/, first byte
 * of each file chooses the parser): every file is damaged in the ways real
 * inputs get damaged -- flipped and inserted bytes, NULs, escapes, cut and
 * duplicated pieces, huge runs without a newline -- and fed to the parsers,
 * which must neither crash nor fail. A fixed seed keeps CI reproducible; the
 * libFuzzer harness (fuzz-parsers.c) explores beyond it.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz-target.h"

#define MUTATIONS_PER_FILE 25
#define MUTANT_MAX (256 * 1024)

static const char *corpus_dir;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
        /* xorshift64: fixed sequence, no libc state */
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static size_t pick(size_t n)
{
        return n ? (size_t) (rng() % n) : 0;
}

static const char *const interesting[] = {
        "\n", "\0", "\033[0m", ":", " ", "0x", "ffffffff", "    00000000: ", "Process ", "PASID ",
        "  Compute queue on device ", "Node 1, gpu_id ", " Inst 0,  CP Pipe 0, Queue 2", "SWq=0x", "HWq=0x",
        "Created SWq=", " us: ", "[pid:", " tid: 0x", "] ", "18446744073709551616", "99999999999999999999",
};

/* One damage applied to buf[0..*len), capacity MUTANT_MAX. */
static void mutate(uint8_t *buf, size_t *len)
{
        size_t n = *len;
        switch (pick(7)) {
        case 0: /* flip a byte */
                if (n > 1)
                        buf[1 + pick(n - 1)] ^= (uint8_t) (1u << pick(8));
                break;
        case 1: { /* insert an interesting token */
                const char *t = interesting[pick(sizeof(interesting) / sizeof(*interesting))];
                size_t tl = strlen(t) ? strlen(t) : 1;
                if (n + tl <= MUTANT_MAX && n > 0) {
                        size_t at = 1 + pick(n);
                        memmove(buf + at + tl, buf + at, n - at);
                        memcpy(buf + at, t, tl);
                        *len = n + tl;
                }
                break;
        }
        case 2: /* delete a range */
                if (n > 2) {
                        size_t at = 1 + pick(n - 1), cut = 1 + pick(n - at);
                        memmove(buf + at, buf + at + cut, n - at - cut);
                        *len = n - cut;
                }
                break;
        case 3: /* truncate */
                if (n > 1)
                        *len = 1 + pick(n - 1);
                break;
        case 4: { /* duplicate a range */
                if (n > 2) {
                        size_t at = 1 + pick(n - 1), dl = 1 + pick(n - at);
                        if (n + dl <= MUTANT_MAX) {
                                memmove(buf + at + dl, buf + at, n - at);
                                *len = n + dl;
                        }
                }
                break;
        }
        case 5: { /* a long run without a newline */
                size_t run = 70000;
                if (n + run <= MUTANT_MAX && n > 0) {
                        size_t at = 1 + pick(n);
                        memmove(buf + at + run, buf + at, n - at);
                        memset(buf + at, 'A' + (int) pick(26), run);
                        *len = n + run;
                }
                break;
        }
        default: /* replace a byte with a random one */
                if (n > 1)
                        buf[1 + pick(n - 1)] = (uint8_t) rng();
                break;
        }
}

static void run_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        uint8_t *orig = malloc(MUTANT_MAX), *buf = malloc(MUTANT_MAX);
        assert_non_null(orig);
        assert_non_null(buf);
        size_t olen = fread(orig, 1, MUTANT_MAX, f);
        fclose(f);
        assert_true(olen > 0);

        fuzz_one(orig, olen);
        for (int i = 0; i < MUTATIONS_PER_FILE; i++) {
                memcpy(buf, orig, olen);
                size_t len = olen;
                for (size_t k = 1 + pick(4); k > 0; k--)
                        mutate(buf, &len);
                fuzz_one(buf, len);
        }
        free(orig);
        free(buf);
}

static void test_corpus(void **state)
{
        DIR *d = opendir(corpus_dir);
        assert_non_null(d);
        unsigned files = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", corpus_dir, de->d_name);
                run_file(path);
                files++;
        }
        closedir(d);
        assert_true(files >= 6);
}

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: %s CORPUS-DIRECTORY\n", argv[0]);
                return 2;
        }
        corpus_dir = argv[1];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_corpus),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
