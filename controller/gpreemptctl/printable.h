/* SPDX-License-Identifier: MIT */
/*
 * Text that comes from outside gpreemptctl (a process's command line, the
 * name of a tracer, the daemon's replies, the configuration, the command
 * line itself) made safe to print. On a terminal a control character is a
 * command (ESC [2J clears the screen, ESC ] sets the window title), so
 * another user's process name must not reach it raw; and JSON must be
 * UTF-8 (RFC 8259 §8.1), which a command line or a file need not be.
 */
#pragma once

#include <stdbool.h>

struct json_object;

/*
 * A copy of s (malloc'd; NULL when out of memory) in which each control
 * character (C0, DEL and the C1 range U+0080-U+009F) and each byte that is
 * not part of well-formed UTF-8 is written as \xNN, byte by byte.
 */
char *printable_dup(const char *s);
/* Whether printable_dup(s) would be s unchanged. */
bool printable_is(const char *s);
/* Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
bool printable_is_utf8(const char *s);
/*
 * Every string in the tree o (values, not keys) that is not UTF-8 replaced
 * by its printable_dup(): what JSON output needs (json-c escapes control
 * characters itself). With text, every string that is not printable_is():
 * for a tree whose strings will be printed as text.
 */
void printable_json(struct json_object *o, bool text);
