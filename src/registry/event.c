/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Event recorder of the controllers. As Kubernetes' recorder, a report that repeats one
 * already made (same object, reason and message) counts on the same Event instead of adding one:
 * event_names.c names the Events as Kubernetes does (the object's name and the time) and
 * remembers which name each report got, so a repeat finds its Event without a list.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

#define EVENT_ATTEMPTS 8

static json_t *
core_event(const struct xp_registry_event *e, const char *ns, const char *name, const char *now)
{
        char uid[XP_REGISTRY_UID_STRING];

        if (xp_registry_uid(uid) < 0)
                return NULL;
        return json_pack(
            "{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s, s:s*}, s:s, s:s, s:{s:s}, s:s, s:s, s:I, s:s}",
            "apiVersion",
            "v1",
            "kind",
            "Event",
            "metadata",
            "name",
            name,
            "namespace",
            ns,
            "uid",
            uid,
            "creationTimestamp",
            now,
            "involvedObject",
            "kind",
            e->kind,
            "apiVersion",
            "v1",
            "namespace",
            e->namespace ? e->namespace : "",
            "name",
            e->name,
            "uid",
            e->uid ? e->uid : "",
            "resourceVersion",
            e->resource_version,
            "reason",
            e->reason,
            "message",
            e->message,
            "source",
            "component",
            e->component,
            "firstTimestamp",
            now,
            "lastTimestamp",
            now,
            "count",
            (json_int_t)(e->count > 0 ? e->count : 1),
            "type",
            e->type);
}

/* reportingComponent and reportingInstance too when the reporter asks for them. */
static json_t *
new_event(const struct xp_registry_event *e, const char *ns, const char *name, const char *now)
{
        json_t *event = core_event(e, ns, name, now);
        char instance[256];

        if (!event || !e->reporting_host)
                return event;
        snprintf(instance, sizeof(instance), "%s-%s", e->component, e->reporting_host);
        if (json_object_set_new(event, "reportingComponent", json_string(e->component)) < 0 ||
            json_object_set_new(event, "reportingInstance", json_string(instance)) < 0) {
                json_decref(event);
                return NULL;
        }
        return event;
}

json_t *registry_event_new(struct xp_registry *registry,
                           const struct xp_registry_event *e,
                           const char **ret_ns,
                           char ret_name[static XP_STORE_KEY_MAX + 1])
{
        char now[XP_RFC3339_MAX];

        *ret_ns = e->namespace && e->namespace[0] ? e->namespace : "default";
        (void)registry_event_name(registry, e, ret_name);
        xp_time_format_rfc3339(time(NULL), now);
        return new_event(e, *ret_ns, ret_name, now);
}

/* A new Event, written while its namespace is held: 1, 0 when the namespace refuses, -errno. */
static int create_event(struct xp_registry *registry,
                        const struct xp_registry_event *e,
                        const char *ns,
                        const char *name,
                        const char *now,
                        struct xp_error *err)
{
        json_t *event = new_event(e, ns, name, now);
        uint64_t version;
        int r;

        if (!event)
                return -ENOMEM;
        r = xp_registry_namespace_hold(registry, ns, err);
        if (r == -ENOENT || r == -XP_REGISTRY_TERMINATING) {
                json_decref(event);
                return 0;
        }
        if (r >= 0) {
                r = xp_store_create(registry->store, "events", ns, name, event, &version, err);
                xp_registry_namespace_release(registry, ns);
        }
        json_decref(event);
        return r < 0 ? r : 1;
}

/* count more occurrences on event, the last now. 0 or -ENOMEM. */
static int count_add(json_t *event, int64_t count, const char *now)
{
        const json_t *old = json_object_get(event, "count");

        if (json_object_set_new(
                event,
                "count",
                json_integer((json_is_integer(old) ? json_integer_value(old) : 1) + count)) < 0 ||
            json_object_set_new(event, "lastTimestamp", json_string(now)) < 0)
                return -ENOMEM;
        return 0;
}

/* Adds count to the Event as read (at version). */
static int count_event(struct xp_registry *registry,
                       json_t *event,
                       uint64_t version,
                       int64_t count,
                       const char *now,
                       struct xp_error *err)
{
        const char *ns =
            json_string_value(json_object_get(json_object_get(event, "metadata"), "namespace"));
        const char *name =
            json_string_value(json_object_get(json_object_get(event, "metadata"), "name"));

        if (count_add(event, count, now) < 0)
                return -ENOMEM;
        return xp_store_update(registry->store,
                               "events",
                               ns ? ns : "",
                               name ? name : "",
                               version,
                               event,
                               &version,
                               err);
}

int xp_registry_event_record(struct xp_registry *registry,
                             const struct xp_registry_event *e,
                             struct xp_error *err)
{
        const char *ns = e->namespace && e->namespace[0] ? e->namespace : "default";
        char name[XP_STORE_KEY_MAX + 1], now[XP_RFC3339_MAX];
        bool repeat = registry_event_name(registry, e, name);
        int r = -ESTALE;

        xp_time_format_rfc3339(time(NULL), now);
        /* Most reports are new (a Scheduled Event names its pod's uid): the create comes first,
         * without a read, and only a repeat reads the Event to count on it. */
        if (!repeat) {
                r = create_event(registry, e, ns, name, now, err);
                if (r != -EEXIST)
                        return r;
                r = -ESTALE;
        }
        for (unsigned attempt = 0; attempt < EVENT_ATTEMPTS && r == -ESTALE; attempt++) {
                json_t *event;
                uint64_t version;

                r = xp_store_get(registry->store, "events", ns, name, &event, &version, err);
                if (r == -ENOENT) {
                        r = create_event(registry, e, ns, name, now, err);
                        if (r == -EEXIST)
                                r = -ESTALE; /* another write made it first: count on it */
                        continue;
                }
                if (r < 0)
                        break;
                r = count_event(registry, event, version, e->count > 0 ? e->count : 1, now, err);
                json_decref(event);
                r = r < 0 ? r : 1;
        }
        return r;
}

int registry_event_write(struct xp_registry *registry,
                         const struct xp_registry_event *e,
                         char name[static XP_STORE_KEY_MAX + 1],
                         struct xp_store_group_write *ret)
{
        const char *ns = e->namespace && e->namespace[0] ? e->namespace : "default";
        int64_t count = e->count > 0 ? e->count : 1;
        char now[XP_RFC3339_MAX];
        json_t *event = NULL;
        uint64_t version = 0;
        int r;

        (void)registry_event_name(registry, e, name);
        xp_time_format_rfc3339(time(NULL), now);
        r = xp_store_get(registry->store, "events", ns, name, &event, &version, NULL);
        if (r == -ENOENT) {
                event = new_event(e, ns, name, now);
                version = 0;
        } else if (r < 0)
                return r;
        else if (count_add(event, count, now) < 0) {
                json_decref(TAKE_PTR(event));
        }
        if (!event)
                return -ENOMEM;
        *ret = (struct xp_store_group_write){.update = version != 0,
                                             .kind = "events",
                                             .namespace = ns,
                                             .name = name,
                                             .expected_version = version,
                                             .object = event};
        return 0;
}
