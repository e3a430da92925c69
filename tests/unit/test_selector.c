/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "xpool/macro.h"
#include "xpool/selector.h"
#include "xpool/strmap.h"

static json_t *load(const char *text)
{
        json_error_t jerr;
        json_t *v = json_loads(text, 0, &jerr);

        if (!v)
                fail_msg("bad test JSON %s: %s", text, jerr.text);
        return v;
}

/* ---- label selectors: parsing and matching ------------------------------------------------- */

struct label_case {
        const char *selector;
        const char *labels; /* JSON object, or NULL for no labels */
        bool match;
};

static const struct label_case label_cases[] = {
    /* empty selectors select everything */
    {"", NULL, true},
    {"", "{\"a\": \"b\"}", true},
    {"  \t\r\n ", "{}", true},
    /* equality */
    {"a=b", "{\"a\": \"b\"}", true},
    {"a=b", "{\"a\": \"c\"}", false},
    {"a=b", "{\"x\": \"b\"}", false},
    {"a=b", NULL, false},
    {"a==b", "{\"a\": \"b\"}", true},
    {"a==b", "{\"a\": \"bb\"}", false},
    {"a!=b", "{\"a\": \"b\"}", false},
    {"a!=b", "{\"a\": \"c\"}", true},
    {"a!=b", "{}", true},
    {"a!=b", NULL, true},
    {"a=", "{\"a\": \"\"}", true},
    {"a=", "{\"a\": \"x\"}", false},
    {"a=", "{}", false},
    {"a!=", "{}", true},
    {"a!=", "{\"a\": \"\"}", false},
    {"a=,b", "{\"a\": \"\", \"b\": \"1\"}", true},
    /* whitespace around every token */
    {" a = b , c != d ", "{\"a\": \"b\", \"c\": \"e\"}", true},
    {"a\t==\nb", "{\"a\": \"b\"}", true},
    /* existence */
    {"a", "{\"a\": \"\"}", true},
    {"a", "{\"a\": \"x\"}", true},
    {"a", "{\"b\": \"x\"}", false},
    {"a", NULL, false},
    {"!a", "{\"a\": \"x\"}", false},
    {"!a", "{\"b\": \"x\"}", true},
    {"!a", NULL, true},
    {"! a", "{}", true},
    {"a,!b", "{\"a\": \"1\"}", true},
    {"a,!b", "{\"a\": \"1\", \"b\": \"2\"}", false},
    /* sets */
    {"env in (prod, dev)", "{\"env\": \"dev\"}", true},
    {"env in (prod, dev)", "{\"env\": \"qa\"}", false},
    {"env in (prod, dev)", "{}", false},
    {"env in(prod)", "{\"env\": \"prod\"}", true},
    {"env notin (prod, dev)", "{\"env\": \"qa\"}", true},
    {"env notin (prod, dev)", "{\"env\": \"prod\"}", false},
    {"env notin (prod)", "{}", true},
    {"env in ()", "{\"env\": \"\"}", true},
    {"env in ()", "{\"env\": \"x\"}", false},
    {"env in (,x)", "{\"env\": \"\"}", true},
    {"env in (x,)", "{\"env\": \"\"}", true},
    {"env in (x,,y)", "{\"env\": \"\"}", true},
    {"env in (x,,y)", "{\"env\": \"y\"}", true},
    {"env in (x,y)", "{\"env\": \"\"}", false},
    {"env in (in, notin)", "{\"env\": \"notin\"}", true},
    /* in and notin are plain words outside the operator position */
    {"in=notin", "{\"in\": \"notin\"}", true},
    {"notin", "{\"notin\": \"\"}", true},
    {"in in (in)", "{\"in\": \"in\"}", true},
    /* integers */
    {"n>3", "{\"n\": \"4\"}", true},
    {"n>3", "{\"n\": \"3\"}", false},
    {"n>3", "{\"n\": \"30\"}", true},
    {"n > 3", "{\"n\": \"-7\"}", false},
    {"n<3", "{\"n\": \"-7\"}", true},
    {"n<3", "{\"n\": \"2\"}", true},
    {"n<3", "{\"n\": \"3\"}", false},
    {"n<3", "{\"n\": \"x\"}", false},
    {"n<3", "{\"n\": \"\"}", false},
    {"n<3", "{}", false},
    {"n>0", "{\"n\": \"99999999999999999999\"}", false},
    {"n<9223372036854775807", "{\"n\": \"9223372036854775806\"}", true},
    {"n>3", "{\"n\": \" 4\"}", false},
    {"n<0", "{\"n\": \"-9223372036854775808\"}", true},
    {"n<0", "{\"n\": \"-9223372036854775809\"}", false},
    {"n>9223372036854775806", "{\"n\": \"9223372036854775807\"}", true},
    {"n>0", "{\"n\": \"9223372036854775808\"}", false},
    {"n>0", "{\"n\": \"-\"}", false},
    {"n<1", "{\"n\": \"-0\"}", true},
    {"n>0", "{\"n\": \"4x\"}", false},
    {"n>3", "{\"n\": \"+4\"}", true},
    /* several requirements must all hold */
    {"a=b,c in (d),!e,f", "{\"a\": \"b\", \"c\": \"d\", \"f\": \"\"}", true},
    {"a=b,c in (d),!e,f", "{\"a\": \"b\", \"c\": \"d\", \"e\": \"\", \"f\": \"\"}", false},
    {"a=b,a=c", "{\"a\": \"b\"}", false},
    /* prefixed keys, values with every allowed character */
    {"example.com/my_key=A-b_c.9", "{\"example.com/my_key\": \"A-b_c.9\"}", true},
    /* a label that is not a string counts as absent */
    {"a", "{\"a\": 1}", false},
    {"a!=1", "{\"a\": 1}", true},
    {"!a", "[\"a\"]", true},
};

