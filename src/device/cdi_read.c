/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading CDI spec files as a container runtime does (include/xpool/cdi.h): every spec of a
 * directory parsed and checked, then the edits of the devices a container asks for merged into
 * one set the OCI runtime applies to its config.json (src/runtime/oci_cdi.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/cdi.h"
#include "xpool/fileio.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

struct spec_file {
        char *name;   /* the file's name in the directory */
        json_t *spec; /* checked; NULL when the file was left out */
        char *error;  /* why it was left out */
};

struct xp_cdi_specs {
        char *dir;
        struct spec_file *files;
        size_t n;
};

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);

        return n > k && strcmp(s + n - k, suffix) == 0;
}

static bool is_yaml(const char *name)
{
        return ends_with(name, ".yaml") || ends_with(name, ".yml");
}

int xp_cdi_spec_parse(
    const char *data, size_t size, const char *name, json_t **ret, struct xp_error *err)
{
        json_t *spec = NULL;
        int r;

        if (size > XP_CDI_FILE_MAX)
                return xp_errorf(err, -E2BIG, "%s: larger than %d bytes", name, XP_CDI_FILE_MAX);
        if (is_yaml(name)) {
                struct xp_yaml_document *docs = NULL;
                size_t n = 0;

                r = xp_yaml_load(data, size, name, &docs, &n, err);
                if (r < 0)
                        return r;
                if (n == 1)
                        spec = json_incref(docs[0].root);
                xp_yaml_documents_free(docs, n);
                if (n != 1)
                        return xp_errorf(
                            err, -EINVAL, "%s: %zu YAML documents, a spec file holds one", name, n);
        } else {
                json_error_t jerr;

                spec = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
                if (!spec)
                        return xp_errorf(
                            err, -EINVAL, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
        }
        r = xp_cdi_check(spec, err);
        if (r < 0) {
                json_decref(spec);
                return xp_error_prefix(err, r, "%s", name);
        }
        *ret = spec;
        return 0;
}

void xp_cdi_specs_free(struct xp_cdi_specs *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++) {
                free(s->files[i].name);
                json_decref(s->files[i].spec);
                free(s->files[i].error);
        }
        free(s->files);
        free(s->dir);
        free(s);
}

static int name_cmp(const void *a, const void *b)
{
        return strcmp(((const struct spec_file *)a)->name, ((const struct spec_file *)b)->name);
}

