/* SPDX-License-Identifier: Apache-2.0 */
/* The registry (src/registry/) on a temporary store: holds, creates, binding, deletion, Events. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry_fixture.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

static int setup(void **state)
{
        struct registry_fixture *f = calloc(1, sizeof *f);

        assert_non_null(f);
        fixture_open(f, "registry", 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture_close(*state);
        free(*state);
        return 0;
}

static json_t *load(const char *text)
{
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);

        if (!j)
                fail_msg("bad test JSON at %d:%d: %s", jerr.line, jerr.column, jerr.text);
        return j;
}

static const char *str_at(const json_t *j, const char *a, const char *b)
{
        return json_string_value(json_object_get(json_object_get(j, a), b));
}

/* Writes object (a JSON text) straight into the store. */
static void put(struct registry_fixture *f,
                const char *kind,
                const char *ns,
                const char *name,
                const char *text)
{
        fixture_put(f, kind, ns, name, load(text));
}

#define BOUND_POD(name)                                                                            \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name                   \
        "\",\"namespace\":\"team\",\"uid\":\"u-" name "\"},\"spec\":{\"nodeName\":\"n1\","         \
        "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},\"status\":{\"phase\":\"Running\"}}"

static void system_namespaces(void **state)
{
        struct registry_fixture *f = *state;
        const char *names[] = {"default", "kube-system", "kube-public", "kube-node-lease"};
        struct xp_error err = {0};
        json_t *ns = NULL;

        for (size_t i = 0; i < 4; i++) {
                json_t *object = fixture_get(f, "namespaces", "", names[i]);

                assert_non_null(object);
                assert_string_equal(str_at(object, "status", "phase"), "Active");
                assert_true(xp_registry_namespace_protected(names[i]));
                json_decref(object);
        }
        assert_false(xp_registry_namespace_protected("team"));
        assert_int_equal(xp_registry_namespace_delete(f->registry, "default", 0, false, &ns, &err),
                         -EPERM);
        assert_null(ns);
        assert_non_null(strstr(err.msg, "may not be deleted"));
}

static void holds_and_namespace_deletion(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_error err = {0};
        json_t *ns = NULL, *pod;
        bool removed = true;

        assert_int_equal(xp_registry_namespace_hold(f->registry, "team", &err), -ENOENT);
        assert_string_equal(err.msg, "namespaces \"team\" not found");
        assert_int_equal(xp_registry_namespace_hold(f->registry, NULL, &err), 0); /* no-op */
        xp_registry_namespace_release(f->registry, NULL);

        put(f,
            "namespaces",
            "",
            "team",
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team\"},"
            "\"status\":{\"phase\":\"Active\"}}");
        put(f, "pods", "team", "run", BOUND_POD("run"));
        put(f, "events", "team", "e1", "{\"metadata\":{\"name\":\"e1\",\"namespace\":\"team\"}}");
        assert_int_equal(xp_registry_namespace_hold(f->registry, "team", &err), 0);
        xp_registry_namespace_release(f->registry, "team");

        /* a wrong version changes nothing */
        assert_int_equal(xp_registry_namespace_delete(f->registry, "team", 1, false, &ns, &err),
                         -ESTALE);
        /* the running pod is marked and stays, everything else goes, the namespace waits */
        assert_int_equal(xp_registry_namespace_delete(f->registry, "team", 0, false, &ns, &err), 0);
        assert_string_equal(str_at(ns, "status", "phase"), "Terminating");
        json_decref(ns);
        pod = fixture_get(f, "pods", "team", "run");
        assert_non_null(str_at(pod, "metadata", "deletionTimestamp"));
        json_decref(pod);
        assert_null(fixture_get(f, "events", "team", "e1"));
        assert_int_equal(xp_registry_namespace_hold(f->registry, "team", &err),
                         -XP_REGISTRY_TERMINATING);
        assert_int_equal(xp_registry_namespace_finish(f->registry, "team", NULL, &err), 0);

        /* once its agent deletes the pod (grace 0) the namespace is finished */
        struct xp_registry_delete_options now = {.has_grace = true, .grace_seconds = 0};
        assert_int_equal(
            xp_registry_pod_delete(f->registry, "team", "run", &now, &pod, &removed, &err), 0);
        assert_true(removed);
        json_decref(pod);
        assert_int_equal(xp_registry_namespace_finish(f->registry, "team", &ns, &err), 1);
        assert_non_null(ns);
        json_decref(ns);
        assert_null(fixture_get(f, "namespaces", "", "team"));
        assert_int_equal(xp_registry_namespace_finish(f->registry, "team", &ns, &err), 1);
        assert_null(ns); /* finished before */
}

