/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload controllers (src/controller/workloads*.c and the syncs) on a temporary store,
 * stepped by the test on its clock: the garbage collector's background, orphan and foreground
 * deletions carried out through the registry; and ReplicaSets and Deployments when their kinds
 * are served.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/workloads.h" /* wl_pod_slim */
#include "registry_fixture.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/workloads.h"

struct fixture {
        struct registry_fixture base;
        struct xp_workloads *w;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_error err = {0};

        assert_non_null(f);
        fixture_open(&f->base, "workloads", 0);
        if (xp_workloads_new(f->base.registry,
                             &(struct xp_workloads_options){.clock = &f->base.clock},
                             &f->w,
                             &err) < 0)
                fail_msg("workloads: %s", err.msg);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        xp_workloads_free(f->w);
        fixture_close(&f->base);
        free(f);
        return 0;
}

/* Steps until nothing changes any more (bounded). */
static void settle(struct fixture *f)
{
        struct xp_error err = {0};

        for (int i = 0; i < 20; i++) {
                if (xp_workloads_step(f->w, &err) < 0)
                        fail_msg("step: %s", err.msg);
                f->base.now_ms += 100;
        }
}

#define NODE                                                                                       \
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"uid\":\"node-uid\"%s}}"
#define POD                                                                                                                                \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"%s-uid\","              \
        "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"n1\",\"uid\":\"node-uid\",\"blockOwnerDeletion\":%s}]}," \
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},\"status\":{\"phase\":\"Pending\"}}"

static void put_graph(struct fixture *f, const char *node_extra)
{
        fixture_put_text(&f->base, "nodes", "", "n1", NODE, node_extra);
        fixture_put_text(&f->base, "pods", "default", "a", POD, "a", "a", "true");
        fixture_put_text(&f->base, "pods", "default", "b", POD, "b", "b", "false");
}

static bool exists(struct fixture *f, const char *kind, const char *ns, const char *name)
{
        json_t *o = fixture_get(&f->base, kind, ns, name);

        json_decref(o);
        return o != NULL;
}

static void test_gc_background(void **state)
{
        struct fixture *f = *state;

        put_graph(f, "");
        settle(f);
        assert_true(exists(f, "pods", "default", "a")); /* the owner lives */
        assert_int_equal(xp_store_delete(f->base.store, "nodes", "", "n1", 0, NULL, NULL, NULL), 0);
        settle(f);
        assert_false(exists(f, "pods", "default", "a"));
        assert_false(exists(f, "pods", "default", "b"));
}

