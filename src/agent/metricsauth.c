/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's /metrics authorisation (metricsauth.h). Answers are remembered by the SHA-256 of
 * the token, never the token itself: 2 minutes for an allowed one (the kubelet's
 * --authentication-token-webhook-cache-ttl), 30 seconds for a refused one (its unauthorized
 * cache TTL), in a small table whose soonest-expiring entry makes room. The server is asked
 * outside the table's lock, so one slow answer holds up only its own scrape. A flood of made-up
 * tokens, each new to the table, would cost the server a review each: the server's refusals are
 * rationed (REFUSALS_BURST at once, then one a REFUSAL_INTERVAL_MS), and while none is left a
 * token not in the table is answered 503 without asking; approvals in the table still pass. An
 * approval that expired stays in the table for STALE_KEEP_MS more, out of the refusals' reach,
 * and its token is asked about again whatever the ration: a flood cannot starve Prometheus once
 * its approval expires, and a revoked token is still refused at its next scrape.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metricsauth.h"
#include "xpool/timeutil.h"

#define CACHE_SLOTS         64
#define ALLOWED_TTL_MS      (120 * 1000)
#define REFUSED_TTL_MS      (30 * 1000)
#define ASK_TIMEOUT_MS      5000
#define TOKEN_MAX_BYTES     8192
#define REFUSALS_BURST      32
#define REFUSAL_INTERVAL_MS 1000
#define STALE_KEEP_MS       (10 * 60 * 1000)

struct answer {
        uint8_t key[32]; /* SHA-256 of the token */
        int64_t expires_ms;
        int result; /* 0, -EACCES or -EPERM */
        char message[256];
};

struct xp_metrics_auth {
        struct xp_apiclient_options api;
        char *node_name;
        int64_t (*now_ms)(void);
        pthread_mutex_t lock;
        struct answer cache[CACHE_SLOTS];
        /* when the refusal ration is full again (GCRA's theoretical arrival time) */
        int64_t refusals_full_ms;
};

int xp_metrics_auth_new(const struct xp_metrics_auth_options *o, struct xp_metrics_auth **ret)
{
        struct xp_metrics_auth *a = calloc(1, sizeof *a);

        if (!a)
                return -ENOMEM;
        /* the strings stay the agent's, which outlives the log endpoint and so this */
        a->api = *o->api;
        a->api.token = NULL;
        a->api.cred_where = "the scrape's bearer token";
        a->api.timeout_ms = ASK_TIMEOUT_MS;
        a->now_ms = o->now_ms ? o->now_ms : xp_monotonic_ms;
        a->node_name = strdup(o->node_name);
        if (!a->node_name) {
                free(a);
                return -ENOMEM;
        }
        pthread_mutex_init(&a->lock, NULL);
        *ret = a;
        return 0;
}

void xp_metrics_auth_free(struct xp_metrics_auth *a)
{
        if (!a)
                return;
        pthread_mutex_destroy(&a->lock);
        explicit_bzero(a->cache, sizeof a->cache);
        free(a->node_name);
        free(a);
}

const char *xp_metrics_auth_bearer(const char *header)
{
        if (!header || strncasecmp(header, "Bearer ", 7) != 0)
                return NULL;
        header += 7;
        while (*header == ' ')
                header++;
        return *header ? header : NULL;
}

/* Whether the table answers for key (*ret); else *stale tells whether it holds an approval of key
 * that expired less than STALE_KEEP_MS ago. */
static bool remembered(struct xp_metrics_auth *a,
                       const uint8_t key[32],
                       int64_t now,
                       int *ret,
                       bool *stale,
                       struct xp_error *err)
{
        bool found = false;

        *stale = false;
        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < CACHE_SLOTS && !found; i++) {
                struct answer *e = &a->cache[i];

                if (e->expires_ms == 0 || memcmp(e->key, key, 32) != 0)
                        continue;
                if (e->expires_ms > now) {
                        found = true;
                        *ret = e->result;
                        if (e->result < 0)
                                xp_errorf(err, e->result, "%s", e->message);
                } else if (e->result == 0 && now - e->expires_ms < STALE_KEEP_MS) {
                        *stale = true;
                }
        }
        pthread_mutex_unlock(&a->lock);
        return found;
}

/* A refusal may take a slot that is free, a refusal, or an approval expired STALE_KEEP_MS ago: a
 * flood of made-up tokens must never push out an approval, live or stale (Prometheus' token
 * would wait for the ration). */
static bool may_take(const struct answer *e, int64_t now, int result)
{
        return result == 0 || e->expires_ms == 0 || e->result != 0 ||
               now - e->expires_ms >= STALE_KEEP_MS;
}

