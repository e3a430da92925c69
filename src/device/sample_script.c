/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metricsScript of a node description (xpool/devsample.h): figures of simulated devices that
 * change over time, so that dashboards, alerts and autoscaling can be tried without hardware.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/devsample.h"
#include "xpool/yaml.h"

#define SCRIPT_POINTS_MAX 1024
/* The largest time and byte count a script may give: their int64_t conversions (milliseconds,
 * bytes) stay defined */
#define SCRIPT_SECONDS_MAX 1e9
#define SCRIPT_BYTES_MAX   0x1p62

/* The figures a point may give, in this order: a sample's (has) or, where has is 0, one of DCGM's
 * profiling ratios (prof), which GPM gives real GPUs. */
static const struct {
        const char *field;
        unsigned has;
        enum xp_sample_prof prof;
} figures[] = {
    {"utilizationPercent", XP_SAMPLE_UTIL, 0},
    {"memoryUsedBytes", XP_SAMPLE_MEM_USED, 0},
    {"temperatureCelsius", XP_SAMPLE_TEMP, 0},
    {"powerWatts", XP_SAMPLE_POWER, 0},
    {"memoryCopyUtilizationPercent", XP_SAMPLE_MEM_COPY_UTIL, 0},
    {"smClockMHz", XP_SAMPLE_SM_CLOCK, 0},
    {"memoryClockMHz", XP_SAMPLE_MEM_CLOCK, 0},
    {"graphicsEngineActive", 0, XP_PROF_GR_ENGINE_ACTIVE},
    {"smActive", 0, XP_PROF_SM_ACTIVE},
    {"tensorActive", 0, XP_PROF_PIPE_TENSOR_ACTIVE},
    {"dramActive", 0, XP_PROF_DRAM_ACTIVE},
};
#define N_FIGURES (sizeof(figures) / sizeof(figures[0]))

struct point {
        int64_t at_ms;
        unsigned has; /* bit per entry of figures */
        double values[N_FIGURES];
};

struct track {
        char *id;
        struct point *points;
        size_t n;
};

struct xp_sim_script {
        int64_t period_ms;
        char *utilization_file; /* utilizationFile: every device's utilisation, read each sample */
        struct track *tracks;
        size_t n;
};

void xp_sim_script_free(struct xp_sim_script *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++) {
                free(s->tracks[i].id);
                free(s->tracks[i].points);
        }
        free(s->tracks);
        free(s->utilization_file);
        free(s);
}

static int parse_point(json_t *o, const char *name, const char *id, size_t k, struct point *ret)
{
        json_t *at = json_object_get(o, "at");
        const char *key;
        json_t *v;

        if (!json_is_object(o) || !json_is_number(at) || json_number_value(at) < 0 ||
            json_number_value(at) > SCRIPT_SECONDS_MAX)
                return xp_errorf(NULL,
                                 -EINVAL,
                                 "%s: metricsScript.devices.%s[%zu]: want {at: SECONDS, ...}",
                                 name,
                                 id,
                                 k);
        ret->at_ms = (int64_t)(json_number_value(at) * 1000);
        json_object_foreach(o, key, v)
        {
                size_t f;

                if (strcmp(key, "at") == 0)
                        continue;
                for (f = 0; f < N_FIGURES && strcmp(figures[f].field, key) != 0; f++)
                        ;
                if (f == N_FIGURES || !json_is_number(v) ||
                    (figures[f].has == XP_SAMPLE_MEM_USED &&
                     (json_number_value(v) < 0 || json_number_value(v) > SCRIPT_BYTES_MAX)))
                        return -EINVAL;
                ret->has |= 1u << f;
                ret->values[f] = json_number_value(v);
        }
        return 0;
}

static int
parse_track(json_t *list, const char *name, const char *id, struct track *t, struct xp_error *err)
{
        size_t k;
        json_t *o;

        if (!json_is_array(list) || json_array_size(list) == 0 ||
            json_array_size(list) > SCRIPT_POINTS_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: metricsScript.devices.%s: want a list of 1 to %d points",
                                 name,
                                 id,
                                 SCRIPT_POINTS_MAX);
        t->id = strdup(id);
        t->points = calloc(json_array_size(list), sizeof(*t->points));
        if (!t->id || !t->points)
                return -ENOMEM;
        json_array_foreach(list, k, o)
        {
                if (parse_point(o, name, id, k, &t->points[k]) < 0)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s: metricsScript.devices.%s[%zu]: want {at: SECONDS} and numbers among utilizationPercent, memoryUsedBytes, temperatureCelsius, powerWatts, memoryCopyUtilizationPercent, smClockMHz, memoryClockMHz, graphicsEngineActive, smActive, tensorActive, dramActive",
                            name,
                            id,
                            k);
                if (k > 0 && t->points[k].at_ms <= t->points[k - 1].at_ms)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s: metricsScript.devices.%s[%zu].at: the points must be in increasing time",
                            name,
                            id,
                            k);
                t->n++;
        }
        return 0;
}

