/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writes the workload controllers share: pods made from a template with a controller
 * ownerReference, graceful pod deletions, adoption and release, status writes, and the Events
 * kubectl describe shows (SuccessfulCreate, FailedCreate, SuccessfulDelete, ...). All go through
 * the registry, as the API's own writes do.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "workloads.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/serviceaccounts.h"

const char *wl_meta(const json_t *object, const char *key)
{
        return json_string_value(json_object_get(json_object_get(object, "metadata"), key));
}

int64_t wl_now_s(const struct xp_workloads *w)
{
        return xp_clock_wall_s(w->clock);
}

int64_t wl_now_ms(const struct xp_workloads *w)
{
        return xp_clock_monotonic_ms(w->clock);
}

void wl_recheck_at(struct xp_workloads *w, int64_t at_s)
{
        if (w->next_s == 0 || at_s < w->next_s)
                w->next_s = at_s;
}

static const char *component_of(const char *kind)
{
        if (strcmp(kind, "Deployment") == 0)
                return "deployment-controller";
        if (strcmp(kind, "DaemonSet") == 0)
                return "daemonset-controller";
        if (strcmp(kind, "ReplicaSet") == 0)
                return "replicaset-controller";
        if (strcmp(kind, "Job") == 0)
                return "job-controller";
        if (strcmp(kind, "CronJob") == 0)
                return "cronjob-controller";
        return "garbage-collector-controller";
}

/*
 * Kubernetes' EventSourceObjectSpamFilter: per object, a burst of 25 Events, then one more every
 * 5 minutes. A Deployment scaled to 1000 thus writes 25 SuccessfulCreate Events, not 1000.
 */
#define EVENT_BURST    25
#define EVENT_REFILL_S 300

struct bucket {
        char *uid;
        double tokens;
        int64_t at_s;
};

/* The object's bucket, made full when new; NULL on -ENOMEM (the Event then goes). */
static struct bucket *bucket_of(struct xp_workloads *w, const char *uid, int64_t now)
{
        struct bucket *b = xp_map_get(&w->event_buckets, uid);

        if (b)
                return b;
        b = calloc(1, sizeof(*b));
        if (!b || !(b->uid = strdup(uid)) || xp_map_put(&w->event_buckets, b->uid, b) < 0) {
                if (b)
                        free(b->uid);
                free(b);
                return NULL;
        }
        b->tokens = EVENT_BURST;
        b->at_s = now;
        return b;
}

static bool event_allowed(struct xp_workloads *w, const char *uid)
{
        int64_t now = wl_now_s(w);
        struct bucket *b;
        bool ok = true;

        if (!uid)
                return true;
        pthread_mutex_lock(&w->events_lock);
        b = bucket_of(w, uid, now);
        if (b) {
                b->tokens += (double)(now - b->at_s) / EVENT_REFILL_S;
                if (b->tokens > EVENT_BURST)
                        b->tokens = EVENT_BURST;
                b->at_s = now;
                ok = b->tokens >= 1;
                if (ok)
                        b->tokens -= 1;
        }
        pthread_mutex_unlock(&w->events_lock);
        return ok;
}

void wl_events_done(struct xp_workloads *w)
{
        for (size_t i = 0; i < w->event_buckets.cap; i++) {
                struct bucket *b = w->event_buckets.values ? w->event_buckets.values[i] : NULL;

                if (b) {
                        free(b->uid);
                        free(b);
                }
        }
        xp_map_done(&w->event_buckets);
}

void wl_event(struct xp_workloads *w,
              const json_t *object,
              const char *type,
              const char *reason,
              const char *fmt,
              ...)
{
        const char *kind = json_string_value(json_object_get(object, "kind"));
        char message[1024];
        struct xp_error err = {0};
        va_list ap;

        if (!event_allowed(w, wl_meta(object, "uid")))
                return;
        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        struct xp_registry_event event = {
            .kind = kind ? kind : "",
            .namespace = wl_meta(object, "namespace") ? wl_meta(object, "namespace") : "",
            .name = wl_meta(object, "name"),
            .uid = wl_meta(object, "uid"),
            .component = component_of(kind ? kind : ""),
            .type = type,
            .reason = reason,
            .message = message,
        };
        if (xp_registry_event_record(w->registry, &event, &err) < 0)
                xp_log(LOG_DEBUG, "workloads: event %s not recorded: %s", reason, err.msg);
}

