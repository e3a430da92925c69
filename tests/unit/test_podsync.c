/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/podsync.h"
#include "xpool/codec.h"

#define NS    INT64_C(1000000000)
#define T0    INT64_C(1800000000) /* 2027-01-15T08:00:00Z */
#define AT(s) ((T0 + (s)) * NS)

/* JSON text with ' for " so expectations stay readable. */
static json_t *j(const char *text)
{
        char *s = strdup(text);
        json_error_t e;
        json_t *v;

        assert_non_null(s);
        for (char *p = s; *p; p++)
                if (*p == '\'')
                        *p = '"';
        v = json_loads(s, 0, &e);
        if (!v)
                fail_msg("bad test JSON at %d: %s: %s", e.position, e.text, s);
        free(s);
        return v;
}

struct fx {
        struct xp_podsync_config cfg;
        struct xp_podsync_memory *m;
        struct xp_pod *pod;
        struct xp_podsync_result res;
        char acts[1024];
};

static void set_pod(struct fx *f, json_t *pod_json)
{
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;

        if (xp_pod_from_json(pod_json, NULL, XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s", err.msg);
        json_decref(pod_json);
        xp_pod_free(f->pod);
        f->pod = pod;
}

#define POD_META "'metadata':{'name':'web','namespace':'default','uid':'uid-1'}"
#define SCHEDULED                                                                                  \
        "{'type':'PodScheduled','status':'True','lastTransitionTime':'2027-01-15T07:59:00Z'}"

static void fx_init(struct fx *f, const char *spec)
{
        char text[4096];

        *f = (struct fx){.cfg = {.backoff_initial_ms = 10000,
                                 .backoff_max_ms = 25000,
                                 .backoff_reset_ms = 60000}};
        f->m = xp_podsync_memory_new();
        assert_non_null(f->m);
        snprintf(text,
                 sizeof(text),
                 "{'apiVersion':'v1','kind':'Pod'," POD_META ",'spec':%s,"
                 "'status':{'phase':'Pending','conditions':[" SCHEDULED "]}}",
                 spec);
        set_pod(f, j(text));
}

static void fx_done(struct fx *f)
{
        xp_podsync_result_clear(&f->res);
        xp_podsync_memory_free(f->m);
        xp_pod_free(f->pod);
}

/* The agent writing the status: the pod as the server then has it. */
static void apply_status(struct fx *f)
{
        json_t *pod_json = NULL;

        if (!f->res.status)
                return;
        assert_int_equal(xp_pod_to_json(f->pod, &pod_json), 0);
        assert_int_equal(json_object_set(pod_json, "status", f->res.status), 0);
        set_pod(f, pod_json);
}

static void set_meta(struct fx *f, const char *key, json_t *value)
{
        json_t *pod_json = NULL;

        assert_int_equal(xp_pod_to_json(f->pod, &pod_json), 0);
        assert_int_equal(json_object_set_new(json_object_get(pod_json, "metadata"), key, value), 0);
        set_pod(f, pod_json);
}

static void set_status_field(struct fx *f, const char *key, json_t *value)
{
        json_t *pod_json = NULL;

        assert_int_equal(xp_pod_to_json(f->pod, &pod_json), 0);
        assert_int_equal(json_object_set_new(json_object_get(pod_json, "status"), key, value), 0);
        set_pod(f, pod_json);
}

static const char *kind_name(enum xp_podsync_action_kind k)
{
        switch (k) {
        case XP_PODSYNC_START:
                return "START";
        case XP_PODSYNC_KILL:
                return "KILL";
        case XP_PODSYNC_FORGET:
                return "FORGET";
        default:
                return "DELETE_POD";
        }
}

/* Syncs at T0+s and writes the actions as "START app 0; KILL app 15" into f->acts. */
static void
sync_at(struct fx *f, const struct xp_container_record *recs, size_t n, int64_t s, bool pod_gone)
{
        struct xp_error err = {0};
        size_t len = 0;

        xp_podsync_result_clear(&f->res);
        if (xp_podsync(&f->cfg, f->m, pod_gone ? NULL : f->pod, recs, n, AT(s), &f->res, &err) < 0)
                fail_msg("xp_podsync: %s", err.msg);
        f->acts[0] = 0;
        for (size_t i = 0; i < f->res.n_actions; i++) {
                const struct xp_podsync_action *a = &f->res.actions[i];

                if (a->kind == XP_PODSYNC_DELETE_POD)
                        len += snprintf(
                            f->acts + len, sizeof(f->acts) - len, "%sDELETE_POD", i ? "; " : "");
                else if (a->kind == XP_PODSYNC_KILL)
                        len += snprintf(f->acts + len,
                                        sizeof(f->acts) - len,
                                        "%sKILL %s %d",
                                        i ? "; " : "",
                                        a->container,
                                        a->signal);
                else
                        len += snprintf(f->acts + len,
                                        sizeof(f->acts) - len,
                                        "%s%s %s%s %u",
                                        i ? "; " : "",
                                        kind_name(a->kind),
                                        a->container,
                                        a->init ? " init" : "",
                                        a->attempt);
        }
}

static void check_status(struct fx *f, const char *expected)
{
        json_t *want = j(expected);

        if (!f->res.status)
                fail_msg("no status, expected %s", expected);
        if (!json_equal(want, f->res.status)) {
                char *got = json_dumps(f->res.status, JSON_SORT_KEYS);
                char *exp = json_dumps(want, JSON_SORT_KEYS);
                fail_msg("status\n got: %s\nwant: %s", got, exp);
        }
        json_decref(want);
}

/* The status member `key` (e.g. "containerStatuses") compared to expected. */
static void check_status_member(struct fx *f, const char *key, const char *expected)
{
        json_t *want = j(expected);
        json_t *got;

        if (!f->res.status)
                fail_msg("no status, expected %s %s", key, expected);
        got = json_object_get(f->res.status, key);
        if (!json_equal(want, got)) {
                char *g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
                char *w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
                fail_msg("%s\n got: %s\nwant: %s", key, g, w);
        }
        json_decref(want);
}

/* Nothing to write: the status equals the pod's. */
static void check_no_status(struct fx *f)
{
        json_t *pod_json = NULL;

        if (!f->res.status)
                return;
        assert_int_equal(xp_pod_to_json(f->pod, &pod_json), 0);
        {
                const char *key;
                json_t *v, *old = json_object_get(pod_json, "status");

                json_object_foreach(f->res.status, key, v)
                {
                        if (!json_equal(v, json_object_get(old, key)))
                                fail_msg("unexpected status: %s\n got: %s\n pod: %s",
                                         key,
                                         json_dumps(v, JSON_ENCODE_ANY | JSON_SORT_KEYS),
                                         json_dumps(json_object_get(old, key),
                                                    JSON_ENCODE_ANY | JSON_SORT_KEYS));
                }
                json_object_foreach(old, key, v) if (!json_object_get(f->res.status, key))
                    fail_msg("unexpected status: %s lost", key);
        }
        fail_msg("a status equal to the pod's: %s", json_dumps(f->res.status, JSON_SORT_KEYS));
}

static const char *phase(struct fx *f)
{
        assert_non_null(f->res.status);
        return json_string_value(json_object_get(f->res.status, "phase"));
}

static struct xp_container_record running(const char *c, unsigned attempt, int64_t started_s)
{
        return (struct xp_container_record){.pod_uid = (char *)"uid-1",
                                            .pod_namespace = (char *)"default",
                                            .pod_name = (char *)"web",
                                            .container = (char *)c,
                                            .attempt = attempt,
                                            .pid = 100 + (pid_t)attempt,
                                            .started_ns = AT(started_s)};
}

static struct xp_container_record
exited(const char *c, unsigned attempt, int64_t started_s, int64_t finished_s, int code)
{
        struct xp_container_record r = running(c, attempt, started_s);

        r.exited = true;
        r.exit_code = code;
        r.finished_ns = AT(finished_s);
        if (code > 128)
                r.signal = code - 128;
        return r;
}

#define SPEC_APP(policy)                                                                           \
        "{" policy "'nodeName':'n1','containers':[{'name':'app','image':'busybox',"                \
        "'command':['sh','-c','exit 1']}]}"

/* ---- tests ---------------------------------------------------------------------------------- */

static void start_run_crash_backoff(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP(""));

        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "START app 0");
        check_status(
            &f,
            "{'phase':'Pending','conditions':["
            "{'type':'PodReadyToStartContainers','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Initialized','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'}," SCHEDULED
            "],"
            "'startTime':'2027-01-15T08:00:00Z',"
            "'containerStatuses':[{'name':'app','state':{'waiting':{'reason':'ContainerCreating'}},"
            "'lastState':{},'ready':false,'restartCount':0,'image':'busybox','imageID':'',"
            "'started':false}]}");
        assert_int_equal(f.res.wake_at_ns, 0);
        assert_false(f.res.done);
        apply_status(&f);

        /* the same again: nothing to do, nothing to write */
        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "START app 0");
        check_no_status(&f);

        r = running("app", 0, 1);
        sync_at(&f, &r, 1, 2, false);
        assert_string_equal(f.acts, "");
        check_status(
            &f,
            "{'phase':'Running','conditions':["
            "{'type':'PodReadyToStartContainers','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Initialized','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Ready','status':'True','lastTransitionTime':'2027-01-15T08:00:02Z'},"
            "{'type':'ContainersReady','status':'True','lastTransitionTime':'2027-01-15T08:00:02Z'}," SCHEDULED
            "],"
            "'startTime':'2027-01-15T08:00:00Z',"
            "'containerStatuses':[{'name':'app','state':{'running':{'startedAt':'2027-01-15T08:00:01Z'}},"
            "'lastState':{},'ready':true,'restartCount':0,'image':'busybox','imageID':'',"
            "'started':true,'containerID':'xpool://uid-1/app/0'}]}");
        apply_status(&f);
        sync_at(&f, &r, 1, 3, false);
        assert_string_equal(f.acts, "");
        check_no_status(&f);

        /* first failure: restarted at once (the kubelet backs off from the second) */
        r = exited("app", 0, 1, 5, 1);
        sync_at(&f, &r, 1, 5, false);
        assert_string_equal(f.acts, "FORGET app 0; START app 1");
        check_status(
            &f,
            "{'phase':'Running','conditions':["
            "{'type':'PodReadyToStartContainers','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Initialized','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:05Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:05Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'}," SCHEDULED
            "],"
            "'startTime':'2027-01-15T08:00:00Z',"
            "'containerStatuses':[{'name':'app','state':{'waiting':{'reason':'ContainerCreating'}},"
            "'lastState':{'terminated':{'exitCode':1,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:01Z','finishedAt':'2027-01-15T08:00:05Z',"
            "'containerID':'xpool://uid-1/app/0'}},"
            "'ready':false,'restartCount':0,'image':'busybox','imageID':'','started':false}]}");
        apply_status(&f);

        r = running("app", 1, 6);
        sync_at(&f, &r, 1, 6, false);
        assert_string_equal(f.acts, "");
        check_status_member(
            &f,
            "containerStatuses",
            "[{'name':'app','state':{'running':{'startedAt':'2027-01-15T08:00:06Z'}},"
            "'lastState':{'terminated':{'exitCode':1,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:01Z','finishedAt':'2027-01-15T08:00:05Z',"
            "'containerID':'xpool://uid-1/app/0'}},"
            "'ready':true,'restartCount':1,'image':'busybox','imageID':'',"
            "'started':true,'containerID':'xpool://uid-1/app/1'}]");
        apply_status(&f);

        /* second failure: back-off 10 s, CrashLoopBackOff worded as the kubelet does */
        r = exited("app", 1, 6, 7, 137);
        sync_at(&f, &r, 1, 7, false);
        assert_string_equal(f.acts, "FORGET app 1");
        assert_int_equal(f.res.wake_at_ns, AT(17));
        assert_string_equal(phase(&f), "Running");
        check_status_member(
            &f,
            "containerStatuses",
            "[{'name':'app','state':{'waiting':{'reason':'CrashLoopBackOff',"
            "'message':'back-off 10s restarting failed container=app pod=web_default(uid-1)'}},"
            "'lastState':{'terminated':{'exitCode':137,'signal':9,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:06Z','finishedAt':'2027-01-15T08:00:07Z',"
            "'containerID':'xpool://uid-1/app/1'}},"
            "'ready':false,'restartCount':1,'image':'busybox','imageID':'','started':false}]");
        apply_status(&f);

        /* the record is gone once forgotten; still backing off */
        sync_at(&f, NULL, 0, 12, false);
        assert_string_equal(f.acts, "");
        check_no_status(&f);
        assert_int_equal(f.res.wake_at_ns, AT(17));

        sync_at(&f, NULL, 0, 17, false);
        assert_string_equal(f.acts, "START app 2");
        assert_int_equal(f.res.wake_at_ns, 0);
        apply_status(&f);

        /* third failure: 20 s; fourth: 25 s (the maximum) */
        r = exited("app", 2, 17, 18, 2);
        sync_at(&f, &r, 1, 18, false);
        assert_string_equal(f.acts, "FORGET app 2");
        assert_int_equal(f.res.wake_at_ns, AT(38));
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(
                    json_object_get(
                        json_array_get(json_object_get(f.res.status, "containerStatuses"), 0),
                        "state"),
                    "waiting"),
                "message")),
            "back-off 20s restarting failed container=app pod=web_default(uid-1)");
        apply_status(&f);
        sync_at(&f, NULL, 0, 38, false);
        assert_string_equal(f.acts, "START app 3");
        r = exited("app", 3, 38, 39, 2);
        sync_at(&f, &r, 1, 39, false);
        assert_int_equal(f.res.wake_at_ns, AT(64));

        /* a run of backoff_reset_ms resets the back-off: restarted at once */
        sync_at(&f, NULL, 0, 64, false);
        assert_string_equal(f.acts, "START app 4");
        r = exited("app", 4, 64, 64 + 60, 1);
        sync_at(&f, &r, 1, 124, false);
        assert_string_equal(f.acts, "FORGET app 4; START app 5");
        assert_int_equal(f.res.wake_at_ns, 0);
        fx_done(&f);
}

