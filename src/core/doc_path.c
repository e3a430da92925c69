/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and writing JSON objects by dotted path (xpool/doc.h), for controllers. */
#include <errno.h>
#include <string.h>

#include "xpool/doc.h"

/* The member names of a path are short; a longer step is simply not found. */
#define STEP_MAX 256

/* Copies the step of path starting at *p into step and moves *p past it; false at the end. */
static bool next_step(const char **p, char step[static STEP_MAX])
{
        const char *dot;
        size_t len;

        if (!**p)
                return false;
        dot = strchr(*p, '.');
        len = dot ? (size_t)(dot - *p) : strlen(*p);
        if (len >= STEP_MAX)
                len = STEP_MAX - 1;
        memcpy(step, *p, len);
        step[len] = '\0';
        *p += dot ? (size_t)(dot - *p) + 1 : strlen(*p);
        return true;
}

const json_t *xp_json_at(const json_t *object, const char *path)
{
        char step[STEP_MAX];
        const char *p = path;

        while (object && next_step(&p, step))
                object = json_is_object(object) ? json_object_get(object, step) : NULL;
        return object;
}

int64_t xp_json_int_at(const json_t *object, const char *path, int64_t def)
{
        const json_t *v = xp_json_at(object, path);

        return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

const char *xp_json_str_at(const json_t *object, const char *path, const char *def)
{
        const json_t *v = xp_json_at(object, path);

        return json_is_string(v) ? json_string_value(v) : def;
}

bool xp_json_bool_at(const json_t *object, const char *path, bool def)
{
        const json_t *v = xp_json_at(object, path);

        return json_is_boolean(v) ? json_is_true(v) : def;
}

bool xp_json_has_string(const json_t *list, const char *s)
{
        const json_t *v;
        size_t i;

        json_array_foreach(list, i, v)
        {
                if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
                        return true;
        }
        return false;
}

const json_t *xp_json_object_at(const json_t *object, const char *path)
{
        const json_t *v = xp_json_at(object, path);

        return json_is_object(v) ? v : NULL;
}

int xp_json_set_at(json_t *object, const char *path, json_t *value)
{
        char step[STEP_MAX];
        const char *p = path;

        if (!json_is_object(object) || !next_step(&p, step)) {
                json_decref(value);
                return -EINVAL;
        }
        while (*p) {
                json_t *next = json_object_get(object, step);

                if (!next) {
                        next = json_object();
                        if (!next || json_object_set_new(object, step, next) < 0) {
                                json_decref(value);
                                return -ENOMEM;
                        }
                } else if (!json_is_object(next)) {
                        json_decref(value);
                        return -EINVAL;
                }
                object = next;
                next_step(&p, step);
        }
        if (!value)
                return json_object_del(object, step), 0;
        return json_object_set_new(object, step, value) < 0 ? -ENOMEM : 0;
}

int xp_json_set_int_at(json_t *object, const char *path, int64_t value)
{
        json_t *v = json_integer(value);

        return v ? xp_json_set_at(object, path, v) : -ENOMEM;
}

int xp_json_set_str_at(json_t *object, const char *path, const char *value)
{
        json_t *v = json_string(value);

        return v ? xp_json_set_at(object, path, v) : -ENOMEM;
}
