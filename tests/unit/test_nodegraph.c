/* SPDX-License-Identifier: Apache-2.0 */
/* The node authorizer's graph (xpool/nodegraph.h) over a temporary store: pod writes in, a
 * node's relationships out, the same answers as a pass over the pods (xp_pod_references()). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmpdir.h"
#include "xpool/doc.h"
#include "xpool/nodegraph.h"
#include "xpool/store.h"

#define HISTORY 8 /* events the store keeps: small, so that a test can outrun it */

struct fixture {
        struct tmpdir *dir;
        struct xp_store *store;
        struct xp_node_graph *graph;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);
        struct xp_error err = {0};
        void *dir;

        assert_non_null(f);
        tmpdir_setup(&dir, "nodegraph", "state.db");
        f->dir = dir;
        struct xp_store_options options = {.path = f->dir->path, .event_history = HISTORY};
        if (xp_store_open(&options, &f->store, &err) < 0)
                fail_msg("store: %s", err.msg);
        assert_int_equal(xp_node_graph_new(f->store, &f->graph), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        void *dir = f->dir;

        xp_node_graph_free(f->graph);
        xp_store_close(f->store);
        free(f);
        return tmpdir_teardown(&dir);
}

/* A pod of namespace ns named name, bound to node (NULL: unbound), with spec_json as its spec's
 * other fields ("" for none). */
static json_t *pod(const char *ns, const char *name, const char *node, const char *spec_json)
{
        char text[2048];
        json_t *o;

        snprintf(text,
                 sizeof text,
                 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":{%s%s%s%s%s}}",
                 ns,
                 name,
                 node ? "\"nodeName\":\"" : "",
                 node ? node : "",
                 node ? "\"" : "",
                 node && spec_json[0] ? "," : "",
                 spec_json);
        o = json_loads(text, 0, NULL);
        assert_non_null(o);
        return o;
}

static void
create(struct fixture *f, const char *ns, const char *name, const char *node, const char *spec)
{
        json_t *o = pod(ns, name, node, spec);

        assert_int_equal(xp_store_create(f->store, "pods", ns, name, o, NULL, NULL), 0);
        json_decref(o);
}

static void
update(struct fixture *f, const char *ns, const char *name, const char *node, const char *spec)
{
        json_t *o = pod(ns, name, node, spec);

        assert_int_equal(xp_store_update(f->store, "pods", ns, name, 0, o, NULL, NULL), 0);
        json_decref(o);
}

static void delete (struct fixture *f, const char *ns, const char *name)
{
        assert_int_equal(xp_store_delete(f->store, "pods", ns, name, 0, NULL, NULL, NULL), 0);
}

static bool refs(struct fixture *f,
                 enum xp_pod_ref_kind kind,
                 const char *ns,
                 const char *name,
                 const char *node)
{
        struct xp_error err = {0};
        int r = xp_node_graph_references(f->graph, kind, ns, name, node, &err);

        if (r < 0)
                fail_msg("graph: %s", err.msg);
        return r > 0;
}

static void sizes(struct fixture *f, size_t want_pods, size_t want_edges)
{
        struct xp_error err = {0};
        size_t pods = 0, edges = 0;

        assert_int_equal(xp_node_graph_size(f->graph, &pods, &edges, &err), 0);
        assert_int_equal(pods, want_pods);
        assert_int_equal(edges, want_edges);
}

#define S XP_POD_REF_SECRET
#define C XP_POD_REF_CONFIGMAP

static const char volume_ref[] = "\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"cm\"}}]";

/* Only a bound pod relates its node to what it names; binding it makes the edge, for its node
 * and namespace alone. */
