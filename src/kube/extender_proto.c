/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-scheduler's extender protocol, both ways (xpool/extender.h). The Go types behind it have
 * no json tags, so the members are named as the Go fields ("Pod", "NodeNames", "FailedNodes"),
 * nil pointers and maps travel as null, and Go's decoder matches names case-insensitively, the
 * exact spelling first: the reader here does the same, so what kube-scheduler sends and what a
 * person types with curl both work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube_internal.h"
#include "xpool/codec.h"
#include "xpool/extender.h"

#define ANSWER_BYTES_PER_NODE 48 /* {"Host":"node-1234","Score":10}, or a name and its reason */

/* The member of that name: the exact spelling, else the first equal ignoring case (Go's rule). */
static json_t *member(const json_t *object, const char *name)
{
        json_t *exact = json_object_get(object, name), *value;
        const char *key;

        if (exact)
                return exact;
        json_object_foreach((json_t *)object, key, value) if (strcasecmp(key, name) ==
                                                              0) return value;
        return NULL;
}

void xp_extender_args_done(struct xp_extender_args *args)
{
        if (!args)
                return;
        xp_pod_free(args->pod);
        json_decref(args->pod_json);
        free(args->names);
        free(args->arena);
        free(args->nodes);
        *args = (struct xp_extender_args){0};
}

struct reading {
        struct xp_extender_args *a;
        size_t cap;
        const char *pod, *pod_end;
        bool seen_pod, seen_names, seen_nodes, names_null, nodes_null;
        char *name; /* the Node being read's metadata.name, in the arena */
        size_t arena_used;
        const char *why; /* what is wrong, beyond JSON itself */
        char why_buf[128];
};

static int add_name(struct reading *rd, char *name)
{
        struct xp_extender_args *a = rd->a;

        if (a->n_names == XP_EXTENDER_NODES_MAX)
                return -E2BIG;
        if (a->n_names == rd->cap) {
                size_t cap = rd->cap ? rd->cap * 2 : 64;
                char **m = realloc(a->names, cap * sizeof(*m));
                struct xp_extender_node_text *t =
                    a->cache_capable ? NULL : realloc(a->nodes, cap * sizeof(*t));
                if (m)
                        a->names = m;
                if (t)
                        a->nodes = t;
                if (!m || (!a->cache_capable && !t))
                        return -ENOMEM;
                rd->cap = cap;
        }
        a->names[a->n_names++] = name;
        return 0;
}

/* The string at s->p into the arena (which has room for every string of the body). */
static int arena_string(struct jscan *s, struct reading *rd, char **ret)
{
        char *at = rd->a->arena + rd->arena_used;
        size_t n;
        int r = jscan_string_to(s, at, &n);

        if (r < 0)
                return r;
        rd->arena_used += n;
        *ret = at;
        return 0;
}

static int node_name_element(struct jscan *s, size_t i, void *ud)
{
        struct reading *rd = ud;
        char *name = NULL;
        int r;

        if (s->p >= s->end || *s->p != '"') {
                snprintf(
                    rd->why_buf, sizeof(rd->why_buf), "NodeNames[%zu]: must be a node name", i);
                rd->why = rd->why_buf;
                return -EINVAL;
        }
        r = arena_string(s, rd, &name);
        if (r < 0)
                return r;
        if (!*name) {
                snprintf(
                    rd->why_buf, sizeof(rd->why_buf), "NodeNames[%zu]: must be a node name", i);
                rd->why = rd->why_buf;
                return -EINVAL;
        }
        return add_name(rd, name);
}

static int meta_member(struct jscan *s, const char *key, void *ud)
{
        struct reading *rd = ud;

        if (strcasecmp(key, "name") != 0 || (s->p < s->end && *s->p != '"'))
                return jscan_skip(s);
        return arena_string(s, rd, &rd->name);
}

static int item_member(struct jscan *s, const char *key, void *ud)
{
        if (strcasecmp(key, "metadata") != 0 || (s->p < s->end && *s->p != '{'))
                return jscan_skip(s);
        return jscan_object(s, meta_member, ud);
}

