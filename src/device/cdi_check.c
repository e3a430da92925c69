/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A CDI spec checker written from the Container Device Interface specification (SPEC.md of the
 * container-device-interface project, versions 0.3.0 to 1.0.0): what a runtime's CDI registry
 * refuses, refused here with the JSON pointer of the fault, so a spec xpool writes is one every
 * runtime loads. Members are checked by tables: one row per member with its type and check.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xpool/cdi.h"
#include "xpool/macro.h"

struct ctx {
        struct xp_error *err;
        char path[512]; /* the JSON pointer being checked */
};

static int fail(struct ctx *c, const char *fmt, ...) _printf_(2, 3);
static int fail(struct ctx *c, const char *fmt, ...)
{
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return xp_errorf(c->err, -EINVAL, "%s: %s", c->path[0] ? c->path : "/", msg);
}

static size_t push(struct ctx *c, const char *token)
{
        size_t len = strlen(c->path);

        snprintf(c->path + len, sizeof(c->path) - len, "/%s", token);
        return len;
}

static size_t push_index(struct ctx *c, size_t i)
{
        char buf[32];

        snprintf(buf, sizeof(buf), "%zu", i);
        return push(c, buf);
}

static void pop(struct ctx *c, size_t len)
{
        c->path[len] = '\0';
}

