/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API: discovery documents and the v1 Pod and Node endpoints, as a routes table. Object
 * handlers are shared by every kind through a small ops table (struct kind): decode and validate
 * with the codec, fill in what the server owns (uid, creationTimestamp, defaults), store, answer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"
#include "xpool/codec.h"
#include "xpool/macro.h"
#include "xpool/object.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define KUBE_MAJOR     "1"
#define KUBE_MINOR     "32"
#define GENERATE_CHARS 5
#define UUID_STRING    37

#if defined(__x86_64__)
#define PLATFORM_ARCH "amd64"
#elif defined(__aarch64__)
#define PLATFORM_ARCH "arm64"
#else
#define PLATFORM_ARCH "unknown"
#endif

/* ---- kinds ---------------------------------------------------------------------------------- */

struct kind {
        const char *kind;      /* Pod */
        const char *list_kind; /* PodList */
        const char *plural;    /* pods: URL segment, details.kind, store key */
        const char *singular;
        const char *short_name;
        bool namespaced;
        /* Decodes and validates; *ret_meta points into *ret. */
        int (*decode)(const json_t *json,
                      void **ret,
                      struct xp_object_meta **ret_meta,
                      struct xp_error *err);
        void (*set_defaults)(void *object); /* NULL when none */
        int (*encode)(const void *object, json_t **ret);
        void (*free)(void *object);
};

static int
pod_decode(const json_t *json, void **ret, struct xp_object_meta **ret_meta, struct xp_error *err)
{
        struct xp_pod *pod;
        int r = xp_pod_from_json(json, NULL, 0, &pod, err);

        if (r < 0)
                return r;
        *ret = pod;
        *ret_meta = &pod->metadata;
        return 0;
}

static void pod_set_defaults(void *object)
{
        struct xp_pod *pod = object;

        if (pod->status.phase == XP_POD_PHASE_UNSET)
                pod->status.phase = XP_POD_PENDING;
}

static int pod_encode(const void *object, json_t **ret)
{
        return xp_pod_to_json(object, ret);
}

static void pod_free(void *object)
{
        xp_pod_free(object);
}

static int
node_decode(const json_t *json, void **ret, struct xp_object_meta **ret_meta, struct xp_error *err)
{
        struct xp_node *node;
        int r = xp_node_from_json(json, NULL, 0, &node, err);

        if (r < 0)
                return r;
        *ret = node;
        *ret_meta = &node->metadata;
        return 0;
}

static int node_encode(const void *object, json_t **ret)
{
        return xp_node_to_json(object, ret);
}

static void node_free(void *object)
{
        xp_node_free(object);
}

static const struct kind pod_kind = {
    .kind = "Pod",
    .list_kind = "PodList",
    .plural = "pods",
    .singular = "pod",
    .short_name = "po",
    .namespaced = true,
    .decode = pod_decode,
    .set_defaults = pod_set_defaults,
    .encode = pod_encode,
    .free = pod_free,
};

static const struct kind node_kind = {
    .kind = "Node",
    .list_kind = "NodeList",
    .plural = "nodes",
    .singular = "node",
    .short_name = "no",
    .namespaced = false,
    .decode = node_decode,
    .encode = node_encode,
    .free = node_free,
};

static const struct kind *const kinds[] = {&pod_kind, &node_kind};

/* ---- helpers -------------------------------------------------------------------------------- */

static int reply_json(struct reply *ret, unsigned code, json_t *body)
{
        if (!body)
                return -ENOMEM;
        json_decref(ret->body);
        ret->code = code;
        ret->body = body;
        return 0;
}

static int random_bytes(void *buf, size_t n)
{
        ssize_t got = getrandom(buf, n, 0);

        if (got < 0)
                return -errno;
        return (size_t)got == n ? 0 : -EIO;
}

/* A random (version 4) UUID, as Kubernetes gives every object. */
static int uuid_v4(char buf[static UUID_STRING])
{
        uint8_t b[16];
        int r = random_bytes(b, sizeof b);

        if (r < 0)
                return r;
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        snprintf(buf,
                 UUID_STRING,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0],
                 b[1],
                 b[2],
                 b[3],
                 b[4],
                 b[5],
                 b[6],
                 b[7],
                 b[8],
                 b[9],
                 b[10],
                 b[11],
                 b[12],
                 b[13],
                 b[14],
                 b[15]);
        return 0;
}

