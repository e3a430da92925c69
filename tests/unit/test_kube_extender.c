/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler extender: the protocol both ways, on requests shaped as kube-scheduler 1.32 sends
 * them (tests/data/extender), the answers checked against what the scheduling core decides on
 * the same cluster, and bad input answered clearly while the extender keeps serving.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube_internal.h"
#include "xpool/codec.h"
#include "xpool/extender.h"
#include "xpool/kubeinventory.h"

static char *slurp(const char *name, size_t *len)
{
        char path[1024];
        FILE *f;
        char *buf;
        long n;

        snprintf(path, sizeof(path), "%s/extender/%s", XPOOL_TEST_DATA, name);
        f = fopen(path, "rb");
        if (!f)
                fail_msg("cannot open %s", path);
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        buf = malloc((size_t)n + 1);
        assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
        buf[n] = '\0';
        fclose(f);
        if (len)
                *len = (size_t)n;
        return buf;
}

static json_t *load(const char *name)
{
        char *text = slurp(name, NULL);
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);

        if (!j)
                fail_msg("%s: %s", name, jerr.text);
        free(text);
        return j;
}

/* ---- the protocol -------------------------------------------------------------------------- */

static void decodes_both_shapes(void **state)
{
        static const char *const names[] = {"gpu-a", "gpu-b", "gpu-c", "gpu-tainted", "cpu-1"};
        struct xp_extender_args a = {0};
        struct xp_error err = {0};
        size_t len;
        char *body = slurp("filter-nodes.json", &len);

        (void)state;
        if (xp_extender_args_decode(body, len, &a, &err) < 0)
                fail_msg("filter-nodes.json: %s", err.msg);
        assert_false(a.cache_capable);
        assert_string_equal(a.pod->metadata.name, "train-0");
        assert_int_equal(a.n_names, 5);
        for (size_t i = 0; i < 5; i++)
                assert_string_equal(a.names[i], names[i]);
        assert_non_null(a.nodes);
        assert_true(a.nodes[0].len > 100 && a.nodes[0].text[0] == '{' &&
                    a.nodes[0].text[a.nodes[0].len - 1] == '}');
        xp_extender_args_done(&a);
        free(body);

        body = slurp("filter-names.json", &len);
        if (xp_extender_args_decode(body, len, &a, &err) < 0)
                fail_msg("filter-names.json: %s", err.msg);
        assert_true(a.cache_capable);
        assert_null(a.nodes);
        assert_int_equal(a.n_names, 6);
        assert_string_equal(a.names[5], "gpu-gone");
        xp_extender_args_done(&a);
        free(body);

        /* Go reads member names ignoring case, so does this */
        body = strdup(
            "{\"pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},\"nodenames\":[\"x\"]}");
        assert_int_equal(xp_extender_args_decode(body, strlen(body), &a, &err), 0);
        assert_true(a.cache_capable);
        assert_string_equal(a.names[0], "x");
        xp_extender_args_done(&a);
        free(body);
}

static void refuses_bad_requests(void **state)
{
        static const struct {
                const char *body, *message;
                int error; /* 0: -EINVAL, the request itself is wrong */
        } cases[] = {
            {"{\"Pod\":", "the body is not JSON: line 1"},
            {"[1]", "the body must be an ExtenderArgs object"},
            {"{\"NodeNames\":[]}", "Pod: required"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":\"no\"}},\"NodeNames\":[]}",
             "Pod: spec.containers",
             -EBADMSG},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}",
             "neither Nodes nor NodeNames"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},\"NodeNames\":\"a\"}",
             "NodeNames: must be a list"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},\"NodeNames\":[3]}",
             "NodeNames[0]: must be a node name"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},\"Nodes\":{\"items\":[{}]}}",
             "Nodes.items[0].metadata.name: required"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},\"Nodes\":[]}",
             "Nodes: must be a NodeList"},
            {"{\"Pod\":{},\"pod\":{},\"NodeNames\":[]}", "Pod: given twice"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\"]} x",
             "line 1, column 53: expected the end of the body"},
            {"{\"Pod\":{\"metadata\":{\"name\":\"p\",\"name\":\"q\"}},\"NodeNames\":[\"a\"]}",
             "Pod: duplicate object key",
             0}, /* the Pod is not JSON: the request is wrong, a 400 */
            {"", "line 1, column 1: expected a value"},
            {"{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"}}]},\"NodeNames\":[\"a\"]}",
             "give one of them, not both"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_extender_args a = {0};
                struct xp_error err = {0};
                int r = xp_extender_args_decode(cases[i].body, strlen(cases[i].body), &a, &err);
                if (r != (cases[i].error ? cases[i].error : -EINVAL) ||
                    !strstr(err.msg, cases[i].message))
                        fail_msg(
                            "case %zu: %d '%s', expected '%s'", i, r, err.msg, cases[i].message);
                assert_null(a.pod);
                assert_null(a.pod_json);
                assert_null(a.names);
        }
}

