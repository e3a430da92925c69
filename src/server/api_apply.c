/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server-side apply (PATCH with application/apply-patch+yaml): the field manager from
 * ?fieldManager=, ?force=true to take conflicting fields, the merge and ownership of
 * xp_apply() (xpool/managedfields.h), conflicts as kube-apiserver reports them (409 with one
 * FieldManagerConflict cause per field), and a create when the object does not exist yet.
 * handle_patch() (api_objects.c) calls in here for this one content type.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "internal.h"
#include "xpool/apischema.h"
#include "xpool/managedfields.h"
#include "xpool/yaml.h"

json_t *apply_body(const struct request *req, json_error_t *jerr)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        json_t *json = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, jerr);
        size_t n = 0;

        if (json)
                return json;
        /* the content type says YAML: one document */
        if (xp_yaml_load(req->body, req->body_len, "apply", &docs, &n, &err) < 0 || n != 1) {
                snprintf(jerr->text,
                         sizeof jerr->text,
                         "%s",
                         n > 1 ? "an apply patch is one document" : xp_error_message(&err));
                jerr->line = jerr->column = 0;
                xp_yaml_documents_free(docs, n);
                return NULL;
        }
        json = json_incref(docs[0].root);
        xp_yaml_documents_free(docs, n);
        return json;
}

/* The field manager and force: 1, else 0 with ret filled as kube-apiserver answers. */
static int apply_options(const struct request *req,
                         const struct xp_kind *kind,
                         struct xp_apply_request *opts,
                         char *now,
                         size_t now_size,
                         struct reply *ret)
{
        const char *force = request_query(req, "force");
        time_t t = time(NULL);
        struct tm tm;

        opts->manager = request_query(req, "fieldManager");
        if (!opts->manager || !opts->manager[0])
                return reply_status(
                    ret,
                    422,
                    "Invalid",
                    NULL,
                    kind->plural,
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch");
        if (strlen(opts->manager) > 128)
                return reply_status(
                    ret,
                    422,
                    "Invalid",
                    NULL,
                    kind->plural,
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be longer than 128 bytes");
        opts->force = force && (strcasecmp(force, "true") == 0 || strcmp(force, "1") == 0);
        opts->api_version = kind->group[0] ? NULL : kind->version;
        gmtime_r(&t, &tm);
        strftime(now, now_size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        opts->now = now;
        return 1;
}

static int
reply_conflicts(struct reply *ret, const struct xp_kind *kind, const char *name, json_t *conflicts)
{
        char *message = xp_apply_conflict_message(conflicts);
        json_t *causes = json_array(), *c;
        size_t i;
        int r;

        if (!message || !causes) {
                free(message);
                json_decref(causes);
                return -ENOMEM;
        }
        r = reply_status(ret, 409, "Conflict", name, kind->plural, "%s", message);
        free(message);
        json_array_foreach(conflicts, i, c)
        {
                char text[512];

                snprintf(text,
                         sizeof text,
                         "conflict with %s",
                         json_string_value(json_object_get(c, "manager")));
                json_array_append_new(causes,
                                      json_pack("{s:s, s:s, s:O}",
                                                "reason",
                                                "FieldManagerConflict",
                                                "message",
                                                text,
                                                "field",
                                                json_object_get(c, "field")));
        }
        if (r >= 0 &&
            json_object_set_new(json_object_get(ret->body, "details"), "causes", causes) < 0)
                return -ENOMEM;
        if (r < 0)
                json_decref(causes);
        return r;
}

/* xp_apply() for the kind: 1 with *ret_object, else 0 with ret filled. */
static int run_apply(const struct request *req,
                     const struct xp_kind *kind,
                     const json_t *live,
                     const json_t *config,
                     json_t **ret_object,
                     struct reply *ret)
{
        const struct xp_apischema *schema = NULL;
        struct xp_apply_request opts = {0};
        struct xp_error err = {0};
        json_t *conflicts = NULL;
        char now[32], version[128];
        int r = apply_options(req, kind, &opts, now, sizeof now, ret);

        if (r <= 0)
                return r;
        snprintf(version,
                 sizeof version,
                 "%s%s%s",
                 kind->group,
                 kind->group[0] ? "/" : "",
                 kind->version);
        opts.api_version = version;
        r = xp_apischema_builtin(&schema, &err);
        if (r < 0)
                return r;
        if (!json_is_object(config))
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    kind->plural,
                                    "an apply patch must be an object");
        r = xp_apply(xp_apischema_find(schema, kind->schema_type ? kind->schema_type : kind->kind),
                     live,
                     config,
                     &opts,
                     ret_object,
                     &conflicts,
                     &err);
        if (r == -EBUSY) {
                r = reply_conflicts(ret, kind, req->name, conflicts);
                json_decref(conflicts);
                return r;
        }
        if (r == -EINVAL)
                return reply_status(ret,
                                    500,
                                    "InternalError",
                                    req->name,
                                    kind->plural,
                                    "the stored %s's field ownership does not read: %s",
                                    kind->kind,
                                    xp_error_message(&err));
        return r < 0 ? r : 1;
}

int apply_patch(const struct request *req,
                const struct xp_kind *kind,
                const json_t *stored,
                const json_t *config,
                json_t **ret_patched,
                struct reply *ret)
{
        return run_apply(req, kind, stored, config, ret_patched, ret);
}

int apply_create(const struct request *req,
                 const struct xp_kind *kind,
                 const json_t *config,
                 unsigned flags,
                 bool dry,
                 struct reply *ret)
{
        json_t *object = NULL;
        int r;

        /* forget the 404 of the read: the apply creates the object */
        json_decref(ret->body);
        *ret = (struct reply){0};
        r = run_apply(req, kind, NULL, config, &object, ret);
        if (r <= 0)
                return r;
        return create_json(req, kind, object, flags, dry, ret);
}
