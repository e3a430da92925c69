/* SPDX-License-Identifier: Apache-2.0 */
/* Event (core v1), validated as kube-apiserver validates events created through the v1 API. */
#include <errno.h>
#include <string.h>

#include "schema.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

/* Kubernetes' limits for events that carry an eventTime (the events.k8s.io shape). */
#define EVENT_SHORT_MAX   128  /* action, reason, reportingInstance */
#define EVENT_MESSAGE_MAX 1024 /* message ("note" in events.k8s.io) */

static const struct xp_enum_name event_type_names[] = {
    {"Normal", XP_EVENT_NORMAL},
    {"Warning", XP_EVENT_WARNING},
    {NULL, 0},
};

static const struct xp_field object_reference_fields[] = {
    XP_FIELD("kind", XP_FT_STRING, struct xp_object_reference, kind),
    XP_FIELD("namespace", XP_FT_STRING, struct xp_object_reference, namespace),
    XP_FIELD("name", XP_FT_STRING, struct xp_object_reference, name),
    XP_FIELD("uid", XP_FT_STRING, struct xp_object_reference, uid),
    XP_FIELD("apiVersion", XP_FT_STRING, struct xp_object_reference, api_version),
    XP_FIELD("resourceVersion", XP_FT_STRING, struct xp_object_reference, resource_version),
    XP_FIELD("fieldPath", XP_FT_STRING, struct xp_object_reference, field_path),
};
static const struct xp_schema object_reference_schema =
    XP_SCHEMA(struct xp_object_reference, "ObjectReference", object_reference_fields);

static const struct xp_field event_source_fields[] = {
    XP_FIELD("component", XP_FT_STRING, struct xp_event_source, component),
    XP_FIELD("host", XP_FT_STRING, struct xp_event_source, host),
};
static const struct xp_schema event_source_schema =
    XP_SCHEMA(struct xp_event_source, "EventSource", event_source_fields);

static const struct xp_field event_series_fields[] = {
    XP_FIELD("count", XP_FT_INT32, struct xp_event_series, count, .check = xp_check_non_negative),
    XP_FIELD("lastObservedTime", XP_FT_MICROTIME, struct xp_event_series, last_observed_time),
};
static const char *const event_series_passthrough[] = {"state", NULL};
static const struct xp_schema event_series_schema =
    XP_SCHEMA(struct xp_event_series,
              "EventSeries",
              event_series_fields,
              .passthrough = event_series_passthrough);

static const struct xp_field event_fields[] = {
    XP_FIELD("metadata",
             XP_FT_STRUCT,
             struct xp_event,
             metadata,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &xp_object_meta_schema),
    XP_FIELD("involvedObject",
             XP_FT_STRUCT,
             struct xp_event,
             involved_object,
             .flags = XP_FIELD_ALWAYS,
             .schema = &object_reference_schema),
    XP_FIELD("reason", XP_FT_STRING, struct xp_event, reason),
    XP_FIELD("message", XP_FT_STRING, struct xp_event, message),
    XP_FIELD("source", XP_FT_STRUCT, struct xp_event, source, .schema = &event_source_schema),
    XP_FIELD("firstTimestamp", XP_FT_TIME, struct xp_event, first_timestamp),
    XP_FIELD("lastTimestamp", XP_FT_TIME, struct xp_event, last_timestamp),
    XP_FIELD("count", XP_FT_INT32, struct xp_event, count, .check = xp_check_non_negative),
    XP_FIELD("type", XP_FT_ENUM, struct xp_event, type, .enum_names = event_type_names),
    XP_FIELD("eventTime", XP_FT_MICROTIME, struct xp_event, event_time),
    XP_FIELD("series", XP_FT_STRUCT_PTR, struct xp_event, series, .schema = &event_series_schema),
    XP_FIELD("action", XP_FT_STRING, struct xp_event, action),
    XP_FIELD(
        "related", XP_FT_STRUCT_PTR, struct xp_event, related, .schema = &object_reference_schema),
    XP_FIELD("reportingComponent", XP_FT_STRING, struct xp_event, reporting_component),
    XP_FIELD("reportingInstance", XP_FT_STRING, struct xp_event, reporting_instance),
};

