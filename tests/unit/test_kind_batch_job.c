/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Job's selector as Kubernetes generates and checks it (kind_batch_selector.c): the create's
 * labels and spec.selector, the refusals of a client's disagreeing selector or labels, a manual
 * selector, the selector's immutability.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "xpool/doc.h"
#include "xpool/kind.h"

static json_t *js(const char *text)
{
        char *copy = strdup(text);
        json_error_t error;
        json_t *json;

        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json = json_loads(copy, 0, &error);
        if (!json)
                fail_msg("bad JSON in the test: %s: %s", error.text, copy);
        free(copy);
        return json;
}

#define POD_SPEC "'spec':{'restartPolicy':'Never','containers':[{'name':'c','image':'pi:1'}]}"
#define JOB(meta, spec)                                                                            \
        "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'pi','namespace':'default'" meta \
        "},'spec':{" spec "}}"
#define TEMPLATE(labels) "'template':{'metadata':{'labels':{" labels "}}," POD_SPEC "}"

static struct xp_doc *decode(const char *text)
{
        json_t *json = js(text);
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        if (xp_doc_from_json(&xp_kind_job, json, NULL, XP_DECODE_STRICT, &doc, &err) < 0)
                fail_msg("%s: %s", text, err.msg);
        json_decref(json);
        return doc;
}

static void decode_fails(const char *text, const char *message)
{
        json_t *json = js(text);
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};
        int r = xp_doc_from_json(&xp_kind_job, json, NULL, XP_DECODE_STRICT, &doc, &err);

        if (r != -EINVAL || !strstr(err.msg, message))
                fail_msg("%s\ngot %d \"%s\"\nwant \"%s\"", text, r, err.msg, message);
        json_decref(json);
}

/* What the registry's create does to a decoded Job: the server's uid, then the kind's hook. */
static void create(struct xp_doc *doc, const char *uid)
{
        free(doc->metadata.uid);
        doc->metadata.uid = strdup(uid);
        assert_non_null(xp_kind_job.set_defaults);
        assert_int_equal(xp_kind_job.set_defaults(doc), 0);
}

static const char *label(const struct xp_doc *doc, const char *key)
{
        const json_t *labels = xp_json_at(doc->body, "spec.template.metadata.labels");
        return json_string_value(json_object_get(labels, key));
}

static void generated(void **state)
{
        (void)state;
        struct xp_doc *doc = decode(JOB("", TEMPLATE("'app':'pi'")));
        struct xp_error err = {0};

        create(doc, "u-1");
        assert_string_equal(label(doc, "app"), "pi");
        assert_string_equal(label(doc, "job-name"), "pi");
        assert_string_equal(label(doc, "batch.kubernetes.io/job-name"), "pi");
        assert_string_equal(label(doc, "controller-uid"), "u-1");
        assert_string_equal(label(doc, "batch.kubernetes.io/controller-uid"), "u-1");
        const json_t *selector = xp_json_at(doc->body, "spec.selector");
        assert_int_equal(json_object_size(selector), 1);
        assert_int_equal(json_object_size(json_object_get(selector, "matchLabels")), 1);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(selector, "matchLabels"),
                                              "batch.kubernetes.io/controller-uid")),
            "u-1");
        /* what was stored passes the kind's checks again, and as an update of itself */
        assert_int_equal(xp_doc_validate(doc, NULL, &err), 0);
        assert_int_equal(xp_doc_validate(doc, doc, &err), 0);
        xp_doc_free(doc);
}

