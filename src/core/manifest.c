/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema.h"
#include "xpool/fileio.h"
#include "xpool/manifest.h"
#include "xpool/strutil.h"

/* enum xp_object_kind by kind name, for callers that switch on it. */
static const struct {
        const char *kind;
        enum xp_object_kind type;
} object_kinds[] = {
    {"Pod", XP_OBJECT_POD},
    {"Node", XP_OBJECT_NODE},
    {"Namespace", XP_OBJECT_NAMESPACE},
    {"Event", XP_OBJECT_EVENT},
    {"Lease", XP_OBJECT_LEASE},
};

const char *xp_object_kind_to_string(enum xp_object_kind kind)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(object_kinds); i++)
                if (object_kinds[i].type == kind)
                        return object_kinds[i].kind;
        return NULL;
}

static enum xp_object_kind object_kind_of(const struct xp_kind *type)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(object_kinds); i++)
                if (strcmp(object_kinds[i].kind, type->kind) == 0)
                        return object_kinds[i].type;
        return 0;
}

void xp_manifest_done(struct xp_manifest *manifest)
{
        for (size_t i = 0; i < manifest->n; i++)
                if (manifest->objects[i].type)
                        manifest->objects[i].type->free(manifest->objects[i].object);
        free(manifest->objects);
        manifest->objects = NULL;
        manifest->n = 0;
}

static int append(struct xp_manifest *m, const struct xp_manifest_object *object)
{
        struct xp_manifest_object *grown = realloc(m->objects, (m->n + 1) * sizeof(*grown));

        if (!grown)
                return -ENOMEM;
        m->objects = grown;
        m->objects[m->n++] = *object;
        return 0;
}

static int fail(struct xp_decode_ctx *ctx, const char *field, const char *fmt, const char *arg)
{
        int r;

        if (field)
                xp_path_push_field(&ctx->path, field);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        r = xp_decode_fail(ctx, -EINVAL, NULL, false, fmt, arg);
#pragma GCC diagnostic pop
        if (field)
                xp_path_pop(&ctx->path);
        return r;
}

static const struct xp_kind *find_list_kind(const char *kind)
{
        for (size_t i = 0; kind && i < xp_kinds_n; i++)
                if (strcmp(xp_kinds[i]->list_kind, kind) == 0)
                        return xp_kinds[i];
        return NULL;
}

/* "Pod, Node, Namespace, Event and Lease", from the table. */
static void kind_names(char *buf, size_t size)
{
        size_t used = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < xp_kinds_n && used < size; i++) {
                int n = snprintf(buf + used,
                                 size - used,
                                 "%s%s",
                                 i == 0                ? ""
                                 : i + 1 == xp_kinds_n ? " and "
                                                       : ", ",
                                 xp_kinds[i]->kind);

                if (n < 0)
                        break;
                used += (size_t)n;
        }
}

static struct xp_source_pos position_of(const struct xp_yaml_document *doc,
                                        const struct xp_path *path)
{
        struct xp_source_entry entry;
        char pointer[XP_PATH_TEXT_MAX];

        xp_path_pointer(path, pointer, sizeof(pointer));
        if (xp_source_map_lookup(doc->map, pointer, &entry) == 0)
                return entry.value;
        return doc->start;
}

/* One object at ctx->path; implied is the kind a typed list's items may leave out. */
static int load_object(struct xp_decode_ctx *ctx,
                       const struct xp_yaml_document *doc,
                       const json_t *json,
                       const struct xp_kind *implied,
                       unsigned flags,
                       struct xp_manifest *out,
                       struct xp_error *err)
{
        const struct xp_kind *entry = implied;
        struct xp_decode_source source = {
            .name = ctx->source->name, .map = doc->map, .base = &ctx->path};
        struct xp_manifest_object object = {.pos = position_of(doc, &ctx->path)};
        const json_t *kind, *api_version;
        char q[XP_QUOTE_MAX];
        int r;

