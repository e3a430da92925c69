/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OpenAPI documents: v3 per group version (/openapi/v3/api/v1, /openapi/v3/apis/GROUP/v1,
 * listed with hash-versioned URLs by /openapi/v3) and v2 (/openapi/v2, JSON). Paths come from the
 * kinds table and the reviews, as discovery's do; schemas from the API schema
 * (xpool/openapi.h), so `kubectl explain` and kubectl's validation read what the server checks.
 *
 * kubectl reads the PATCH operation's parameters to learn that the server validates fields
 * itself (fieldValidation), and sends ?fieldValidation=Strict. The PATCH content types list
 * apply, JSON and merge patches but not strategic merge: kubectl then computes strategic merge
 * patches from its built-in types, which carry the merge keys, rather than from our documents.
 *
 * The documents depend on nothing but the program, so they are made once and kept as text.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/apischema.h"
#include "xpool/map.h"
#include "xpool/openapi.h"

#define MAX_DOCS 48 /* the core group and each version of the named ones */

struct openapi_doc {
        char *text;
        char key[128]; /* "api/v1", "apis/coordination.k8s.io/v1" */
        char hash[17];
};

static struct {
        pthread_once_t once;
        int error;
        struct openapi_doc v3[MAX_DOCS];
        size_t n_v3;
        char *v2;
} docs = {.once = PTHREAD_ONCE_INIT};

/* ---- operations ------------------------------------------------------------------------------ */

struct param {
        const char *name;
        const char *in; /* "query", "path" */
        const char *description;
        const char *type;
};

static const struct param p_namespace = {
    "namespace", "path", "object name and auth scope, such as for teams and projects", "string"};
static const struct param p_name = {"name", "path", "name of the object", "string"};
static const struct param p_dry_run = {
    "dryRun", "query", "All: validate and answer without persisting", "string"};
static const struct param p_field_manager = {
    "fieldManager", "query", "the name of the actor making the change (managedFields)", "string"};
static const struct param p_field_validation = {
    "fieldValidation",
    "query",
    "Strict refuses unknown and duplicate fields; Warn and Ignore accept them",
    "string"};
static const struct param p_force = {
    "force", "query", "apply: take the fields other managers own (conflicts)", "boolean"};
static const struct param p_label_selector = {
    "labelSelector", "query", "a selector of the objects' labels", "string"};
static const struct param p_field_selector = {
    "fieldSelector", "query", "a selector of the objects' fields", "string"};
static const struct param p_watch = {
    "watch", "query", "stream the changes of the described resources", "boolean"};
static const struct param p_resource_version = {
    "resourceVersion", "query", "the version a list or watch starts from", "string"};
static const struct param p_timeout = {
    "timeoutSeconds", "query", "how long a watch lasts", "integer"};

static json_t *param_json(enum xp_openapi_version v, const struct param *p)
{
        json_t *j = json_pack(
            "{s:s, s:s, s:s}", "name", p->name, "in", p->in, "description", p->description);

        if (!j)
                return NULL;
        if (strcmp(p->in, "path") == 0)
                json_object_set_new(j, "required", json_true());
        if (v == XP_OPENAPI_V3)
                json_object_set_new(j, "schema", json_pack("{s:s}", "type", p->type));
        else
                json_object_set_new(j, "type", json_string(p->type));
        return j;
}

/* What one operation of a path needs to say. */
struct op {
        const char *method; /* "get", "post", ... */
        const char *action; /* x-kubernetes-action: "list", "get", "create", ... */
        const char *group, *kind;
        const char *version;           /* NULL: v1 */
        const char *type_ref;          /* the body's and answer's schema, or NULL */
        const struct param *params[8]; /* the query's, NULL-terminated */
        bool patch;                    /* the request body is a patch */
        bool named, namespaced;        /* the path has {name}, {namespace} */
};

static json_t *op_body(enum xp_openapi_version v, const struct op *op)
{
        static const char *const patch_types[] = {"application/apply-patch+yaml",
                                                  "application/json-patch+json",
                                                  "application/merge-patch+json"};
        json_t *content = json_object();

        if (v == XP_OPENAPI_V2 || !content)
                return content;
        if (op->patch) {
                for (size_t i = 0; i < sizeof patch_types / sizeof *patch_types; i++)
                        json_object_set_new(content,
                                            patch_types[i],
                                            json_pack("{s:{s:s}}", "schema", "type", "object"));
        } else {
                json_object_set_new(content,
                                    "application/json",
                                    json_pack("{s:{s:s}}", "schema", "$ref", op->type_ref));
        }
        return json_pack("{s:o, s:b}", "content", content, "required", true);
}

