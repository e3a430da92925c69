/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serviceaccounts/token subresource (authentication.k8s.io/v1 TokenRequest), as
 * kube-apiserver's TokenREST: a signed token (satoken.h) for the ServiceAccount, for the
 * audiences asked (the server's own when none), expirationSeconds (600 s to 2^32 s, 3600 s when
 * not given), optionally bound to a Pod of the ServiceAccount, in which case it is accepted only
 * while that pod exists. A node may ask only for tokens bound to pods on it (NodeRestriction).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "internal.h"
#include "satoken.h"
#include "xpool/doc.h"
#include "xpool/nodegraph.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define TOKEN_REQUEST "TokenRequest"

static int
invalid(const struct request *req, struct reply *ret, const char *field, const char *what)
{
        return reply_status_group(ret,
                                  422,
                                  "Invalid",
                                  req->name,
                                  "authentication.k8s.io",
                                  TOKEN_REQUEST,
                                  "TokenRequest.authentication.k8s.io \"%s\" is invalid: %s: %s",
                                  req->name,
                                  field,
                                  what);
}

/* spec.expirationSeconds (defaulted) and spec.audiences (defaulted): 1, or 0 with ret. */
static int check_spec(const struct request *req, json_t *spec, struct reply *ret)
{
        json_t *exp = json_object_get(spec, "expirationSeconds");
        json_t *aud = json_object_get(spec, "audiences");
        char what[160];
        int64_t seconds;

        if (!exp || json_is_null(exp)) {
                exp = json_integer(SATOKEN_EXPIRATION_DEFAULT);
                if (!exp || json_object_set_new(spec, "expirationSeconds", exp) < 0)
                        return -ENOMEM;
        }
        seconds = json_integer_value(exp);
        if (seconds < SATOKEN_EXPIRATION_MIN) {
                snprintf(what,
                         sizeof what,
                         "Invalid value: %lld: may not specify a duration less than 10 minutes",
                         (long long)seconds);
                return invalid(req, ret, "spec.expirationSeconds", what);
        }
        if (seconds > SATOKEN_EXPIRATION_MAX) {
                snprintf(what,
                         sizeof what,
                         "Invalid value: %lld: may not specify a duration larger than 2^32 seconds",
                         (long long)seconds);
                return invalid(req, ret, "spec.expirationSeconds", what);
        }
        if (json_array_size(aud) == 0 &&
            json_object_set_new(spec, "audiences", json_pack("[s]", SATOKEN_ISSUER)) < 0)
                return -ENOMEM;
        return 1;
}

/*
 * The pod name of the request's namespace: what the node authorizer's graph keeps of it when it
 * is bound to a node (every node's TokenRequest: no read and parse of the whole pod), else the
 * store's. 0 with *ret, or the store's error.
 */
static int read_pod(const struct request *req, const char *name, json_t **ret)
{
        struct xp_error err = {0};

        if (req->api->node_graph &&
            xp_node_graph_pod(req->api->node_graph, req->namespace, name, ret, &err) > 0)
                return 0;
        return xp_store_get(req->api->store, "pods", req->namespace, name, ret, NULL, NULL);
}

/* The pod the token is to be bound to (spec.boundObjectRef), checked as kube-apiserver does:
 * 1 with *ret_pod (NULL: not bound), else 0 with ret filled. */
static int bound_pod(const struct request *req,
                     const json_t *account,
                     const json_t *spec,
                     json_t **ret_pod,
                     struct reply *ret)
{
        const json_t *ref = json_object_get(spec, "boundObjectRef");
        const char *kind = xp_json_str_at(ref, "kind", ""), *name = xp_json_str_at(ref, "name", "");
        const char *uid = xp_json_str_at(ref, "uid", "");
        json_t *pod = NULL;
        char what[512];

        *ret_pod = NULL;
        if (!ref || json_is_null(ref))
                return 1;
        if (strcmp(kind, "Pod") != 0) {
                snprintf(what,
                         sizeof what,
                         "Unsupported value: \"%s\": supported values: \"Pod\"",
                         kind);
                return invalid(req, ret, "spec.boundObjectRef.kind", what);
        }
        if (read_pod(req, name, &pod) < 0)
                return reply_status(
                    ret, 404, "NotFound", name, "pods", "pods \"%s\" not found", name);
        if (uid[0] && !xp_streq0(xp_json_str_at(pod, "metadata.uid", ""), uid)) {
                json_decref(pod);
                return reply_status(
                    ret,
                    409,
                    "Conflict",
                    name,
                    "pods",
                    "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated",
                    uid);
        }
        if (!xp_streq0(xp_json_str_at(pod, "spec.serviceAccountName", "default"),
                       xp_json_str_at(account, "metadata.name", ""))) {
                json_decref(pod);
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    "serviceaccounts",
                    "cannot bind token for serviceaccount \"%s\" to pod running with different serviceaccount name.",
                    req->name);
        }
        *ret_pod = pod;
        return 1;
}

/* A node's request: only for a pod bound to it (NodeRestriction's words). 1, or 0 with ret. */
static int node_may(const struct request *req, const json_t *pod, struct reply *ret)
{
        char user[XP_TOKEN_SUBJECT_MAX + 32];

        if (!req->who || req->who->role != XP_TOKEN_NODE || req->who->service_account)
                return 1;
        auth_user_name(req->who, user, sizeof user);
        if (!pod)
                return reply_status(ret,
                                    403,
                                    "Forbidden",
                                    req->name,
                                    "serviceaccounts",
                                    "serviceaccounts \"%s\" is forbidden: node requested token not "
                                    "bound to a pod",
                                    req->name);
        if (!xp_streq0(xp_json_str_at(pod, "spec.nodeName", ""), req->who->subject))
                return reply_status(ret,
                                    403,
                                    "Forbidden",
                                    req->name,
                                    "serviceaccounts",
                                    "serviceaccounts \"%s\" is forbidden: User \"%s\" may only "
                                    "request tokens bound to pods on node \"%s\"",
                                    req->name,
                                    user,
                                    req->who->subject);
        return 1;
}