static bool empty(const char *s)
{
        return !s || !*s;
}

static int check_involved_namespace(struct xp_decode_ctx *ctx, const struct xp_event *event)
{
        const char *ns = event->metadata.namespace;
        const char *involved = event->involved_object.namespace;
        /* the old shape (no eventTime) puts events about cluster-scoped objects in default only */
        bool old_shape = event->event_time == 0;
        char q1[XP_QUOTE_MAX], q2[XP_QUOTE_MAX];
        int r;

        /* an event without a namespace gets the one it is created in: nothing to compare yet */
        if (empty(ns))
                return 0;
        if (!empty(involved) && strcmp(ns, involved) == 0)
                return 0;
        if (empty(involved) &&
            (strcmp(ns, "default") == 0 || (!old_shape && strcmp(ns, "kube-system") == 0)))
                return 0;
        xp_path_push_field(&ctx->path, "involvedObject");
        if (!empty(involved))
                r = xp_fail_field(ctx,
                                  -EINVAL,
                                  "namespace",
                                  "Invalid value: %s: does not match metadata.namespace %s",
                                  xp_quote(involved, q1),
                                  xp_quote(ns, q2));
        else
                r = xp_fail_field(
                    ctx,
                    -EINVAL,
                    "namespace",
                    "Required value: an event in namespace %s must name its object's namespace (events about cluster-scoped objects go in \"default\"%s)",
                    xp_quote(ns, q2),
                    old_shape ? "" : " or \"kube-system\"");
        xp_path_pop(&ctx->path);
        return r;
}

static int
check_required_short(struct xp_decode_ctx *ctx, const char *field, const char *value, size_t max)
{
        if (empty(value))
                return xp_fail_field(
                    ctx, -EINVAL, field, "Required value: an event with an eventTime needs it");
        if (strlen(value) > max)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     field,
                                     "too long: must have at most %zu characters, has %zu",
                                     max,
                                     strlen(value));
        return 0;
}

/* Events with an eventTime are the newer shape, which names who reported what and why. */
static int check_new_shape(struct xp_decode_ctx *ctx, const struct xp_event *event)
{
        struct xp_error cause = {0};
        int r;

        if (empty(event->reporting_component))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "reportingComponent",
                                     "Required value: an event with an eventTime needs it");
        if (xp_check_qualified_name(event->reporting_component, &cause) < 0) {
                xp_path_push_field(&ctx->path, "reportingComponent");
                r = xp_decode_fail_error(ctx, &cause, NULL, false);
                xp_path_pop(&ctx->path);
                return r;
        }
        r = check_required_short(
            ctx, "reportingInstance", event->reporting_instance, EVENT_SHORT_MAX);
        if (r >= 0)
                r = check_required_short(ctx, "action", event->action, EVENT_SHORT_MAX);
        if (r >= 0)
                r = check_required_short(ctx, "reason", event->reason, EVENT_SHORT_MAX);
        if (r >= 0 && event->message && strlen(event->message) > EVENT_MESSAGE_MAX)
                r = xp_fail_field(ctx,
                                  -EINVAL,
                                  "message",
                                  "too long: must have at most %d characters, has %zu",
                                  EVENT_MESSAGE_MAX,
                                  strlen(event->message));
        return r;
}

static int validate_event(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_event *event = object;
        int r = check_involved_namespace(ctx, event);

        if (r >= 0 && event->event_time != 0)
                r = check_new_shape(ctx, event);
        return r;
}

const struct xp_schema xp_event_schema =
    XP_SCHEMA(struct xp_event, "Event", event_fields, .validate = validate_event);

const char *xp_event_type_to_string(enum xp_event_type type)
{
        return xp_enum_to_string(event_type_names, (int)type);
}

int xp_event_type_from_string(const char *s)
{
        return xp_enum_from_string(event_type_names, s);
}
