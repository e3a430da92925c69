/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Projected serviceAccountToken sources (podconfig.h): the agent asks the server for a token of
 * the pod's service account bound to the pod (TokenRequest, with the node's own token: the
 * server grants it only for pods bound to this node), and keeps it until 80 % of its lifetime,
 * as the kubelet's token manager; the volume refresh then writes the new one with the atomic
 * "..data" swap, so a reader never sees half a token.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_internal.h"
#include "podconfig.h"
#include "xpool/client.h"
#include "xpool/doc.h"
#include "xpool/runtime.h"
#include "xpool/timeutil.h"

#define RENEW_AFTER_S (24 * 3600)

bool xp_podconfig_sa_volume_skipped(unsigned isolation,
                                    const json_t *volume,
                                    const json_t *volume_mount)
{
        const char *name = json_string_value(json_object_get(volume, "name"));
        const char *path = json_string_value(json_object_get(volume_mount, "mountPath"));

        return !(isolation & XP_ISOLATION_NAMESPACES) && name &&
               strncmp(name,
                       XP_PODCONFIG_SA_VOLUME_PREFIX,
                       strlen(XP_PODCONFIG_SA_VOLUME_PREFIX)) == 0 &&
               json_object_get(volume, "projected") && path &&
               strcmp(path, XP_PODCONFIG_SA_MOUNT_PATH) == 0;
}

bool xp_podconfig_token_fresh(int64_t issued, int64_t expires, int64_t now)
{
        return now < issued + (expires - issued) * 8 / 10 && now < issued + RENEW_AFTER_S;
}

/* The cached token of key, when fresh: a copy, or NULL. Drops the entries that are not. */
static char *cached(struct xp_agent *agent, const char *key, int64_t now)
{
        const char *k;
        json_t *entry, *tmp;
        char *token = NULL;

        pthread_mutex_lock(&agent->sa_tokens_lock);
        json_object_foreach_safe(agent->sa_tokens, tmp, k, entry)
        {
                if (!xp_podconfig_token_fresh(json_integer_value(json_object_get(entry, "issued")),
                                              json_integer_value(json_object_get(entry, "expires")),
                                              now))
                        json_object_del(agent->sa_tokens, k);
        }
        entry = json_object_get(agent->sa_tokens, key);
        if (entry)
                token = strdup(json_string_value(json_object_get(entry, "token")));
        pthread_mutex_unlock(&agent->sa_tokens_lock);
        return token;
}

void xp_agent_tokens_forget(struct xp_agent *agent, const char *uid)
{
        size_t n = uid ? strlen(uid) : 0;
        const char *k;
        json_t *entry, *tmp;

        if (n == 0)
                return;
        pthread_mutex_lock(&agent->sa_tokens_lock);
        json_object_foreach_safe(agent->sa_tokens, tmp, k, entry)
        {
                if (strncmp(k, uid, n) == 0 && k[n] == '/')
                        json_object_del(agent->sa_tokens, k);
        }
        pthread_mutex_unlock(&agent->sa_tokens_lock);
}

static void remember(
    struct xp_agent *agent, const char *key, const char *token, int64_t issued, int64_t expires)
{
        pthread_mutex_lock(&agent->sa_tokens_lock);
        if (!agent->sa_tokens)
                agent->sa_tokens = json_object();
        if (agent->sa_tokens)
                json_object_set_new(agent->sa_tokens,
                                    key,
                                    json_pack("{s:s, s:I, s:I}",
                                              "token",
                                              token,
                                              "issued",
                                              (json_int_t)issued,
                                              "expires",
                                              (json_int_t)expires));
        pthread_mutex_unlock(&agent->sa_tokens_lock);
}

/* POST serviceaccounts/ACCOUNT/token bound to the pod: 0 with *ret and *ret_expires. */
static int request(struct xp_apiclient *client,
                   const json_t *pod,
                   const char *account,
                   const char *audience,
                   int64_t seconds,
                   char **ret,
                   int64_t *ret_expires,
                   struct xp_error *err)
{
        const char *ns = xp_json_str_at(pod, "metadata.namespace", "default");
        json_t *body = json_pack("{s:s, s:s, s:{s:I, s:{s:s, s:s, s:s, s:s}}}",
                                 "apiVersion",
                                 "authentication.k8s.io/v1",
                                 "kind",
                                 "TokenRequest",
                                 "spec",
                                 "expirationSeconds",
                                 (json_int_t)seconds,
                                 "boundObjectRef",
                                 "kind",
                                 "Pod",
                                 "apiVersion",
                                 "v1",
                                 "name",
                                 xp_json_str_at(pod, "metadata.name", ""),
                                 "uid",
                                 xp_json_str_at(pod, "metadata.uid", ""));
        json_t *answer = NULL;
        char path[1024];
        const char *token;
        int r;

        if (!body)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (audience && audience[0] &&
            json_object_set_new(
                json_object_get(body, "spec"), "audiences", json_pack("[s]", audience)) < 0) {
                json_decref(body);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, account);
        r = xp_apiclient_json(client, "POST", path, NULL, body, NULL, &answer, err);
        json_decref(body);
        if (r < 0)
                return r;
        token = xp_json_str_at(answer, "status.token", NULL);
        r = token && xp_time_parse_rfc3339(xp_json_str_at(answer, "status.expirationTimestamp", ""),
                                           ret_expires) >= 0
                ? 0
                : xp_errorf(err, -EBADMSG, "the server's TokenRequest answer holds no token");
        if (r >= 0 && !(*ret = strdup(token)))
                r = xp_errorf(err, -ENOMEM, "out of memory");
        json_decref(answer);
        return r;
}

int xp_agent_token_get(const json_t *pod,
                       const char *audience,
                       int64_t seconds,
                       void *userdata,
                       char **ret,
                       struct xp_error *err)
{
        struct xp_agent_token_source *source = userdata;
        const char *account = xp_json_str_at(pod, "spec.serviceAccountName", "");
        int64_t now = time(NULL), expires = 0;
        char key[1024];
        int r;

        if (!account[0])
                account = "default";
        snprintf(key,
                 sizeof key,
                 "%s/%s/%s/%" PRId64,
                 xp_json_str_at(pod, "metadata.uid", ""),
                 account,
                 audience ? audience : "",
                 seconds);
        *ret = cached(source->agent, key, now);
        if (*ret)
                return 0;
        r = request(source->client, pod, account, audience, seconds, ret, &expires, err);
        if (r >= 0)
                remember(source->agent, key, *ret, now, expires);
        return r;
}
