/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object endpoints, one set of handlers for every kind (xpool/kind.h): create, get, list
 * (selectors, Tables; ?watch=true hands over to api_watch.c), update, patch, delete, and the
 * status subresource.
 *
 * Objects travel as JSON; every write is decoded and validated through the kind's codec, then
 * the server sets what it owns (uid, creationTimestamp, resourceVersion, defaults) and encodes
 * it again, so the store only ever holds objects that passed validation, in canonical form.
 *
 * Status: for kinds with a status subresource, writes to the main resource keep the stored
 * status and writes to /status change only the status, as in Kubernetes: the agent owns a pod's
 * status, the user its spec.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "admission.h"
#include "internal.h"
#include "xpool/doc.h"
#include "xpool/jsonread.h"
#include "xpool/macro.h"
#include "xpool/patch.h"
#include "xpool/poddefaults.h"
#include "xpool/priority.h"
#include "xpool/protobuf.h"
#include "xpool/selector.h"
#include "xpool/strutil.h"
#include "xpool/table.h"
#include "xpool/timeutil.h"

#define PATCH_ATTEMPTS 64 /* as Kubernetes, a patch without a version retries until it lands */

/* ---- small helpers -------------------------------------------------------------------------- */

static bool is_subresource(const struct route *route, const char *name)
{
        return route->subresource && strcmp(route->subresource, name) == 0;
}

/* Sets (a copy of) value as member key of object, or removes the member when value is NULL. */
static int set_member(json_t *object, const char *key, const json_t *value)
{
        if (!value)
                return json_object_del(object, key), 0;
        return json_object_set_new(object, key, json_deep_copy(value)) < 0 ? -ENOMEM : 0;
}

static json_t *metadata_of(const json_t *object)
{
        return json_object_get(object, "metadata");
}

/* ?fieldValidation=Strict|Warn|Ignore: 1 with the decode flags, else 0 with ret filled. */
static int decode_flags(const struct request *req, unsigned *ret_flags, struct reply *ret)
{
        const char *v = request_query(req, "fieldValidation");

        if (!v || !v[0] || strcmp(v, "Ignore") == 0 || strcmp(v, "Warn") == 0) {
                *ret_flags = 0;
                return 1;
        }
        if (strcmp(v, "Strict") == 0) {
                *ret_flags = XP_DECODE_STRICT;
                return 1;
        }
        return reply_status(ret,
                            400,
                            "BadRequest",
                            NULL,
                            NULL,
                            "fieldValidation: Invalid value: %s: expected Ignore, Warn or Strict",
                            xp_quote(v, (char[XP_QUOTE_MAX]){0}));
}

/* ?dryRun=All: 1 with *ret_dry set, 0 with ret filled for any other value. */
static int dry_run(const struct request *req, bool *ret_dry, struct reply *ret)
{
        const char *v = request_query(req, "dryRun");

        *ret_dry = v && strcmp(v, "All") == 0;
        if (!v || !v[0] || *ret_dry)
                return 1;
        return reply_status(ret,
                            400,
                            "BadRequest",
                            NULL,
                            NULL,
                            "dryRun: Invalid value: %s: the only dry-run mode is All",
                            xp_quote(v, (char[XP_QUOTE_MAX]){0}));
}

/*
 * Parses a request body (JSON, or Kubernetes protobuf read into JSON) into a JSON object of the
 * route's kind: 415 for other media types and protobuf we cannot read, 400 BadRequest for what is
 * not JSON or names another kind. 1 with *ret_json set (and *ret_depth, when not NULL, how deep it
 * nests: UINT_MAX when not counted), or 0 with ret filled.
 */
static int parse_body(const struct request *req,
                      const struct xp_kind *kind,
                      json_t **ret_json,
                      unsigned *ret_depth,
                      struct reply *ret)
{
        const char *content_type = request_header(req, "Content-Type");
        json_error_t jerr;
        json_t *json, *member;
        unsigned depth = UINT_MAX;

        if (!ret_depth)
                ret_depth = &depth;
        *ret_depth = UINT_MAX;
        /* kubectl's typed commands (create namespace) and client-go send Kubernetes protobuf. */
        if (content_type &&
            strncasecmp(content_type, "application/vnd.kubernetes.protobuf", 35) == 0) {
                struct xp_error err = {0};

                json = NULL;
                if (xp_protobuf_to_json(req->body, req->body_len, &json, &err) < 0)
                        return reply_status(ret,
                                            415,
                                            "UnsupportedMediaType",
                                            NULL,
                                            kind->plural,
                                            "the protobuf request body could not be read: %s",
                                            xp_error_message(&err));
        } else if (content_type && content_type[0] &&
                   strncasecmp(content_type, "application/json", 16) != 0) {
                return reply_status(
                    ret,
                    415,
                    "UnsupportedMediaType",
                    NULL,
                    kind->plural,
                    "the body of the request was in an unknown format (%.64s) - accepted media types include: application/json, application/vnd.kubernetes.protobuf",
                    content_type);
        } else if (xp_json_read_object_depth(req->body, req->body_len, &json, ret_depth) < 0) {
                /* what the fast reader leaves (xpool/jsonread.h), jansson reads, or says why not */
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
        }
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
        if (member && !(json_is_string(member) &&
                        strcmp(json_string_value(member), kind->api_version) == 0)) {
                json_decref(json);
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    NULL,
                    kind->plural,
                    "the API version in the request body does not match the resource: expected %s",
                    kind->api_version);
        }
        *ret_json = json;
        return 1;
}

/* The answer to a write through a version other than the stored one (xp_kind.answer_as). */
static int
answer_as(struct reply *ret, unsigned code, const struct xp_kind *kind, const json_t *out)
{
        json_t *shown = NULL;
        int r = kind->answer_as(out, &shown);

        return r < 0 ? r : reply_json(ret, code, shown);
}

/* internal.h */
int shown_as(const struct xp_kind *kind, json_t **object)
{
        json_t *shown = NULL;
        int r;

        if (!kind->answer_as)
                return 0;
        r = kind->answer_as(*object, &shown);
        if (r < 0)
                return r;
        json_decref(*object);
        *object = shown;
        return 0;
}

/* stored as kind's version shows it (a new reference; NULL without memory): what a write through
 * that version is decoded with (autoscaling/v1 of a stored v2 HPA: v2 members fail v1's strict
 * decoding, and are not v1's to convert back). */
static json_t *stored_shown(const struct xp_kind *kind, const json_t *stored)
{
        json_t *shown = json_incref((json_t *)stored);

        if (shown_as(kind, &shown) < 0) {
                json_decref(shown);
                return NULL;
        }
        return shown;
}

/* candidate (an update of the object, not of its status) keeps stored's status, as the version
 * written shows it. 0 or -ENOMEM. */
