/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A node's read of a ConfigMap, as the node authorizer decides it (docs/security.md, "Roles"):
 * PODS pods in one namespace, spread over 100 nodes, each naming kube-root-ca.crt in its
 * projected token volume and a Secret of its own by env. Prints the CPU time per decision of
 *   - the pass over the namespace's pods (list them, look at each bound to the node: what the
 *     server did before the graph), for a read allowed (the node's pods come last in the list)
 *     and one denied (no pod names the object: the whole namespace);
 *   - the graph (xpool/nodegraph.h): its first question (it lists the pods once), then questions
 *     with no pod written between them, then questions each after one pod write (a catch-up of
 *     one event); and the heap the graph holds per bound pod once it has listed them (mallinfo2:
 *     its pods and edges, which the server keeps as long as it runs).
 * Prints figures; asserts nothing.
 *
 *   build/bench/bench_nodeauthz [PODS [DIR]]     defaults: 10000 $TMPDIR or /tmp
 */
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "xpool/nodegraph.h"
#include "xpool/podrefs.h"
#include "xpool/store.h"

#define NODES   100
#define WRITERS 16

static struct xp_store *store;
static long pods;
static atomic_long next_pod;
static atomic_int failed;

/* Pod i: the nodes take the pods in blocks, so the last node's pods come last in the list (the
 * pass's worst allowed case); each with the kube-api-access volume every pod gets and an env
 * Secret of its own. */
static json_t *pod(long i)
{
        char name[32], node[32], secret[32];
        long per_node = (pods + NODES - 1) / NODES;

        snprintf(name, sizeof name, "p-%06ld", i);
        snprintf(node, sizeof node, "node-%ld", i / per_node);
        snprintf(secret, sizeof secret, "s-%06ld", i);
        return json_pack(
            "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:[{s:s, s:s, s:[{s:s, s:{s:{s:s, s:s}}}]}],"
            " s:[{s:s, s:{s:[{s:{s:i, s:s}}, {s:{s:s, s:[{s:s, s:s}]}}]}}]}}",
            "apiVersion",
            "v1",
            "kind",
            "Pod",
            "metadata",
            "name",
            name,
            "namespace",
            "team",
            "spec",
            "nodeName",
            node,
            "serviceAccountName",
            "default",
            "containers",
            "name",
            "main",
            "image",
            "busybox",
            "env",
            "name",
            "TOKEN",
            "valueFrom",
            "secretKeyRef",
            "name",
            secret,
            "key",
            "t",
            "volumes",
            "name",
            "kube-api-access",
            "projected",
            "sources",
            "serviceAccountToken",
            "expirationSeconds",
            3607,
            "path",
            "token",
            "configMap",
            "name",
            "kube-root-ca.crt",
            "items",
            "key",
            "ca.crt",
            "path",
            "ca.crt");
}

static void *writer(void *arg)
{
        (void)arg;
        for (long i; (i = atomic_fetch_add(&next_pod, 1)) < pods;) {
                json_t *o = pod(i);
                char name[32];

                snprintf(name, sizeof name, "p-%06ld", i);
                if (!o || xp_store_create(store, "pods", "team", name, o, NULL, NULL) < 0)
                        atomic_store(&failed, 1);
                json_decref(o);
        }
        return NULL;
}

/* The decision as the server made it before the graph: every pod of the namespace. */
static bool pass_over_pods(const char *ns, const char *name, const char *node)
{
        json_t *list = NULL, *p;
        bool found = false;
        size_t i;

        if (xp_store_list(store, "pods", ns, &list, NULL, NULL) < 0)
                return false;
        json_array_foreach(list, i, p)
        {
                const char *bound =
                    json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));

                if (bound && strcmp(bound, node) == 0 &&
                    xp_pod_references(p, XP_POD_REF_CONFIGMAP, name)) {
                        found = true;
                        break;
                }
        }
        json_decref(list);
        return found;
}

static double cpu_us_per(uint64_t cpu0, long n)
{
        return (double)(bench_cpu_ns() - cpu0) / 1e3 / (double)n;
}

static struct xp_node_graph *graph;

/* One decision, as the server made it before the graph (a pass) and as it does now. */
typedef bool (*decide_fn)(const char *name, const char *node);

static bool decide_pass(const char *name, const char *node)
{
        return pass_over_pods("team", name, node);
}

static bool decide_graph(const char *name, const char *node)
{
        return xp_node_graph_references(graph, XP_POD_REF_CONFIGMAP, "team", name, node, NULL) > 0;
}