/* generateName plus five random characters from Kubernetes' alphabet (no vowels, no 0/1/3). */
static int generate_name(const char *prefix, char **ret)
{
        static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
        uint8_t b[GENERATE_CHARS];
        char suffix[GENERATE_CHARS + 1];
        int r = random_bytes(b, sizeof b);

        if (r < 0)
                return r;
        for (size_t i = 0; i < GENERATE_CHARS; i++)
                suffix[i] = alphabet[b[i] % (sizeof alphabet - 1)];
        suffix[GENERATE_CHARS] = '\0';
        if (asprintf(ret, "%s%s", prefix, suffix) < 0)
                return -ENOMEM;
        return 0;
}

static int replace_string(char **field, const char *value)
{
        char *copy = NULL;

        if (value) {
                copy = strdup(value);
                if (!copy)
                        return -ENOMEM;
        }
        free(*field);
        *field = copy;
        return 0;
}

/* A resourceVersion as the store writes it: a positive decimal. */
static bool parse_version(const char *text, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (!text || text[0] < '0' || text[0] > '9')
                return false;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || *end != '\0' || v == 0)
                return false;
        *ret = v;
        return true;
}

/* Maps a store error to the Status Kubernetes answers with. */
static int reply_store_error(
    struct reply *ret, int r, const struct kind *kind, const char *name, const struct xp_error *err)
{
        switch (r) {
        case -ENOENT:
                return reply_status(ret,
                                    404,
                                    "NotFound",
                                    name,
                                    kind->plural,
                                    "%s \"%s\" not found",
                                    kind->plural,
                                    name);
        case -EEXIST:
                return reply_status(ret,
                                    409,
                                    "AlreadyExists",
                                    name,
                                    kind->plural,
                                    "%s \"%s\" already exists",
                                    kind->plural,
                                    name);
        case -ESTALE:
                return reply_status(
                    ret,
                    409,
                    "Conflict",
                    name,
                    kind->plural,
                    "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please apply your changes to the latest version and try again",
                    kind->plural,
                    name);
        case -EINVAL:
                return reply_status(
                    ret, 400, "BadRequest", name, kind->plural, "%s", xp_error_message(err));
        case -E2BIG:
                return reply_status(ret,
                                    413,
                                    "RequestEntityTooLarge",
                                    name,
                                    kind->plural,
                                    "%s",
                                    xp_error_message(err));
        default:
                return reply_status(ret,
                                    500,
                                    "InternalError",
                                    name,
                                    kind->plural,
                                    "Internal error occurred: %s",
                                    xp_error_message(err));
        }
}

/*
 * Parses a request body into a validated object of the route's kind: 400 BadRequest for what is
 * not JSON or not this kind, 422 Invalid (with the field path) for what fails validation.
 * Returns 1 with *ret_object set, or 0 with ret filled with the Status.
 */
static int decode_body(const struct request *req,
                       const struct kind *kind,
                       void **ret_object,
                       struct xp_object_meta **ret_meta,
                       struct reply *ret)
{
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *json, *member;
        const char *name = NULL;
        int r;

        json = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json)
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    NULL,
                                    kind->plural,
                                    "the request body is not valid JSON: %d:%d: %s",
                                    jerr.line,
                                    jerr.column,
                                    jerr.text);
        if (!json_is_object(json)) {
                json_decref(json);
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    NULL,
                                    kind->plural,
                                    "the request body must be a JSON object (a %s)",
                                    kind->kind);
        }
        member = json_object_get(json, "kind");
        if (member &&
            !(json_is_string(member) && strcmp(json_string_value(member), kind->kind) == 0)) {
                json_decref(json);
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    NULL,
                    kind->plural,
                    "the kind in the request body does not match the resource: expected %s",
                    kind->kind);
        }
        member = json_object_get(json, "apiVersion");
        if (member && !(json_is_string(member) && strcmp(json_string_value(member), "v1") == 0)) {
                json_decref(json);
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    NULL,
                    kind->plural,
                    "the API version in the request body does not match the resource: expected v1");
        }
        name = json_string_value(json_object_get(json_object_get(json, "metadata"), "name"));

        r = kind->decode(json, ret_object, ret_meta, &err);
        if (r < 0) {
                r = reply_status(ret,
                                 422,
                                 "Invalid",
                                 name,
                                 kind->kind,
                                 "%s \"%s\" is invalid: %s",
                                 kind->kind,
                                 name ? name : "",
                                 xp_error_message(&err));
                json_decref(json);
                return r;
        }
        json_decref(json);
        return 1;
}

