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
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "xpool/doc.h"
#include "xpool/macro.h"
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

/* The three objects, as kube-apiserver writes them (the address and ports are ours). */
static json_t *object(const char *fmt, ...) _printf_(1, 2);
static json_t *object(const char *fmt, ...)
{
        char text[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return json_loads(text, 0, NULL);
}

#define META(kind, labels)                                                                         \
        "\"kind\": \"" kind                                                                        \
        "\", \"metadata\": {\"name\": \"kubernetes\", \"namespace\": \"default\", "                \
        "\"labels\": " labels "}"

int service_kubernetes_reconcile(
    struct api *api, const char *cluster_ip, const char *host, uint16_t port, struct xp_error *err)
{
        char address[INET6_ADDRSTRLEN];
        bool ipv6;
        int r;

        advertised(host, address, &ipv6);
        r = ensure(
            api,
            &xp_kind_service,
            object(
                "{\"apiVersion\": \"v1\", " META(
                    "Service",
                    "{\"component\": \"apiserver\", \"provider\": \"kubernetes\"}") ", "
                                                                                    "\"spec\": {\"clusterIP\": \"%s\", \"clusterIPs\": [\"%s\"], \"ipFamilies\": [\"%s\"], \"ports\": "
                                                                                    "[{\"name\": \"https\", \"port\": 443, \"protocol\": \"TCP\", "
                                                                                    "\"targetPort\": %u}], \"type\": \"ClusterIP\", \"sessionAffinity\": "
                                                                                    "\"None\"}}",
                cluster_ip,
                cluster_ip,
                strchr(cluster_ip, ':') ? "IPv6" : "IPv4", /* the primary family's, as kube */
                port),
            err);
        if (r >= 0)
                r = ensure(
                    api,
                    &xp_kind_endpoints,
                    object(
                        "{\"apiVersion\": \"v1\", " META(
                            "Endpoints",
                            "{\"endpointslice.kubernetes.io/skip-mirror\": \"true\"}") ", "
                                                                                       "\"subsets\": [{\"addresses\": [{\"ip\": \"%s\"}], \"ports\": "
                                                                                       "[{\"name\": \"https\", \"port\": %u, \"protocol\": \"TCP\"}]}]}",
                        address,
                        port),
                    err);
        if (r >= 0)
                r = ensure(
                    api,
                    &xp_kind_endpointslice,
                    object(
                        "{\"apiVersion\": \"discovery.k8s.io/v1\", " META(
                            "EndpointSlice",
                            "{\"kubernetes.io/service-name\": \"kubernetes\"}") ", "
                                                                                "\"addressType\": \"%s\", \"endpoints\": [{\"addresses\": "
                                                                                "[\"%s\"], \"conditions\": {\"ready\": true}}], \"ports\": "
                                                                                "[{\"name\": \"https\", \"port\": %u, \"protocol\": \"TCP\"}]}",
                        ipv6 ? "IPv6" : "IPv4",
                        address,
                        port),
                    err);
        return r;
}
