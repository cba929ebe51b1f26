/* SPDX-License-Identifier: MIT */
/* Members of the daemon's replies, read with a fallback: a reply from an older daemon lacks some. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct json_object;

/* 0, false, fallback or NULL when o is NULL, lacks key, or has it of another type. */
int64_t json_get_int(struct json_object *o, const char *key);
bool json_get_bool(struct json_object *o, const char *key);
double json_get_double(struct json_object *o, const char *key);
const char *json_get_string(struct json_object *o, const char *key, const char *fallback);
struct json_object *json_get_array(struct json_object *o, const char *key);