static void binding_args(void **state)
{
        struct xp_extender_binding b = {0};
        struct xp_error err = {0};
        size_t len;
        char *text = slurp("bind.json", &len);
        const char *body = text;

        (void)state;
        assert_int_equal(xp_extender_binding_decode(body, len, &b, &err), 0);
        assert_string_equal(b.pod_name, "train-0");
        assert_string_equal(b.pod_namespace, "ml");
        assert_string_equal(b.pod_uid, "3f9c2a71-8d4e-4b6a-9c1f-5e7d2b8a6c41");
        assert_string_equal(b.node, "gpu-b");
        xp_extender_binding_done(&b);
        free(text);
        body = "{\"PodName\":\"p\"}";
        assert_int_equal(xp_extender_binding_decode(body, strlen(body), &b, &err), -EINVAL);
        assert_string_equal(err.msg, "PodNamespace: required, a string");
        body = "{\"PodName\":\"p\",\"PodNamespace\":\"n\",\"Node\":\"x\",\"PodUID\":1}";
        assert_int_equal(xp_extender_binding_decode(body, strlen(body), &b, &err), -EINVAL);
        assert_string_equal(err.msg, "PodUID: must be a string");
}

/* The filter's answer escapes what JSON must (quotes, backslashes, control bytes) and keeps
 * every other byte, UTF-8 included, whether a reason is written afresh or copied from the node
 * before it that failed alike. */
static void filter_answer_escapes_names_and_reasons(void **state)
{
        static const char *const shared = "Insufficient \"gpu\" \\ \x01 \xc3\xa9";
        char *names[] = {"n-0", "n\"1", "n\\2", "n\t3", "n-4", "n-5"};
        struct xp_sched_verdict v[] = {
            {.fit = 0, .reason = shared},
            {.fit = 0, .reason = shared},
            {.fit = 1},
            {.fit = 0, .reason = "Too many pods"},
            {.fit = 0, .reason = shared},
            {.fit = -ENOENT},
        };
        struct xp_extender_args args = {.names = names, .n_names = 6, .cache_capable = true};
        json_t *answer, *failed;
        char *text = NULL;

        (void)state;
        assert_int_equal(xp_extender_filter_result(&args, v, "node not found", &text), 0);
        answer = json_loads(text, 0, NULL);
        assert_non_null(answer);
        assert_int_equal(json_array_size(json_object_get(answer, "NodeNames")), 1);
        assert_string_equal(
            json_string_value(json_array_get(json_object_get(answer, "NodeNames"), 0)), "n\\2");
        failed = json_object_get(answer, "FailedNodes");
        assert_int_equal(json_object_size(failed), 5);
        assert_string_equal(json_string_value(json_object_get(failed, "n-0")), shared);
        assert_string_equal(json_string_value(json_object_get(failed, "n\"1")), shared);
        assert_string_equal(json_string_value(json_object_get(failed, "n\t3")), "Too many pods");
        assert_string_equal(json_string_value(json_object_get(failed, "n-4")), shared);
        assert_string_equal(json_string_value(json_object_get(failed, "n-5")), "node not found");
        assert_non_null(strstr(text, "\\u0001"));
        json_decref(answer);
        free(text);
}

/* Names are written in one pass when short and plain, and escaped otherwise: around the short
 * length, a name of every length up to 130, plain or with a quote at its end, comes back whole. */