static int keep_status(const struct xp_kind *kind, const json_t *stored, json_t *candidate)
{
        json_t *shown = stored_shown(kind, stored);
        int r = shown ? set_member(candidate, "status", json_object_get(shown, "status")) : -1;

        json_decref(shown);
        return r < 0 ? -ENOMEM : 0;
}

/* Decodes and validates: 1 with *ret_object, or 0 with ret filled (422 Invalid). */

static int check_object(const struct xp_kind *kind,
                        const json_t *json,
                        unsigned flags,
                        void **ret_object,
                        struct reply *ret)
{
        struct xp_error err = {0};
        int r = kind->from_json(json, NULL, flags, ret_object, &err);
        const char *name;

        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* looked up for the message only: two lookups a create otherwise */
                name = json_string_value(json_object_get(metadata_of(json), "name"));
                if (!name || !name[0])
                        name =
                            json_string_value(json_object_get(metadata_of(json), "generateName"));
                return reply_invalid(ret, kind, name, xp_error_message(&err));
        }
        return 1;
}

/*
 * The namespace an object must have: the path's (an empty one in the body is filled in, another
 * one is 400 as Kubernetes answers), none for cluster-scoped kinds. 1 when fine, else 0 with ret
 * filled.
 */
static int settle_namespace(const struct request *req,
                            const struct xp_kind *kind,
                            json_t *json,
                            struct reply *ret)
{
        json_t *meta = metadata_of(json);
        const char *ns;

        if (!json_is_object(meta))
                return 1; /* validation reports it */
        if (!kind->namespaced) {
                json_object_del(meta, "namespace");
                return 1;
        }
        ns = json_string_value(json_object_get(meta, "namespace"));
        if (ns && ns[0] && strcmp(ns, req->namespace) != 0)
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    json_string_value(json_object_get(meta, "name")),
                    kind->plural,
                    "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)",
                    ns,
                    req->namespace);
        /* a create settles it twice (begin_write(), create_json()): the second finds it set */
        if (ns && strcmp(ns, req->namespace) == 0)
                return 1;
        return json_object_set_new(meta, "namespace", json_string(req->namespace)) < 0 ? -ENOMEM
                                                                                       : 1;
}

/*
 * What a create and an update start with: ?fieldValidation, ?dryRun, the body as an object of the
 * kind, in the request's namespace. 1 with the three set, else 0 with ret filled.
 */
static int begin_write(const struct request *req,
                       const struct xp_kind *kind,
                       unsigned *ret_flags,
                       bool *ret_dry,
                       json_t **ret_json,
                       unsigned *ret_depth,
                       struct reply *ret)
{
        json_t *json;
        int r;

        r = decode_flags(req, ret_flags, ret);
        if (r <= 0)
                return r;
        r = dry_run(req, ret_dry, ret);
        if (r <= 0)
                return r;
        r = parse_body(req, kind, &json, ret_depth, ret);
        if (r <= 0)
                return r;
        r = settle_namespace(req, kind, json, ret);
        if (r <= 0) {
                json_decref(json);
                return r;
        }
        *ret_json = json;
        return 1;
}

static bool is_pods(const struct xp_kind *kind)
{
        return strcmp(kind->plural, "pods") == 0;
}

/* The stored object the request names: 1 with it (and its version), else 0 with ret filled. */
static int read_stored(const struct request *req,
                       const struct xp_kind *kind,
                       json_t **ret_stored,
                       uint64_t *ret_version,
                       struct reply *ret)
{
        struct xp_error err = {0};
        int r;

        /* the authorisation's read of this pod, taken once: a retry after a conflict reads */
        if (req->prefetched && req->prefetched->pod && is_pods(kind)) {
                *ret_stored = TAKE_PTR(req->prefetched->pod);
                *ret_version = req->prefetched->version;
                return 1;
        }
        r = xp_store_get(req->api->store,
                         kind->plural,
                         store_namespace(req, kind),
                         req->name,
                         ret_stored,
                         ret_version,
                         &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return 1;
}

/*
 * Kubernetes' defaults of a pod's JSON, before it is decoded and validated (xpool/poddefaults.h);
 * stored is the pod an update replaces (NULL for a create).
 */
static int pod_defaults(const struct request *req, json_t *pod, const json_t *stored)
{
        const struct xp_pod_defaults options = {
            .toleration_seconds = req->api->pod_toleration_seconds,
            .old = stored,
        };

        return xp_pod_defaults_apply(pod, &options);
}

/* ---- tables --------------------------------------------------------------------------------- */

/* ?includeObject=None|Metadata|Object: 1 with the mode, 0 with ret filled. */
static int
table_include(const struct request *req, enum xp_table_include *ret_include, struct reply *ret)
{
        const char *v = request_query(req, "includeObject");

        if (!table_include_parse(v, ret_include))
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    NULL,
                    NULL,
                    "includeObject: Invalid value: %s: expected None, Metadata or Object",
                    xp_quote(v, (char[XP_QUOTE_MAX]){0}));
        return 1;
}

/* Answers items (a JSON array; taken) as a Table of kind. */
static int reply_table(const struct request *req,
                       const struct xp_kind *kind,
                       json_t *items,
                       const char *list_version,
                       struct reply *ret)
{
        enum xp_table_include include;
        json_t *table = NULL;
        int r;

        r = table_include(req, &include, ret);
        if (r <= 0) {
                json_decref(items);
                return r;
        }
        r = xp_table_build(kind->kind, items, list_version, time(NULL), include, &table);
        json_decref(items);
        if (r < 0)
                return r;
        return reply_json(ret, 200, table);
}

/* ---- create --------------------------------------------------------------------------------- */

/* The handler's admission rules (admission.h) as the registry calls them on a create. */
struct admit_ctx {
        const struct request *req;
        const struct xp_kind *kind;
        struct reply *ret;
};

static int admit_create(void *userdata, const json_t *object)
{
        struct admit_ctx *c = userdata;
        int r = admission_check(c->req, c->kind, NULL, 0, object, c->ret);

        /* quotas last, as Kubernetes' ResourceQuota: what they count is defaulted by now */
        if (r > 0 && is_pods(c->kind))
                r = admission_quota(c->req, object, c->ret); /* admission_quota.c */
        else if (r > 0 && c->kind->namespaced)
                r = admission_object_quota(c->req, c->kind, object, c->ret);
        return r;
}

/*
 * How deep a create's body may nest for its decode to skip the walk that bounds the object's
 * nesting (XP_DECODE_SHALLOW): what create_json() adds keeps the object within
 * XP_OBJECT_MAX_DEPTH. Its admission adds members of fixed shapes (the kube-api-access volume,
 * the deepest, nests 11 levels), and metadata.managedFields a field set of the object four levels
 * down, one level per level of the object and one more for a leaf's {}: at most
 * SHALLOW_BODY_DEPTH + 5.
 */
