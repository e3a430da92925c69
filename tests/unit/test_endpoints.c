/* SPDX-License-Identifier: Apache-2.0 */
/* The endpoints controller's computation and its writes over a store (xpool/endpoints.h), and
 * the node port allocator's picks (src/server/api_nodeport.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry_fixture.h"
#include "server/internal.h"
#include "xpool/doc.h"
#include "xpool/endpoints.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

static json_t *load(const char *text)
{
        json_error_t error;
        json_t *j = json_loads(text, 0, &error);

        if (!j)
                fail_msg("%s: %s", error.text, text);
        return j;
}

static const char service_text[] =
    "{\"metadata\": {\"name\": \"web\", \"namespace\": \"team\", \"uid\": \"svc-uid\","
    " \"labels\": {\"tier\": \"front\"}},"
    " \"spec\": {\"clusterIP\": \"10.96.0.10\", \"selector\": {\"app\": \"web\"},"
    " \"ports\": [{\"name\": \"http\", \"port\": 80, \"protocol\": \"TCP\", \"targetPort\": \"web\"},"
    " {\"name\": \"metrics\", \"port\": 9100, \"protocol\": \"TCP\", \"targetPort\": 9100}]}}";

/* A pod of app=web (or other) with ip; port_name its container port 8080's name. */
static json_t *pod(const char *name,
                   const char *app,
                   const char *ip,
                   const char *port_name,
                   const char *ready,
                   bool terminating)
{
        char text[1024];

        snprintf(text,
                 sizeof(text),
                 "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"team\", \"uid\": \"uid-%s\","
                 " \"labels\": {\"app\": \"%s\"}%s},"
                 " \"spec\": {\"nodeName\": \"n1\", \"containers\": [{\"name\": \"c\", \"ports\":"
                 " [{\"name\": \"%s\", \"containerPort\": 8080, \"protocol\": \"TCP\"}]}]},"
                 " \"status\": {\"phase\": \"Running\", \"podIP\": \"%s\", \"conditions\":"
                 " [{\"type\": \"Ready\", \"status\": \"%s\"}]}}",
                 name,
                 name,
                 app,
                 terminating ? ", \"deletionTimestamp\": \"2026-12-04T00:00:00Z\"" : "",
                 port_name,
                 ip,
                 ready);
        return load(text);
}

static json_t *some_pods(void)
{
        json_t *pods = json_array();

        json_array_append_new(pods, pod("b", "web", "10.0.0.2", "web", "True", false));
        json_array_append_new(pods, pod("a", "web", "10.0.0.1", "web", "True", false));
        json_array_append_new(pods, pod("slow", "web", "10.0.0.3", "web", "False", false));
        json_array_append_new(pods, pod("going", "web", "10.0.0.4", "web", "True", true));
        json_array_append_new(pods, pod("other", "db", "10.0.0.5", "web", "True", false));
        json_array_append_new(pods, pod("noip", "web", "", "web", "True", false));
        /* its container port has another name: only the metrics port reaches it */
        json_array_append_new(pods, pod("odd", "web", "10.0.0.6", "www", "True", false));
        return pods;
}

static const char *ip_at(const json_t *subset, const char *member, size_t i)
{
        return xp_json_str_at(json_array_get(json_object_get(subset, member), i), "ip", "");
}

