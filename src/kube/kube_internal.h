/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the files of src/kube share and nothing outside uses. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/kubeinventory.h"
#include "xpool/sched.h"

/*
 * The inventory annotation's text expanded into the JSON of a Node's status.xpool (not yet
 * decoded by the codec: a caller may put it into a Node and decode that once), with the
 * allocation when ret_allocation is not NULL. Errors as xp_kube_inventory_decode().
 */
int xp_kube_inventory_expand(const char *text,
                             size_t len,
                             json_t **ret,
                             struct xp_kube_allocation *ret_allocation,
                             struct xp_error *err);

/*
 * When the publisher should patch next, a pure function of the clock: changed says the desired
 * labels or annotation differ from what was last patched. Returns 0 to patch now, or how many ms
 * to wait before asking again (INT64_MAX: nothing to do). last_patch_ms < 0: never patched.
 */
int64_t xp_kube_publish_wait_ms(int64_t now_ms,
                                bool changed,
                                int64_t last_patch_ms,
                                int64_t min_interval_ms,
                                int64_t resync_ms);

/* ---- the extender's cluster picture (extender_cache.c); the caller serializes calls --------- */

struct ext_cache;

int ext_cache_new(const struct xp_sched_options *options, struct ext_cache **ret);
void ext_cache_free(struct ext_cache *cache);
/* The snapshot, for evaluating and placing. */
struct xp_sched *ext_cache_sched(struct ext_cache *cache);
bool ext_cache_has_node(const struct ext_cache *cache, const char *name);
size_t ext_cache_nodes(const struct ext_cache *cache);
/* A Node as the API has it (its inventory annotation read into status.xpool). -errno with err;
 * a node that cannot be read is removed from the snapshot. */
int ext_cache_node_set(struct ext_cache *cache, const json_t *node, struct xp_error *err);
void ext_cache_node_remove(struct ext_cache *cache, const char *name, struct xp_error *err);
/* A Pod as the API has it: accounted while bound and not finished. -errno with err. */
int ext_cache_pod_set(struct ext_cache *cache, const json_t *pod, struct xp_error *err);
/* The node a bound, running pod of the watch (or bound by this extender) is on; NULL if none. */
/* The node the cached pod ns/name is bound to; NULL when none or when the cached pod's UID is not
 * uid (a pod of the same name made again), uid NULL or "" to match any. */
const char *ext_cache_pod_node(const struct ext_cache *cache,
                               const char *ns,
                               const char *name,
                               const char *uid);
int ext_cache_pod_remove(struct ext_cache *cache,
                         const char *namespace,
                         const char *name,
                         struct xp_error *err);
/* Every Node (nodes) or Pod after a list: those missing from items are gone. -EINVAL with err
 * naming the first object that could not be taken (the others are). */
int ext_cache_replace(struct ext_cache *cache,
                      bool nodes,
                      const json_t *items,
                      struct xp_error *err);
/* The pod bound to node by the extender, with its placement annotation's text. */
int ext_cache_assume(struct ext_cache *cache,
                     const struct xp_pod *pod,
                     const char *node,
                     const char *placement,
                     struct xp_error *err);

/* Ends the assume of a pod once its binding is answered. Bound: the assumed pod stands. Not
 * bound: the pod is as the watch last said (bound there by an earlier call, or elsewhere, or not
 * bound), unless the watch has spoken of it since. */
int ext_cache_unassume(struct ext_cache *cache,
                       const char *namespace,
                       const char *name,
                       bool bound,
                       struct xp_error *err);

/* How many times the cache changed: verdicts computed at one generation stand until it moves. */
uint64_t ext_cache_generation(const struct ext_cache *cache);

/* ---- a filter's verdicts kept for its prioritize (extender_reuse.c); under the cache's lock -- */

struct ext_reuse;

struct ext_reuse *ext_reuse_new(void);
void ext_reuse_free(struct ext_reuse *reuse);
/* Keeps set (taken: *set is emptied) as the verdicts for pod over names at generation. */
void ext_reuse_keep(struct ext_reuse *reuse,
                    const json_t *pod,
                    uint64_t generation,
                    const char *const *names,
                    size_t n,
                    struct xp_sched_verdicts *set);
/* The kept verdicts for names (valid until the next call), or NULL: another pod, a changed cache,
 * or names that are neither the filter's nor exactly those that fit. */
const struct xp_sched_verdict *ext_reuse_find(struct ext_reuse *reuse,
                                              const json_t *pod,
                                              uint64_t generation,
                                              const char *const *names,
                                              size_t n);

/* ---- list and watch of one collection (extender_watch.c) ------------------------------------ */

