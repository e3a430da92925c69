/* SPDX-License-Identifier: Apache-2.0 */
/* The smaller tables: Event, Namespace, Lease, and NAME/AGE for any other kind. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "table_internal.h"

/* ---- Event ---------------------------------------------------------------------------------- */

static const struct table_column event_columns[] = {
    {.name = "Last Seen",
     .type = "string",
     .description =
         "Time since the event was last seen (lastTimestamp, else eventTime, else firstTimestamp)."},
    {.name = "Type", .type = "string", .description = "Normal or Warning."},
    {.name = "Reason",
     .type = "string",
     .description = "Why the event happened, in CamelCase (FailedScheduling, BackOff, ...)."},
    {.name = "Object",
     .type = "string",
     .description = "The object the event is about, as kind/name in lower case."},
    {.name = "Subobject",
     .type = "string",
     .priority = 1,
     .description = "The part of the object the event is about (involvedObject.fieldPath)."},
    {.name = "Source",
     .type = "string",
     .priority = 1,
     .description = "The component that reported the event, and its host."},
    {.name = "Message", .type = "string", .description = "What happened, in words."},
    {.name = "First Seen",
     .type = "string",
     .priority = 1,
     .description = "Time since the event was first seen."},
    {.name = "Count",
     .type = "integer",
     .priority = 1,
     .description = "How many times the event has occurred."},
    {.name = "Name",
     .type = "string",
     .format = "name",
     .priority = 1,
     .description = "Name of the event object."},
};

static int event_object_cell(const json_t *event, json_t *cells)
{
        const char *kind = table_str0(event, "involvedObject.kind");
        const char *name = table_str0(event, "involvedObject.name");
        _cleanup_free_ char *lower = strdup(kind);

        if (!lower)
                return -ENOMEM;
        for (char *p = lower; *p; p++)
                *p = (char)tolower((unsigned char)*p);
        if (name[0])
                return table_cell_printf(cells, "%s/%s", lower, name);
        return table_cell_str(cells, lower);
}

static int event_source_cell(const json_t *event, json_t *cells)
{
        const char *component = table_str0(event, "source.component");
        const char *host = table_str0(event, "source.host");

        /* events.k8s.io/v1 writers fill reportingController/reportingInstance instead */
        if (!component[0])
                component = table_str0(event, "reportingComponent");
        if (!host[0])
                host = table_str0(event, "reportingInstance");
        if (!host[0])
                return table_cell_str(cells, component);
        return table_cell_printf(cells, "%s, %s", component, host);
}

/* Message without surrounding white space, as kubectl trims it. */
static int event_message_cell(const json_t *event, json_t *cells)
{
        const char *message = table_str0(event, "message");
        size_t len;

        while (*message && isspace((unsigned char)*message))
                message++;
        len = strlen(message);
        while (len > 0 && isspace((unsigned char)message[len - 1]))
                len--;
        return table_cell_printf(cells, "%.*s", (int)len, message);
}

static int event_row(const json_t *event, time_t now, json_t *cells, json_t *row)
{
        char first_seen[XP_DURATION_MAX], last_seen[XP_DURATION_MAX];
        int64_t first = table_time(event, "firstTimestamp"),
                last = table_time(event, "lastTimestamp");
        int64_t count = table_int(event, "count");
        int r;

        (void)row;
        if (first == 0)
                first = table_time(event, "eventTime");
        table_since(first, now, first_seen);
        if (last == 0)
                memcpy(last_seen, first_seen, sizeof(last_seen));
        else
                table_since(last, now, last_seen);
        if (json_is_object(table_get(event, "series"))) {
                table_since(table_time(event, "series.lastObservedTime"), now, last_seen);
                count = table_int(event, "series.count");
        } else if (count == 0)
                count = 1; /* events.k8s.io/v1 singletons have no count */

        r = table_cell_str(cells, last_seen);
        if (r >= 0)
                r = table_cell_str(cells, table_str0(event, "type"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(event, "reason"));
        if (r >= 0)
                r = event_object_cell(event, cells);
        if (r >= 0)
                r = table_cell_str(cells, table_str0(event, "involvedObject.fieldPath"));
        if (r >= 0)
                r = event_source_cell(event, cells);
        if (r >= 0)
                r = event_message_cell(event, cells);
        if (r >= 0)
                r = table_cell_str(cells, first_seen);
        if (r >= 0)
                r = table_cell_int(cells, count);
        if (r >= 0)
                r = table_cell_str(cells, table_str0(event, "metadata.name"));
        return r;
}

const struct xp_table_kind xp_table_event = {
    .kind = "Event",
    .columns = event_columns,
    .n_columns = XP_ELEMENTSOF(event_columns),
    .row = event_row,
};

/* ---- Namespace ------------------------------------------------------------------------------ */

static const struct table_column namespace_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the namespace."},
    {.name = "Status",
     .type = "string",
     .description = "Active, or Terminating while the namespace is being deleted."},
    {.name = "Age", .type = "string", .description = "Time since the namespace was created."},
};

static int namespace_row(const json_t *ns, time_t now, json_t *cells, json_t *row)
{
        const char *phase = table_str(ns, "status.phase");
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(ns, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, phase && phase[0] ? phase : "Active");
        if (r >= 0)
                r = table_cell_age(cells, ns, "metadata.creationTimestamp", now);
        return r;
}

const struct xp_table_kind xp_table_namespace = {
    .kind = "Namespace",
    .columns = namespace_columns,
    .n_columns = XP_ELEMENTSOF(namespace_columns),
    .row = namespace_row,
};

/* ---- Lease ---------------------------------------------------------------------------------- */

static const struct table_column lease_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the lease."},
    {.name = "Holder",
     .type = "string",
     .description = "The identity of the lease's current holder (spec.holderIdentity)."},
    {.name = "Age", .type = "string", .description = "Time since the lease was created."},
};

static int lease_row(const json_t *lease, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(lease, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(lease, "spec.holderIdentity"));
        if (r >= 0)
                r = table_cell_age(cells, lease, "metadata.creationTimestamp", now);
        return r;
}

const struct xp_table_kind xp_table_lease = {
    .kind = "Lease",
    .columns = lease_columns,
    .n_columns = XP_ELEMENTSOF(lease_columns),
    .row = lease_row,
};

/* ---- any other kind ------------------------------------------------------------------------- */

static const struct table_column default_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

static int default_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

const struct xp_table_kind xp_table_default = {
    .kind = "",
    .columns = default_columns,
    .n_columns = XP_ELEMENTSOF(default_columns),
    .row = default_row,
};