static void remember(
    struct xp_metrics_auth *a, const uint8_t key[32], int64_t now, int result, const char *message)
{
        struct answer *slot = NULL;

        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < CACHE_SLOTS; i++) {
                struct answer *e = &a->cache[i];

                if (memcmp(e->key, key, 32) == 0) {
                        slot = e;
                        break;
                }
                if (may_take(e, now, result) && (!slot || e->expires_ms < slot->expires_ms))
                        slot = e;
        }
        if (result < 0)
                a->refusals_full_ms =
                    (a->refusals_full_ms > now ? a->refusals_full_ms : now) + REFUSAL_INTERVAL_MS;
        if (slot) {
                memcpy(slot->key, key, 32);
                slot->expires_ms = now + (result == 0 ? ALLOWED_TTL_MS : REFUSED_TTL_MS);
                slot->result = result;
                snprintf(slot->message, sizeof slot->message, "%s", message ? message : "");
        }
        pthread_mutex_unlock(&a->lock);
}

/* Whether the ration of refusals has one left: else the server is not asked (not remembered). */
static bool may_ask(struct xp_metrics_auth *a, int64_t now)
{
        bool ok;

        pthread_mutex_lock(&a->lock);
        ok = a->refusals_full_ms - now <= (int64_t)(REFUSALS_BURST - 1) * REFUSAL_INTERVAL_MS;
        pthread_mutex_unlock(&a->lock);
        return ok;
}

/* The server's answer for token: 0, -EACCES, -EPERM (each with err), or another -errno. */
static int ask_server(struct xp_metrics_auth *a, const char *token, struct xp_error *err)
{
        _cleanup_(xp_apiclient_freep) struct xp_apiclient *client = NULL;
        struct xp_apiclient_options o = a->api;
        json_t *body, *answer = NULL;
        int r;

        o.token = token;
        r = xp_apiclient_new(&o, &client, err);
        if (r < 0)
                return r;
        body = json_pack("{s:s, s:s, s:{s:{s:s, s:s, s:s, s:s}}}",
                         "apiVersion",
                         "authorization.k8s.io/v1",
                         "kind",
                         "SelfSubjectAccessReview",
                         "spec",
                         "resourceAttributes",
                         "verb",
                         "get",
                         "resource",
                         "nodes",
                         "subresource",
                         "metrics",
                         "name",
                         a->node_name);
        if (!body)
                return -ENOMEM;
        r = xp_apiclient_json(client,
                              "POST",
                              "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                              NULL,
                              body,
                              NULL,
                              &answer,
                              err);
        json_decref(body);
        if (r == -EACCES)
                return xp_errorf(err, -EACCES, "the xpool server does not accept the token");
        if (r < 0)
                return xp_error_prefix(err, r, "cannot ask the xpool server about the token");
        r = json_is_true(json_object_get(json_object_get(answer, "status"), "allowed"))
                ? 0
                : xp_errorf(
                      err, -EPERM, "the token may not get nodes/metrics of node %s", a->node_name);
        json_decref(answer);
        return r;
}

int xp_metrics_auth_check(struct xp_metrics_auth *a,
                          const char *authorization,
                          struct xp_error *err)
{
        const char *token = xp_metrics_auth_bearer(authorization);
        int64_t now = a->now_ms();
        uint8_t key[32];
        bool stale;
        int r;

        if (!token)
                return xp_errorf(err,
                                 -EACCES,
                                 "a bearer token is needed (Authorization: Bearer TOKEN, a token "
                                 "the xpool server accepts: xpool token create --reader)");
        if (strlen(token) > TOKEN_MAX_BYTES)
                return xp_errorf(
                    err, -EACCES, "the bearer token is longer than %d bytes", TOKEN_MAX_BYTES);
        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), key) < 0)
                return xp_errorf(err, -EIO, "hashing the bearer token failed");
        if (remembered(a, key, now, &r, &stale, err))
                return r;
        if (!stale && !may_ask(a, now))
                return xp_errorf(err,
                                 -EAGAIN,
                                 "the xpool server refused more than %d tokens in the last %d s: "
                                 "a new token is checked once that slows down, try again later",
                                 REFUSALS_BURST,
                                 REFUSALS_BURST * REFUSAL_INTERVAL_MS / 1000);
        r = ask_server(a, token, err);
        if (r == 0 || r == -EACCES || r == -EPERM)
                remember(a, key, now, r, r < 0 ? xp_error_message(err) : NULL);
        return r;
}
