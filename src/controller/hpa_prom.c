/* SPDX-License-Identifier: Apache-2.0 */
/*
 * External and Object metrics read from a Prometheus-compatible HTTP API: the instant query a
 * metric becomes, and the value of its answer. The request itself is the server's (it owns the
 * endpoint's address and the HTTP client).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpa.h"

static bool prom_name(const char *s, bool colon)
{
        if (!s || !*s)
                return false;
        for (const char *p = s; *p; p++) {
                bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                             (colon && *p == ':');
                if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
                        return false;
        }
        return true;
}

static int put(char *buf, size_t size, size_t *len, const char *text, size_t n)
{
        if (*len + n >= size)
                return -ENAMETOOLONG;
        memcpy(buf + *len, text, n);
        *len += n;
        buf[*len] = '\0';
        return 0;
}

int xp_hpa_prom_query(const char *name,
                      const struct xp_hpa_label *labels,
                      size_t n_labels,
                      char *buf,
                      size_t size,
                      struct xp_error *err)
{
        size_t len = 0;
        int r = 0;

        if (!prom_name(name, true))
                return xp_errorf(err,
                                 -EINVAL,
                                 "metric name \"%s\" is not a Prometheus metric name",
                                 name ? name : "");
        if (size == 0)
                return -ENAMETOOLONG;
        buf[0] = '\0';
        r = put(buf, size, &len, name, strlen(name));
        for (size_t i = 0; i < n_labels && r >= 0; i++) {
                if (!prom_name(labels[i].name, false))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "label name \"%s\" is not a Prometheus label name",
                                         labels[i].name ? labels[i].name : "");
                r = put(buf, size, &len, i ? "," : "{", 1);
                if (r >= 0)
                        r = put(buf, size, &len, labels[i].name, strlen(labels[i].name));
                if (r >= 0)
                        r = put(buf, size, &len, "=\"", 2);
                for (const char *p = labels[i].value ? labels[i].value : ""; *p && r >= 0; p++) {
                        if (*p == '"' || *p == '\\')
                                r = put(buf, size, &len, "\\", 1);
                        if (r >= 0 && *p == '\n')
                                r = put(buf, size, &len, "\\n", 2);
                        else if (r >= 0)
                                r = put(buf, size, &len, p, 1);
                }
                if (r >= 0)
                        r = put(buf, size, &len, "\"", 1);
        }
        if (r >= 0 && n_labels > 0)
                r = put(buf, size, &len, "}", 1);
        if (r < 0)
                return xp_errorf(err, r, "the query of metric %s is too long", name);
        return 0;
}

/* A sample's [time, "value"] pair. */
static int sample_value(const json_t *pair, double *ret, struct xp_error *err)
{
        const char *text = json_string_value(json_array_get(pair, 1));
        char *end;

        if (!json_is_array(pair) || json_array_size(pair) != 2 || !text)
                return xp_errorf(err, -EINVAL, "prometheus: a sample is not [time, \"value\"]");
        double v = strtod(text, &end);
        if (end == text || *end || !isfinite(v))
                return xp_errorf(
                    err, -EINVAL, "prometheus: the value \"%.32s\" is not a finite number", text);
        *ret = v;
        return 0;
}

static int answer_value(const json_t *root, double *ret, struct xp_error *err)
{
        const char *status = json_string_value(json_object_get(root, "status"));
        const json_t *data = json_object_get(root, "data");
        const char *type = json_string_value(json_object_get(data, "resultType"));
        const json_t *result = json_object_get(data, "result");
        double sum = 0, v;
        size_t i;
        json_t *series;
        int r;

        if (!status || strcmp(status, "success") != 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "prometheus: %s: %s",
                                 json_string_value(json_object_get(root, "errorType")) ?: "error",
                                 json_string_value(json_object_get(root, "error"))
                                     ?: "the query failed");
        if (type && strcmp(type, "scalar") == 0)
                return sample_value(result, ret, err);
        if (!type || strcmp(type, "vector") != 0 || !json_is_array(result))
                return xp_errorf(err,
                                 -EINVAL,
                                 "prometheus: the answer is a %s, not an instant vector",
                                 type ? type : "document without a resultType");
        if (json_array_size(result) == 0)
                return xp_errorf(err, -ENODATA, "prometheus: no series matched the query");
        json_array_foreach(result, i, series)
        {
                r = sample_value(json_object_get(series, "value"), &v, err);
                if (r < 0)
                        return r;
                sum += v;
        }
        *ret = sum;
        return 0;
}

int xp_hpa_prom_value(const char *body, size_t len, double *ret, struct xp_error *err)
{
        json_error_t jerr;
        json_t *root = json_loadb(body, len, 0, &jerr);

        if (!root)
                return xp_errorf(err,
                                 -EINVAL,
                                 "prometheus: the answer is not JSON: %s at line %d",
                                 jerr.text,
                                 jerr.line);
        int r = answer_value(root, ret, err);
        json_decref(root);
        return r;
}