static void test_gc_orphan(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *node = NULL, *pod;

        put_graph(f, "");
        settle(f);
        assert_int_equal(xp_workloads_delete_with_finalizer(f->base.registry,
                                                            &xp_kind_node,
                                                            "",
                                                            "n1",
                                                            XP_PROPAGATION_ORPHAN,
                                                            false,
                                                            &node,
                                                            &err),
                         1);
        assert_non_null(json_object_get(json_object_get(node, "metadata"), "deletionTimestamp"));
        json_decref(node);
        settle(f);
        assert_false(exists(f, "nodes", "", "n1"));
        pod = fixture_get(&f->base, "pods", "default", "a");
        assert_non_null(pod);
        assert_null(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"));
        json_decref(pod);
        assert_true(exists(f, "pods", "default", "b"));
}

static void test_gc_foreground(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *node = NULL;

        put_graph(f, "");
        settle(f);
        assert_int_equal(xp_workloads_delete_with_finalizer(f->base.registry,
                                                            &xp_kind_node,
                                                            "",
                                                            "n1",
                                                            XP_PROPAGATION_FOREGROUND,
                                                            false,
                                                            &node,
                                                            &err),
                         1);
        json_decref(node);
        settle(f);
        /* the unbound pods went at once, so the owner followed */
        assert_false(exists(f, "pods", "default", "a"));
        assert_false(exists(f, "pods", "default", "b"));
        assert_false(exists(f, "nodes", "", "n1"));
}

/* The cache keeps of a pod what the syncs read, and not its containers or field managers. */
#define RECREATE                                                                                     \
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"rec\","        \
        "\"namespace\":\"default\",\"uid\":\"rec-uid\",\"generation\":%d},\"spec\":{\"replicas\":1," \
        "\"strategy\":{\"type\":\"Recreate\"},\"selector\":{\"matchLabels\":{\"app\":\"rec\"}},"     \
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"rec\"}},\"spec\":{\"containers\":"        \
        "[{\"name\":\"c\",\"image\":\"%s\"}]}}}}"

/* The names of the pods (in the store) of app=rec, and whether any is being deleted. */
static size_t rec_pods(struct fixture *f, char names[4][128], bool *terminating)
{
        json_t *pods = NULL, *pod;
        uint64_t version;
        size_t i, n = 0;

        *terminating = false;
        assert_int_equal(xp_store_list(f->base.store, "pods", "default", &pods, &version, NULL), 0);
        json_array_foreach(pods, i, pod)
        {
                if (n < 4)
                        snprintf(names[n++], 128, "%s", xp_json_str_at(pod, "metadata.name", ""));
                *terminating |= xp_json_at(pod, "metadata.deletionTimestamp") != NULL;
        }
        json_decref(pods);
        return n;
}

/* A Recreate rollout scales the old ReplicaSet down, then waits for its pods to be gone: the
 * pod's removal (the agent's, here the test's) wakes the Deployment, which starts the new one. */
static void test_recreate_waits_for_the_old_pods(void **state)
{
        struct fixture *f = *state;
        char names[4][128];
        bool terminating;
        json_t *pod;

        fixture_put_text(&f->base, "deployments", "default", "rec", RECREATE, 1, "v1");
        settle(f);
        assert_int_equal(rec_pods(f, names, &terminating), 1);
        /* bound and running: its deletion waits for the node (a pod never bound goes at once) */
        pod = fixture_get(&f->base, "pods", "default", names[0]);
        assert_non_null(pod);
        assert_int_equal(
            json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string("n1")), 0);
        fixture_put(&f->base, "pods", "default", names[0], pod);
        settle(f);
        fixture_put_text(&f->base, "deployments", "default", "rec", RECREATE, 2, "v2");
        settle(f);
        assert_int_equal(rec_pods(f, names, &terminating), 1); /* the old one, terminating */
        assert_true(terminating);
        assert_int_equal(
            xp_store_delete(f->base.store, "pods", "default", names[0], 0, NULL, NULL, NULL), 0);
        settle(f);
        assert_int_equal(rec_pods(f, names, &terminating), 1); /* the new one */
        assert_false(terminating);
}

#define BARE_POD                                                                                     \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bare\",\"namespace\":"     \
        "\"default\",\"uid\":\"bare-uid\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{" \
        "\"name\":\"c\",\"image\":\"x\"}]},\"status\":{\"phase\":\"Pending\"}}"
#define WEB_RS                                                                                          \
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web\","           \
        "\"namespace\":\"default\",\"uid\":\"web-uid\"},\"spec\":{\"replicas\":1,\"selector\":{"        \
        "\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}}," \
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}"

/* A pod of no controller is cached only while a ReplicaSet or DaemonSet could adopt it; one that
 * comes later still finds it (read from the store) and adopts it rather than creating one. */
static void test_orphan_adopted_by_a_later_replicaset(void **state)
{
        struct fixture *f = *state;
        const json_t *ref;
        json_t *pods = NULL, *pod;
        uint64_t version;

        fixture_put_text(&f->base, "pods", "default", "bare", BARE_POD);
        settle(f);
        assert_int_equal(f->w->cache[WL_PODS].map.n, 0); /* nothing can adopt it: not kept */
        assert_true(f->w->orphans_left_out);
        fixture_put_text(&f->base, "replicasets", "default", "web", WEB_RS);
        settle(f);
        assert_false(f->w->orphans_left_out);
        assert_int_equal(xp_store_list(f->base.store, "pods", "default", &pods, &version, NULL), 0);
        assert_int_equal(json_array_size(pods), 1); /* adopted: none created beside it */
        pod = json_array_get(pods, 0);
        assert_string_equal(xp_json_str_at(pod, "metadata.name", ""), "bare");
        ref = json_array_get(xp_json_at(pod, "metadata.ownerReferences"), 0);
        assert_string_equal(xp_json_str_at(ref, "uid", ""), "web-uid");
        json_decref(pods);
}

