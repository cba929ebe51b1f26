/* SPDX-License-Identifier: MIT */
/*
 * A line-accurate reader for systemd-style INI files.
 *
 * Why not inih: Debian 12's libinih 55 is built without INI_HANDLER_LINENO,
 * so a handler cannot tell which line a semantic error (unknown key, bad
 * value) is on; its fixed 200-byte stack line buffer silently splits longer
 * lines into two entries; and its inline ';' comments would cut command-line
 * globs. Every configuration error here must name its file and line, so the
 * format is read by this small reader instead.
 *
 * Syntax (systemd's, minus line continuation): blank lines and lines starting
 * with '#' or ';' are comments; "[Name]" starts a section; "Key=Value" with
 * whitespace around both trimmed. Lines are limited to INI_LINE_MAX bytes.
 */
#pragma once

#include <stdio.h>

#include "diag.h"

#define INI_LINE_MAX 4096

struct ini_handler {
        void (*section)(void *userdata, const char *file, unsigned line, const char *name);
        void (*entry)(void *userdata, const char *file, unsigned line, const char *key,
                      const char *value);
};

/*
 * Reads f to its end, calling the handler for every section header and entry
 * and recording syntax errors in diag. Returns 0, or -errno if reading failed.
 */
int ini_read(FILE *f, const char *file, const struct ini_handler *handler, void *userdata,
             struct diag *diag);
