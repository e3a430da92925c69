/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reviews: authentication.k8s.io/v1 SelfSubjectReview (kubectl auth whoami) and
 * authorization.k8s.io/v1 SelfSubjectAccessReview and SelfSubjectRulesReview (kubectl auth
 * can-i, can-i --list), answered from the caller's token and role with the same rules that
 * authorize its requests (auth.h, auth_rules.h). They are created (201) and never stored.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "auth_rules.h"
#include "http.h"
#include "internal.h"
#include "xpool/apischema.h"
#include "xpool/macro.h"
#include "xpool/protobuf.h"
#include "xpool/strutil.h"

const struct api_review api_reviews[] = {
    {"authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview"},
    {"authorization.k8s.io",
     "selfsubjectaccessreviews",
     "selfsubjectaccessreview",
     "SelfSubjectAccessReview"},
    {"authorization.k8s.io",
     "selfsubjectrulesreviews",
     "selfsubjectrulesreview",
     "SelfSubjectRulesReview"},
};
const size_t api_reviews_n = XP_ELEMENTSOF(api_reviews);

static const struct api_review *review_of(const char *kind)
{
        for (size_t i = 0; i < api_reviews_n; i++)
                if (strcmp(api_reviews[i].kind, kind) == 0)
                        return &api_reviews[i];
        return NULL;
}

static int bad_body(struct reply *ret, const char *kind, const char *what)
{
        return reply_status(ret,
                            400,
                            "BadRequest",
                            NULL,
                            NULL,
                            "%s in version \"v1\" cannot be handled as a %s: %s",
                            kind,
                            kind,
                            what);
}

static int parse(const struct request *req, const char *kind, json_t **ret_json, struct reply *ret)
{
        char api_version[64];

        snprintf(api_version, sizeof api_version, "%s/v1", review_of(kind)->group);
        return answered_body(req, kind, api_version, ret_json, ret);
}

int answered_body(const struct request *req,
                  const char *kind,
                  const char *api_version,
                  json_t **ret_json,
                  struct reply *ret)
{
        const char *type = request_header(req, "Content-Type");
        const struct xp_apischema *schema;
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *json = NULL, *member;
        int r;

        if (type && strncasecmp(type, "application/vnd.kubernetes.protobuf", 35) == 0) {
                if (xp_protobuf_to_json(req->body, req->body_len, &json, &err) < 0)
                        return bad_body(ret, kind, xp_error_message(&err));
        } else if (!(json = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr))) {
                char what[300];

                snprintf(what,
                         sizeof what,
                         "the body is not valid JSON: %d:%d: %s",
                         jerr.line,
                         jerr.column,
                         jerr.text);
                return bad_body(ret, kind, what);
        }
        if (!json_is_object(json)) {
                json_decref(json);
                return bad_body(ret, kind, "the body must be a JSON object");
        }
        member = json_object_get(json, "kind");
        if (member && !(json_is_string(member) && strcmp(json_string_value(member), kind) == 0))
                r = bad_body(ret, kind, "the kind in the body is not the resource's");
        else if ((member = json_object_get(json, "apiVersion")) &&
                 !(json_is_string(member) && strcmp(json_string_value(member), api_version) == 0))
                r = bad_body(ret, kind, "the apiVersion in the body is not the resource's");
        else if ((r = xp_apischema_builtin(&schema, &err)) >= 0 &&
                 (r = xp_apischema_check(xp_apischema_find(schema, kind), json, 0, &err)) < 0)
                r = r == -ENOMEM ? r : bad_body(ret, kind, xp_error_message(&err));
        else
                r = r < 0 ? r : 1;
        if (r <= 0) {
                json_decref(json);
                return r;
        }
        *ret_json = json;
        return 1;
}

/* 404 unless the path's group is the review's, as for a resource the group does not have. */
static int check_group(const struct request *req, const char *kind, struct reply *ret)
{
        if (strcmp(req->group, review_of(kind)->group) == 0)
                return 1;
        return reply_no_resource(ret, "POST", req->path);
}