static void label_parse_and_match(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(label_cases); i++) {
                const struct label_case *c = &label_cases[i];
                struct xp_label_selector *s = NULL;
                struct xp_error err = {0};
                json_t *labels = c->labels ? load(c->labels) : NULL;

                if (xp_label_selector_parse(c->selector, &s, &err) != 0)
                        fail_msg("\"%s\" rejected: %s", c->selector, err.msg);
                assert_int_equal(err.code, 0);
                if (xp_label_selector_matches(s, labels) != c->match)
                        fail_msg("\"%s\" on %s: expected %s",
                                 c->selector,
                                 c->labels ? c->labels : "NULL",
                                 c->match ? "a match" : "no match");
                xp_label_selector_free(s);
                json_decref(labels);
        }
}

static void label_is_empty(void **state)
{
        static const struct {
                const char *text;
                bool empty;
        } cases[] = {{"", true}, {" \n", true}, {"a", false}, {"!a", false}, {"a in ()", false}};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                _cleanup_(xp_label_selector_freep) struct xp_label_selector *s = NULL;

                assert_int_equal(xp_label_selector_parse(cases[i].text, &s, NULL), 0);
                assert_int_equal(xp_label_selector_is_empty(s), cases[i].empty);
        }
        assert_true(xp_label_selector_is_empty(NULL));
        assert_true(xp_label_selector_matches(NULL, NULL));
        xp_label_selector_free(NULL);
}

static void label_matches_map(void **state)
{
        _cleanup_(xp_label_selector_freep) struct xp_label_selector *s = NULL;
        struct xp_strmap labels = {0};

        (void)state;
        assert_int_equal(xp_label_selector_parse("app=web,tier notin (db),!canary,n>1", &s, NULL),
                         0);
        assert_false(xp_label_selector_matches_map(s, NULL));
        assert_false(xp_label_selector_matches_map(s, &labels));
        assert_int_equal(xp_strmap_set(&labels, "app", "web"), 0);
        assert_false(xp_label_selector_matches_map(s, &labels));
        assert_int_equal(xp_strmap_set(&labels, "n", "2"), 0);
        assert_true(xp_label_selector_matches_map(s, &labels));
        assert_int_equal(xp_strmap_set(&labels, "tier", "db"), 0);
        assert_false(xp_label_selector_matches_map(s, &labels));
        assert_int_equal(xp_strmap_set(&labels, "tier", "front"), 0);
        assert_true(xp_label_selector_matches_map(s, &labels));
        assert_int_equal(xp_strmap_set(&labels, "canary", ""), 0);
        assert_false(xp_label_selector_matches_map(s, &labels));
        assert_true(xp_label_selector_matches_map(NULL, &labels));
        xp_strmap_done(&labels);
}

struct bad_case {
        const char *text;
        int code;
        const char *message;
};

#define KEY_RULE                                                                                   \
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')"
#define VALUE_RULE                                                                                 \
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"