static void always_restarts_success(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP("'restartPolicy':'Always',"));
        sync_at(&f, NULL, 0, 0, false);
        r = exited("app", 0, 0, 1, 0);
        sync_at(&f, &r, 1, 1, false);
        assert_string_equal(f.acts, "FORGET app 0; START app 1");
        assert_string_equal(phase(&f), "Running");
        fx_done(&f);
}

static void on_failure(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP("'restartPolicy':'OnFailure',"));
        sync_at(&f, NULL, 0, 0, false);
        r = exited("app", 0, 0, 1, 3);
        sync_at(&f, &r, 1, 1, false);
        assert_string_equal(f.acts, "FORGET app 0; START app 1");
        assert_string_equal(phase(&f), "Running");
        apply_status(&f);

        r = exited("app", 1, 2, 4, 0);
        sync_at(&f, &r, 1, 4, false);
        /* finished for good: the record stays until the server holds its outcome */
        assert_string_equal(f.acts, "");
        check_status(
            &f,
            "{'phase':'Succeeded','conditions':["
            "{'type':'PodReadyToStartContainers','status':'False','lastTransitionTime':'2027-01-15T08:00:04Z'},"
            "{'type':'Initialized','status':'True','lastTransitionTime':'2027-01-15T08:00:01Z',"
            "'reason':'PodCompleted'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:01Z',"
            "'reason':'PodCompleted'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:01Z',"
            "'reason':'PodCompleted'}," SCHEDULED "],"
            "'startTime':'2027-01-15T08:00:01Z',"
            "'containerStatuses':[{'name':'app','state':{'terminated':{'exitCode':0,"
            "'reason':'Completed','startedAt':'2027-01-15T08:00:02Z',"
            "'finishedAt':'2027-01-15T08:00:04Z','containerID':'xpool://uid-1/app/1'}},"
            "'lastState':{'terminated':{'exitCode':3,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:00Z','finishedAt':'2027-01-15T08:00:01Z',"
            "'containerID':'xpool://uid-1/app/0'}},"
            "'ready':false,'restartCount':1,'image':'busybox','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/app/1'}]}");
        /* not done while the server does not hold the final status */
        assert_false(f.res.done);
        apply_status(&f);

        /* the server has it: the record goes; terminal is kept: nothing restarts or is written */
        sync_at(&f, &r, 1, 5, false);
        assert_string_equal(f.acts, "FORGET app 1");
        check_no_status(&f);
        assert_true(f.res.done);
        sync_at(&f, NULL, 0, 100, false);
        assert_string_equal(f.acts, "");
        check_no_status(&f);
        assert_true(f.res.done);
        fx_done(&f);
}