#define SHALLOW_BODY_DEPTH 64
_Static_assert(SHALLOW_BODY_DEPTH + 5 <= XP_OBJECT_MAX_DEPTH, "a shallow body stays in bounds");

int handle_create(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *json = NULL;
        unsigned flags, depth;
        bool dry;
        int r;

        r = begin_write(req, route->kind, &flags, &dry, &json, &depth, ret);
        if (r <= 0)
                return r;
        if (depth <= SHALLOW_BODY_DEPTH)
                flags |= XP_DECODE_SHALLOW;
        return create_json(req, route->kind, json, flags, dry, ret);
}

int create_json(const struct request *req,
                const struct xp_kind *kind,
                json_t *json,
                unsigned flags,
                bool dry,
                struct reply *ret)
{
        struct xp_error err = {0};
        void *object = NULL;
        json_t *out = NULL;
        char *text = NULL, *name = NULL;
        bool locked = false;
        int r;

        r = settle_namespace(req, kind, json, ret);
        /* before the namespace's hold: making `default` holds it too */
        if (r > 0 && is_pods(kind))
                r = admission_serviceaccount(req, json);
        if (r <= 0) {
                json_decref(json);
                return r;
        }
        r = namespace_check(req, kind, ret);
        if (r <= 0)
                goto out;
        locked = true;
        /* A new pod starts Pending whatever its author wrote: the agent owns its status. */
        if (is_pods(kind)) {
                json_object_del(json, "status");
                r = admission_pod(req, json, ret); /* admission_quota.c */
                if (r <= 0)
                        goto out;
        }
        if (kind == &xp_kind_service) {
                r = service_admit(req, json, ret); /* api_service.c: its cluster IP */
                if (r > 0)
                        r = service_node_ports(req, NULL, json, ret); /* api_nodeport.c */
                if (r <= 0)
                        goto out;
        }
        /* a document kind's status is its controllers': Kubernetes' PrepareForCreate resets it
         * to the zero status, which its JSON writes as {} (a client reads .status of a new Job) */
        if (kind->status_subresource && kind->free == xp_doc_free_any &&
            json_object_set_new(json, "status", json_object()) < 0) {
                r = -ENOMEM;
                goto out;
        }
        r = managed_fields_record(req, kind, NULL, json);
        /* json is not changed once decoded: what the model keeps unknown it may share */
        /* the model's strings are encoded again as the body's nodes, not new ones (until _end,
         * which the registry calls once the stored tree is encoded) */
        xp_codec_body_begin();
        if (r >= 0)
                r = check_object(kind, json, flags | XP_DECODE_SHARE, &object, ret);
        /* Freed while its nodes are still in the cache, not after the commit's wait: what the
         * model keeps of it, it holds references to. */
        json_decref(TAKE_PTR(json));
        if (r <= 0)
                goto out;
        r = xp_registry_create_text(
            req->api->registry,
            kind,
            store_namespace(req, kind),
            &object,
            &(struct xp_registry_admit){
                .check = admit_create,
                .userdata = &(struct admit_ctx){.req = req, .kind = kind, .ret = ret}},
            dry,
            &out,
            &text,
            &name,
            &err);
        if (r == -ENOMEM || r == 0)
                goto out;
        if (r < 0)
                r = reply_store_error(ret, r, kind, object ? kind->meta(object)->name : name, &err);
        else if (kind->answer_as) /* written through another version than stored */
                r = answer_as(ret, 201, kind, out);
        else
                r = reply_written(ret, 201, &text, &out);
out:
        xp_codec_body_end();
        if (locked)
                namespace_release(req, kind);
        json_decref(json);
        free(text);
        free(name);
        json_decref(out);
        if (object)
                kind->free(object);
        return r;
}

/* ---- get and list --------------------------------------------------------------------------- */

