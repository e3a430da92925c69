/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A binding job without the pod as decided on or its version (src/controller/scheduler_write.c):
 * its Scheduled Event is named before the binding is written, so that an Event of the pod named
 * once the binding is there (the agent's Created) sorts after it, as it happened; the Event is
 * kube-scheduler's. On a temporary store, the jobs run at once (no worker thread).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/scheduler_state.h"
#include "scheduler_fixture.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

static int setup(void **state)
{
        return scheduler_fixture_setup(state, "scheduler-bind-alone");
}

static void put_pod(struct fixture *f, const char *name)
{
        fixture_put_text(&f->base,
                         "pods",
                         "default",
                         name,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                         "\"namespace\":\"default\",\"uid\":\"uid-%s\","
                         "\"creationTimestamp\":\"2027-01-15T08:00:00Z\"},"
                         "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"x\"}]},"
                         "\"status\":{\"phase\":\"Pending\"}}",
                         name,
                         name);
}

static uint64_t version_of(struct fixture *f, const char *name)
{
        json_t *pod = NULL;
        uint64_t version = 0;

        assert_int_equal(xp_store_get(f->base.store, "pods", "default", name, &pod, &version, NULL),
                         0);
        json_decref(pod);
        return version;
}

/* The agent's Created of the pod, named the moment its binding is written. */
static void agent_created(struct xp_scheduler *s, const struct bind_job *job)
{
        const struct xp_registry_event created = {.kind = "Pod",
                                                  .namespace = job->namespace,
                                                  .name = job->name,
                                                  .uid = "uid-web",
                                                  .resource_version = "1",
                                                  .component = "kubelet",
                                                  .type = "Normal",
                                                  .reason = "Created",
                                                  .message = "Created container main",
                                                  .count = 1};

        assert_true(xp_registry_event_record(s->registry, &created, NULL) >= 0);
}

/* The binding job of pod name to node n1: with the pod as read (version set) or without. */
static struct bind_job *
job_new(struct fixture *f, const char *name, bool with_pod, uint64_t version)
{
        struct bind_job *job = calloc(1, sizeof *job);

        assert_non_null(job);
        job->namespace = strdup("default");
        job->name = strdup(name);
        job->node = strdup("n1");
        job->version = version;
        job->pod = with_pod ? fixture_get(&f->base, "pods", "default", name) : NULL;
        assert_true(job->namespace && job->name && job->node);
        return job;
}

/* Runs job (at once: no workers) and returns what it came to. */
static int run(struct fixture *f, struct bind_job *job, char *message, size_t size)
{
        struct bind_job *done;
        int result;

        f->scheduler->inflight++;
        bind_job_enqueue(f->scheduler, job);
        done = bind_jobs_done(f->scheduler);
        assert_ptr_equal(done, job);
        assert_null(bind_jobs_done(f->scheduler));
        f->scheduler->inflight--;
        result = done->result;
        snprintf(message, size, "%s", done->message);
        bind_job_free(done);
        return result;
}

/* The pod's Event with reason (a new reference), its name in *ret_name. */
static json_t *event_of(struct fixture *f, const char *reason, const char **ret_name)
{
        json_t *items = NULL, *event, *found = NULL;
        uint64_t version;
        size_t i;

        assert_int_equal(xp_store_list(f->base.store, "events", "default", &items, &version, NULL),
                         0);
        json_array_foreach(items, i, event)
        {
                if (xp_streq0(json_string_value(json_object_get(event, "reason")), reason)) {
                        assert_null(found);
                        found = json_incref(event);
                }
        }
        json_decref(items);
        assert_non_null(found);
        *ret_name = json_string_value(json_object_get(json_object_get(found, "metadata"), "name"));
        return found;
}

static const char *member(const json_t *object, const char *part, const char *key)
{
        return json_string_value(
            json_object_get(part ? json_object_get(object, part) : object, key));
}

static void scheduled_is_named_before_what_follows_the_binding(void **state)
{
        struct fixture *f = *state;
        const char *scheduled_name, *created_name;
        char message[256], version[32];
        json_t *scheduled, *created, *pod;

        put_pod(f, "web");
        snprintf(version, sizeof version, "%" PRIu64, version_of(f, "web"));
        scheduler_bound_hook = agent_created;
        assert_int_equal(run(f, job_new(f, "web", false, 0), message, sizeof message), 0);
        scheduler_bound_hook = NULL;

        pod = fixture_get(&f->base, "pods", "default", "web");
        assert_string_equal(member(pod, "spec", "nodeName"), "n1");
        json_decref(pod);
        scheduled = event_of(f, "Scheduled", &scheduled_name);
        created = event_of(f, "Created", &created_name);
        /* names of the same shape (the pod's and a hex UnixNano): name order is time order */
        assert_int_equal(strlen(scheduled_name), strlen(created_name));
        assert_true(strcmp(scheduled_name, created_name) < 0);
        /* kube-scheduler's Event, about the pod as it was before the binding */
        assert_string_equal(member(scheduled, NULL, "type"), "Normal");
        assert_string_equal(member(scheduled, NULL, "message"),
                            "Successfully assigned default/web to n1");
        assert_string_equal(member(scheduled, "source", "component"), "default-scheduler");
        assert_string_equal(member(scheduled, NULL, "reportingComponent"), "default-scheduler");
        assert_string_equal(member(scheduled, "involvedObject", "kind"), "Pod");
        assert_string_equal(member(scheduled, "involvedObject", "name"), "web");
        assert_string_equal(member(scheduled, "involvedObject", "uid"), "uid-web");
        assert_string_equal(member(scheduled, "involvedObject", "resourceVersion"), version);
        assert_int_equal(json_integer_value(json_object_get(scheduled, "count")), 1);
        json_decref(scheduled);
        json_decref(created);
}

/* A job decided on a version that is gone binds nothing and reports nothing. */
static void a_stale_version_binds_nothing(void **state)
{
        struct fixture *f = *state;
        char message[256];
        json_t *items = NULL, *pod;
        uint64_t version, list_version;

        put_pod(f, "web");
        version = version_of(f, "web");
        put_pod(f, "web"); /* written again: a new version */
        assert_int_equal(run(f, job_new(f, "web", false, version), message, sizeof message),
                         -ESTALE);
        assert_non_null(strstr(message, "changed"));
        pod = fixture_get(&f->base, "pods", "default", "web");
        assert_null(member(pod, "spec", "nodeName"));
        json_decref(pod);
        assert_int_equal(
            xp_store_list(f->base.store, "events", "default", &items, &list_version, NULL), 0);
        assert_int_equal(json_array_size(items), 0);
        json_decref(items);
}

/* A pod gone: the job fails with the store's error. */
static void a_pod_gone_fails_the_job(void **state)
{
        struct fixture *f = *state;
        char message[256];

        assert_int_equal(run(f, job_new(f, "gone", false, 0), message, sizeof message), -ENOENT);
        assert_true(message[0] != '\0');
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(
                scheduled_is_named_before_what_follows_the_binding, setup, teardown),
            cmocka_unit_test_setup_teardown(a_stale_version_binds_nothing, setup, teardown),
            cmocka_unit_test_setup_teardown(a_pod_gone_fails_the_job, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