/* Kubernetes' claims for the account (and pod, may be NULL), from now for spec's seconds. */
static json_t *claims_of(const json_t *account, const json_t *pod, const json_t *spec, int64_t now)
{
        char sub[512], jti[XP_REGISTRY_UID_STRING];
        const char *ns = xp_json_str_at(account, "metadata.namespace", "");
        const char *name = xp_json_str_at(account, "metadata.name", "");
        json_t *claims, *k8s;

        if (xp_registry_uid(jti) < 0)
                return NULL;
        snprintf(sub, sizeof sub, "system:serviceaccount:%s:%s", ns, name);
        k8s = json_pack("{s:s, s:{s:s, s:s}}",
                        "namespace",
                        ns,
                        "serviceaccount",
                        "name",
                        name,
                        "uid",
                        xp_json_str_at(account, "metadata.uid", ""));
        if (k8s && pod &&
            json_object_set_new(k8s,
                                "pod",
                                json_pack("{s:s, s:s}",
                                          "name",
                                          xp_json_str_at(pod, "metadata.name", ""),
                                          "uid",
                                          xp_json_str_at(pod, "metadata.uid", ""))) < 0) {
                json_decref(k8s);
                return NULL;
        }
        claims = json_pack(
            "{s:O, s:I, s:I, s:s, s:s, s:o, s:I, s:s}",
            "aud",
            json_object_get(spec, "audiences"),
            "exp",
            (json_int_t)(now + json_integer_value(json_object_get(spec, "expirationSeconds"))),
            "iat",
            (json_int_t)now,
            "iss",
            SATOKEN_ISSUER,
            "jti",
            jti,
            "kubernetes.io",
            k8s,
            "nbf",
            (json_int_t)now,
            "sub",
            sub);
        return claims;
}

/* The TokenRequest answered: the request's spec (defaulted) and the token. */
static int answer(const struct request *req,
                  json_t *request,
                  const char *token,
                  int64_t expires,
                  struct reply *ret)
{
        char at[XP_RFC3339_MAX];

        if (xp_time_format_rfc3339(expires, at) < 0)
                return -EINVAL;
        if (json_object_set_new(request, "kind", json_string(TOKEN_REQUEST)) < 0 ||
            json_object_set_new(request, "apiVersion", json_string("authentication.k8s.io/v1")) <
                0 ||
            json_object_set_new(request,
                                "metadata",
                                json_pack("{s:s, s:s, s:n}",
                                          "name",
                                          req->name,
                                          "namespace",
                                          req->namespace,
                                          "creationTimestamp")) < 0 ||
            json_object_set_new(
                request,
                "status",
                json_pack("{s:s, s:s}", "token", token, "expirationTimestamp", at)) < 0)
                return -ENOMEM;
        return reply_json(ret, 201, json_incref(request));
}

/* The ServiceAccount of the request: 1 with *ret_account, else 0 with ret filled. From the
 * registry's cache of the namespace's accounts (kept while the store's mark for the kind stands,
 * so as current as a store read), as the pod admission reads it: every pod's agent asks a token,
 * and a store read parses the account each time. */
static int account_of(const struct request *req, json_t **ret_account, struct reply *ret)
{
        int r = xp_registry_serviceaccount_get(
            req->api->registry, req->namespace, req->name, ret_account, NULL);

        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_status(ret,
                                    404,
                                    "NotFound",
                                    req->name,
                                    "serviceaccounts",
                                    "serviceaccounts \"%s\" not found",
                                    req->name);
        return 1;
}

int handle_token_request(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *request = NULL, *account = NULL, *pod = NULL, *claims = NULL, *spec;
        int64_t now = time(NULL);
        char *token = NULL;
        int r;

        if (route->kind != &xp_kind_serviceaccount || !req->api->satoken)
                return reply_no_resource(ret, "POST", req->path);
        r = answered_body(req, TOKEN_REQUEST, "authentication.k8s.io/v1", &request, ret);
        if (r > 0 && !json_is_object(json_object_get(request, "spec")))
                r = json_object_set_new(request, "spec", json_object()) < 0 ? -ENOMEM : 1;
        spec = json_object_get(request, "spec");
        if (r > 0)
                r = check_spec(req, spec, ret);
        if (r > 0)
                r = account_of(req, &account, ret);
        if (r > 0)
                r = bound_pod(req, account, spec, &pod, ret);
        if (r > 0)
                r = node_may(req, pod, ret);
        if (r > 0) {
                claims = claims_of(account, pod, spec, now);
                r = claims ? satoken_sign(req->api->satoken, claims, &token) : -ENOMEM;
        }
        if (r >= 0 && token)
                r = answer(req,
                           request,
                           token,
                           now + json_integer_value(json_object_get(spec, "expirationSeconds")),
                           ret);
        if (token)
                explicit_bzero(token, strlen(token));
        free(token);
        json_decref(claims);
        json_decref(pod);
        json_decref(account);
        json_decref(request);
        return r;
}