int handle_get(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        struct xp_error err = {0};
        json_t *json;
        uint64_t version;
        int r;

        r = wait_fresh(req, request_query(req, "resourceVersion"), ret);
        if (r <= 0)
                return r;
        r = xp_store_get(req->api->store,
                         kind->plural,
                         store_namespace(req, kind),
                         req->name,
                         &json,
                         &version,
                         &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        if (request_wants_table(req) && !route->subresource) {
                json_t *items = json_array();

                if (!items || json_array_append_new(items, json) < 0) {
                        json_decref(items);
                        return -ENOMEM;
                }
                return reply_table(req, kind, items, NULL, ret);
        }
        r = shown_as(kind, &json);
        if (r < 0) {
                json_decref(json);
                return r;
        }
        return reply_json(ret, 200, json);
}

/* The items that match the selectors (items taken). */
static int list_filter(const struct request *req,
                       const struct xp_kind *kind,
                       json_t *items,
                       json_t **ret_kept,
                       bool *ret_filtered,
                       struct reply *ret)
{
        struct xp_label_selector *labels = NULL;
        struct xp_field_selector *fields = NULL;
        json_t *kept = NULL, *item;
        size_t i;
        int r;

        r = selectors_parse(req, kind, &labels, &fields, ret);
        if (r <= 0) {
                json_decref(items);
                return r;
        }
        *ret_filtered = !xp_label_selector_is_empty(labels) || !xp_field_selector_is_empty(fields);
        if (!*ret_filtered) {
                kept = TAKE_PTR(items);
        } else {
                kept = json_array();
                json_array_foreach(items, i, item) if (kept &&
                                                       selectors_match(labels, fields, item) &&
                                                       json_array_append(kept, item) < 0)
                {
                        json_decref(kept);
                        kept = NULL;
                }
        }
        json_decref(items);
        xp_label_selector_free(labels);
        xp_field_selector_free(fields);
        if (!kept)
                return -ENOMEM;
        *ret_kept = kept;
        return 1;
}

/* ListMeta: resourceVersion, continue, remainingItemCount (not counted under selectors). */
static json_t *list_meta(const char *rv, const char *next, int64_t remaining, bool filtered)
{
        json_t *meta = json_pack("{s:s}", "resourceVersion", rv);

        if (meta && next && json_object_set_new(meta, "continue", json_string(next)) < 0)
                return json_decref(meta), NULL;
        if (meta && next && !filtered &&
            json_object_set_new(meta, "remainingItemCount", json_integer(remaining)) < 0)
                return json_decref(meta), NULL;
        return meta;
}

int handle_list(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        struct list_options options;
        json_t *items = NULL, *kept = NULL, *page = NULL, *meta, *metadata_texts = NULL;
        char rv[24], *next = NULL;
        bool filtered = false, answered = false;
        int64_t remaining;
        uint64_t version;
        int r;

        if (request_is_watch(req))
                return watch_start(req, route, ret);
        r = list_options_parse(req, kind, false, &options, ret);
        if (r > 0)
                r = list_text(req, kind, &options, &answered, ret);
        if (answered)
                return r;
        if (r > 0)
                r = list_table_read(
                    req, kind, &options, &kept, &version, &filtered, &metadata_texts, ret);
        if (r > 1)
                r = list_read(req, kind, &options, &items, &version, ret);
        if (r > 0 && !kept)
                r = list_filter(req, kind, TAKE_PTR(items), &kept, &filtered, ret);
        if (r > 0)
                r = list_page(kind, &options, kept, version, &page, &next, &remaining);
        json_decref(kept);
        if (r < 0 || (r == 0 && !page))
                goto out;
        xp_registry_version_format(version, rv);
        meta = list_meta(rv, next, remaining, filtered);
        if (!meta) {
                r = -ENOMEM;
                goto out;
        }
        if (metadata_texts) {
                r = reply_table_text(kind, page, meta, metadata_texts, ret);
                json_decref(meta);
                goto out;
        }
        if (request_wants_table(req)) {
                r = reply_table(req, kind, TAKE_PTR(page), rv, ret);
                /* the Table's ListMeta pages as the list's does */
                if (r >= 0 && ret->body && json_is_object(json_object_get(ret->body, "metadata")))
                        json_object_set(ret->body, "metadata", meta);
                json_decref(meta);
                goto out;
        }
        for (size_t i = 0; kind->answer_as && i < json_array_size(page) && r >= 0; i++) {
                json_t *item = json_incref(json_array_get(page, i));

                r = shown_as(kind, &item);
                if (r < 0)
                        json_decref(item);
                else if (json_array_set_new(page, i, item) < 0)
                        r = -ENOMEM;
        }
        if (r < 0) {
                json_decref(meta);
                goto out;
        }
        r = reply_json(ret,
                       200,
                       json_pack("{s:s, s:s, s:o, s:o}",
                                 "kind",
                                 kind->list_kind,
                                 "apiVersion",
                                 kind->api_version,
                                 "metadata",
                                 meta,
                                 "items",
                                 TAKE_PTR(page)));
out:
        json_decref(items);
        json_decref(page);
        json_decref(metadata_texts);
        free(next);
        return r;
}

/* ---- update, patch ----------------------------------------------------------------------------
 */

#define RETRY_CONFLICT 1 /* finish_update(): a stale write the caller may retry */

/*
 * A status write's candidate: stored with status (NULL: none) in place of its own, the rest
 * shared with stored rather than copied (most of a pod is its spec): an update reads its
 * candidate and copies what it changes. own_metadata: a metadata of its own, for the caller to
 * set members of. NULL without memory.
 */
static json_t *with_status(const json_t *stored, json_t *status, bool own_metadata)
{
        json_t *candidate = json_copy((json_t *)stored);
        int r = candidate ? 0 : -1;

        if (r == 0 && own_metadata && json_is_object(metadata_of(stored)))
                r = json_object_set_new(candidate, "metadata", json_copy(metadata_of(stored)));
        if (r == 0)
                r = status ? json_object_set(candidate, "status", status)
                           : (json_object_del(candidate, "status"), 0);
        if (r < 0) {
                json_decref(candidate);
                return NULL;
        }
        return candidate;
}

/* 1 when candidate (without a resourceVersion) is stored (with one) unchanged, else 0. */
static int same_json(const json_t *candidate, const json_t *stored)
{
        json_t *copy = json_copy((json_t *)stored);
        json_t *meta = copy ? json_copy(metadata_of(stored)) : NULL;
        int same;

        if (!copy || !meta) {
                json_decref(copy);
                json_decref(meta);
                return -ENOMEM;
        }
        json_object_del(meta, "resourceVersion");
        json_object_set_new(copy, "metadata", meta);
        same = json_equal(candidate, copy);
        json_decref(copy);
        return same;
}

/*
 * A pod's phase is an enum the codec writes back as it reads it (or refuses), so pods whose
 * phases differ differ in any words: the agent's status writes, most of which move the phase,
 * need not decode and encode the stored pod again to learn it.
 */
static bool phase_differs(const struct xp_kind *kind, const json_t *candidate, const json_t *stored)
{
        const char *now, *was;

        if (!is_pods(kind))
                return false;
        now = json_string_value(json_object_get(json_object_get(candidate, "status"), "phase"));
        was = json_string_value(json_object_get(json_object_get(stored, "status"), "phase"));
        return now && was && strcmp(now, was) != 0;
}

/*
 * As same_json(), with stored also as the codec writes it: a component that wrote a null
 * member (a condition's lastProbeTime) or a default the server adds since stored the same
 * object in other words.
 */
static int same_object(const struct xp_kind *kind, const json_t *candidate, const json_t *stored)
{
        struct xp_error err = {0};
        json_t *encoded = NULL;
        void *object = NULL;
        int r = same_json(candidate, stored);

        if (r != 0 || phase_differs(kind, candidate, stored) ||
            kind->from_json(stored, NULL, 0, &object, &err) < 0)
                return r;
        r = kind->to_json(object, &encoded);
        kind->free(object);
        if (r < 0)
                return r;
        r = same_json(candidate, encoded);
        json_decref(encoded);
        return r;
}

/*
 * The candidate of a pod update with the defaults (old: stored defaulted). A candidate of the
 * stored spec (a status write: the same spec, not a copy) gets old's spec, shared: the defaults
 * of an unchanged spec are the stored spec's (what they keep of the old spec, a priority and a
 * preemption policy, is what they give it); it gets a status of its own, for qosClass. 0 or
 * -ENOMEM.
 */
static int pod_candidate_defaulted(const struct request *req,
                                   const json_t *stored,
                                   const json_t *candidate,
                                   const json_t *old,
                                   json_t **ret_new)
{
        const json_t *spec = json_object_get(candidate, "spec");
        json_t *new, *status;
        int r = 0;

        if (!spec || spec != json_object_get(stored, "spec")) {
                new = json_deep_copy(candidate);
                r = new ? pod_defaults(req, new, old) : -ENOMEM;
        } else {
                new = json_copy((json_t *)candidate);
                status = json_object_get(candidate, "status");
                r = new ? json_object_set(new, "spec", json_object_get(old, "spec")) : -1;
                if (r == 0 && json_is_object(status))
                        r = json_object_set_new(new, "status", json_copy(status));
                r = r < 0 ? -ENOMEM : 0;
        }
        if (r < 0) {
                json_decref(new);
                return r;
        }
        *ret_new = new;
        return 0;
}

/*
 * The stored pod as the defaults may change it: they change the spec alone, so only the spec is
 * copied deeply; metadata (managedFields) and status (containerStatuses) stay shared, read-only.
 */
static json_t *stored_defaultable(const json_t *stored)
{
        json_t *old = json_copy((json_t *)stored);
        const json_t *spec = json_object_get(stored, "spec");

        if (old && spec && json_object_set_new(old, "spec", json_deep_copy(spec)) < 0) {
                json_decref(old);
                return NULL;
        }
        return old;
}

/*
 * A pod update's two sides with Kubernetes' defaults: the candidate as it is validated and
 * written, and the stored pod as the checks compare it with (a pod stored before a default
 * existed gets it too, as Kubernetes defaults what it reads). A status that leaves qosClass out
 * keeps the stored one. 0 or -ENOMEM.
 */
static int pod_update_sides(const struct request *req,
                            const json_t *stored,
                            const json_t *candidate,
                            json_t **ret_old,
                            json_t **ret_new)
{
        json_t *old = stored_defaultable(stored), *new = NULL, *status, *qos;
        int r = old ? pod_defaults(req, old, NULL) : -ENOMEM;

        if (r >= 0)
                r = pod_candidate_defaulted(req, stored, candidate, old, &new);
        status = json_object_get(new, "status");
        qos = json_object_get(json_object_get(stored, "status"), "qosClass");
        if (r >= 0 && json_is_object(status) && !json_object_get(status, "qosClass") && qos)
                r = set_member(status, "qosClass", qos);
        if (r < 0) {
                json_decref(old);
                json_decref(new);
                return -ENOMEM;
        }
        *ret_old = old;
        *ret_new = new;
        return 0;
}

/* A terminating pod is on its way out: its agent is stopping what the spec describes. */
static int refuse_terminating(const struct request *req,
                              const json_t *stored,
                              const json_t *out,
                              struct reply *ret)
{
        const char *deleted =
            json_string_value(json_object_get(metadata_of(stored), "deletionTimestamp"));

        if (!deleted || json_equal(json_object_get(out, "spec"), json_object_get(stored, "spec")))
                return 1;
        return reply_status(
            ret,
            422,
            "Invalid",
            req->name,
            "Pod",
            "Pod \"%s\" is invalid: spec: Forbidden: the pod is terminating (metadata.deletionTimestamp %s): only metadata and status may change",
            req->name,
            deleted);
}

/* The kind's rules for what an update may change (kind->validate_update): 1 when it may, else
 * 0 with ret filled (422 Invalid), or -ENOMEM. */
static int check_update(const struct request *req,
                        const struct xp_kind *kind,
                        const void *object,
                        const json_t *stored,
                        struct reply *ret)
{
        struct xp_error err = {0};
        int r = kind->validate_update ? kind->validate_update(object, stored, &err) : 0;

        if (r == -ENOMEM)
                return r;
        return r < 0 ? reply_invalid(ret, kind, req->name, xp_error_message(&err)) : 1;
}

/*
 * The object an update of stored (whose version is expected) writes: candidate defaulted (pods)
 * and validated, named as the URL, with what the server owns kept from stored, encoded and
 * admitted. 1 with *ret_out, else 0 with ret filled, or -errno.
 */
static int settle_update(const struct request *req,
                         const struct xp_kind *kind,
                         const json_t *stored,
                         const json_t *candidate,
                         uint64_t expected,
                         unsigned flags,
                         json_t **ret_out,
                         struct reply *ret)
{
        json_t *out = NULL, *old_pod = NULL, *new_pod = NULL, *kept = NULL;
        const json_t *live = stored;
        struct xp_object_meta *meta;
        struct xp_error err = {0};
        void *object = NULL;
        int r;

        if (is_pods(kind)) {
                r = pod_update_sides(req, stored, candidate, &old_pod, &new_pod);
                if (r < 0)
                        return r;
                stored = old_pod;
                candidate = new_pod;
        } else if (kind == &xp_kind_service) {
                r = service_keep_allocated(req, stored, candidate, &kept, ret); /* api_service.c */
                if (r <= 0)
                        return r;
                candidate = kept;
        }
        /* candidate is not changed once decoded, nor is what it shares with stored: what the
         * model keeps unknown (a pod's managedFields) it may share, as a create's does */
        r = check_object(kind, candidate, flags | XP_DECODE_SHARE, &object, ret);
        if (r <= 0)
                goto out;
        meta = kind->meta(object);
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
        r = check_update(req, kind, object, stored, ret);
        if (r <= 0)
                goto out;
        /* uid, creationTimestamp and deletionTimestamp belong to the server. */
        r = xp_registry_keep_owned(meta, stored, &err);
        if (r == -ECANCELED) {
                r = reply_status(
                    ret, 409, "Conflict", req->name, kind->plural, "%s", xp_error_message(&err));
                goto out;
        }
        /* The create-time defaults (a pod's Pending phase) are not set again: an update
         * carries what the object has become. */
        if (r >= 0)
                r = kind->to_json(object, &out);
        /* through a converted version, the status may come back from what the client sent (a
         * v1 HPA's annotations): an update of the object keeps the stored one, as
         * kube-apiserver's PrepareForUpdate does after the conversion */
        if (r >= 0 && kind->answer_as && kind_has_status(kind) &&
            !xp_streq0(req->subresource, "status"))
                r = set_member(out, "status", json_object_get(stored, "status"));
        if (r >= 0 && xp_registry_finalizers_check(live, out, &err) < 0) {
                r = reply_invalid(ret, kind, req->name, xp_error_message(&err));
                goto out;
        }
        if (r >= 0)
                r = xp_registry_generation(kind, out, stored);
        if (r >= 0)
                r = managed_fields_record(req, kind, live, out);
        if (r >= 0)
                r = admission_check(req, kind, stored, expected, out, ret);
        if (r > 0 && is_pods(kind))
                r = refuse_terminating(req, stored, out, ret);
        if (r > 0 && kind == &xp_kind_service)
                r = service_families_check(req->api->service_ips, out, ret); /* api_service.c */
        if (r > 0 && kind == &xp_kind_service)
                r = service_node_ports(req, stored, out, ret); /* api_nodeport.c */
        if (r <= 0)
                goto out;
        *ret_out = TAKE_PTR(out);
        r = 1;
out:
        json_decref(out);
        json_decref(old_pod);
        json_decref(new_pod);
        json_decref(kept);
        if (object)
                kind->free(object);
        return r;
}

/*
 * An update that took a deleting object's last finalizer away removes it instead, as
 * kube-apiserver: the answer and the DELETED event carry its last stored state.
 */
static int remove_finalized(const struct request *req,
                            const struct xp_kind *kind,
                            uint64_t expected,
                            bool retry,
                            struct reply *ret)
{
        struct xp_error err = {0};
        json_t *last = NULL;
        uint64_t version;
        int r;

        r = xp_store_delete(req->api->store,
                            kind->plural,
                            store_namespace(req, kind),
                            req->name,
                            expected,
                            &last,
                            &version,
                            &err);
        if (r == -ESTALE && retry)
                return RETRY_CONFLICT;
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return reply_json(ret, 200, last);
}

/*
 * Validates candidate (an update of stored, whose version is expected), keeps what the server
 * owns, and writes it. Returns 0 with ret filled (success or error), or RETRY_CONFLICT without
 * touching ret when the store moved on and retry is set.
 */
static int finish_update(const struct request *req,
                         const struct xp_kind *kind,
                         const json_t *stored,
                         const json_t *candidate,
                         uint64_t expected,
                         unsigned flags,
                         bool dry,
                         bool retry,
                         struct reply *ret)
{
        const char *stored_rv =
            json_string_value(json_object_get(metadata_of(stored), "resourceVersion"));
        struct xp_store_written written;
        struct xp_error err = {0};
        json_t *out = NULL;
        uint64_t version;
        int r;

        r = settle_update(req, kind, stored, candidate, expected, flags, &out, ret);
        if (r <= 0)
                return r;
        /* A write that changes nothing is not one: no new version, no event, as Kubernetes;
         * a stale one is still a conflict. */
        r = xp_registry_version_parse(stored_rv, &version) && version == expected
                ? same_object(kind, out, stored)
                : 0;
        if (r != 0) {
                json_decref(out);
                if (r < 0)
                        return r;
                /* in the version written, as a changing write answers */
                return kind->answer_as ? answer_as(ret, 200, kind, stored)
                                       : reply_json(ret, 200, json_incref((json_t *)stored));
        }
        if (dry) {
                char rv[24];

                xp_registry_version_format(expected, rv);
                json_object_set_new(metadata_of(out), "resourceVersion", json_string(rv));
                return reply_json(ret, 200, out);
        }
        if (xp_registry_update_removes(out)) {
                json_decref(out);
                return remove_finalized(req, kind, expected, retry, ret);
        }
        /* answered with the text the store wrote; out (no resourceVersion: the server's) is
         * left to the store's readers */
        written = (struct xp_store_written){.want_text = true, .share = true};
        r = xp_store_update_text(req->api->store,
                                 kind->plural,
                                 store_namespace(req, kind),
                                 req->name,
                                 expected,
                                 out,
                                 &written,
                                 &err);
        if (r < 0) {
                json_decref(out);
                if (r == -ESTALE && retry)
                        return RETRY_CONFLICT;
                return reply_store_error(ret, r, kind, req->name, &err);
        }
        if (strcmp(kind->plural, "namespaces") == 0)
                xp_registry_namespace_changed(req->api->registry, req->name);
        r = kind->answer_as ? answer_as(ret, 200, kind, out)
                            : reply_written(ret, 200, &written.text, &out);
        free(written.text);
        json_decref(out);
        return r;
}

int update_object(const struct request *req,
                  const struct xp_kind *kind,
                  const json_t *stored,
                  const json_t *candidate,
                  uint64_t expected,
                  bool retry,
                  struct reply *ret)
{
        bool dry;
        int r = dry_run(req, &dry, ret);

        if (r <= 0)
                return r;
        r = finish_update(req, kind, stored, candidate, expected, 0, dry, retry, ret);
        return r == RETRY_CONFLICT ? -ESTALE : r;
}

int handle_update(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        json_t *json = NULL, *stored = NULL, *candidate = NULL;
        const char *rv;
        uint64_t expected, version;
        unsigned flags;
        bool dry;
        int r;

        r = begin_write(req, kind, &flags, &dry, &json, NULL, ret);
        if (r <= 0)
                return r;
        /* 404 before any check of the body against the stored object, as Kubernetes. */
        r = read_stored(req, kind, &stored, &version, ret);
        if (r <= 0)
                goto out;
        /* Kubernetes requires the version an update is based on: no blind overwrites. */
        rv = json_string_value(json_object_get(metadata_of(json), "resourceVersion"));
        if (!rv || !rv[0]) {
                r = reply_status(
                    ret,
                    422,
                    "Invalid",
                    req->name,
                    kind->plural,
                    "%s \"%s\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                    kind->kind,
                    req->name);
                goto out;
        }
        if (!xp_registry_version_parse(rv, &expected)) {
                r = reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    kind->plural,
                    "metadata.resourceVersion: \"%s\" is not a resource version this server wrote",
                    rv);
                goto out;
        }
        if (is_subresource(route, "status")) {
                /* only the status changes; the rest stays as stored */
                json_t *shown = stored_shown(kind, stored);

                candidate =
                    shown ? with_status(shown, json_object_get(json, "status"), false) : NULL;
                json_decref(shown);
                if (!candidate || node_status_keep_conditions(req, kind, stored, candidate) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
        } else {
                candidate = json_incref(json);
                r = kind_has_status(kind) ? keep_status(kind, stored, candidate) : 0;
                if (r < 0)
                        goto out;
        }
        r = finish_update(req, kind, stored, candidate, expected, flags, dry, false, ret);
out:
        json_decref(candidate);
        json_decref(stored);
        json_decref(json);
        return r;
}

/* Whether a merge or strategic patch carries metadata.resourceVersion: a precondition then. */
static bool patch_has_version(enum xp_patch_type type, const json_t *patch)
{
        return type != XP_PATCH_JSON &&
               json_is_string(json_object_get(metadata_of(patch), "resourceVersion"));
}

/*
 * The object a patch writes: for /status, the stored object with the patched status (and the
 * patch's resourceVersion); else the patched object with the stored status where the kind has a
 * status subresource. NULL without memory.
 */
static json_t *patch_candidate(const struct route *route, const json_t *stored, json_t *patched)
{
        json_t *candidate;
        int r = 0;

        if (is_subresource(route, "status")) {
                json_t *shown = stored_shown(route->kind, stored);

                candidate =
                    shown ? with_status(shown, json_object_get(patched, "status"), true) : NULL;
                json_decref(shown);
                if (candidate)
                        r = set_member(metadata_of(candidate),
                                       "resourceVersion",
                                       json_object_get(metadata_of(patched), "resourceVersion"));
        } else {
                candidate = json_incref(patched);
                if (kind_has_status(route->kind))
                        r = keep_status(route->kind, stored, candidate);
        }
        if (r < 0) {
                json_decref(candidate);
                return NULL;
        }
        return candidate;
}

/* What a patch applied to stored gives: 1 with *ret_patched (an object), else 0 (400, 413, 422). */
static int patch_apply(const struct request *req,
                       const struct xp_kind *kind,
                       enum xp_patch_type type,
                       const json_t *stored,
                       const json_t *patch,
                       json_t **ret_patched,
                       struct reply *ret)
{
        struct xp_error err = {0};
        /* the patch is in the version it was sent through */
        json_t *patched = NULL, *shown = NULL;
        int r;

        /* kube-apiserver's bound on a JSON patch's operations, and its words, before any applies */
        if (type == XP_PATCH_JSON && json_array_size(patch) > XP_PATCH_MAX_OPS)
                return reply_status(ret,
                                    413,
                                    "RequestEntityTooLarge",
                                    NULL,
                                    NULL,
                                    "Request entity too large: The allowed maximum operations in "
                                    "a JSON patch is %d, got %zu",
                                    XP_PATCH_MAX_OPS,
                                    json_array_size(patch));
        shown = json_incref((json_t *)stored);
        r = shown_as(kind, &shown);
        if (r < 0) {
                json_decref(shown);
                return r;
        }
        if (type == XP_PATCH_APPLY)
                r = apply_patch(req, kind, shown, patch, ret_patched, ret);
        else
                r = xp_patch_apply_sharing(type, kind->kind, shown, patch, &patched, &err);
        json_decref(shown);
        if (type == XP_PATCH_APPLY)
                return r;
        if (r == -ENOMEM)
                return r;
        /* kube-apiserver's wording for an operation that does not apply; xpool's own bounds on
         * the result (E2BIG: its nesting, its size) keep their message, which says which */
        if (r < 0 && type == XP_PATCH_JSON && r != -E2BIG)
                return reply_patch_failed(ret, xp_error_message(&err));
        if (r < 0)
                return reply_status(ret,
                                    422,
                                    "Invalid",
                                    req->name,
                                    kind->plural,
                                    "%s \"%s\" cannot be patched: %s",
                                    kind->kind,
                                    req->name,
                                    xp_error_message(&err));
        if (!json_is_object(patched)) {
                json_decref(patched);
                return reply_status(ret,
                                    422,
                                    "Invalid",
                                    req->name,
                                    kind->plural,
                                    "%s \"%s\" cannot be patched: the result is not an object",
                                    kind->kind,
                                    req->name);
        }
        *ret_patched = patched;
        return 1;
}

/*
 * One attempt at a patch on the object as stored now: 0 with ret filled, RETRY_CONFLICT when
 * another write won and the patch carries no version (pinned: it does), or -errno.
 */
static int patch_once(const struct request *req,
                      const struct route *route,
                      enum xp_patch_type type,
                      const json_t *patch,
                      bool pinned,
                      unsigned flags,
                      bool dry,
                      struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        json_t *stored = NULL, *patched = NULL, *candidate;
        const char *rv;
        uint64_t version, expected;
        int r;

        r = read_stored(req, kind, &stored, &version, ret);
        if (r == 0 && type == XP_PATCH_APPLY && ret->code == 404) /* apply creates */
                return apply_create(req, kind, patch, flags, dry, ret);
        if (r > 0)
                r = patch_apply(req, kind, type, stored, patch, &patched, ret);
        if (r <= 0) {
                json_decref(stored);
                return r;
        }
        candidate = patch_candidate(route, stored, patched);
        if (!candidate || (is_subresource(route, "status") &&
                           node_status_keep_conditions(req, kind, stored, candidate) < 0)) {
                r = -ENOMEM;
                goto out;
        }
        rv = json_string_value(json_object_get(metadata_of(candidate), "resourceVersion"));
        expected = version;
        if (pinned && (!rv || !xp_registry_version_parse(rv, &expected) || expected != version))
                r = reply_store_error(ret, -ESTALE, kind, req->name, NULL);
        else
                r = finish_update(req, kind, stored, candidate, expected, flags, dry, !pinned, ret);
out:
        json_decref(candidate);
        json_decref(patched);
        json_decref(stored);
        return r;
}

int handle_patch(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        const char *content_type = request_header(req, "Content-Type");
        struct xp_error err = {0};
        enum xp_patch_type type;
        json_error_t jerr;
        json_t *patch = NULL;
        unsigned flags;
        bool dry, pinned;
        int r;

        r = decode_flags(req, &flags, ret);
        if (r <= 0)
                return r;
        r = dry_run(req, &dry, ret);
        if (r <= 0)
                return r;
        if (xp_patch_type_from_content_type(content_type ? content_type : "", &type, &err) < 0)
                return reply_status(
                    ret,
                    415,
                    "UnsupportedMediaType",
                    req->name,
                    kind->plural,
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json");
        /* any JSON value: what is not the shape the type needs is refused below in Go's words;
         * an object (every merge patch, a node's status) the fast reader reads as jansson would */
        if (type == XP_PATCH_APPLY)
                patch = apply_body(req, &jerr);
        else if (xp_json_read_object(req->body, req->body_len, &patch) < 0)
                patch = json_loadb(
                    req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!patch)
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    kind->plural,
                                    "the patch is not valid JSON: %d:%d: %s",
                                    jerr.line,
                                    jerr.column,
                                    jerr.text);
        r = patch_body_decodes(req, type, patch, ret); /* api_patch_body.c */
        if (r <= 0) {
                json_decref(patch);
                return r;
        }
        /* null, as a JSON or strategic merge patch, changes nothing: an empty one */
        if (json_is_null(patch)) {
                json_decref(patch);
                patch = type == XP_PATCH_JSON ? json_array() : json_object();
                if (!patch)
                        return -ENOMEM;
        }
        pinned = patch_has_version(type, patch);

        /* A patch without a version applies to whatever is current: retry when another write wins.
         */
        r = RETRY_CONFLICT;
        for (unsigned attempt = 0; attempt < PATCH_ATTEMPTS && r == RETRY_CONFLICT; attempt++)
                r = patch_once(req, route, type, patch, pinned, flags, dry, ret);
        if (r == RETRY_CONFLICT)
                r = reply_store_error(ret, -ESTALE, kind, req->name, &err);
        json_decref(patch);
        return r;
}

/* ---- delete ---------------------------------------------------------------------------------- */

/* An integer gracePeriodSeconds: 1, else 0 with ret filled saying where it came from. */
static int parse_grace(const struct request *req,
                       const struct xp_kind *kind,
                       const char *where,
                       const char *text,
                       const json_t *value,
                       int64_t *ret_grace,
                       struct reply *ret)
{
        char *end;
        long long v;

        if (value) {
                if (json_is_integer(value)) {
                        *ret_grace = json_integer_value(value);
                        return 1;
                }
        } else if (text && text[0]) {
                errno = 0;
                v = strtoll(text, &end, 10);
                if (errno == 0 && *end == '\0') {
                        *ret_grace = v;
                        return 1;
                }
        }
        return reply_status(ret,
                            400,
                            "BadRequest",
                            req->name,
                            kind->plural,
                            "%s: gracePeriodSeconds must be an integer number of seconds",
                            where);
}

/*
 * DeleteOptions in the body (optional) and the query: preconditions, gracePeriodSeconds and
 * dryRun (propagationPolicy and orphanDependents: delete_cascade()).
 * 1 when fine, 0 with ret filled.
 */
/*
 * The DeleteOptions of a DELETE's body: JSON, or protobuf as kubectl delete and client-go send
 * them (application/vnd.kubernetes.protobuf). 1 with *ret_options (NULL or not an object when
 * the JSON is not one), or 0 with ret filled (415 for protobuf that cannot be read).
 */
static int delete_body(const struct request *req,
                       const struct xp_kind *kind,
                       json_t **ret_options,
                       struct reply *ret)
{
        const char *content_type = request_header(req, "Content-Type");
        struct xp_error err = {0};
        json_error_t jerr;

        *ret_options = NULL;
        if (!content_type ||
            strncasecmp(content_type, "application/vnd.kubernetes.protobuf", 35) != 0) {
                *ret_options = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
                return 1;
        }
        if (xp_protobuf_to_json(req->body, req->body_len, ret_options, &err) < 0)
                return reply_status(ret,
                                    415,
                                    "UnsupportedMediaType",
                                    req->name,
                                    kind->plural,
                                    "the protobuf request body could not be read: %s",
                                    xp_error_message(&err));
        if (!xp_streq0(json_string_value(json_object_get(*ret_options, "kind")), "DeleteOptions")) {
                json_decref(*ret_options);
                *ret_options = NULL;
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    kind->plural,
                                    "the request body must be DeleteOptions");
        }
        return 1;
}