static int node_element(struct jscan *s, size_t i, void *ud)
{
        struct reading *rd = ud;
        const char *start = s->p;
        int r;

        rd->name = NULL;
        r = s->p < s->end && *s->p == '{' ? jscan_object(s, item_member, rd) : jscan_skip(s);
        if (r >= 0 && (!rd->name || !*rd->name)) {
                snprintf(rd->why_buf,
                         sizeof(rd->why_buf),
                         "Nodes.items[%zu].metadata.name: required",
                         i);
                rd->why = rd->why_buf;
                r = -EINVAL;
        }
        if (r < 0)
                return r;
        r = add_name(rd, rd->name);
        if (r >= 0)
                rd->a->nodes[rd->a->n_names - 1] =
                    (struct xp_extender_node_text){.text = start, .len = (size_t)(s->p - start)};
        return r;
}

static int nodes_member(struct jscan *s, const char *key, void *ud)
{
        struct reading *rd = ud;

        if (strcasecmp(key, "items") != 0)
                return jscan_skip(s);
        if (jscan_null(s))
                return 0;
        if (s->p >= s->end || *s->p != '[') {
                rd->why = "Nodes: must be a NodeList with an items list, or null";
                return -EINVAL;
        }
        return jscan_array(s, node_element, rd);
}

/* Records the first time a member is seen; a second one is refused, as jansson refuses it. */
static int once(struct reading *rd, bool *seen, const char *name)
{
        if (*seen) {
                snprintf(rd->why_buf, sizeof(rd->why_buf), "%s: given twice", name);
                rd->why = rd->why_buf;
                return -EINVAL;
        }
        *seen = true;
        return 0;
}

static int args_member(struct jscan *s, const char *key, void *ud)
{
        struct reading *rd = ud;
        int r;

        if (strcasecmp(key, "Pod") == 0) {
                if ((r = once(rd, &rd->seen_pod, "Pod")) < 0)
                        return r;
                rd->pod = s->p;
                r = jscan_skip(s);
                rd->pod_end = s->p;
                return r;
        }
        if (strcasecmp(key, "NodeNames") == 0) {
                if ((r = once(rd, &rd->seen_names, "NodeNames")) < 0)
                        return r;
                if ((rd->names_null = jscan_null(s)))
                        return 0;
                if (s->p >= s->end || *s->p != '[') {
                        rd->why = "NodeNames: must be a list of node names or null";
                        return -EINVAL;
                }
                if (rd->a->n_names) {
                        rd->why = "Nodes and NodeNames: give one of them, not both";
                        return -EINVAL;
                }
                rd->a->cache_capable = true;
                return jscan_array(s, node_name_element, rd);
        }
        if (strcasecmp(key, "Nodes") == 0) {
                if ((r = once(rd, &rd->seen_nodes, "Nodes")) < 0)
                        return r;
                if ((rd->nodes_null = jscan_null(s)))
                        return 0;
                if (s->p >= s->end || *s->p != '{') {
                        rd->why = "Nodes: must be a NodeList with an items list, or null";
                        return -EINVAL;
                }
                /* with NodeNames given too, the names are the candidates (nodeCacheCapable) */
                if (rd->a->cache_capable)
                        return jscan_skip(s);
                return jscan_object(s, nodes_member, rd);
        }
        return jscan_skip(s);
}

/* Reads the body's members; -EINVAL with err in the words of a JSON parser or of rd->why. */
static int scan(const char *body, size_t len, struct reading *rd, struct xp_error *err)
{
        struct jscan s = {.p = body, .end = body + len};
        bool object;
        int line, column, r;

        while (s.p < s.end && (*s.p == ' ' || *s.p == '\t' || *s.p == '\n' || *s.p == '\r'))
                s.p++;
        object = s.p < s.end && *s.p == '{';
        r = object ? jscan_object(&s, args_member, rd) : jscan_skip(&s);
        while (s.p < s.end && (*s.p == ' ' || *s.p == '\t' || *s.p == '\n' || *s.p == '\r'))
                s.p++;
        if (r >= 0 && s.p < s.end) {
                s.what = "the end of the body";
                s.at = s.p;
                r = -EINVAL;
        }
        if (r == -ENOMEM)
                return r;
        if (r == -E2BIG)
                return xp_errorf(err,
                                 r,
                                 "%s: more than %d nodes",
                                 rd->a->cache_capable ? "NodeNames" : "Nodes.items",
                                 XP_EXTENDER_NODES_MAX);
        if (r < 0 && rd->why)
                return xp_errorf(err, r, "%s", rd->why);
        if (r < 0) {
                jscan_where(&s, body, &line, &column);
                return xp_errorf(err,
                                 r,
                                 "the body is not JSON: line %d, column %d: expected %s",
                                 line,
                                 column,
                                 s.what ? s.what : "a value");
        }
        if (!object)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "the body must be an ExtenderArgs object {\"Pod\", \"Nodes\" or \"NodeNames\"}");
        return 0;
}