static void answer_names_of_every_length(void **state)
{
        char *names[262], *text = NULL;
        struct xp_sched_verdict v[262];
        struct xp_extender_args args = {.names = names, .n_names = 262, .cache_capable = true};
        json_t *answer;

        (void)state;
        for (size_t i = 0; i < 262; i++) {
                size_t len = i / 2 + 1;
                names[i] = malloc(len + 1);
                assert_non_null(names[i]);
                for (size_t k = 0; k < len; k++)
                        names[i][k] = (char)('a' + (i + k) % 26);
                if (i % 2)
                        names[i][len - 1] = '"';
                names[i][len] = '\0';
                v[i] = (struct xp_sched_verdict){.fit = 1, .score = (int64_t)i};
        }
        assert_int_equal(xp_extender_priorities(&args, v, &text), 0);
        answer = json_loads(text, 0, NULL);
        assert_non_null(answer);
        assert_int_equal(json_array_size(answer), 262);
        for (size_t i = 0; i < 262; i++) {
                assert_string_equal(
                    json_string_value(json_object_get(json_array_get(answer, i), "Host")),
                    names[i]);
                free(names[i]);
        }
        json_decref(answer);
        free(text);
}

static void scores_keep_the_core_s_choice_on_top(void **state)
{
        (void)state;
        assert_int_equal(xp_extender_scale(500, 500, true), XP_EXTENDER_MAX_PRIORITY);
        /* a node scoring as much as the best but not chosen stays below it */
        assert_int_equal(xp_extender_scale(500, 500, false), 9);
        assert_int_equal(xp_extender_scale(250, 500, false), 5);
        assert_int_equal(xp_extender_scale(0, 500, false), 0);
        assert_int_equal(xp_extender_scale(10, 0, false), 0);
}

/* ---- the extender against the core --------------------------------------------------------- */

static struct xp_extender *fed_extender(void)
{
        struct xp_extender_options o = {.no_api = true, .sched = {.seed = 1}};
        struct xp_extender *e = NULL;
        struct xp_error err = {0};
        json_t *nodes = load("nodes.json"), *pod = load("pod-bound.json"), *item;
        size_t i;

        assert_int_equal(xp_extender_new(&o, &e, &err), 0);
        json_array_foreach(
            json_object_get(nodes, "items"), i, item) if (xp_extender_node_set(e, item, &err) < 0)
            fail_msg("node %zu: %s", i, err.msg);
        if (xp_extender_pod_set(e, pod, &err) < 0)
                fail_msg("pod: %s", err.msg);
        json_decref(nodes);
        json_decref(pod);
        return e;
}

/* The same cluster straight into a core: nodes with their inventories, the holder's devices. */
static struct xp_sched *direct_core(void)
{
        struct xp_sched_options o = {.seed = 1};
        struct xp_sched *sched = NULL;
        struct xp_error err = {0};
        json_t *nodes = load("nodes.json"), *pod = load("pod-bound.json"), *item;
        struct xp_pod *holder = NULL;
        size_t i;

        assert_int_equal(xp_sched_new(&o, &sched), 0);
        json_array_foreach(json_object_get(nodes, "items"), i, item)
        {
                struct xp_node *node = NULL;
                const char *ann;
                assert_int_equal(xp_node_from_json(item, NULL, XP_DECODE_TRUSTED, &node, &err), 0);
                ann = xp_strmap_get(&node->metadata.annotations, XP_INVENTORY_ANNOTATION);
                if (ann)
                        assert_int_equal(xp_kube_inventory_decode(
                                             ann, strlen(ann), &node->status.xpool, NULL, &err),
                                         0);
                assert_int_equal(xp_sched_node_set(sched, node, &err), 0);
                xp_node_free(node);
        }
        assert_int_equal(xp_pod_from_json(pod, NULL, XP_DECODE_TRUSTED, &holder, &err), 0);
        assert_int_equal(
            xp_strmap_set(
                &holder->metadata.annotations,
                XP_PLACEMENT_ANNOTATION,
                "{\"node\":\"gpu-a\",\"devices\":[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-a-0\",\"index\":0,\"milli\":1000},"
                "{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-a-2\",\"index\":2,\"milli\":1000}],\"numaNode\":0}"),
            0);
        assert_int_equal(xp_sched_pod_add(sched, holder, &err), 0);
        xp_pod_free(holder);
        json_decref(nodes);
        json_decref(pod);
        return sched;
}

static json_t *
handle(struct xp_extender *e, const char *verb, const char *body, size_t len, int want)
{
        char *out = NULL;
        json_error_t jerr;
        json_t *j;
        int status = xp_extender_handle(e, verb, body, len, &out);

        if (status != want)
                fail_msg("%s: HTTP %d, expected %d: %s", verb, status, want, out);
        j = json_loads(out, 0, &jerr);
        if (!j)
                fail_msg("%s: not JSON: %s", verb, out);
        free(out);
        return j;
}

