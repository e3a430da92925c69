/* SPDX-License-Identifier: Apache-2.0 */
/* The Priority admission of a pod at create (xpool/priority.h), over the stored PriorityClasses. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/priority.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

static const struct {
        const char *name;
        int64_t value;
        const char *description;
} builtin[] = {
    {XP_PRIORITY_SYSTEM_NODE,
     XP_PRIORITY_SYSTEM_NODE_VALUE,
     "Used for system critical pods that must not be moved from their current node."},
    {XP_PRIORITY_SYSTEM_CLUSTER,
     XP_PRIORITY_SYSTEM_CLUSTER_VALUE,
     "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
};

bool xp_priority_system(const char *name)
{
        for (size_t i = 0; name && i < XP_ELEMENTSOF(builtin); i++)
                if (strcmp(name, builtin[i].name) == 0)
                        return true;
        return false;
}

/* One built-in class as kube-apiserver stores it at start. */
static json_t *system_class(size_t i)
{
        char created[XP_RFC3339_MAX], uid[XP_REGISTRY_UID_STRING];

        if (xp_registry_uid(uid) < 0)
                return NULL;
        xp_time_format_rfc3339(time(NULL), created);
        return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:i}, s:I, s:s, s:s}",
                         "apiVersion",
                         "scheduling.k8s.io/v1",
                         "kind",
                         "PriorityClass",
                         "metadata",
                         "name",
                         builtin[i].name,
                         "uid",
                         uid,
                         "creationTimestamp",
                         created,
                         "generation",
                         1,
                         "value",
                         (json_int_t)builtin[i].value,
                         "description",
                         builtin[i].description,
                         "preemptionPolicy",
                         "PreemptLowerPriority");
}

