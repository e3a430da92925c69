/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods/eviction subresource (policy/v1 Eviction), as kubectl drain uses it: POST an Eviction
 * (JSON, or protobuf as client-go sends it) naming the pod, with optional DeleteOptions. As
 * kube-apiserver's EvictionREST: a pod that is Pending, done or being deleted goes at once; else
 * the PodDisruptionBudget that selects it must allow a disruption, which the eviction spends
 * (disruptionsAllowed one less, the pod in disruptedPods, written with the budget's version as
 * precondition and redone on a conflict) before the pod is deleted as a DELETE with those options
 * would. A budget that allows none answers 429 TooManyRequests with the DisruptionBudget cause;
 * two budgets over one pod answer 500; a pod that is not ready goes without spending the budget
 * when the budget is met or its unhealthyPodEvictionPolicy is AlwaysAllow. The answer to an
 * eviction done is 201 with a Success Status. The decisions are xpool/disruption.h's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "xpool/disruption.h"
#include "xpool/doc.h"
#include "xpool/lifecycle.h"
#include "xpool/protobuf.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

/* The Eviction: 1 with *ret (an object), or 0 with ret filled. */
static int eviction_body(const struct request *req,
                         const struct xp_kind *pods,
                         json_t **ret_eviction,
                         struct reply *ret)
{
        const char *content_type = request_header(req, "Content-Type");
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *eviction = NULL;

        if (content_type &&
            strncasecmp(content_type, "application/vnd.kubernetes.protobuf", 35) == 0) {
                if (xp_protobuf_to_json(req->body, req->body_len, &eviction, &err) < 0)
                        return reply_status(ret,
                                            415,
                                            "UnsupportedMediaType",
                                            req->name,
                                            pods->plural,
                                            "the protobuf request body could not be read: %s",
                                            xp_error_message(&err));
        } else {
                eviction = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        }
        if (!json_is_object(eviction) ||
            !xp_streq0(json_string_value(json_object_get(eviction, "kind")) ?: "Eviction",
                       "Eviction")) {
                json_decref(eviction);
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    pods->plural,
                                    "the request body must be a policy/v1 Eviction");
        }
        *ret_eviction = eviction;
        return 1;
}

/* A Status whose details hold only the budget's cause, as kube-apiserver's NewTooManyRequests
 * with it: reply_status()'s, its details replaced. */
static int reply_budget_refusal(struct reply *ret, const char *cause)
{
        json_t *details;
        int r = reply_status(ret,
                             429,
                             "TooManyRequests",
                             NULL,
                             NULL,
                             "Cannot evict pod as it would violate the pod's disruption budget.");

        if (r < 0)
                return r;
        details =
            json_pack("{s:[{s:s, s:s}]}", "causes", "reason", "DisruptionBudget", "message", cause);
        if (!details || json_object_set_new(ret->body, "details", details) < 0)
                return -ENOMEM;
        return 0;
}

/* The budgets of the pod's namespace that select it: a new array, or NULL with ret filled. */
static json_t *pod_budgets(const struct request *req, const json_t *pod, struct reply *ret, int *r)
{
        struct xp_error err = {0};
        json_t *pdbs = NULL, *matching = json_array(), *pdb;
        uint64_t version;
        size_t i;

        *r = matching ? xp_store_list(req->api->store,
                                      "poddisruptionbudgets",
                                      req->namespace,
                                      &pdbs,
                                      &version,
                                      &err)
                      : -ENOMEM;
        json_array_foreach(pdbs, i, pdb)
        {
                if (*r >= 0 && xp_disruption_selects(pdb, pod))
                        *r = json_array_append(matching, pdb) < 0 ? -ENOMEM : 0;
        }
        json_decref(pdbs);
        if (*r < 0) {
                json_decref(matching);
                if (*r != -ENOMEM)
                        *r = reply_store_error(ret, *r, &xp_kind_pdb, NULL, &err);
                return NULL;
        }
        return matching;
}

struct spend {
        const char *pod;
        bool dry;
        struct xp_error err; /* the refusal's cause */
};

/* The registry's change on the budget: Kubernetes' checkAndDecrement. */
static int spend_budget(json_t *pdb, void *userdata)
{
        struct spend *s = userdata;
        int r = xp_eviction_decrement(pdb, s->pod, time(NULL), &s->err);

        return r > 0 && s->dry ? 0 : r; /* a dry run writes nothing */
}

