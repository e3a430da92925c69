/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The extender (xpool/extender.h): the watches feed the cache, kube-scheduler's requests read
 * it, one lock between them (the core's snapshot is single-threaded; a filter over 5,000 nodes
 * holds it for about a millisecond). filter and prioritize are xp_sched_evaluate() over the
 * candidates; bind places the pod on the chosen node, accounts it at once (so a bind that races
 * another for the same devices sees them taken) and writes the Binding with the placement as its
 * annotation, which Kubernetes copies onto the pod.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "xpool/codec.h"
#include "xpool/extender.h"
#include "xpool/kubeapi.h"
#include "xpool/log.h"
#include "xpool/strutil.h"

#define RECENT_PODS     64 /* pods remembered from filter/prioritize for their bind */
#define BIND_TIMEOUT_MS 10000

static const char unknown_node[] =
    "node is unknown to the xpool extender (not in its watch of Nodes yet)";
static const char nomem_body[] = "{\"Error\":\"the xpool extender is out of memory\"}";

struct xp_extender {
        struct xp_extender_options o;
        char *kubeconfig, *sa_dir;
        pthread_mutex_t lock; /* the cache, and recent */
        struct ext_cache *cache;
        struct ext_reuse *reuse; /* the last filter's verdicts, for its prioritize */
        json_t *recent;          /* "ns/name" -> the Pod's JSON, newest last */
        struct ext_watch *nodes, *pods;
        struct ext_http *http;
        pthread_mutex_t bind_lock; /* the bind client */
        struct xp_kube_api api;
        struct xp_apiclient *bind_client;
};

/* ---- answers ------------------------------------------------------------------------------- */

static int answer(json_t *value, int status, char **ret_body)
{
        *ret_body = value ? json_dumps(value, JSON_COMPACT) : NULL;
        json_decref(value);
        if (!*ret_body)
                *ret_body = strdup(nomem_body);
        return *ret_body && value ? status : 500;
}

static int answer_error(int status, const char *message, char **ret_body)
{
        return answer(json_pack("{s:s}", "Error", message), status, ret_body);
}

/* A request refused as a whole: kube-scheduler shows only "failed VERB with extender at URL ...,
 * code STATUS" for it, so the reason goes to the log, where an operator finds it. */
static int answer_refused(int status, const char *verb, const char *message, char **ret_body)
{
        xp_log(LOG_WARNING, "extender: refused a %s request (HTTP %d): %s", verb, status, message);
        return answer_error(status, message, ret_body);
}

/* ---- feeding ------------------------------------------------------------------------------- */

static int node_event(void *userdata, const char *type, const json_t *node, struct xp_error *err)
{
        struct xp_extender *e = userdata;
        const char *name =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
        int r = 0;

        pthread_mutex_lock(&e->lock);
        if (strcmp(type, "DELETED") == 0 && name)
                ext_cache_node_remove(e->cache, name, err);
        else
                r = ext_cache_node_set(e->cache, node, err);
        pthread_mutex_unlock(&e->lock);
        return r;
}

static int pod_event(void *userdata, const char *type, const json_t *pod, struct xp_error *err)
{
        struct xp_extender *e = userdata;
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace")),
                   *name = json_string_value(json_object_get(meta, "name"));
        int r;

        pthread_mutex_lock(&e->lock);
        if (strcmp(type, "DELETED") == 0 && ns && name)
                r = ext_cache_pod_remove(e->cache, ns, name, err);
        else
                r = ext_cache_pod_set(e->cache, pod, err);
        pthread_mutex_unlock(&e->lock);
        return r;
}

static int replace(struct xp_extender *e, bool nodes, const json_t *items, struct xp_error *err)
{
        int r;

        pthread_mutex_lock(&e->lock);
        r = ext_cache_replace(e->cache, nodes, items, err);
        pthread_mutex_unlock(&e->lock);
        return r;
}

static int nodes_replace(void *userdata, const json_t *items, struct xp_error *err)
{
        return replace(userdata, true, items, err);
}

static int pods_replace(void *userdata, const json_t *items, struct xp_error *err)
{
        return replace(userdata, false, items, err);
}

int xp_extender_node_set(struct xp_extender *e, const json_t *node, struct xp_error *err)
{
        return node_event(e, "ADDED", node, err);
}

int xp_extender_pod_set(struct xp_extender *e, const json_t *pod, struct xp_error *err)
{
        return pod_event(e, "ADDED", pod, err);
}

