/* SPDX-License-Identifier: MIT */
/*
 * The Varlink wire protocol (varlink.org): each message is one JSON object
 * followed by a NUL byte. Calls are {"method": "iface.Method",
 * "parameters": {...}, "oneway": bool, "more": bool}; replies are
 * {"parameters": {...}} or {"error": "iface.ErrorName", "parameters": {...}}.
 * Shared by the server (gpreemptd) and the client (gpreemptctl).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* One message, NUL included. Replies carrying a full status fit easily. */
#define VARLINK_MESSAGE_MAX (256u * 1024u)
/* JSON nesting a message may have: our interface needs 4. */
#define VARLINK_JSON_DEPTH_MAX 16

#define VARLINK_SERVICE_INTERFACE "org.varlink.service"
#define VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VARLINK_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define VARLINK_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"

/*
 * A growable byte buffer that refuses to hold more than its limit. Its bytes
 * are the size bytes at varlink_buffer_head(); consumed ones before them are
 * moved away only once they outnumber the rest, so taking pipelined messages
 * off the front one at a time costs each byte a bounded number of moves.
 */
struct varlink_buffer {
        char *data;       /* the allocation */
        size_t start;     /* consumed bytes at its front */
        size_t size;      /* bytes held, from start */
        size_t allocated;
        size_t limit;     /* bytes it may hold */
        size_t scanned;   /* the first bytes held known to have no NUL */
};

static inline char *varlink_buffer_head(const struct varlink_buffer *b)
{
        return b->data + b->start;
}

/* Appends; returns 0 or -ENOBUFS past the limit, -ENOMEM. */
int varlink_buffer_append(struct varlink_buffer *b, const void *data, size_t len);
/* Drops the first len bytes. */
void varlink_buffer_consume(struct varlink_buffer *b, size_t len);
/*
 * The first NUL held, the end of the first whole message, or NULL: bytes
 * looked at by an earlier call are not looked at again.
 */
char *varlink_buffer_find_nul(struct varlink_buffer *b);
void varlink_buffer_done(struct varlink_buffer *b);

/* Appends the len bytes of one message's text and the NUL that ends it; -EMSGSIZE past VARLINK_MESSAGE_MAX. */
int varlink_buffer_append_message(struct varlink_buffer *b, const char *text, size_t len);
/* Serialises a message and appends it, with its NUL, to b. */
int varlink_buffer_append_json(struct varlink_buffer *b, struct json_object *message);

/*
 * Parses one NUL-free message text into a JSON object (depth-limited, the
 * whole text must be one value). Returns 0 or -EBADMSG.
 */
int varlink_parse_message(const char *text, size_t len, struct json_object **ret);
