/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's terminal status is final (src/agent/finalstatus.h), through the agent's write queue
 * as the writers use it: an eviction's Failed/Evicted put, then statuses the pod sync built from
 * a snapshot of the pod older than the eviction (Running; Failed without a reason, once the
 * containers were stopped) keep the eviction's phase, reason, message and DisruptionTarget
 * condition, whether the eviction's write already landed or still waits; and the rule itself:
 * the first terminal phase wins, a reason is added where there was none, a pod gone forgets it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/finalstatus.h"
#include "agent/retryq.h"

#define MS      INT64_C(1000000)
#define MESSAGE "Container chatty exceeded its local ephemeral storage limit \"1Mi\". "
#define UID     "u1"

static struct xp_retryq *queue(void)
{
        const struct xp_retryq_config c = {.initial_ns = 200 * MS, .max_ns = 3200 * MS};
        struct xp_retryq *q = NULL;

        assert_int_equal(xp_retryq_new(&c, &q), 0);
        return q;
}

/* A status as the pod sync builds it: phase, its own conditions, no reason. */
static json_t *synced(const char *phase)
{
        return json_pack("{s:s, s:[{s:s, s:s}], s:[{s:s}]}",
                         "phase",
                         phase,
                         "conditions",
                         "type",
                         "Ready",
                         "status",
                         "True",
                         "containerStatuses",
                         "name",
                         "chatty");
}

/* The housekeeping's eviction of the pod. */
static json_t *evicted(void)
{
        return json_pack("{s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s, s:s}]}",
                         "phase",
                         "Failed",
                         "reason",
                         "Evicted",
                         "message",
                         MESSAGE,
                         "conditions",
                         "type",
                         "Ready",
                         "status",
                         "True",
                         "type",
                         "DisruptionTarget",
                         "status",
                         "True",
                         "reason",
                         "TerminationByKubelet");
}

static void put(struct xp_retryq *q, json_t *status, int64_t hold_ns)
{
        assert_int_equal(xp_retryq_put_status(q, "default", "logfull", UID, status, hold_ns), 0);
}

/* Takes the write due at now (it must be one) and says it landed; returns its status. */
static json_t *write_due(struct xp_retryq *q, int64_t now)
{
        struct xp_retryq_write w;
        json_t *status;
        int64_t next;

        if (!xp_retryq_take(q, now, &w, &next))
                fail_msg("nothing due at %lld ms", (long long)(now / MS));
        status = json_incref(w.status);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now);
        return status;
}

static const char *field(const json_t *status, const char *key)
{
        return json_string_value(json_object_get(status, key));
}

static const char *condition_reason(const json_t *status, const char *type)
{
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(status, "conditions"), i, c)
        {
                if (strcmp(field(c, "type"), type) == 0)
                        return field(c, "reason") ? field(c, "reason") : "";
        }
        return NULL;
}

static void assert_evicted(json_t *status)
{
        assert_non_null(status);
        assert_string_equal(field(status, "phase"), "Failed");
        assert_string_equal(field(status, "reason"), "Evicted");
        assert_string_equal(field(status, "message"), MESSAGE);
        assert_string_equal(condition_reason(status, "DisruptionTarget"), "TerminationByKubelet");
        json_decref(status);
}

/* The CI failure of 55-ephemeral-storage: the eviction landed, then the pod sync, which had not
 * seen it yet, wrote Running, then (its containers stopped) Failed, each over it whole. */
static void an_eviction_that_landed_stays(void **state)
{
        struct xp_retryq *q = queue();
        json_t *status;

        (void)state;
        put(q, evicted(), 0);
        assert_evicted(write_due(q, 0));
        put(q, synced("Running"), 5 * MS);
        status = write_due(q, 0); /* now terminal: due at once, not held */
        /* what the pod sync saw of its containers stays */
        assert_string_equal(
            field(json_array_get(json_object_get(status, "containerStatuses"), 0), "name"),
            "chatty");
        assert_evicted(status);
        put(q, synced("Failed"), 0);
        assert_evicted(write_due(q, 0));
        put(q, synced("Succeeded"), 0);
        assert_evicted(write_due(q, 0));
        xp_retryq_free(q);
}

