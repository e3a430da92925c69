/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Job's selector, as Kubernetes makes and checks it (docs/workloads.md): unless
 * spec.manualSelector is true, the create gives the template the labels controller-uid and
 * batch.kubernetes.io/controller-uid (the Job's uid) and job-name and
 * batch.kubernetes.io/job-name (its name), and sets spec.selector to select the uid alone; a
 * selector or such a label written by the client that disagrees is refused (a uid written
 * before the create, an older Job's, is replaced by the new one's). With
 * manualSelector the client's selector is required and must select the template's labels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kind_batch.h"
#include "schema.h"
#include "xpool/doc.h"
#include "xpool/selector.h"

#define UID_LABEL         "batch.kubernetes.io/controller-uid"
#define LEGACY_UID_LABEL  "controller-uid"
#define NAME_LABEL        "batch.kubernetes.io/job-name"
#define LEGACY_NAME_LABEL "job-name"

static bool manual(const json_t *spec)
{
        return json_is_true(json_object_get(spec, "manualSelector"));
}

/* The member of o named key as an object, made when missing; NULL: -ENOMEM. */
static json_t *member(json_t *o, const char *key)
{
        json_t *m = json_object_get(o, key);

        if (json_is_object(m))
                return m;
        m = json_object();
        if (!m || json_object_set_new(o, key, m) < 0)
                return NULL;
        return m;
}

/* key=value; unless always, only where the client did not write key (validation judged it). */
static int add(json_t *labels, const char *key, const char *value, bool always)
{
        if (!always && json_object_get(labels, key))
                return 0;
        return json_object_set_new(labels, key, json_string(value)) < 0 ? -ENOMEM : 0;
}

int xp_batch_job_generate_selector(json_t *spec, const char *name, const char *uid)
{
        json_t *template = json_object_get(spec, "template");
        json_t *labels, *match;
        int r = 0;

        if (manual(spec) || !json_is_object(template) || !name || !*name || !uid || !*uid)
                return 0;
        labels = member(member(template, "metadata"), "labels");
        match = member(member(spec, "selector"), "matchLabels");
        if (!labels || !match)
                return -ENOMEM;
        r = add(labels, LEGACY_NAME_LABEL, name, false);
        if (r >= 0)
                r = add(labels, NAME_LABEL, name, false);
        /* a uid the client wrote (a Job's copy created again) is an older object's: replaced */
        if (r >= 0)
                r = add(labels, LEGACY_UID_LABEL, uid, true);
        if (r >= 0)
                r = add(labels, UID_LABEL, uid, true);
        if (r >= 0)
                r = add(match, UID_LABEL, uid, true);
        return r;
}

/* ValidateHasLabel: the template's label key, when written, must be want ("": any, the uid
 * before the create gives one). */
static int
has_label(struct xp_decode_ctx *ctx, const json_t *labels, const char *key, const char *want)
{
        const char *got = json_string_value(json_object_get(labels, key));

        if (!got || !*want || strcmp(got, want) == 0)
                return 0;
        return xp_fail_key(ctx,
                           -EINVAL,
                           "spec.template.metadata.labels",
                           key,
                           "Invalid value: \"%s\": must be '%s'",
                           got,
                           want);
}

/* The generated selector: {matchLabels: {batch.kubernetes.io/controller-uid: uid}}, no more
 * (uid "": any value). */
static bool generated(const json_t *selector, const char *uid)
{
        const json_t *match = json_object_get(selector, "matchLabels");
        const char *value = json_string_value(json_object_get(match, UID_LABEL));

        return json_object_size(selector) == 1 && json_object_size(match) == 1 && value &&
               (!*uid || strcmp(value, uid) == 0);
}

static int fail_selector(struct xp_decode_ctx *ctx, const json_t *selector, const char *why)
{
        _cleanup_free_ char *text = NULL;

        if (xp_json_label_selector_string(selector, &text) < 0)
                return -ENOMEM;
        return xp_fail_field(ctx, -EINVAL, "spec.selector", "Invalid value: \"%s\": %s", text, why);
}

/* validateGeneratedSelector: uid is the Job's ("" before the create gives it one). */
static int
check_generated(struct xp_decode_ctx *ctx, const json_t *spec, const char *name, const char *uid)
{
        const json_t *labels = xp_json_at(spec, "template.metadata.labels");
        const json_t *selector = json_object_get(spec, "selector");
        int r = 0;

        if (selector && !generated(selector, uid))
                return fail_selector(ctx, selector, "`selector` not auto-generated");
        if (name && *name)
                r = has_label(ctx, labels, LEGACY_NAME_LABEL, name);
        if (r >= 0 && name && *name)
                r = has_label(ctx, labels, NAME_LABEL, name);
        if (r >= 0)
                r = has_label(ctx, labels, LEGACY_UID_LABEL, uid);
        if (r >= 0)
                r = has_label(ctx, labels, UID_LABEL, uid);
        return r;
}

/* A manual selector: required, and it must select the template's labels. */
static int check_manual(struct xp_decode_ctx *ctx, const json_t *spec)
{
        const json_t *selector = json_object_get(spec, "selector");
        _cleanup_(xp_label_selector_freep) struct xp_label_selector *parsed = NULL;
        _cleanup_free_ char *text = NULL;
        struct xp_error err = {0};
        int r;

        if (!json_is_object(selector))
                return xp_fail_field(ctx, -EINVAL, "spec.selector", "Required value");
        r = xp_json_label_selector_string(selector, &text);
        if (r < 0)
                return r;
        if (xp_label_selector_parse(text, &parsed, &err) < 0) {
                xp_error_clear(&err);
                return fail_selector(ctx, selector, "not a valid label selector");
        }
        if (!xp_label_selector_matches(parsed, xp_json_at(spec, "template.metadata.labels")))
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.template.metadata.labels",
                    "Invalid value: \"%s\": `selector` does not match template `labels`",
                    text);
        return 0;
}

int xp_batch_job_check_selector(struct xp_decode_ctx *ctx,
                                const json_t *spec,
                                const char *name,
                                const char *uid,
                                const json_t *old_spec)
{
        const json_t *selector = json_object_get(spec, "selector");

        if (old_spec &&
            !json_equal((json_t *)selector, (json_t *)json_object_get(old_spec, "selector")))
                return fail_selector(ctx, selector, "field is immutable");
        if (manual(spec))
                return check_manual(ctx, spec);
        return check_generated(ctx, spec, name, uid ? uid : "");
}