int xp_extender_args_decode(const char *body,
                            size_t len,
                            struct xp_extender_args *ret,
                            struct xp_error *err)
{
        struct xp_extender_args a = {0};
        struct xp_decode_source source = {.name = "Pod"};
        struct reading rd = {.a = &a};
        json_error_t jerr;
        int r;

        /* every name fits in as many bytes as the body has */
        a.arena = malloc(len + 1);
        if (!a.arena)
                return -ENOMEM;
        r = scan(body, len, &rd, err);
        if (r >= 0 && (!rd.seen_pod || !rd.pod || *rd.pod != '{'))
                r = xp_errorf(err, -EINVAL, "Pod: required, the pod being scheduled");
        if (r >= 0 && !a.cache_capable && (!rd.seen_nodes || rd.nodes_null))
                r = xp_errorf(
                    err,
                    -EINVAL,
                    "neither Nodes nor NodeNames: kube-scheduler sends one of them (NodeNames when the extender is nodeCacheCapable)");
        if (r >= 0) {
                a.pod_json = json_loadb(
                    rd.pod, (size_t)(rd.pod_end - rd.pod), JSON_REJECT_DUPLICATES, &jerr);
                r = a.pod_json ? xp_pod_from_json(a.pod_json, &source, 0, &a.pod, err)
                               : xp_errorf(err, -EINVAL, "Pod: %s", jerr.text);
                /* the body is right, the pod is one xpool refuses: an answer about this pod */
                if (r == -EINVAL && a.pod_json)
                        r = -EBADMSG;
        }
        if (r < 0) {
                xp_extender_args_done(&a);
                return r;
        }
        *ret = a;
        return 0;
}

void xp_extender_binding_done(struct xp_extender_binding *b)
{
        if (!b)
                return;
        free(b->pod_name);
        free(b->pod_namespace);
        free(b->pod_uid);
        free(b->node);
        *b = (struct xp_extender_binding){0};
}

int xp_extender_binding_decode(const char *body,
                               size_t len,
                               struct xp_extender_binding *ret,
                               struct xp_error *err)
{
        static const char *const required[] = {"PodName", "PodNamespace", "Node"};
        struct xp_extender_binding b = {0};
        json_error_t jerr;
        json_auto_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        const json_t *uid;

