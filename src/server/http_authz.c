/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authorisation of an authenticated request for its route (auth.h has the rules): the verb, the
 * resource, and for a node's writes to pods, whether the pod is bound to that node.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "http.h"
#include "internal.h"
#include "ui.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/nodegraph.h"
#include "xpool/store.h"

static enum auth_verb
auth_verb_of(enum http_method m, const struct route *route, const struct request *req)
{
        /* exec, attach, portforward are create, whichever method carries them (pods/exec is not
         * read access): a WebSocket comes as GET, SPDY as POST */
        if (route->subresource &&
            (strcmp(route->subresource, "exec") == 0 || strcmp(route->subresource, "attach") == 0 ||
             strcmp(route->subresource, "portforward") == 0))
                return AUTH_CREATE;
        switch (m) {
        case HTTP_GET:
                if (req->name)
                        return AUTH_GET;
                return request_is_watch(req) ? AUTH_WATCH : AUTH_LIST;
        case HTTP_POST:
                return AUTH_CREATE;
        case HTTP_PUT:
                return AUTH_UPDATE;
        case HTTP_PATCH:
                return AUTH_PATCH;
        case HTTP_DELETE:
        default:
                return AUTH_DELETE;
        }
}

/* The name a create gives its object, which a node's rules look at (its own Node, Lease). */
static char *created_name(const struct request *req)
{
        json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
        const char *name =
            json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
        char *copy = name ? strdup(name) : NULL;

        json_decref(body);
        return copy;
}

/* Whether the route is core/v1 Events (not events.k8s.io's, whose rules differ). */
static bool core_events(const struct route *route, const struct request *req)
{
        const char *group = route->group ? route->group : req->group;
        const char *resource = route->kind ? xp_kind_url_plural(route->kind) : route->resource;

        return (!group || !group[0]) && resource && strcmp(resource, "events") == 0;
}

/* Whether the pod of the request is bound to the node (a node token's writes to its pods). */
/* 1: the pod is bound to the node; 0: it is not; -ENOENT: there is no such pod. */
static int pod_on_node(const struct request *req, const char *node)
{
        json_t *pod;
        uint64_t version;
        const char *bound;
        int r;

        /* the pod as the event log's readers share it (a recent write's), not parsed again: the
         * agent's status write reads the pod the scheduler or the agent itself wrote a moment
         * ago, and its handlers only look at what they are handed (api_objects.c) */
        r = xp_store_get_shared(
            req->api->store, "pods", req->namespace, req->name, &pod, &version, NULL);
        if (r < 0)
                return r == -ENOENT ? r : 0;
        bound = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        r = bound && strcmp(bound, node) == 0;
        /* the agent's status writes: the handler goes on from this read */
        if (r && req->prefetched && !req->prefetched->pod)
                *req->prefetched = (struct prefetched){.pod = json_incref(pod), .version = version};
        json_decref(pod);
        return r;
}

bool http_node_references(struct xp_node_graph *graph,
                          const char *resource,
                          const char *ns,
                          const char *name,
                          const char *node)
{
        enum xp_pod_ref_kind kind =
            strcmp(resource, "secrets") == 0 ? XP_POD_REF_SECRET : XP_POD_REF_CONFIGMAP;
        struct xp_error err = {0};
        int r;

        if (!graph || !ns || !name)
                return false;
        r = xp_node_graph_references(graph, kind, ns, name, node, &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "xpool server: node %s's read of %s %s/%s is refused: the pods cannot be "
                       "read: %s",
                       node,
                       resource,
                       ns,
                       name,
                       err.msg[0] ? xp_error_message(&err) : strerror(-r));
        return r > 0;
}

/* The paths anyone may read, as Kubernetes lets anyone see the server is there. */
bool http_path_is_public(const char *method, const char *path)
{
        static const char *const public_paths[] = {"/version", "/healthz", "/livez", "/readyz"};

        if (strcmp(method, "GET") != 0)
                return false;
        if (ui_path_is_public(path))
                return true;
        for (size_t i = 0; i < XP_ELEMENTSOF(public_paths); i++)
                if (strcmp(path, public_paths[i]) == 0)
                        return true;
        return false;
}

/*
 * Authorises an authenticated request for a route: 1 when it may go on, else 0 with ret filled
 * (403 Forbidden; 404 for a node acting on a pod that does not exist), as Kubernetes answers.
 */
int http_authorize(const struct route *route,
                   const struct request *req,
                   const struct auth_identity *who,
                   struct reply *ret)
{
        _cleanup_free_ char *name = NULL;
        enum auth_decision decision;
        char reason[1024], user[XP_TOKEN_SUBJECT_MAX + 32];

        /* a node may create any Event, whatever its name: its Events (three for each short pod)
         * are not parsed twice */
        if (req->method == HTTP_POST && !route->subresource && who->role == XP_TOKEN_NODE &&
            !core_events(route, req))
                name = created_name(req);

        struct auth_request areq = {
            .verb = auth_verb_of(req->method, route, req),
            .group = route->group ? route->group : req->group,
            .resource = route->kind ? xp_kind_url_plural(route->kind) : route->resource,
            .subresource = route->subresource,
            .namespace = req->namespace,
            .name = req->name ? req->name : name,
            .path = req->path,
        };
        decision = auth_authorize(who, &areq, reason, sizeof reason);
        if (decision == AUTH_ALLOW_IF_POD_ON_NODE) {
                int on = pod_on_node(req, who->subject);

                /* a node may read every pod, so a missing one is NotFound (as the kubelet gets
                 * from Kubernetes for the status of a pod deleted meanwhile), not Forbidden */
                if (on == -ENOENT)
                        return reply_status(ret,
                                            404,
                                            "NotFound",
                                            req->name,
                                            "pods",
                                            "pods \"%s\" not found",
                                            req->name ? req->name : "");
                if (on > 0)
                        decision = AUTH_ALLOW;
        }
        if (decision == AUTH_ALLOW_IF_REFERENCED &&
            http_node_references(
                req->api->node_graph, areq.resource, req->namespace, req->name, who->subject))
                decision = AUTH_ALLOW;
        if (decision == AUTH_ALLOW)
                return 1;
        if (decision == AUTH_ALLOW_IF_POD_ON_NODE) {
                auth_user_name(who, user, sizeof user);
                snprintf(
                    reason,
                    sizeof reason,
                    "pods \"%s\" is forbidden: User \"%s\" may only access pods bound to node \"%s\"",
                    req->name ? req->name : "",
                    user,
                    who->subject);
        }
        return reply_status(ret,
                            403,
                            "Forbidden",
                            req->name,
                            route->kind ? xp_kind_url_plural(route->kind) : route->resource,
                            "%s",
                            reason);
}