static void create_generates_what_the_server_owns(void **state)
{
        struct registry_fixture *f = *state;
        const struct xp_kind *kind = &xp_kind_pod;
        json_t *json = load("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
                            "\"generateName\":\"web-\",\"namespace\":\"default\",\"uid\":\"mine\","
                            "\"resourceVersion\":\"7\"},"
                            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
        struct xp_error err = {0};
        json_t *out = NULL, *stored;
        void *object = NULL;
        const char *name;

        assert_int_equal(kind->from_json(json, NULL, 0, &object, &err), 0);
        assert_int_equal(
            xp_registry_create(f->registry, kind, "default", object, NULL, true, &out, &err), 1);
        name = str_at(out, "metadata", "name");
        assert_int_equal(strlen(name), strlen("web-") + 5);
        assert_null(fixture_get(f, "pods", "default", name)); /* dry: nothing written */
        json_decref(out);

        assert_int_equal(
            xp_registry_create(f->registry, kind, "default", object, NULL, false, &out, &err), 1);
        name = str_at(out, "metadata", "name");
        assert_int_equal(strncmp(name, "web-", 4), 0);
        assert_string_not_equal(str_at(out, "metadata", "uid"), "mine");
        assert_int_equal(strlen(str_at(out, "metadata", "uid")), XP_REGISTRY_UID_STRING - 1);
        assert_non_null(str_at(out, "metadata", "creationTimestamp"));
        assert_string_equal(str_at(out, "status", "phase"), "Pending"); /* defaults */
        stored = fixture_get(f, "pods", "default", name);
        assert_non_null(stored);
        assert_string_equal(str_at(stored, "metadata", "uid"), str_at(out, "metadata", "uid"));
        json_decref(stored);
        json_decref(out);
        kind->free(object);
        json_decref(json);
}

/* The API's create: the model freed once encoded, the name and the stored text handed back. */
static void create_text_takes_the_model(void **state)
{
        struct registry_fixture *f = *state;
        const struct xp_kind *kind = &xp_kind_pod;
        json_t *json = load("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
                            "\"generateName\":\"web-\",\"namespace\":\"default\"},"
                            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
        struct xp_error err = {0};
        json_t *out = NULL;
        void *object = NULL, *again = NULL;
        char *text = NULL, *name = NULL;

        assert_int_equal(kind->from_json(json, NULL, 0, &object, &err), 0);
        assert_int_equal(kind->from_json(json, NULL, 0, &again, &err), 0);
        assert_int_equal(
            xp_registry_create_text(
                f->registry, kind, "default", &object, NULL, false, &out, &text, &name, &err),
            1);
        assert_null(object);
        assert_string_equal(name, str_at(out, "metadata", "name"));
        assert_int_equal(strncmp(name, "web-", 4), 0);
        assert_non_null(text);
        assert_non_null(strstr(text, name));
        json_decref(out);
        free(text);

        /* a name that is taken: the error's name is the one asked for */
        free(kind->meta(again)->name);
        kind->meta(again)->name = name;
        free(kind->meta(again)->generate_name);
        kind->meta(again)->generate_name = NULL;
        name = NULL;
        out = NULL;
        assert_int_equal(
            xp_registry_create_text(
                f->registry, kind, "default", &again, NULL, false, &out, &text, &name, &err),
            -EEXIST);
        assert_null(again);
        assert_null(out);
        assert_null(text);
        assert_int_equal(strncmp(name, "web-", 4), 0);
        free(name);
        json_decref(json);
}

static void update_keeps_what_the_server_owns(void **state)
{
        const struct xp_kind *kind = &xp_kind_pod;
        json_t *stored = load("{\"metadata\":{\"name\":\"p\",\"uid\":\"u1\","
                              "\"creationTimestamp\":\"2027-01-15T08:00:00Z\","
                              "\"deletionTimestamp\":\"2027-01-15T08:01:00Z\","
                              "\"deletionGracePeriodSeconds\":30}}");
        json_t *json = load("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                            "\"resourceVersion\":\"3\"},"
                            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
        struct xp_object_meta *meta;
        struct xp_error err = {0};
        void *object = NULL;

        (void)state;
        assert_int_equal(kind->from_json(json, NULL, 0, &object, &err), 0);
        meta = kind->meta(object);
        assert_int_equal(xp_registry_keep_owned(meta, stored, &err), 0);
        assert_string_equal(meta->uid, "u1");
        assert_null(meta->resource_version);
        assert_int_equal(meta->creation_timestamp, 1800000000);
        assert_int_equal(meta->deletion_timestamp, 1800000060);
        assert_true(meta->deletion_grace_period_seconds.set);
        assert_int_equal(meta->deletion_grace_period_seconds.value, 30);
        free(meta->uid);
        meta->uid = strdup("u2");
        assert_int_equal(xp_registry_keep_owned(meta, stored, &err), -ECANCELED);
        assert_string_equal(err.msg,
                            "Precondition failed: UID in precondition: u2, UID in object meta: u1");
        kind->free(object);
        json_decref(json);
        json_decref(stored);
}

static void binding(void **state)
{
        struct registry_fixture *f = *state;
        json_t *annotations = load("{\"a\":\"b\"}"), *pod = NULL;
        struct xp_error err = {0};
        const json_t *condition;

        put(f,
            "pods",
            "default",
            "p",
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":{}}");
        put(f,
            "pods",
            "default",
            "gone",
            "{\"metadata\":{\"name\":\"gone\",\"namespace\":\"default\","
            "\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"},\"spec\":{}}");
        /* a version the pod no longer has */
        assert_int_equal(
            xp_registry_pod_bind(f->registry, "default", "p", "n1", NULL, 999, NULL, &err),
            -ESTALE);
        assert_int_equal(
            xp_registry_pod_bind(f->registry, "default", "p", "n1", annotations, 0, &pod, &err), 0);
        assert_string_equal(str_at(pod, "spec", "nodeName"), "n1");
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(pod, "metadata"), "annotations"), "a")),
            "b");
        condition =
            json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 0);
        assert_string_equal(json_string_value(json_object_get(condition, "type")), "PodScheduled");
        assert_string_equal(json_string_value(json_object_get(condition, "status")), "True");
        json_decref(pod);
        assert_int_equal(
            xp_registry_pod_bind(f->registry, "default", "p", "n2", NULL, 0, NULL, &err),
            -EALREADY);
        assert_string_equal(err.msg, "pod p is already assigned to node \"n1\"");
        assert_int_equal(
            xp_registry_pod_bind(f->registry, "default", "gone", "n1", NULL, 0, NULL, &err),
            -EBUSY);
        assert_int_equal(
            xp_registry_pod_bind(f->registry, "default", "none", "n1", NULL, 0, NULL, &err),
            -ENOENT);
        json_decref(annotations);
}