static int delete_options(const struct request *req,
                          const struct xp_kind *kind,
                          struct xp_registry_delete_options *ret_options,
                          json_t **ret_body,
                          struct reply *ret)
{
        const char *query_grace = request_query(req, "gracePeriodSeconds");
        json_t *options = NULL;
        int r;

        *ret_options = (struct xp_registry_delete_options){0};
        *ret_body = NULL;
        if (query_grace) {
                r = parse_grace(req,
                                kind,
                                "?gracePeriodSeconds",
                                query_grace,
                                NULL,
                                &ret_options->grace_seconds,
                                ret);
                if (r <= 0)
                        return r;
                ret_options->has_grace = true;
        }
        if (req->body_len == 0)
                return 1;
        r = delete_body(req, kind, &options, ret);
        if (r <= 0)
                return r;
        if (!json_is_object(options)) {
                json_decref(options);
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    kind->plural,
                                    "the request body must be DeleteOptions as a JSON object");
        }
        r = delete_options_json(req, kind, options, ret_options, ret);
        if (r <= 0) {
                json_decref(options);
                return r;
        }
        *ret_body = options;
        return 1;
}

int delete_options_json(const struct request *req,
                        const struct xp_kind *kind,
                        const json_t *options,
                        struct xp_registry_delete_options *ret_options,
                        struct reply *ret)
{
        const json_t *pre, *grace, *dry, *mode;
        const char *rv;
        size_t i;
        int r;

