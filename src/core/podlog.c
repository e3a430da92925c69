/* SPDX-License-Identifier: Apache-2.0 */
/* The options of a pod's log as a query (include/core/xpool/podlog.h). */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/macro.h"
#include "xpool/podlog.h"
#include "xpool/timeutil.h"

/* Go's strconv.ParseBool, which the API server uses for query parameters; absent is false. */
static bool parse_bool(const char *v, bool *ret)
{
        static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
        static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

        *ret = false;
        if (!v)
                return true;
        for (size_t i = 0; i < XP_ELEMENTSOF(yes); i++) {
                if (strcmp(v, yes[i]) == 0) {
                        *ret = true;
                        return true;
                }
                if (strcmp(v, no[i]) == 0)
                        return true;
        }
        return false;
}

/* A decimal >= min (at most 18 digits); absent leaves *ret. */
static bool parse_int(const char *v, int64_t min, int64_t *ret)
{
        int64_t x = 0;
        size_t len;

        if (!v)
                return true;
        len = strlen(v);
        if (len == 0 || len > 18)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return false;
                x = x * 10 + (v[i] - '0');
        }
        if (x < min)
                return false;
        *ret = x;
        return true;
}

static const struct {
        const char *name;
        size_t offset;
} bools[] = {
    {"follow", offsetof(struct xp_pod_log_options, follow)},
    {"previous", offsetof(struct xp_pod_log_options, previous)},
    {"timestamps", offsetof(struct xp_pod_log_options, timestamps)},
};

static const struct {
        const char *name;
        size_t offset;
        int64_t min;
        const char *want;
} ints[] = {
    {"tailLines", offsetof(struct xp_pod_log_options, tail_lines), 0, "a number >= 0"},
    {"sinceSeconds", offsetof(struct xp_pod_log_options, since_seconds), 1, "a number >= 1"},
    {"limitBytes", offsetof(struct xp_pod_log_options, limit_bytes), 1, "a number >= 1"},
};

static int
refuse(struct xp_pod_log_refusal *ret, const char *option, const char *value, const char *want)
{
        if (ret)
                *ret = (struct xp_pod_log_refusal){.option = option, .value = value, .want = want};
        return -EINVAL;
}

int xp_pod_log_options_parse(xp_pod_log_query_fn *query,
                             void *userdata,
                             struct xp_pod_log_options *ret,
                             struct xp_pod_log_refusal *ret_refusal)
{
        struct xp_pod_log_options o = XP_POD_LOG_OPTIONS_INIT;
        const char *since_time = query(userdata, "sinceTime");

        for (size_t i = 0; i < XP_ELEMENTSOF(bools); i++) {
                const char *v = query(userdata, bools[i].name);

                if (!parse_bool(v, (bool *)((char *)&o + bools[i].offset)))
                        return refuse(ret_refusal, bools[i].name, v, "true or false");
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(ints); i++) {
                const char *v = query(userdata, ints[i].name);

                if (!parse_int(v, ints[i].min, (int64_t *)((char *)&o + ints[i].offset)))
                        return refuse(ret_refusal, ints[i].name, v, ints[i].want);
        }
        if (since_time && o.since_seconds < 0 &&
            xp_time_parse_rfc3339(since_time, &o.since_time) < 0)
                return refuse(ret_refusal, "sinceTime", since_time, "an RFC 3339 time");
        *ret = o;
        return 0;
}

int xp_pod_log_options_query(const struct xp_pod_log_options *o, int64_t now, char **ret)
{
        _cleanup_free_ char *text = NULL;
        int64_t since = o->since_seconds;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        const char *sep = "";

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < XP_ELEMENTSOF(bools); i++)
                if (*(const bool *)((const char *)o + bools[i].offset)) {
                        fprintf(f, "%s%s=true", sep, bools[i].name);
                        sep = "&";
                }
        if (since < 0 && o->since_time != 0)
                since = now - o->since_time < 1 ? 1 : now - o->since_time;
        for (size_t i = 0; i < XP_ELEMENTSOF(ints); i++) {
                int64_t v = ints[i].offset == offsetof(struct xp_pod_log_options, since_seconds)
                                ? since
                                : *(const int64_t *)((const char *)o + ints[i].offset);

                if (v >= 0) {
                        fprintf(f, "%s%s=%" PRId64, sep, ints[i].name, v);
                        sep = "&";
                }
        }
        if (fclose(f) != 0 || !text)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}

int64_t xp_pod_log_options_since_ns(const struct xp_pod_log_options *o, int64_t now_ns)
{
        if (o->since_seconds > 0)
                return now_ns - o->since_seconds * 1000000000LL;
        if (o->since_time != 0)
                return o->since_time * 1000000000LL;
        return 0;
}

/* The kubelet's words for the most common waits (ErrImagePull, ImagePullBackOff), else the
 * reason itself. */
static const char *waiting_words(const char *reason)
{
        if (!reason || !*reason)
                return "no logs yet";
        if (strcmp(reason, "ErrImagePull") == 0)
                return "image can't be pulled";
        if (strcmp(reason, "ImagePullBackOff") == 0)
                return "trying and failing to pull image";
        return reason;
}

bool xp_pod_log_not_started(
    const json_t *pod, const char *container, bool previous, char *message, size_t size)
{
        const json_t *status = json_object_get(pod, "status"), *c, *state = NULL;
        const char *name =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        size_t i;

        if (previous)
                return false;
        json_array_foreach(
            json_object_get(status, "containerStatuses"),
            i,
            c) if (strcmp(json_string_value(json_object_get(c, "name")) ?: "", container) == 0)
        {
                if (json_object_get(json_object_get(c, "lastState"), "terminated"))
                        return false;
                state = json_object_get(c, "state");
                break;
        }
        if (!json_object_get(state, "waiting") || json_object_get(state, "running") ||
            json_object_get(state, "terminated"))
                return false;
        snprintf(message,
                 size,
                 "container \"%s\" in pod \"%s\" is waiting to start: %s",
                 container,
                 name ? name : "",
                 waiting_words(json_string_value(
                     json_object_get(json_object_get(state, "waiting"), "reason"))));
        return true;
}