/* The pod as stored, with its version. */
static json_t *stored_pod(struct registry_fixture *f, const char *ns, const char *name, uint64_t *v)
{
        json_t *pod = NULL;

        assert_int_equal(xp_store_get(f->store, "pods", ns, name, &pod, v, NULL), 0);
        return pod;
}

/* The Scheduled Event about pod name in ns, or NULL; its version in *ret_version. */
static json_t *scheduled_event_of(struct registry_fixture *f,
                                  const char *ns,
                                  const char *name,
                                  uint64_t *ret_version)
{
        json_t *items, *item, *found = NULL;
        uint64_t version;
        size_t i;

        assert_int_equal(xp_store_list(f->store, "events", ns, &items, &version, NULL), 0);
        json_array_foreach(
            items, i, item) if (xp_streq0(str_at(item, "involvedObject", "name"), name) &&
                                xp_streq0(json_string_value(json_object_get(item, "reason")),
                                          "Scheduled")) found = json_incref(item);
        json_decref(items);
        if (found)
                assert_true(xp_registry_version_parse(str_at(found, "metadata", "resourceVersion"),
                                                      ret_version));
        return found;
}

static size_t count_events(struct registry_fixture *f, const char *ns, int64_t *ret_count);

/* One group of bindings: each stands or fails alone, an Event only with its binding, right
 * after it in the store's order. */
