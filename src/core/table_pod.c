/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Pod table: kubectl's columns (NAME READY STATUS RESTARTS AGE, wide: IP NODE NOMINATED NODE
 * READINESS GATES) with the STATUS and RESTARTS rules of kubectl's pod printer, plus xpool's
 * DEVICES column.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "table_internal.h"

static const struct table_column pod_columns[] = {
    {.name = "Name",
     .type = "string",
     .format = "name",
     .description = "Name of the pod, unique within its namespace."},
    {.name = "Ready",
     .type = "string",
     .description =
         "Ready containers out of all containers (restartable init containers included)."},
    {.name = "Status",
     .type = "string",
     .description =
         "The pod's state as kubectl summarises it: phase, or the reason of the container that explains it (CrashLoopBackOff, OOMKilled, Init:0/1, Terminating, ...)."},
    {.name = "Restarts",
     .type = "string",
     .description = "Container restarts, with how long ago the last one ended."},
    {.name = "Age", .type = "string", .description = "Time since the pod was created."},
    {.name = "Devices",
     .type = "string",
     .description =
         "Extended resources (accelerators) the pod is limited to: containers summed, at least the largest init container."},
    {.name = "IP", .type = "string", .priority = 1, .description = "The pod's IP address."},
    {.name = "Node",
     .type = "string",
     .priority = 1,
     .description = "The node the pod is bound to."},
    {.name = "Nominated Node",
     .type = "string",
     .priority = 1,
     .description = "The node the scheduler has nominated after preempting pods there."},
    {.name = "Readiness Gates",
     .type = "string",
     .priority = 1,
     .description = "Readiness gate conditions that are True, out of all readiness gates."},
};

/* kubectl's summary of a pod: what its READY, STATUS and RESTARTS columns show. */
struct pod_summary {
        int64_t ready;
        int64_t total;
        const char *reason; /* borrowed from the object, or points at reason_buf */
        char reason_buf[64];
        int64_t restarts;
        int64_t last_restart; /* latest lastState.terminated.finishedAt, 0 when none */
};

static bool condition_true(const json_t *pod, const char *type)
{
        const json_t *conditions = table_array(pod, "status.conditions"), *c;
        size_t i;

        json_array_foreach(conditions, i, c) if (strcmp(table_str0(c, "type"), type) ==
                                                 0) return strcmp(table_str0(c, "status"),
                                                                  "True") == 0;
        return false;
}

/* A sidecar: an init container with restartPolicy Always. */
static bool restartable_init(const json_t *pod, const char *name)
{
        const json_t *inits = table_array(pod, "spec.initContainers"), *c;
        size_t i;

        json_array_foreach(inits, i, c) if (name &&
                                            strcmp(table_str0(c, "name"), name) ==
                                                0) return strcmp(table_str0(c, "restartPolicy"),
                                                                 "Always") == 0;
        return false;
}

static void note_restart(const json_t *status, int64_t *restarts, int64_t *last)
{
        int64_t finished = table_time(status, "lastState.terminated.finishedAt");

        *restarts += table_int(status, "restartCount");
        if (finished > *last)
                *last = finished;
}

/* Init containers: returns true while the pod is still initializing (reason says how far). */
static bool summarize_init(const json_t *pod,
                           struct pod_summary *s,
                           int64_t *sidecar_restarts,
                           int64_t *sidecar_last)
{
        const json_t *statuses = table_array(pod, "status.initContainerStatuses"), *c;
        size_t n_init = json_array_size(table_array(pod, "spec.initContainers")), i;

        json_array_foreach(statuses, i, c)
        {
                const char *name = table_str(c, "name");
                bool sidecar = restartable_init(pod, name);
                const json_t *terminated = table_get(c, "state.terminated");
                const char *waiting = table_str(c, "state.waiting.reason");

                note_restart(c, &s->restarts, &s->last_restart);
                if (sidecar)
                        note_restart(c, sidecar_restarts, sidecar_last);

                if (terminated && table_int(terminated, "exitCode") == 0)
                        continue;
                if (sidecar && table_bool(c, "started")) {
                        if (table_bool(c, "ready"))
                                s->ready++;
                        continue;
                }
                if (terminated) {
                        const char *reason = table_str(terminated, "reason");

                        if (reason && reason[0])
                                snprintf(s->reason_buf, sizeof(s->reason_buf), "Init:%s", reason);
                        else if (table_int(terminated, "signal") != 0)
                                snprintf(s->reason_buf,
                                         sizeof(s->reason_buf),
                                         "Init:Signal:%" PRId64,
                                         table_int(terminated, "signal"));
                        else
                                snprintf(s->reason_buf,
                                         sizeof(s->reason_buf),
                                         "Init:ExitCode:%" PRId64,
                                         table_int(terminated, "exitCode"));
                } else if (waiting && waiting[0] && strcmp(waiting, "PodInitializing") != 0)
                        snprintf(s->reason_buf, sizeof(s->reason_buf), "Init:%s", waiting);
                else
                        snprintf(s->reason_buf, sizeof(s->reason_buf), "Init:%zu/%zu", i, n_init);
                s->reason = s->reason_buf;
                return true;
        }
        return false;
}