static const struct bad_case label_bad[] = {
    {"a in (x", -EINVAL, "labelSelector: \"a in (x\": unterminated value list at position 7"},
    {"a in (", -EINVAL, "labelSelector: \"a in (\": unterminated value list at position 6"},
    {"a in (x,", -EINVAL, "labelSelector: \"a in (x,\": unterminated value list at position 8"},
    {"a in",
     -EINVAL,
     "labelSelector: \"a in\": expected '(' after \"in\" but found the end at position 4"},
    {"a notin x",
     -EINVAL,
     "labelSelector: \"a notin x\": expected '(' after \"notin\" but found \"x\" at position 8"},
    {"a in (x y)",
     -EINVAL,
     "labelSelector: \"a in (x y)\": expected ',' or ')' but found \"y\" at position 8"},
    {"a in (x=)",
     -EINVAL,
     "labelSelector: \"a in (x=)\": expected a value, ',' or ')' but found \"=\" at position 7"},
    {"a in ((x))",
     -EINVAL,
     "labelSelector: \"a in ((x))\": expected a value, ',' or ')' but found \"(\" at position 6"},
    {"a b",
     -EINVAL,
     "labelSelector: \"a b\": expected an operator (=, ==, !=, in, notin, >, <) but found \"b\" at position 2"},
    {"a(x)",
     -EINVAL,
     "labelSelector: \"a(x)\": expected an operator (=, ==, !=, in, notin, >, <) but found \"(\" at position 1"},
    {"a !b",
     -EINVAL,
     "labelSelector: \"a !b\": expected an operator (=, ==, !=, in, notin, >, <) but found \"!\" at position 2"},
    {"a>=3",
     -EINVAL,
     "labelSelector: \"a>=3\": expected a value after \">\" but found \"=\" at position 2"},
    {"a===b",
     -EINVAL,
     "labelSelector: \"a===b\": expected a value after \"==\" but found \"=\" at position 3"},
    {"a=b=c",
     -EINVAL,
     "labelSelector: \"a=b=c\": expected ',' or the end but found \"=\" at position 3"},
    {"a=b c",
     -EINVAL,
     "labelSelector: \"a=b c\": expected ',' or the end but found \"c\" at position 4"},
    {"!a=b",
     -EINVAL,
     "labelSelector: \"!a=b\": expected ',' or the end but found \"=\" at position 2"},
    {"!a in (b)",
     -EINVAL,
     "labelSelector: \"!a in (b)\": expected ',' or the end but found \"in\" at position 3"},
    {"!",
     -EINVAL,
     "labelSelector: \"!\": expected a label key after '!' but found the end at position 1"},
    {"!!a",
     -EINVAL,
     "labelSelector: \"!!a\": expected a label key after '!' but found \"!\" at position 1"},
    {"=a",
     -EINVAL,
     "labelSelector: \"=a\": expected a label key or '!' but found \"=\" at position 0"},
    {",",
     -EINVAL,
     "labelSelector: \",\": expected a label key or '!' but found \",\" at position 0"},
    {"  )",
     -EINVAL,
     "labelSelector: \"  )\": expected a label key or '!' but found \")\" at position 2"},
    {"a,",
     -EINVAL,
     "labelSelector: \"a,\": expected a requirement after ',' but found the end at position 2"},
    {"a=b,,c",
     -EINVAL,
     "labelSelector: \"a=b,,c\": expected a requirement after ',' but found \",\" at position 4"},
    {"a, =b",
     -EINVAL,
     "labelSelector: \"a, =b\": expected a requirement after ',' but found \"=\" at position 3"},
    {"a>",
     -EINVAL,
     "labelSelector: \"a>\": the value after \">\" must be a 64-bit integer, not \"\" at position 2"},
    {"a<x",
     -EINVAL,
     "labelSelector: \"a<x\": the value after \"<\" must be a 64-bit integer, not \"x\" at position 2"},
    {"a<1.5",
     -EINVAL,
     "labelSelector: \"a<1.5\": the value after \"<\" must be a 64-bit integer, not \"1.5\" at position 2"},
    {"a>9223372036854775808",
     -EINVAL,
     "labelSelector: \"a>9223372036854775808\": the value after \">\" must be a 64-bit integer, not \"9223372036854775808\" at position 2"},
    {"-a=b",
     -EINVAL,
     "labelSelector: \"-a=b\": label key at position 0: Invalid value: \"-a\": " KEY_RULE},
    {"a/b/c",
     -EINVAL,
     "labelSelector: \"a/b/c\": label key at position 0: Invalid value: \"a/b/c\": " KEY_RULE},
    {"x, !Ex.com/a",
     -EINVAL,
     "labelSelector: \"x, !Ex.com/a\": label key at position 4: Invalid value: \"Ex.com/a\": the prefix before '/' must be a lowercase RFC 1123 subdomain of at most 253 characters (e.g. 'example.com')"},
    {"a=-b",
     -EINVAL,
     "labelSelector: \"a=-b\": label value at position 2: Invalid value: \"-b\": " VALUE_RULE},
    {"a>-1",
     -EINVAL,
     "labelSelector: \"a>-1\": label value at position 2: Invalid value: \"-1\": " VALUE_RULE},
    {"a in (b, c_)",
     -EINVAL,
     "labelSelector: \"a in (b, c_)\": label value at position 9: Invalid value: \"c_\": " VALUE_RULE},
    {"a=\xc3\xa9",
     -EINVAL,
     "labelSelector: \"a=\\xc3\\xa9\": label value at position 2: Invalid value: \"\\xc3\\xa9\": " VALUE_RULE},
    {"a=0123456789012345678901234567890123456789012345678901234567890123",
     -EINVAL,
     "labelSelector: \"a=01234567890123456789012345678901234567890123456789012345678901\"...: label value at position 2: Invalid value: \"0123456789012345678901234567890123456789012345678901234567890123\": must be no more than 63 characters"},
};

