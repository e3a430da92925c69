/* SPDX-License-Identifier: Apache-2.0 */
/* Who a service account token speaks for, checked against the store (satoken.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "satoken.h"
#include "xpool/doc.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

/* The object's uid when it still exists as uid names it and is not being deleted: 0, else
 * -EACCES with err. */
static int still_there(struct xp_store *store,
                       const char *resource,
                       const char *what,
                       const char *ns,
                       const char *name,
                       const char *uid,
                       json_t **ret_object,
                       struct xp_error *err)
{
        json_t *object = NULL;
        int r = xp_store_get(store, resource, ns, name, &object, NULL, NULL);

        if (r == -ENOMEM)
                return r;
        if (r < 0 || !xp_streq0(xp_json_str_at(object, "metadata.uid", NULL), uid)) {
                json_decref(object);
                return xp_errorf(err,
                                 -EACCES,
                                 "the %s %s/%s this token was made for no longer exists",
                                 what,
                                 ns,
                                 name);
        }
        if (xp_json_at(object, "metadata.deletionTimestamp")) {
                json_decref(object);
                return xp_errorf(err, -EACCES, "the %s %s/%s is being deleted", what, ns, name);
        }
        if (ret_object)
                *ret_object = object;
        else
                json_decref(object);
        return 0;
}

static int copy(char *dst, size_t size, const char *src)
{
        if (!src || !src[0] || strlen(src) >= size)
                return -EACCES;
        memcpy(dst, src, strlen(src) + 1);
        return 0;
}

/* The identity the claims name: 0, or -EACCES. */
static int claimed(const json_t *claims, struct auth_identity *who)
{
        const json_t *k8s = json_object_get(claims, "kubernetes.io");
        char sub[512];

        *who = (struct auth_identity){.service_account = true};
        if (copy(who->sa_namespace,
                 sizeof who->sa_namespace,
                 xp_json_str_at(k8s, "namespace", NULL)) < 0 ||
            copy(who->subject,
                 sizeof who->subject,
                 xp_json_str_at(k8s, "serviceaccount.name", NULL)) < 0 ||
            copy(who->sa_uid, sizeof who->sa_uid, xp_json_str_at(k8s, "serviceaccount.uid", NULL)) <
                0)
                return -EACCES;
        snprintf(sub, sizeof sub, "system:serviceaccount:%s:%s", who->sa_namespace, who->subject);
        if (!xp_streq0(xp_json_str_at(claims, "sub", NULL), sub))
                return -EACCES;
        if (!xp_json_at(k8s, "pod"))
                return 0;
        if (copy(who->pod_name, sizeof who->pod_name, xp_json_str_at(k8s, "pod.name", NULL)) < 0 ||
            copy(who->pod_uid, sizeof who->pod_uid, xp_json_str_at(k8s, "pod.uid", NULL)) < 0)
                return -EACCES;
        return 0;
}

int satoken_authenticate(const struct satoken_key *key,
                         struct xp_store *store,
                         const char *token,
                         size_t len,
                         int64_t now,
                         struct auth_identity *ret,
                         struct xp_error *err)
{
        struct auth_identity who;
        json_t *claims = NULL, *account = NULL;
        const char *role;
        int r = satoken_verify(key, token, len, now, &claims, err);

        if (r < 0)
                return r;
        r = claimed(claims, &who);
        json_decref(claims);
        if (r < 0)
                return xp_errorf(err, r, "the service account token's claims are incomplete");
        r = still_there(store,
                        "serviceaccounts",
                        "service account",
                        who.sa_namespace,
                        who.subject,
                        who.sa_uid,
                        &account,
                        err);
        if (r >= 0 && who.pod_name[0])
                r = still_there(
                    store, "pods", "pod", who.sa_namespace, who.pod_name, who.pod_uid, NULL, err);
        if (r >= 0) {
                /* the key holds a dot: not a path for xp_json_str_at() */
                role = json_string_value(json_object_get(
                    xp_json_at(account, "metadata.annotations"), SATOKEN_ROLE_ANNOTATION));
                role = role ? role : "";
                /* only the two roles; a node's rights belong to nodes */
                if (strcmp(role, "admin") == 0)
                        who.role = XP_TOKEN_ADMIN;
                else if (strcmp(role, "reader") == 0)
                        who.role = XP_TOKEN_READER;
                *ret = who;
        }
        json_decref(account);
        return r;
}

bool satoken_in_header(const char *authorization, const char **ret_token, size_t *ret_len)
{
        const char *token;
        size_t len;

        if (!authorization || strncasecmp(authorization, "Bearer", 6) != 0 ||
            (authorization[6] != ' ' && authorization[6] != '\t'))
                return false;
        token = authorization + 6;
        token += strspn(token, " \t");
        len = strcspn(token, " \t");
        if (token[len + strspn(token + len, " \t")] != '\0' || !satoken_looks_like_jwt(token, len))
                return false;
        *ret_token = token;
        *ret_len = len;
        return true;
}