static json_t *handle_file(struct xp_extender *e, const char *verb, const char *file)
{
        size_t len;
        char *body = slurp(file, &len);
        json_t *j = handle(e, verb, body, len, 200);

        free(body);
        return j;
}

static void filter_answers_as_the_core_decides(void **state)
{
        static const char *const files[] = {"filter-names.json", "filter-nodes.json"};
        struct xp_extender *e = fed_extender();
        struct xp_sched *sched = direct_core();
        json_t *args = load("filter-nodes.json"),
               *sent = json_object_get(json_object_get(args, "Nodes"), "items");
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_pod_from_json(json_object_get(args, "Pod"), NULL, 0, &pod, &err), 0);
        for (size_t f = 0; f < XP_ELEMENTSOF(files); f++) {
                json_t *res = handle_file(e, "filter", files[f]);
                bool names = f == 0;
                json_t *passed = json_object_get(res, names ? "NodeNames" : "Nodes");
                json_t *failed = json_object_get(res, "FailedNodes"),
                       *unres = json_object_get(res, "FailedAndUnresolvableNodes");
                size_t n_pass = 0;

                assert_string_equal(json_string_value(json_object_get(res, "Error")), "");
                assert_true(json_is_null(json_object_get(res, names ? "Nodes" : "NodeNames")));
                if (!names)
                        passed = json_object_get(passed, "items");
                /* each node passes exactly when the core can place the pod there */
                for (size_t i = 0; i < json_array_size(sent); i++) {
                        json_t *item = json_array_get(sent, i);
                        const char *name = json_string_value(
                            json_object_get(json_object_get(item, "metadata"), "name"));
                        struct xp_placement pl = {0};
                        char *reason = NULL;
                        bool found = false;
                        int r = xp_sched_place_on(sched, pod, name, &pl, &reason, &err);

                        assert_true(r >= 0);
                        for (size_t k = 0; k < json_array_size(passed); k++) {
                                json_t *p = json_array_get(passed, k);
                                /* whole Nodes come back as they were sent */
                                found = found || (names ? strcmp(json_string_value(p), name) == 0
                                                        : json_equal(p, item));
                        }
                        assert_int_equal(found, r == 1);
                        n_pass += r == 1;
                        if (r == 0) {
                                const char *why = json_string_value(json_object_get(failed, name));
                                if (!why)
                                        why = json_string_value(json_object_get(unres, name));
                                assert_non_null(why);
                                assert_string_equal(why, reason);
                        }
                        free(reason);
                        xp_placement_done(&pl);
                }
                assert_int_equal(json_array_size(passed), n_pass);
                assert_int_equal(n_pass, 3);
                /* kube-scheduler's own words, and preemption told where it cannot help */
                assert_string_equal(json_string_value(json_object_get(unres, "gpu-tainted")),
                                    "node(s) had untolerated taint {dedicated: inference}");
                assert_string_equal(json_string_value(json_object_get(unres, "cpu-1")),
                                    "node(s) didn't match Pod's node affinity/selector");
                if (names)
                        assert_string_equal(
                            json_string_value(json_object_get(failed, "gpu-gone")),
                            "node is unknown to the xpool extender (not in its watch of Nodes yet)");
                json_decref(res);
        }
        xp_pod_free(pod);
        json_decref(args);
        xp_sched_free(sched);
        xp_extender_free(e);
}

static void prioritize_ranks_as_the_core_places(void **state)
{
        struct xp_extender *e = fed_extender();
        struct xp_sched *sched = direct_core();
        json_t *res = handle_file(e, "prioritize", "prioritize-names.json"),
               *args = load("prioritize-names.json"), *hp;
        struct xp_pod *pod = NULL;
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        char *reason = NULL;
        const char *top = NULL;
        size_t i, tens = 0;

        (void)state;
        /* the core over the same three nodes: the others out of its snapshot */
        assert_int_equal(xp_sched_node_remove(sched, "gpu-tainted"), 0);
        assert_int_equal(xp_sched_node_remove(sched, "cpu-1"), 0);
        assert_int_equal(xp_pod_from_json(json_object_get(args, "Pod"), NULL, 0, &pod, &err), 0);
        assert_int_equal(xp_sched_place(sched, pod, &pl, &reason, &err), 1);
        assert_int_equal(json_array_size(res), 3);
        json_array_foreach(res, i, hp)
        {
                json_int_t score = json_integer_value(json_object_get(hp, "Score"));
                assert_true(json_is_string(json_object_get(hp, "Host")));
                assert_true(score >= 0 && score <= XP_EXTENDER_MAX_PRIORITY);
                if (score == XP_EXTENDER_MAX_PRIORITY) {
                        top = json_string_value(json_object_get(hp, "Host"));
                        tens++;
                }
        }
        assert_int_equal(tens, 1);
        assert_string_equal(top, pl.node);
        /* the pairs box cannot give 4 GPUs on one NVLink island: gpu-a (odd island whole) or
         * gpu-c (even island whole) wins over it */
        assert_string_not_equal(top, "gpu-b");
        xp_placement_done(&pl);
        xp_pod_free(pod);
        json_decref(args);
        json_decref(res);
        xp_sched_free(sched);
        xp_extender_free(e);
}

