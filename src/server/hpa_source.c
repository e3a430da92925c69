/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The autoscaler's figures (hpa_source.h): pods' usage and devices' readings copied from the
 * usage reader, and instant queries to a Prometheus-compatible HTTP API (GET
 * PREFIX/api/v1/query?query=..., answered in Prometheus' JSON, read by xp_hpa_prom_value()).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hpa_source.h"
#include "usage.h"
#include "usage_internal.h"
#include "xpool/macro.h"
#include "xpool/url.h"

#define QUERY_TIMEOUT_MS 5000

struct srv_hpa_source {
        struct srv_usage *usage;
        struct xp_autoscaler_metrics ops;
        bool prometheus;
        char host[64]; /* the address the URL's host resolved to */
        unsigned port;
        char prefix[256];
};

/* One pod's figures as the autoscaler reads them. */
static void pod_sample(const struct srv_usage_pod *p, struct xp_autoscaler_pod_sample *ret)
{
        struct xp_autoscaler_pod_usage *u = &ret->usage;

        snprintf(ret->name, sizeof(ret->name), "%s", p->name);
        *u = (struct xp_autoscaler_pod_usage){
            .time_s = (int64_t)p->time_s,
            .window_s = (int64_t)p->window_s,
            .cpu_milli = (int64_t)(p->cpu_cores * 1000.0),
            .memory_milli = (int64_t)(p->memory_bytes * 1000.0),
        };
        for (size_t k = 0; k < p->n_containers && k < XP_AUTOSCALER_CONTAINERS_MAX; k++) {
                snprintf(u->containers[k].name,
                         sizeof(u->containers[k].name),
                         "%s",
                         p->containers[k].name);
                u->containers[k].cpu_milli = (int64_t)(p->containers[k].cpu_cores * 1000.0);
                u->containers[k].memory_milli = (int64_t)(p->containers[k].memory_bytes * 1000.0);
                u->n_containers++;
        }
}

static int
pods_usage(void *userdata, const char *ns, struct xp_autoscaler_pod_sample **ret, size_t *ret_n)
{
        struct srv_hpa_source *s = userdata;
        struct srv_usage_pod *pods = NULL;
        struct xp_autoscaler_pod_sample *samples = NULL;
        size_t n = 0, k = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!s->usage || srv_usage_pods(s->usage, ns, &pods, &n) < 0)
                return -ENOENT;
        if (n > 0 && !(samples = calloc(n, sizeof(*samples)))) {
                free(pods);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (pods[i].window_s >
                    0) /* CPU is a rate: a pod has figures from its second reading */
                        pod_sample(&pods[i], &samples[k++]);
        free(pods);
        *ret = samples;
        *ret_n = k;
        return 0;
}

static int device_usage(void *userdata,
                        const char *node,
                        const char *id,
                        struct xp_autoscaler_device_usage *ret)
{
        struct srv_hpa_source *s = userdata;
        struct srv_usage_device *devices = NULL;
        size_t n = 0;
        int r = -ENOENT;

        if (!s->usage || srv_usage_devices(s->usage, &devices, &n) < 0)
                return -ENOENT;
        for (size_t i = 0; i < n && r < 0; i++) {
                if (strcmp(devices[i].node, node) != 0 || strcmp(devices[i].device, id) != 0)
                        continue;
                *ret = (struct xp_autoscaler_device_usage){
                    .time_s = (int64_t)devices[i].time_s,
                    .has_utilization = devices[i].has_utilization,
                    .has_memory_used = devices[i].has_memory_used,
                    .utilization_percent = devices[i].utilization_percent,
                    .memory_used_bytes = devices[i].memory_used_bytes,
                };
                r = 0;
        }
        free(devices);
        return r;
}

/* text percent-encoded into buf (what a query string may not hold as is). */
static int url_encode(const char *text, char *buf, size_t size)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t len = 0;

        for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
                bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                             (*p >= '0' && *p <= '9') || strchr("-_.~", *p);
                if (len + (plain ? 1 : 3) >= size)
                        return -ENAMETOOLONG;
                if (plain) {
                        buf[len++] = (char)*p;
                } else {
                        buf[len++] = '%';
                        buf[len++] = hex[*p >> 4];
                        buf[len++] = hex[*p & 15];
                }
        }
        buf[len] = '\0';
        return 0;
}