bool xp_extender_ready(struct xp_extender *e)
{
        return e->o.no_api || (ext_watch_synced(e->nodes) && ext_watch_synced(e->pods));
}

uint16_t xp_extender_port(const struct xp_extender *e)
{
        return ext_http_port(e->http);
}

/* ---- filter and prioritize ----------------------------------------------------------------- */

/* Remembers the pod for its bind, forgetting the oldest past RECENT_PODS. Under the lock. */
static void remember(struct xp_extender *e, const struct xp_extender_args *a)
{
        const json_t *pod = a->pod_json;
        char key[512];

        snprintf(key,
                 sizeof(key),
                 "%s/%s",
                 a->pod->metadata.namespace ? a->pod->metadata.namespace : "default",
                 a->pod->metadata.name);
        json_object_del(e->recent, key); /* to the end: newest last */
        if (json_object_set(e->recent, key, (json_t *)pod) < 0)
                return;
        if (json_object_size(e->recent) > RECENT_PODS)
                json_object_del(e->recent, json_object_iter_key(json_object_iter(e->recent)));
}

/* Nodes sent whole that the watch has not delivered yet: the API's own, take them. */
static void take_new_nodes(struct xp_extender *e, const struct xp_extender_args *a)
{
        for (size_t i = 0; a->nodes && i < a->n_names; i++) {
                json_t *node;
                if (ext_cache_has_node(e->cache, a->names[i]))
                        continue;
                node = json_loadb(a->nodes[i].text, a->nodes[i].len, 0, NULL);
                if (node)
                        (void)ext_cache_node_set(e->cache, node, NULL);
                json_decref(node);
        }
}

/* The answer from verdicts v for a->names. */
static int verdicts_answer(bool filter,
                           const struct xp_extender_args *a,
                           const struct xp_sched_verdict *v,
                           char **ret_body)
{
        char *out = NULL;
        int r = filter ? xp_extender_filter_result(a, v, unknown_node, &out)
                       : xp_extender_priorities(a, v, &out);

        if (r < 0)
                return answer(NULL, 500, ret_body);
        *ret_body = out;
        return 200;
}

/* A prioritize answered from its filter's verdicts (extender_reuse.c), or -ENOENT. */
static int reused(struct xp_extender *e, const struct xp_extender_args *a, char **ret_body)
{
        const struct xp_sched_verdict *kept;
        int r = -ENOENT;

        pthread_mutex_lock(&e->lock);
        take_new_nodes(e, a);
        remember(e, a);
        kept = ext_reuse_find(e->reuse,
                              a->pod_json,
                              ext_cache_generation(e->cache),
                              (const char *const *)a->names,
                              a->n_names);
        if (kept)
                r = verdicts_answer(false, a, kept, ret_body);
        pthread_mutex_unlock(&e->lock);
        return r;
}

static int
evaluate(struct xp_extender *e, const char *verb, struct xp_extender_args *a, char **ret_body)
{
        bool filter = strcmp(verb, "filter") == 0;
        struct xp_sched_verdicts set = {0};
        struct xp_error err = {0};
        char msg[XP_ERROR_MSG_MAX + 128];
        uint64_t generation;
        int r;

        if (!filter && (r = reused(e, a, ret_body)) != -ENOENT)
                return r;
        pthread_mutex_lock(&e->lock);
        take_new_nodes(e, a);
        remember(e, a);
        generation = ext_cache_generation(e->cache);
        /* the filter scores too, so that its prioritize need not check every node again */
        r = xp_sched_evaluate(ext_cache_sched(e->cache),
                              a->pod,
                              (const char *const *)a->names,
                              a->n_names,
                              XP_SCHED_EVALUATE_SCORE,
                              &set,
                              &err);
        pthread_mutex_unlock(&e->lock);
        if (r < 0) {
                snprintf(msg,
                         sizeof(msg),
                         "pod %s/%s: %s",
                         a->pod->metadata.namespace ? a->pod->metadata.namespace : "default",
                         a->pod->metadata.name,
                         xp_error_message(&err));
                /* kube-scheduler shows a filter's Error on the pod; prioritize errors it ignores */
                return answer_error(filter ? 200 : 422, msg, ret_body);
        }
        r = verdicts_answer(filter, a, set.items, ret_body);
        if (filter && r == 200) {
                pthread_mutex_lock(&e->lock);
                ext_reuse_keep(e->reuse,
                               a->pod_json,
                               generation,
                               (const char *const *)a->names,
                               a->n_names,
                               &set);
                pthread_mutex_unlock(&e->lock);
        }
        xp_sched_verdicts_done(&set);
        return r;
}

