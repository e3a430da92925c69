/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's defaults as kube-apiserver sets them (xpool/poddefaults.h): the core/v1 defaulting
 * functions, then what the default admission plugins add. Kubernetes' Go fields are either
 * plain (a string is unset when "", a number when 0) or pointers (unset when absent); each
 * default below treats its field the way its Go type does.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "xpool/jsonliteral.h"
#include "xpool/object.h"
#include "xpool/poddefaults.h"
#include "xpool/quantity.h"
#include "xpool/resource.h"

#define GRACE_DEFAULT     30
#define DEFAULT_MODE      0644       /* secret, configMap, downwardAPI and projected volumes */
#define PRIORITY_NODE     2000001000 /* the built-in system-node-critical PriorityClass */
#define PRIORITY_CLUSTER  2000000000 /* system-cluster-critical */
#define TAINT_NOT_READY   "node.kubernetes.io/not-ready"
#define TAINT_UNREACHABLE "node.kubernetes.io/unreachable"

/* ---- setting what is unset ------------------------------------------------------------------ */

static bool unset_value(const json_t *v)
{
        return !v || json_is_null(v);
}

static bool unset(const json_t *object, const char *key)
{
        return unset_value(json_object_get(object, key));
}

/* A plain Go string: "" is unset too. One lookup of the key (a pod's create asks about 30). */
static bool unset_string(const json_t *object, const char *key)
{
        const json_t *v = json_object_get(object, key);

        return unset_value(v) || (json_is_string(v) && !json_string_length(v));
}

/* A plain Go integer: 0 is unset too. */
static bool unset_number(const json_t *object, const char *key)
{
        const json_t *v = json_object_get(object, key);

        return unset_value(v) || (json_is_integer(v) && json_integer_value(v) == 0);
}

/* Sets key to value (taken) on an object; NULL value: -ENOMEM. Every key is an ASCII literal of
 * this file: no UTF-8 check of each (a pod's create sets about a dozen). */
static int put(json_t *object, const char *key, json_t *value)
{
        if (!value)
                return -ENOMEM;
        return json_object_set_new_nocheck(object, key, value) < 0 ? -ENOMEM : 0;
}

/* value is an ASCII literal of this file, as key is: one node shared by every pod
 * (xpool/jsonliteral.h). */
static int default_string(json_t *object, const char *key, const char *value)
{
        return unset_string(object, key) ? put(object, key, xp_json_literal(value)) : 0;
}

static int default_number(json_t *object, const char *key, json_int_t value)
{
        return unset_number(object, key) ? put(object, key, xp_json_integer(value)) : 0;
}

/* ---- containers ----------------------------------------------------------------------------- */

/* SetDefaults_Container: :latest, or no tag and no digest, is pulled Always. */
static const char *pull_policy(const char *image)
{
        const char *name = strrchr(image, '/'), *tag;

        name = name ? name + 1 : image;
        if (strchr(name, '@'))
                return "IfNotPresent";
        tag = strrchr(name, ':');
        return !tag || strcmp(tag + 1, "latest") == 0 ? "Always" : "IfNotPresent";
}