/* n reads of ConfigMap name by node, with no pod written between them. */
static void reads(const char *what, decide_fn decide, const char *name, const char *node, long n)
{
        uint64_t cpu0 = bench_cpu_ns();
        long yes = 0;

        for (long i = 0; i < n; i++)
                yes += decide(name, node);
        printf("%-28s %10.3f us CPU per read (%ld of %ld allowed)\n",
               what,
               cpu_us_per(cpu0, n),
               yes,
               n);
}

static void bench_graph(const char *last_node)
{
        struct xp_error err = {0};
        long yes = 0, writes = 200;
        size_t held_pods = 0, edges = 0;
        uint64_t cpu0;

        size_t heap0 = mallinfo2().uordblks;

        if (xp_node_graph_new(store, &graph) < 0)
                return;
        cpu0 = bench_cpu_ns();
        yes = decide_graph("kube-root-ca.crt", last_node);
        printf("%-28s %10.3f us CPU (answer %ld)\n",
               "graph, first read (lists):",
               cpu_us_per(cpu0, 1),
               yes);
        (void)xp_node_graph_size(graph, &held_pods, &edges, &err);
        printf("graph holds %zu pods, %zu edges: %.0f bytes of heap per pod\n",
               held_pods,
               edges,
               (double)(mallinfo2().uordblks - heap0) / (double)(held_pods ? held_pods : 1));
        reads("graph, allowed:", decide_graph, "kube-root-ca.crt", last_node, 200000);
        reads("graph, denied:", decide_graph, "unrelated", last_node, 200000);
        /* each read after one pod write: the catch-up of one event (the write is not timed) */
        uint64_t spent = 0;
        yes = 0;
        for (long i = 0; i < writes; i++) {
                json_t *o = pod(i);
                char name[32];

                snprintf(name, sizeof name, "p-%06ld", i);
                json_object_set_new(json_object_get(o, "metadata"),
                                    "labels",
                                    json_pack("{s:I}", "round", (json_int_t)i));
                if (xp_store_update(store, "pods", "team", name, 0, o, NULL, NULL) < 0)
                        atomic_store(&failed, 1);
                json_decref(o);
                cpu0 = bench_cpu_ns();
                yes += decide_graph("kube-root-ca.crt", last_node);
                spent += bench_cpu_ns() - cpu0;
        }
        printf("%-28s %10.3f us CPU per read (%ld of %ld allowed)\n",
               "graph, after one pod write:",
               (double)spent / 1e3 / (double)writes,
               yes,
               writes);
        xp_node_graph_free(graph);
}

int main(int argc, char **argv)
{
        const char *base = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        char dir[512], path[600], last_node[32];
        pthread_t threads[WRITERS];
        struct xp_error err = {0};

        pods = argc > 1 ? atol(argv[1]) : 10000;
        if (pods < NODES) {
                fprintf(stderr, "usage: bench_nodeauthz [PODS (>= %d) [DIR]]\n", NODES);
                return 2;
        }
        snprintf(dir, sizeof dir, "%s/bench-nodeauthz-XXXXXX", base);
        if (!mkdtemp(dir))
                return perror("mkdtemp"), 1;
        snprintf(path, sizeof path, "%s/state.db", dir);
        if (xp_store_open(&(struct xp_store_options){.path = path}, &store, &err) < 0) {
                fprintf(stderr, "store: %s\n", err.msg);
                return 1;
        }
        for (int t = 0; t < WRITERS; t++)
                pthread_create(&threads[t], NULL, writer, NULL);
        for (int t = 0; t < WRITERS; t++)
                pthread_join(threads[t], NULL);
        snprintf(last_node, sizeof last_node, "node-%d", NODES - 1);
        printf("%ld pods in namespace team on %d nodes; node %s reads ConfigMap kube-root-ca.crt\n",
               pods,
               NODES,
               last_node);
        bench_loadavg("start");
        if (!failed) {
                reads(
                    "pass over the pods, allowed:", decide_pass, "kube-root-ca.crt", last_node, 20);
                reads("pass over the pods, denied:", decide_pass, "unrelated", last_node, 20);
                bench_graph(last_node);
        }
        bench_loadavg("end");
        xp_store_close(store);
        snprintf(path, sizeof path, "rm -rf '%s'", dir);
        if (system(path) != 0)
                fprintf(stderr, "could not remove %s\n", dir);
        return failed ? 1 : 0;
}