static int filter_or_prioritize(
    struct xp_extender *e, const char *verb, const char *body, size_t len, char **ret_body)
{
        struct xp_extender_args a = {0};
        struct xp_error err = {0};
        char msg[XP_ERROR_MSG_MAX + 64];
        int r;

        if (!xp_extender_ready(e))
                return answer_error(
                    503,
                    "the xpool extender is starting: its list of Nodes and Pods is not complete yet",
                    ret_body);
        r = xp_extender_args_decode(body, len, &a, &err);
        if (r == -ENOMEM)
                return answer(NULL, 500, ret_body);
        if (r == -EBADMSG) {
                /* kube-scheduler puts a 200's Error on the pod's event, a 400 only as its code */
                snprintf(
                    msg, sizeof(msg), "xpool cannot schedule this pod: %s", xp_error_message(&err));
                return answer_error(strcmp(verb, "filter") == 0 ? 200 : 422, msg, ret_body);
        }
        if (r < 0)
                return answer_refused(400, verb, xp_error_message(&err), ret_body);
        r = evaluate(e, verb, &a, ret_body);
        xp_extender_args_done(&a);
        return r;
}

/* ---- bind ---------------------------------------------------------------------------------- */

static int bind_client(struct xp_extender *e, struct xp_error *err)
{
        struct xp_apiclient_options o;
        int r = xp_kube_api_refresh(&e->api, err);

        if (r < 0)
                return r;
        if (r == 0 && e->bind_client)
                return 0;
        xp_apiclient_free(e->bind_client);
        e->bind_client = NULL;
        xp_kube_api_client_options(&e->api, BIND_TIMEOUT_MS, &o);
        return xp_apiclient_new(&o, &e->bind_client, err);
}

/* The pod from its filter or prioritize call, else from the API. Under bind_lock. */
static int bind_pod(struct xp_extender *e,
                    const struct xp_extender_binding *b,
                    struct xp_pod **ret,
                    struct xp_error *err)
{
        json_auto_t *json = NULL;
        char key[512], path[1024];
        int r;

        snprintf(key, sizeof(key), "%s/%s", b->pod_namespace, b->pod_name);
        pthread_mutex_lock(&e->lock);
        json = json_deep_copy(json_object_get(e->recent, key));
        pthread_mutex_unlock(&e->lock);
        if (!json) {
                snprintf(path,
                         sizeof(path),
                         "/api/v1/namespaces/%s/pods/%s",
                         b->pod_namespace,
                         b->pod_name);
                r = xp_apiclient_json(e->bind_client, "GET", path, NULL, NULL, NULL, &json, err);
                if (r < 0)
                        return r;
        }
        r = xp_pod_from_json(json, NULL, XP_DECODE_TRUSTED, ret, err);
        if (r >= 0 && b->pod_uid && (*ret)->metadata.uid &&
            strcmp(b->pod_uid, (*ret)->metadata.uid) != 0) {
                r = xp_errorf(err,
                              -ESTALE,
                              "pod %s is another pod now (uid %s, not %s)",
                              key,
                              (*ret)->metadata.uid,
                              b->pod_uid);
                xp_pod_free(*ret);
                *ret = NULL;
        }
        return r;
}

static int post_binding(struct xp_extender *e,
                        const struct xp_extender_binding *b,
                        const char *placement,
                        struct xp_error *err)
{
        json_auto_t *binding = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s, s:s, s:s}}",
                                         "apiVersion",
                                         "v1",
                                         "kind",
                                         "Binding",
                                         "metadata",
                                         "name",
                                         b->pod_name,
                                         "namespace",
                                         b->pod_namespace,
                                         "annotations",
                                         XP_PLACEMENT_ANNOTATION,
                                         placement,
                                         "target",
                                         "apiVersion",
                                         "v1",
                                         "kind",
                                         "Node",
                                         "name",
                                         b->node);
        char path[1024];

        if (!binding || (b->pod_uid && json_object_set_new(json_object_get(binding, "metadata"),
                                                           "uid",
                                                           json_string(b->pod_uid)) < 0))
                return -ENOMEM;
        snprintf(path,
                 sizeof(path),
                 "/api/v1/namespaces/%s/pods/%s/binding",
                 b->pod_namespace,
                 b->pod_name);
        return xp_apiclient_json(e->bind_client, "POST", path, NULL, binding, NULL, NULL, err);
}