/* SetDefaults_Pod: requests default to limits, resource by resource. */
static int requests_from_limits(json_t *container)
{
        json_t *resources = json_object_get(container, "resources"), *limits, *requests, *value;
        const char *name;

        limits = json_object_get(resources, "limits");
        if (!json_is_object(limits) || !json_object_size(limits))
                return 0;
        if (unset(resources, "requests") && put(resources, "requests", json_object()) < 0)
                return -ENOMEM;
        requests = json_object_get(resources, "requests");
        if (!json_is_object(requests))
                return 0;
        json_object_foreach(limits, name, value)
        {
                if (!json_object_get(requests, name) && json_object_set(requests, name, value) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* SetDefaults_Probe and SetDefaults_HTTPGetAction. */
static int probe_defaults(json_t *probe)
{
        json_t *http = json_object_get(probe, "httpGet");
        int r = 0;

        if (!json_is_object(probe))
                return 0;
        r |= default_number(probe, "timeoutSeconds", 1);
        r |= default_number(probe, "periodSeconds", 10);
        r |= default_number(probe, "successThreshold", 1);
        r |= default_number(probe, "failureThreshold", 3);
        if (json_is_object(http)) {
                r |= default_string(http, "path", "/");
                r |= default_string(http, "scheme", "HTTP");
        }
        return r < 0 ? -ENOMEM : 0;
}

/* SetDefaults_ContainerPort, and the host network's hostPort (SetDefaults_Pod). */
static int port_defaults(json_t *container, bool host_network)
{
        json_t *port;
        size_t i;

        json_array_foreach(json_object_get(container, "ports"), i, port)
        {
                json_t *number = json_object_get(port, "containerPort");

                if (!json_is_object(port))
                        continue;
                if (default_string(port, "protocol", "TCP") < 0)
                        return -ENOMEM;
                if (host_network && json_is_integer(number) && unset_number(port, "hostPort") &&
                    put(port, "hostPort", json_integer(json_integer_value(number))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* SetDefaults_ObjectFieldSelector: a fieldRef's apiVersion is v1. */
static int env_defaults(json_t *container)
{
        json_t *env;
        size_t i;

        json_array_foreach(json_object_get(container, "env"), i, env)
        {
                json_t *ref = json_object_get(json_object_get(env, "valueFrom"), "fieldRef");

                if (json_is_object(ref) && default_string(ref, "apiVersion", "v1") < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int container_defaults(json_t *c, bool host_network)
{
        static const char *const probes[] = {"livenessProbe", "readinessProbe", "startupProbe"};
        const char *image = json_string_value(json_object_get(c, "image"));
        json_t *lifecycle = json_object_get(c, "lifecycle");
        int r = 0;

        if (!json_is_object(c))
                return 0;
        /* xpool's process containers run a command without an image: nothing to pull */
        if (image && image[0])
                r |= default_string(c, "imagePullPolicy", pull_policy(image));
        r |= default_string(c, "terminationMessagePath", "/dev/termination-log");
        r |= default_string(c, "terminationMessagePolicy", "File");
        r |= port_defaults(c, host_network);
        r |= requests_from_limits(c);
        r |= env_defaults(c);
        for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
                r |= probe_defaults(json_object_get(c, probes[i]));
        if (json_is_object(lifecycle)) {
                const char *hooks[] = {"postStart", "preStop"};

                for (size_t i = 0; i < 2; i++) {
                        json_t *http =
                            json_object_get(json_object_get(lifecycle, hooks[i]), "httpGet");

                        if (json_is_object(http))
                                r |= default_string(http, "path", "/") |
                                     default_string(http, "scheme", "HTTP");
                }
        }
        return r < 0 ? -ENOMEM : 0;
}

/* ---- volumes -------------------------------------------------------------------------------- */

/* SetDefaults_Volume (no source: an emptyDir) and the sources' defaultMode and type. */
static int volume_defaults(json_t *volume)
{
        static const char *const moded[] = {"secret", "configMap", "downwardAPI", "projected"};
        json_t *host_path = json_object_get(volume, "hostPath");
        int r = 0;

        if (!json_is_object(volume))
                return 0;
        if (json_object_size(volume) == 1 && json_object_get(volume, "name"))
                return put(volume, "emptyDir", json_object());
        for (size_t i = 0; i < sizeof(moded) / sizeof(moded[0]); i++) {
                json_t *source = json_object_get(volume, moded[i]);

                if (json_is_object(source) && unset(source, "defaultMode"))
                        r |= put(source, "defaultMode", xp_json_integer(DEFAULT_MODE));
        }
        if (json_is_object(host_path) && unset(host_path, "type"))
                r |= put(host_path, "type", xp_json_literal(""));
        return r < 0 ? -ENOMEM : 0;
}

/* ---- the admission plugins' ----------------------------------------------------------------- */

/* ServiceAccount: the "default" account; serviceAccount mirrors serviceAccountName. */
static int service_account(json_t *spec)
{
        const char *old = json_string_value(json_object_get(spec, "serviceAccount"));
        json_t *name;

        if (unset_string(spec, "serviceAccountName") &&
            put(spec,
                "serviceAccountName",
                old && old[0] ? json_string(old) : xp_json_literal("default")) < 0)
                return -ENOMEM;
        /* the same node: nothing changes a string in place (xpool/jsonliteral.h) */
        name = json_object_get(spec, "serviceAccountName");
        return json_is_string(name) ? put(spec, "serviceAccount", json_incref(name)) : 0;
}

/* Priority: the class's value (0 without one), PreemptLowerPriority; an update keeps both. */
static int priority(json_t *spec, const json_t *old_spec)
{
        const char *class = json_string_value(json_object_get(spec, "priorityClassName"));
        int r = 0;

        if (unset(spec, "priority")) {
                const json_t *kept = json_object_get(old_spec, "priority");

                if (json_is_integer(kept))
                        r |= put(spec, "priority", json_deep_copy(kept));
                else if (!class || !class[0])
                        r |= put(spec, "priority", xp_json_integer(0));
                else if (strcmp(class, "system-node-critical") == 0)
                        r |= put(spec, "priority", json_integer(PRIORITY_NODE));
                else if (strcmp(class, "system-cluster-critical") == 0)
                        r |= put(spec, "priority", json_integer(PRIORITY_CLUSTER));
        }
        if (unset(spec, "preemptionPolicy")) {
                const json_t *kept = json_object_get(old_spec, "preemptionPolicy");

                r |= put(spec,
                         "preemptionPolicy",
                         json_is_string(kept) ? json_deep_copy(kept)
                                              : xp_json_literal("PreemptLowerPriority"));
        }
        return r < 0 ? -ENOMEM : 0;
}

/* Whether toleration covers the NoExecute taint of key, as DefaultTolerationSeconds reads it. */
static bool covers(const json_t *toleration, const char *key)
{
        const char *k = json_string_value(json_object_get(toleration, "key"));
        const char *effect = json_string_value(json_object_get(toleration, "effect"));

        return (!k || !k[0] || strcmp(k, key) == 0) &&
               (!effect || !effect[0] || strcmp(effect, "NoExecute") == 0);
}

/* {"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds},
 * built member by member: json_pack()'s format parsing was most of its cost on every pod */
static json_t *toleration(const char *taint, int64_t seconds)
{
        json_t *t = json_object();

        if (t && (json_object_set_new_nocheck(t, "key", json_string_nocheck(taint)) < 0 ||
                  json_object_set_new_nocheck(t, "operator", json_string_nocheck("Exists")) < 0 ||
                  json_object_set_new_nocheck(t, "effect", json_string_nocheck("NoExecute")) < 0 ||
                  json_object_set_new_nocheck(t, "tolerationSeconds", json_integer(seconds)) < 0)) {
                json_decref(t);
                return NULL;
        }
        return t;
}

static const char *const taints[] = {TAINT_NOT_READY, TAINT_UNREACHABLE};

/*
 * The two tolerations with the default seconds, built once and shared by every new pod's body
 * (26 allocations a pod, freed again with the body once decoded). Nothing changes a toleration
 * once added: the decode copies it into the model, and the update check compares copies.
 * jansson counts references atomically.
 */
static json_t *shared_tolerations[2];
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_tolerations_build(void)
{
        for (size_t k = 0; k < 2; k++) {
                shared_tolerations[k] = toleration(taints[k], XP_POD_DEFAULT_TOLERATION_SECONDS);
                /* a body's checks need not walk them on every create (test_pod_defaults) */
                xp_json_shared_tree_mark(shared_tolerations[k]);
        }
}

static json_t *default_toleration(size_t k, int64_t seconds)
{
        if (seconds != XP_POD_DEFAULT_TOLERATION_SECONDS)
                return toleration(taints[k], seconds);
        pthread_once(&shared_once, shared_tolerations_build);
        return shared_tolerations[k] ? json_incref(shared_tolerations[k])
                                     : toleration(taints[k], seconds);
}

/* DefaultTolerationSeconds: pods ride out a node that is briefly not ready or unreachable. */
static int default_tolerations(json_t *spec, int64_t seconds)
{
        json_t *tolerations = json_object_get(spec, "tolerations"), *t;
        size_t i;

        if (unset(spec, "tolerations")) {
                if (put(spec, "tolerations", json_array()) < 0)
                        return -ENOMEM;
                tolerations = json_object_get(spec, "tolerations");
        }
        if (!json_is_array(tolerations))
                return 0;
        for (size_t k = 0; k < 2; k++) {
                bool covered = false;

                json_array_foreach(tolerations, i, t) covered = covered || covers(t, taints[k]);
                if (!covered &&
                    json_array_append_new(tolerations, default_toleration(k, seconds)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* ---- the pod -------------------------------------------------------------------------------- */

/* SetDefaults_PodSpec and SetDefaults_Pod's enableServiceLinks. */
static int spec_defaults(json_t *spec)
{
        int r = 0;

        r |= default_string(spec, "restartPolicy", "Always");
        r |= default_string(spec, "dnsPolicy", "ClusterFirst");
        r |= default_string(spec, "schedulerName", "default-scheduler");
        if (unset(spec, "terminationGracePeriodSeconds"))
                r |= put(spec, "terminationGracePeriodSeconds", xp_json_integer(GRACE_DEFAULT));
        if (unset(spec, "securityContext"))
                r |= put(spec, "securityContext", json_object());
        if (unset(spec, "enableServiceLinks"))
                r |= put(spec, "enableServiceLinks", json_true());
        return r < 0 ? -ENOMEM : 0;
}

int xp_pod_defaults_apply(json_t *pod, const struct xp_pod_defaults *options)
{
        const struct xp_pod_defaults none = {0};
        const struct xp_pod_defaults *o = options ? options : &none;
        json_t *spec = json_object_get(pod, "spec"), *item;
        bool host_network;
        size_t i;
        int r = 0;

        if (!json_is_object(spec))
                return 0; /* the codec says what is wrong */
        host_network = json_is_true(json_object_get(spec, "hostNetwork"));
        r |= spec_defaults(spec);
        json_array_foreach(json_object_get(spec, "containers"), i, item) r |=
            container_defaults(item, host_network);
        json_array_foreach(json_object_get(spec, "initContainers"), i, item) r |=
            container_defaults(item, host_network);
        json_array_foreach(json_object_get(spec, "volumes"), i, item) r |= volume_defaults(item);
        if (o->template_only)
                return r < 0 ? -ENOMEM : 0;
        r |= service_account(spec);
        r |= priority(spec, json_object_get(o->old, "spec"));
        r |= default_tolerations(spec,
                                 o->toleration_seconds > 0 ? o->toleration_seconds
                                                           : XP_POD_DEFAULT_TOLERATION_SECONDS);
        return r < 0 ? -ENOMEM : 0;
}

/* ---- QoS class ------------------------------------------------------------------------------ */

/* The sums of one QoS resource (cpu or memory) over the pod's containers. */
struct qos_sum {
        struct xp_quantity requests, limits;
        bool requested, limited;
};

/* Adds a container's positive requests and limits of cpu and memory; false when it does not
 * limit both (then the pod is not Guaranteed). */
static bool qos_add(const struct xp_container *c, struct qos_sum sums[2])
{
        static const char *const names[2] = {XP_RESOURCE_CPU, XP_RESOURCE_MEMORY};
        bool limits_both = true;

        for (size_t i = 0; i < 2; i++) {
                const struct xp_quantity *req =
                    xp_resource_list_get(&c->resources.requests, names[i]);
                const struct xp_quantity *lim =
                    xp_resource_list_get(&c->resources.limits, names[i]);

                /* a sum out of range stays as it was: no pod asks for 10^18 cores */
                if (req && xp_quantity_sign(req) > 0) {
                        sums[i].requested = true;
                        (void)xp_quantity_add(&sums[i].requests, req, &sums[i].requests);
                }
                if (lim && xp_quantity_sign(lim) > 0) {
                        sums[i].limited = true;
                        (void)xp_quantity_add(&sums[i].limits, lim, &sums[i].limits);
                } else {
                        limits_both = false;
                }
        }
        return limits_both;
}

const char *xp_pod_qos_class(const struct xp_pod *pod)
{
        struct qos_sum sums[2] = {
            {.requests = xp_quantity_from_int(0), .limits = xp_quantity_from_int(0)},
            {.requests = xp_quantity_from_int(0), .limits = xp_quantity_from_int(0)}};
        bool guaranteed = true, any = false;

        for (size_t i = 0; i < pod->spec.containers.n; i++)
                guaranteed &= qos_add(&pod->spec.containers.items[i], sums);
        for (size_t i = 0; i < pod->spec.init_containers.n; i++)
                guaranteed &= qos_add(&pod->spec.init_containers.items[i], sums);
        for (size_t i = 0; i < 2; i++) {
                any |= sums[i].requested || sums[i].limited;
                if (sums[i].requested &&
                    (!sums[i].limited || xp_quantity_cmp(&sums[i].requests, &sums[i].limits)))
                        guaranteed = false;
                if (sums[i].requested != sums[i].limited)
                        guaranteed = false;
        }
        if (!any)
                return "BestEffort";
        return guaranteed ? "Guaranteed" : "Burstable";
}