#define BUDGET_NAME_MAX 256 /* a name is at most 253 bytes */
#define EVICTION_TRIES  5   /* reads of a pod that changed under a delete's precondition */

/*
 * Whether the budgets let the pod go: 1 yes (a budget spent, or none needed), 0 with ret filled
 * (refused), or -ENOMEM. A pod that is not ready and goes without spending its budget names the
 * budget in unready_budget (else it stays ""): its delete must find the pod as read.
 */
static int budget_allows(const struct request *req,
                         const json_t *pod,
                         bool dry,
                         char unready_budget[static BUDGET_NAME_MAX],
                         struct reply *ret)
{
        struct spend s = {.pod = req->name, .dry = dry};
        const json_t *pdb;
        char what[BUDGET_NAME_MAX];
        json_t *budgets;
        int r;

        budgets = pod_budgets(req, pod, ret, &r);
        if (!budgets)
                return r;
        if (json_array_size(budgets) > 1) {
                json_decref(budgets);
                r = reply_status(ret,
                                 500,
                                 "",
                                 NULL,
                                 NULL,
                                 "This pod has more than one PodDisruptionBudget, which the "
                                 "eviction subresource does not support.");
                /* kube-apiserver's Status has neither reason nor details here */
                if (r >= 0) {
                        json_object_del(ret->body, "reason");
                        json_object_del(ret->body, "details");
                }
                return r;
        }
        pdb = json_array_get(budgets, 0);
        if (pdb)
                snprintf(what, sizeof(what), "%s", xp_json_str_at(pdb, "metadata.name", ""));
        if (pdb && xp_eviction_unhealthy_allowed(pdb, pod))
                snprintf(unready_budget, BUDGET_NAME_MAX, "%s", what);
        if (!pdb || *unready_budget) {
                json_decref(budgets);
                return 1;
        }
        json_decref(budgets);
        r = xp_registry_change(req->api->registry,
                               "poddisruptionbudgets",
                               req->namespace,
                               what,
                               spend_budget,
                               &s,
                               NULL,
                               &s.err);
        if (r >= 0)
                return 1;
        if (r == -EAGAIN)
                return reply_budget_refusal(ret, xp_error_message(&s.err));
        if (r == -EPERM)
                return reply_status_group(ret,
                                          403,
                                          "Forbidden",
                                          what,
                                          "policy",
                                          "poddisruptionbudget",
                                          "poddisruptionbudget.policy \"%s\" is forbidden: %s",
                                          what,
                                          xp_error_message(&s.err));
        if (r == -ESTALE)
                return reply_status_group(
                    ret,
                    504,
                    "Timeout",
                    what,
                    "policy",
                    "poddisruptionbudget",
                    "couldn't update PodDisruptionBudget \"%s\" due to conflicts",
                    what);
        return r == -ENOMEM ? r : reply_store_error(ret, r, &xp_kind_pdb, what, &s.err);
}

/* The delete's answer: 201 Success, 409 for a failed precondition, the store's errors. */
static int reply_deleted(const struct request *req,
                         const struct xp_kind *pods,
                         int r,
                         const struct xp_error *err,
                         struct reply *ret)
{
        if (r == -ECANCELED)
                return reply_status(
                    ret, 409, "Conflict", req->name, pods->plural, "%s", xp_error_message(err));
        if (r < 0)
                return reply_store_error(ret, r, pods, req->name, err);
        return reply_success(ret, 201);
}

/* The registry's change: DisruptionTarget on the pod, unless the delete's preconditions will
 * refuse it anyway (the delete then says why). */
static int mark_disrupted(json_t *pod, void *userdata)
{
        const struct xp_registry_delete_options *o = userdata;
        char now[XP_RFC3339_MAX];

        if ((o->version &&
             strtoull(xp_json_str_at(pod, "metadata.resourceVersion", "0"), NULL, 10) !=
                 o->version) ||
            (o->uid && !xp_streq0(xp_json_str_at(pod, "metadata.uid", ""), o->uid)))
                return 0;
        if (xp_time_format_rfc3339(time(NULL), now) < 0)
                return -EINVAL;
        return xp_lifecycle_pod_mark_disrupted(
            pod, "EvictionByEvictionAPI", "Eviction API: evicting", now);
}