/* The ExtenderArgs of prioritize-names.json's pod over names. */
static char *args_over(json_t *names)
{
        json_t *args = load("prioritize-names.json");
        char *text;

        json_object_set(args, "NodeNames", names);
        text = json_dumps(args, JSON_COMPACT);
        json_decref(args);
        return text;
}

/* A prioritize from a fresh extender, the cluster changed by change when it is not NULL. */
static json_t *prioritize_afresh(const char *body, const json_t *change)
{
        struct xp_extender *e = fed_extender();
        struct xp_error err = {0};
        json_t *res;

        if (change)
                assert_int_equal(xp_extender_node_set(e, change, &err), 0);
        res = handle(e, "prioritize", body, strlen(body), 200);
        xp_extender_free(e);
        return res;
}

static void assert_same_answer(json_t *got, json_t *want)
{
        if (!json_equal(got, want)) {
                char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
                fail_msg("prioritize after filter: %s, afresh: %s", g, w);
        }
        json_decref(got);
        json_decref(want);
}

/* prioritize reuses its filter's verdicts (extender_reuse.c): the answers are those of a
 * prioritize alone, over the filter's names or the ones it kept, and a cache change between the
 * two is seen. */
static void prioritize_after_filter_answers_as_afresh(void **state)
{
        struct xp_extender *e = fed_extender();
        json_t *all = json_pack("[s,s,s,s,s]", "gpu-a", "gpu-b", "gpu-c", "gpu-tainted", "cpu-1");
        json_t *nodes = load("nodes.json"), *kept, *res, *hp, *top = NULL;
        char *body = args_over(all), *kept_body;
        struct xp_error err = {0};
        bool changed = false;
        size_t i;

        (void)state;
        res = handle(e, "filter", body, strlen(body), 200);
        kept = json_incref(json_object_get(res, "NodeNames"));
        json_decref(res);
        assert_true(json_array_size(kept) > 1 && json_array_size(kept) < 5);
        kept_body = args_over(kept);
        /* as kube-scheduler asks: the nodes the filter kept; then the same names again */
        assert_same_answer(handle(e, "prioritize", kept_body, strlen(kept_body), 200),
                           prioritize_afresh(kept_body, NULL));
        assert_same_answer(handle(e, "prioritize", body, strlen(body), 200),
                           prioritize_afresh(body, NULL));
        /* the best node turns unschedulable between filter and prioritize: it scores 0 */
        json_decref(handle(e, "filter", body, strlen(body), 200));
        res = prioritize_afresh(kept_body, NULL);
        json_array_foreach(res, i, hp)
        {
                if (json_integer_value(json_object_get(hp, "Score")) == XP_EXTENDER_MAX_PRIORITY)
                        top = json_deep_copy(json_object_get(hp, "Host"));
        }
        json_decref(res);
        assert_non_null(top);
        json_array_foreach(json_object_get(nodes, "items"), i, hp)
        {
                if (!json_equal(json_object_get(json_object_get(hp, "metadata"), "name"), top))
                        continue;
                json_object_set_new(json_object_get(hp, "spec"), "unschedulable", json_true());
                assert_int_equal(xp_extender_node_set(e, hp, &err), 0);
                changed = true;
        }
        assert_true(changed);
        res = handle(e, "prioritize", kept_body, strlen(kept_body), 200);
        json_array_foreach(res, i, hp)
        {
                if (json_equal(json_object_get(hp, "Host"), top))
                        assert_int_equal(json_integer_value(json_object_get(hp, "Score")), 0);
        }
        json_decref(res);
        json_decref(top);
        json_decref(nodes);
        json_decref(kept);
        json_decref(all);
        free(kept_body);
        free(body);
        xp_extender_free(e);
}

