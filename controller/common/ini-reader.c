/* SPDX-License-Identifier: MIT */
#include "ini-reader.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

static char *strip(char *s)
{
        char *end;

        while (isspace((unsigned char)*s))
                s++;
        end = s + strlen(s);
        while (end > s && isspace((unsigned char)end[-1]))
                *--end = '\0';
        return s;
}

static bool key_is_valid(const char *key)
{
        if (!*key)
                return false;
        for (const char *p = key; *p; p++)
                if (!isalnum((unsigned char)*p))
                        return false;
        return true;
}

static void parse_line(char *text, const char *file, unsigned line,
                       const struct ini_handler *handler, void *userdata, struct diag *diag)
{
        char *s = strip(text);
        char *eq;

        if (*s == '\0' || *s == '#' || *s == ';')
                return;

        if (*s == '[') {
                size_t len = strlen(s);

                if (s[len - 1] != ']') {
                        diag_add(diag, file, line, "section header \"%s\" does not end with ']'", s);
                        return;
                }
                s[len - 1] = '\0';
                s = strip(s + 1);
                if (!key_is_valid(s)) {
                        diag_add(diag, file, line,
                                 "section name \"%s\" is not a word of letters and digits", s);
                        return;
                }
                handler->section(userdata, file, line, s);
                return;
        }

        eq = strchr(s, '=');
        if (!eq) {
                diag_add(diag, file, line, "expected \"Key=Value\", \"[Section]\" or a comment, got \"%s\"",
                         s);
                return;
        }
        *eq = '\0';
        s = strip(s);
        if (!key_is_valid(s)) {
                diag_add(diag, file, line, "key \"%s\" is not a word of letters and digits", s);
                return;
        }
        handler->entry(userdata, file, line, s, strip(eq + 1));
}

/*
 * Reads one line into buf without its newline. Returns false at end of file.
 * Sets *ret_too_long / *ret_has_nul instead of failing, so the caller can name
 * the line and go on with the next one.
 */
static bool read_line(FILE *f, char buf[static INI_LINE_MAX + 1], bool *ret_too_long,
                      bool *ret_has_nul)
{
        size_t len = 0;
        bool any = false;
        int c;

        *ret_too_long = false;
        *ret_has_nul = false;
        while ((c = getc(f)) != EOF) {
                any = true;
                if (c == '\n')
                        break;
                if (c == '\0')
                        *ret_has_nul = true;
                if (len < INI_LINE_MAX)
                        buf[len++] = (char)c;
                else
                        *ret_too_long = true;
        }
        buf[len] = '\0';
        return any;
}

int ini_read(FILE *f, const char *file, const struct ini_handler *handler, void *userdata,
             struct diag *diag)
{
        char buf[INI_LINE_MAX + 1];
        bool too_long, has_nul;
        unsigned line = 0;

        static const char byte_order_mark[] = "\xef\xbb\xbf";

        while (read_line(f, buf, &too_long, &has_nul)) {
                /* an editor's UTF-8 byte order mark (Notepad writes one) is no part of the first line */
                bool marked = ++line == 1 && strncmp(buf, byte_order_mark, strlen(byte_order_mark)) == 0;

                if (too_long)
                        diag_add(diag, file, line, "line is longer than %d bytes", INI_LINE_MAX);
                else if (has_nul)
                        diag_add(diag, file, line, "line contains a NUL byte");
                else
                        parse_line(buf + (marked ? strlen(byte_order_mark) : 0), file, line, handler, userdata, diag);
        }
        if (ferror(f))
                return errno > 0 ? -errno : -EIO;
        return 0;
}