/*
 * kube-apiserver's addConditionAndDeletePod: the pod gets the DisruptionTarget condition
 * (Kubernetes 1.26+), then is deleted; a version precondition moves to the version the
 * condition was written at, since that write is the eviction's own.
 */
static int delete_disrupted(const struct request *req,
                            struct xp_registry_delete_options *o,
                            struct xp_error *err)
{
        json_t *pod = NULL;
        bool removed;
        int r = 0;

        if (!o->dry)
                r = xp_registry_change(req->api->registry,
                                       "pods",
                                       req->namespace,
                                       req->name,
                                       mark_disrupted,
                                       o,
                                       &pod,
                                       err);
        if (r > 0 && o->version)
                o->version =
                    strtoull(xp_json_str_at(pod, "metadata.resourceVersion", "0"), NULL, 10);
        json_decref(pod);
        pod = NULL;
        if (r < 0)
                return r;
        r = xp_registry_pod_delete(
            req->api->registry, req->namespace, req->name, o, &pod, &removed, err);
        json_decref(pod);
        return r;
}

/*
 * kube-apiserver's EvictionREST.Create after the Eviction was read: a pod that needs no budget
 * is deleted on the version read unless the client named one (a pod that changed meanwhile is
 * read again); else the budget decides, and a pod that went unready without spending it is
 * deleted on the version read (if it changed, 429: the budget must look again).
 */
static int evict(const struct request *req,
                 const struct xp_kind *pods,
                 const struct xp_registry_delete_options *options,
                 struct reply *ret)
{
        struct xp_registry_delete_options o = *options;
        char unready[BUDGET_NAME_MAX] = "";
        struct xp_error err = {0};
        json_t *pod = NULL;
        uint64_t version;
        int r = 0;

        for (int tries = 0; tries < EVICTION_TRIES; tries++) {
                r = xp_store_get(
                    req->api->store, "pods", req->namespace, req->name, &pod, &version, &err);
                if (r < 0)
                        return reply_store_error(ret, r, pods, req->name, &err);
                if (!xp_eviction_ignores_budgets(pod))
                        break;
                /* Kubernetes' shouldEnforceResourceVersion: a terminal or deleted pod may go as it
                 * is */
                if (!options->version &&
                    !xp_streq0(xp_json_str_at(pod, "status.phase", ""), "Succeeded") &&
                    !xp_streq0(xp_json_str_at(pod, "status.phase", ""), "Failed") &&
                    !xp_json_str_at(pod, "metadata.deletionTimestamp", NULL))
                        o.version = version;
                json_decref(pod);
                pod = NULL;
                r = delete_disrupted(req, &o, &err);
                if (r != -ECANCELED || options->version)
                        return reply_deleted(req, pods, r, &err, ret);
                err = (struct xp_error){0};
                o = *options;
        }
        if (!pod)
                return reply_deleted(req, pods, r, &err, ret);
        r = budget_allows(req, pod, options->dry, unready, ret);
        json_decref(pod);
        pod = NULL;
        if (r <= 0)
                return r;
        if (*unready && !options->version)
                o.version = version;
        r = delete_disrupted(req, &o, &err);
        if (r == -ECANCELED && *unready && !options->version) {
                struct xp_error cause = {0};

                xp_errorf(&cause,
                          -EAGAIN,
                          "The disruption budget %s is still being processed by the server.",
                          unready);
                return reply_budget_refusal(ret, xp_error_message(&cause));
        }
        return reply_deleted(req, pods, r, &err, ret);
}

int handle_eviction(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_registry_delete_options options = {0};
        json_t *eviction = NULL;
        const json_t *delete_options;
        const char *name;
        int r;

        r = eviction_body(req, pods, &eviction, ret);
        if (r <= 0)
                return r;
        name = json_string_value(json_object_get(json_object_get(eviction, "metadata"), "name"));
        if (name && strcmp(name, req->name) != 0) {
                r = reply_status(ret,
                                 400,
                                 "BadRequest",
                                 req->name,
                                 pods->plural,
                                 "name in URL does not match name in Eviction object");
                goto out;
        }
        delete_options = json_object_get(eviction, "deleteOptions");
        if (json_is_object(delete_options)) {
                r = delete_options_json(req, pods, delete_options, &options, ret);
                if (r <= 0)
                        goto out;
        }
        r = evict(req, pods, &options, ret);
out:
        json_decref(eviction);
        return r;
}
