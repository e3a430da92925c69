/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `kubernetes` Service in `default`, its Endpoints and its EndpointSlice, written at the
 * server's start and set right when they differ, as kube-apiserver's controller and
 * EndpointReconciler keep them: port 443 "https" of the range's first address to the server's
 * own address and port. `kubectl cluster-info` and in-cluster clients look for them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "xpool/doc.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

/* The address others reach a server listening on host at: a wildcard's first address that is
 * not loopback (as kube-apiserver's advertise address), else loopback. */
static void advertised(const char *host, char buf[static INET6_ADDRSTRLEN], bool *ipv6)
{
        struct ifaddrs *list = NULL, *i;

        *ipv6 = strchr(host, ':') != NULL;
        snprintf(buf, INET6_ADDRSTRLEN, "%s", host);
        if (strcmp(host, "0.0.0.0") != 0 && strcmp(host, "::") != 0)
                return;
        *ipv6 = false;
        snprintf(buf, INET6_ADDRSTRLEN, "127.0.0.1");
        if (getifaddrs(&list) < 0)
                return;
        for (i = list; i; i = i->ifa_next) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)i->ifa_addr;

                if (in && in->sin_family == AF_INET && ntohl(in->sin_addr.s_addr) >> 24 != 127) {
                        inet_ntop(AF_INET, &in->sin_addr, buf, INET6_ADDRSTRLEN);
                        break;
                }
        }
        freeifaddrs(list);
}

/* The members of want (an object's top-level ones and spec's) stored differs in, set as want's. */
static int set_like(json_t *stored, void *userdata)
{
        const json_t *want = userdata;
        const char *key;
        json_t *value;
        int changed = 0;

        json_object_foreach((json_t *)want, key, value)
        {
                json_t *now = json_object_get(stored, key);

                if (strcmp(key, "metadata") == 0 || json_equal(now, value))
                        continue;
                if (strcmp(key, "spec") == 0 && json_is_object(now)) {
                        int r = set_like(now, value);

                        if (r < 0)
                                return r;
                        changed |= r;
                        continue;
                }
                if (json_object_set(stored, key, value) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        return changed;
}

/* Creates the object (JSON, taken) of kind in default, or sets the stored one like it. */
static int ensure(struct api *api, const struct xp_kind *kind, json_t *want, struct xp_error *err)
{
        struct xp_doc *doc = NULL;
        json_t *out = NULL;
        int r;

        if (!want)
                return -ENOMEM;
        r = xp_doc_from_json(kind, want, NULL, 0, &doc, err);
        if (r >= 0)
                r = xp_registry_namespace_hold(api->registry, "default", err);
        if (r >= 0) {
                r = xp_registry_create(api->registry, kind, "default", doc, NULL, false, &out, err);
                xp_registry_namespace_release(api->registry, "default");
        }
        if (r == -EEXIST) {
                *err = (struct xp_error){0};
                r = xp_registry_change(api->registry,
                                       kind->plural,
                                       "default",
                                       "kubernetes",
                                       set_like,
                                       want,
                                       NULL,
                                       err);
        }
        json_decref(out);
        json_decref(want);
        if (doc)
                xp_doc_free(doc);
        return r < 0 ? r : 0;
}

int service_kubernetes_reconcile(
    struct api *api, const char *cluster_ip, const char *host, uint16_t port, struct xp_error *err)
{
        char address[INET6_ADDRSTRLEN];
        bool ipv6;
        int r;

        advertised(host, address, &ipv6);
        r = ensure(api,
                   &xp_kind_service,
                   json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}},"
                             " s:{s:s, s:[s], s:[{s:s, s:i, s:s, s:i}], s:s, s:s}}",
                             "apiVersion",
                             "v1",
                             "kind",
                             "Service",
                             "metadata",
                             "name",
                             "kubernetes",
                             "namespace",
                             "default",
                             "labels",
                             "component",
                             "apiserver",
                             "provider",
                             "kubernetes",
                             "spec",
                             "clusterIP",
                             cluster_ip,
                             "clusterIPs",
                             cluster_ip,
                             "ports",
                             "name",
                             "https",
                             "port",
                             443,
                             "protocol",
                             "TCP",
                             "targetPort",
                             (int)port,
                             "type",
                             "ClusterIP",
                             "sessionAffinity",
                             "None"),
                   err);
        if (r >= 0)
                r = ensure(api,
                           &xp_kind_endpoints,
                           json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}},"
                                     " s:[{s:[{s:s}], s:[{s:s, s:i, s:s}]}]}",
                                     "apiVersion",
                                     "v1",
                                     "kind",
                                     "Endpoints",
                                     "metadata",
                                     "name",
                                     "kubernetes",
                                     "namespace",
                                     "default",
                                     "labels",
                                     "endpointslice.kubernetes.io/skip-mirror",
                                     "true",
                                     "subsets",
                                     "addresses",
                                     "ip",
                                     address,
                                     "ports",
                                     "name",
                                     "https",
                                     "port",
                                     (int)port,
                                     "protocol",
                                     "TCP"),
                           err);
        if (r >= 0)
                r = ensure(api,
                           &xp_kind_endpointslice,
                           json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s,"
                                     " s:[{s:[s], s:{s:b}}], s:[{s:s, s:i, s:s}]}",
                                     "apiVersion",
                                     "discovery.k8s.io/v1",
                                     "kind",
                                     "EndpointSlice",
                                     "metadata",
                                     "name",
                                     "kubernetes",
                                     "namespace",
                                     "default",
                                     "labels",
                                     "kubernetes.io/service-name",
                                     "kubernetes",
                                     "addressType",
                                     ipv6 ? "IPv6" : "IPv4",
                                     "endpoints",
                                     "addresses",
                                     address,
                                     "conditions",
                                     "ready",
                                     1,
                                     "ports",
                                     "name",
                                     "https",
                                     "port",
                                     (int)port,
                                     "protocol",
                                     "TCP"),
                           err);
        return r;
}