static int prom_query(
    void *userdata, const char *promql, char **ret_body, size_t *ret_len, struct xp_error *err)
{
        struct srv_hpa_source *s = userdata;
        char encoded[3072], path[4096];
        struct usage_target t = {.port = s->port, .path = path};
        if (!s->prometheus)
                return -ENOTCONN;
        if (url_encode(promql, encoded, sizeof(encoded)) < 0)
                return xp_errorf(err, -ENAMETOOLONG, "the query is too long");
        snprintf(path, sizeof(path), "%s/api/v1/query?query=%s", s->prefix, encoded);
        snprintf(t.host, sizeof(t.host), "%s", s->host);
        return usage_fetch(&t, QUERY_TIMEOUT_MS, ret_body, ret_len, err);
}

/* "http://HOST:PORT[/PREFIX]" into s, HOST resolved to an address. */
static int parse_url(struct srv_hpa_source *s, const char *url, struct xp_error *err)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        _cleanup_(xp_url_done) struct xp_url u = {0};
        int r = xp_url_split(url, &u, err);

        if (r == -EINVAL)
                return xp_error_prefix(err, r, "--hpa-prometheus-url '%s'", url);
        if (r < 0)
                return r;
        if (strcmp(u.scheme, "http") != 0 || !u.port_given || (u.path[0] && u.path[0] != '/'))
                return xp_errorf(err,
                                 -EINVAL,
                                 "--hpa-prometheus-url '%s': expected http://HOST:PORT[/PREFIX]",
                                 url);
        if (strlen(u.path) >= sizeof(s->prefix))
                return xp_errorf(err,
                                 -EINVAL,
                                 "--hpa-prometheus-url '%s': the prefix is over %zu bytes",
                                 url,
                                 sizeof(s->prefix) - 1);
        s->port = u.port;
        snprintf(s->prefix, sizeof(s->prefix), "%s", u.path);
        if (s->prefix[0] && s->prefix[strlen(s->prefix) - 1] == '/')
                s->prefix[strlen(s->prefix) - 1] = '\0';
        if (getaddrinfo(u.host, NULL, &hints, &ai) != 0 || !ai)
                return xp_errorf(
                    err, -EINVAL, "--hpa-prometheus-url '%s': cannot resolve %s", url, u.host);
        r = getnameinfo(
            ai->ai_addr, ai->ai_addrlen, s->host, sizeof(s->host), NULL, 0, NI_NUMERICHOST);
        freeaddrinfo(ai);
        if (r != 0)
                return xp_errorf(
                    err, -EINVAL, "--hpa-prometheus-url '%s': cannot resolve %s", url, u.host);
        s->prometheus = true;
        return 0;
}

int srv_hpa_source_new(struct srv_usage *usage,
                       const char *url,
                       struct srv_hpa_source **ret,
                       struct xp_error *err)
{
        struct srv_hpa_source *s = calloc(1, sizeof(*s));
        int r = 0;

        if (!s)
                return -ENOMEM;
        s->usage = usage;
        s->ops = (struct xp_autoscaler_metrics){
            .pods = pods_usage, .device = device_usage, .query = prom_query, .userdata = s};
        if (url && *url)
                r = parse_url(s, url, err);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void srv_hpa_source_free(struct srv_hpa_source *source)
{
        free(source);
}

const struct xp_autoscaler_metrics *srv_hpa_source_metrics(struct srv_hpa_source *source)
{
        return &source->ops;
}
