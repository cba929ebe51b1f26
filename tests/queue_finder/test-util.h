/* SPDX-License-Identifier: MIT */
/* Helpers shared by the queue_finder tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "qf-diag.h"

/* An fd reading exactly these bytes (a memfd), for the parsers. */
int test_fd_from_bytes(const void *data, size_t len);
int test_fd_from_string(const char *s);

/* Opens a file of tests/data/real/ (GPREEMPT_REAL_DATA); fails the test
 * when it is missing. */
int test_open_shared(const char *name);
/* Its bytes, NUL-terminated, to free(). */
char *test_read_shared(const char *name);
/* The same file's bytes with every "\n" made "\r\n" (as copied through
 * Windows), in a memfd. */
int test_open_shared_crlf(const char *name);
/* Its full path, valid until the next call. */
const char *test_shared_path(const char *name);

/* A fresh directory under $TMPDIR (or /tmp) named after prefix, and its
 * recursive removal. */
void test_tmpdir_create(const char *prefix, char *buf, size_t size);
int test_tmpdir_remove(const char *dir);

/* true when some warning is about this line and contains the text. */
bool test_has_warning(const struct qf_diags *d, unsigned long line, const char *text);