/*
 * The namespace an object must have: the path's (an empty one in the body is filled in, another
 * one is 400 as Kubernetes answers), none for cluster-scoped kinds. 1 when fine, else 0 with ret
 * filled.
 */
static int settle_namespace(const struct request *req,
                            const struct kind *kind,
                            struct xp_object_meta *meta,
                            struct reply *ret)
{
        if (!kind->namespaced)
                return replace_string(&meta->namespace, NULL) < 0 ? -ENOMEM : 1;
        if (meta->namespace && meta->namespace[0] && strcmp(meta->namespace, req->namespace) != 0)
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    meta->name,
                    kind->plural,
                    "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)",
                    meta->namespace,
                    req->namespace);
        return replace_string(&meta->namespace, req->namespace) < 0 ? -ENOMEM : 1;
}

static const char *store_namespace(const struct request *req, const struct kind *kind)
{
        return kind->namespaced ? req->namespace : "";
}

/* ---- discovery ------------------------------------------------------------------------------ */

static int handle_version(const struct request *req, const void *data, struct reply *ret)
{
        (void)req;
        (void)data;
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
                                    "major",
                                    KUBE_MAJOR,
                                    "minor",
                                    KUBE_MINOR,
                                    "gitVersion",
                                    "v" KUBE_MAJOR "." KUBE_MINOR ".0-xpool." XPOOL_VERSION,
                                    "gitCommit",
                                    "",
                                    "gitTreeState",
                                    "clean",
                                    "buildDate",
                                    "1970-01-01T00:00:00Z",
                                    "goVersion",
                                    "",
                                    "compiler",
                                    "xpool",
                                    "platform",
                                    "linux/" PLATFORM_ARCH));
}

static int handle_api(const struct request *req, const void *data, struct reply *ret)
{
        (void)data;
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:[s], s:[{s:s, s:s}]}",
                                    "kind",
                                    "APIVersions",
                                    "versions",
                                    "v1",
                                    "serverAddressByClientCIDRs",
                                    "clientCIDR",
                                    "0.0.0.0/0",
                                    "serverAddress",
                                    req->server_address));
}

static int handle_apis(const struct request *req, const void *data, struct reply *ret)
{
        (void)req;
        (void)data;
        return reply_json(
            ret,
            200,
            json_pack("{s:s, s:s, s:[]}", "kind", "APIGroupList", "apiVersion", "v1", "groups"));
}

static int handle_api_v1(const struct request *req, const void *data, struct reply *ret)
{
        json_t *resources = json_array();

        (void)req;
        (void)data;
        if (!resources)
                return -ENOMEM;
        for (size_t i = 0; i < XP_ELEMENTSOF(kinds); i++) {
                const struct kind *k = kinds[i];
                json_t *resource = json_pack("{s:s, s:s, s:b, s:s, s:[s, s, s, s, s], s:[s]}",
                                             "name",
                                             k->plural,
                                             "singularName",
                                             k->singular,
                                             "namespaced",
                                             k->namespaced,
                                             "kind",
                                             k->kind,
                                             "verbs",
                                             "create",
                                             "delete",
                                             "get",
                                             "list",
                                             "update",
                                             "shortNames",
                                             k->short_name);

                if (!resource || json_array_append_new(resources, resource) < 0) {
                        json_decref(resources);
                        return -ENOMEM;
                }
        }
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:s, s:o}",
                                    "kind",
                                    "APIResourceList",
                                    "apiVersion",
                                    "v1",
                                    "groupVersion",
                                    "v1",
                                    "resources",
                                    resources));
}

