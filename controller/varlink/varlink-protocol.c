/* SPDX-License-Identifier: MIT */
#include "varlink-protocol.h"

#include <errno.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Moves the held bytes to the front of the allocation. */
static void buffer_compact(struct varlink_buffer *b)
{
        if (b->start == 0)
                return;
        memmove(b->data, b->data + b->start, b->size);
        b->start = 0;
}

int varlink_buffer_append(struct varlink_buffer *b, const void *data, size_t len)
{
        size_t want;
        char *grown;

        if (len > b->limit || b->size > b->limit - len)
                return -ENOBUFS;
        if (len == 0)
                return 0;
        if (b->allocated - b->start - b->size < len) {
                buffer_compact(b);
                if (b->allocated - b->size < len) {
                        /* doubling keeps appends in small pieces from copying the whole buffer each time */
                        want = b->allocated < b->limit / 2 ? b->allocated * 2 : b->limit;
                        if (want < b->size + len)
                                want = b->size + len;
                        grown = realloc(b->data, want);
                        if (!grown)
                                return -ENOMEM;
                        b->data = grown;
                        b->allocated = want;
                }
        }
        memcpy(b->data + b->start + b->size, data, len);
        b->size += len;
        return 0;
}

void varlink_buffer_consume(struct varlink_buffer *b, size_t len)
{
        if (len >= b->size) {
                varlink_buffer_done(b);
                return;
        }
        b->start += len;
        b->size -= len;
        /* past the NUL found, nothing is known of the bytes after it */
        b->scanned = b->scanned > len ? b->scanned - len : 0;
        if (b->start > b->size)
                buffer_compact(b);
}

char *varlink_buffer_find_nul(struct varlink_buffer *b)
{
        char *head, *nul;

        if (b->scanned >= b->size)
                return NULL;
        head = varlink_buffer_head(b);
        nul = memchr(head + b->scanned, '\0', b->size - b->scanned);
        b->scanned = nul ? (size_t)(nul - head) : b->size;
        return nul;
}

void varlink_buffer_done(struct varlink_buffer *b)
{
        free(b->data);
        b->data = NULL;
        b->start = 0;
        b->size = 0;
        b->allocated = 0;
        b->scanned = 0;
}

int varlink_buffer_append_json(struct varlink_buffer *b, struct json_object *message)
{
        size_t len;
        const char *text = json_object_to_json_string_length(message, JSON_C_TO_STRING_PLAIN, &len);

        if (!text)
                return -ENOMEM;
        return varlink_buffer_append_message(b, text, len);
}

int varlink_buffer_append_message(struct varlink_buffer *b, const char *text, size_t len)
{
        if (len + 1 > VARLINK_MESSAGE_MAX)
                return -EMSGSIZE;
        return varlink_buffer_append(b, text, len + 1); /* the NUL is the frame end */
}

int varlink_parse_message(const char *text, size_t len, struct json_object **ret)
{
        struct json_tokener *tok;
        struct json_object *obj;
        bool whole;

        /* JSON text is UTF-8 (RFC 8259 §8.1), and json-c's own check lets surrogates and overlong forms
         * through (utf8.h) */
        if (!utf8_is_valid(text, len))
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