/*
 * Places and assumes under the lock: 1 with *ret_placement, 0 with *ret_reason, or 0 with
 * *ret_bound for a pod bound already (the watch's, this extender's or the API's word), which a
 * second placement would only count twice.
 */
static int place_and_assume(struct xp_extender *e,
                            const struct xp_pod *pod,
                            const char *node,
                            char **ret_placement,
                            char **ret_reason,
                            char **ret_bound,
                            struct xp_error *err)
{
        struct xp_placement pl = {0};
        const char *bound;
        int r;

        pthread_mutex_lock(&e->lock);
        bound = ext_cache_pod_node(e->cache,
                                   pod->metadata.namespace ? pod->metadata.namespace : "default",
                                   pod->metadata.name,
                                   pod->metadata.uid);
        if (!bound && pod->spec.node_name && pod->spec.node_name[0])
                bound = pod->spec.node_name;
        if (bound) {
                *ret_bound = strdup(bound);
                pthread_mutex_unlock(&e->lock);
                return *ret_bound ? 0 : -ENOMEM;
        }
        r = xp_sched_place_on(ext_cache_sched(e->cache), pod, node, &pl, ret_reason, err);
        if (r > 0)
                r = xp_placement_to_json(&pl, ret_placement);
        if (r >= 0 && *ret_placement)
                r = ext_cache_assume(e->cache, pod, node, *ret_placement, err);
        pthread_mutex_unlock(&e->lock);
        xp_placement_done(&pl);
        return r < 0 ? r : *ret_placement != NULL;
}

static int bind(struct xp_extender *e, const char *body, size_t len, char **ret_body)
{
        struct xp_extender_binding b = {0};
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        _cleanup_free_ char *placement = NULL, *reason = NULL, *bound = NULL;
        struct xp_error err = {0};
        char msg[XP_ERROR_MSG_MAX + 600];
        int r;

        if (!e->o.bind || e->o.no_api)
                return answer_refused(
                    404,
                    "bind",
                    "bind is not served: start the extender with --bind and name it as bindVerb",
                    ret_body);
        r = xp_extender_binding_decode(body, len, &b, &err);
        if (r < 0)
                return r == -ENOMEM ? answer(NULL, 500, ret_body)
                                    : answer_refused(400, "bind", xp_error_message(&err), ret_body);
        pthread_mutex_lock(&e->bind_lock);
        r = bind_client(e, &err);
        if (r >= 0)
                r = bind_pod(e, &b, &pod, &err);
        if (r >= 0)
                r = place_and_assume(e, pod, b.node, &placement, &reason, &bound, &err);
        if (r > 0)
                r = post_binding(e, &b, placement, &err);
        if (placement) {
                /* not bound by this call: what the watch says stands (a pod bound already, by
                 * an earlier call, keeps its devices) */
                pthread_mutex_lock(&e->lock);
                (void)ext_cache_unassume(e->cache, b.pod_namespace, b.pod_name, r >= 0, NULL);
                pthread_mutex_unlock(&e->lock);
        }
        pthread_mutex_unlock(&e->bind_lock);
        if (r < 0)
                snprintf(msg,
                         sizeof(msg),
                         "binding pod %s/%s to node %s: %s",
                         b.pod_namespace,
                         b.pod_name,
                         b.node,
                         xp_error_message(&err));
        else if (bound)
                snprintf(msg,
                         sizeof(msg),
                         "pod %s/%s is already bound to node %s",
                         b.pod_namespace,
                         b.pod_name,
                         bound);
        else if (!placement)
                snprintf(msg,
                         sizeof(msg),
                         "pod %s/%s does not fit node %s: %s",
                         b.pod_namespace,
                         b.pod_name,
                         b.node,
                         reason ? reason : "");
        else
                msg[0] = '\0';
        if (msg[0])
                xp_log(LOG_WARNING, "extender: %s", msg);
        xp_extender_binding_done(&b);
        return answer_error(200, msg, ret_body);
}

/* ---- the endpoint -------------------------------------------------------------------------- */