/* ---- objects -------------------------------------------------------------------------------- */

static int handle_create(const struct request *req, const void *data, struct reply *ret)
{
        const struct kind *kind = data;
        struct xp_error err = {0};
        struct xp_object_meta *meta;
        void *object = NULL;
        json_t *json = NULL;
        char uid[UUID_STRING];
        uint64_t version;
        int r;

        r = decode_body(req, kind, &object, &meta, ret);
        if (r <= 0)
                return r;
        r = settle_namespace(req, kind, meta, ret);
        if (r <= 0)
                goto out;
        if (!meta->name || !meta->name[0]) {
                /* validation already required name or generateName */
                r = generate_name(meta->generate_name ? meta->generate_name : "", &meta->name);
                if (r < 0)
                        goto out;
        }
        r = uuid_v4(uid);
        if (r < 0)
                goto out;
        r = replace_string(&meta->uid, uid);
        if (r < 0)
                goto out;
        r = replace_string(&meta->resource_version, NULL); /* the store sets it */
        if (r < 0)
                goto out;
        meta->creation_timestamp = time(NULL);
        if (kind->set_defaults)
                kind->set_defaults(object);
        r = kind->encode(object, &json);
        if (r < 0) {
                r = reply_status(ret,
                                 422,
                                 "Invalid",
                                 meta->name,
                                 kind->kind,
                                 "%s \"%s\" cannot be encoded: %s",
                                 kind->kind,
                                 meta->name,
                                 strerror(-r));
                goto out;
        }
        r = xp_store_create(
            req->store, kind->plural, store_namespace(req, kind), meta->name, json, &version, &err);
        if (r < 0) {
                r = reply_store_error(ret, r, kind, meta->name, &err);
                goto out;
        }
        r = reply_json(ret, 201, TAKE_PTR(json));
out:
        json_decref(json);
        kind->free(object);
        return r;
}

static int handle_get(const struct request *req, const void *data, struct reply *ret)
{
        const struct kind *kind = data;
        struct xp_error err = {0};
        json_t *json;
        uint64_t version;
        int r;

        r = xp_store_get(
            req->store, kind->plural, store_namespace(req, kind), req->name, &json, &version, &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return reply_json(ret, 200, json);
}

static int handle_list(const struct request *req, const void *data, struct reply *ret)
{
        const struct kind *kind = data;
        struct xp_error err = {0};
        char rv[32];
        json_t *items;
        uint64_t version;
        int r;

        /* /api/v1/pods lists every namespace: no {namespace} in the route */
        r = xp_store_list(req->store,
                          kind->plural,
                          kind->namespaced ? req->namespace : "",
                          &items,
                          &version,
                          &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, NULL, &err);
        snprintf(rv, sizeof rv, "%" PRIu64, version);
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:{s:s}, s:o}",
                                    "kind",
                                    kind->list_kind,
                                    "apiVersion",
                                    "v1",
                                    "metadata",
                                    "resourceVersion",
                                    rv,
                                    "items",
                                    items));
}