static void endpoints_from_pods(void **state)
{
        json_t *service = load(service_text), *pods = some_pods(), *ep, *subsets, *both, *one;

        (void)state;
        ep = xp_endpoints_compute(service, pods);
        assert_non_null(ep);
        assert_string_equal(xp_json_str_at(ep, "metadata.name", ""), "web");
        assert_string_equal(
            json_string_value(json_object_get(xp_json_object_at(ep, "metadata.labels"),
                                              XP_ENDPOINTS_MANAGED_BY_LABEL)),
            XP_ENDPOINTS_MANAGED_BY);
        assert_string_equal(xp_json_str_at(ep, "metadata.labels.tier", ""), "front");
        subsets = json_object_get(ep, "subsets");
        assert_int_equal(json_array_size(subsets), 2);
        /* the pods that resolve both ports, and "odd" with only 9100 */
        both = json_array_get(subsets, 0);
        one = json_array_get(subsets, 1);
        if (json_array_size(json_object_get(both, "ports")) != 2) {
                json_t *t = both;

                both = one;
                one = t;
        }
        assert_int_equal(json_array_size(json_object_get(both, "ports")), 2);
        assert_int_equal(
            xp_json_int_at(json_array_get(json_object_get(both, "ports"), 0), "port", 0), 8080);
        assert_string_equal(
            xp_json_str_at(json_array_get(json_object_get(both, "ports"), 0), "name", ""), "http");
        /* sorted by IP; the unready one apart; terminating, unselected and IP-less ones out */
        assert_int_equal(json_array_size(json_object_get(both, "addresses")), 2);
        assert_string_equal(ip_at(both, "addresses", 0), "10.0.0.1");
        assert_string_equal(ip_at(both, "addresses", 1), "10.0.0.2");
        assert_int_equal(json_array_size(json_object_get(both, "notReadyAddresses")), 1);
        assert_string_equal(ip_at(both, "notReadyAddresses", 0), "10.0.0.3");
        assert_string_equal(xp_json_str_at(json_array_get(json_object_get(both, "addresses"), 0),
                                           "targetRef.name",
                                           ""),
                            "a");
        assert_int_equal(json_array_size(json_object_get(one, "ports")), 1);
        assert_int_equal(
            xp_json_int_at(json_array_get(json_object_get(one, "ports"), 0), "port", 0), 9100);
        assert_string_equal(ip_at(one, "addresses", 0), "10.0.0.6");
        json_decref(ep);
        json_decref(pods);
        json_decref(service);
}

static void no_pods_no_subsets(void **state)
{
        json_t *service = load(service_text), *pods = json_array(), *ep, *slices;

        (void)state;
        ep = xp_endpoints_compute(service, pods);
        assert_null(json_object_get(ep, "subsets"));
        slices = xp_endpointslices_compute(service, pods);
        /* the placeholder slice: no endpoints, no ports */
        assert_int_equal(json_array_size(slices), 1);
        assert_int_equal(json_array_size(json_object_get(json_array_get(slices, 0), "endpoints")),
                         0);
        assert_null(json_object_get(json_array_get(slices, 0), "ports"));
        json_decref(slices);
        json_decref(ep);
        json_decref(pods);
        json_decref(service);
}

static const json_t *slice_endpoint(const json_t *slices, const char *pod_name)
{
        size_t i, j;
        json_t *s, *e;

        json_array_foreach(slices, i, s)
        {
                json_array_foreach(json_object_get(s, "endpoints"), j, e)
                {
                        if (strcmp(xp_json_str_at(e, "targetRef.name", ""), pod_name) == 0)
                                return e;
                }
        }
        return NULL;
}

static void slices_from_pods(void **state)
{
        json_t *service = load(service_text), *pods = some_pods(), *slices, *again;
        const json_t *e, *s;

        (void)state;
        slices = xp_endpointslices_compute(service, pods);
        assert_int_equal(json_array_size(slices), 2);
        s = json_array_get(slices, 0);
        assert_string_equal(xp_json_str_at(s, "addressType", ""), "IPv4");
        assert_int_equal(strncmp(xp_json_str_at(s, "metadata.name", ""), "web-", 4), 0);
        assert_int_equal(strlen(xp_json_str_at(s, "metadata.name", "")), 9);
        assert_string_equal(
            json_string_value(json_object_get(xp_json_object_at(s, "metadata.labels"),
                                              XP_ENDPOINTSLICE_SERVICE_LABEL)),
            "web");
        assert_string_equal(
            json_string_value(json_object_get(xp_json_object_at(s, "metadata.labels"),
                                              XP_ENDPOINTSLICE_MANAGED_LABEL)),
            XP_ENDPOINTSLICE_MANAGED_BY);
        assert_string_equal(
            xp_json_str_at(json_array_get(xp_json_at(s, "metadata.ownerReferences"), 0), "uid", ""),
            "svc-uid");
        e = slice_endpoint(slices, "a");
        assert_true(xp_json_bool_at(e, "conditions.ready", false));
        assert_string_equal(xp_json_str_at(e, "nodeName", ""), "n1");
        e = slice_endpoint(slices, "slow");
        assert_false(xp_json_bool_at(e, "conditions.ready", true));
        assert_false(xp_json_bool_at(e, "conditions.serving", true));
        /* terminating pods stay in slices, not ready but serving */
        e = slice_endpoint(slices, "going");
        assert_non_null(e);
        assert_false(xp_json_bool_at(e, "conditions.ready", true));
        assert_true(xp_json_bool_at(e, "conditions.serving", false));
        assert_true(xp_json_bool_at(e, "conditions.terminating", false));
        assert_null(slice_endpoint(slices, "other"));
        assert_null(slice_endpoint(slices, "noip"));
        /* computed again: the same names, the same slices */
        again = xp_endpointslices_compute(service, pods);
        assert_true(json_equal(slices, again));
        json_decref(again);
        json_decref(slices);
        json_decref(pods);
        json_decref(service);
}

