/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing
 * above U+10FFFF. JSON text must be UTF-8 (RFC 8259 §8.1), and text from
 * outside (a command line, a process's name, a file) need not be; json-c's
 * own check (JSON_TOKENER_VALIDATE_UTF8) lets surrogates and overlong
 * forms through. The one decoder the Varlink parser and printable.c share.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The length (1 to 4) of the well-formed sequence that starts the len bytes
 * at s (len > 0), with its code point in *ret_cp; 0 when s does not start
 * one (a stray byte, a cut or overlong sequence, a surrogate, a code point
 * above U+10FFFF).
 */
size_t utf8_sequence(const char *s, size_t len, uint32_t *ret_cp);
/* Whether the len bytes at s are well-formed UTF-8 (a NUL byte is: U+0000). */
bool utf8_is_valid(const char *s, size_t len);