static void never_fails(void **state)
{
        struct fx f;
        struct xp_container_record r[2];

        (void)state;
        fx_init(&f,
                "{'restartPolicy':'Never','containers':[{'name':'a','command':['x']},"
                "{'name':'b','image':'img:1','command':['y']}]}");
        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "START a 0; START b 0");
        assert_string_equal(phase(&f), "Pending");
        r[0] = exited("a", 0, 0, 2, 1);
        r[1] = running("b", 0, 0);
        sync_at(&f, r, 2, 2, false);
        assert_string_equal(f.acts, ""); /* a's record stays until the server has its exit */
        assert_string_equal(phase(&f), "Running"); /* b still runs */
        check_status_member(
            &f,
            "conditions",
            "["
            "{'type':'PodReadyToStartContainers','status':'True','lastTransitionTime':'2027-01-15T08:00:02Z'},"
            "{'type':'Initialized','status':'True','lastTransitionTime':'2027-01-15T08:00:02Z'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:02Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [a]'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:02Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [a]'}," SCHEDULED
            "]");
        apply_status(&f);
        r[1] = exited("b", 0, 0, 3, 0);
        sync_at(&f, r, 2, 3, false);
        assert_string_equal(f.acts, "FORGET a 0");
        assert_string_equal(phase(&f), "Failed");
        check_status_member(
            &f,
            "containerStatuses",
            "[{'name':'a','state':{'terminated':{'exitCode':1,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:00Z','finishedAt':'2027-01-15T08:00:02Z',"
            "'containerID':'xpool://uid-1/a/0'}},'lastState':{},'ready':false,"
            "'restartCount':0,'image':'','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/a/0'},"
            "{'name':'b','state':{'terminated':{'exitCode':0,'reason':'Completed',"
            "'startedAt':'2027-01-15T08:00:00Z','finishedAt':'2027-01-15T08:00:03Z',"
            "'containerID':'xpool://uid-1/b/0'}},'lastState':{},'ready':false,"
            "'restartCount':0,'image':'img:1','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/b/0'}]");
        assert_false(f.res.done);
        /* the write did not land (the server was away): the next sync, a relist's, writes it
         * again, and the pod is done only once the server holds it */
        {
                json_t *final = json_incref(f.res.status);

                sync_at(&f, &r[1], 1, 20, false);
                assert_string_equal(f.acts, "");
                assert_non_null(f.res.status);
                assert_true(json_equal(final, f.res.status));
                assert_false(f.res.done);
                json_decref(final);
        }
        apply_status(&f);
        sync_at(&f, &r[1], 1, 21, false);
        assert_string_equal(f.acts, "FORGET b 0");
        check_no_status(&f);
        assert_true(f.res.done);
        fx_done(&f);
}