/* The slice of addressType family holding the pod's endpoint, or NULL. */
static const json_t *family_slice(const json_t *slices, const char *family, const char *pod_name)
{
        size_t i, j;
        json_t *s, *e;

        json_array_foreach(slices, i, s)
        {
                if (strcmp(xp_json_str_at(s, "addressType", ""), family) != 0)
                        continue;
                json_array_foreach(json_object_get(s, "endpoints"), j, e)
                {
                        if (strcmp(xp_json_str_at(e, "targetRef.name", ""), pod_name) == 0)
                                return s;
                }
        }
        return NULL;
}

/* A dual-stack Service: one slice per family with the pods' IPs of it; Endpoints carry the first
 * family's. A pod named by hostname and subdomain is published with its hostname. */
static void dual_stack_and_hostnames(void **state)
{
        json_t *service = load(
            "{\"metadata\": {\"name\": \"web\", \"namespace\": \"team\", \"uid\": \"svc-uid\"},"
            " \"spec\": {\"clusterIP\": \"None\", \"selector\": {\"app\": \"web\"},"
            " \"ipFamilies\": [\"IPv4\", \"IPv6\"], \"ports\": [{\"name\": \"http\", \"port\": 80,"
            " \"protocol\": \"TCP\", \"targetPort\": 80}]}}");
        json_t *pods = json_array(), *dual = pod("dual", "web", "10.0.0.1", "web", "True", false);
        json_t *v6 = pod("v6", "web", "fd00::2", "web", "True", false), *slices, *ep, *only4;
        const json_t *s, *e;

        (void)state;
        json_object_set_new(json_object_get(dual, "status"),
                            "podIPs",
                            json_pack("[{s:s}, {s:s}]", "ip", "10.0.0.1", "ip", "fd00::1"));
        json_object_set_new(json_object_get(dual, "spec"), "hostname", json_string("db-0"));
        json_object_set_new(json_object_get(dual, "spec"), "subdomain", json_string("web"));
        json_object_set_new(json_object_get(v6, "spec"), "hostname", json_string("db-1"));
        json_object_set_new(json_object_get(v6, "spec"), "subdomain", json_string("other"));
        json_array_append_new(pods, dual);
        json_array_append_new(pods, v6);
        slices = xp_endpointslices_compute(service, pods);
        assert_int_equal(json_array_size(slices), 2);
        s = family_slice(slices, "IPv4", "dual");
        assert_non_null(s);
        assert_int_equal(json_array_size(json_object_get(s, "endpoints")), 1);
        e = json_array_get(json_object_get(s, "endpoints"), 0);
        assert_string_equal(json_string_value(json_array_get(json_object_get(e, "addresses"), 0)),
                            "10.0.0.1");
        assert_string_equal(xp_json_str_at(e, "hostname", ""), "db-0");
        s = family_slice(slices, "IPv6", "dual");
        assert_non_null(s);
        assert_ptr_equal(s, family_slice(slices, "IPv6", "v6"));
        assert_int_equal(json_array_size(json_object_get(s, "endpoints")), 2);
        assert_string_not_equal(
            xp_json_str_at(s, "metadata.name", ""),
            xp_json_str_at(family_slice(slices, "IPv4", "dual"), "metadata.name", ""));
        /* v6's subdomain names another Service: no hostname here */
        e = slice_endpoint(slices, "v6");
        assert_null(xp_json_at(e, "hostname"));
        assert_string_equal(json_string_value(json_array_get(json_object_get(e, "addresses"), 0)),
                            "fd00::2");
        /* Endpoints: the first family's IPs only, the hostname with them */
        ep = xp_endpoints_compute(service, pods);
        s = json_array_get(json_object_get(ep, "subsets"), 0);
        assert_int_equal(json_array_size(json_object_get(s, "addresses")), 1);
        assert_string_equal(ip_at(s, "addresses", 0), "10.0.0.1");
        assert_string_equal(
            xp_json_str_at(json_array_get(json_object_get(s, "addresses"), 0), "hostname", ""),
            "db-0");
        json_decref(ep);
        json_decref(slices);
        /* single-stack IPv4: the IPv6-only pod has no endpoint, there is no IPv6 slice */
        only4 = json_deep_copy(service);
        json_object_set_new(json_object_get(only4, "spec"), "ipFamilies", json_pack("[s]", "IPv4"));
        slices = xp_endpointslices_compute(only4, pods);
        assert_int_equal(json_array_size(slices), 1);
        assert_string_equal(xp_json_str_at(json_array_get(slices, 0), "addressType", ""), "IPv4");
        assert_null(slice_endpoint(slices, "v6"));
        json_decref(slices);
        /* no pods: a placeholder slice per family */
        json_array_clear(pods);
        slices = xp_endpointslices_compute(service, pods);
        assert_int_equal(json_array_size(slices), 2);
        assert_string_equal(xp_json_str_at(json_array_get(slices, 0), "addressType", ""), "IPv4");
        assert_string_equal(xp_json_str_at(json_array_get(slices, 1), "addressType", ""), "IPv6");
        assert_int_equal(json_array_size(xp_json_at(json_array_get(slices, 1), "endpoints")), 0);
        json_decref(slices);
        json_decref(only4);
        json_decref(pods);
        json_decref(service);
}

