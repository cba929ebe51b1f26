/* SPDX-License-Identifier: MIT */
#include "json-get.h"

#include <json.h>

int64_t json_get_int(struct json_object *o, const char *key)
{
        struct json_object *v;

        return o && json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

bool json_get_bool(struct json_object *o, const char *key)
{
        struct json_object *v;

        return o && json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

double json_get_double(struct json_object *o, const char *key)
{
        struct json_object *v;

        return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

const char *json_get_string(struct json_object *o, const char *key, const char *fallback)
{
        struct json_object *v;

        if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
                return json_object_get_string(v);
        return fallback;
}

struct json_object *json_get_array(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array))
                return v;
        return NULL;
}