static void expect_label_bad(const char *text, int code, const char *message)
{
        struct xp_label_selector *s = (struct xp_label_selector *)&s; /* must stay as it is */
        struct xp_label_selector *before = s;
        struct xp_error err = {0};

        if (xp_label_selector_parse(text, &s, &err) != code)
                fail_msg("\"%s\": expected %d, got \"%s\"", text, code, err.msg);
        assert_ptr_equal(s, before);
        assert_int_equal(err.code, code);
        if (message)
                assert_string_equal(err.msg, message);
        assert_int_equal(xp_label_selector_parse(text, &s, NULL), code);
        assert_ptr_equal(s, before);
}

static void label_parse_invalid(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(label_bad); i++)
                expect_label_bad(label_bad[i].text, label_bad[i].code, label_bad[i].message);
}

/* Writes n copies of unit joined by sep into buf, each followed by its index when numbered. */
static char *
join(char *buf, size_t size, size_t n, const char *unit, const char *sep, bool numbered)
{
        size_t o = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        o += (size_t)snprintf(buf + o, size - o, "%s", sep);
                o += (size_t)snprintf(buf + o, size - o, "%s", unit);
                if (numbered)
                        o += (size_t)snprintf(buf + o, size - o, "%zu", i);
                assert_true(o < size);
        }
        return buf;
}

static void label_limits(void **state)
{
        char text[4096], msg[256];
        struct xp_label_selector *s = NULL;
        struct xp_error err = {0};

        (void)state;
        /* 64 requirements parse and all count; the 65th is refused */
        join(text, sizeof(text), 64, "k", ",", true);
        assert_int_equal(xp_label_selector_parse(text, &s, &err), 0);
        {
                json_t *labels = json_object();

                for (size_t i = 0; i < 64; i++) {
                        char key[16];

                        snprintf(key, sizeof(key), "k%zu", i);
                        json_object_set_new(labels, key, json_string(""));
                }
                assert_true(xp_label_selector_matches(s, labels));
                json_object_del(labels, "k63");
                assert_false(xp_label_selector_matches(s, labels));
                json_decref(labels);
        }
        xp_label_selector_free(s);
        strcat(text, ",z");
        expect_label_bad(text, -E2BIG, NULL);
        assert_int_equal(xp_label_selector_parse(text, &s, &err), -E2BIG);
        snprintf(msg, sizeof(msg), "more than 64 requirements at position %zu", strlen(text) - 1);
        assert_non_null(strstr(err.msg, msg));

        /* 64 values in a list, then 65 */
        strcpy(text, "k in (");
        join(text + 6, sizeof(text) - 6, 64, "v", ",", true);
        strcat(text, ")");
        assert_int_equal(xp_label_selector_parse(text, &s, NULL), 0);
        {
                json_t *labels = load("{\"k\": \"v63\"}");

                assert_true(xp_label_selector_matches(s, labels));
                json_decref(labels);
        }
        xp_label_selector_free(s);
        strcpy(text, "k in (");
        join(text + 6, sizeof(text) - 6, 65, "v", ",", true);
        strcat(text, ")");
        assert_int_equal(xp_label_selector_parse(text, &s, &err), -E2BIG);
        snprintf(
            msg, sizeof(msg), "more than 64 values in one list at position %zu", strlen(text) - 4);
        assert_non_null(strstr(err.msg, msg));

        /* 1024 bytes of text, then 1025 */
        memset(text, ' ', 1023);
        text[1023] = 'a';
        text[1024] = '\0';
        assert_int_equal(xp_label_selector_parse(text, &s, NULL), 0);
        assert_false(xp_label_selector_is_empty(s));
        xp_label_selector_free(s);
        text[1024] = ' ';
        text[1025] = '\0';
        expect_label_bad(text, -E2BIG, NULL);
        assert_int_equal(xp_label_selector_parse(text, &s, &err), -E2BIG);
        assert_non_null(strstr(err.msg, ": 1025 bytes, more than the limit of 1024"));
}

/* ---- field selectors ------------------------------------------------------------------------ */