static void no_selector_selects_nothing(void **state)
{
        json_t *service = load("{\"metadata\": {\"name\": \"ext\", \"namespace\": \"team\"},"
                               " \"spec\": {\"ports\": [{\"port\": 80}]}}");
        json_t *p = pod("a", "web", "10.0.0.1", "web", "True", false);

        (void)state;
        assert_false(xp_endpoints_selects(service, p));
        json_decref(p);
        json_decref(service);
}

/* ---- the controller over a store ------------------------------------------------------------ */

static void put_web_pod(struct registry_fixture *f, const char *name, const char *ip, bool ready)
{
        fixture_put_text(
            f,
            "pods",
            "team",
            name,
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"%s\","
            " \"namespace\": \"team\", \"uid\": \"uid-%s\", \"labels\": {\"app\": \"web\"}},"
            " \"spec\": {\"containers\": [{\"name\": \"c\", \"ports\": [{\"name\":"
            " \"web\", \"containerPort\": 8080}]}]},"
            " \"status\": {\"phase\": \"Running\", \"podIP\": \"%s\", \"conditions\":"
            " [{\"type\": \"Ready\", \"status\": \"%s\"}]}}",
            name,
            name,
            ip,
            ready ? "True" : "False");
}

static size_t ready_count(json_t *ep)
{
        json_t *subset = json_array_get(json_object_get(ep, "subsets"), 0);

        return json_array_size(json_object_get(subset, "addresses"));
}

