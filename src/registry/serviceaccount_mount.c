/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a new pod gets from its ServiceAccount (xpool/registry.h), as kube-apiserver 1.32's
 * ServiceAccount admission plugin gives it, for the server's admission and the workload
 * controllers' pods alike: the `kube-api-access-XXXXX` projected volume and its read-only mount at
 * /var/run/secrets/kubernetes.io/serviceaccount in every container that has nothing mounted
 * there, unless automountServiceAccountToken says no (the pod's word over its account's); and
 * the account's imagePullSecrets when the pod names none. The caller reads the account; only the
 * volume's random name and the server's two switches (xp_registry_serviceaccount_tokens) are
 * not the pod's and the account's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/jsonliteral.h"
#include "xpool/macro.h"
#include "xpool/registry.h"

/* Kubernetes' ProjectedVolumeSourceDefaultMode (0644). */
#define DEFAULT_MODE 420
/* Kubernetes' WarnOnlyBoundTokenExpirationSeconds: one hour and seven seconds, so that the
 * server can tell the tokens of this volume from those a pod asked for. */
#define TOKEN_SECONDS 3607

bool xp_serviceaccount_automount(const json_t *pod, const json_t *account)
{
        const json_t *own =
            json_object_get(json_object_get(pod, "spec"), "automountServiceAccountToken");
        const json_t *its = json_object_get(account, "automountServiceAccountToken");

        if (json_is_boolean(own))
                return json_is_true(own);
        if (json_is_boolean(its))
                return json_is_true(its);
        return true;
}

/*
 * Members set in order on a new object, which is returned (NULL when out of memory). Built by
 * hand rather than with json_pack(): a pod's admission adds these to every new pod, and the
 * format's parsing and the keys' UTF-8 checks were most of their cost. Keys are our ASCII
 * constants; string values are checked as json_string() checks them.
 */
static json_t *with(json_t *object, const char *key, json_t *value)
{
        if (!object) {
                json_decref(value);
                return NULL;
        }
        /* it takes value even when it fails */
        if (json_object_set_new_nocheck(object, key, value) == 0)
                return object;
        json_decref(object);
        return NULL;
}

static json_t *with_string(json_t *object, const char *key, const char *value)
{
        return with(object, key, json_string(value));
}

static json_t *one(json_t *element)
{
        json_t *list = json_array();

        /* it takes element even when it fails, with no list too */
        if (json_array_append_new(list, element) == 0)
                return list;
        json_decref(list);
        return NULL;
}

/* {"key": key, "path": path} */
static json_t *key_path(const char *key, const char *path)
{
        return with_string(with_string(json_object(), "key", key), "path", path);
}

/* The server's CA from the kube-root-ca.crt ConfigMap. */
static json_t *root_ca(void)
{
        return with_string(with(json_object(), "items", one(key_path("ca.crt", "ca.crt"))),
                           "name",
                           "kube-root-ca.crt");
}

/* The projected source: token, the CA when the server has one, the namespace. */
static json_t *projected_source(bool with_ca)
{
        json_t *token = with(with_string(json_object(), "path", "token"),
                             "expirationSeconds",
                             json_integer(TOKEN_SECONDS));
        json_t *field = with_string(
            with_string(json_object(), "apiVersion", "v1"), "fieldPath", "metadata.namespace");
        json_t *item = with_string(with(json_object(), "fieldRef", field), "path", "namespace");
        /* upstream's order: token, CA, namespace */
        json_t *parts[] = {
            with(json_object(), "serviceAccountToken", token),
            with_ca ? with(json_object(), "configMap", root_ca()) : NULL,
            with(json_object(), "downwardAPI", with(json_object(), "items", one(item))),
        };
        json_t *sources = json_array();
        bool failed = false;

        for (size_t i = 0; i < XP_ELEMENTSOF(parts); i++) {
                if (i == 1 && !with_ca)
                        continue;
                if (json_array_append_new(sources, parts[i]) < 0) /* takes it: */
                        failed = true; /* ...with no list, or out of memory */
        }
        if (failed) {
                json_decref(sources);
                return NULL;
        }
        return with(
            with(json_object(), "sources", sources), "defaultMode", json_integer(DEFAULT_MODE));
}

/*
 * The two projected sources (without and with the CA), built once and shared by every new pod:
 * about 60 allocations per pod that its body, its stored tree and the ring's readers would each
 * free again. Sharing is safe because nothing changes a pod's volume source once admitted: the
 * defaults find defaultMode set, the decode keeps the unmodelled source by reference, and the
 * stored tree is read-only for its readers. jansson counts references atomically.
 */
static json_t *shared_sources[2];
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_sources_build(void)
{
        shared_sources[0] = projected_source(false);
        shared_sources[1] = projected_source(true);
        /* a body's checks need not walk them on every create (test_serviceaccount_mount) */
        xp_json_shared_tree_mark(shared_sources[0]);
        xp_json_shared_tree_mark(shared_sources[1]);
}