static void start_error_and_oom(void **state)
{
        struct fx f;
        struct xp_container_record r[2];

        (void)state;
        fx_init(&f,
                "{'restartPolicy':'Never','containers':[{'name':'a','command':['pythn']},"
                "{'name':'b','command':['y']}]}");
        sync_at(&f, NULL, 0, 0, false);
        r[0] = (struct xp_container_record){
            .container = (char *)"a",
            .exited = true,
            .exit_code = 128,
            .start_failed = true,
            .finished_ns = AT(1),
            .message = (char *)"exec \"pythn\": No such file or directory"};
        r[1] = exited("b", 0, 0, 2, 137);
        r[1].oom_killed = true;
        sync_at(&f, r, 2, 2, false);
        assert_string_equal(f.acts, "");
        assert_string_equal(phase(&f), "Failed");
        check_status_member(
            &f,
            "containerStatuses",
            "[{'name':'a','state':{'terminated':{'exitCode':128,'reason':'StartError',"
            "'message':'exec \\'pythn\\': No such file or directory',"
            "'finishedAt':'2027-01-15T08:00:01Z',"
            "'containerID':'xpool://uid-1/a/0'}},'lastState':{},'ready':false,"
            "'restartCount':0,'image':'','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/a/0'},"
            "{'name':'b','state':{'terminated':{'exitCode':137,'signal':9,"
            "'reason':'OOMKilled','startedAt':'2027-01-15T08:00:00Z',"
            "'finishedAt':'2027-01-15T08:00:02Z',"
            "'containerID':'xpool://uid-1/b/0'}},'lastState':{},'ready':false,"
            "'restartCount':0,'image':'','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/b/0'}]");
        fx_done(&f);
}

/* A securityContext the node refuses: waiting in CreateContainerConfigError, Pending, never
 * started again, no restart counted; the other container runs. */
static void config_error(void **state)
{
        struct fx f;
        struct xp_container_record r[2];

        (void)state;
        fx_init(&f,
                "{'restartPolicy':'Always','containers':[{'name':'a','command':['x']},"
                "{'name':'b','command':['y']}]}");
        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "START a 0; START b 0");
        r[0] = (struct xp_container_record){
            .container = (char *)"a",
            .exited = true,
            .exit_code = 128,
            .start_failed = true,
            .config_error = true,
            .finished_ns = AT(1),
            .message = (char *)"container has runAsNonRoot and image will run as root"};
        r[1] = running("b", 0, 1);
        sync_at(&f, r, 2, 1, false);
        assert_string_equal(f.acts, "FORGET a 0");
        assert_string_equal(phase(&f), "Pending");
        check_status_member(
            &f,
            "containerStatuses",
            "[{'name':'a','state':{'waiting':{'reason':'CreateContainerConfigError',"
            "'message':'container has runAsNonRoot and image will run as root'}},"
            "'lastState':{},'ready':false,'restartCount':0,'image':'','imageID':'',"
            "'started':false},"
            "{'name':'b','state':{'running':{'startedAt':'2027-01-15T08:00:01Z'}},"
            "'lastState':{},'ready':true,'restartCount':0,'image':'','imageID':'',"
            "'started':true,'containerID':'xpool://uid-1/b/0'}]");
        apply_status(&f);
        /* later syncs, however late: not started again */
        sync_at(&f, r + 1, 1, 600, false);
        assert_string_equal(f.acts, "");
        assert_int_equal(f.res.wake_at_ns, 0);
        fx_done(&f);
}

#define SPEC_INIT(policy)                                                                          \
        "{" policy                                                                                 \
        "'initContainers':[{'name':'i1','command':['a']},{'name':'i2','command':['b']}],"          \
        "'containers':[{'name':'app','command':['c']}]}"