static void controller_follows_pods(void **state)
{
        struct registry_fixture f;
        struct xp_endpoints *c = NULL;
        struct xp_error err = {0};
        json_t *ep, *slices = NULL;
        uint64_t version;

        (void)state;
        fixture_open(&f, "endpoints", 0);
        fixture_put_text(&f,
                         "namespaces",
                         "",
                         "team",
                         "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\":"
                         " {\"name\": \"team\"}, \"status\": {\"phase\": \"Active\"}}");
        fixture_put_text(&f,
                         "services",
                         "team",
                         "web",
                         "{\"apiVersion\": \"v1\", \"kind\": \"Service\", %s",
                         service_text + 1);
        /* user-managed: no selector, its Endpoints are never touched */
        fixture_put_text(&f,
                         "services",
                         "team",
                         "ext",
                         "{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\":"
                         " {\"name\": \"ext\", \"namespace\": \"team\"},"
                         " \"spec\": {\"ports\": [{\"port\": 80}]}}");
        fixture_put_text(
            &f,
            "endpoints",
            "team",
            "ext",
            "{\"apiVersion\": \"v1\", \"kind\": \"Endpoints\", \"metadata\":"
            " {\"name\": \"ext\", \"namespace\": \"team\"}, \"subsets\": [{\"addresses\":"
            " [{\"ip\": \"192.0.2.1\"}], \"ports\": [{\"port\": 80}]}]}");
        put_web_pod(&f, "a", "10.0.0.1", true);
        assert_int_equal(xp_endpoints_new(f.registry, &c, &err), 0);
        assert_int_equal(xp_endpoints_step(c, &err), 0);
        ep = fixture_get(&f, "endpoints", "team", "web");
        assert_int_equal(ready_count(ep), 1);
        json_decref(ep);
        /* a second pod turns ready: it joins */
        put_web_pod(&f, "b", "10.0.0.2", false);
        assert_int_equal(xp_endpoints_step(c, &err), 0);
        ep = fixture_get(&f, "endpoints", "team", "web");
        assert_int_equal(ready_count(ep), 1);
        json_decref(ep);
        put_web_pod(&f, "b", "10.0.0.2", true);
        assert_int_equal(xp_endpoints_step(c, &err), 0);
        ep = fixture_get(&f, "endpoints", "team", "web");
        assert_int_equal(ready_count(ep), 2);
        json_decref(ep);
        /* a pod goes away: it leaves */
        assert_int_equal(xp_store_delete(f.store, "pods", "team", "a", 0, NULL, NULL, &err), 0);
        assert_int_equal(xp_endpoints_step(c, &err), 0);
        ep = fixture_get(&f, "endpoints", "team", "web");
        assert_int_equal(ready_count(ep), 1);
        json_decref(ep);
        ep = fixture_get(&f, "endpoints", "team", "ext");
        assert_string_equal(
            ip_at(json_array_get(json_object_get(ep, "subsets"), 0), "addresses", 0), "192.0.2.1");
        json_decref(ep);
        /* the Service goes: what was written for it goes too */
        assert_int_equal(xp_store_delete(f.store, "services", "team", "web", 0, NULL, NULL, &err),
                         0);
        assert_int_equal(xp_endpoints_step(c, &err), 0);
        assert_int_equal(xp_store_get(f.store, "endpoints", "team", "web", &ep, &version, &err),
                         -ENOENT);
        /* what is left is the slice mirrored from ext's Endpoints, which follows them */
        assert_int_equal(xp_store_list(f.store, "endpointslices", "team", &slices, &version, &err),
                         0);
        assert_int_equal(json_array_size(slices), 1);
        assert_string_equal(json_string_value(json_object_get(
                                xp_json_object_at(json_array_get(slices, 0), "metadata.labels"),
                                XP_ENDPOINTSLICE_MANAGED_LABEL)),
                            XP_ENDPOINTSLICE_MIRRORED_BY);
        json_decref(slices);
        assert_int_equal(xp_store_delete(f.store, "endpoints", "team", "ext", 0, NULL, NULL, &err),
                         0);
        assert_int_equal(xp_endpoints_step(c, &err), 0);
        assert_int_equal(xp_store_list(f.store, "endpointslices", "team", &slices, &version, &err),
                         0);
        assert_int_equal(json_array_size(slices), 0);
        json_decref(slices);
        xp_endpoints_free(c);
        fixture_close(&f);
}

/* Endpoints a user wrote, mirrored: subsets with the same ports merged into one slice per
 * address family, ready and not-ready addresses, what is not an IP left out, the Endpoints'
 * labels with the service name and the mirroring controller's. Labelled skip-mirror, or the
 * endpoints controller's own: not mirrored. */