static void summarize(const json_t *pod, struct pod_summary *s)
{
        const json_t *statuses = table_array(pod, "status.containerStatuses"), *c;
        const json_t *inits = table_array(pod, "spec.initContainers"), *conditions;
        const char *phase = table_str0(pod, "status.phase"),
                   *reason = table_str(pod, "status.reason");
        int64_t sidecar_restarts = 0, sidecar_last = 0;
        bool has_running = false;
        size_t i;

        *s = (struct pod_summary){
            .total = (int64_t)json_array_size(table_array(pod, "spec.containers"))};
        json_array_foreach(inits, i, c) if (strcmp(table_str0(c, "restartPolicy"), "Always") == 0)
            s->total++;

        s->reason = reason && reason[0] ? reason : phase;
        conditions = table_array(pod, "status.conditions");
        json_array_foreach(
            conditions, i, c) if (strcmp(table_str0(c, "type"), "PodScheduled") == 0 &&
                                  strcmp(table_str0(c, "reason"), "SchedulingGated") == 0)
            s->reason = "SchedulingGated";

        if (!summarize_init(pod, s, &sidecar_restarts, &sidecar_last) ||
            condition_true(pod, "Initialized")) {
                /* once initialized, only sidecar restarts count from the init containers */
                s->restarts = sidecar_restarts;
                s->last_restart = sidecar_last;
                /* the first container that explains the state wins, as in kubectl */
                for (i = json_array_size(statuses); i-- > 0;) {
                        const json_t *terminated;
                        const char *waiting, *term_reason;

                        c = json_array_get(statuses, i);
                        terminated = table_get(c, "state.terminated");
                        waiting = table_str(c, "state.waiting.reason");
                        term_reason = table_str(terminated, "reason");
                        note_restart(c, &s->restarts, &s->last_restart);
                        if (waiting && waiting[0])
                                s->reason = waiting;
                        else if (term_reason && term_reason[0])
                                s->reason = term_reason;
                        else if (terminated && table_int(terminated, "signal") != 0) {
                                snprintf(s->reason_buf,
                                         sizeof(s->reason_buf),
                                         "Signal:%" PRId64,
                                         table_int(terminated, "signal"));
                                s->reason = s->reason_buf;
                        } else if (terminated) {
                                snprintf(s->reason_buf,
                                         sizeof(s->reason_buf),
                                         "ExitCode:%" PRId64,
                                         table_int(terminated, "exitCode"));
                                s->reason = s->reason_buf;
                        } else if (table_bool(c, "ready") && table_get(c, "state.running")) {
                                has_running = true;
                                s->ready++;
                        }
                }
                if (strcmp(s->reason, "Completed") == 0 && has_running)
                        s->reason = condition_true(pod, "Ready") ? "Running" : "NotReady";
        }

        if (table_get(pod, "metadata.deletionTimestamp")) {
                if (reason && strcmp(reason, "NodeLost") == 0)
                        s->reason = "Unknown";
                else if (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0)
                        s->reason = "Terminating";
        }
}

/* Adds the extended resources in container.resources.limits to *sum, or raises *max to them. */
static int add_limits(const json_t *container, struct xp_resource_list *sum, bool as_max)
{
        struct xp_resource_list limits = {0};
        int r;

        r = table_extended_resources(table_get(container, "resources.limits"), &limits);
        if (r < 0)
                return r;
        if (!as_max)
                r = xp_resource_list_add(sum, &limits, NULL);
        else
                for (size_t i = 0; i < limits.n && r >= 0; i++) {
                        const struct xp_quantity *have =
                            xp_resource_list_get(sum, limits.items[i].name);

                        if (!have || xp_quantity_cmp(&limits.items[i].quantity, have) > 0)
                                r = xp_resource_list_set(
                                    sum, limits.items[i].name, &limits.items[i].quantity);
                }
        xp_resource_list_done(&limits);
        return r;
}