static int
parse_root(json_t *script, const char *name, struct xp_sim_script *s, struct xp_error *err)
{
        json_t *period = json_object_get(script, "period"),
               *devices = json_object_get(script, "devices"),
               *file = json_object_get(script, "utilizationFile");
        const char *id;
        json_t *list;
        int r;

        if (file && (!json_string_value(file) || json_string_value(file)[0] != '/'))
                return xp_errorf(
                    err, -EINVAL, "%s: metricsScript.utilizationFile: want an absolute path", name);
        if (file) {
                s->utilization_file = strdup(json_string_value(file));
                if (!s->utilization_file)
                        return -ENOMEM;
        }
        if (!json_is_object(script) || (!json_is_object(devices) && !file) ||
            (period && (!json_is_number(period) || json_number_value(period) < 0 ||
                        json_number_value(period) > SCRIPT_SECONDS_MAX)))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "%s: metricsScript: want {period: SECONDS, devices: {ID: [points]}}",
                    name);
        s->period_ms = period ? (int64_t)(json_number_value(period) * 1000) : 0;
        s->tracks = calloc(json_object_size(devices) + 1, sizeof(*s->tracks));
        if (!s->tracks)
                return -ENOMEM;
        json_object_foreach(devices, id, list)
        {
                r = parse_track(list, name, id, &s->tracks[s->n], err);
                s->n++;
                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_sim_script_parse(const char *text,
                        size_t len,
                        const char *name,
                        struct xp_sim_script **ret,
                        struct xp_error *err)
{
        _cleanup_(xp_sim_script_freep) struct xp_sim_script *s = NULL;
        struct xp_yaml_document *docs = NULL;
        size_t n_docs = 0;
        json_t *script;
        int r;

        r = xp_yaml_load(text, len, name, &docs, &n_docs, err);
        if (r < 0)
                return r;
        script = n_docs == 1 ? json_object_get(docs[0].root, "metricsScript") : NULL;
        if (script) {
                s = calloc(1, sizeof(*s));
                r = s ? parse_root(script, name, s, err) : -ENOMEM;
        }
        xp_yaml_documents_free(docs, n_docs);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

static const struct track *find_track(const struct xp_sim_script *s, const char *id)
{
        const struct track *any = NULL;

        for (size_t i = 0; i < s->n; i++) {
                if (strcmp(s->tracks[i].id, id) == 0)
                        return &s->tracks[i];
                if (strcmp(s->tracks[i].id, "*") == 0)
                        any = &s->tracks[i];
        }
        return any;
}

static void store_prof(struct xp_device_sample *ret, enum xp_sample_prof prof, double v)
{
        ret->has_prof |= 1u << prof;
        ret->prof[prof] = v;
}

static void store(struct xp_device_sample *ret, unsigned has, double v)
{
        ret->has |= has;
        if (has == XP_SAMPLE_UTIL)
                ret->utilization_percent = v;
        else if (has == XP_SAMPLE_MEM_USED)
                ret->memory_used_bytes = (int64_t)v;
        else if (has == XP_SAMPLE_TEMP)
                ret->temperature_celsius = v;
        else if (has == XP_SAMPLE_POWER)
                ret->power_watts = v;
        else if (has == XP_SAMPLE_MEM_COPY_UTIL)
                ret->memory_copy_utilization_percent = v;
        else if (has == XP_SAMPLE_SM_CLOCK)
                ret->sm_clock_mhz = v;
        else
                ret->memory_clock_mhz = v;
}

/* The number in the utilizationFile, when it holds one. */
static bool file_utilization(const struct xp_sim_script *s, double *ret)
{
        char text[64];
        FILE *f = s->utilization_file ? fopen(s->utilization_file, "re") : NULL;
        bool ok = false;

        if (!f)
                return false;
        if (fgets(text, sizeof(text), f)) {
                char *end;
                double v = strtod(text, &end);
                ok = end != text && isfinite(v);
                *ret = v;
        }
        fclose(f);
        return ok;
}

static void eval_track(const struct xp_sim_script *s,
                       const struct track *t,
                       int64_t t_ms,
                       struct xp_device_sample *ret)
{
        size_t k = 0;

        if (s->period_ms > 0)
                t_ms %= s->period_ms;
        while (k + 1 < t->n && t->points[k + 1].at_ms <= t_ms)
                k++;
        for (size_t f = 0; f < N_FIGURES; f++) {
                const struct point *a = &t->points[k], *b = k + 1 < t->n ? &t->points[k + 1] : NULL;
                double v = a->values[f];

                if (!(a->has & (1u << f)))
                        continue;
                if (b && (b->has & (1u << f)) && t_ms > a->at_ms)
                        v += (b->values[f] - v) * (double)(t_ms - a->at_ms) /
                             (double)(b->at_ms - a->at_ms);
                if (figures[f].has)
                        store(ret, figures[f].has, v);
                else
                        store_prof(ret, figures[f].prof, v);
        }
}

bool xp_sim_script_eval(const struct xp_sim_script *s,
                        const char *id,
                        int64_t t_ms,
                        struct xp_device_sample *ret)
{
        const struct track *t = s ? find_track(s, id) : NULL;
        double util;

        if (t)
                eval_track(s, t, t_ms, ret);
        if (s && file_utilization(s, &util)) {
                store(ret, XP_SAMPLE_UTIL, util);
                return true;
        }
        return t != NULL;
}