static const char pod_json[] =
    "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"web-1\", \"namespace\": \"prod\"},"
    " \"spec\": {\"nodeName\": \"n1\", \"restartPolicy\": \"Always\", \"schedulerName\": \"xpool\","
    "          \"serviceAccountName\": \"sa\", \"hostNetwork\": true},"
    " \"status\": {\"phase\": \"Running\", \"podIP\": \"10.0.0.9\","
    "            \"podIPs\": [{\"ip\": \"10.0.0.7\"}, {\"ip\": \"fd00::7\"}],"
    "            \"nominatedNodeName\": \"n2\"}}";

static const char node_json[] =
    "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n1\"}, \"spec\": {\"unschedulable\": true}}";

static const char event_json[] =
    "{\"kind\": \"Event\", \"metadata\": {\"name\": \"web-1.17\", \"namespace\": \"prod\"},"
    " \"involvedObject\": {\"kind\": \"Pod\", \"namespace\": \"prod\", \"name\": \"web-1\","
    "   \"uid\": \"u-1\", \"apiVersion\": \"v1\", \"resourceVersion\": \"42\","
    "   \"fieldPath\": \"spec.containers{main}\"},"
    " \"reason\": \"Scheduled\", \"reportingComponent\": \"xpool-scheduler\","
    " \"source\": {\"component\": \"scheduler\"}, \"type\": \"Normal\"}";

static const char namespace_json[] =
    "{\"kind\": \"Namespace\", \"metadata\": {\"name\": \"prod\"}, \"status\": {\"phase\": \"Active\"}}";

static const char lease_json[] =
    "{\"kind\": \"Lease\", \"metadata\": {\"name\": \"n1\", \"namespace\": \"xpool-node-lease\"}}";

struct field_case {
        const char *kind;
        const char *field;
        const char *object; /* JSON */
        const char *value;  /* what the field reads as */
};

/* Every field of every kind, once set and once missing. */
static const struct field_case field_cases[] = {
    {"Pod", "metadata.name", pod_json, "web-1"},
    {"Pod", "metadata.namespace", pod_json, "prod"},
    {"Pod", "spec.nodeName", pod_json, "n1"},
    {"Pod", "spec.host", pod_json, "n1"},
    {"Pod", "spec.restartPolicy", pod_json, "Always"},
    {"Pod", "spec.schedulerName", pod_json, "xpool"},
    {"Pod", "spec.serviceAccountName", pod_json, "sa"},
    {"Pod", "spec.hostNetwork", pod_json, "true"},
    {"Pod", "status.phase", pod_json, "Running"},
    {"Pod", "status.podIP", pod_json, "10.0.0.7"},
    {"Pod", "status.podIPs", pod_json, ""},
    {"Pod", "status.nominatedNodeName", pod_json, "n2"},
    {"Pod", "metadata.name", "{}", ""},
    {"Pod", "metadata.namespace", "{}", ""},
    {"Pod", "spec.nodeName", "{\"spec\": {}}", ""},
    {"Pod", "spec.host", "{}", ""},
    {"Pod", "spec.restartPolicy", "{}", ""},
    {"Pod", "spec.schedulerName", "{}", ""},
    {"Pod", "spec.serviceAccountName", "{}", ""},
    {"Pod", "spec.hostNetwork", "{}", "false"},
    {"Pod", "spec.hostNetwork", "{\"spec\": {\"hostNetwork\": false}}", "false"},
    {"Pod", "status.phase", "{}", ""},
    {"Pod", "status.podIP", "{}", ""},
    {"Pod", "status.podIP", "{\"status\": {\"podIP\": \"10.1.1.1\"}}", "10.1.1.1"},
    {"Pod", "status.podIP", "{\"status\": {\"podIP\": \"10.1.1.1\", \"podIPs\": []}}", "10.1.1.1"},
    {"Pod", "status.nominatedNodeName", "{}", ""},
    {"Pod", "spec.nodeName", "{\"spec\": {\"nodeName\": null}}", ""},
    {"Pod", "spec.nodeName", "{\"spec\": {\"nodeName\": 7}}", ""},
    {"Pod", "spec.nodeName", "{\"spec\": \"n1\"}", ""},
    {"Node", "metadata.name", node_json, "n1"},
    {"Node", "spec.unschedulable", node_json, "true"},
    {"Node", "metadata.name", "{}", ""},
    {"Node", "spec.unschedulable", "{}", "false"},
    {"Event", "metadata.name", event_json, "web-1.17"},
    {"Event", "metadata.namespace", event_json, "prod"},
    {"Event", "involvedObject.kind", event_json, "Pod"},
    {"Event", "involvedObject.namespace", event_json, "prod"},
    {"Event", "involvedObject.name", event_json, "web-1"},
    {"Event", "involvedObject.uid", event_json, "u-1"},
    {"Event", "involvedObject.apiVersion", event_json, "v1"},
    {"Event", "involvedObject.resourceVersion", event_json, "42"},
    {"Event", "involvedObject.fieldPath", event_json, "spec.containers{main}"},
    {"Event", "reason", event_json, "Scheduled"},
    {"Event", "reportingComponent", event_json, "xpool-scheduler"},
    {"Event", "source", event_json, "scheduler"},
    {"Event", "type", event_json, "Normal"},
    {"Event", "source", "{\"reportingComponent\": \"rc\"}", "rc"},
    {"Event",
     "source",
     "{\"source\": {\"component\": \"\"}, \"reportingComponent\": \"rc\"}",
     "rc"},
    {"Event", "metadata.name", "{}", ""},
    {"Event", "metadata.namespace", "{}", ""},
    {"Event", "involvedObject.kind", "{}", ""},
    {"Event", "involvedObject.namespace", "{}", ""},
    {"Event", "involvedObject.name", "{}", ""},
    {"Event", "involvedObject.uid", "{}", ""},
    {"Event", "involvedObject.apiVersion", "{}", ""},
    {"Event", "involvedObject.resourceVersion", "{}", ""},
    {"Event", "involvedObject.fieldPath", "{}", ""},
    {"Event", "reason", "{}", ""},
    {"Event", "reportingComponent", "{}", ""},
    {"Event", "source", "{}", ""},
    {"Event", "type", "{}", ""},
    {"Namespace", "metadata.name", namespace_json, "prod"},
    {"Namespace", "status.phase", namespace_json, "Active"},
    {"Namespace", "metadata.name", "{}", ""},
    {"Namespace", "status.phase", "{}", ""},
    {"Lease", "metadata.name", lease_json, "n1"},
    {"Lease", "metadata.namespace", lease_json, "xpool-node-lease"},
    {"Lease", "metadata.name", "{}", ""},
    {"Lease", "metadata.namespace", "{}", ""},
    {"ConfigMap", "metadata.name", lease_json, "n1"},
    {"ConfigMap", "metadata.namespace", lease_json, "xpool-node-lease"},
    {NULL, "metadata.name", lease_json, "n1"},
    {NULL, "metadata.namespace", lease_json, "xpool-node-lease"},
};