        if (!json_is_object(json))
                return fail(ctx,
                            NULL,
                            "expected an object with apiVersion and kind, got %s",
                            json_is_array(json) ? "a list" : "a scalar");
        kind = json_object_get(json, "kind");
        api_version = json_object_get(json, "apiVersion");
        if ((!kind || json_is_null(kind)) && !implied)
                return fail(ctx,
                            "kind",
                            "Required value: every object in a manifest needs a kind, e.g. %s",
                            "\"kind: Pod\"");
        if ((!api_version || json_is_null(api_version)) && !implied)
                return fail(
                    ctx,
                    "apiVersion",
                    "Required value: every object in a manifest needs an apiVersion, e.g. %s",
                    "\"apiVersion: v1\"");
        if (kind && !json_is_null(kind)) {
                if (!json_is_string(kind))
                        return fail(ctx, "kind", "expected a string such as %s", "\"Pod\"");
                /* by apiVersion first: two groups serve a kind named PodGroup */
                entry = json_is_string(api_version)
                            ? xp_kind_by_api_version(json_string_value(api_version),
                                                     json_string_value(kind))
                            : NULL;
                if (!entry)
                        entry = xp_kind_by_name(json_string_value(kind));
                if (!entry && !implied &&
                    (strcmp(json_string_value(kind), "List") == 0 ||
                     find_list_kind(json_string_value(kind))))
                        return 1; /* a list: the caller walks its items */
                if (!entry) {
                        char names[128], message[256];

                        kind_names(names, sizeof(names));
                        snprintf(
                            message,
                            sizeof(message),
                            "unsupported kind %%s: xpool manages %s objects (and lists of them)",
                            names);
                        return fail(ctx, "kind", message, xp_quote(json_string_value(kind), q));
                }
                if (implied && entry != implied) {
                        char message[128];

                        snprintf(message,
                                 sizeof(message),
                                 "unexpected kind %%s: a %s holds only %s objects",
                                 implied->list_kind,
                                 implied->kind);
                        return fail(ctx, "kind", message, xp_quote(json_string_value(kind), q));
                }
        }

        object.kind = object_kind_of(entry);
        object.type = entry;
        r = entry->from_json(json, &source, flags, &object.object, err);
        if (r < 0)
                return r;
        r = append(out, &object);
        if (r < 0)
                entry->free(object.object);
        return r;
}

static int load_document(const struct xp_yaml_document *doc,
                         const char *name,
                         unsigned flags,
                         struct xp_manifest *out,
                         struct xp_error *err)
{
        struct xp_decode_source source = {.name = name, .map = doc->map};
        struct xp_decode_ctx ctx = {.source = &source, .flags = flags, .err = err};
        const json_t *items, *kind;
        const struct xp_kind *implied;
        char q[XP_QUOTE_MAX];
        int r = load_object(&ctx, doc, doc->root, NULL, flags, out, err);

        if (r <= 0)
                return r;

        kind = json_object_get(doc->root, "kind");
        implied = find_list_kind(json_string_value(kind));
        items = json_object_get(doc->root, "items");
        if (!items || json_is_null(items))
                return 0; /* an empty list */
        if (!json_is_array(items))
                return fail(&ctx,
                            "items",
                            "expected a list of objects, got %s",
                            json_is_object(items) ? "a mapping" : "a scalar");
        xp_path_push_field(&ctx.path, "items");
        for (size_t i = 0; i < json_array_size(items) && r >= 0; i++) {
                xp_path_push_index(&ctx.path, i);
                r = load_object(&ctx, doc, json_array_get(items, i), implied, flags, out, err);
                if (r > 0)
                        r = fail(&ctx,
                                 "kind",
                                 "unsupported kind %s: lists may not hold lists",
                                 xp_quote(json_string_value(
                                              json_object_get(json_array_get(items, i), "kind")),
                                          q));
                xp_path_pop(&ctx.path);
        }
        return r;
}

int xp_manifest_load_buffer(const char *data,
                            size_t size,
                            const char *source_name,
                            unsigned flags,
                            struct xp_manifest *ret,
                            struct xp_error *err)
{
        const char *name = source_name ? source_name : "<input>";
        struct xp_manifest loaded = {0};
        struct xp_yaml_document *docs = NULL;
        size_t n_docs = 0;
        int r;

        if (size > XP_MANIFEST_MAX_BYTES)
                return xp_errorf(err,
                                 -E2BIG,
                                 "%s: too large (%zu bytes, at most %d)",
                                 name,
                                 size,
                                 XP_MANIFEST_MAX_BYTES);
        r = xp_yaml_load(data, size, name, &docs, &n_docs, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_docs && r >= 0; i++)
                r = load_document(&docs[i], name, flags, &loaded, err);
        xp_yaml_documents_free(docs, n_docs);
        if (r < 0) {
                xp_manifest_done(&loaded);
                return r;
        }
        *ret = loaded;
        return 0;
}

int xp_manifest_load_file(const char *path,
                          unsigned flags,
                          struct xp_manifest *ret,
                          struct xp_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *data = NULL;
        bool is_stdin = strcmp(path, "-") == 0;
        const char *name = is_stdin ? "<stdin>" : path;
        struct stat st;
        size_t size = 0;
        int r;

        if (!is_stdin) {
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return xp_errorf(err, -errno, "cannot open %s: %s", path, strerror(errno));
                if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
                        return xp_errorf(
                            err, -EISDIR, "%s is a directory: give a manifest file", path);
        }
        r = xp_read_fd_all(is_stdin ? STDIN_FILENO : fd, XP_MANIFEST_MAX_BYTES, &data, &size);
        if (r == -E2BIG)
                return xp_errorf(
                    err, r, "%s: too large (more than %d bytes)", name, XP_MANIFEST_MAX_BYTES);
        if (r < 0)
                return xp_errorf(err, r, "%s: %s", name, strerror(-r));
        return xp_manifest_load_buffer(data, size, name, flags, ret, err);
}