static void test_pod_slim(void **state)
{
        (void)state;
        json_auto_t *pod = json_loads(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
            "\"labels\":{\"app\":\"a\"},\"ownerReferences\":[{\"uid\":\"u1\"}],"
            "\"managedFields\":[{\"manager\":\"kubectl\"}]},\"spec\":{\"nodeName\":\"n1\","
            "\"affinity\":{\"nodeAffinity\":{}},\"containers\":[{\"name\":\"c\"}]},"
            "\"status\":{\"phase\":\"Running\"}}",
            0,
            NULL);
        assert_non_null(pod);
        json_auto_t *slim = wl_pod_slim(pod);
        assert_non_null(slim);
        json_t *meta = json_object_get(slim, "metadata"), *spec = json_object_get(slim, "spec");
        assert_string_equal(json_string_value(json_object_get(slim, "kind")), "Pod");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), "p");
        assert_non_null(json_object_get(json_object_get(meta, "labels"), "app"));
        assert_non_null(json_object_get(meta, "ownerReferences"));
        assert_null(json_object_get(meta, "managedFields"));
        assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), "n1");
        assert_non_null(json_object_get(spec, "affinity"));
        assert_null(json_object_get(spec, "containers"));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(slim, "status"), "phase")),
            "Running");
        /* the pod itself is untouched */
        assert_non_null(json_object_get(json_object_get(pod, "metadata"), "managedFields"));
        assert_non_null(json_object_get(json_object_get(pod, "spec"), "containers"));
}

/* JSON written with single quotes, for readability. */
static json_t *sq(const char *text)
{
        char *copy = strdup(text);
        json_error_t jerr;
        json_t *json;

        assert_non_null(copy);
        for (char *c = copy; *c; c++)
                if (*c == '\'')
                        *c = '"';
        json = json_loads(copy, 0, &jerr);
        if (!json)
                fail_msg("bad test JSON: %s: %s", jerr.text, copy);
        free(copy);
        return json;
}

/* The first item of the list at path, NULL when none. */
static const json_t *first(const json_t *object, const char *path)
{
        return json_array_get(xp_json_at(object, path), 0);
}

/* The token volume's name is random: both paths' get one name for the comparison. */
static void same_volume_name(json_t *pod)
{
        json_t *volume = (json_t *)first(pod, "spec.volumes");
        json_t *container = (json_t *)first(pod, "spec.containers");
        json_t *mount = json_array_get(json_object_get(container, "volumeMounts"), 0);

        assert_non_null(volume);
        assert_non_null(mount);
        assert_string_equal(json_string_value(json_object_get(mount, "name")),
                            json_string_value(json_object_get(volume, "name")));
        assert_int_equal(strncmp(json_string_value(json_object_get(volume, "name")),
                                 XP_SERVICEACCOUNT_VOLUME_PREFIX,
                                 strlen(XP_SERVICEACCOUNT_VOLUME_PREFIX)),
                         0);
        json_object_set_new(volume, "name", json_string("token"));
        json_object_set_new(mount, "name", json_string("token"));
}

#define ADMITTED_POD                                                                                \
        "{'apiVersion':'v1','kind':'Pod','metadata':{'generateName':'web-','namespace':'default'}," \
        "'spec':{'serviceAccountName':'builder','priorityClassName':'high',"                        \
        "'containers':[{'name':'c','image':'x'%s}]}}"

static json_t *admitted_pod(const char *container_extra)
{
        char text[1024];

        snprintf(text, sizeof(text), ADMITTED_POD, container_extra);
        return sq(text);
}

/*
 * A controller's pod gets the admission an API pod gets (xp_registry_pod_admit(), which the API's
 * create calls): the account's token volume and pull secrets, the class's priority, the
 * LimitRange's defaults, the server's tolerationSeconds; and the same refusals, a LimitRange's
 * and a ResourceQuota's, in kube-apiserver's words.
 */