static bool field_matches(const char *kind, const char *text, const json_t *object)
{
        _cleanup_(xp_field_selector_freep) struct xp_field_selector *s = NULL;
        struct xp_error err = {0};

        if (xp_field_selector_parse(text, kind, &s, &err) != 0)
                fail_msg("%s \"%s\" rejected: %s", kind ? kind : "NULL", text, err.msg);
        assert_false(xp_field_selector_is_empty(s));
        return xp_field_selector_matches(s, object);
}

static void field_every_field(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(field_cases); i++) {
                const struct field_case *c = &field_cases[i];
                json_t *object = load(c->object);
                char text[256];

                snprintf(text, sizeof(text), "%s=%s", c->field, c->value);
                if (!field_matches(c->kind, text, object))
                        fail_msg("%s %s on %s: expected a match", c->kind, text, c->object);
                snprintf(text, sizeof(text), "%s==%s", c->field, c->value);
                assert_true(field_matches(c->kind, text, object));
                snprintf(text, sizeof(text), "%s!=%s", c->field, c->value);
                if (field_matches(c->kind, text, object))
                        fail_msg("%s %s on %s: expected no match", c->kind, text, c->object);
                snprintf(text, sizeof(text), "%s=%sx", c->field, c->value);
                assert_false(field_matches(c->kind, text, object));
                snprintf(text, sizeof(text), "%s!=%sx", c->field, c->value);
                assert_true(field_matches(c->kind, text, object));
                json_decref(object);
        }
}

struct field_match_case {
        const char *selector;
        const char *object;
        bool match;
};