static void init_containers(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_INIT(""));
        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "START i1 init 0");
        check_status(
            &f,
            "{'phase':'Pending','conditions':["
            "{'type':'PodReadyToStartContainers','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Initialized','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotInitialized','message':'containers with incomplete status: [i1 i2]'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'}," SCHEDULED
            "],"
            "'startTime':'2027-01-15T08:00:00Z',"
            "'initContainerStatuses':["
            "{'name':'i1','state':{'waiting':{'reason':'ContainerCreating'}},'lastState':{},"
            "'ready':false,'restartCount':0,'image':'','imageID':'','started':false},"
            "{'name':'i2','state':{'waiting':{'reason':'PodInitializing'}},'lastState':{},"
            "'ready':false,'restartCount':0,'image':'','imageID':'','started':false}],"
            "'containerStatuses':["
            "{'name':'app','state':{'waiting':{'reason':'PodInitializing'}},'lastState':{},"
            "'ready':false,'restartCount':0,'image':'','imageID':'','started':false}]}");
        apply_status(&f);

        r = running("i1", 0, 1);
        sync_at(&f, &r, 1, 1, false);
        assert_string_equal(f.acts, "");
        assert_string_equal(phase(&f), "Pending");
        apply_status(&f);

        r = exited("i1", 0, 1, 2, 0);
        sync_at(&f, &r, 1, 2, false);
        /* i1 is done for good: its record stays until the server holds its exit */
        assert_string_equal(f.acts, "START i2 init 0");
        apply_status(&f);

        /* a failing init container restarts (Always counts as OnFailure for them) */
        r = exited("i2", 0, 2, 3, 1);
        sync_at(&f, &r, 1, 3, false);
        assert_string_equal(f.acts, "FORGET i2 init 0; START i2 init 1");
        apply_status(&f);

        r = exited("i2", 1, 3, 4, 0);
        sync_at(&f, &r, 1, 4, false);
        assert_string_equal(f.acts, "START app 0");
        check_status_member(
            &f,
            "conditions",
            "["
            "{'type':'PodReadyToStartContainers','status':'True','lastTransitionTime':'2027-01-15T08:00:00Z'},"
            "{'type':'Initialized','status':'True','lastTransitionTime':'2027-01-15T08:00:04Z'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:00Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'}," SCHEDULED
            "]");
        check_status_member(
            &f,
            "initContainerStatuses",
            "[{'name':'i1','state':{'terminated':{'exitCode':0,'reason':'Completed',"
            "'startedAt':'2027-01-15T08:00:01Z','finishedAt':'2027-01-15T08:00:02Z',"
            "'containerID':'xpool://uid-1/i1/0'}},'lastState':{},'ready':true,"
            "'restartCount':0,'image':'','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/i1/0'},"
            "{'name':'i2','state':{'terminated':{'exitCode':0,'reason':'Completed',"
            "'startedAt':'2027-01-15T08:00:03Z','finishedAt':'2027-01-15T08:00:04Z',"
            "'containerID':'xpool://uid-1/i2/1'}},"
            "'lastState':{'terminated':{'exitCode':1,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:02Z','finishedAt':'2027-01-15T08:00:03Z',"
            "'containerID':'xpool://uid-1/i2/0'}},'ready':true,"
            "'restartCount':1,'image':'','imageID':'','started':false,"
            "'containerID':'xpool://uid-1/i2/1'}]");
        assert_string_equal(phase(&f), "Pending");
        apply_status(&f);

        /* init containers that succeeded are never run again; their records go, the server
         * holding their exits */
        {
                struct xp_container_record rs[3] = {
                    exited("i1", 0, 1, 2, 0), exited("i2", 1, 3, 4, 0), running("app", 0, 5)};

                sync_at(&f, rs, 3, 5, false);
                assert_string_equal(f.acts, "FORGET i1 init 0; FORGET i2 init 1");
                assert_string_equal(phase(&f), "Running");
                apply_status(&f);
                sync_at(&f, &rs[2], 1, 6, false);
                assert_string_equal(f.acts, "");
        }
        fx_done(&f);
}

static void init_fails_never(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_INIT("'restartPolicy':'Never',"));
        sync_at(&f, NULL, 0, 0, false);
        r = exited("i1", 0, 0, 1, 2);
        sync_at(&f, &r, 1, 1, false);
        assert_string_equal(f.acts, "");
        assert_string_equal(phase(&f), "Failed");
        check_status_member(
            &f,
            "conditions",
            "["
            "{'type':'PodReadyToStartContainers','status':'False','lastTransitionTime':'2027-01-15T08:00:01Z'},"
            "{'type':'Initialized','status':'False','lastTransitionTime':'2027-01-15T08:00:01Z',"
            "'reason':'ContainersNotInitialized','message':'containers with incomplete status: [i1 i2]'},"
            "{'type':'Ready','status':'False','lastTransitionTime':'2027-01-15T08:00:01Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'},"
            "{'type':'ContainersReady','status':'False','lastTransitionTime':'2027-01-15T08:00:01Z',"
            "'reason':'ContainersNotReady','message':'containers with unready status: [app]'}," SCHEDULED
            "]");
        assert_false(f.res.done);
        apply_status(&f);
        sync_at(&f, &r, 1, 30, false);
        assert_string_equal(f.acts, "FORGET i1 init 0");
        check_no_status(&f);
        assert_true(f.res.done);
        fx_done(&f);
}