        if (!root)
                return xp_errorf(err,
                                 -EINVAL,
                                 "the body is not JSON: line %d, column %d: %s",
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        if (!json_is_object(root))
                return xp_errorf(err, -EINVAL, "the body must be an ExtenderBindingArgs object");
        for (size_t i = 0; i < XP_ELEMENTSOF(required); i++) {
                const char *v = json_string_value(member(root, required[i]));
                if (!v || !*v)
                        return xp_errorf(err, -EINVAL, "%s: required, a string", required[i]);
        }
        uid = member(root, "PodUID");
        if (uid && !json_is_null(uid) && !json_is_string(uid))
                return xp_errorf(err, -EINVAL, "PodUID: must be a string");
        b.pod_name = strdup(json_string_value(member(root, "PodName")));
        b.pod_namespace = strdup(json_string_value(member(root, "PodNamespace")));
        b.node = strdup(json_string_value(member(root, "Node")));
        b.pod_uid =
            json_is_string(uid) && *json_string_value(uid) ? strdup(json_string_value(uid)) : NULL;
        if (!b.pod_name || !b.pod_namespace || !b.node ||
            (json_is_string(uid) && *json_string_value(uid) && !b.pod_uid)) {
                xp_extender_binding_done(&b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}

/* The reason written last, where it is in the answer: nodes that fail alike share one reason
 * (the core's verdicts point to the same text), written once and copied after. */
struct last_reason {
        const char *text;
        size_t at, len;
};

static void reason_put(struct jbuf *b, const char *reason, struct last_reason *last)
{
        size_t at = b->len;

        if (reason == last->text && !b->oom) {
                jbuf_repeat(b, last->at, last->len);
                return;
        }
        jbuf_string(b, reason);
        *last = (struct last_reason){.text = reason, .at = at, .len = b->len - at};
}

int xp_extender_filter_result(const struct xp_extender_args *args,
                              const struct xp_sched_verdict *v,
                              const char *unknown_reason,
                              char **ret)
{
        struct jbuf b = {0};
        bool first = true;

        /* a name and a shared reason's text a node, about */
        jbuf_reserve(&b, args->n_names * ANSWER_BYTES_PER_NODE + 128);
        jbuf_puts(&b,
                  args->cache_capable ? "{\"Nodes\":null,\"NodeNames\":["
                                      : "{\"Nodes\":{\"metadata\":{},\"items\":[");
        for (size_t i = 0; i < args->n_names; i++) {
                if (v[i].fit != 1)
                        continue;
                if (!first)
                        jbuf_puts(&b, ",");
                first = false;
                if (args->cache_capable)
                        jbuf_string(&b, args->names[i]);
                else
                        jbuf_put(&b, args->nodes[i].text, args->nodes[i].len);
        }
        jbuf_puts(&b, args->cache_capable ? "]" : "]},\"NodeNames\":null");
        for (int pass = 0; pass < 2; pass++) {
                struct last_reason last = {0};

                first = true;
                jbuf_puts(&b, pass ? ",\"FailedAndUnresolvableNodes\":{" : ",\"FailedNodes\":{");
                for (size_t i = 0; i < args->n_names; i++) {
                        if (v[i].fit == 1 || v[i].unresolvable != (pass == 1))
                                continue;
                        if (!first)
                                jbuf_puts(&b, ",");
                        first = false;
                        jbuf_string(&b, args->names[i]);
                        jbuf_puts(&b, ":");
                        reason_put(
                            &b, v[i].fit == 0 && v[i].reason ? v[i].reason : unknown_reason, &last);
                }
                jbuf_puts(&b, "}");
        }
        jbuf_puts(&b, ",\"Error\":\"\"}");
        *ret = jbuf_take(&b);
        return *ret ? 0 : -ENOMEM;
}

int64_t xp_extender_scale(int64_t score, int64_t best, bool is_best)
{
        int64_t s;

        if (is_best)
                return XP_EXTENDER_MAX_PRIORITY;
        if (best <= 0 || score <= 0)
                return 0;
        /* below the best, so kube-scheduler's own scores decide only among equals */
        s = (int64_t)((__int128)score * XP_EXTENDER_MAX_PRIORITY / best);
        return s >= XP_EXTENDER_MAX_PRIORITY ? XP_EXTENDER_MAX_PRIORITY - 1 : s;
}

int xp_extender_priorities(const struct xp_extender_args *args,
                           const struct xp_sched_verdict *v,
                           char **ret)
{
        struct jbuf b = {0};
        int64_t best = 0;

        for (size_t i = 0; i < args->n_names; i++)
                if (v[i].fit == 1 && v[i].best)
                        best = v[i].score;
        jbuf_reserve(&b, args->n_names * ANSWER_BYTES_PER_NODE + 8);
        jbuf_puts(&b, "[");
        for (size_t i = 0; i < args->n_names; i++) {
                jbuf_puts(&b, i ? ",{\"Host\":" : "{\"Host\":");
                jbuf_string(&b, args->names[i]);
                jbuf_puts(&b, ",\"Score\":");
                jbuf_int(&b, v[i].fit == 1 ? xp_extender_scale(v[i].score, best, v[i].best) : 0);
                jbuf_puts(&b, "}");
        }
        jbuf_puts(&b, "]");
        *ret = jbuf_take(&b);
        return *ret ? 0 : -ENOMEM;
}