static void bindings_in_one_group(void **state)
{
        static const char *const names[] = {"a", "b", "c", "d"};
        static const char *const spaces[] = {"default", "default", "default", "nowhere"};
        struct registry_fixture *f = *state;
        struct xp_registry_event events[4];
        struct xp_registry_binding b[4];
        json_t *pods[4], *bound[4] = {0}, *event;
        uint64_t versions[4], version;
        char text[256];

        for (size_t i = 0; i < 4; i++) {
                snprintf(text,
                         sizeof text,
                         "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"u-%s\"},"
                         "\"spec\":{}}",
                         names[i],
                         spaces[i],
                         names[i]);
                put(f, "pods", spaces[i], names[i], text);
                pods[i] = stored_pod(f, spaces[i], names[i], &versions[i]);
                events[i] = (struct xp_registry_event){.kind = "Pod",
                                                       .namespace = spaces[i],
                                                       .name = names[i],
                                                       .component = "test",
                                                       .type = "Normal",
                                                       .reason = "Scheduled",
                                                       .message = names[i]};
                b[i] = (struct xp_registry_binding){.pod = pods[i],
                                                    .version = versions[i],
                                                    .node = "n1",
                                                    .event = &events[i],
                                                    .ret_pod = &bound[i]};
        }
        b[1].version = 999; /* b changed since it was decided on */
        /* the failures before a binding count in the same group, bound or not: on the Event
         * already there (a), on a new one (b, whose binding fails) */
        struct xp_registry_event failed_a = {.kind = "Pod",
                                             .namespace = "default",
                                             .name = "a",
                                             .uid = "u-a",
                                             .component = "test",
                                             .type = "Warning",
                                             .reason = "FailedScheduling",
                                             .message = "no node",
                                             .count = 2};
        struct xp_registry_event failed_b = failed_a;
        int64_t count;

        failed_b.name = "b";
        failed_b.uid = "u-b";
        assert_int_equal(xp_registry_event_record(f->registry, &failed_a, NULL), 1);
        failed_a.count = 3;
        b[0].before = &failed_a;
        b[1].before = &failed_b;
        /* d's namespace does not exist: no Event, the binding alone */
        assert_int_equal(xp_registry_pod_bind_many(f->registry, b, 4), 3);
        assert_int_equal(b[0].result, 0);
        assert_int_equal(b[1].result, -ESTALE);
        assert_null(bound[1]);
        assert_int_equal(b[2].result, 0);
        assert_int_equal(b[3].result, 0);
        for (size_t i = 0; i < 4; i++) {
                json_t *pod = stored_pod(f, spaces[i], names[i], &version);

                assert_string_equal(
                    str_at(pod, "spec", "nodeName") ? str_at(pod, "spec", "nodeName") : "",
                    i == 1 ? "" : "n1");
                if (i != 1)
                        assert_string_equal(str_at(bound[i], "spec", "nodeName"), "n1");
                event = scheduled_event_of(f, "default", names[i], &versions[i]);
                if (i == 0 || i == 2) {
                        /* the Event comes right after its binding: a watch sees that order */
                        assert_non_null(event);
                        assert_int_equal(versions[i], version + 1);
                } else
                        assert_null(event);
                json_decref(event);
                json_decref(pod);
                json_decref(bound[i]);
                json_decref(pods[i]);
        }
        /* a's FailedScheduling Event counts 2 + 3, b's new one 2; and the Scheduled two */
        assert_int_equal(count_events(f, "default", &count), 4);
        assert_int_equal(count, 5 + 2 + 1 + 1);
        /* bound already: refused alone, as a single binding is */
        pods[0] = stored_pod(f, "default", "a", &version);
        b[0] = (struct xp_registry_binding){.pod = pods[0], .version = version, .node = "n2"};
        assert_int_equal(xp_registry_pod_bind_many(f->registry, b, 1), 0);
        assert_int_equal(b[0].result, -EALREADY);
        assert_string_equal(b[0].err.msg, "pod a is already assigned to node \"n1\"");
        json_decref(pods[0]);
}