static void test_pod_admission_same_as_api(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *api = admitted_pod(""), *controller = admitted_pod(""), *out = NULL;

        fixture_put(&f->base,
                    "limitranges",
                    "default",
                    "lr",
                    sq("{'apiVersion':'v1','kind':'LimitRange','metadata':{'name':'lr',"
                       "'namespace':'default','uid':'lr-uid'},'spec':{'limits':[{'type':"
                       "'Container','default':{'cpu':'500m'},'max':{'cpu':'1'}}]}}"));
        fixture_put(&f->base,
                    "priorityclasses",
                    "",
                    "high",
                    sq("{'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass','metadata':"
                       "{'name':'high','uid':'pc-uid'},'value':1000}"));
        fixture_put(
            &f->base,
            "serviceaccounts",
            "default",
            "builder",
            sq("{'apiVersion':'v1','kind':'ServiceAccount','metadata':{'name':'builder',"
               "'namespace':'default','uid':'sa-uid'},'imagePullSecrets':[{'name':'reg'}]}"));
        xp_registry_serviceaccount_tokens(f->base.registry, true, true);
        xp_registry_pod_tolerations(f->base.registry, 77);

        if (xp_registry_pod_admit(f->base.registry, "default", api, &err) < 0)
                fail_msg("API admission: %s", err.msg);
        if (wl_create_object(f->w, &xp_kind_pod, "default", controller, &out, &err) != 1)
                fail_msg("controller's create: %s", err.msg);
        /* what each admission made of the pod, before it was decoded */
        same_volume_name(api);
        same_volume_name(controller);
        assert_true(json_equal(api, controller));
        /* and the pod as written holds it */
        assert_int_equal(xp_json_int_at(out, "spec.priority", 0), 1000);
        assert_string_equal(xp_json_str_at(first(out, "spec.imagePullSecrets"), "name", ""), "reg");
        assert_string_equal(
            xp_json_str_at(first(out, "spec.containers"), "resources.limits.cpu", ""), "500m");
        assert_int_equal(xp_json_int_at(first(out, "spec.tolerations"), "tolerationSeconds", 0),
                         77);
        assert_string_equal(
            xp_json_str_at(
                json_array_get(json_object_get(first(out, "spec.containers"), "volumeMounts"), 0),
                "mountPath",
                ""),
            XP_SERVICEACCOUNT_MOUNT_PATH);
        json_decref(out);
        json_decref(api);
        json_decref(controller);

        /* a LimitRange's refusal: the same words on both paths, nothing written */
        api = admitted_pod(",'resources':{'limits':{'cpu':'2'}}");
        controller = admitted_pod(",'resources':{'limits':{'cpu':'2'}}");
        assert_int_equal(xp_registry_pod_admit(f->base.registry, "default", api, &err), -EPERM);
        assert_string_equal(err.msg, "maximum cpu usage per Container is 1, but limit is 2");
        err = (struct xp_error){0};
        assert_int_equal(wl_create_object(f->w, &xp_kind_pod, "default", controller, &out, &err),
                         -EPERM);
        assert_string_equal(
            err.msg,
            "pods \"web-\" is forbidden: maximum cpu usage per Container is 1, but limit is 2");
        json_decref(api);
        json_decref(controller);

        /* an account that does not exist */
        controller = sq("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':"
                        "'default'},'spec':{'serviceAccountName':'ghost','containers':[{'name':"
                        "'c','image':'x'}]}}");
        err = (struct xp_error){0};
        assert_int_equal(wl_create_object(f->w, &xp_kind_pod, "default", controller, &out, &err),
                         -EPERM);
        assert_string_equal(err.msg,
                            "pods \"p\" is forbidden: error looking up service account "
                            "default/ghost: serviceaccount \"ghost\" not found");
        json_decref(controller);

        /* a ResourceQuota's, at the write */
        fixture_put(&f->base,
                    "resourcequotas",
                    "default",
                    "q",
                    sq("{'apiVersion':'v1','kind':'ResourceQuota','metadata':{'name':'q',"
                       "'namespace':'default','uid':'q-uid'},'spec':{'hard':{'pods':'1'}}}"));
        controller = admitted_pod("");
        err = (struct xp_error){0};
        assert_int_equal(wl_create_object(f->w, &xp_kind_pod, "default", controller, &out, &err),
                         0);
        assert_string_equal(err.msg,
                            "pods \"web-\" is forbidden: exceeded quota: q, requested: pods=1, "
                            "used: pods=1, limited: pods=1");
        json_decref(controller);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_gc_background, setup, teardown),
            cmocka_unit_test_setup_teardown(test_gc_orphan, setup, teardown),
            cmocka_unit_test_setup_teardown(test_gc_foreground, setup, teardown),
            cmocka_unit_test(test_pod_slim),
            cmocka_unit_test_setup_teardown(test_recreate_waits_for_the_old_pods, setup, teardown),
            cmocka_unit_test_setup_teardown(
                test_orphan_adopted_by_a_later_replicaset, setup, teardown),
            cmocka_unit_test_setup_teardown(test_pod_admission_same_as_api, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