static void bound_unbound(void **state)
{
        struct fixture *f = *state;

        create(f, "ns", "p", NULL, volume_ref);
        assert_false(refs(f, C, "ns", "cm", "node-a"));
        sizes(f, 0, 0);
        update(f, "ns", "p", "node-a", volume_ref);
        assert_true(refs(f, C, "ns", "cm", "node-a"));
        assert_false(refs(f, C, "ns", "cm", "node-b"));
        assert_false(refs(f, C, "other", "cm", "node-a"));
        assert_false(refs(f, S, "ns", "cm", "node-a"));
        sizes(f, 1, 1);
        /* moved to another node (as a test may write it): the old node loses the edge */
        update(f, "ns", "p", "node-b", volume_ref);
        assert_false(refs(f, C, "ns", "cm", "node-a"));
        assert_true(refs(f, C, "ns", "cm", "node-b"));
        /* no longer naming it */
        update(f, "ns", "p", "node-b", "");
        assert_false(refs(f, C, "ns", "cm", "node-b"));
        sizes(f, 1, 0);
}

/* Two pods of a node name one ConfigMap: the edge stays until the last of them is gone. */
static void deleted(void **state)
{
        struct fixture *f = *state;

        create(f, "ns", "p1", "node-a", volume_ref);
        create(f, "ns", "p2", "node-a", volume_ref);
        assert_true(refs(f, C, "ns", "cm", "node-a"));
        sizes(f, 2, 1);
        delete (f, "ns", "p1");
        assert_true(refs(f, C, "ns", "cm", "node-a"));
        delete (f, "ns", "p2");
        assert_false(refs(f, C, "ns", "cm", "node-a"));
        sizes(f, 0, 0);
}

/* Every place a pod names a Secret or ConfigMap (xpool/podrefs.h), each of its own kind only. */
static void each_place(void **state)
{
        struct fixture *f = *state;
        static const struct {
                const char *spec, *name;
                enum xp_pod_ref_kind kind;
        } places[] = {
            {"\"volumes\":[{\"name\":\"v\",\"secret\":{\"secretName\":\"vol-s\"}}]", "vol-s", S},
            {"\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"vol-c\"}}]", "vol-c", C},
            {"\"containers\":[{\"name\":\"c\",\"envFrom\":[{\"secretRef\":{\"name\":\"ef-s\"}}]}]",
             "ef-s",
             S},
            {"\"initContainers\":[{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"ef-c\"}}]}]",
             "ef-c",
             C},
            {"\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"E\",\"valueFrom\":"
             "{\"secretKeyRef\":{\"name\":\"env-s\",\"key\":\"k\"}}}]}]",
             "env-s",
             S},
            {"\"ephemeralContainers\":[{\"name\":\"c\",\"env\":[{\"name\":\"E\",\"valueFrom\":"
             "{\"configMapKeyRef\":{\"name\":\"env-c\",\"key\":\"k\"}}}]}]",
             "env-c",
             C},
            {"\"volumes\":[{\"name\":\"v\",\"projected\":{\"sources\":[{\"secret\":{\"name\":"
             "\"proj-s\"}},{\"serviceAccountToken\":{\"path\":\"t\"}}]}}]",
             "proj-s",
             S},
            {"\"volumes\":[{\"name\":\"v\",\"projected\":{\"sources\":[{\"configMap\":{\"name\":"
             "\"kube-root-ca.crt\"}},{\"downwardAPI\":{}}]}}]",
             "kube-root-ca.crt",
             C},
            {"\"imagePullSecrets\":[{\"name\":\"regcred\"}]", "regcred", S},
        };
        char name[32];

        for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
                snprintf(name, sizeof name, "p%zu", i);
                create(f, "ns", name, "node-a", places[i].spec);
        }
        for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
                enum xp_pod_ref_kind other = places[i].kind == S ? C : S;

                assert_true(refs(f, places[i].kind, "ns", places[i].name, "node-a"));
                assert_false(refs(f, other, "ns", places[i].name, "node-a"));
                assert_false(refs(f, places[i].kind, "ns", places[i].name, "node-b"));
        }
        sizes(f, sizeof places / sizeof places[0], sizeof places / sizeof places[0]);
}

/* Names that would read as one another's if the key only joined them. */
static void no_confusion(void **state)
{
        struct fixture *f = *state;

        create(f, "a", "p", "b", "\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"x\"}}]");
        assert_true(refs(f, C, "a", "x", "b"));
        assert_false(refs(f, C, "a", "x/b", ""));
        assert_false(refs(f, C, "a/x", "b", "b"));
        assert_false(refs(f, C, "a", "x", "b/"));
        assert_false(refs(f, C, NULL, "x", "b"));
        assert_false(refs(f, C, "a", NULL, "b"));
}