        grace = json_object_get(options, "gracePeriodSeconds");
        if (grace && !json_is_null(grace)) {
                r = parse_grace(req,
                                kind,
                                "DeleteOptions.gracePeriodSeconds",
                                NULL,
                                grace,
                                &ret_options->grace_seconds,
                                ret);
                if (r <= 0)
                        return r;
                ret_options->has_grace = true;
        }
        /* kubectl delete --dry-run=server sends it here, not in the query */
        dry = json_object_get(options, "dryRun");
        json_array_foreach(dry, i, mode)
        {
                if (!xp_streq0(json_string_value(mode), "All"))
                        return reply_status(
                            ret,
                            400,
                            "BadRequest",
                            req->name,
                            kind->plural,
                            "DeleteOptions.dryRun[%zu]: the only dry-run mode is All",
                            i);
                ret_options->dry = true;
        }
        pre = json_object_get(options, "preconditions");
        ret_options->uid = json_string_value(json_object_get(pre, "uid"));
        rv = json_string_value(json_object_get(pre, "resourceVersion"));
        if (rv && !xp_registry_version_parse(rv, &ret_options->version))
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    kind->plural,
                    "preconditions.resourceVersion: \"%s\" is not a resource version this server wrote",
                    rv);
        return 1;
}

/* DELETE of a pod: graceful (pod_delete()). */
static int delete_pod(const struct request *req,
                      const struct xp_kind *kind,
                      const struct xp_registry_delete_options *options,
                      struct reply *ret)
{
        struct xp_error err = {0};
        json_t *pod = NULL;
        bool removed;
        int r;