/* The pod's JSON from owner's template. NULL: -ENOMEM. */
static json_t *pod_from_template(const json_t *owner,
                                 const json_t *ref,
                                 const json_t *extra_labels,
                                 const json_t *affinity)
{
        const json_t *template = json_object_get(json_object_get(owner, "spec"), "template");
        const json_t *tmeta = json_object_get(template, "metadata");
        json_t *spec = json_deep_copy(json_object_get(template, "spec"));
        json_t *labels = json_deep_copy(json_object_get(tmeta, "labels"));
        json_t *pod;
        char prefix[300];

        snprintf(prefix, sizeof(prefix), "%s-", wl_meta(owner, "name"));
        if (!labels)
                labels = json_object();
        if (!spec)
                spec = json_object();
        if (extra_labels)
                json_object_update(labels, (json_t *)extra_labels);
        if (affinity)
                json_object_set(spec, "affinity", (json_t *)affinity);
        pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:[O]}, s:o}",
                        "apiVersion",
                        "v1",
                        "kind",
                        "Pod",
                        "metadata",
                        "generateName",
                        prefix,
                        "namespace",
                        wl_meta(owner, "namespace"),
                        "labels",
                        labels,
                        "ownerReferences",
                        ref,
                        "spec",
                        spec);
        if (pod && json_object_get(tmeta, "annotations"))
                json_object_set(json_object_get(pod, "metadata"),
                                "annotations",
                                json_object_get(tmeta, "annotations"));
        return pod;
}

/* A new pod's name in a refusal: its generateName until the name is made, as kube-apiserver's. */
static const char *pod_name(const json_t *pod)
{
        const char *name = xp_json_str_at(pod, "metadata.name", "");

        return name[0] ? name : xp_json_str_at(pod, "metadata.generateName", "");
}

/*
 * The admission a pod created through the API gets (xp_registry_pod_admit(), its `default`
 * account made first as the API's create makes it), so that a controller's pod is no exception
 * to a rule: a refusal is kube-apiserver's `pods "NAME-" is forbidden: ...`, which the owner's
 * FailedCreate event carries. 0 or -errno with err.
 */
static int
pod_admit(struct xp_registry *registry, const char *ns, json_t *pod, struct xp_error *err)
{
        int r = 0;

        if (strcmp(xp_registry_pod_account(pod), XP_SERVICEACCOUNT_DEFAULT) == 0)
                r = xp_serviceaccount_default_ensure(registry, ns, NULL);
        if (r != -ENOMEM)
                r = xp_registry_pod_admit(registry, ns, pod, err);
        if (r == -EPERM)
                return xp_error_prefix(err, r, "pods \"%s\" is forbidden", pod_name(pod));
        return r == -ENOMEM ? xp_errorf(err, r, "out of memory") : r;
}

int wl_create_object(struct xp_workloads *w,
                     const struct xp_kind *kind,
                     const char *ns,
                     json_t *json,
                     json_t **ret,
                     struct xp_error *err)
{
        struct xp_registry_pod_check quota = {.registry = w->registry, .ns = ns, .err = err};
        const struct xp_registry_admit admit = {.check = xp_registry_pod_admit_check,
                                                .userdata = &quota};
        bool pod = kind == &xp_kind_pod;
        void *object = NULL;
        int r = 0;