/* The eviction still waits, or is out: a newer, less informed status does not replace it. */
static void an_eviction_waiting_or_out_stays(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;
        int64_t next;

        (void)state;
        put(q, evicted(), 0);
        put(q, synced("Running"), 5 * MS);
        assert_evicted(write_due(q, 0));
        assert_int_equal(xp_retryq_pods(q), 0);
        put(q, evicted(), 0);
        assert_true(xp_retryq_take(q, 0, &w, &next));
        put(q, synced("Failed"), 0);
        /* the write out fails: the newer one, which says the same, goes in its place */
        xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 0);
        assert_evicted(write_due(q, 200 * MS));
        xp_retryq_free(q);
}

/* A pod gone from the server leaves nothing behind: the queue forgets its final words. */
static void a_pod_gone_forgets_them(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;
        json_t *status;
        int64_t next;

        (void)state;
        put(q, evicted(), 0);
        xp_retryq_drop(q, UID);
        put(q, synced("Running"), 0);
        status = write_due(q, 0);
        assert_string_equal(field(status, "phase"), "Running");
        assert_null(json_object_get(status, "reason"));
        json_decref(status);
        /* likewise when a write of it is answered 404 */
        put(q, evicted(), 0);
        assert_true(xp_retryq_take(q, 0, &w, &next));
        xp_retryq_done(q, &w, XP_RETRYQ_GONE, 0);
        put(q, synced("Pending"), 0);
        status = write_due(q, 0);
        assert_string_equal(field(status, "phase"), "Pending");
        assert_null(condition_reason(status, "DisruptionTarget"));
        json_decref(status);
        xp_retryq_free(q);
}

static void rule(json_t *finals, json_t *status, int want)
{
        assert_int_equal(xp_agent_final_status(finals, UID, status), want);
}

/* The rule alone: nothing before a terminal status; the first terminal phase wins with its
 * words; a reason may come later to a terminal status that had none, and then it is final. */
static void the_first_terminal_status_fixes_the_words(void **state)
{
        json_t *finals = json_object(), *s = synced("Running");

        (void)state;
        rule(finals, s, 0);
        assert_int_equal(json_object_size(finals), 0);
        json_decref(s);
        s = synced("Failed");
        rule(finals, s, 1);
        assert_null(json_object_get(s, "reason"));
        json_decref(s);
        /* the eviction, put after the pod sync's Failed: its reason is added, and stays */
        s = evicted();
        rule(finals, s, 1);
        json_decref(s);
        s = synced("Running");
        rule(finals, s, 1);
        assert_evicted(s);
        s = json_pack(
            "{s:s, s:s, s:s}", "phase", "Failed", "reason", "DeviceUnhealthy", "message", "m");
        rule(finals, s, 1);
        assert_evicted(s);
        json_decref(finals);
}

static void a_succeeded_pod_stays_succeeded(void **state)
{
        json_t *finals = json_object(), *s = synced("Succeeded");

        (void)state;
        rule(finals, s, 1);
        json_decref(s);
        s = evicted();
        rule(finals, s, 1);
        assert_string_equal(field(s, "phase"), "Succeeded");
        assert_null(json_object_get(s, "reason"));
        assert_null(json_object_get(s, "message"));
        json_decref(s);
        json_decref(finals);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(an_eviction_that_landed_stays),
            cmocka_unit_test(an_eviction_waiting_or_out_stays),
            cmocka_unit_test(a_pod_gone_forgets_them),
            cmocka_unit_test(the_first_terminal_status_fixes_the_words),
            cmocka_unit_test(a_succeeded_pod_stays_succeeded),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
