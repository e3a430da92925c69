/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xp_table_list_decode() and xp_table_object_decode(): a plain list, or one object, decoded for a
 * table, less what no table reads.
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

#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/table.h"

/* JSON written with single quotes for readability (no value here holds an apostrophe). */
static char *quoted(const char *text)
{
        char *copy = strdup(text);

        assert_non_null(copy);
        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        return copy;
}

static json_t *parse(const char *text)
{
        json_error_t error;
        json_t *json = json_loads(text, 0, &error);

        if (!json)
                fail_msg(
                    "bad fixture at %d:%d: %s\n%s", error.line, error.column, error.text, text);
        return json;
}

static json_t *decode(const char *text)
{
        json_t *list = NULL;

        assert_int_equal(xp_table_list_decode(text, strlen(text), &list), 0);
        assert_non_null(list);
        return list;
}

/* Equal JSON, or both absent. */
static void assert_same(const json_t *got, const json_t *expected)
{
        if ((got || expected) && !json_equal(got, expected)) {
                char *a = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
                char *b = json_dumps(expected, JSON_COMPACT | JSON_ENCODE_ANY);

                fail_msg("got\n  %s\nexpected\n  %s", a, b);
        }
}

/* A pod that uses every member a pod's row reads, beside the big ones no row reads. */
static const char pod[] =
    "{'kind':'Pod','apiVersion':'v1','metadata':{'name':'web-1','namespace':'team-a',"
    "'uid':'u1','creationTimestamp':'2026-12-02T11:00:00Z','labels':{'app':'web'},"
    "'annotations':{'note':'kept'},'managedFields':[{'manager':'xpool','operation':'Update',"
    "'fieldsV1':{'f:spec':{'f:volumes':{'k:{\\'name\\':\\'x\\'}':{}}}}}],"
    "'deletionTimestamp':'2026-12-02T11:59:00Z','resourceVersion':'7'},"
    "'spec':{'nodeName':'gpu-1','readinessGates':[{'conditionType':'example.com/gate'}],"
    "'initContainers':[{'name':'sidecar','restartPolicy':'Always'}],"
    "'containers':[{'name':'main','resources':{'limits':{'nvidia.com/gpu':'2'}}}],"
    "'volumes':[{'name':'kube-api-access-x','projected':{'sources':[{'serviceAccountToken':"
    "{'path':'token'}}]}}],'tolerations':[{'key':'k','operator':'Exists'}],"
    "'affinity':{'nodeAffinity':{}}},"
    "'status':{'phase':'Running','podIP':'10.0.0.5','podIPs':[{'ip':'10.0.0.5'}],"
    "'nominatedNodeName':'gpu-2','conditions':[{'type':'Ready','status':'True'},"
    "{'type':'example.com/gate','status':'True'}],"
    "'initContainerStatuses':[{'name':'sidecar','started':true,'ready':true,"
    "'state':{'running':{}}}],"
    "'containerStatuses':[{'name':'main','ready':true,'restartCount':3,"
    "'state':{'running':{}},'lastState':{'terminated':{'finishedAt':'2026-12-02T11:50:00Z'}}}]}}";

static const char node[] =
    "{'kind':'Node','metadata':{'name':'gpu-1','creationTimestamp':'2026-12-01T12:00:00Z',"
    "'labels':{'node-role.kubernetes.io/worker':''},'managedFields':[{'manager':'agent'}]},"
    "'spec':{'unschedulable':true,'taints':[{'key':'t','effect':'NoSchedule'}]},"
    "'status':{'conditions':[{'type':'Ready','status':'True'}],"
    "'capacity':{'cpu':'8','nvidia.com/gpu':'4'},'allocatable':{'cpu':'8','nvidia.com/gpu':'4'},"
    "'addresses':[{'type':'InternalIP','address':'10.0.0.1'}],"
    "'nodeInfo':{'kubeletVersion':'v1.31.0','osImage':'Debian 12','kernelVersion':'6.1',"
    "'containerRuntimeVersion':'xpool://0.1.0'}}}";

static const char event[] =
    "{'kind':'Event','metadata':{'name':'web-1.1','namespace':'team-a',"
    "'creationTimestamp':'2026-12-02T11:00:00Z'},'type':'Warning','reason':'FailedScheduling',"
    "'involvedObject':{'kind':'Pod','name':'web-1'},'message':'no nodes',"
    "'lastTimestamp':'2026-12-02T11:58:00Z','count':2}";

static const char lease[] =
    "{'kind':'Lease','metadata':{'name':'gpu-1','namespace':'kube-node-lease',"
    "'creationTimestamp':'2026-12-02T11:00:00Z','managedFields':[{'manager':'agent'}]},"
    "'spec':{'holderIdentity':'gpu-1','leaseDurationSeconds':40}}";