struct ext_watch_ops {
        /* the whole collection after a list (again after a 410 Gone) */
        int (*replace)(void *userdata, const json_t *items, struct xp_error *err);
        /* one event: "ADDED", "MODIFIED" or "DELETED" with its object */
        int (*event)(void *userdata, const char *type, const json_t *object, struct xp_error *err);
};

struct ext_watch;

/*
 * Lists path (with field_selector when not NULL, 500 at a time) and watches it from the list's
 * resourceVersion on a thread of its own, listing again on 410 Gone and retrying failures (1 s
 * doubling to 30 s). The API is reached as xp_kube_api_load(kubeconfig, sa_dir) says. -errno
 * with err when it cannot start.
 */
int ext_watch_start(const char *path,
                    const char *field_selector,
                    const char *kubeconfig,
                    const char *sa_dir,
                    const struct ext_watch_ops *ops,
                    void *userdata,
                    struct ext_watch **ret,
                    struct xp_error *err);
/* Stops the thread (within about a second). Accepts NULL. */
void ext_watch_stop(struct ext_watch *watch);
/* Whether the collection has been listed once. */
bool ext_watch_synced(struct ext_watch *watch);

/* ---- the HTTP(S) endpoint (extender_http.c) ----------------------------------------------- */

/* Serves one request: verb is the path's last segment for POST ("filter"), or "healthz",
 * "readyz", "livez" for GET (body NULL). Returns the HTTP status with *ret_body (caller frees;
 * NULL: out of memory). */
typedef int
ext_http_fn(void *userdata, const char *verb, const char *body, size_t len, char **ret_body);

struct ext_http_options {
        const char *host;                 /* an IPv4 or IPv6 address */
        uint16_t port;                    /* 0: a free one */
        const char *cert_file, *key_file; /* both: HTTPS */
        const char *client_ca_file;       /* HTTPS only: require a client certificate it signed */
        size_t body_max;
        ext_http_fn *fn;
        void *userdata;
};

struct ext_http;

int ext_http_start(const struct ext_http_options *options,
                   struct ext_http **ret,
                   struct xp_error *err);
uint16_t ext_http_port(const struct ext_http *http);
void ext_http_stop(struct ext_http *http);

/* ---- the extender's JSON, read and written by hand (extender_json.c) ------------------------ */

/* A scan of a JSON text: p moves forward; on failure what names what was expected at at. */
struct jscan {
        const char *p;
        const char *end;
        int depth;
        const char *what; /* "a value", "',' or '}'", ... */
        const char *at;
};

/* Skips one value, checking it is JSON (nesting at most 100 deep). -EINVAL. */
int jscan_skip(struct jscan *scan);
/* The string at p, unescaped into *ret (caller frees; NULL ret: only checked). -EINVAL, -ENOMEM. */
int jscan_string(struct jscan *scan, char **ret);
/* The string at p, unescaped and NUL-terminated into out, which has room for the escaped text
 * (the decoded one is never longer); *ret_n: the bytes used, the NUL counted. -EINVAL. */
int jscan_string_to(struct jscan *scan, char *out, size_t *ret_n);
/* The object at p: member() for each member with its unescaped name and the scan at its value,
 * which member() must read or skip; member NULL: skipped. -EINVAL or member()'s error. */
int jscan_object(struct jscan *scan,
                 int (*member)(struct jscan *scan, const char *key, void *userdata),
                 void *userdata);
/* The list at p: element() for each element, with the scan at it, which it must read or skip. */
int jscan_array(struct jscan *scan,
                int (*element)(struct jscan *scan, size_t i, void *userdata),
                void *userdata);
/* Whether the value at p is null (then read). */
bool jscan_null(struct jscan *scan);
/* Line and column (from 1) of the failure, in the text starting at start. */
void jscan_where(const struct jscan *scan, const char *start, int *ret_line, int *ret_column);

/* A growing output buffer; out of memory is remembered and jbuf_take() returns NULL. */
struct jbuf {
        char *p;
        size_t len;
        size_t cap;
        bool oom;
};

/* Room for that many more bytes at once: an answer over thousands of nodes grows no copies. */
void jbuf_reserve(struct jbuf *buf, size_t bytes);
void jbuf_put(struct jbuf *buf, const char *text, size_t len);
void jbuf_puts(struct jbuf *buf, const char *text);
void jbuf_string(struct jbuf *buf, const char *s); /* quoted and escaped */
/* Appends a copy of the len bytes at offset at of what buf holds already. */
void jbuf_repeat(struct jbuf *buf, size_t at, size_t len);
void jbuf_int(struct jbuf *buf, long long value);
/* The text written (caller frees), NULL after running out of memory. The buffer is reset. */
char *jbuf_take(struct jbuf *buf);