        r = xp_registry_pod_delete(
            req->api->registry, req->namespace, req->name, options, &pod, &removed, &err);
        if (r == -ECANCELED)
                return reply_status(
                    ret, 409, "Conflict", req->name, kind->plural, "%s", xp_error_message(&err));
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return reply_json(ret, 200, pod);
}

int handle_delete(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        struct xp_registry_delete_options o;
        struct xp_error err = {0};
        json_t *last = NULL, *options = NULL;
        uint64_t version, expected;
        const char *uid;
        bool dry;
        int r;

        r = dry_run(req, &dry, ret);
        if (r <= 0)
                return r;
        r = delete_options(req, kind, &o, &options, ret);
        if (r <= 0)
                return r;
        o.dry = dry = dry || o.dry;
        uid = o.uid;
        expected = o.version;
        if (strcmp(kind->plural, "pods") == 0) {
                r = delete_pod(req, kind, &o, ret);
                goto out;
        }
        if (strcmp(kind->plural, "namespaces") == 0 && xp_registry_namespace_protected(req->name)) {
                r = namespace_delete(req, kind, expected, dry, ret); /* answers 403 */
                goto out;
        }
        if (strcmp(kind->plural, XP_PRIORITY_CLASSES_RESOURCE) == 0 &&
            xp_priority_system(req->name)) {
                r = reply_status(
                    ret,
                    403,
                    "Forbidden",
                    req->name,
                    kind->plural,
                    "priorityclasses.scheduling.k8s.io \"%s\" is forbidden: this is a system priority class and cannot be deleted",
                    req->name);
                goto out;
        }
        if (uid || dry) {
                json_t *stored;
                const char *stored_uid;

                r = read_stored(req, kind, &stored, &version, ret);
                if (r <= 0)
                        goto out;
                stored_uid = json_string_value(json_object_get(metadata_of(stored), "uid"));
                if (uid && !xp_streq0(uid, stored_uid)) {
                        json_decref(stored);
                        r = reply_status(
                            ret,
                            409,
                            "Conflict",
                            req->name,
                            kind->plural,
                            "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                            uid,
                            stored_uid ? stored_uid : "");
                        goto out;
                }
                if (dry) {
                        r = reply_json(ret, 200, stored);
                        goto out;
                }
                json_decref(stored);
        }
        if (strcmp(kind->plural, "namespaces") == 0) {
                r = namespace_delete(req, kind, expected, dry, ret);
                goto out;
        }
        r = delete_cascade(req, kind, options, dry, ret);
        if (r != 2)
                goto out;
        /* finalizers hold it: marked, and removed when an update takes the last one away */
        r = xp_registry_delete(req->api->registry,
                               kind->plural,
                               store_namespace(req, kind),
                               req->name,
                               expected,
                               &last,
                               &err);
        if (r < 0) {
                r = reply_store_error(ret, r, kind, req->name, &err);
                goto out;
        }
        r = reply_json(ret, 200, last);
out:
        json_decref(options);
        return r;
}