int xp_priority_system_ensure(struct xp_registry *registry, struct xp_error *err)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(builtin); i++) {
                json_t *pc;
                uint64_t version;
                int r = xp_store_get(registry->store,
                                     XP_PRIORITY_CLASSES_RESOURCE,
                                     "",
                                     builtin[i].name,
                                     &pc,
                                     &version,
                                     err);

                if (r == 0) {
                        json_decref(pc);
                        continue;
                }
                if (r != -ENOENT)
                        return r;
                pc = system_class(i);
                if (!pc)
                        return -ENOMEM;
                r = xp_store_create(registry->store,
                                    XP_PRIORITY_CLASSES_RESOURCE,
                                    "",
                                    builtin[i].name,
                                    pc,
                                    &version,
                                    err);
                json_decref(pc);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

/* The class of name: 1 with its value and policy (borrowed from *ret_class, caller decrefs),
 * 0 when there is none. */
static int
class_get(struct xp_registry *registry, const char *name, json_t **ret_class, struct xp_error *err)
{
        uint64_t version;
        int r;

        for (size_t i = 0; i < XP_ELEMENTSOF(builtin); i++)
                if (strcmp(name, builtin[i].name) == 0) {
                        *ret_class = json_pack("{s:s, s:I, s:s}",
                                               "name",
                                               name,
                                               "value",
                                               (json_int_t)builtin[i].value,
                                               "preemptionPolicy",
                                               "PreemptLowerPriority");
                        return *ret_class ? 1 : -ENOMEM;
                }
        r = xp_store_get(
            registry->store, XP_PRIORITY_CLASSES_RESOURCE, "", name, ret_class, &version, err);
        if (r == -ENOENT)
                return 0;
        return r < 0 ? r : 1;
}

void priority_cache_init(struct xp_registry *registry)
{
        pthread_mutex_init(&registry->priority.mutex, NULL);
        registry->priority.read = false;
        registry->priority.mark = 0;
        registry->priority.best = NULL;
}

void priority_cache_done(struct xp_registry *registry)
{
        json_decref(registry->priority.best);
        pthread_mutex_destroy(&registry->priority.mutex);
}

/* The globalDefault class from the store (the lowest value if several claim it), or NULL. */
static int default_class_read(struct xp_registry *registry,
                              json_t **ret_class,
                              uint64_t *ret_version,
                              struct xp_error *err)
{
        json_t *items = NULL, *c, *best = NULL;
        size_t i;
        int r;

        r = xp_store_list(
            registry->store, XP_PRIORITY_CLASSES_RESOURCE, "", &items, ret_version, err);
        if (r < 0)
                return r;
        json_array_foreach(
            items, i, c) if (json_is_true(json_object_get(c, "globalDefault")) &&
                             (!best || json_integer_value(json_object_get(c, "value")) <
                                           json_integer_value(json_object_get(best, "value"))))
            best = c;
        *ret_class = json_incref(best);
        json_decref(items);
        return 0;
}

/* The globalDefault class, or NULL: cached, read again after a PriorityClass is written. */
static int default_class(struct xp_registry *registry, json_t **ret_class, struct xp_error *err)
{
        struct priority_cache *c = &registry->priority;
        /* before the read: a class written meanwhile moves the mark, and is read at the next
         * create. The mark, not a scan of the store's log under this lock: every create asks,
         * and 32 clients' creates queued on the lock while one scanned (a futex wait per create) */
        uint64_t mark = xp_store_kind_generation(registry->store, XP_PRIORITY_CLASSES_RESOURCE);
        json_t *best = NULL;
        uint64_t version = 0;
        int r = 0;

        pthread_mutex_lock(&c->mutex);
        if (!c->read || c->mark != mark) {
                r = default_class_read(registry, &best, &version, err);
                if (r >= 0) {
                        json_decref(c->best);
                        c->best = best;
                        c->read = true;
                        c->mark = mark;
                }
        }
        *ret_class = r >= 0 ? json_incref(c->best) : NULL;
        pthread_mutex_unlock(&c->mutex);
        return r == -ENOENT ? 0 : r;
}

int xp_registry_pod_priority(struct xp_registry *registry, json_t *pod, struct xp_error *err)
{
        json_t *spec = json_object_get(pod, "spec"), *class = NULL;
        const char *name = json_string_value(json_object_get(spec, "priorityClassName"));
        const json_t *given = json_object_get(spec, "priority");
        const char *policy,
            *given_policy = json_string_value(json_object_get(spec, "preemptionPolicy"));
        int64_t value = 0;
        int r;

        if (!json_is_object(spec))
                return 0; /* the codec says what is wrong */
        if ((!name || !name[0]) && json_is_integer(given))
                return 0; /* xpool's own: a pod of no class keeps the priority it gives */
        if (name && name[0]) {
                r = class_get(registry, name, &class, err);
                if (r == 0)
                        return xp_errorf(
                            err, -EPERM, "no PriorityClass with name %s was found", name);
        } else {
                r = default_class(registry, &class, err);
                if (r >= 0 && class &&
                    json_object_set(spec,
                                    "priorityClassName",
                                    json_object_get(json_object_get(class, "metadata"), "name")) <
                        0)
                        r = -ENOMEM;
        }
        if (r < 0) {
                json_decref(class);
                return r;
        }
        value = class ? json_integer_value(json_object_get(class, "value")) : 0;
        policy = class ? json_string_value(json_object_get(class, "preemptionPolicy")) : NULL;
        if (json_is_integer(given) && json_integer_value(given) != value)
                r = xp_errorf(
                    err,
                    -EPERM,
                    "the integer value of priority (%lld) must not be provided in pod spec; priority admission controller computed %lld from the given PriorityClass name",
                    (long long)json_integer_value(given),
                    (long long)value);
        else if (policy && given_policy && strcmp(policy, given_policy) != 0)
                r = xp_errorf(
                    err,
                    -EPERM,
                    "the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name",
                    given_policy,
                    policy);
        else if (json_object_set_new(spec, "priority", json_integer(value)) < 0 ||
                 (policy && json_object_set_new(spec, "preemptionPolicy", json_string(policy)) < 0))
                r = -ENOMEM;
        json_decref(class);
        return r < 0 ? r : 0;
}