/* The table of kind for the items of the list in text, built from the whole parse or the decode. */
static json_t *table_of(const char *kind, const json_t *list, enum xp_table_include include)
{
        json_t *table = NULL;

        assert_int_equal(xp_table_build(kind,
                                        json_object_get(list, "items"),
                                        "42",
                                        (time_t)1796212800, /* 2026-12-02T12:00:00Z */
                                        include,
                                        &table),
                         0);
        return table;
}

static void assert_same_table(const char *kind, const char *item)
{
        char *text, *list_text;
        json_t *whole, *decoded;

        assert_true(asprintf(&list_text,
                             "{'kind':'%sList','apiVersion':'v1','metadata':{'resourceVersion':"
                             "'42'},'items':[%s,%s]}",
                             kind,
                             item,
                             item) > 0);
        text = quoted(list_text);
        whole = parse(text);
        decoded = decode(text);
        for (int include = XP_TABLE_INCLUDE_NONE; include <= XP_TABLE_INCLUDE_METADATA; include++) {
                json_t *a = table_of(kind, whole, include), *b = table_of(kind, decoded, include);
                size_t i;
                json_t *row;

                assert_same(json_object_get(b, "columnDefinitions"),
                            json_object_get(a, "columnDefinitions"));
                assert_int_equal(json_array_size(json_object_get(b, "rows")), 2);
                json_array_foreach(json_object_get(a, "rows"), i, row)
                {
                        const json_t *other = json_array_get(json_object_get(b, "rows"), i);

                        assert_same(json_object_get(other, "cells"), json_object_get(row, "cells"));
                        /* the NAMESPACE column's source */
                        assert_same(
                            json_object_get(
                                json_object_get(json_object_get(other, "object"), "metadata"),
                                "namespace"),
                            json_object_get(
                                json_object_get(json_object_get(row, "object"), "metadata"),
                                "namespace"));
                }
                json_decref(a);
                json_decref(b);
        }
        json_decref(whole);
        json_decref(decoded);
        free(text);
        free(list_text);
}

/* An item of kind k with the members the decode leaves out of every kind's spec, filled. */
static char *any_kind_item(const struct xp_kind *k)
{
        char *item;

        assert_true(
            asprintf(&item,
                     "{'apiVersion':'%s','kind':'%s','metadata':{'name':'x','namespace':'team',"
                     "'uid':'u-1','creationTimestamp':'2026-12-01T12:00:00Z','labels':{'a':'b'}},"
                     "'spec':{'replicas':2,'volumes':[{'name':'v','emptyDir':{}}],"
                     "'tolerations':[{'key':'gpu','operator':'Exists','effect':'NoSchedule'}],"
                     "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                     "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'zone','operator':'In',"
                     "'values':['a']}]}]}}},'nodeName':'n1'},'status':{'phase':'Running'}}",
                     k->api_version,
                     k->kind) > 0);
        return item;
}

static void same_rows(void **state)
{
        (void)state;
        assert_same_table("Pod", pod);
        assert_same_table("Node", node);
        assert_same_table("Event", event);
        assert_same_table("Lease", lease);
        /* the members left out are the same for every kind: no kind's row may read them */
        for (size_t i = 0; i < xp_kinds_n; i++) {
                char *item = any_kind_item(xp_kinds[i]);

                assert_same_table(xp_kinds[i]->kind, item);
                free(item);
        }
}

/* What is left out, and only there: an item's own metadata and spec, not deeper ones. */
static void leaves_out_unread(void **state)
{
        char *text = quoted(
            "{'kind':'List','metadata':{'resourceVersion':'9','managedFields':'list-level'},"
            "'items':[{'metadata':{'managedFields':[1],'name':'a'},'spec':{'volumes':[],"
            "'tolerations':[],'affinity':{},'containers':[{'name':'c','volumes':[]}],"
            "'template':{'metadata':{'managedFields':[]},'spec':{'volumes':[{'name':'v'}]}}},"
            "'status':{'volumes':1,'managedFields':2},'volumes':3}]}");
        char *expected_text = quoted(
            "{'kind':'List','metadata':{'resourceVersion':'9','managedFields':'list-level'},"
            "'items':[{'metadata':{'name':'a'},'spec':{'containers':[{'name':'c','volumes':[]}],"
            "'template':{'metadata':{'managedFields':[]},'spec':{'volumes':[{'name':'v'}]}}},"
            "'status':{'volumes':1,'managedFields':2},'volumes':3}]}");
        json_t *got = decode(text), *expected = parse(expected_text);

        (void)state;
        assert_same(got, expected);
        json_decref(got);
        json_decref(expected);
        free(text);
        free(expected_text);
}