static void graceful_delete(void **state)
{
        struct fx f;
        struct xp_container_record r[2];

        (void)state;
        fx_init(&f, "{'containers':[{'name':'a','command':['x']},{'name':'b','command':['y']}]}");
        r[0] = running("a", 0, 0);
        r[1] = running("b", 0, 0);
        sync_at(&f, r, 2, 0, false);
        assert_string_equal(f.acts, "");
        apply_status(&f);

        set_meta(&f, "deletionTimestamp", json_string("2027-01-15T08:00:30Z"));
        set_meta(&f, "deletionGracePeriodSeconds", json_integer(30));
        /* seen 10 s late: the kubelet still gives the whole grace from its SIGTERM */
        sync_at(&f, r, 2, 10, false);
        assert_string_equal(f.acts, "KILL a 15; KILL b 15");
        assert_int_equal(f.res.wake_at_ns, AT(40));
        check_no_status(&f);
        assert_false(f.res.done);

        /* SIGTERM once; a exits, b ignores it: no restart of a */
        r[0] = exited("a", 0, 0, 12, 143);
        sync_at(&f, r, 2, 12, false);
        assert_string_equal(f.acts, "");
        assert_int_equal(f.res.wake_at_ns, AT(40));
        assert_string_equal(phase(&f), "Running");
        apply_status(&f);

        /* the server has a's exit: its record goes */
        sync_at(&f, r, 2, 30, false);
        assert_string_equal(f.acts, "FORGET a 0");
        assert_int_equal(f.res.wake_at_ns, AT(40));
        sync_at(&f, &r[1], 1, 40, false);
        assert_string_equal(f.acts, "KILL b 9");
        assert_int_equal(f.res.wake_at_ns, 0);
        sync_at(&f, &r[1], 1, 41, false);
        assert_string_equal(f.acts, "");

        /* the final status, then the delete (the status writers keep that order) */
        r[1] = exited("b", 0, 0, 41, 137);
        sync_at(&f, &r[1], 1, 42, false);
        assert_string_equal(f.acts, "DELETE_POD");
        assert_string_equal(phase(&f), "Failed");
        assert_false(f.res.done);
        apply_status(&f);

        /* the DELETE did not land yet: asked again, nothing else */
        sync_at(&f, &r[1], 1, 43, false);
        assert_string_equal(f.acts, "FORGET b 0; DELETE_POD");
        check_no_status(&f);

        /* gone from the server */
        sync_at(&f, NULL, 0, 44, true);
        assert_string_equal(f.acts, "");
        check_no_status(&f);
        assert_true(f.res.done);
        fx_done(&f);
}

static void delete_past_deadline_and_pending(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP(""));
        set_meta(&f, "deletionTimestamp", json_string("2027-01-15T08:00:05Z"));
        /* never started: nothing starts, DELETE at once */
        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "DELETE_POD");

        /* running past the deadline: SIGKILL straight away */
        r = running("app", 0, 0);
        sync_at(&f, &r, 1, 6, false);
        assert_string_equal(f.acts, "KILL app 9");
        fx_done(&f);
}

static void pod_gone(void **state)
{
        struct fx f;
        struct xp_container_record r[2];

        (void)state;
        fx_init(&f, SPEC_APP(""));
        r[0] = running("app", 2, 0);
        r[1] = exited("old", 0, 0, 1, 0);
        sync_at(&f, r, 2, 5, true);
        assert_string_equal(f.acts, "KILL app 9; FORGET old 0");
        check_no_status(&f);
        assert_false(f.res.done);
        sync_at(&f, r, 1, 6, true);
        assert_string_equal(f.acts, ""); /* SIGKILL once */
        r[0] = exited("app", 2, 0, 6, 137);
        sync_at(&f, r, 1, 7, true);
        assert_string_equal(f.acts, "FORGET app 2");
        assert_true(f.res.done);
        fx_done(&f);
}

static void server_terminal(void **state)
{
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP(""));
        r = running("app", 0, 0);
        sync_at(&f, &r, 1, 0, false);
        apply_status(&f);
        /* the server failed the pod (its node was lost for too long) */
        set_status_field(&f, "phase", json_string("Failed"));
        set_status_field(&f, "reason", json_string("NodeLost"));
        sync_at(&f, &r, 1, 400, false);
        assert_string_equal(f.acts, "KILL app 9");
        check_no_status(&f);
        assert_false(f.res.done);

        r = exited("app", 0, 0, 401, 137);
        sync_at(&f, &r, 1, 401, false);
        assert_string_equal(f.acts, "");
        assert_string_equal(phase(&f), "Failed");
        assert_string_equal(json_string_value(json_object_get(f.res.status, "reason")), "NodeLost");
        check_status_member(
            &f,
            "containerStatuses",
            "[{'name':'app','state':{'terminated':{'exitCode':137,'signal':9,"
            "'reason':'Error','startedAt':'2027-01-15T08:00:00Z',"
            "'finishedAt':'2027-01-15T08:06:41Z','containerID':'xpool://uid-1/app/0'}},"
            "'lastState':{},'ready':false,'restartCount':0,'image':'busybox',"
            "'imageID':'','started':false,'containerID':'xpool://uid-1/app/0'}]");
        assert_false(f.res.done);
        apply_status(&f);
        sync_at(&f, &r, 1, 402, false);
        assert_string_equal(f.acts, "FORGET app 0");
        check_no_status(&f);
        assert_true(f.res.done);
        fx_done(&f);
}

/* A new agent (empty memory) keeps restart counts and finished containers from the status. */
static void agent_restart_readopts(void **state)
{
        struct fx f, g;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP("'restartPolicy':'OnFailure',"));
        sync_at(&f, NULL, 0, 0, false);
        r = exited("app", 0, 0, 1, 1);
        sync_at(&f, &r, 1, 1, false);
        apply_status(&f);
        r = running("app", 1, 2);
        sync_at(&f, &r, 1, 2, false);
        apply_status(&f);

        fx_init(&g, SPEC_APP("'restartPolicy':'OnFailure',"));
        xp_pod_free(g.pod);
        g.pod = f.pod;
        f.pod = NULL;
        sync_at(&g, &r, 1, 3, false);
        assert_string_equal(g.acts, "");
        check_no_status(&g);

        r = exited("app", 1, 2, 4, 0);
        sync_at(&g, &r, 1, 4, false);
        assert_string_equal(g.acts, ""); /* the record stays until the server has the exit */
        assert_string_equal(phase(&g), "Succeeded");
        /* that write does not land (the server is away) and this agent is restarted too: the
         * record tells the next one, which reports the exit and starts nothing */
        {
                struct fx h;
                json_t *server = NULL;
                char *want = json_dumps(json_object_get(g.res.status, "containerStatuses"), 0);

                fx_init(&h, SPEC_APP("'restartPolicy':'OnFailure',"));
                assert_int_equal(xp_pod_to_json(g.pod, &server), 0);
                set_pod(&h, server);
                sync_at(&h, &r, 1, 9, false);
                assert_string_equal(h.acts, "");
                assert_string_equal(phase(&h), "Succeeded");
                assert_non_null(want);
                check_status_member(&h, "containerStatuses", want);
                assert_false(h.res.done);
                free(want);
                fx_done(&h);
        }
        apply_status(&g);
        sync_at(&g, &r, 1, 10, false);
        assert_string_equal(g.acts, "FORGET app 1");
        assert_true(g.res.done);
        fx_done(&f);

        /* and after yet another restart, with the record forgotten: nothing starts */
        fx_init(&f, SPEC_APP("'restartPolicy':'OnFailure',"));
        xp_pod_free(f.pod);
        f.pod = g.pod;
        g.pod = NULL;
        sync_at(&f, NULL, 0, 5, false);
        assert_string_equal(f.acts, "");
        check_no_status(&f);
        fx_done(&f);
        fx_done(&g);
}