/* The volume, named name, with its projected source (shared, or a new one without memory). */
static json_t *token_volume(const char *name, bool with_ca)
{
        json_t *source;

        pthread_once(&shared_once, shared_sources_build);
        source = shared_sources[with_ca] ? json_incref(shared_sources[with_ca])
                                         : projected_source(with_ca);
        return with(with_string(json_object(), "name", name), "projected", source);
}

/* The name of the pod's kube-api-access-* volume (the first), or NULL. */
static const char *existing_volume(const json_t *volumes)
{
        const json_t *v;
        size_t i;

        json_array_foreach(volumes, i, v)
        {
                const char *name = json_string_value(json_object_get(v, "name"));

                if (name && strncmp(name,
                                    XP_SERVICEACCOUNT_VOLUME_PREFIX,
                                    strlen(XP_SERVICEACCOUNT_VOLUME_PREFIX)) == 0)
                        return name;
        }
        return NULL;
}

/* Adds the mount to each container of list without one at the path: whether any got it,
 * or -ENOMEM. A container that is not an object, or whose volumeMounts are not a list, is left
 * to validation. */
static int mount_in(json_t *list, const char *name)
{
        json_t *c, *m;
        size_t i, j;
        int added = 0;

        json_array_foreach(list, i, c)
        {
                json_t *mounts = json_object_get(c, "volumeMounts");
                bool there = false;

                if (!json_is_object(c) ||
                    (mounts && !json_is_null(mounts) && !json_is_array(mounts)))
                        continue;
                json_array_foreach(mounts, j, m)
                {
                        const char *path = json_string_value(json_object_get(m, "mountPath"));

                        if (path && strcmp(path, XP_SERVICEACCOUNT_MOUNT_PATH) == 0)
                                there = true;
                }
                if (there)
                        continue;
                if (!json_is_array(mounts)) {
                        mounts = json_array();
                        if (json_object_set_new(c, "volumeMounts", mounts) < 0)
                                return -ENOMEM;
                }
                if (json_array_append_new(
                        mounts,
                        with(
                            with(with_string(json_object(), "name", name), "readOnly", json_true()),
                            "mountPath",
                            xp_json_literal(XP_SERVICEACCOUNT_MOUNT_PATH))) < 0)
                        return -ENOMEM;
                added = 1;
        }
        return added;
}

int xp_serviceaccount_mount(json_t *pod, const char *new_name, bool with_ca)
{
        json_t *spec = json_object_get(pod, "spec"), *volumes = json_object_get(spec, "volumes");
        const char *name = existing_volume(volumes);
        bool have = name != NULL;
        int init, app;

        if (!json_is_object(spec) || (volumes && !json_is_null(volumes) && !json_is_array(volumes)))
                return 0;
        if (!name)
                name = new_name;
        init = mount_in(json_object_get(spec, "initContainers"), name);
        app = init < 0 ? init : mount_in(json_object_get(spec, "containers"), name);
        if (init < 0 || app < 0)
                return -ENOMEM;
        if (have || !(init || app))
                return 0;
        if (!json_is_array(volumes)) {
                volumes = json_array();
                if (json_object_set_new(spec, "volumes", volumes) < 0)
                        return -ENOMEM;
        }
        return json_array_append_new(volumes, token_volume(name, with_ca)) < 0 ? -ENOMEM : 0;
}

int xp_serviceaccount_pull_secrets(json_t *pod, const json_t *account)
{
        json_t *spec = json_object_get(pod, "spec"), *mine,
               *theirs = json_object_get(account, "imagePullSecrets"), *s;
        size_t i;

        mine = json_object_get(spec, "imagePullSecrets");
        if (!json_is_object(spec) || json_array_size(mine) > 0 ||
            (mine && !json_is_null(mine) && !json_is_array(mine)) || json_array_size(theirs) == 0)
                return 0;
        mine = json_array();
        if (json_object_set_new(spec, "imagePullSecrets", mine) < 0)
                return -ENOMEM;
        /* only the names, as upstream copies them */
        json_array_foreach(theirs, i, s)
        {
                const char *name = json_string_value(json_object_get(s, "name"));

                if (json_array_append_new(mine, json_pack("{s:s}", "name", name ? name : "")) < 0)
                        return -ENOMEM;
        }
        return 0;
}

void xp_registry_serviceaccount_tokens(struct xp_registry *registry, bool tokens, bool root_ca)
{
        registry->pod_tokens = tokens;
        registry->pod_root_ca = root_ca;
}

int xp_registry_serviceaccount_admit(struct xp_registry *registry,
                                     json_t *pod,
                                     const json_t *account)
{
        char *name = NULL;
        int r = 0;

        /* no signing key: no token could be made for the volume */
        if (registry->pod_tokens && xp_serviceaccount_automount(pod, account)) {
                r = xp_registry_generate_name(XP_SERVICEACCOUNT_VOLUME_PREFIX, &name);
                if (r >= 0)
                        r = xp_serviceaccount_mount(pod, name, registry->pod_root_ca);
                free(name);
                if (r < 0)
                        return -ENOMEM;
        }
        return xp_serviceaccount_pull_secrets(pod, account);
}