        if (pod)
                r = pod_admit(w->registry, ns, json, err);
        if (r >= 0)
                r = kind->from_json(json, NULL, 0, &object, err);
        if (r < 0)
                return r;
        r = xp_registry_namespace_hold(w->registry, ns, err);
        if (r >= 0) {
                r = xp_registry_create(
                    w->registry, kind, ns, object, pod ? &admit : NULL, false, ret, err);
                xp_registry_namespace_release(w->registry, ns);
        }
        if (r == 0 && pod) /* over a ResourceQuota */
                xp_error_prefix(err, -EDQUOT, "pods \"%s\" is forbidden", pod_name(json));
        kind->free(object);
        return r;
}

int wl_create_pod(struct xp_workloads *w,
                  const json_t *owner,
                  const char *api_version,
                  const char *kind,
                  const json_t *extra_labels,
                  const json_t *affinity)
{
        json_t *ref = xp_owner_ref_new(api_version, kind, owner), *pod = NULL, *out = NULL;
        struct xp_error err = {0};
        int r = -ENOMEM;

        if (ref)
                pod = pod_from_template(owner, ref, extra_labels, affinity);
        json_decref(ref);
        if (pod)
                r = wl_create_object(w, &xp_kind_pod, wl_meta(owner, "namespace"), pod, &out, &err);
        json_decref(pod);
        if (r > 0) {
                wl_event(w,
                         owner,
                         "Normal",
                         "SuccessfulCreate",
                         "Created pod: %s",
                         wl_meta(out, "name"));
                json_decref(out);
                return 0;
        }
        if (r == 0)
                r = -EPERM;
        wl_event(w,
                 owner,
                 "Warning",
                 "FailedCreate",
                 "Error creating: %s",
                 err.msg[0] ? err.msg : strerror(-r));
        return r;
}

int wl_delete_pod(struct xp_workloads *w, const json_t *owner, const json_t *pod)
{
        struct xp_registry_delete_options options = {0};
        struct xp_error err = {0};
        json_t *last = NULL;
        bool removed;
        int r;

        r = xp_registry_pod_delete(w->registry,
                                   wl_meta(pod, "namespace"),
                                   wl_meta(pod, "name"),
                                   &options,
                                   &last,
                                   &removed,
                                   &err);
        json_decref(last);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                wl_event(w,
                         owner,
                         "Warning",
                         "FailedDelete",
                         "Error deleting: %s",
                         err.msg[0] ? err.msg : strerror(-r));
                return r;
        }
        wl_event(w, owner, "Normal", "SuccessfulDelete", "Deleted pod: %s", wl_meta(pod, "name"));
        return 0;
}

void wl_split_key(const char *key, char *ns, size_t ns_size, char *name, size_t name_size)
{
        const char *slash = strchr(key, '/');

        if (!slash) {
                snprintf(ns, ns_size, "%s", "");
                snprintf(name, name_size, "%s", key);
                return;
        }
        snprintf(ns, ns_size, "%.*s", (int)(slash - key), key);
        snprintf(name, name_size, "%s", slash + 1);
}

int wl_change(struct xp_workloads *w,
              const char *resource,
              const char *key,
              int (*fn)(json_t *object, void *userdata),
              void *userdata)
{
        char ns[256], name[256];
        struct xp_error err = {0};
        int r;

        wl_split_key(key, ns, sizeof(ns), name, sizeof(name));
        r = xp_registry_change(w->registry, resource, ns, name, fn, userdata, NULL, &err);
        if (r < 0 && r != -ENOENT && r != -EAGAIN) /* -EAGAIN: decided on an older state */
                xp_log(LOG_WARNING,
                       "workloads: %s %s not written: %s",
                       resource,
                       key,
                       err.msg[0] ? err.msg : strerror(-r));
        return r;
}

static int set_status(json_t *object, void *userdata)
{
        json_t *status = userdata;

        if (json_equal(json_object_get(object, "status"), status))
                return 0;
        return json_object_set(object, "status", status) < 0 ? -ENOMEM : 1;
}

int wl_write_status(struct xp_workloads *w, const char *resource, const char *key, json_t *status)
{
        return wl_change(w, resource, key, set_status, status);
}
