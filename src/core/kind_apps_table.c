/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubectl's columns of the apps/v1 kinds, as kube-apiserver's table printers have them:
 *   deployments  NAME READY UP-TO-DATE AVAILABLE AGE   (wide: CONTAINERS IMAGES SELECTOR)
 *   replicasets  NAME DESIRED CURRENT READY AGE        (wide: CONTAINERS IMAGES SELECTOR)
 *   daemonsets   NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE
 *                (wide: CONTAINERS IMAGES SELECTOR)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kind_apps.h"
#include "table_internal.h"
#include "xpool/doc.h"

#define WIDE_COLUMNS                                                                               \
        TABLE_TEMPLATE_COLUMNS,                                                                    \
        {                                                                                          \
                .name = "Selector", .type = "string", .description = "Label selector for pods.",   \
                .priority = 1                                                                      \
        }

/* CONTAINERS and IMAGES (comma-separated, as kubectl) and SELECTOR. */
static int wide_cells(json_t *cells, const json_t *object)
{
        const json_t *containers = table_array(object, "spec.template.spec.containers");
        char names[1024] = "", images[2048] = "";
        _cleanup_free_ char *selector = NULL;
        size_t i;
        json_t *c;
        int r;

        json_array_foreach(containers, i, c)
        {
                const char *n = table_str0(c, "name"), *img = table_str0(c, "image");

                if (i) {
                        strncat(names, ",", sizeof(names) - strlen(names) - 1);
                        strncat(images, ",", sizeof(images) - strlen(images) - 1);
                }
                strncat(names, n, sizeof(names) - strlen(names) - 1);
                strncat(images, img, sizeof(images) - strlen(images) - 1);
        }
        if (xp_json_label_selector_string(table_get(object, "spec.selector"), &selector) < 0)
                return -ENOMEM;
        r = table_cell_str(cells, names);
        if (r >= 0)
                r = table_cell_str(cells, images);
        if (r >= 0)
                r = table_cell_or_none(cells, selector);
        return r;
}

static const struct table_column deployment_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Ready", .type = "string", .description = "Number of the pod with ready state"},
    {.name = "Up-to-date",
     .type = "string",
     .description =
         "Total number of non-terminated pods targeted by this deployment that have the desired template spec."},
    {.name = "Available",
     .type = "string",
     .description =
         "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."},
    TABLE_AGE_COLUMN,
    WIDE_COLUMNS,
};

static int deployment_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int64_t replicas =
            table_get(object, "spec.replicas") ? table_int(object, "spec.replicas") : 1;
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_printf(cells,
                                      "%lld/%lld",
                                      (long long)table_int(object, "status.readyReplicas"),
                                      (long long)replicas);
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "status.updatedReplicas"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "status.availableReplicas"));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = wide_cells(cells, object);
        return r;
}

const struct xp_table_kind xp_table_deployment = {
    .kind = "Deployment",
    .columns = deployment_columns,
    .n_columns = XP_ELEMENTSOF(deployment_columns),
    .row = deployment_row,
};

static const struct table_column replicaset_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Desired",
     .type = "integer",
     .description = "Replicas is the number of desired replicas."},
    {.name = "Current",
     .type = "integer",
     .description = "Replicas is the most recently observed number of replicas."},
    {.name = "Ready",
     .type = "integer",
     .description = "The number of ready replicas for this replica set."},
    TABLE_AGE_COLUMN,
    WIDE_COLUMNS,
};

static int replicaset_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int64_t replicas =
            table_get(object, "spec.replicas") ? table_int(object, "spec.replicas") : 1;
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_int(cells, replicas);
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "status.replicas"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "status.readyReplicas"));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = wide_cells(cells, object);
        return r;
}

const struct xp_table_kind xp_table_replicaset = {
    .kind = "ReplicaSet",
    .columns = replicaset_columns,
    .n_columns = XP_ELEMENTSOF(replicaset_columns),
    .row = replicaset_row,
};

static const struct table_column daemonset_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Desired",
     .type = "integer",
     .description =
         "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod)."},
    {.name = "Current",
     .type = "integer",
     .description =
         "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."},
    {.name = "Ready",
     .type = "integer",
     .description =
         "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."},
    {.name = "Up-to-date",
     .type = "integer",
     .description = "The total number of nodes that are running updated daemon pod"},
    {.name = "Available",
     .type = "integer",
     .description =
         "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"},
    {.name = "Node Selector",
     .type = "string",
     .description = "NodeSelector is a selector which must be true for the pod to fit on a node."},
    TABLE_AGE_COLUMN,
    WIDE_COLUMNS,
};

/* labels.SelectorFromSet(nodeSelector).String(): "k=v,..." sorted by key, "<none>" when empty. */
static int node_selector_cell(json_t *cells, const json_t *object)
{
        json_t *selector = json_pack(
            "{s:O?}", "matchLabels", table_get(object, "spec.template.spec.nodeSelector"));
        _cleanup_free_ char *text = NULL;
        int r;

        if (!selector)
                return -ENOMEM;
        r = xp_json_label_selector_string(selector, &text);
        json_decref(selector);
        return r < 0 ? r : table_cell_or_none(cells, text);
}

static int daemonset_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        static const char *const counts[] = {"status.desiredNumberScheduled",
                                             "status.currentNumberScheduled",
                                             "status.numberReady",
                                             "status.updatedNumberScheduled",
                                             "status.numberAvailable"};
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        for (size_t i = 0; r >= 0 && i < XP_ELEMENTSOF(counts); i++)
                r = table_cell_int(cells, table_int(object, counts[i]));
        if (r >= 0)
                r = node_selector_cell(cells, object);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = wide_cells(cells, object);
        return r;
}

const struct xp_table_kind xp_table_daemonset = {
    .kind = "DaemonSet",
    .columns = daemonset_columns,
    .n_columns = XP_ELEMENTSOF(daemonset_columns),
    .row = daemonset_row,
};