static json_t *op_json(enum xp_openapi_version v, const struct op *op)
{
        json_t *params = json_array(), *j;

        if (params && op->named)
                json_array_append_new(params, param_json(v, &p_name));
        if (params && op->namespaced)
                json_array_append_new(params, param_json(v, &p_namespace));
        for (size_t i = 0; params && i < 8 && op->params[i]; i++)
                json_array_append_new(params, param_json(v, op->params[i]));
        j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:{s:{s:s}}}",
                      "operationId",
                      op->action,
                      "x-kubernetes-action",
                      op->action,
                      "x-kubernetes-group-version-kind",
                      "group",
                      op->group,
                      "version",
                      op->version ? op->version : "v1",
                      "kind",
                      op->kind,
                      "parameters",
                      params,
                      "responses",
                      "200",
                      "description",
                      "OK");
        if (j && op->type_ref &&
            (op->patch || strcmp(op->method, "post") == 0 || strcmp(op->method, "put") == 0)) {
                if (v == XP_OPENAPI_V3)
                        json_object_set_new(j, "requestBody", op_body(v, op));
                else if (!op->patch)
                        json_array_append_new(params,
                                              json_pack("{s:s, s:s, s:b, s:{s:s}}",
                                                        "name",
                                                        "body",
                                                        "in",
                                                        "body",
                                                        "required",
                                                        true,
                                                        "schema",
                                                        "$ref",
                                                        op->type_ref));
        }
        return j;
}

/* Adds the operation under paths[path][op->method]; -ENOMEM. */
static int add_op(json_t *paths, const char *path, enum xp_openapi_version v, const struct op *op)
{
        json_t *item = json_object_get(paths, path);

        if (!item && (!(item = json_object()) || json_object_set_new(paths, path, item) < 0))
                return -ENOMEM;
        return json_object_set_new(item, op->method, op_json(v, op)) < 0 ? -ENOMEM : 0;
}

/* ---- paths ----------------------------------------------------------------------------------- */

static void type_ref(enum xp_openapi_version v, const char *type, char *buf, size_t size)
{
        const struct xp_apischema *schema;
        const struct xp_apitype *t;

        buf[0] = '\0';
        if (xp_apischema_builtin(&schema, NULL) >= 0 && (t = xp_apischema_find(schema, type)))
                xp_openapi_ref(v, t, buf, size);
}

static bool verbs_include(const char *const *verbs, const char *verb)
{
        for (size_t i = 0; verbs[i]; i++)
                if (strcmp(verbs[i], verb) == 0)
                        return true;
        return false;
}

static int kind_paths(json_t *paths, enum xp_openapi_version v, const struct xp_kind *kind)
{
        char prefix[128], collection[256], item[300], status[320], ref[400];
        int r = 0;

        type_ref(v, kind->schema_type ? kind->schema_type : kind->kind, ref, sizeof ref);
        if (kind->group[0])
                snprintf(prefix, sizeof prefix, "/apis/%s/%s", kind->group, kind->version);
        else
                snprintf(prefix, sizeof prefix, "/api/%s", kind->version);
        snprintf(collection,
                 sizeof collection,
                 "%s%s/%s",
                 prefix,
                 kind->namespaced ? "/namespaces/{namespace}" : "",
                 xp_kind_url_plural(kind));
        snprintf(item, sizeof item, "%s/{name}", collection);
        snprintf(status, sizeof status, "%s/status", item);

#define OP(path, m, a, is_patch, is_named, ...)                                                    \
        if (r >= 0)                                                                                \
        r = add_op(paths,                                                                          \
                   path,                                                                           \
                   v,                                                                              \
                   &(struct op){.method = m,                                                       \
                                .action = a,                                                       \
                                .group = kind->group,                                              \
                                .version = kind->version,                                          \
                                .kind = kind->kind,                                                \
                                .type_ref = ref[0] ? ref : NULL,                                   \
                                .patch = is_patch,                                                 \
                                .named = is_named,                                                 \
                                .namespaced = kind->namespaced,                                    \
                                .params = {__VA_ARGS__}})
        OP(collection,
           "get",
           "list",
           false,
           false,
           &p_label_selector,
           &p_field_selector,
           &p_watch,
           &p_resource_version,
           &p_timeout);
        OP(collection,
           "post",
           "post",
           false,
           false,
           &p_dry_run,
           &p_field_manager,
           &p_field_validation);
        /* the object and, where the kind has one, its status subresource: the same operations */
        for (int i = 0; i < (kind_has_status(kind) ? 2 : 1); i++) {
                const char *path = i == 0 ? item : status;

                OP(path, "get", "get", false, true, NULL);
                OP(path,
                   "put",
                   "put",
                   false,
                   true,
                   &p_dry_run,
                   &p_field_manager,
                   &p_field_validation);
                OP(path,
                   "patch",
                   "patch",
                   true,
                   true,
                   &p_dry_run,
                   &p_field_manager,
                   &p_field_validation,
                   &p_force);
                if (i == 0)
                        OP(item, "delete", "delete", false, true, &p_dry_run);
        }
        /* discovery's verbs say which kinds serve it (a namespace goes only by name) */
        if (verbs_include(api_kind_verbs(kind), "deletecollection"))
                OP(collection,
                   "delete",
                   "deletecollection",
                   false,
                   false,
                   &p_label_selector,
                   &p_field_selector,
                   &p_dry_run);
#undef OP
        return r;
}

