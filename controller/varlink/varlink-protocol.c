/* SPDX-License-Identifier: MIT */
#include "varlink-protocol.h"

#include <errno.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

int varlink_buffer_append(struct varlink_buffer *b, const void *data, size_t len)
{
        char *grown;

        if (len > b->limit || b->size > b->limit - len)
                return -ENOBUFS;
        grown = realloc(b->data, b->size + len);
        if (!grown)
                return -ENOMEM;
        memcpy(grown + b->size, data, len);
        b->data = grown;
        b->size += len;
        return 0;
}

void varlink_buffer_consume(struct varlink_buffer *b, size_t len)
{
        if (len >= b->size) {
                free(b->data);
                b->data = NULL;
                b->size = 0;
                return;
        }
        memmove(b->data, b->data + len, b->size - len);
        b->size -= len;
}

void varlink_buffer_done(struct varlink_buffer *b)
{
        free(b->data);
        b->data = NULL;
        b->size = 0;
}

int varlink_buffer_append_json(struct varlink_buffer *b, struct json_object *message)
{
        size_t len;
        const char *text = json_object_to_json_string_length(message, JSON_C_TO_STRING_PLAIN, &len);
        int r;

        if (!text)
                return -ENOMEM;
        if (len + 1 > VARLINK_MESSAGE_MAX)
                return -EMSGSIZE;
        r = varlink_buffer_append(b, text, len + 1); /* the NUL is the frame end */
        return r;
}

/*
 * Whether text is UTF-8 as RFC 3629 defines it: no overlong forms, no
 * surrogates, nothing above U+10FFFF. JSON text must be UTF-8 (RFC 8259
 * §8.1), and a string the server echoes in an error (a method name) would
 * otherwise make its reply invalid JSON for a strict reader. json-c's own
 * check (JSON_TOKENER_VALIDATE_UTF8) lets surrogates and overlong forms
 * through.
 */
static bool is_utf8(const unsigned char *s, size_t len)
{
        size_t i = 0;

        while (i < len) {
                unsigned char c = s[i];
                size_t n;
                uint32_t cp, min;

                if (c < 0x80) {
                        i++;
                        continue;
                }
                if ((c & 0xe0) == 0xc0)
                        n = 1, cp = c & 0x1f, min = 0x80;
                else if ((c & 0xf0) == 0xe0)
                        n = 2, cp = c & 0x0f, min = 0x800;
                else if ((c & 0xf8) == 0xf0)
                        n = 3, cp = c & 0x07, min = 0x10000;
                else
                        return false;
                if (len - i <= n)
                        return false;
                for (size_t k = 1; k <= n; k++) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (s[i + k] & 0x3f);
                }
                if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                i += n + 1;
        }
        return true;
}

int varlink_parse_message(const char *text, size_t len, struct json_object **ret)
{
        struct json_tokener *tok;
        struct json_object *obj;
        bool whole;

        if (!is_utf8((const unsigned char *)text, len))
                return -EBADMSG;
        tok = json_tokener_new_ex(VARLINK_JSON_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        /* strict: no comments, no single quotes, no trailing garbage accepted as "close enough" */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        obj = json_tokener_parse_ex(tok, text, (int)len);
        whole = json_tokener_get_error(tok) == json_tokener_success &&
                json_tokener_get_parse_end(tok) == len;
        json_tokener_free(tok);
        if (!obj || !whole || !json_object_is_type(obj, json_type_object)) {
                json_object_put(obj);
                return -EBADMSG;
        }
        *ret = obj;
        return 0;
}
