/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's disk pressure decisions (ephemeral.h): --eviction-hard's nodefs.available
 * threshold, the kubelet's ranking of pods to evict under disk pressure, and its message. Pure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ephemeral.h"
#include "xpool/quantity.h"

#define SIGNAL "nodefs.available"

static int one(const char *part, size_t len, struct xp_disk_threshold *ret, struct xp_error *err)
{
        size_t sig = strlen(SIGNAL);
        char value[48];
        struct xp_quantity q;
        char *end;

        if (len <= sig + 1 || strncmp(part, SIGNAL, sig) != 0 || part[sig] != '<') {
                const char *lt = memchr(part, '<', len);

                if (lt)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "--eviction-hard: signal \"%.*s\" is not watched by the agent (nodefs.available is)",
                            (int)(lt - part),
                            part);
                return xp_errorf(
                    err,
                    -EINVAL,
                    "--eviction-hard: \"%.*s\" is not SIGNAL<VALUE (nodefs.available<10%%)",
                    (int)len,
                    part);
        }
        len -= sig + 1;
        part += sig + 1;
        if (len >= sizeof(value))
                return xp_errorf(
                    err, -EINVAL, "--eviction-hard: nodefs.available: the value is too long");
        memcpy(value, part, len);
        value[len] = '\0';
        memcpy(ret->text, value, len + 1);
        if (len > 1 && value[len - 1] == '%') {
                value[len - 1] = '\0';
                ret->percent = true;
                ret->share = strtod(value, &end);
                if (*end || end == value || !(ret->share > 0 && ret->share < 100))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "--eviction-hard: nodefs.available<%s: not a share between 0%% and 100%%",
                            ret->text);
                return 0;
        }
        ret->percent = false;
        if (xp_quantity_parse(value, &q, NULL) < 0 ||
            xp_quantity_to_int_ceil(&q, &ret->bytes) < 0 || ret->bytes <= 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "--eviction-hard: nodefs.available<%s: not a size (2Gi) or a share (10%%)",
                    ret->text);
        return 0;
}

int xp_agent_eviction_hard_parse(const char *text,
                                 struct xp_disk_threshold *ret,
                                 struct xp_error *err)
{
        struct xp_disk_threshold t = {0};
        bool found = false;
        const char *p = text;
        int r;

        if (!text || !*text)
                return xp_errorf(err, -EINVAL, "--eviction-hard: empty (nodefs.available<10%%)");
        while (*p) {
                size_t len = strcspn(p, ",");

                r = one(p, len, &t, err);
                if (r < 0)
                        return r;
                found = true;
                p += len + (p[len] == ',');
        }
        if (!found)
                return xp_errorf(err, -EINVAL, "--eviction-hard: \"%s\" names no threshold", text);
        *ret = t;
        return 0;
}

uint64_t xp_agent_threshold_bytes(const struct xp_disk_threshold *t, uint64_t total)
{
        if (t->percent) {
                double want = (double)total * t->share / 100.0;
                uint64_t v = (uint64_t)want;

                return (double)v < want ? v + 1 : v; /* rounded up */
        }
        return (uint64_t)t->bytes;
}

static int rank(const void *a, const void *b)
{
        const struct xp_disk_candidate *p = a, *q = b;
        bool p_over = p->usage > p->request, q_over = q->usage > q->request;
        int64_t p_beyond = (int64_t)p->usage - (int64_t)p->request;
        int64_t q_beyond = (int64_t)q->usage - (int64_t)q->request;

        if (p_over != q_over)
                return p_over ? -1 : 1;
        if (p->priority != q->priority)
                return p->priority < q->priority ? -1 : 1;
        if (p_beyond != q_beyond)
                return p_beyond > q_beyond ? -1 : 1;
        return 0;
}

void xp_agent_rank_disk_pressure(struct xp_disk_candidate *pods, size_t n)
{
        if (n > 1)
                qsort(pods, n, sizeof(*pods), rank);
}

char *xp_agent_disk_pressure_message(uint64_t threshold_bytes, uint64_t available_bytes)
{
        struct xp_quantity t = xp_quantity_from_int((int64_t)threshold_bytes);
        struct xp_quantity a = xp_quantity_from_int((int64_t)available_bytes);
        char ts[XP_QUANTITY_STRING_MAX], as[XP_QUANTITY_STRING_MAX];
        char *m;

        t.format = a.format = XP_QUANTITY_BINARY_SI;
        if (asprintf(
                &m,
                "The node was low on resource: ephemeral-storage. Threshold quantity: %s, available: %s. ",
                xp_quantity_format(&t, ts),
                xp_quantity_format(&a, as)) < 0)
                return NULL;
        return m;
}

int xp_agent_disk_pressure_condition(json_t *conditions, bool pressure, const char *since)
{
        json_t *c;
        size_t i;

        json_array_foreach(conditions, i, c)
        {
                if (!json_is_object(c) ||
                    strcmp(json_string_value(json_object_get(c, "type")) ?: "", "DiskPressure") !=
                        0)
                        continue;
                if (pressure &&
                    (json_object_set_new(c, "status", json_string("True")) < 0 ||
                     json_object_set_new(c, "reason", json_string("KubeletHasDiskPressure")) < 0 ||
                     json_object_set_new(c, "message", json_string("kubelet has disk pressure")) <
                         0))
                        return -ENOMEM;
                if (since && json_object_set_new(c, "lastTransitionTime", json_string(since)) < 0)
                        return -ENOMEM;
        }
        return 0;
}