/* Issue 19: a binding decided on a pod whose status alone changed since is made on the pod as
 * it is now (kube's Binding has no version check), with its Event; one relabelled (its queue or
 * gang may be another now), one whose spec changed, or one that did not ask for it, stays
 * stale. */
static void binding_after_a_status_write(void **state)
{
        static const char *const names[] = {"status", "label", "spec", "strict"};
        const bool rebound[] = {true, false, false, false};
        struct registry_fixture *f = *state;
        struct xp_registry_binding b[4];
        struct xp_registry_event events[4];
        json_t *pods[4], *bound[4] = {0}, *now, *event;
        uint64_t versions[4], version;
        char text[256];

        for (size_t i = 0; i < 4; i++) {
                snprintf(text,
                         sizeof text,
                         "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":"
                         "\"u-%s\"},\"spec\":{\"priority\":1}}",
                         names[i],
                         names[i]);
                put(f, "pods", "default", names[i], text);
                pods[i] = stored_pod(f, "default", names[i], &versions[i]);
                /* written after the decision: a status, a label, the spec, a status */
                now = json_deep_copy(pods[i]);
                if (i == 1)
                        json_object_set_new(json_object_get(now, "metadata"),
                                            "labels",
                                            json_pack("{s:s}", "team", "a"));
                else if (i == 2)
                        json_object_set_new(
                            json_object_get(now, "spec"), "priority", json_integer(2));
                else
                        json_object_set_new(now, "status", json_pack("{s:s}", "phase", "Pending"));
                fixture_put(f, "pods", "default", names[i], now);
                events[i] = (struct xp_registry_event){.kind = "Pod",
                                                       .namespace = "default",
                                                       .name = names[i],
                                                       .component = "test",
                                                       .type = "Normal",
                                                       .reason = "Scheduled",
                                                       .message = names[i]};
                b[i] = (struct xp_registry_binding){.pod = pods[i],
                                                    .version = versions[i],
                                                    .node = "n1",
                                                    .event = &events[i],
                                                    .ret_pod = &bound[i],
                                                    .same_spec_will_do = i != 3};
        }
        assert_int_equal(xp_registry_pod_bind_many(f->registry, b, 4), 1);
        for (size_t i = 0; i < 4; i++) {
                json_t *pod = stored_pod(f, "default", names[i], &version);

                assert_int_equal(b[i].result, rebound[i] ? 0 : -ESTALE);
                assert_string_equal(
                    str_at(pod, "spec", "nodeName") ? str_at(pod, "spec", "nodeName") : "",
                    rebound[i] ? "n1" : "");
                event = scheduled_event_of(f, "default", names[i], &version);
                if (rebound[i]) {
                        /* what was written meanwhile stays, and the Event says it */
                        assert_string_equal(str_at(bound[i], "spec", "nodeName"), "n1");
                        assert_non_null(event);
                } else {
                        assert_null(bound[i]);
                        assert_null(event);
                }
                if (i == 0)
                        assert_string_equal(str_at(pod, "status", "phase"), "Pending");
                json_decref(event);
                json_decref(pod);
                json_decref(bound[i]);
                json_decref(pods[i]);
        }
}

