/* SPDX-License-Identifier: MIT */
/*
 * Which lines of a HIP/CLR log the parser has to read, found the way grep
 * finds matches: 64 bytes at a time, without splitting the lines.
 *
 * Every message amdlog.c takes facts from holds one of four byte pairs:
 *   "Wq"  SWq= / HWq= (packet lines, "Created SWq=")
 *   "rN"  ShaderName
 *   "fC"  refCount (acquireQueue / [Ss]elected queue ... refCount)
 *   "dw"  created hardware queue
 * and the one warning about a line's content, binary data, needs a NUL
 * byte. A window yields a bit per byte for newlines and one for those
 * marks; the parser reads in full only the lines with a mark (few of a
 * real log's lines, none of them in its API trace:
 * docs/benchmarks/queue-finder.md) and counts the others. test-log-window.c
 * checks that every message amdlog.c parses is marked, and the vector code
 * against the byte loop.
 *
 * The pairs are compared as 16-bit lanes, at even offsets in the bytes and
 * at odd ones in the bytes one further on, so a pair at i marks bits i and
 * i + 1 (both in its line, which is all the parser needs) and costs one
 * compare per pair and lane width instead of two and an AND.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
/* QF_LOG_WINDOW_BASELINE_ONLY builds the parser without the AVX2 path, so
 * that the tests run the whole parser on the baseline one as well. */
#if defined(__x86_64__) && !defined(QF_LOG_WINDOW_BASELINE_ONLY)
#define QF_LOG_WINDOW_AVX2 1
#include <immintrin.h>
#endif

#define QF_LOG_WINDOW 64

struct qf_log_window {
        uint64_t newlines;  /* bit i: p[i] == '\n' */
        uint64_t marks;     /* bits i and i + 1: a pair starts at p[i]; bit i: p[i] == 0 */
};

static inline bool qf_log_pair_at(char a, char b)
{
        return (a == 'W' && b == 'q') || (a == 'r' && b == 'N') || (a == 'f' && b == 'C') || (a == 'd' && b == 'w');
}

/* The pairs as little-endian 16-bit lanes. */
#define QF_LOG_PAIR(a, b) ((short) ((unsigned char) (a) | (unsigned char) (b) << 8))

/* The reference, and what non-x86 builds use: one byte at a time. Reads
 * p[0] .. p[QF_LOG_WINDOW]. */
static inline struct qf_log_window qf_log_window_bytes(const char *p)
{
        struct qf_log_window w = { 0 };
        for (unsigned i = 0; i < QF_LOG_WINDOW; i++) {
                w.newlines |= (uint64_t) (p[i] == '\n') << i;
                w.marks |= (uint64_t) (p[i] == 0) << i;
                if (qf_log_pair_at(p[i], p[i + 1]))
                        w.marks |= UINT64_C(3) << i; /* bit 64 falls off, as in the vector code */
        }
        return w;
}

#if defined(__SSE2__)
static inline __m128i qf_log_pairs_sse2(__m128i v)
{
        return _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi16(v, _mm_set1_epi16(QF_LOG_PAIR('W', 'q'))),
                                         _mm_cmpeq_epi16(v, _mm_set1_epi16(QF_LOG_PAIR('r', 'N')))),
                            _mm_or_si128(_mm_cmpeq_epi16(v, _mm_set1_epi16(QF_LOG_PAIR('f', 'C'))),
                                         _mm_cmpeq_epi16(v, _mm_set1_epi16(QF_LOG_PAIR('d', 'w')))));
}

/* Every x86-64 CPU has SSE2. */
static inline struct qf_log_window qf_log_window_sse2(const char *p)
{
        struct qf_log_window w = { 0 };
        for (unsigned i = 0; i < QF_LOG_WINDOW; i += 16) {
                __m128i here = _mm_loadu_si128((const __m128i *) (const void *) (p + i));
                __m128i next = _mm_loadu_si128((const __m128i *) (const void *) (p + i + 1));
                __m128i even = _mm_or_si128(qf_log_pairs_sse2(here), _mm_cmpeq_epi8(here, _mm_setzero_si128()));
                w.newlines |= (uint64_t) (uint16_t) _mm_movemask_epi8(_mm_cmpeq_epi8(here, _mm_set1_epi8('\n')))
                              << i;
                w.marks |= (uint64_t) (uint16_t) _mm_movemask_epi8(even) << i;
                w.marks |= (uint64_t) (uint16_t) _mm_movemask_epi8(qf_log_pairs_sse2(next)) << (i + 1);
        }
        return w;
}
#define QF_LOG_WINDOW_BASELINE qf_log_window_sse2
#else
#define QF_LOG_WINDOW_BASELINE qf_log_window_bytes
#endif

#if defined(QF_LOG_WINDOW_AVX2)
/* AVX2 (x86-64 servers since 2013-2017) does a window in half the
 * instructions; the caller checks the CPU has it. */
__attribute__((target("avx2"))) static inline __m256i qf_log_pairs_avx2(__m256i v)
{
        return _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi16(v, _mm256_set1_epi16(QF_LOG_PAIR('W', 'q'))),
                                               _mm256_cmpeq_epi16(v, _mm256_set1_epi16(QF_LOG_PAIR('r', 'N')))),
                               _mm256_or_si256(_mm256_cmpeq_epi16(v, _mm256_set1_epi16(QF_LOG_PAIR('f', 'C'))),
                                               _mm256_cmpeq_epi16(v, _mm256_set1_epi16(QF_LOG_PAIR('d', 'w')))));
}

/* Marks and newlines of the 32 bytes at p, in their low bits. */
__attribute__((target("avx2"))) static inline struct qf_log_window qf_log_half_window_avx2(const char *p)
{
        __m256i here = _mm256_loadu_si256((const __m256i *) (const void *) p);
        __m256i next = _mm256_loadu_si256((const __m256i *) (const void *) (p + 1));
        __m256i even = _mm256_or_si256(qf_log_pairs_avx2(here), _mm256_cmpeq_epi8(here, _mm256_setzero_si256()));
        uint64_t odd = (uint32_t) _mm256_movemask_epi8(qf_log_pairs_avx2(next));
        return (struct qf_log_window){
                .newlines = (uint32_t) _mm256_movemask_epi8(_mm256_cmpeq_epi8(here, _mm256_set1_epi8('\n'))),
                .marks = (uint32_t) _mm256_movemask_epi8(even) | odd << 1,
        };
}

__attribute__((target("avx2"))) static inline struct qf_log_window qf_log_window_avx2(const char *p)
{
        struct qf_log_window low = qf_log_half_window_avx2(p), high = qf_log_half_window_avx2(p + 32);
        return (struct qf_log_window){
                .newlines = low.newlines | high.newlines << 32,
                .marks = low.marks | high.marks << 32,
        };
}

static inline bool qf_log_window_have_avx2(void)
{
        return __builtin_cpu_supports("avx2");
}
#endif
