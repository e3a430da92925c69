/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes' validation of the apps/v1 kinds (ValidateDeployment, ValidateReplicaSet,
 * ValidateDaemonSet and their updates), with kube-apiserver's messages: the selector required,
 * not empty, selecting the template's labels and immutable; counts not negative; the pod
 * template valid as a pod with restartPolicy Always; the strategies' fields. Values are printed
 * as Go's %#v prints them, as field.Invalid does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind_apps.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/poddefaults.h"
#include "xpool/selector.h"

/* ---- Go's %#v of the values in the messages ------------------------------------------------- */

struct gobuf {
        char text[1024];
        size_t len;
};

static void put(struct gobuf *b, const char *s)
{
        size_t n = strlen(s);

        if (b->len + n >= sizeof(b->text))
                n = sizeof(b->text) - 1 - b->len;
        memcpy(b->text + b->len, s, n);
        b->len += n;
        b->text[b->len] = '\0';
}

static void put_quoted(struct gobuf *b, const char *s)
{
        char c[3] = {0};

        put(b, "\"");
        for (; s && *s; s++) {
                c[0] = *s == '"' || *s == '\\' ? '\\' : *s;
                c[1] = *s == '"' || *s == '\\' ? *s : '\0';
                put(b, c);
        }
        put(b, "\"");
}

static int by_key(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* map[string]string{"a":"1", "b":"2"}, keys sorted; map[string]string(nil) when empty. */
static void put_string_map(struct gobuf *b, const json_t *map)
{
        size_t n = json_object_size(map), i = 0;
        const char **keys = calloc(n + 1, sizeof(*keys));
        const char *key;
        json_t *v;

        if (n == 0 || !keys) {
                free(keys);
                put(b, "map[string]string(nil)");
                return;
        }
        json_object_foreach((json_t *)map, key, v) keys[i++] = key;
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(keys, n, sizeof(*keys), by_key);
        put(b, "map[string]string{");
        for (i = 0; i < n; i++) {
                if (i)
                        put(b, ", ");
                put_quoted(b, keys[i]);
                put(b, ":");
                put_quoted(b, json_string_value(json_object_get(map, keys[i])));
        }
        put(b, "}");
        free(keys);
}

static void put_requirements(struct gobuf *b, const json_t *exprs)
{
        size_t i, k;
        json_t *e, *v;

        if (json_array_size(exprs) == 0) {
                put(b, "[]v1.LabelSelectorRequirement(nil)");
                return;
        }
        put(b, "[]v1.LabelSelectorRequirement{");
        json_array_foreach(exprs, i, e)
        {
                put(b,
                    i ? ", v1.LabelSelectorRequirement{Key:" : "v1.LabelSelectorRequirement{Key:");
                put_quoted(b, json_string_value(json_object_get(e, "key")));
                put(b, ", Operator:");
                put_quoted(b, json_string_value(json_object_get(e, "operator")));
                put(b,
                    json_array_size(json_object_get(e, "values")) ? ", Values:[]string{"
                                                                  : ", Values:[]string(nil)");
                json_array_foreach(json_object_get(e, "values"), k, v)
                {
                        if (k)
                                put(b, ", ");
                        put_quoted(b, json_string_value(v));
                }
                put(b, json_array_size(json_object_get(e, "values")) ? "}}" : "}");
        }
        put(b, "}");
}

static const char *go_selector(struct gobuf *b, const json_t *selector)
{
        b->len = 0;
        b->text[0] = '\0';
        put(b, "v1.LabelSelector{MatchLabels:");
        put_string_map(b, json_object_get(selector, "matchLabels"));
        put(b, ", MatchExpressions:");
        put_requirements(b, json_object_get(selector, "matchExpressions"));
        put(b, "}");
        return b->text;
}

static const char *go_map(struct gobuf *b, const json_t *map)
{
        b->len = 0;
        b->text[0] = '\0';
        put_string_map(b, map);
        return b->text;
}

/* ---- the shared checks ---------------------------------------------------------------------- */

/* Whether the LabelSelector object selects labels: through its text, as Kubernetes'
 * LabelSelectorAsSelector. -ENOMEM, or 1/0. */
static int selects(const json_t *selector, const json_t *labels)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(xp_label_selector_freep) struct xp_label_selector *parsed = NULL;

        if (xp_json_label_selector_string(selector, &text) < 0)
                return -ENOMEM;
        if (xp_label_selector_parse(text, &parsed, NULL) < 0)
                return 0; /* the selector's own check reports it */
        return xp_label_selector_matches(parsed, labels) ? 1 : 0;
}

static int non_negative(struct xp_decode_ctx *ctx, const json_t *body, const char *path)
{
        const json_t *v = xp_json_at(body, path);
        struct xp_ge_msg m;

        if (json_is_integer(v) && json_integer_value(v) < 0)
                return xp_fail_field(
                    ctx, -EINVAL, path, "%s", xp_ge_msg_int(&m, json_integer_value(v), 0));
        return 0;
}