static int devices_cell(const json_t *pod, json_t *cells)
{
        const json_t *containers = table_array(pod, "spec.containers");
        const json_t *inits = table_array(pod, "spec.initContainers"), *c;
        struct xp_resource_list devices = {0};
        size_t i;
        int r = 0;

        json_array_foreach(containers, i, c) if (r >= 0) r = add_limits(c, &devices, false);
        /* init containers run one at a time, before the others: the pod needs their maximum */
        json_array_foreach(inits, i, c) if (r >= 0) r = add_limits(c, &devices, true);
        if (r == -ENOMEM) {
                xp_resource_list_done(&devices);
                return r;
        }
        r = r < 0 ? table_cell_str(cells, "<unknown>")
                  : table_cell_resources(cells, &devices, true);
        xp_resource_list_done(&devices);
        return r;
}

static int readiness_gates_cell(const json_t *pod, json_t *cells)
{
        const json_t *gates = table_array(pod, "spec.readinessGates"), *gate;
        const json_t *conditions = table_array(pod, "status.conditions"), *c;
        size_t i, j, ready = 0;

        if (json_array_size(gates) == 0)
                return table_cell_str(cells, "<none>");
        json_array_foreach(gates, i, gate)
        {
                const char *type = table_str0(gate, "conditionType");

                json_array_foreach(conditions, j, c) if (strcmp(table_str0(c, "type"), type) == 0)
                {
                        if (strcmp(table_str0(c, "status"), "True") == 0)
                                ready++;
                        break;
                }
        }
        return table_cell_printf(cells, "%zu/%zu", ready, json_array_size(gates));
}

static int pod_conditions(const json_t *pod, json_t *row)
{
        const char *phase = table_str0(pod, "status.phase");
        const char *reason, *message;
        json_t *conditions;

        /* kubectl reads these to tell finished pods apart */
        if (strcmp(phase, "Succeeded") == 0) {
                reason = "Succeeded";
                message = "The pod has completed successfully.";
        } else if (strcmp(phase, "Failed") == 0) {
                reason = "Failed";
                message = "The pod failed.";
        } else
                return 0;
        conditions = json_pack("[{s:s, s:s, s:s, s:s}]",
                               "type",
                               "Completed",
                               "status",
                               "True",
                               "reason",
                               reason,
                               "message",
                               message);
        if (!conditions || json_object_set_new(row, "conditions", conditions) < 0)
                return -ENOMEM;
        return 0;
}

static int pod_row(const json_t *pod, time_t now, json_t *cells, json_t *row)
{
        struct pod_summary s;
        char ago[XP_DURATION_MAX];
        const char *ip = table_str(json_array_get(table_array(pod, "status.podIPs"), 0), "ip");
        int r;

        summarize(pod, &s);
        if (!ip || !ip[0])
                ip = table_str(pod, "status.podIP");

        r = table_cell_str(cells, table_str0(pod, "metadata.name"));
        if (r >= 0)
                r = table_cell_printf(cells, "%" PRId64 "/%" PRId64, s.ready, s.total);
        if (r >= 0)
                r = table_cell_str(cells, s.reason);
        if (r >= 0 && s.restarts != 0 && s.last_restart != 0) {
                table_since(s.last_restart, now, ago);
                r = table_cell_printf(cells, "%" PRId64 " (%s ago)", s.restarts, ago);
        } else if (r >= 0)
                r = table_cell_printf(cells, "%" PRId64, s.restarts);
        if (r >= 0)
                r = table_cell_age(cells, pod, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = devices_cell(pod, cells);
        if (r >= 0)
                r = table_cell_or_none(cells, ip);
        if (r >= 0)
                r = table_cell_or_none(cells, table_str(pod, "spec.nodeName"));
        if (r >= 0)
                r = table_cell_or_none(cells, table_str(pod, "status.nominatedNodeName"));
        if (r >= 0)
                r = readiness_gates_cell(pod, cells);
        if (r >= 0)
                r = pod_conditions(pod, row);
        return r;
}

const struct xp_table_kind xp_table_pod = {
    .kind = "Pod",
    .columns = pod_columns,
    .n_columns = XP_ELEMENTSOF(pod_columns),
    .row = pod_row,
};