/* The review as sent, with its kind, apiVersion, metadata and the answer (status; taken). */
static int reply_review(struct reply *ret, const char *kind, json_t *review, json_t *status)
{
        char api_version[64];

        snprintf(api_version, sizeof api_version, "%s/v1", review_of(kind)->group);
        if (!status || json_object_set_new(review, "kind", json_string(kind)) < 0 ||
            json_object_set_new(review, "apiVersion", json_string(api_version)) < 0 ||
            json_object_set_new(review, "metadata", json_pack("{s:n}", "creationTimestamp")) < 0 ||
            json_object_set_new(review, "status", status) < 0) {
                json_decref(review);
                return -ENOMEM;
        }
        return reply_json(ret, 201, review);
}

/* A service account's uid, and the pod its token is bound to as kube-apiserver's extra. */
static int service_account_info(const struct auth_identity *who, json_t *info)
{
        json_t *extra = json_object();

        if (!extra || json_object_set_new(info, "uid", json_string(who->sa_uid)) < 0 ||
            json_object_set_new(info, "extra", extra) < 0)
                return -ENOMEM;
        if (!who->pod_name[0])
                return 0;
        if (json_object_set_new(extra,
                                "authentication.kubernetes.io/pod-name",
                                json_pack("[s]", who->pod_name)) < 0 ||
            json_object_set_new(
                extra, "authentication.kubernetes.io/pod-uid", json_pack("[s]", who->pod_uid)) < 0)
                return -ENOMEM;
        return 0;
}

int handle_self_subject_review(const struct request *req,
                               const struct route *route,
                               struct reply *ret)
{
        const char *kind = "SelfSubjectReview";
        json_t *review = NULL, *info;
        char user[XP_TOKEN_SUBJECT_MAX + 32];
        int r;

        (void)route;
        r = check_group(req, kind, ret);
        if (r > 0)
                r = parse(req, kind, &review, ret);
        if (r <= 0)
                return r;
        if (req->who) {
                auth_user_name(req->who, user, sizeof user);
                info =
                    json_pack("{s:s, s:o}", "username", user, "groups", auth_user_groups(req->who));
                if (info && req->who->service_account)
                        r = service_account_info(req->who, info);
                if (r == -ENOMEM) {
                        json_decref(review);
                        json_decref(info);
                        return r;
                }
        } else {
                info = json_object(); /* no authentication: nobody in particular */
        }
        return reply_review(ret, kind, review, json_pack("{s:o}", "userInfo", info));
}

int handle_self_subject_rules_review(const struct request *req,
                                     const struct route *route,
                                     struct reply *ret)
{
        const char *kind = "SelfSubjectRulesReview";
        json_t *review = NULL, *status = NULL;
        const char *ns;
        int r;

        (void)route;
        r = check_group(req, kind, ret);
        if (r > 0)
                r = parse(req, kind, &review, ret);
        if (r <= 0)
                return r;
        ns = json_string_value(json_object_get(json_object_get(review, "spec"), "namespace"));
        if (!req->who) {
                status = json_pack("{s:[{s:[s], s:[s], s:[s]}], s:[{s:[s], s:[s]}], s:b}",
                                   "resourceRules",
                                   "verbs",
                                   "*",
                                   "apiGroups",
                                   "*",
                                   "resources",
                                   "*",
                                   "nonResourceRules",
                                   "verbs",
                                   "*",
                                   "nonResourceURLs",
                                   "*",
                                   "incomplete",
                                   false);
        } else if ((r = auth_rules_review(req->who, ns, &status)) < 0) {
                json_decref(review);
                return r;
        }
        return reply_review(ret, kind, review, status);
}

/* ---- SelfSubjectAccessReview ----------------------------------------------------------------- */

/* What the review asks, its strings NULL when empty. */
struct access {
        const char *verb, *group, *resource, *subresource, *namespace, *name, *path;
        bool non_resource;
};