static const struct field_match_case pod_matches[] = {
    {"", "{}", true},
    {",", "{}", true},
    {",,", "{\"spec\": {\"nodeName\": \"x\"}}", true},
    {"spec.nodeName=", "{\"spec\": {}}", true},
    {"spec.nodeName=", "{\"spec\": {\"nodeName\": \"n1\"}}", false},
    {"spec.nodeName!=", "{\"spec\": {\"nodeName\": \"n1\"}}", true},
    {"spec.nodeName=n1,status.phase=Running", pod_json, true},
    {"spec.nodeName=n1,status.phase!=Running", pod_json, false},
    {"spec.nodeName=n1,,status.phase=Running,", pod_json, true},
    {"metadata.namespace=prod,metadata.name!=web-2", pod_json, true},
    /* escapes in values */
    {"metadata.name=a\\,b", "{\"metadata\": {\"name\": \"a,b\"}}", true},
    {"metadata.name=a\\=b", "{\"metadata\": {\"name\": \"a=b\"}}", true},
    {"metadata.name=a\\\\b", "{\"metadata\": {\"name\": \"a\\\\b\"}}", true},
    {"metadata.name=a\\\\,status.phase=", "{\"metadata\": {\"name\": \"a\\\\\"}}", true},
    {"metadata.name=a\\,b", "{\"metadata\": {\"name\": \"a\"}}", false},
    {"metadata.name=\\,\\=\\\\", "{\"metadata\": {\"name\": \",=\\\\\"}}", true},
    /* nothing trimmed */
    {"metadata.name= a", "{\"metadata\": {\"name\": \" a\"}}", true},
    {"metadata.name= a", "{\"metadata\": {\"name\": \"a\"}}", false},
    /* the first operator splits the term: "!=" wins over the "=" inside it */
    {"metadata.name!=\\=", "{\"metadata\": {\"name\": \"=\"}}", false},
    {"metadata.name!=\\=", "{\"metadata\": {\"name\": \"x\"}}", true},
    {"metadata.name==!x", "{\"metadata\": {\"name\": \"!x\"}}", true},
    /* not an object */
    {"metadata.name=", "[1]", true},
    {"metadata.name=x", "[1]", false},
    {"metadata.name=", NULL, true},
};

static void field_match(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(pod_matches); i++) {
                const struct field_match_case *c = &pod_matches[i];
                _cleanup_(xp_field_selector_freep) struct xp_field_selector *s = NULL;
                json_t *object = c->object ? load(c->object) : NULL;
                struct xp_error err = {0};

                if (xp_field_selector_parse(c->selector, "Pod", &s, &err) != 0)
                        fail_msg("\"%s\" rejected: %s", c->selector, err.msg);
                if (xp_field_selector_matches(s, object) != c->match)
                        fail_msg("\"%s\" on %s: expected %s",
                                 c->selector,
                                 c->object ? c->object : "NULL",
                                 c->match ? "a match" : "no match");
                json_decref(object);
        }
}

static void field_is_empty(void **state)
{
        static const struct {
                const char *text;
                bool empty;
        } cases[] = {{"", true}, {",", true}, {",,,", true}, {"metadata.name=", false}};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                _cleanup_(xp_field_selector_freep) struct xp_field_selector *s = NULL;

                assert_int_equal(xp_field_selector_parse(cases[i].text, "Pod", &s, NULL), 0);
                assert_int_equal(xp_field_selector_is_empty(s), cases[i].empty);
                assert_true(xp_field_selector_matches(s, NULL));
        }
        assert_true(xp_field_selector_is_empty(NULL));
        assert_true(xp_field_selector_matches(NULL, NULL));
        xp_field_selector_free(NULL);
}

struct field_bad_case {
        const char *kind;
        const char *text;
        int code;
        const char *message;
};

static const struct field_bad_case field_bad[] = {
    {"Pod", "spec.foo=x", -EINVAL, "field label not supported: spec.foo"},
    {"Pod", "status.hostIP=10.0.0.1", -EINVAL, "field label not supported: status.hostIP"},
    {"Pod", "spec.nodeName =x", -EINVAL, "field label not supported: spec.nodeName "},
    {"Pod", "=x", -EINVAL, "field label not supported: "},
    {"Pod", "metadata.name=a,spec.foo!=b", -EINVAL, "field label not supported: spec.foo"},
    {"Pod", "Metadata.name=a", -EINVAL, "field label not supported: Metadata.name"},
    {"Pod", "spec.unschedulable=true", -EINVAL, "field label not supported: spec.unschedulable"},
    {"Node", "metadata.namespace=x", -EINVAL, "field label not supported: metadata.namespace"},
    {"Node", "spec.nodeName=x", -EINVAL, "field label not supported: spec.nodeName"},
    {"Namespace", "metadata.namespace=x", -EINVAL, "field label not supported: metadata.namespace"},
    {"Event", "source.component=x", -EINVAL, "field label not supported: source.component"},
    {"Event", "reportingController=x", -EINVAL, "field label not supported: reportingController"},
    {"Lease", "spec.holderIdentity=x", -EINVAL, "field label not supported: spec.holderIdentity"},
    {"Widget", "status.phase=x", -EINVAL, "field label not supported: status.phase"},
    {NULL, "spec.nodeName=x", -EINVAL, "field label not supported: spec.nodeName"},
    {"Pod", "a\x01=x", -EINVAL, "field label not supported: a\\x01"},
    {"Pod",
     "spec.nodeName",
     -EINVAL,
     "fieldSelector: \"spec.nodeName\": expected field=value, field==value or field!=value but found \"spec.nodeName\" at position 0"},
    {"Pod",
     "metadata.name=a, x",
     -EINVAL,
     "fieldSelector: \"metadata.name=a, x\": expected field=value, field==value or field!=value but found \" x\" at position 16"},
    {"Pod",
     "metadata.name!x",
     -EINVAL,
     "fieldSelector: \"metadata.name!x\": expected field=value, field==value or field!=value but found \"metadata.name!x\" at position 0"},
    {"Pod",
     "metadata.name=a=b",
     -EINVAL,
     "fieldSelector: \"metadata.name=a=b\": unescaped '=' in a value (write '\\=') at position 15"},
    {"Pod",
     "metadata.name===b",
     -EINVAL,
     "fieldSelector: \"metadata.name===b\": unescaped '=' in a value (write '\\=') at position 15"},
    {"Pod",
     "metadata.name=a\\",
     -EINVAL,
     "fieldSelector: \"metadata.name=a\\\\\": a value cannot end in a lone '\\' (write '\\\\') at position 15"},
    {"Pod",
     "metadata.name=a\\n",
     -EINVAL,
     "fieldSelector: \"metadata.name=a\\\\n\": invalid escape sequence '\\' \"n\" (only '\\,', '\\=' and '\\\\' are) at position 15"},
    /* syntax errors come before unsupported fields, as in Kubernetes */
    {"Pod",
     "spec.foo=x,metadata.name=a=b",
     -EINVAL,
     "fieldSelector: \"spec.foo=x,metadata.name=a=b\": unescaped '=' in a value (write '\\=') at position 26"},
    /* a field name is not unescaped */
    {"Pod", "metadata\\.name=x", -EINVAL, "field label not supported: metadata\\.name"},
};