/* Records of containers the spec does not have (a stale state dir): killed once, forgotten. */
static void unknown_container(void **state)
{
        struct fx f;
        struct xp_container_record r[2];

        (void)state;
        fx_init(&f, SPEC_APP(""));
        r[0] = running("app", 0, 0);
        r[1] = running("ghost", 4, 0);
        sync_at(&f, r, 2, 1, false);
        assert_string_equal(f.acts, "KILL ghost 9");
        sync_at(&f, r, 2, 2, false);
        assert_string_equal(f.acts, "");
        r[1] = exited("ghost", 4, 0, 2, 137);
        sync_at(&f, r, 2, 3, false);
        assert_string_equal(f.acts, "FORGET ghost 4");
        /* the ghost is in no status */
        assert_int_equal(json_array_size(json_object_get(f.res.status, "containerStatuses")), 1);
        fx_done(&f);
}

/* A new agent finds a container backing off: the count and last state carry on. */
static void agent_restart_in_backoff(void **state)
{
        struct fx f, g;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP(""));
        sync_at(&f, NULL, 0, 0, false);
        r = exited("app", 0, 0, 1, 1);
        sync_at(&f, &r, 1, 1, false);
        r = exited("app", 1, 1, 2, 1);
        sync_at(&f, &r, 1, 2, false);
        assert_string_equal(f.acts, "FORGET app 1");
        apply_status(&f);

        fx_init(&g, SPEC_APP(""));
        xp_pod_free(g.pod);
        g.pod = f.pod;
        f.pod = NULL;
        /* the back-off itself is not remembered: restarted at once, as attempt 2 */
        sync_at(&g, NULL, 0, 3, false);
        assert_string_equal(g.acts, "START app 2");
        check_status_member(
            &g,
            "containerStatuses",
            "[{'name':'app','state':{'waiting':{'reason':'ContainerCreating'}},"
            "'lastState':{'terminated':{'exitCode':1,'reason':'Error',"
            "'startedAt':'2027-01-15T08:00:01Z','finishedAt':'2027-01-15T08:00:02Z',"
            "'containerID':'xpool://uid-1/app/1'}},"
            "'ready':false,'restartCount':1,'image':'busybox','imageID':'','started':false}]");
        fx_done(&f);
        fx_done(&g);
}

/* imageID and image: the record's as the container started, kept once its record is forgotten
 * and across an agent restart (from the server's status). */
static void image_ids(void **state)
{
        static char id[] = "docker.io/library/img@sha256:"
                           "abababababababababababababababababababababababababababababababab";
        static char ref[] = "docker.io/library/img:1";
        struct fx f, g;
        struct xp_container_record r;

        (void)state;
        fx_init(&f,
                "{'restartPolicy':'Never','containers':[{'name':'b','image':'img:1',"
                "'command':['y']}]}");
        sync_at(&f, NULL, 0, 0, false);
        r = running("b", 0, 0);
        r.image_id = id;
        r.image_ref = ref;
        sync_at(&f, &r, 1, 1, false);
        assert_string_equal(
            json_string_value(json_object_get(
                json_array_get(json_object_get(f.res.status, "containerStatuses"), 0), "imageID")),
            id);
        assert_string_equal(
            json_string_value(json_object_get(
                json_array_get(json_object_get(f.res.status, "containerStatuses"), 0), "image")),
            ref);
        apply_status(&f);
        r = exited("b", 0, 0, 2, 0);
        r.image_id = id;
        r.image_ref = ref;
        sync_at(&f, &r, 1, 2, false);
        apply_status(&f);
        sync_at(&f, &r, 1, 3, false);
        assert_string_equal(f.acts, "FORGET b 0");
        check_no_status(&f); /* forgotten, its imageID stays */
        sync_at(&f, NULL, 0, 4, false);
        check_no_status(&f);

        fx_init(&g, "{'restartPolicy':'Never','containers':[{'name':'b','image':'img:1'}]}");
        xp_pod_free(g.pod);
        g.pod = f.pod;
        f.pod = NULL;
        sync_at(&g, NULL, 0, 5, false);
        check_no_status(&g);
        fx_done(&f);
        fx_done(&g);
}

/* A readiness probe keeps the container unready until its verdict; a liveness kill is SIGTERM
 * with the probe's message, then SIGKILL at the deadline, then a restart. */