static const char *attribute(const json_t *attributes, const char *key)
{
        const char *v = json_string_value(json_object_get(attributes, key));

        return v && v[0] ? v : NULL;
}

/* authorization.NonResourceAttributes{Path:"/x", Verb:"get"}, as Go's %#v shows a value. */
static void go_value(const json_t *attributes, bool resource, char *buf, size_t size)
{
        static const char *const resource_keys[][2] = {{"Namespace", "namespace"},
                                                       {"Verb", "verb"},
                                                       {"Group", "group"},
                                                       {"Version", "version"},
                                                       {"Resource", "resource"},
                                                       {"Subresource", "subresource"},
                                                       {"Name", "name"}};
        static const char *const path_keys[][2] = {{"Path", "path"}, {"Verb", "verb"}};
        size_t n = resource ? XP_ELEMENTSOF(resource_keys) : XP_ELEMENTSOF(path_keys);
        int len = snprintf(
            buf, size, "authorization.%sAttributes{", resource ? "Resource" : "NonResource");

        for (size_t i = 0; i < n && len > 0 && (size_t)len < size; i++) {
                const char *const *k = resource ? resource_keys[i] : path_keys[i];
                const char *v = json_string_value(json_object_get(attributes, k[1]));

                len += snprintf(buf + len,
                                size - (size_t)len,
                                "%s%s:\"%.64s\"",
                                i ? ", " : "",
                                k[0],
                                v ? v : "");
        }
        if (len > 0 && (size_t)len < size)
                snprintf(buf + len, size - (size_t)len, "}");
}

/* 422 Invalid for the spec, in kube-apiserver's words and with the cause kubectl prints. */
static int invalid_spec(struct reply *ret, const char *field, const char *value, const char *detail)
{
        char message[1024];
        json_t *status;

        snprintf(message, sizeof message, "Invalid value: %s: %s", value, detail);
        status = json_pack(
            "{s:s, s:s, s:{}, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}, s:i}",
            "kind",
            "Status",
            "apiVersion",
            "v1",
            "metadata",
            "status",
            "Failure",
            "message",
            "",
            "reason",
            "Invalid",
            "details",
            "name",
            "",
            "group",
            "authorization.k8s.io",
            "kind",
            "SelfSubjectAccessReview",
            "causes",
            "reason",
            "FieldValueInvalid",
            "message",
            message,
            "field",
            field,
            "code",
            422);
        if (!status)
                return -ENOMEM;
        snprintf(
            message,
            sizeof message,
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: %s: Invalid value: %s: %s",
            field,
            value,
            detail);
        json_object_set_new(status, "message", json_string(message));
        return reply_json(ret, 422, status);
}

/* The spec's attributes: 1 with *ret filled, else 0 with ret filled (exactly one kind asked). */
static int read_access(const json_t *spec, struct access *ret_access, struct reply *ret)
{
        const json_t *ra = json_object_get(spec, "resourceAttributes");
        const json_t *na = json_object_get(spec, "nonResourceAttributes");
        char value[700];

        if (json_is_object(ra) && json_is_object(na)) {
                go_value(na, false, value, sizeof value);
                return invalid_spec(ret,
                                    "spec.nonResourceAttributes",
                                    value,
                                    "cannot be specified in combination with resourceAttributes");
        }
        if (!json_is_object(ra) && !json_is_object(na))
                return invalid_spec(
                    ret,
                    "spec.resourceAttributes",
                    "\"null\"",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified");
        if (json_is_object(na)) {
                *ret_access = (struct access){.verb = attribute(na, "verb"),
                                              .path = attribute(na, "path"),
                                              .non_resource = true};
                return 1;
        }
        *ret_access = (struct access){.verb = attribute(ra, "verb"),
                                      .group = attribute(ra, "group"),
                                      .resource = attribute(ra, "resource"),
                                      .subresource = attribute(ra, "subresource"),
                                      .namespace = attribute(ra, "namespace"),
                                      .name = attribute(ra, "name")};
        return 1;
}

static int verb_of(const char *verb)
{
        static const char *const verbs[] = {[AUTH_GET] = "get",
                                            [AUTH_LIST] = "list",
                                            [AUTH_WATCH] = "watch",
                                            [AUTH_CREATE] = "create",
                                            [AUTH_UPDATE] = "update",
                                            [AUTH_PATCH] = "patch",
                                            [AUTH_DELETE] = "delete"};

        for (size_t i = 1; verb && i < XP_ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i], verb) == 0)
                        return (int)i;
        return 0;
}