static void graceful_deletion(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_registry_delete_options options = {0};
        struct xp_error err = {0};
        json_t *pod = NULL;
        bool removed = false;

        put(f,
            "namespaces",
            "",
            "team",
            "{\"metadata\":{\"name\":\"team\"},\"status\":{\"phase\":\"Active\"}}");
        put(f, "pods", "team", "run", BOUND_POD("run"));
        options.uid = "other";
        assert_int_equal(
            xp_registry_pod_delete(f->registry, "team", "run", &options, &pod, &removed, &err),
            -ECANCELED);
        assert_non_null(strstr(err.msg, "Precondition failed: UID in precondition: other"));
        options.uid = "u-run";
        assert_int_equal(
            xp_registry_pod_delete(f->registry, "team", "run", &options, &pod, &removed, &err), 0);
        assert_false(removed);
        assert_non_null(str_at(pod, "metadata", "deletionTimestamp"));
        json_decref(pod);
        pod = fixture_get(f, "pods", "team", "run");
        assert_non_null(pod);
        json_decref(pod);
}

static int add_label(json_t *object, void *userdata)
{
        json_t *meta = json_object_get(object, "metadata");

        if (json_object_get(meta, "labels"))
                return 0;
        return json_object_set_new(
                   meta, "labels", json_pack("{s:s}", "k", (const char *)userdata)) < 0
                   ? -ENOMEM
                   : 1;
}

static void change(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_error err = {0};
        json_t *object = NULL;

        put(f, "nodes", "", "n1", "{\"metadata\":{\"name\":\"n1\"}}");
        assert_int_equal(
            xp_registry_change(f->registry, "nodes", "", "n1", add_label, "v", &object, &err), 1);
        json_decref(object);
        assert_int_equal(
            xp_registry_change(f->registry, "nodes", "", "n1", add_label, "w", &object, &err), 0);
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(object, "metadata"), "labels"), "k")),
            "v");
        json_decref(object);
        assert_int_equal(
            xp_registry_change(f->registry, "nodes", "", "none", add_label, "v", NULL, &err),
            -ENOENT);
}

static size_t count_events(struct registry_fixture *f, const char *ns, int64_t *ret_count)
{
        json_t *items, *item;
        uint64_t version;
        size_t i, n;

        assert_int_equal(xp_store_list(f->store, "events", ns, &items, &version, NULL), 0);
        n = json_array_size(items);
        *ret_count = 0;
        json_array_foreach(items, i, item) *ret_count +=
            json_integer_value(json_object_get(item, "count"));
        json_decref(items);
        return n;
}

static void events_count_repeats(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_registry_event e = {
            .kind = "Pod",
            .namespace = "default",
            .name = "p",
            .uid = "u1",
            .resource_version = "5",
            .component = "test",
            .type = "Warning",
            .reason = "FailedScheduling",
            .message = "no node fits",
            .count = 2,
        };
        struct xp_registry_event node = {
            .kind = "Node",
            .namespace = "",
            .name = "n1",
            .component = "test",
            .type = "Warning",
            .reason = "NodeNotReady",
            .message = "gone",
        };
        struct xp_error err = {0};
        json_t *items, *first;
        uint64_t version;
        int64_t count;

        assert_int_equal(xp_registry_event_record(f->registry, &e, &err), 1);
        e.count = 1;
        assert_int_equal(xp_registry_event_record(f->registry, &e, &err), 1);
        assert_int_equal(count_events(f, "default", &count), 1);
        assert_int_equal(count, 3);
        assert_int_equal(xp_store_list(f->store, "events", "default", &items, &version, NULL), 0);
        first = json_array_get(items, 0);
        assert_string_equal(str_at(first, "involvedObject", "resourceVersion"), "5");
        assert_string_equal(str_at(first, "source", "component"), "test");
        assert_int_equal(strncmp(str_at(first, "metadata", "name"), "p.", 2), 0);
        json_decref(items);

        e.message = "another reason";
        assert_int_equal(xp_registry_event_record(f->registry, &e, &err), 1);
        /* a cluster-scoped object's Event goes to default, without a resourceVersion */
        assert_int_equal(xp_registry_event_record(f->registry, &node, &err), 1);
        assert_int_equal(count_events(f, "default", &count), 3);
        assert_int_equal(count, 5);

        /* nowhere to report: nothing written */
        e.namespace = "gone";
        assert_int_equal(xp_registry_event_record(f->registry, &e, &err), 0);
        assert_int_equal(count_events(f, "gone", &count), 0);
}