/* Reads and checks one file of the directory into f (a failure is kept as f->error). */
static int load_file(int dfd, const char *dir, struct spec_file *f)
{
        _cleanup_free_ char *data = NULL, *where = NULL;
        struct xp_error err = {0};
        size_t size = 0;
        int r;

        if (asprintf(&where, "%s/%s", dir, f->name) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = openat(dfd, f->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;

        /* only regular files: a FIFO named x.json must not hang the runtime */
        if (fd < 0 || fstat(fd, &st) < 0)
                r = -errno;
        else if (!S_ISREG(st.st_mode))
                r = -EINVAL;
        else
                r = xp_read_fd_all(fd, XP_CDI_FILE_MAX, &data, &size);
        if (r < 0)
                r = xp_errorf(&err, r, "%s: %s", where, strerror(-r));
        else
                r = xp_cdi_spec_parse(data, size, where, &f->spec, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && !(f->error = strdup(xp_error_message(&err))))
                return -ENOMEM;
        return 0;
}

int xp_cdi_specs_load(const char *dir, struct xp_cdi_specs **ret, struct xp_error *err)
{
        struct xp_cdi_specs *s = calloc(1, sizeof(*s));
        struct dirent *e;
        DIR *d;
        int r = 0;

        if (!s || !(s->dir = strdup(dir))) {
                xp_cdi_specs_free(s);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        d = opendir(dir);
        if (!d && errno != ENOENT) {
                r = -errno;
                xp_cdi_specs_free(s);
                return xp_errorf(err, r, "CDI spec directory %s: %s", dir, strerror(-r));
        }
        while (d && r >= 0 && (e = readdir(d)) && s->n < XP_CDI_FILES_MAX) {
                struct spec_file *grown;

                if (e->d_name[0] == '.' || (!ends_with(e->d_name, ".json") && !is_yaml(e->d_name)))
                        continue;
                grown = realloc(s->files, (s->n + 1) * sizeof(*grown));
                if (!grown) {
                        r = -ENOMEM;
                        break;
                }
                s->files = grown;
                s->files[s->n] = (struct spec_file){.name = strdup(e->d_name)};
                if (!s->files[s->n++].name)
                        r = -ENOMEM;
                else
                        r = load_file(dirfd(d), dir, &s->files[s->n - 1]);
        }
        if (d)
                closedir(d);
        if (r < 0) {
                xp_cdi_specs_free(s);
                return xp_errorf(err, r, "reading the CDI specs in %s: %s", dir, strerror(-r));
        }
        if (s->n > 1)
                qsort(s->files, s->n, sizeof(*s->files), name_cmp);
        *ret = s;
        return 0;
}

/* ---- resolving ------------------------------------------------------------------------------ */

static const char *const edit_keys[] = {"env", "deviceNodes", "mounts", "hooks", "additionalGids"};

/* The key an element of the array key is known by when merging (NULL: every element kept). */
static json_t *merge_key(const char *key, json_t *e, char buf[static 256])
{
        const char *s;

        if (strcmp(key, "env") == 0) {
                s = json_string_value(e);
                snprintf(buf, 256, "%.*s", (int)strcspn(s ? s : "", "="), s ? s : "");
                return json_string(buf);
        }
        if (strcmp(key, "deviceNodes") == 0)
                return json_incref(json_object_get(e, "path"));
        if (strcmp(key, "mounts") == 0)
                return json_incref(json_object_get(e, "containerPath"));
        if (strcmp(key, "additionalGids") == 0)
                return json_incref(e);
        return NULL;
}

/* Appends src's elements to dst's, an element with the key of an earlier one replacing it. */
static int merge_array(json_t *dst, const char *key, json_t *src)
{
        json_t *to = json_object_get(dst, key), *e;
        char buf[256], other[256];
        size_t i;

        json_array_foreach(src, i, e)
        {
                json_t *k = merge_key(key, e, buf);
                bool replaced = false;

                for (size_t j = 0; k && j < json_array_size(to) && !replaced; j++) {
                        json_t *kj = merge_key(key, json_array_get(to, j), other);

                        if (json_equal(k, kj)) {
                                /* env: the later value wins; a node or mount: the first one */
                                if (strcmp(key, "env") == 0 && json_array_set(to, j, e) < 0) {
                                        json_decref(kj);
                                        json_decref(k);
                                        return -ENOMEM;
                                }
                                replaced = true;
                        }
                        json_decref(kj);
                }
                json_decref(k);
                if (!replaced && json_array_append(to, e) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int merge_edits(json_t *dst, const json_t *edits, const char *what, struct xp_error *err)
{
        if (!edits)
                return 0;
        if (json_object_get(edits, "intelRdt"))
                return xp_errorf(
                    err, -EINVAL, "%s: intelRdt edits are not supported by xpool's runtime", what);
        for (size_t k = 0; k < XP_ELEMENTSOF(edit_keys); k++) {
                json_t *v = json_object_get(edits, edit_keys[k]);

                if (v && merge_array(dst, edit_keys[k], v) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The spec (and its device) that defines kind=device; -ENOENT, -EINVAL when defined twice. */
static int find_device(const struct xp_cdi_specs *s,
                       const char *qualified,
                       size_t kind_len,
                       const struct spec_file **ret_file,
                       const json_t **ret_device,
                       struct xp_error *err)
{
        const char *device = qualified + kind_len + 1;

        *ret_file = NULL;
        for (size_t i = 0; i < s->n; i++) {
                const char *kind = json_string_value(json_object_get(s->files[i].spec, "kind"));
                json_t *devices = json_object_get(s->files[i].spec, "devices"), *d;
                size_t j;

                if (!kind || strlen(kind) != kind_len || strncmp(kind, qualified, kind_len) != 0)
                        continue;
                json_array_foreach(devices, j, d)
                {
                        if (!xp_streq0(json_string_value(json_object_get(d, "name")), device))
                                continue;
                        if (*ret_file)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "CDI device %s is defined by both %s/%s and %s/%s",
                                                 qualified,
                                                 s->dir,
                                                 (*ret_file)->name,
                                                 s->dir,
                                                 s->files[i].name);
                        *ret_file = &s->files[i];
                        *ret_device = d;
                }
        }
        return *ret_file ? 0 : -ENOENT;
}

/* -ENOENT for name, saying which files were left out (one of them may have held it). */
static int not_found(const struct xp_cdi_specs *s, const char *name, struct xp_error *err)
{
        for (size_t i = 0; i < s->n; i++)
                if (s->files[i].error)
                        return xp_errorf(err,
                                         -ENOENT,
                                         "CDI device %s: no spec in %s defines it (%s was left "
                                         "out: %s)",
                                         name,
                                         s->dir,
                                         s->files[i].name,
                                         s->files[i].error);
        return xp_errorf(err, -ENOENT, "CDI device %s: no spec in %s defines it", name, s->dir);
}

static int resolve_one(const struct xp_cdi_specs *s,
                       const char *name,
                       json_t *out,
                       const struct spec_file **used,
                       size_t *n_used,
                       struct xp_error *err)
{
        const char *eq = name ? strchr(name, '=') : NULL;
        const struct spec_file *f;
        const json_t *device = NULL;
        bool seen = false;
        int r;

        if (!eq || eq == name || !strchr(name, '/') || strchr(name, '/') > eq || !eq[1])
                return xp_errorf(err,
                                 -EINVAL,
                                 "\"%s\" is not a fully qualified CDI device name "
                                 "(vendor/class=name)",
                                 name ? name : "");
        r = find_device(s, name, (size_t)(eq - name), &f, &device, err);
        if (r == -ENOENT)
                return not_found(s, name, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < *n_used && !seen; i++)
                seen = used[i] == f;
        if (!seen) {
                used[(*n_used)++] = f;
                r = merge_edits(out, json_object_get(f->spec, "containerEdits"), name, err);
                if (r < 0)
                        return r;
        }
        return merge_edits(out, json_object_get(device, "containerEdits"), name, err);
}

int xp_cdi_resolve(
    const struct xp_cdi_specs *s, char *const *names, size_t n, json_t **ret, struct xp_error *err)
{
        _cleanup_free_ const struct spec_file **used = calloc(s->n + 1, sizeof(*used));
        json_t *out = json_pack("{s:[], s:[], s:[], s:[], s:[]}",
                                "env",
                                "deviceNodes",
                                "mounts",
                                "hooks",
                                "additionalGids");
        size_t n_used = 0;
        int r = used && out ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < n; i++)
                r = resolve_one(s, names[i], out, used, &n_used, err);
        if (r == -ENOMEM)
                r = xp_errorf(err, r, "resolving CDI devices: out of memory");
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}