/* Whether the pod ns/name is bound to node; false when there is no such pod. */
static bool
pod_bound_to(const struct request *req, const char *ns, const char *name, const char *node)
{
        json_t *pod;
        uint64_t version;
        bool bound;

        if (!ns || !name ||
            xp_store_get(req->api->store, "pods", ns, name, &pod, &version, NULL) < 0)
                return false;
        bound = xp_streq0(
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")), node);
        json_decref(pod);
        return bound;
}

/* The decision for who: allowed, and the reason kubectl shows beside a "no". */
static bool decide(const struct request *req, const struct access *a, char *reason, size_t size)
{
        const struct auth_identity *who = req->who;
        int verb = verb_of(a->verb);
        char ignored[1024];
        enum auth_decision d;

        reason[0] = '\0';
        if (!who || who->role == XP_TOKEN_ADMIN) {
                snprintf(reason, size, "xpool: allowed by the admin role");
                return true;
        }
        /* only an admin may do any verb; a reader may read anything; a node not everything */
        if (!verb)
                return false;
        if (xp_streq0(a->resource, "*") || xp_streq0(a->group, "*"))
                return who->role == XP_TOKEN_READER && verb <= AUTH_WATCH; /* get, list, watch */
        d = auth_authorize(who,
                           &(struct auth_request){.verb = (enum auth_verb)verb,
                                                  .group = a->group ? a->group : "",
                                                  .resource = a->non_resource ? NULL
                                                              : a->resource   ? a->resource
                                                                              : "",
                                                  .subresource = a->subresource,
                                                  .namespace = a->namespace,
                                                  .name = a->name,
                                                  .path = a->path},
                           ignored,
                           sizeof ignored);
        if (d == AUTH_ALLOW_IF_POD_ON_NODE)
                d = pod_bound_to(req, a->namespace, a->name, who->subject) ? AUTH_ALLOW : AUTH_DENY;
        if (d == AUTH_ALLOW_IF_REFERENCED)
                d = http_node_references(
                        req->api->node_graph, a->resource, a->namespace, a->name, who->subject)
                        ? AUTH_ALLOW
                        : AUTH_DENY;
        if (d == AUTH_ALLOW) {
                snprintf(reason,
                         size,
                         "xpool: allowed by the %s role",
                         xp_token_role_to_string(who->role) ?: "discovery");
                return true;
        }
        if (who->role == XP_TOKEN_NODE && !a->non_resource &&
            (xp_streq0(a->resource, "pods") || xp_streq0(a->resource, "secrets") ||
             xp_streq0(a->resource, "configmaps")))
                snprintf(reason,
                         size,
                         "no relationship found between node '%s' and this object",
                         who->subject);
        return false;
}

int handle_self_subject_access_review(const struct request *req,
                                      const struct route *route,
                                      struct reply *ret)
{
        const char *kind = "SelfSubjectAccessReview";
        json_t *review = NULL, *status;
        struct access a = {0};
        char reason[512];
        bool allowed;
        int r;

        (void)route;
        r = check_group(req, kind, ret);
        if (r > 0)
                r = parse(req, kind, &review, ret);
        if (r > 0)
                r = read_access(json_object_get(review, "spec"), &a, ret);
        if (r <= 0) {
                json_decref(review);
                return r;
        }
        allowed = decide(req, &a, reason, sizeof reason);
        status = json_pack("{s:b}", "allowed", allowed);
        if (status && reason[0])
                json_object_set_new(status, "reason", json_string(reason));
        return reply_review(ret, kind, review, status);
}