/* A bound pod's GPU sidecar (an init container with restartPolicy Always) holds its GPU beside
 * the containers' in the extender's picture, as in the core's: the cache keeps restartPolicy. */
static void bound_sidecars_hold_their_devices(void **state)
{
        struct xp_extender *e = fed_extender();
        struct xp_error err = {0};
        json_error_t jerr;
        /* gpu-a: 8 GPUs, 2 held by ml/holder-0; this pod holds 1 + its sidecar's 1 */
        json_t *side = json_loads(
            "{\"metadata\":{\"name\":\"side\",\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"gpu-a\","
            "\"initContainers\":[{\"name\":\"s\",\"image\":\"i\",\"restartPolicy\":\"Always\","
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],"
            "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
            "\"status\":{\"phase\":\"Running\"}}",
            0,
            &jerr);
        const char *five =
            "{\"Pod\":{\"metadata\":{\"name\":\"five\",\"namespace\":\"ml\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"5\"}}}]}},\"NodeNames\":[\"gpu-a\"]}";
        const char *four =
            "{\"Pod\":{\"metadata\":{\"name\":\"four\",\"namespace\":\"ml\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}},\"NodeNames\":[\"gpu-a\"]}";
        json_t *res;

        (void)state;
        assert_non_null(side);
        assert_int_equal(xp_extender_pod_set(e, side, &err), 0);
        /* 4 of 8 held: 5 do not fit (3 held, had the sidecar been lost), 4 do */
        res = handle(e, "filter", five, strlen(five), 200);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "gpu-a")),
            "Insufficient nvidia.com/gpu");
        json_decref(res);
        res = handle(e, "filter", four, strlen(four), 200);
        assert_string_equal(json_string_value(json_array_get(json_object_get(res, "NodeNames"), 0)),
                            "gpu-a");
        json_decref(res);
        json_decref(side);
        xp_extender_free(e);
}

static void inventory_allocation_holds_devices(void **state)
{
        struct xp_extender *e = fed_extender();
        struct xp_error err = {0};
        json_t *nodes = load("nodes.json"),
               *a = json_deep_copy(json_array_get(json_object_get(nodes, "items"), 0));
        json_t *ann = json_object_get(json_object_get(a, "metadata"), "annotations"), *res, *gone;
        const char *eight =
            "{\"Pod\":{\"metadata\":{\"name\":\"big\",\"namespace\":\"ml\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"7\"}}}]}},\"NodeNames\":[\"gpu-a\"]}";
        char *text;

        (void)state;
        /* two GPUs of gpu-a are held (the inventory says so): 7 do not fit */
        res = handle(e, "filter", eight, strlen(eight), 200);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "gpu-a")),
            "Insufficient nvidia.com/gpu");
        json_decref(res);
        /* the holder is gone from the watch but the kubelet still lists it: still held */
        gone = json_pack("{s:{s:s, s:s}, s:{s:[]}, s:{s:s}}",
                         "metadata",
                         "name",
                         "holder-0",
                         "namespace",
                         "ml",
                         "spec",
                         "containers",
                         "status",
                         "phase",
                         "Succeeded");
        assert_int_equal(xp_extender_pod_set(e, gone, &err), 0);
        json_decref(gone);
        res = handle(e, "filter", eight, strlen(eight), 200);
        assert_non_null(json_object_get(json_object_get(res, "FailedNodes"), "gpu-a"));
        json_decref(res);
        /* the kubelet frees them: 7 fit */
        text = strdup(json_string_value(json_object_get(ann, XP_INVENTORY_ANNOTATION)));
        for (char *p; (p = strstr(text, ",\"pod\":\"ml/holder-0\""));)
                memmove(p,
                        p + strlen(",\"pod\":\"ml/holder-0\""),
                        strlen(p + strlen(",\"pod\":\"ml/holder-0\"")) + 1);
        json_object_set_new(ann, XP_INVENTORY_ANNOTATION, json_string(text));
        free(text);
        assert_int_equal(xp_extender_node_set(e, a, &err), 0);
        res = handle(e, "filter", eight, strlen(eight), 200);
        assert_string_equal(json_string_value(json_array_get(json_object_get(res, "NodeNames"), 0)),
                            "gpu-a");
        json_decref(res);
        json_decref(a);
        json_decref(nodes);
        xp_extender_free(e);
}