/* When the store's log has moved past what the graph read, it lists again: the answers stay. */
static void relist(void **state)
{
        struct fixture *f = *state;
        char name[32];

        create(f, "ns", "kept", "node-a", volume_ref);
        create(f, "ns", "gone", "node-b", volume_ref);
        assert_true(refs(f, C, "ns", "cm", "node-b"));
        for (int i = 0; i < 3 * HISTORY; i++) {
                snprintf(name, sizeof name, "filler-%d", i);
                create(f, "ns", name, NULL, volume_ref);
        }
        delete (f, "ns", "gone");
        assert_true(refs(f, C, "ns", "cm", "node-a"));
        assert_false(refs(f, C, "ns", "cm", "node-b"));
        sizes(f, 1, 1);
}

/* The facts of a pod as the graph answers them: NULL when it holds no bound pod of that name. */
static json_t *facts(struct fixture *f, const char *ns, const char *name)
{
        struct xp_error err = {0};
        json_t *o = NULL;
        int r = xp_node_graph_pod(f->graph, ns, name, &o, &err);

        if (r < 0)
                fail_msg("graph: %s", err.msg);
        assert_int_equal(r, o != NULL);
        return o;
}

static void expect_facts(const json_t *o, const char *node, const char *account, const char *uid)
{
        assert_non_null(o);
        assert_string_equal(xp_json_str_at(o, "spec.nodeName", ""), node);
        assert_string_equal(xp_json_str_at(o, "spec.serviceAccountName", ""), account);
        assert_string_equal(xp_json_str_at(o, "metadata.uid", ""), uid);
        assert_string_equal(xp_json_str_at(o, "metadata.name", ""), "p");
        assert_string_equal(xp_json_str_at(o, "metadata.namespace", ""), "ns");
}

/* A TokenRequest's pod (api_token.c): only a bound one, as it is now, a new one of the same name
 * not taken for the old. */
static void pod_facts(void **state)
{
        struct fixture *f = *state;
        json_t *o, *p;

        create(f, "ns", "p", NULL, "");
        assert_null(facts(f, "ns", "p"));
        update(f, "ns", "p", "n1", "\"serviceAccountName\":\"builder\"");
        o = facts(f, "ns", "p");
        expect_facts(o, "n1", "builder", "");
        json_decref(o);
        delete (f, "ns", "p");
        assert_null(facts(f, "ns", "p"));
        p = pod("ns", "p", "n2", "");
        json_object_set_new(json_object_get(p, "metadata"), "uid", json_string("u-2"));
        assert_int_equal(xp_store_create(f->store, "pods", "ns", "p", p, NULL, NULL), 0);
        json_decref(p);
        o = facts(f, "ns", "p");
        expect_facts(o, "n2", "default", "u-2");
        json_decref(o);
        assert_null(facts(f, "ns", "q"));
        assert_null(facts(f, "other", "p"));
        update(f, "ns", "p", "n3", "\"serviceAccountName\":\"builder\"");
        o = facts(f, "ns", "p");
        assert_non_null(o);
        assert_string_equal(xp_json_str_at(o, "spec.nodeName", ""), "n3");
        assert_string_equal(xp_json_str_at(o, "spec.serviceAccountName", ""), "builder");
        assert_string_equal(xp_json_str_at(o, "metadata.name", ""), "p");
        json_decref(o);
        update(f, "ns", "p", NULL, "");
        assert_null(facts(f, "ns", "p"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(bound_unbound, setup, teardown),
            cmocka_unit_test_setup_teardown(deleted, setup, teardown),
            cmocka_unit_test_setup_teardown(each_place, setup, teardown),
            cmocka_unit_test_setup_teardown(no_confusion, setup, teardown),
            cmocka_unit_test_setup_teardown(relist, setup, teardown),
            cmocka_unit_test_setup_teardown(pod_facts, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