static void slices_mirrored_from_endpoints(void **state)
{
        json_t *endpoints =
            load("{\"metadata\": {\"name\": \"ext\", \"namespace\": \"team\", \"uid\": \"ep-uid\","
                 " \"labels\": {\"tier\": \"db\"}},"
                 " \"subsets\": [{\"addresses\": [{\"ip\": \"192.0.2.1\", \"hostname\": \"db-0\"},"
                 " {\"ip\": \"2001:db8::1\"}, {\"ip\": \"not-an-ip\"}],"
                 " \"notReadyAddresses\": [{\"ip\": \"192.0.2.2\", \"nodeName\": \"n1\"}],"
                 " \"ports\": [{\"name\": \"sql\", \"port\": 5432, \"protocol\": \"TCP\"}]},"
                 " {\"addresses\": [{\"ip\": \"192.0.2.3\"}],"
                 " \"ports\": [{\"name\": \"sql\", \"port\": 5432, \"protocol\": \"TCP\"}]}]}");
        json_t *slices = xp_endpointslices_mirror(endpoints), *v4 = NULL, *v6 = NULL, *slice;
        const json_t *e;
        size_t i;

        (void)state;
        assert_non_null(slices);
        assert_int_equal(json_array_size(slices), 2);
        json_array_foreach(slices, i, slice)
        {
                if (xp_streq0(xp_json_str_at(slice, "addressType", ""), "IPv4"))
                        v4 = slice;
                else if (xp_streq0(xp_json_str_at(slice, "addressType", ""), "IPv6"))
                        v6 = slice;
        }
        assert_non_null(v4);
        assert_non_null(v6);
        assert_int_equal(json_array_size(json_object_get(v4, "endpoints")), 3);
        e = json_array_get(json_object_get(v4, "endpoints"), 0);
        assert_string_equal(xp_json_str_at(e, "hostname", ""), "db-0");
        assert_true(xp_json_bool_at(e, "conditions.ready", false));
        e = json_array_get(json_object_get(v4, "endpoints"), 1);
        assert_string_equal(json_string_value(json_array_get(json_object_get(e, "addresses"), 0)),
                            "192.0.2.2");
        assert_false(xp_json_bool_at(e, "conditions.ready", true));
        assert_string_equal(xp_json_str_at(e, "nodeName", ""), "n1");
        assert_int_equal(json_array_size(json_object_get(v6, "endpoints")), 1);
        assert_int_equal(xp_json_int_at(json_array_get(json_object_get(v4, "ports"), 0), "port", 0),
                         5432);
        assert_string_equal(
            json_string_value(json_object_get(xp_json_object_at(v4, "metadata.labels"), "tier")),
            "db");
        assert_string_equal(
            json_string_value(json_object_get(xp_json_object_at(v4, "metadata.labels"),
                                              XP_ENDPOINTSLICE_SERVICE_LABEL)),
            "ext");
        assert_string_equal(
            xp_json_str_at(
                json_array_get(xp_json_at(v4, "metadata.ownerReferences"), 0), "kind", ""),
            "Endpoints");
        assert_string_not_equal(xp_json_str_at(v4, "metadata.name", ""),
                                xp_json_str_at(v6, "metadata.name", ""));
        assert_true(xp_endpoints_mirrored(endpoints));
        json_object_set_new(json_object_get(json_object_get(endpoints, "metadata"), "labels"),
                            XP_ENDPOINTSLICE_SKIP_MIRROR_LABEL,
                            json_string("true"));
        assert_false(xp_endpoints_mirrored(endpoints));
        json_decref(slices);
        json_decref(endpoints);
}

/* ---- node ports ----------------------------------------------------------------------------- */

static void node_port_picks(void **state)
{
        struct node_ports *np = NULL;
        struct xp_error err = {0};
        uint8_t *taken = calloc(NODE_PORTS_MAP, 1);
        unsigned port = 0;

        (void)state;
        assert_int_equal(node_ports_new("30000-30002", &np, &err), 0);
        assert_int_equal(node_ports_pick(np, taken, 30001, &port, &err), 0);
        assert_int_equal(port, 30001);
        taken[30001 / 8] |= 1u << (30001 % 8);
        assert_int_equal(node_ports_pick(np, taken, 30001, &port, &err), -EINVAL);
        assert_string_equal(xp_error_message(&err), "provided port is already allocated");
        err = (struct xp_error){0};
        assert_int_equal(node_ports_pick(np, taken, 80, &port, &err), -EINVAL);
        assert_string_equal(
            xp_error_message(&err),
            "provided port is not in the valid range. The range of valid ports is 30000-30002");
        /* any: never a taken one, and the range's end reached */
        taken[30000 / 8] |= 1u << (30000 % 8);
        assert_int_equal(node_ports_pick(np, taken, 0, &port, &err), 0);
        assert_int_equal(port, 30002);
        taken[30002 / 8] |= 1u << (30002 % 8);
        assert_int_equal(node_ports_pick(np, taken, 0, &port, &err), -ENOSPC);
        node_ports_free(np);
        np = NULL;
        assert_int_equal(node_ports_new("30000+2", &np, &err), 0);
        node_ports_free(np);
        np = NULL;
        err = (struct xp_error){0};
        assert_int_equal(node_ports_new("32767-30000", &np, &err), -EINVAL);
        assert_non_null(strstr(xp_error_message(&err), "--service-node-port-range"));
        assert_int_equal(node_ports_new("30000", &np, &err), -EINVAL);
        assert_int_equal(node_ports_new("0-10", &np, &err), -EINVAL);
        free(taken);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(endpoints_from_pods),
            cmocka_unit_test(no_pods_no_subsets),
            cmocka_unit_test(slices_from_pods),
            cmocka_unit_test(dual_stack_and_hostnames),
            cmocka_unit_test(no_selector_selects_nothing),
            cmocka_unit_test(controller_follows_pods),
            cmocka_unit_test(slices_mirrored_from_endpoints),
            cmocka_unit_test(node_port_picks),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
