/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod subresources beyond status: binding (the registry's xp_registry_pod_bind()) and log (served
 * by the node's agent).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "internal.h"
#include "xpool/macro.h"
#include "xpool/podlog.h"
#include "xpool/strutil.h"

int handle_binding(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *binding, *target, *annotations;
        const char *node, *target_kind, *name;
        int r = 0;

        binding = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(binding)) {
                json_decref(binding);
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    pods->plural,
                                    "the request body must be a Binding as a JSON object");
        }
        target = json_object_get(binding, "target");
        node = json_string_value(json_object_get(target, "name"));
        target_kind = json_string_value(json_object_get(target, "kind"));
        name = json_string_value(json_object_get(json_object_get(binding, "metadata"), "name"));
        annotations = json_object_get(json_object_get(binding, "metadata"), "annotations");
        if (!node || !node[0] ||
            (target_kind && target_kind[0] && strcmp(target_kind, "Node") != 0) ||
            (name && strcmp(name, req->name) != 0)) {
                json_decref(binding);
                return reply_status(
                    ret,
                    422,
                    "Invalid",
                    req->name,
                    "bindings",
                    "Binding \"%s\" is invalid: target: the target must name a Node, and metadata.name the pod",
                    req->name);
        }

        r = xp_registry_pod_bind(
            req->api->registry, req->namespace, req->name, node, annotations, 0, NULL, &err);
        if (r == -EALREADY || r == -EBUSY)
                r = reply_status(ret,
                                 409,
                                 "Conflict",
                                 req->name,
                                 "bindings",
                                 "Operation cannot be fulfilled on pods/binding \"%s\": %s",
                                 req->name,
                                 xp_error_message(&err));
        else if (r < 0)
                r = reply_store_error(ret, r, pods, req->name, &err);
        else
                r = reply_success(ret, 201);
        json_decref(binding);
        return r;
}

/* Appends " NAME" for each container of list (a JSON array) to buf. */
static void list_names(const json_t *list, char *buf, size_t size)
{
        size_t i, len;
        json_t *c;

        json_array_foreach(list, i, c)
        {
                const char *name = json_string_value(json_object_get(c, "name"));

                len = strlen(buf);
                if (name && len + 1 < size)
                        snprintf(buf + len, size - len, "%s%s", len > 0 ? " " : "", name);
        }
}

static bool has_container(const json_t *list, const char *name)
{
        size_t i;
        json_t *c;

        json_array_foreach(list, i, c)
        {
                if (xp_streq0(json_string_value(json_object_get(c, "name")), name))
                        return true;
        }
        return false;
}

/* Where the agent of node serves logs: 1 with host and port, else 0 with ret filled (503). */
int node_log_endpoint(const struct request *req,
                      const char *node,
                      char host[static 64],
                      unsigned *port,
                      struct reply *ret)
{
        struct xp_error err = {0};
        json_t *obj, *status, *addr;
        json_int_t p;
        uint64_t version;
        size_t i;
        int r;

        r = xp_store_get(req->api->store, "nodes", "", node, &obj, &version, &err);
        if (r == -ENOENT)
                return reply_status(
                    ret,
                    503,
                    "ServiceUnavailable",
                    req->name,
                    "pods",
                    "the logs of pod \"%s\" are kept on node \"%s\", which does not exist (any more)",
                    req->name,
                    node);
        if (r < 0)
                return reply_status(ret,
                                    500,
                                    "InternalError",
                                    req->name,
                                    "pods",
                                    "cannot read node \"%s\": %s",
                                    node,
                                    xp_error_message(&err));
        status = json_object_get(obj, "status");
        host[0] = '\0';
        json_array_foreach(json_object_get(status, "addresses"), i, addr)
        {
                const char *a = json_string_value(json_object_get(addr, "address"));

                if (xp_streq0(json_string_value(json_object_get(addr, "type")), "InternalIP") &&
                    a && strlen(a) < 64) {
                        snprintf(host, 64, "%s", a);
                        break;
                }
        }
        p = json_integer_value(json_object_get(
            json_object_get(json_object_get(status, "daemonEndpoints"), "kubeletEndpoint"),
            "Port"));
        json_decref(obj);
        if (!host[0] || p <= 0 || p > 65535)
                return reply_status(
                    ret,
                    503,
                    "ServiceUnavailable",
                    req->name,
                    "pods",
                    "the logs of pod \"%s\" are kept by the xpool agent on node \"%s\", and the node reports no %s: is its agent running?",
                    req->name,
                    node,
                    !host[0] ? "InternalIP address (status.addresses)"
                             : "log endpoint (status.daemonEndpoints.kubeletEndpoint.Port)");
        *port = (unsigned)p;
        /* xpool up's own agent listens on 127.0.0.1 only, whatever its Node's InternalIP */
        if (req->api->local_node && xp_streq0(node, req->api->local_node))
                snprintf(host, 64, "127.0.0.1");
        return 1;
}

/*
 * The container whose log is asked for: ?container=, or the only one. 1 with *ret_container
 * (borrowed from pod), else 0 with ret filled (400).
 */