int xp_extender_handle(
    struct xp_extender *e, const char *verb, const char *body, size_t len, char **ret_body)
{
        if (strcmp(verb, "filter") == 0 || strcmp(verb, "prioritize") == 0)
                return filter_or_prioritize(e, verb, body, len, ret_body);
        if (strcmp(verb, "bind") == 0)
                return bind(e, body, len, ret_body);
        if (strcmp(verb, "healthz") == 0 || strcmp(verb, "livez") == 0)
                return answer(json_pack("{s:s}", "status", "ok"), 200, ret_body);
        if (strcmp(verb, "readyz") == 0) {
                size_t nodes;
                pthread_mutex_lock(&e->lock);
                nodes = ext_cache_nodes(e->cache);
                pthread_mutex_unlock(&e->lock);
                return answer(json_pack("{s:s, s:I}",
                                        "status",
                                        xp_extender_ready(e) ? "ok" : "syncing",
                                        "nodes",
                                        (json_int_t)nodes),
                              xp_extender_ready(e) ? 200 : 503,
                              ret_body);
        }
        return answer_refused(
            404, "POST", "unknown verb: the extender serves filter, prioritize and bind", ret_body);
}

static int http_fn(void *userdata, const char *verb, const char *body, size_t len, char **ret_body)
{
        return xp_extender_handle(userdata, verb, body, len, ret_body);
}

void xp_extender_free(struct xp_extender *e)
{
        if (!e)
                return;
        ext_http_stop(e->http);
        ext_watch_stop(e->nodes);
        ext_watch_stop(e->pods);
        ext_cache_free(e->cache);
        ext_reuse_free(e->reuse);
        json_decref(e->recent);
        xp_apiclient_free(e->bind_client);
        xp_kube_api_done(&e->api);
        pthread_mutex_destroy(&e->lock);
        pthread_mutex_destroy(&e->bind_lock);
        free(e->kubeconfig);
        free(e->sa_dir);
        free(e);
}

static int start_watches(struct xp_extender *e, struct xp_error *err)
{
        static const struct ext_watch_ops node_ops = {.replace = nodes_replace,
                                                      .event = node_event};
        static const struct ext_watch_ops pod_ops = {.replace = pods_replace, .event = pod_event};
        int r;

        r = xp_kube_api_load(e->kubeconfig, e->sa_dir, &e->api, err);
        if (r < 0)
                return r;
        r = ext_watch_start(
            "/api/v1/nodes", NULL, e->kubeconfig, e->sa_dir, &node_ops, e, &e->nodes, err);
        if (r < 0)
                return r;
        /* bound pods that hold something: pending ones are kube-scheduler's to send */
        return ext_watch_start("/api/v1/pods",
                               "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
                               e->kubeconfig,
                               e->sa_dir,
                               &pod_ops,
                               e,
                               &e->pods,
                               err);
}

int xp_extender_new(const struct xp_extender_options *options,
                    struct xp_extender **ret,
                    struct xp_error *err)
{
        _cleanup_(xp_extender_freep) struct xp_extender *e = calloc(1, sizeof(*e));
        int r;

        if (!e)
                return -ENOMEM;
        pthread_mutex_init(&e->lock, NULL);
        pthread_mutex_init(&e->bind_lock, NULL);
        e->o = *options;
        e->kubeconfig = options->kubeconfig ? strdup(options->kubeconfig) : NULL;
        e->sa_dir = options->serviceaccount_dir ? strdup(options->serviceaccount_dir) : NULL;
        e->recent = json_object();
        if ((options->kubeconfig && !e->kubeconfig) ||
            (options->serviceaccount_dir && !e->sa_dir) || !e->recent)
                return -ENOMEM;
        e->reuse = ext_reuse_new();
        if (!e->reuse)
                return -ENOMEM;
        r = ext_cache_new(&options->sched, &e->cache);
        if (r < 0)
                return r;
        if (!options->no_api) {
                r = start_watches(e, err);
                if (r < 0)
                        return r;
        }
        if (options->listen_host) {
                struct ext_http_options h = {
                    .host = options->listen_host,
                    .port = options->listen_port,
                    .cert_file = options->tls_cert_file,
                    .key_file = options->tls_key_file,
                    .client_ca_file = options->client_ca_file,
                    .body_max = XP_EXTENDER_BODY_MAX,
                    .fn = http_fn,
                    .userdata = e,
                };
                r = ext_http_start(&h, &e->http, err);
                if (r < 0)
                        return r;
        }
        e->o.kubeconfig = e->kubeconfig;
        e->o.serviceaccount_dir = e->sa_dir;
        e->o.listen_host = NULL;
        e->o.tls_cert_file = e->o.tls_key_file = e->o.client_ca_file = NULL;
        *ret = TAKE_PTR(e);
        return 0;
}