/* Kubernetes' names: the object's and the hex of the time in nanoseconds, each later than the
 * one before, so name order (a list's, describe's within a second) is the order recorded. */
static void events_named_by_time(void **state)
{
        struct registry_fixture *f = *state;
        const char *reasons[] = {"Scheduled", "Pulled", "Created", "Started"};
        struct xp_registry_event e = {.kind = "Pod",
                                      .namespace = "default",
                                      .name = "web",
                                      .uid = "u7",
                                      .component = "test",
                                      .type = "Normal",
                                      .message = "m"};
        struct xp_error err = {0};
        json_t *items, *item;
        uint64_t version;
        int64_t count;
        size_t i;

        for (i = 0; i < XP_ELEMENTSOF(reasons); i++) {
                e.reason = reasons[i];
                assert_int_equal(xp_registry_event_record(f->registry, &e, &err), 1);
        }
        assert_int_equal(xp_store_list(f->store, "events", "default", &items, &version, NULL), 0);
        assert_int_equal(json_array_size(items), XP_ELEMENTSOF(reasons));
        json_array_foreach(items, i, item)
        {
                const char *name = str_at(item, "metadata", "name");

                /* listed in name order: the order recorded */
                assert_string_equal(json_string_value(json_object_get(item, "reason")), reasons[i]);
                assert_int_equal(strncmp(name, "web.", 4), 0);
                assert_int_equal(strspn(name + 4, "0123456789abcdef"), 16);
                assert_int_equal(strlen(name), 4 + 16);
        }
        json_decref(items);
        /* a repeat counts on its Event */
        e.reason = reasons[1];
        assert_int_equal(xp_registry_event_record(f->registry, &e, &err), 1);
        assert_int_equal(count_events(f, "default", &count), XP_ELEMENTSOF(reasons));
        assert_int_equal(count, XP_ELEMENTSOF(reasons) + 1);
}

static void versions(void **state)
{
        char buf[24];
        uint64_t v = 0;

        (void)state;
        assert_true(xp_registry_version_parse("42", &v));
        assert_int_equal(v, 42);
        assert_false(xp_registry_version_parse("0", &v));
        assert_false(xp_registry_version_parse("-1", &v));
        assert_false(xp_registry_version_parse("4x", &v));
        assert_false(xp_registry_version_parse(NULL, &v));
        xp_registry_version_format(18446744073709551615ull, buf);
        assert_string_equal(buf, "18446744073709551615");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(system_namespaces, setup, teardown),
            cmocka_unit_test_setup_teardown(holds_and_namespace_deletion, setup, teardown),
            cmocka_unit_test_setup_teardown(create_generates_what_the_server_owns, setup, teardown),
            cmocka_unit_test(update_keeps_what_the_server_owns),
            cmocka_unit_test_setup_teardown(binding, setup, teardown),
            cmocka_unit_test_setup_teardown(binding_after_a_status_write, setup, teardown),
            cmocka_unit_test_setup_teardown(bindings_in_one_group, setup, teardown),
            cmocka_unit_test_setup_teardown(graceful_deletion, setup, teardown),
            cmocka_unit_test_setup_teardown(change, setup, teardown),
            cmocka_unit_test_setup_teardown(create_text_takes_the_model, setup, teardown),
            cmocka_unit_test_setup_teardown(events_named_by_time, setup, teardown),
            cmocka_unit_test_setup_teardown(events_count_repeats, setup, teardown),
            cmocka_unit_test(versions),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