static int review_paths(json_t *paths, enum xp_openapi_version v, const struct api_review *review)
{
        char path[256], ref[400];

        type_ref(v, review->kind, ref, sizeof ref);
        snprintf(path, sizeof path, "/apis/%s/v1/%s", review->group, review->plural);
        return add_op(paths,
                      path,
                      v,
                      &(struct op){.method = "post",
                                   .action = "post",
                                   .group = review->group,
                                   .kind = review->kind,
                                   .type_ref = ref[0] ? ref : NULL,
                                   .params = {&p_dry_run, &p_field_manager, &p_field_validation}});
}

/* The kinds of group (NULL: every group), for the schemas' x-kubernetes-group-version-kind. */
static size_t
group_kinds(const char *group, const char *version, struct xp_openapi_kind *kinds, size_t max)
{
        size_t n = 0;

        for (size_t i = 0; i < xp_kinds_n && n < max; i++)
                if (!group || (strcmp(xp_kinds[i]->group, group) == 0 &&
                               strcmp(xp_kinds[i]->version, version) == 0))
                        kinds[n++] = (struct xp_openapi_kind){
                            xp_kinds[i]->schema_type ? xp_kinds[i]->schema_type : xp_kinds[i]->kind,
                            xp_kinds[i]->group,
                            xp_kinds[i]->version,
                            xp_kinds[i]->kind};
        for (size_t i = 0; i < api_reviews_n && n < max; i++)
                if (!group ||
                    (strcmp(api_reviews[i].group, group) == 0 && strcmp(version, "v1") == 0))
                        kinds[n++] = (struct xp_openapi_kind){
                            api_reviews[i].kind, api_reviews[i].group, "v1", api_reviews[i].kind};
        return n;
}

/* The paths and schemas of group (NULL: all of them, for v2). NULL without memory. */
static json_t *document(enum xp_openapi_version v, const char *group, const char *version)
{
        struct xp_openapi_kind kinds[64];
        const struct xp_apischema *schema;
        json_t *paths = json_object(), *schemas = NULL;
        size_t n = group_kinds(group, version, kinds, 64);
        int r = paths ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < xp_kinds_n; i++)
                if (!group || (strcmp(xp_kinds[i]->group, group) == 0 &&
                               strcmp(xp_kinds[i]->version, version) == 0))
                        r = kind_paths(paths, v, xp_kinds[i]);
        for (size_t i = 0; r >= 0 && i < api_reviews_n; i++)
                if (!group ||
                    (strcmp(api_reviews[i].group, group) == 0 && strcmp(version, "v1") == 0))
                        r = review_paths(paths, v, &api_reviews[i]);
        if (r >= 0)
                r = xp_apischema_builtin(&schema, NULL);
        if (r >= 0)
                r = xp_openapi_schemas(schema, v, kinds, n, &schemas);
        if (r < 0) {
                json_decref(paths);
                return NULL;
        }
        if (v == XP_OPENAPI_V2)
                return json_pack("{s:s, s:{s:s, s:s}, s:o, s:o}",
                                 "swagger",
                                 "2.0",
                                 "info",
                                 "title",
                                 "Kubernetes",
                                 "version",
                                 "v" KUBE_MAJOR "." KUBE_MINOR ".0-xpool." XPOOL_VERSION,
                                 "paths",
                                 paths,
                                 "definitions",
                                 schemas);
        return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}",
                         "openapi",
                         "3.0.0",
                         "info",
                         "title",
                         "Kubernetes",
                         "version",
                         "v" KUBE_MAJOR "." KUBE_MINOR ".0-xpool." XPOOL_VERSION,
                         "paths",
                         paths,
                         "components",
                         "schemas",
                         schemas);
}