/* The template, validated as the pod it makes (after a pod's defaults), its errors re-rooted
 * under spec.template. */
static int check_template_pod(struct xp_decode_ctx *ctx, const json_t *template)
{
        const json_t *meta = json_object_get(template, "metadata");
        const json_t *spec = json_object_get(template, "spec");
        /* copies: neither a pod's defaults nor its name may reach the template */
        json_t *pod = json_pack("{s:s, s:s, s:o, s:o}",
                                "apiVersion",
                                "v1",
                                "kind",
                                "Pod",
                                "metadata",
                                meta ? json_deep_copy(meta) : json_object(),
                                "spec",
                                spec ? json_deep_copy(spec) : json_object());
        struct xp_error err = {0};
        void *object = NULL;
        int r;

        if (!pod)
                return -ENOMEM;
        /* a template has no name; the pods get theirs when made */
        json_object_set_new(json_object_get(pod, "metadata"), "name", json_string("template"));
        r = xp_pod_defaults_apply(pod, NULL);
        if (r >= 0)
                r = xp_kind_pod.from_json(pod, NULL, 0, &object, &err);
        json_decref(pod);
        if (object)
                xp_kind_pod.free(object);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return xp_fail_field(ctx, -EINVAL, "spec.template", "%s", err.msg);
        return 0;
}

static int check_template(struct xp_decode_ctx *ctx, const json_t *body, bool restart_always)
{
        const json_t *template = xp_json_object_at(body, "spec.template");
        const json_t *selector = xp_json_object_at(body, "spec.selector");
        const json_t *labels = xp_json_object_at(body, "spec.template.metadata.labels");
        const char *restart = xp_json_str_at(body, "spec.template.spec.restartPolicy", "Always");
        struct gobuf b;
        int r;

        if (!template)
                return xp_fail_field(ctx, -EINVAL, "spec.template", "Required value");
        if (selector && json_object_size(labels) == 0)
                return xp_fail_field(
                    ctx, -EINVAL, "spec.template.metadata.labels", "Required value");
        r = selector ? selects(selector, labels) : 1;
        if (r < 0)
                return r;
        if (r == 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.template.metadata.labels",
                    "Invalid value: %s: `selector` does not match template `labels`",
                    go_map(&b, labels));
        if (restart_always && strcmp(restart, "Always") != 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.template.spec.restartPolicy",
                                     "Unsupported value: \"%s\": supported values: \"Always\"",
                                     restart);
        r = check_template_pod(ctx, template);
        return r;
}

static int check_selector(struct xp_decode_ctx *ctx, const json_t *body, const char *what)
{
        const json_t *selector = xp_json_at(body, "spec.selector");
        struct gobuf b;

        if (!selector || json_is_null(selector))
                return xp_fail_field(ctx, -EINVAL, "spec.selector", "Required value");
        if (json_object_size(json_object_get(selector, "matchLabels")) == 0 &&
            json_array_size(json_object_get(selector, "matchExpressions")) == 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.selector",
                                     "Invalid value: %s: empty selector is invalid for %s",
                                     go_selector(&b, selector),
                                     what);
        return 0;
}

static int check_immutable_selector(struct xp_decode_ctx *ctx,
                                    const struct xp_doc *doc,
                                    const struct xp_doc *old)
{
        const json_t *now = xp_json_at(doc->body, "spec.selector");
        struct gobuf b;

        if (!old || json_equal((json_t *)now, (json_t *)xp_json_at(old->body, "spec.selector")))
                return 0;
        return xp_fail_field(ctx,
                             -EINVAL,
                             "spec.selector",
                             "Invalid value: %s: field is immutable",
                             go_selector(&b, now));
}

/* On its own (old NULL): everything; on an update (old): what may not change. */
static int check_common(struct xp_decode_ctx *ctx,
                        const struct xp_doc *doc,
                        const struct xp_doc *old,
                        const char *what)
{
        int r;

        if (old)
                return check_immutable_selector(ctx, doc, old);
        r = check_selector(ctx, doc->body, what);
        if (r >= 0)
                r = non_negative(ctx, doc->body, "spec.replicas");
        if (r >= 0)
                r = non_negative(ctx, doc->body, "spec.minReadySeconds");
        if (r >= 0)
                r = non_negative(ctx, doc->body, "spec.revisionHistoryLimit");
        if (r >= 0)
                r = check_template(ctx, doc->body, true);
        return r;
}

/* ---- the strategies ------------------------------------------------------------------------- */

/* An IntOrString of a strategy: an integer >= 0, or "N%" (at most 100% when max100). Sets
 * *ret_zero when it is 0 (or 0%). */
static int check_intstr(
    struct xp_decode_ctx *ctx, const json_t *body, const char *path, bool max100, bool *ret_zero)
{
        const json_t *v = xp_json_at(body, path);
        const char *text = json_string_value(v);
        struct xp_ge_msg m;
        char *end;
        long pct;