static void probes(void **state)
{
        struct fx f;
        struct xp_container_record r[2];
        const json_t *cs;

        (void)state;
        fx_init(&f,
                "{'nodeName':'n1','containers':[{'name':'app','image':'busybox',"
                "'readinessProbe':{'exec':{'command':['cat','/tmp/ready']}},"
                "'livenessProbe':{'tcpSocket':{'port':80}}}]}");
        r[0] = running("app", 0, 0);
        sync_at(&f, r, 1, 1, false);
        assert_string_equal(phase(&f), "Running");
        cs = json_array_get(json_object_get(f.res.status, "containerStatuses"), 0);
        assert_true(json_is_false(json_object_get(cs, "ready")));
        assert_true(json_is_true(json_object_get(cs, "started")));
        check_status_member(&f,
                            "conditions",
                            "[{'type':'PodReadyToStartContainers','status':'True',"
                            "'lastTransitionTime':'2027-01-15T08:00:01Z'},"
                            "{'type':'Initialized','status':'True',"
                            "'lastTransitionTime':'2027-01-15T08:00:01Z'},"
                            "{'type':'Ready','status':'False','reason':'ContainersNotReady',"
                            "'message':'containers with unready status: [app]',"
                            "'lastTransitionTime':'2027-01-15T08:00:01Z'},"
                            "{'type':'ContainersReady','status':'False',"
                            "'reason':'ContainersNotReady',"
                            "'message':'containers with unready status: [app]',"
                            "'lastTransitionTime':'2027-01-15T08:00:01Z'}," SCHEDULED "]");
        apply_status(&f);
        /* a verdict about another attempt changes nothing */
        assert_int_equal(xp_podsync_set_probed(f.m, "app", 3, true, true), 0);
        sync_at(&f, r, 1, 2, false);
        check_no_status(&f);
        assert_int_equal(xp_podsync_set_probed(f.m, "app", 0, true, true), 0);
        sync_at(&f, r, 1, 3, false);
        cs = json_array_get(json_object_get(f.res.status, "containerStatuses"), 0);
        assert_true(json_is_true(json_object_get(cs, "ready")));
        apply_status(&f);
        /* liveness failed: TERM now with the probe's message, KILL at the deadline */
        assert_int_equal(xp_podsync_probe_kill(f.m, "app", 0, AT(10), "Container app failed"), 0);
        sync_at(&f, r, 1, 4, false);
        assert_string_equal(f.acts, "KILL app 15");
        assert_string_equal(f.res.actions[0].message, "Container app failed");
        assert_true(f.res.wake_at_ns == AT(10));
        sync_at(&f, r, 1, 5, false);
        assert_string_equal(f.acts, "");
        sync_at(&f, r, 1, 10, false);
        assert_string_equal(f.acts, "KILL app 9");
        /* one Killing per restart: the SIGKILL of the same kill carries no message */
        assert_null(f.res.actions[0].message);
        apply_status(&f);
        r[0] = exited("app", 0, 0, 10, 137);
        sync_at(&f, r, 1, 11, false);
        assert_string_equal(f.acts, "FORGET app 0; START app 1");
        fx_done(&f);
}

static void errors(void **state)
{
        struct fx f;
        struct xp_error err = {0};
        struct xp_podsync_result res = {0};

        (void)state;
        fx_init(&f, "{'containers':[{'name':'a','command':['x']},{'name':'a','command':['y']}]}");
        assert_int_equal(xp_podsync(&f.cfg, f.m, f.pod, NULL, 0, AT(0), &res, &err), -EINVAL);
        assert_string_equal(err.msg, "pod web: two containers named a");
        assert_null(res.actions);
        free(f.pod->metadata.uid);
        f.pod->metadata.uid = NULL;
        assert_int_equal(xp_podsync(&f.cfg, f.m, f.pod, NULL, 0, AT(0), &res, &err), -EINVAL);
        assert_string_equal(err.msg, "pod web: metadata.uid is missing");
        fx_done(&f);
}

/* hostIP and podIP(s) as the agent gives them, kept once the pod had them (as the kubelet's). */
static void addresses(void **state)
{
        const char *ips[] = {"10.87.0.4", "fd00:87::4"};
        struct fx f;
        struct xp_container_record r;

        (void)state;
        fx_init(&f, SPEC_APP(""));
        /* the node's address before the pod's network is set up: no podIP yet */
        xp_podsync_memory_set_ips(f.m, "192.0.2.7", NULL, 0);
        sync_at(&f, NULL, 0, 0, false);
        assert_string_equal(f.acts, "START app 0");
        assert_string_equal(json_string_value(json_object_get(f.res.status, "hostIP")),
                            "192.0.2.7");
        check_status_member(&f, "hostIPs", "[{'ip':'192.0.2.7'}]");
        assert_null(json_object_get(f.res.status, "podIP"));
        apply_status(&f);
        /* set up: podIP is the first, podIPs both */
        xp_podsync_memory_set_ips(f.m, "192.0.2.7", ips, 2);
        r = running("app", 0, 1);
        sync_at(&f, &r, 1, 1, false);
        assert_string_equal(json_string_value(json_object_get(f.res.status, "podIP")), "10.87.0.4");
        check_status_member(&f, "podIPs", "[{'ip':'10.87.0.4'},{'ip':'fd00:87::4'}]");
        apply_status(&f);
        assert_string_equal(f.pod->status.pod_ip, "10.87.0.4");
        /* torn down (the pod is over): the status keeps them */
        xp_podsync_memory_set_ips(f.m, "192.0.2.7", NULL, 0);
        sync_at(&f, &r, 1, 2, false);
        check_no_status(&f);
        fx_done(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(start_run_crash_backoff),
            cmocka_unit_test(always_restarts_success),
            cmocka_unit_test(on_failure),
            cmocka_unit_test(never_fails),
            cmocka_unit_test(start_error_and_oom),
            cmocka_unit_test(config_error),
            cmocka_unit_test(init_containers),
            cmocka_unit_test(init_fails_never),
            cmocka_unit_test(graceful_delete),
            cmocka_unit_test(delete_past_deadline_and_pending),
            cmocka_unit_test(pod_gone),
            cmocka_unit_test(server_terminal),
            cmocka_unit_test(agent_restart_readopts),
            cmocka_unit_test(unknown_container),
            cmocka_unit_test(agent_restart_in_backoff),
            cmocka_unit_test(addresses),
            cmocka_unit_test(image_ids),
            cmocka_unit_test(probes),
            cmocka_unit_test(errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