static bool alnum(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static bool letter(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* vendor: letter first, alnum last, '_', '-', '.' inside; class: the same without '.';
 * device: alnum at both ends, '_', '-', '.', ':' inside. */
static bool valid_part(const char *s, size_t n, bool first_letter, const char *inner)
{
        if (n == 0 || !(first_letter ? letter(s[0]) : alnum(s[0])) || !alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!alnum(s[i]) && !strchr(inner, s[i]))
                        return false;
        return true;
}

/* ---- member tables -------------------------------------------------------------------------- */

enum type {
        T_STRING,
        T_INT,
        T_UINT32,
        T_STRINGS, /* an array of strings */
        T_OBJECTS, /* an array of objects with members */
        T_EDITS,   /* an object with members */
        T_MAP,     /* an object of strings (annotations) */
        T_ANY,     /* an object the checker does not look into (intelRdt) */
};

struct member;
typedef int (*check_fn)(struct ctx *c, const json_t *value);

struct member {
        const char *name;
        enum type type;
        bool required;
        check_fn check;               /* strings: the value's own check */
        const struct member *members; /* objects: each element's members */
};

static int check_object(struct ctx *c, const json_t *o, const struct member *members);

static int check_value(struct ctx *c, const struct member *m, const json_t *v)
{
        size_t i, len;
        json_t *e;
        int r;

        switch (m->type) {
        case T_STRING:
                if (!json_is_string(v))
                        return fail(c, "must be a string");
                break;
        case T_INT:
        case T_UINT32:
                if (!json_is_integer(v))
                        return fail(c, "must be an integer");
                if (m->type == T_UINT32 &&
                    (json_integer_value(v) < 0 || json_integer_value(v) > 4294967295LL))
                        return fail(c, "must be between 0 and 4294967295");
                break;
        case T_STRINGS:
                if (!json_is_array(v))
                        return fail(c, "must be an array of strings");
                json_array_foreach(v, i, e)
                {
                        len = push_index(c, i);
                        if (!json_is_string(e))
                                return fail(c, "must be a string");
                        if (m->check && (r = m->check(c, e)) < 0)
                                return r;
                        pop(c, len);
                }
                return 0;
        case T_OBJECTS:
                if (!json_is_array(v))
                        return fail(c, "must be an array of objects");
                json_array_foreach(v, i, e)
                {
                        len = push_index(c, i);
                        r = check_object(c, e, m->members);
                        if (r < 0)
                                return r;
                        pop(c, len);
                }
                return 0;
        case T_EDITS:
                return check_object(c, v, m->members);
        case T_MAP:
        case T_ANY: {
                const char *key;

                if (!json_is_object(v))
                        return fail(c, "must be an object");
                json_object_foreach((json_t *)v, key, e)
                {
                        len = push(c, key);
                        if (m->type == T_MAP && !json_is_string(e))
                                return fail(c, "must be a string");
                        pop(c, len);
                }
                return 0;
        }
        }
        return m->check ? m->check(c, v) : 0;
}

static int check_object(struct ctx *c, const json_t *o, const struct member *members)
{
        const char *key;
        json_t *v;
        int r;

        if (!json_is_object(o))
                return fail(c, "must be an object");
        json_object_foreach((json_t *)o, key, v)
        {
                const struct member *m = members;
                size_t len;

                while (m->name && strcmp(m->name, key) != 0)
                        m++;
                len = push(c, key);
                if (!m->name)
                        return fail(c, "unknown member");
                r = check_value(c, m, v);
                if (r < 0)
                        return r;
                pop(c, len);
        }
        for (const struct member *m = members; m->name; m++)
                if (m->required && !json_object_get(o, m->name))
                        return fail(c, "%s is required", m->name);
        return 0;
}

/* ---- value checks --------------------------------------------------------------------------- */

static int check_version(struct ctx *c, const json_t *v)
{
        static const char *const versions[] = {
            "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0"};
        const char *s = json_string_value(v);

        for (size_t i = 0; i < XP_ELEMENTSOF(versions); i++)
                if (strcmp(s, versions[i]) == 0)
                        return 0;
        return fail(c, "'%s' is not a CDI version this checker knows (0.3.0 to 1.0.0)", s);
}

static int check_kind(struct ctx *c, const json_t *v)
{
        const char *s = json_string_value(v), *slash = strchr(s, '/');

        if (!slash || !valid_part(s, (size_t)(slash - s), true, "_-.") ||
            !valid_part(slash + 1, strlen(slash + 1), true, "_-"))
                return fail(
                    c,
                    "'%s' is not a kind vendor/class (a vendor such as example.com, a class such as gpu)",
                    s);
        return 0;
}

static int check_device_name(struct ctx *c, const json_t *v)
{
        const char *s = json_string_value(v);

        if (!valid_part(s, strlen(s), false, "_-.:"))
                return fail(
                    c,
                    "'%s' is not a device name (letters, digits, '_', '-', '.', ':', a letter or digit at both ends)",
                    s);
        return 0;
}

static int check_env(struct ctx *c, const json_t *v)
{
        const char *s = json_string_value(v), *eq = strchr(s, '=');

        if (!eq || eq == s)
                return fail(c, "'%s' is not NAME=value", s);
        return 0;
}

static int check_absolute(struct ctx *c, const json_t *v)
{
        const char *s = json_string_value(v);

        if (s[0] != '/')
                return fail(c, "'%s' is not an absolute path", s);
        return 0;
}

static int check_device_type(struct ctx *c, const json_t *v)
{
        const char *s = json_string_value(v);

        if (strlen(s) > 1 || (s[0] && !strchr("bcup", s[0])))
                return fail(c, "'%s' is not a device type (b, c, u or p)", s);
        return 0;
}

static int check_permissions(struct ctx *c, const json_t *v)
{
        const char *s = json_string_value(v);

        if (strspn(s, "rwm") != strlen(s))
                return fail(c, "'%s' is not cgroup device access (some of r, w, m)", s);
        return 0;
}

static int check_non_empty(struct ctx *c, const json_t *v)
{
        if (!*json_string_value(v))
                return fail(c, "must not be empty");
        return 0;
}

static const struct member device_node_members[] = {
    {"path", T_STRING, true, check_absolute, NULL},
    {"hostPath", T_STRING, false, check_absolute, NULL},
    {"type", T_STRING, false, check_device_type, NULL},
    {"major", T_INT, false, NULL, NULL},
    {"minor", T_INT, false, NULL, NULL},
    {"fileMode", T_UINT32, false, NULL, NULL},
    {"permissions", T_STRING, false, check_permissions, NULL},
    {"uid", T_UINT32, false, NULL, NULL},
    {"gid", T_UINT32, false, NULL, NULL},
    {NULL, 0, false, NULL, NULL},
};

static const struct member mount_members[] = {
    {"hostPath", T_STRING, true, check_non_empty, NULL},
    {"containerPath", T_STRING, true, check_absolute, NULL},
    {"options", T_STRINGS, false, NULL, NULL},
    {"type", T_STRING, false, NULL, NULL},
    {NULL, 0, false, NULL, NULL},
};

static const struct member hook_members[] = {
    {"hookName", T_STRING, true, check_non_empty, NULL},
    {"path", T_STRING, true, check_absolute, NULL},
    {"args", T_STRINGS, false, NULL, NULL},
    {"env", T_STRINGS, false, check_env, NULL},
    {"timeout", T_INT, false, NULL, NULL},
    {NULL, 0, false, NULL, NULL},
};

static const struct member edits_members[] = {
    {"env", T_STRINGS, false, check_env, NULL},
    {"deviceNodes", T_OBJECTS, false, NULL, device_node_members},
    {"mounts", T_OBJECTS, false, NULL, mount_members},
    {"hooks", T_OBJECTS, false, NULL, hook_members},
    {"additionalGids", T_STRINGS, false, NULL, NULL},
    {"intelRdt", T_ANY, false, NULL, NULL},
    {NULL, 0, false, NULL, NULL},
};

static const struct member device_members[] = {
    {"name", T_STRING, true, check_device_name, NULL},
    {"annotations", T_MAP, false, NULL, NULL},
    {"containerEdits", T_EDITS, true, NULL, edits_members},
    {NULL, 0, false, NULL, NULL},
};

static bool edits_empty(const json_t *edits)
{
        const char *key;
        json_t *v;

        json_object_foreach((json_t *)edits, key, v)
        {
                if (json_array_size(v) > 0 || json_is_object(v))
                        return false;
        }
        return true;
}

/* What the tables cannot say: names unique, every device's edits non-empty. */
static int check_devices(struct ctx *c, const json_t *devices)
{
        size_t i, j;
        json_t *d;

        if (json_array_size(devices) == 0)
                return fail(c, "no devices: a spec names at least one");
        json_array_foreach(devices, i, d)
        {
                const char *name = json_string_value(json_object_get(d, "name"));
                size_t len = push_index(c, i);

                for (j = 0; j < i; j++)
                        if (strcmp(name,
                                   json_string_value(
                                       json_object_get(json_array_get(devices, j), "name"))) == 0)
                                return fail(c, "the device name '%s' is used twice", name);
                push(c, "containerEdits");
                if (edits_empty(json_object_get(d, "containerEdits")))
                        return fail(c, "no container edits: a device must change the container");
                pop(c, len);
        }
        return 0;
}

int xp_cdi_check(const json_t *spec, struct xp_error *err)
{
        static const struct member spec_members[] = {
            {"cdiVersion", T_STRING, true, check_version, NULL},
            {"kind", T_STRING, true, check_kind, NULL},
            {"annotations", T_MAP, false, NULL, NULL},
            {"devices", T_OBJECTS, true, NULL, device_members},
            {"containerEdits", T_EDITS, false, NULL, edits_members},
            {NULL, 0, false, NULL, NULL},
        };
        struct ctx c = {.err = err};
        int r;

        r = check_object(&c, spec, spec_members);
        if (r < 0)
                return r;
        push(&c, "devices");
        return check_devices(&c, json_object_get(spec, "devices"));
}

int xp_cdi_check_file(const char *path, struct xp_error *err)
{
        json_error_t jerr;
        json_t *spec;
        int r;

        spec = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        if (!spec)
                return xp_errorf(
                    err, -EINVAL, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        r = xp_cdi_check(spec, err);
        json_decref(spec);
        if (r < 0)
                return xp_error_prefix(err, r, "%s", path);
        return 0;
}