        *ret_zero = false;
        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v)) {
                if (json_integer_value(v) < 0)
                        return xp_fail_field(
                            ctx, -EINVAL, path, "%s", xp_ge_msg_int(&m, json_integer_value(v), 0));
                *ret_zero = json_integer_value(v) == 0;
                return 0;
        }
        pct = text && *text >= '0' && *text <= '9' ? strtol(text, &end, 10) : -1;
        if (pct < 0 || *end != '%' || end[1])
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    path,
                    "Invalid value: \"%s\": a valid percent string must be a numeric string followed by an ending '%%' (e.g. '1%%',  or '93%%', regex used for validation is '[0-9]+%%')",
                    text ? text : "");
        if (max100 && pct > 100)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     path,
                                     "Invalid value: \"%s\": must not be greater than 100%%",
                                     text);
        *ret_zero = pct == 0;
        return 0;
}

static int check_rolling(struct xp_decode_ctx *ctx,
                         const json_t *body,
                         const char *base,
                         const char *zero_message)
{
        char unavailable[128], surge[128];
        bool unavailable_zero, surge_zero;
        int r;

        snprintf(unavailable, sizeof(unavailable), "%s.maxUnavailable", base);
        snprintf(surge, sizeof(surge), "%s.maxSurge", base);
        r = check_intstr(ctx, body, unavailable, true, &unavailable_zero);
        if (r >= 0)
                r = check_intstr(ctx, body, surge, false, &surge_zero);
        if (r >= 0 && unavailable_zero && surge_zero) {
                const json_t *v = xp_json_at(body, unavailable);

                if (json_is_integer(v))
                        return xp_fail_field(ctx,
                                             -EINVAL,
                                             unavailable,
                                             "Invalid value: %lld: %s",
                                             (long long)json_integer_value(v),
                                             zero_message);
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     unavailable,
                                     "Invalid value: %s: %s",
                                     json_string_value(v),
                                     zero_message);
        }
        return r;
}

static int check_strategy(struct xp_decode_ctx *ctx, const json_t *body)
{
        const char *type = xp_json_str_at(body, "spec.strategy.type", "RollingUpdate");

        if (strcmp(type, "Recreate") == 0) {
                if (xp_json_at(body, "spec.strategy.rollingUpdate"))
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            "spec.strategy.rollingUpdate",
                            "Forbidden: may not be specified when strategy `type` is 'Recreate'");
                return 0;
        }
        if (strcmp(type, "RollingUpdate") != 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.strategy.type",
                    "Unsupported value: \"%s\": supported values: \"Recreate\", \"RollingUpdate\"",
                    type);
        return check_rolling(
            ctx, body, "spec.strategy.rollingUpdate", "may not be 0 when `maxSurge` is 0");
}

int xp_apps_deployment_validate(struct xp_decode_ctx *ctx,
                                const struct xp_doc *doc,
                                const struct xp_doc *old)
{
        int64_t deadline = xp_json_int_at(doc->body, "spec.progressDeadlineSeconds", -1);
        int64_t min_ready = xp_json_int_at(doc->body, "spec.minReadySeconds", 0);
        int r = check_common(ctx, doc, old, "deployment");

        if (old)
                return r;
        if (r >= 0)
                r = check_strategy(ctx, doc->body);
        if (r >= 0 && deadline >= 0 && deadline <= min_ready)
                r = xp_fail_field(ctx,
                                  -EINVAL,
                                  "spec.progressDeadlineSeconds",
                                  "Invalid value: %lld: must be greater than minReadySeconds",
                                  (long long)deadline);
        return r;
}

int xp_apps_replicaset_validate(struct xp_decode_ctx *ctx,
                                const struct xp_doc *doc,
                                const struct xp_doc *old)
{
        return check_common(ctx, doc, old, "replicaset");
}

int xp_apps_daemonset_validate(struct xp_decode_ctx *ctx,
                               const struct xp_doc *doc,
                               const struct xp_doc *old)
{
        const char *type = xp_json_str_at(doc->body, "spec.updateStrategy.type", "RollingUpdate");
        int r = check_common(ctx, doc, old, "daemonset");

        if (r < 0 || old)
                return r;
        if (strcmp(type, "OnDelete") == 0)
                return 0;
        if (strcmp(type, "RollingUpdate") != 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.updateStrategy.type",
                    "Unsupported value: \"%s\": supported values: \"OnDelete\", \"RollingUpdate\"",
                    type);
        return check_rolling(
            ctx, doc->body, "spec.updateStrategy.rollingUpdate", "cannot be 0 when maxSurge is 0");
}

int xp_apps_check_intstr(
    struct xp_decode_ctx *ctx, const json_t *body, const char *path, bool max100, bool *ret_zero)
{
        return check_intstr(ctx, body, path, max100, ret_zero);
}
