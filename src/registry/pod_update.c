/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an update may change of a pod, as kube-apiserver's ValidatePodUpdate decides it: the
 * containers' and init containers' images, activeDeadlineSeconds (set, or lowered), tolerations
 * (added to, or an existing one's tolerationSeconds), terminationGracePeriodSeconds from a
 * negative value to 1, schedulingGates; everything else of the spec stays. The spec is compared
 * the way Kubernetes' semantic equality does: an empty list or mapping is the same as none.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/registry.h"
#include "xpool/strutil.h"

#define SHOWN_MAX 120 /* bytes of one field's value in the diff of the Forbidden message */

/* What kube-apiserver lists as updatable, in its words. */
#define POD_UPDATABLE_FIELDS                                                                       \
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

static bool empty(const json_t *v)
{
        return !v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
               (json_is_object(v) && json_object_size(v) == 0);
}

/* Semantic equality: absent, null, [] and {} are alike, at every level. */
static bool same(const json_t *a, const json_t *b)
{
        const char *key;
        json_t *v;
        size_t i;

        if (empty(a) || empty(b))
                return empty(a) && empty(b);
        if (json_is_object(a) && json_is_object(b)) {
                json_object_foreach(
                    (json_t *)a, key, v) if (!same(v, json_object_get(b, key))) return false;
                json_object_foreach((json_t *)b, key, v) if (!json_object_get(a, key) &&
                                                             !empty(v)) return false;
                return true;
        }
        if (json_is_array(a) && json_is_array(b)) {
                if (json_array_size(a) != json_array_size(b))
                        return false;
                json_array_foreach(a, i, v) if (!same(v, json_array_get(b, i))) return false;
                return true;
        }
        return json_equal(a, b);
}

static const json_t *spec_member(const json_t *pod, const char *key)
{
        return json_object_get(json_object_get(pod, "spec"), key);
}

/* ValidateContainerUpdates: as many containers, each with an image where it had one. */
static int
check_containers(const json_t *old, const json_t *new, const char *list, struct xp_error *err)
{
        const json_t *before = spec_member(old, list), *after = spec_member(new, list), *c;
        size_t i;

        if (json_array_size(before) != json_array_size(after))
                return xp_errorf(err,
                                 -EINVAL,
                                 "spec.%s: Forbidden: pod updates may not add or remove containers",
                                 list);
        json_array_foreach(after, i, c)
        {
                const char *image = json_string_value(json_object_get(c, "image"));
                const char *was =
                    json_string_value(json_object_get(json_array_get(before, i), "image"));

                /* xpool's process containers run a command without an image */
                if ((!image || !image[0]) && was && was[0])
                        return xp_errorf(
                            err, -EINVAL, "spec.%s[%zu].image: Required value", list, i);
        }
        return 0;
}

/* Set from nothing, or lowered; never removed nor raised. */
static int check_deadline(const json_t *old, const json_t *new, struct xp_error *err)
{
        const json_t *before = spec_member(old, "activeDeadlineSeconds");
        const json_t *after = spec_member(new, "activeDeadlineSeconds");

        if (json_is_integer(after) && json_is_integer(before) &&
            json_integer_value(before) < json_integer_value(after))
                return xp_errorf(err,
                                 -EINVAL,
                                 "spec.activeDeadlineSeconds: Invalid value: %" JSON_INTEGER_FORMAT
                                 ": must be less than or equal to previous value",
                                 json_integer_value(after));
        if (empty(after) && json_is_integer(before))
                return xp_errorf(err,
                                 -EINVAL,
                                 "spec.activeDeadlineSeconds: Invalid value: \"null\": must not "
                                 "update from a positive integer to nil value");
        return 0;
}

/* validateOnlyAddedTolerations: each old toleration is still there, but for its seconds. */
static int check_tolerations(const json_t *old, const json_t *new, struct xp_error *err)
{
        const json_t *after = spec_member(new, "tolerations"), *t, *u;
        size_t i, j;

        json_array_foreach(spec_member(old, "tolerations"), i, t)
        {
                bool found = false;

                json_array_foreach(after, j, u)
                {
                        json_t *a = json_copy((json_t *)t), *b = json_copy((json_t *)u);

                        if (!a || !b) {
                                json_decref(a);
                                json_decref(b);
                                return -ENOMEM;
                        }
                        json_object_del(a, "tolerationSeconds");
                        json_object_del(b, "tolerationSeconds");
                        found = found || same(a, b);
                        json_decref(a);
                        json_decref(b);
                }
                if (!found)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "spec.tolerations: Forbidden: existing toleration can "
                                         "not be modified except its tolerationSeconds");
        }
        return 0;
}

static int keep(json_t *spec, const json_t *old_spec, const char *key)
{
        const json_t *v = json_object_get(old_spec, key);

        if (!v)
                return json_object_del(spec, key), 0;
        return json_object_set_new(spec, key, json_deep_copy(v)) < 0 ? -ENOMEM : 0;
}

