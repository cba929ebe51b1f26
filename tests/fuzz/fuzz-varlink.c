/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the Varlink message parser, which every message from
 * the control socket's clients (and every reply gpreemptctl reads) goes
 * through. What it accepts must be a JSON object, and a method name it
 * accepts must make a reply that parses again (error replies echo it).
 * And the input as a string a method passes on (a process's name, a file):
 * made printable, it is text printable_is() takes, and in a reply made
 * UTF-8 as the server sends it, the reply parses again.
 */
#include <json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "printable.h"
#include "varlink-protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_printable(const char *s, size_t len)
{
        struct json_object *reply = json_object_new_object(), *p = json_object_new_object(), *again = NULL;
        char *escaped = malloc(PRINTABLE_SIZE(len));
        const char *text;

        /* no NUL left in it, nothing a terminal acts on, nothing that is not UTF-8 */
        if (!escaped || printable_escape(escaped, s, len) != strlen(escaped) || !printable_is(escaped))
                abort();
        free(escaped);
        json_object_object_add(p, "name", json_object_new_string_len(s, (int)len));
        json_object_object_add(reply, "parameters", p);
        printable_json(reply, false);
        text = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
        if (!text || varlink_parse_message(text, strlen(text), &again) < 0)
                abort();
        json_object_put(again);
        json_object_put(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct json_object *message = NULL, *method, *reply, *again = NULL;
        const char *text;

        check_printable((const char *)data, size);
        if (varlink_parse_message((const char *)data, size, &message) < 0)
                return 0;
        if (!json_object_is_type(message, json_type_object))
                abort();
        /* a reply that echoes the method name, as MethodNotFound does, is a message a strict reader takes */
        if (json_object_object_get_ex(message, "method", &method) && json_object_is_type(method, json_type_string)) {
                reply = json_object_new_object();
                json_object_object_add(reply, "error", json_object_get(method));
                text = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
                if (!text || varlink_parse_message(text, strlen(text), &again) < 0)
                        abort();
                json_object_put(again);
                json_object_put(reply);
        }
        json_object_put(message);
        return 0;
}
