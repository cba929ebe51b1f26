/* SPDX-License-Identifier: MIT */
/*
 * Text that comes from outside (a process's command line, the name of a
 * tracer, a configuration file, the command line itself, the daemon's
 * replies) made safe to print and to send. On a terminal a control
 * character is a command (ESC [2J clears the screen, ESC ] sets the window
 * title), so another user's process name must not reach it raw, nor a log
 * line that is read on one; and JSON must be UTF-8 (RFC 8259 §8.1), which
 * a command line or a file need not be. gpreemptctl prints through it,
 * gpreemptd logs through it, and the Varlink server sends every reply
 * through printable_json().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* The most printable_escape() writes for len bytes, its NUL included: each byte may become four. */
#define PRINTABLE_SIZE(len) ((len) * 4 + 1)

/*
 * Writes the len bytes at s to out (PRINTABLE_SIZE(len) bytes), each control
 * character (C0, DEL and the C1 range U+0080-U+009F, NUL included) and each
 * byte that is not part of well-formed UTF-8 written as \xNN, byte by byte.
 * Returns the length written, without the NUL that ends it.
 */
size_t printable_escape(char *out, const char *s, size_t len);
/* printable_escape() of the string s, malloc'd; NULL when out of memory. */
char *printable_dup(const char *s);
/* Whether printable_dup(s) would be s unchanged. */
bool printable_is(const char *s);
/*
 * Every string in the tree o (values, not keys) that is not UTF-8 replaced
 * by its printable_escape(): what JSON output needs (json-c escapes control
 * characters itself). With text, every string that is not printable_is():
 * for a tree whose strings will be printed as text.
 */
void printable_json(struct json_object *o, bool text);