/* Text a server may send: space anywhere, escapes that look like structure, odd items. */
static void odd_but_valid_text(void **state)
{
        static const char text[] =
            " \n{ \"items\" : [ { \"metadata\" : { \"managedFields\" : [ \"}]\\\"{[\" ] } } ,"
            "\t{\"spec\":{\"tolerations\":{\"a\":[1,{\"b\":\"\\\\\"}]}, \"nodeName\" : \"n\\\"1\" ,"
            "\"affinity\":null}}, 7, null, \"str\", [], {}, {\"metadata\":\"not an object\","
            "\"spec\":[1,2]}, {\"metadata\":{\"managedFields\":1.5e3},\"spec\":{\"volumes\":true}}"
            " ] , \"metadata\" : { } , \"k\\u0069nd\" : \"PodList\" } \r\n";
        static const char expected_text[] =
            "{\"items\":[{\"metadata\":{}},{\"spec\":{\"nodeName\":\"n\\\"1\"}},7,null,\"str\",[],"
            "{},{\"metadata\":\"not an object\",\"spec\":[1,2]},{\"metadata\":{},\"spec\":{}}],"
            "\"metadata\":{},\"kind\":\"PodList\"}";
        json_t *got = decode(text), *expected = parse(expected_text);

        (void)state;
        assert_same(got, expected);
        json_decref(got);
        json_decref(expected);
}

/* Malformed text is refused, cut anywhere, and never read past its end. */
static void rejects_malformed(void **state)
{
        static const char *const bad[] = {
            "",
            "   ",
            "[1,2]",
            "\"items\"",
            "{} x",
            "{\"items\":[{\"metadata\":{\"managedFields\":}}]}",
            "{\"items\":[{\"metadata\":{\"managedFields\"}}]}",
            "{\"items\":[{\"spec\":{\"volumes\":[1,2}}]}",
            "{\"items\":[1 2]}",
            "{\"items\" [1]}",
            "{items:[]}",
            "{\"items\":[],}",
            "{\"items\":[1,]}",
        };
        char *whole = quoted(pod);
        size_t len = strlen(whole);

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                json_t *list = NULL;
                int r = xp_table_list_decode(bad[i], strlen(bad[i]), &list);

                if (r != -EBADMSG)
                        fail_msg("'%s' gave %d", bad[i], r);
                assert_null(list);
        }
        for (size_t cut = 0; cut < len; cut++) {
                /* a copy of exactly cut bytes, so that reading past it is caught by ASan */
                char *prefix = malloc(cut ? cut : 1);
                json_t *list = NULL;

                assert_non_null(prefix);
                memcpy(prefix, whole, cut);
                assert_int_equal(xp_table_list_decode(prefix, cut, &list), -EBADMSG);
                assert_null(list);
                free(prefix);
        }
        free(whole);
}

/* One object decodes as the list's item; the span is its metadata's text, managedFields too. */
static void object_decode(void **state)
{
        char *whole = quoted(pod), *list_text = NULL;
        json_t *list, *item = NULL, *expected, *metadata;
        size_t start = 1, n = 1;

        (void)state;
        assert_true(asprintf(&list_text, "{'items':[%s]}", pod) > 0);
        for (char *p = list_text; *p; p++)
                if (*p == '\'')
                        *p = '"';
        list = decode(list_text);
        assert_int_equal(xp_table_object_decode(whole, strlen(whole), &item, &start, &n), 0);
        assert_same(item, json_array_get(json_object_get(list, "items"), 0));
        assert_null(json_object_get(json_object_get(item, "metadata"), "managedFields"));
        assert_null(json_object_get(json_object_get(item, "spec"), "volumes"));

        expected = parse(whole);
        metadata = json_loadb(whole + start, n, 0, NULL);
        assert_non_null(metadata);
        assert_same(metadata, json_object_get(expected, "metadata"));
        json_decref(metadata);
        json_decref(item);

        assert_int_equal(xp_table_object_decode("{\"kind\":\"Pod\"}", 14, &item, &start, &n), 0);
        assert_int_equal(start + n, 0); /* no metadata: an empty span */
        assert_int_equal(xp_table_object_decode("[1]", 3, &item, NULL, NULL), -EBADMSG);
        assert_int_equal(xp_table_object_decode(whole, strlen(whole) - 1, &item, NULL, NULL),
                         -EBADMSG);
        json_decref(expected);
        json_decref(item);
        json_decref(list);
        free(list_text);
        free(whole);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(same_rows),
            cmocka_unit_test(leaves_out_unread),
            cmocka_unit_test(odd_but_valid_text),
            cmocka_unit_test(rejects_malformed),
            cmocka_unit_test(object_decode),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