static void expect_field_bad(const char *kind, const char *text, int code, const char *message)
{
        struct xp_field_selector *s = (struct xp_field_selector *)&s; /* must stay as it is */
        struct xp_field_selector *before = s;
        struct xp_error err = {0};

        if (xp_field_selector_parse(text, kind, &s, &err) != code)
                fail_msg("\"%s\": expected %d, got \"%s\"", text, code, err.msg);
        assert_ptr_equal(s, before);
        assert_int_equal(err.code, code);
        if (message)
                assert_string_equal(err.msg, message);
        assert_int_equal(xp_field_selector_parse(text, kind, &s, NULL), code);
        assert_ptr_equal(s, before);
}

static void field_parse_invalid(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(field_bad); i++)
                expect_field_bad(
                    field_bad[i].kind, field_bad[i].text, field_bad[i].code, field_bad[i].message);
}

static void field_limits(void **state)
{
        char text[4096], msg[256];
        struct xp_field_selector *s = NULL;
        struct xp_error err = {0};
        json_t *object = load("{\"metadata\": {\"name\": \"\"}}");

        (void)state;
        join(text, sizeof(text), 64, "metadata.name=", ",", false);
        assert_int_equal(xp_field_selector_parse(text, "Pod", &s, NULL), 0);
        assert_true(xp_field_selector_matches(s, object));
        xp_field_selector_free(s);
        /* empty terms do not count */
        strcat(text, ",,");
        assert_int_equal(xp_field_selector_parse(text, "Pod", &s, NULL), 0);
        xp_field_selector_free(s);
        strcat(text, "metadata.name!=x");
        expect_field_bad("Pod", text, -E2BIG, NULL);
        assert_int_equal(xp_field_selector_parse(text, "Pod", &s, &err), -E2BIG);
        snprintf(msg, sizeof(msg), "more than 64 terms at position %zu", strlen(text) - 16);
        assert_non_null(strstr(err.msg, msg));

        memset(text, ',', 1024);
        text[1024] = '\0';
        assert_int_equal(xp_field_selector_parse(text, "Pod", &s, NULL), 0);
        assert_true(xp_field_selector_is_empty(s));
        xp_field_selector_free(s);
        text[1024] = ',';
        text[1025] = '\0';
        expect_field_bad("Pod", text, -E2BIG, NULL);
        assert_int_equal(xp_field_selector_parse(text, "Pod", &s, &err), -E2BIG);
        assert_non_null(strstr(err.msg, ": 1025 bytes, more than the limit of 1024"));
        json_decref(object);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(label_parse_and_match),
            cmocka_unit_test(label_is_empty),
            cmocka_unit_test(label_matches_map),
            cmocka_unit_test(label_parse_invalid),
            cmocka_unit_test(label_limits),
            cmocka_unit_test(field_every_field),
            cmocka_unit_test(field_match),
            cmocka_unit_test(field_is_empty),
            cmocka_unit_test(field_parse_invalid),
            cmocka_unit_test(field_limits),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