/* FNV-1a of the text, so clients may cache a document by its URL as long as it holds. */
static void text_hash(const char *text, char hash[static 17])
{
        snprintf(hash, 17, "%016llX", (unsigned long long)xp_hash_string(text));
}

static char *dump(json_t *doc)
{
        char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

        json_decref(doc);
        return text;
}

/* The v3 document of one group version (the core group: "" and v1). */
static int make_doc(const char *group, const char *version)
{
        struct openapi_doc *d = &docs.v3[docs.n_v3];

        if (docs.n_v3 == MAX_DOCS)
                return 0;
        d->text = dump(document(XP_OPENAPI_V3, group, version));
        if (!d->text)
                return -ENOMEM;
        if (group[0])
                snprintf(d->key, sizeof d->key, "apis/%s/%s", group, version);
        else
                snprintf(d->key, sizeof d->key, "api/v1");
        text_hash(d->text, d->hash);
        docs.n_v3++;
        return 0;
}

static void make_docs(void)
{
        int r = make_doc("", "v1");

        for (const char *const *g = api_groups(); r >= 0 && *g; g++) {
                const char *versions[API_VERSIONS_MAX];
                size_t n = api_group_versions(*g, versions, API_VERSIONS_MAX);

                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = make_doc(*g, versions[i]);
        }
        docs.v2 = r >= 0 ? dump(document(XP_OPENAPI_V2, NULL, NULL)) : NULL;
        if (!docs.v2)
                docs.error = -ENOMEM;
}

static int documents(void)
{
        pthread_once(&docs.once, make_docs);
        return docs.error;
}

static int reply_text(struct reply *ret, const char *text)
{
        ret->text = strdup(text);
        if (!ret->text)
                return -ENOMEM;
        ret->code = 200;
        ret->content_type = "application/json";
        return 0;
}

/* ---- handlers -------------------------------------------------------------------------------- */

int handle_openapi_v3(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *paths;
        int r = documents();

        (void)req;
        (void)route;
        if (r < 0)
                return r;
        paths = json_object();
        for (size_t i = 0; paths && i < docs.n_v3; i++) {
                char url[256];

                snprintf(
                    url, sizeof url, "/openapi/v3/%s?hash=%s", docs.v3[i].key, docs.v3[i].hash);
                if (json_object_set_new(
                        paths, docs.v3[i].key, json_pack("{s:s}", "serverRelativeURL", url)) < 0) {
                        json_decref(paths);
                        return -ENOMEM;
                }
        }
        return reply_json(ret, 200, json_pack("{s:o}", "paths", paths));
}

int handle_openapi_v3_group(const struct request *req, const struct route *route, struct reply *ret)
{
        char key[128];
        int r = documents();

        (void)route;
        if (r < 0)
                return r;
        if (req->group[0])
                snprintf(key, sizeof key, "apis/%s/%s", req->group, req->version);
        else
                snprintf(key, sizeof key, "api/v1");
        for (size_t i = 0; i < docs.n_v3; i++)
                if (strcmp(docs.v3[i].key, key) == 0)
                        return reply_text(ret, docs.v3[i].text);
        return reply_status(ret,
                            404,
                            "NotFound",
                            NULL,
                            NULL,
                            "the server could not find the requested resource: GET %s",
                            req->path);
}

/*
 * v2 is served as JSON only: a client that accepts nothing but protobuf (kubectl, for the
 * fallback it no longer needs) gets 406 and goes on with what it has.
 */
int handle_openapi_v2(const struct request *req, const struct route *route, struct reply *ret)
{
        const char *accept = request_header(req, "Accept");
        int r;

        (void)route;
        if (accept && accept[0] && !strstr(accept, "application/json") && !strstr(accept, "*/*"))
                return reply_status(ret,
                                    406,
                                    "NotAcceptable",
                                    NULL,
                                    NULL,
                                    "only application/json is served for /openapi/v2, not %.128s",
                                    accept);
        r = documents();
        if (r < 0)
                return r;
        return reply_text(ret, docs.v2);
}