/* A pod deleted and made again under its name (a StatefulSet replica, a Job's retry) is not the
 * bound one the watch has not yet said is gone: its UID differs. */
static void a_pod_made_again_is_not_bound(void **state)
{
        struct xp_sched_options o = {.seed = 1};
        struct ext_cache *cache = NULL;
        struct xp_error err = {0};
        json_t *pod = load("pod-bound.json");
        const char *uid =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));

        (void)state;
        assert_int_equal(ext_cache_new(&o, &cache), 0);
        assert_int_equal(ext_cache_pod_set(cache, pod, &err), 0);
        assert_string_equal(ext_cache_pod_node(cache, "ml", "holder-0", uid), "gpu-a");
        assert_string_equal(ext_cache_pod_node(cache, "ml", "holder-0", NULL), "gpu-a");
        assert_null(ext_cache_pod_node(cache, "ml", "holder-0", "another-uid"));
        assert_null(ext_cache_pod_node(cache, "ml", "holder-1", uid));
        json_decref(pod);
        ext_cache_free(cache);
}

static void bad_input_is_answered_and_serving_goes_on(void **state)
{
        struct xp_extender *e = fed_extender();
        size_t len;
        char *good = slurp("filter-names.json", &len), *bad;
        json_t *res;

        (void)state;
        res = handle(e, "filter", "{\"Pod\":", 7, 400);
        assert_non_null(
            strstr(json_string_value(json_object_get(res, "Error")), "the body is not JSON"));
        json_decref(res);
        res = handle(e, "prioritize", "{}", 2, 400);
        assert_string_equal(json_string_value(json_object_get(res, "Error")),
                            "Pod: required, the pod being scheduled");
        json_decref(res);
        /* a right body whose Pod xpool refuses: a 200's Error is what kube-scheduler puts on the
         * pod (a 400 it reports as the code only); prioritize's errors it ignores */
        {
                static const char odd[] =
                    "{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":\"no\"}},"
                    "\"NodeNames\":[\"gpu-a\"]}";
                res = handle(e, "filter", odd, strlen(odd), 200);
                assert_non_null(strstr(json_string_value(json_object_get(res, "Error")),
                                       "xpool cannot schedule this pod: Pod: spec.containers"));
                assert_null(json_object_get(res, "NodeNames"));
                json_decref(res);
                res = handle(e, "prioritize", odd, strlen(odd), 422);
                json_decref(res);
        }
        res = handle(e, "preempt", "{}", 2, 404);
        json_decref(res);
        /* bind is refused without --bind (and without an API to bind through) */
        res = handle(e, "bind", "{}", 2, 404);
        json_decref(res);
        /* a pod the core cannot understand: an Error kube-scheduler shows on the pod */
        bad = slurp("filter-bad-constraint.json", &len);
        res = handle(e, "filter", bad, len, 200);
        assert_non_null(strstr(json_string_value(json_object_get(res, "Error")),
                               "pod ml/bad-0: metadata.annotations[xpool.io/accelerator-kinds]"));
        json_decref(res);
        free(bad);
        /* and a good request after all that is served as before */
        res = handle(e, "filter", good, strlen(good), 200);
        assert_int_equal(json_array_size(json_object_get(res, "NodeNames")), 3);
        json_decref(res);
        res = handle(e, "readyz", NULL, 0, 200);
        assert_int_equal(json_integer_value(json_object_get(res, "nodes")), 5);
        json_decref(res);
        free(good);
        xp_extender_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(decodes_both_shapes),
            cmocka_unit_test(refuses_bad_requests),
            cmocka_unit_test(binding_args),
            cmocka_unit_test(filter_answer_escapes_names_and_reasons),
            cmocka_unit_test(answer_names_of_every_length),
            cmocka_unit_test(scores_keep_the_core_s_choice_on_top),
            cmocka_unit_test(filter_answers_as_the_core_decides),
            cmocka_unit_test(prioritize_ranks_as_the_core_places),
            cmocka_unit_test(prioritize_after_filter_answers_as_afresh),
            cmocka_unit_test(inventory_allocation_holds_devices),
            cmocka_unit_test(bound_sidecars_hold_their_devices),
            cmocka_unit_test(a_pod_made_again_is_not_bound),
            cmocka_unit_test(bad_input_is_answered_and_serving_goes_on),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