int pod_container(const struct request *req,
                  const struct xp_kind *pods,
                  const json_t *pod,
                  const char **ret_container,
                  struct reply *ret)
{
        const json_t *spec = json_object_get(pod, "spec");
        const json_t *containers = json_object_get(spec, "containers");
        const json_t *inits = json_object_get(spec, "initContainers");
        const char *container = request_query(req, "container");
        char names[1024] = "", inames[1024] = "";

        list_names(containers, names, sizeof names);
        list_names(inits, inames, sizeof inames);
        if (container && container[0]) {
                if (!has_container(containers, container) && !has_container(inits, container))
                        return reply_status(ret,
                                            400,
                                            "BadRequest",
                                            req->name,
                                            pods->plural,
                                            "container %s is not valid for pod %s",
                                            container,
                                            req->name);
        } else if (json_array_size(containers) == 1) {
                container =
                    json_string_value(json_object_get(json_array_get(containers, 0), "name"));
        } else {
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    pods->plural,
                    "a container name must be specified for pod %s, choose one of: [%s]%s%s%s",
                    req->name,
                    names,
                    inames[0] ? " or one of the init containers: [" : "",
                    inames,
                    inames[0] ? "]" : "");
        }
        *ret_container = container;
        return 1;
}

static const char *query_of(void *userdata, const char *name)
{
        return request_query(userdata, name);
}

/* The agent's path and query for the log: 1 with *ret_path, else 0 with ret filled, or -ENOMEM. */
static int log_path(const struct request *req,
                    const struct xp_kind *pods,
                    const json_t *pod,
                    const char *container,
                    const char *uid,
                    char **ret_path,
                    bool *ret_follow,
                    struct reply *ret)
{
        _cleanup_free_ char *query = NULL;
        struct xp_pod_log_options o;
        struct xp_pod_log_refusal bad;
        char *path, waiting[1024], owner[17];

        if (xp_pod_log_options_parse(query_of, (void *)req, &o, &bad) < 0)
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    req->name,
                                    pods->plural,
                                    "%s: Invalid value: \"%s\": want %s",
                                    bad.option,
                                    bad.value,
                                    bad.want);
        /* no log before the container's first start: the kubelet's 400, not the agent's 404 */
        if (xp_pod_log_not_started(pod, container, o.previous, waiting, sizeof(waiting)))
                return reply_status(ret, 400, "BadRequest", req->name, pods->plural, "%s", waiting);
        /* who asked, signed with the rest: a follow counts against their share on the node */
        api_stream_owner(req, owner);
        if (xp_pod_log_options_query(&o, (int64_t)time(NULL), &query) < 0 ||
            asprintf(&path,
                     "/containerLogs/%s/%s/%s?podUID=%s%s%s%s%s",
                     req->namespace,
                     req->name,
                     container,
                     uid,
                     owner[0] ? "&xpoolUser=" : "",
                     owner,
                     query[0] ? "&" : "",
                     query) < 0)
                return -ENOMEM;
        *ret_path = path;
        *ret_follow = o.follow;
        return 1;
}

/* Proxies the log request to the agent of node, signed with the node's key. */
static int log_from_node(const struct request *req,
                         const struct xp_kind *pods,
                         const char *node,
                         const char *path,
                         bool follow,
                         struct reply *ret)
{
        char host[64], key_id[XP_TOKEN_ID_LEN + 1];
        uint8_t key[AUTH_KEY_LEN];
        unsigned port = 0;
        int r;

        r = node_log_endpoint(req, node, host, &port, ret);
        if (r <= 0)
                return r;
        if (!req->api->auth || auth_node_key(req->api->auth, node, key_id, key) < 0)
                return reply_status(
                    ret,
                    503,
                    "ServiceUnavailable",
                    req->name,
                    pods->plural,
                    "the server has no node token for node \"%s\" to sign the log request to its agent with: create one with `xpool token create --node %s`",
                    node,
                    node);
        return log_proxy(req, node, host, port, path, key_id, key, follow, ret);
}

int handle_log(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct xp_kind *pods = route->kind;
        struct xp_error err = {0};
        const char *node, *container = NULL, *uid;
        _cleanup_free_ char *path = NULL;
        json_t *pod = NULL;
        uint64_t version;
        bool follow = false;
        int r;

        r = xp_store_get(
            req->api->store, pods->plural, req->namespace, req->name, &pod, &version, &err);
        if (r < 0)
                return reply_store_error(ret, r, pods, req->name, &err);
        node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        if (!node || !node[0]) {
                r = reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    pods->plural,
                    "pod \"%s\" has no node yet: its logs exist once it is scheduled and started",
                    req->name);
                goto out;
        }
        r = pod_container(req, pods, pod, &container, ret);
        if (r <= 0)
                goto out;
        if (!container || !uid) {
                r = reply_status(ret,
                                 500,
                                 "InternalError",
                                 req->name,
                                 pods->plural,
                                 "pod \"%s\" has no container name or uid",
                                 req->name);
                goto out;
        }
        r = log_path(req, pods, pod, container, uid, &path, &follow, ret);
        if (r > 0)
                r = log_from_node(req, pods, node, path, follow, ret);
out:
        json_decref(pod);
        return r;
}