/* The new spec with what may change taken from the old one: what must then equal it. */
static json_t *munged_spec(const json_t *old_spec, const json_t *new_spec)
{
        static const char *const lists[] = {"containers", "initContainers"};
        static const char *const kept[] = {
            "activeDeadlineSeconds", "tolerations", "schedulingGates"};
        json_t *spec = json_deep_copy(new_spec), *c;
        const json_t *grace = json_object_get(old_spec, "terminationGracePeriodSeconds");
        size_t i;
        int r = spec ? 0 : -ENOMEM;

        for (size_t l = 0; l < 2 && r >= 0; l++)
                json_array_foreach(json_object_get(spec, lists[l]), i, c) if (json_is_object(c))
                    r |= keep(c, json_array_get(json_object_get(old_spec, lists[l]), i), "image");
        for (size_t k = 0; k < 3 && r >= 0; k++)
                r |= keep(spec, old_spec, kept[k]);
        if (r >= 0 && json_is_integer(grace) && json_integer_value(grace) < 0 &&
            json_integer_value(json_object_get(spec, "terminationGracePeriodSeconds")) == 1)
                r = keep(spec, old_spec, "terminationGracePeriodSeconds");
        if (r < 0) {
                json_decref(spec);
                return NULL;
        }
        return spec;
}

/* Appends "- \tPath: old,\n+ \tPath: new,\n" for one value that differs. */
static void diff_leaf(char *buf, size_t size, const char *path, const json_t *a, const json_t *b)
{
        char *was = empty(a) ? NULL : json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
        char *now = empty(b) ? NULL : json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
        /* Go's zero value of what is gone: "" for a string, else nil */
        const char *zero_a = json_is_string(b) ? "\"\"" : "nil";
        const char *zero_b = json_is_string(a) ? "\"\"" : "nil";
        size_t used = strlen(buf);

        snprintf(buf + used,
                 size - used,
                 "- \t%s: %.*s%s,\n+ \t%s: %.*s%s,\n",
                 path,
                 SHOWN_MAX,
                 was ? was : zero_a,
                 was && strlen(was) > SHOWN_MAX ? "..." : "",
                 path,
                 SHOWN_MAX,
                 now ? now : zero_b,
                 now && strlen(now) > SHOWN_MAX ? "..." : "");
        free(was);
        free(now);
}

/* The Go name of a field: the JSON name, capitalised (core.PodSpec's Containers, ...). */
static void go_path(char *out, size_t size, const char *path, const char *key)
{
        int n = snprintf(out, size, "%s%s", path, path[0] ? "." : "");

        if (n < 0 || (size_t)n >= size)
                return;
        snprintf(out + n, size - (size_t)n, "%s", key);
        if (out[n] >= 'a' && out[n] <= 'z')
                out[n] = (char)(out[n] - 'a' + 'A');
}

/* Walks a and b down to the values that differ, and lists each. */
static void diff_walk(char *buf, size_t size, const char *path, const json_t *a, const json_t *b)
{
        char sub[256];
        const char *key;
        json_t *v;
        size_t i;

        if (json_is_object(a) && json_is_object(b)) {
                json_object_foreach((json_t *)a, key, v) if (!same(v, json_object_get(b, key)))
                {
                        go_path(sub, sizeof(sub), path, key);
                        diff_walk(buf, size, sub, v, json_object_get(b, key));
                }
                json_object_foreach((json_t *)b, key, v) if (!json_object_get(a, key) && !empty(v))
                {
                        go_path(sub, sizeof(sub), path, key);
                        diff_walk(buf, size, sub, NULL, v);
                }
                return;
        }
        if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
                json_array_foreach(a, i, v) if (!same(v, json_array_get(b, i)))
                {
                        snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
                        diff_walk(buf, size, sub, v, json_array_get(b, i));
                }
                return;
        }
        diff_leaf(buf, size, path, a, b);
}

/* The Forbidden error, with a diff of the spec's values that changed. */
static int forbid_change(const json_t *old_spec, const json_t *spec, struct xp_error *err)
{
        char diff[640];

        snprintf(diff, sizeof(diff), "  core.PodSpec{\n  \t... // other fields unchanged\n");
        diff_walk(diff, sizeof(diff), "", old_spec, spec);
        if (strlen(diff) + 16 < sizeof(diff))
                strcat(diff, "  \t...\n  }\n");
        return xp_errorf(
            err,
            -EINVAL,
            "spec: Forbidden: pod updates may not change fields other than " POD_UPDATABLE_FIELDS
            "\n%s",
            diff);
}

int xp_registry_pod_update_check(const json_t *old, const json_t *new, struct xp_error *err)
{
        const json_t *old_spec = json_object_get(old, "spec");
        json_t *spec;
        int r;

        /* a spec written back as it was (a status write's) passes every rule below */
        if (json_equal(old_spec, json_object_get(new, "spec")))
                return 0;
        r = check_containers(old, new, "containers", err);
        if (r >= 0)
                r = check_containers(old, new, "initContainers", err);
        if (r >= 0)
                r = check_deadline(old, new, err);
        if (r >= 0)
                r = check_tolerations(old, new, err);
        if (r < 0 || same(old_spec, json_object_get(new, "spec")))
                return r;
        spec = munged_spec(old_spec, json_object_get(new, "spec"));
        if (!spec)
                return -ENOMEM;
        r = same(spec, old_spec) ? 0 : forbid_change(old_spec, spec, err);
        json_decref(spec);
        return r;
}