static int handle_update(const struct request *req, const void *data, struct reply *ret)
{
        const struct kind *kind = data;
        struct xp_error err = {0};
        struct xp_object_meta *meta;
        void *object = NULL;
        json_t *json = NULL, *stored = NULL, *stored_meta;
        uint64_t expected, version;
        const char *uid, *created;
        int r;

        r = decode_body(req, kind, &object, &meta, ret);
        if (r <= 0)
                return r;
        r = settle_namespace(req, kind, meta, ret);
        if (r <= 0)
                goto out;
        if (!meta->name || strcmp(meta->name, req->name) != 0) {
                r = reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    kind->plural,
                    "the name of the object (%s) does not match the name on the URL (%s)",
                    meta->name ? meta->name : "",
                    req->name);
                goto out;
        }
        /* 404 before any check of the body against the stored object, as Kubernetes. */
        r = xp_store_get(req->store,
                         kind->plural,
                         store_namespace(req, kind),
                         req->name,
                         &stored,
                         &version,
                         &err);
        if (r < 0) {
                r = reply_store_error(ret, r, kind, req->name, &err);
                goto out;
        }
        /* Kubernetes requires the version an update is based on: no blind overwrites. */
        if (!meta->resource_version || !meta->resource_version[0]) {
                r = reply_status(
                    ret,
                    422,
                    "Invalid",
                    req->name,
                    kind->kind,
                    "%s \"%s\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                    kind->kind,
                    req->name);
                goto out;
        }
        if (!parse_version(meta->resource_version, &expected)) {
                r = reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    kind->plural,
                    "metadata.resourceVersion: \"%s\" is not a resource version this server wrote",
                    meta->resource_version);
                goto out;
        }

        /* uid and creationTimestamp belong to the server: keep the stored ones. */
        stored_meta = json_object_get(stored, "metadata");
        uid = json_string_value(json_object_get(stored_meta, "uid"));
        if (meta->uid && meta->uid[0] && !xp_streq0(meta->uid, uid)) {
                r = reply_status(
                    ret,
                    409,
                    "Conflict",
                    req->name,
                    kind->plural,
                    "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                    meta->uid,
                    uid ? uid : "");
                goto out;
        }
        r = replace_string(&meta->uid, uid);
        if (r < 0)
                goto out;
        created = json_string_value(json_object_get(stored_meta, "creationTimestamp"));
        if (!created || xp_time_parse_rfc3339(created, &meta->creation_timestamp) < 0)
                meta->creation_timestamp = 0;
        r = replace_string(&meta->resource_version, NULL);
        if (r < 0)
                goto out;
        if (kind->set_defaults)
                kind->set_defaults(object);
        r = kind->encode(object, &json);
        if (r < 0) {
                r = reply_status(ret,
                                 422,
                                 "Invalid",
                                 req->name,
                                 kind->kind,
                                 "%s \"%s\" cannot be encoded: %s",
                                 kind->kind,
                                 req->name,
                                 strerror(-r));
                goto out;
        }
        r = xp_store_update(req->store,
                            kind->plural,
                            store_namespace(req, kind),
                            req->name,
                            expected,
                            json,
                            &version,
                            &err);
        if (r < 0) {
                r = reply_store_error(ret, r, kind, req->name, &err);
                goto out;
        }
        r = reply_json(ret, 200, TAKE_PTR(json));
out:
        json_decref(stored);
        json_decref(json);
        kind->free(object);
        return r;
}

static int handle_delete(const struct request *req, const void *data, struct reply *ret)
{
        const struct kind *kind = data;
        struct xp_error err = {0};
        json_t *last;
        uint64_t version;
        int r;

        r = xp_store_delete(req->store,
                            kind->plural,
                            store_namespace(req, kind),
                            req->name,
                            0,
                            &last,
                            &version,
                            &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return reply_json(ret, 200, last);
}

/* ---- the routes ----------------------------------------------------------------------------- */

#define OBJECT_ROUTES(collection, item, k)                                                         \
        {.method = HTTP_GET, .pattern = collection, .handler = handle_list, .data = k},            \
            {.method = HTTP_POST, .pattern = collection, .handler = handle_create, .data = k},     \
            {.method = HTTP_GET, .pattern = item, .handler = handle_get, .data = k},               \
            {.method = HTTP_PUT, .pattern = item, .handler = handle_update, .data = k},            \
        {                                                                                          \
                .method = HTTP_DELETE, .pattern = item, .handler = handle_delete, .data = k        \
        }

const struct route api_routes[] = {
    {.method = HTTP_GET, .pattern = "/version", .handler = handle_version},
    {.method = HTTP_GET, .pattern = "/api", .handler = handle_api},
    {.method = HTTP_GET, .pattern = "/api/v1", .handler = handle_api_v1},
    {.method = HTTP_GET, .pattern = "/apis", .handler = handle_apis},
    {.method = HTTP_GET, .pattern = "/api/v1/pods", .handler = handle_list, .data = &pod_kind},
    OBJECT_ROUTES("/api/v1/namespaces/{namespace}/pods",
                  "/api/v1/namespaces/{namespace}/pods/{name}",
                  &pod_kind),
    OBJECT_ROUTES("/api/v1/nodes", "/api/v1/nodes/{name}", &node_kind),
};

const size_t api_routes_n = XP_ELEMENTSOF(api_routes);