static void refused(void **state)
{
        (void)state;
        decode_fails(JOB("", "'selector':{'matchLabels':{'app':'pi'}}," TEMPLATE("'app':'pi'")),
                     "spec.selector: Invalid value: \"app=pi\": `selector` not auto-generated");
        decode_fails(JOB("",
                         "'selector':{'matchLabels':{'batch.kubernetes.io/controller-uid':'u-1',"
                         "'app':'pi'}}," TEMPLATE("'app':'pi'")),
                     "`selector` not auto-generated");
        decode_fails(JOB("", TEMPLATE("'job-name':'other'")),
                     "spec.template.metadata.labels[job-name]: Invalid value: \"other\": must be "
                     "'pi'");
        decode_fails(JOB(",'uid':'u-1'", TEMPLATE("'controller-uid':'u-2'")),
                     "spec.template.metadata.labels[controller-uid]: Invalid value: \"u-2\": must "
                     "be 'u-1'");
        decode_fails(
            JOB(",'uid':'u-1'",
                "'selector':{'matchLabels':{'batch.kubernetes.io/controller-uid':'u-2'}}," TEMPLATE(
                    "'app':'pi'")),
            "`selector` not auto-generated");
}

/* A Job's copy created again carries an older Job's uid: the new one's replaces it. */
static void copied(void **state)
{
        (void)state;
        struct xp_doc *doc = decode(JOB(
            ",'uid':'u-old'",
            "'selector':{'matchLabels':{'batch.kubernetes.io/controller-uid':'u-old'}}," TEMPLATE(
                "'controller-uid':'u-old','batch.kubernetes.io/controller-uid':'u-old',"
                "'job-name':'pi'")));

        create(doc, "u-new");
        assert_string_equal(label(doc, "controller-uid"), "u-new");
        assert_string_equal(label(doc, "batch.kubernetes.io/controller-uid"), "u-new");
        assert_string_equal(
            json_string_value(json_object_get(xp_json_at(doc->body, "spec.selector.matchLabels"),
                                              "batch.kubernetes.io/controller-uid")),
            "u-new");
        xp_doc_free(doc);
}

static void manual(void **state)
{
        (void)state;
        decode_fails(JOB("", "'manualSelector':true," TEMPLATE("'app':'pi'")),
                     "spec.selector: Required value");
        decode_fails(
            JOB("",
                "'manualSelector':true,'selector':{'matchLabels':{'app':'other'}}," TEMPLATE(
                    "'app':'pi'")),
            "spec.template.metadata.labels: Invalid value: \"app=other\": `selector` "
            "does not match template `labels`");

        struct xp_doc *doc =
            decode(JOB("",
                       "'manualSelector':true,'selector':{'matchLabels':{'app':'pi'}}," TEMPLATE(
                           "'app':'pi'")));
        create(doc, "u-1");
        assert_null(label(doc, "controller-uid"));
        assert_null(label(doc, "job-name"));
        assert_int_equal(json_object_size(xp_json_at(doc->body, "spec.selector.matchLabels")), 1);
        xp_doc_free(doc);
}

static void immutable(void **state)
{
        (void)state;
        struct xp_doc *doc = decode(JOB("", TEMPLATE("'app':'pi'")));
        struct xp_error err = {0};
        json_t *shared, *stored;

        create(doc, "u-1");
        /* to_json's members are the document's own: the stored copy must not see the change */
        assert_int_equal(xp_kind_job.to_json(doc, &shared), 0);
        stored = json_deep_copy(shared);
        json_decref(shared);
        json_object_set_new(json_object_get(json_object_get(doc->body, "spec"), "selector"),
                            "matchExpressions",
                            json_pack("[{s:s, s:s}]", "key", "app", "operator", "Exists"));
        assert_int_equal(xp_kind_job.validate_update(doc, stored, &err), -EINVAL);
        if (!strstr(err.msg, "field is immutable"))
                fail_msg("%s", err.msg);
        assert_non_null(strstr(err.msg, "spec.selector: Invalid value:"));
        assert_non_null(strstr(err.msg, "field is immutable"));
        xp_error_clear(&err);
        json_decref(stored);
        xp_doc_free(doc);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(generated),
            cmocka_unit_test(refused),
            cmocka_unit_test(copied),
            cmocka_unit_test(manual),
            cmocka_unit_test(immutable),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
