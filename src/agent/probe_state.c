/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probes' state machine (probe.h): a container's probe specs as its JSON gives them, and the
 * kubelet's counting of their results. Pure, so every transition is a unit test
 * (tests/unit/test_probe.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define NS_PER_SEC INT64_C(1000000000)

static void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

void xp_probe_spec_clear(struct xp_probe_spec *s)
{
        strv_free(s->command);
        strv_free(s->headers);
        free(s->scheme);
        free(s->host);
        free(s->path);
        *s = (struct xp_probe_spec){0};
}

/* An int32 of the probe (Kubernetes' type for them all), cut to lo..INT32_MAX: a bigger one
 * would overflow the nanoseconds and milliseconds it is counted in. */
static int64_t number_or(const json_t *o, const char *key, int64_t fallback, int64_t lo)
{
        const json_t *v = json_object_get(o, key);
        int64_t n = json_is_integer(v) ? json_integer_value(v) : fallback;

        return n < lo ? lo : n > INT32_MAX ? INT32_MAX : n;
}

/* A port by number, or by the name of one of the container's ports. */
static int port_of(const json_t *container, const json_t *port, struct xp_error *err)
{
        const json_t *p;
        size_t i;

        if (json_is_integer(port) && json_integer_value(port) > 0 &&
            json_integer_value(port) < 65536)
                return (int)json_integer_value(port);
        json_array_foreach(json_object_get(container, "ports"),
                           i,
                           p) if (json_is_string(port) &&
                                  json_equal(json_object_get(p, "name"), port) &&
                                  json_is_integer(json_object_get(p, "containerPort"))) return (int)
            json_integer_value(json_object_get(p, "containerPort"));
        return xp_errorf(err,
                         -EINVAL,
                         "port %s: not a number from 1 to 65535 nor a named port of the container",
                         json_is_string(port) ? json_string_value(port) : "?");
}

static char *copy_or_null(const json_t *v)
{
        return json_is_string(v) && *json_string_value(v) ? strdup(json_string_value(v)) : NULL;
}

static int parse_command(const json_t *cmd, struct xp_probe_spec *s, struct xp_error *err)
{
        const json_t *w;
        size_t i;

        if (!json_is_array(cmd) || json_array_size(cmd) == 0)
                return xp_errorf(err, -EINVAL, "exec.command: a list of at least one word");
        s->command = calloc(json_array_size(cmd) + 1, sizeof(char *));
        if (!s->command)
                return -ENOMEM;
        json_array_foreach(
            cmd, i, w) if (!(s->command[i] = strdup(json_is_string(w) ? json_string_value(w)
                                                                      : ""))) return -ENOMEM;
        return 0;
}

static int parse_headers(const json_t *list, struct xp_probe_spec *s)
{
        const json_t *h;
        size_t i, n = 0;

        if (!json_is_array(list) || json_array_size(list) == 0)
                return 0;
        s->headers = calloc(json_array_size(list) + 1, sizeof(char *));
        if (!s->headers)
                return -ENOMEM;
        json_array_foreach(list, i, h)
        {
                const char *name = json_string_value(json_object_get(h, "name"));
                const char *value = json_string_value(json_object_get(h, "value"));

                /* a line break in either would smuggle a header or a request in */
                if (!name || !*name || strpbrk(name, "\r\n:") || (value && strpbrk(value, "\r\n")))
                        continue;
                if (strlen(name) + (value ? strlen(value) : 0) > XP_PROBE_PATH_MAX)
                        continue; /* the request would not fit: left out, as a bad one */
                if (asprintf(&s->headers[n++], "%s: %s", name, value ? value : "") < 0) {
                        s->headers[n - 1] = NULL;
                        return -ENOMEM;
                }
        }
        return 0;
}

static int parse_handler(const json_t *container,
                         const json_t *probe,
                         struct xp_probe_spec *s,
                         struct xp_error *err)
{
        const json_t *h;
        int port;

        if ((h = json_object_get(probe, "exec"))) {
                s->handler = XP_PROBE_EXEC;
                return parse_command(json_object_get(h, "command"), s, err);
        }
        if ((h = json_object_get(probe, "httpGet")))
                s->handler = XP_PROBE_HTTP;
        else if ((h = json_object_get(probe, "tcpSocket")))
                s->handler = XP_PROBE_TCP;
        else if ((h = json_object_get(probe, "grpc")))
                s->handler = XP_PROBE_GRPC;
        else
                return xp_errorf(err, -EINVAL, "no handler: exec, httpGet, tcpSocket or grpc");
        port = port_of(container, json_object_get(h, "port"), err);
        if (port < 0)
                return port;
        s->port = port;
        s->host = copy_or_null(json_object_get(h, "host"));
        if (s->host && strlen(s->host) > XP_PROBE_HOST_MAX)
                return xp_errorf(err, -EINVAL, "host: longer than %d bytes", XP_PROBE_HOST_MAX);
        if (s->handler != XP_PROBE_HTTP)
                return 0;
        s->scheme = copy_or_null(json_object_get(h, "scheme"));
        s->path = copy_or_null(json_object_get(h, "path"));
        if (!s->scheme && !(s->scheme = strdup("HTTP")))
                return -ENOMEM;
        if (!s->path && !(s->path = strdup("/")))
                return -ENOMEM;
        if (strcmp(s->scheme, "HTTP") != 0 && strcmp(s->scheme, "HTTPS") != 0)
                return xp_errorf(err, -EINVAL, "httpGet.scheme %s: HTTP or HTTPS", s->scheme);
        if (strlen(s->path) > XP_PROBE_PATH_MAX)
                return xp_errorf(
                    err, -EINVAL, "httpGet.path: longer than %d bytes", XP_PROBE_PATH_MAX);
        if (strpbrk(s->path, "\r\n \t"))
                return xp_errorf(err, -EINVAL, "httpGet.path: no spaces or line breaks");
        return parse_headers(json_object_get(h, "httpHeaders"), s);
}

int xp_probe_spec_parse(const json_t *container,
                        const char *key,
                        struct xp_probe_spec *ret,
                        struct xp_error *err)
{
        const json_t *probe = json_object_get(container, key);
        struct xp_probe_spec s = {0};
        int r;

        *ret = s;
        if (!json_is_object(probe))
                return 0;
        s.set = true;
        /* the server defaults them (pod_defaults.c); the kubelet's values for a pod it did not */
        s.initial_delay_s = number_or(probe, "initialDelaySeconds", 0, 0);
        s.period_s = number_or(probe, "periodSeconds", 10, 1);
        s.timeout_s = number_or(probe, "timeoutSeconds", 1, 1);
        s.success_threshold = number_or(probe, "successThreshold", 1, 1);
        s.failure_threshold = number_or(probe, "failureThreshold", 3, 1);
        s.termination_grace_s = number_or(probe, "terminationGracePeriodSeconds", -1, -1);
        r = parse_handler(container, probe, &s, err);
        if (r < 0) {
                if (r == -ENOMEM)
                        xp_errorf(err, r, "out of memory");
                xp_probe_spec_clear(&s);
                return r;
        }
        *ret = s;
        return 0;
}

void xp_probe_container_begin(struct xp_probe_container *c, int64_t started_ns)
{
        for (int k = 0; k < XP_PROBE_KINDS; k++)
                c->t[k] = (struct xp_probe_tracker){
                    .result = k == XP_PROBE_READINESS  ? XP_PROBE_FAILURE
                              : k == XP_PROBE_LIVENESS ? XP_PROBE_SUCCESS
                                                       : XP_PROBE_UNKNOWN,
                    .next_ns = started_ns + c->spec[k].initial_delay_s * NS_PER_SEC};
        c->started = !c->spec[XP_PROBE_STARTUP].set;
        c->ready = c->started && !c->spec[XP_PROBE_READINESS].set;
        c->on_hold = false;
}

bool xp_probe_due(const struct xp_probe_container *c, enum xp_probe_kind kind, int64_t now_ns)
{
        const struct xp_probe_tracker *t = &c->t[kind];

        if (!c->spec[kind].set || t->in_flight || c->on_hold || now_ns < t->next_ns)
                return false;
        return kind == XP_PROBE_STARTUP ? !c->started : c->started;
}

int64_t xp_probe_next_due(const struct xp_probe_container *c)
{
        int64_t next = 0;

        if (c->on_hold)
                return 0;
        for (int k = 0; k < XP_PROBE_KINDS; k++) {
                bool runs = k == XP_PROBE_STARTUP ? !c->started : c->started;

                if (c->spec[k].set && runs && !c->t[k].in_flight &&
                    (next == 0 || c->t[k].next_ns < next))
                        next = c->t[k].next_ns;
        }
        return next;
}

/* The consecutive count of result, and the result once it reached its threshold. */
static void
count(struct xp_probe_tracker *t, const struct xp_probe_spec *s, enum xp_probe_result result)
{
        if (result == XP_PROBE_SUCCESS) {
                t->failures = 0;
                t->successes++;
                if (t->successes >= (unsigned)s->success_threshold)
                        t->result = XP_PROBE_SUCCESS;
        } else if (result == XP_PROBE_FAILURE) {
                t->successes = 0;
                t->failures++;
                if (t->failures >= (unsigned)s->failure_threshold)
                        t->result = XP_PROBE_FAILURE;
        } else {
                /* the kubelet keeps readiness false while a probe cannot run */
                t->successes = 0;
        }
}

struct xp_probe_change xp_probe_record(struct xp_probe_container *c,
                                       enum xp_probe_kind kind,
                                       enum xp_probe_result result,
                                       int64_t now_ns)
{
        struct xp_probe_tracker *t = &c->t[kind];
        struct xp_probe_change ch = {0};
        bool was_ready = c->ready;

        t->in_flight = false;
        t->next_ns = now_ns + c->spec[kind].period_s * NS_PER_SEC;
        if (c->on_hold)
                return ch;
        count(t, &c->spec[kind], result);
        if (kind == XP_PROBE_STARTUP && t->result == XP_PROBE_SUCCESS && !c->started) {
                c->started = ch.started = true;
                /* liveness and readiness begin now, their initial delays counted from the start */
                for (int k = XP_PROBE_LIVENESS; k < XP_PROBE_KINDS; k++)
                        if (c->t[k].next_ns < now_ns)
                                c->t[k].next_ns = now_ns;
        }
        if (kind != XP_PROBE_READINESS && result == XP_PROBE_FAILURE &&
            t->result == XP_PROBE_FAILURE) {
                ch.kill = true;
                c->on_hold = true;
                c->started = false;
        }
        c->ready = c->started && !c->on_hold &&
                   (!c->spec[XP_PROBE_READINESS].set ||
                    c->t[XP_PROBE_READINESS].result == XP_PROBE_SUCCESS);
        if (kind == XP_PROBE_READINESS && result == XP_PROBE_UNKNOWN)
                c->ready = false;
        ch.ready_changed = c->ready != was_ready;
        return ch;
}

enum xp_probe_result xp_probe_http_status(int code)
{
        return code >= 200 && code < 400 ? XP_PROBE_SUCCESS : XP_PROBE_FAILURE;
}

const char *xp_probe_kind_name(enum xp_probe_kind kind)
{
        static const char *const names[] = {"Startup", "Liveness", "Readiness"};

        return kind < XP_PROBE_KINDS ? names[kind] : "?";
}
