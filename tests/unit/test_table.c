/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/macro.h"
#include "xpool/table.h"
#include "xpool/timeutil.h"

/* All ages are taken against 2026-12-02T12:00:00Z. */
static time_t now;

/* JSON written with single quotes for readability (no value here holds an apostrophe). */
static json_t *J(const char *text)
{
        char *copy = strdup(text);
        json_error_t error;
        json_t *json;

        assert_non_null(copy);
        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json = json_loads(copy, JSON_DECODE_ANY, &error);
        if (!json)
                fail_msg(
                    "bad fixture at %d:%d: %s\n%s", error.line, error.column, error.text, copy);
        free(copy);
        return json;
}

static int setup(void **state)
{
        int64_t t;

        (void)state;
        if (xp_time_parse_rfc3339("2026-12-02T12:00:00Z", &t) < 0)
                return -1;
        now = (time_t)t;
        return 0;
}

/* Builds a one-kind table of `items` (JSON text) with metadata included. */
static json_t *build(const char *kind, const char *items)
{
        json_t *list = J(items), *table = NULL;

        assert_int_equal(xp_table_build(kind, list, "42", now, XP_TABLE_INCLUDE_METADATA, &table),
                         0);
        assert_non_null(table);
        json_decref(list);
        return table;
}

static void assert_json_equal(const json_t *got, const char *expected_text)
{
        json_t *expected = J(expected_text);

        if (!json_equal(got, expected)) {
                char *a = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
                char *b = json_dumps(expected, JSON_COMPACT | JSON_ENCODE_ANY);

                fail_msg("got\n  %s\nexpected\n  %s", a, b);
        }
        json_decref(expected);
}

static void assert_row(const json_t *table, size_t row, const char *expected_cells)
{
        const json_t *rows = json_object_get(table, "rows");

        assert_true(row < json_array_size(rows));
        assert_json_equal(json_object_get(json_array_get(rows, row), "cells"), expected_cells);
}

/* Prints table into a string. Returns the code; *ret gets the text. */
static int print(const json_t *table,
                 bool wide,
                 bool no_headers,
                 bool with_namespace,
                 char **ret,
                 struct xp_error *err)
{
        size_t len = 0;
        FILE *f = open_memstream(ret, &len);
        int r;

        assert_non_null(f);
        r = xp_table_print(f, table, wide, no_headers, with_namespace, err);
        assert_int_equal(fclose(f), 0);
        return r;
}

static void assert_printed(
    const json_t *table, bool wide, bool no_headers, bool with_namespace, const char *expected)
{
        struct xp_error err = {0};
        char *text = NULL;

        assert_int_equal(print(table, wide, no_headers, with_namespace, &text, &err), 0);
        if (strcmp(text, expected) != 0)
                fail_msg("printed\n%s---\nexpected\n%s---", text, expected);
        free(text);
}

static void ages(void **state)
{
        json_t *ts = json_string("2026-12-02T11:55:00Z"), *bad = json_string("yesterday");
        json_t *number = json_integer(5);
        char buf[XP_DURATION_MAX];

        (void)state;
        xp_table_age(ts, now, buf, sizeof(buf));
        assert_string_equal(buf, "5m");
        xp_table_age(bad, now, buf, sizeof(buf));
        assert_string_equal(buf, "<unknown>");
        xp_table_age(number, now, buf, sizeof(buf));
        assert_string_equal(buf, "<unknown>");
        xp_table_age(NULL, now, buf, sizeof(buf));
        assert_string_equal(buf, "<unknown>");
        /* a clock a few seconds behind the server's */
        xp_table_age(ts, now - 302, buf, sizeof(buf));
        assert_string_equal(buf, "<invalid>");
        xp_table_age(ts, now - 301, buf, sizeof(buf));
        assert_string_equal(buf, "0s");
        json_decref(ts);
        json_decref(bad);
        json_decref(number);
}

/* ---- pods ----------------------------------------------------------------------------------- */

static const char running_pod[] =
    "{'metadata': {'name': 'train-1', 'namespace': 'ml', 'uid': 'u1',"
    " 'creationTimestamp': '2026-11-30T12:00:00Z', 'labels': {'app': 'train'}},"
    " 'spec': {'nodeName': 'gpu-node-1', 'containers': ["
    "  {'name': 'main', 'resources': {'limits': {'nvidia.com/gpu': '1', 'cpu': '4', 'memory': '8Gi'}}},"
    "  {'name': 'side', 'resources': {'limits': {'vendor.com/npu': 2, 'nvidia.com/gpu': '1'}}}]},"
    " 'status': {'phase': 'Running', 'podIP': '10.0.0.5', 'podIPs': [{'ip': '10.0.0.5'}],"
    "  'conditions': [{'type': 'Ready', 'status': 'False'}],"
    "  'containerStatuses': ["
    "   {'name': 'main', 'ready': true, 'restartCount': 1, 'state': {'running': {'startedAt': '2026-12-02T11:00:00Z'}},"
    "    'lastState': {'terminated': {'exitCode': 1, 'reason': 'Error', 'finishedAt': '2026-12-02T10:00:00Z'}}},"
    "   {'name': 'side', 'ready': false, 'restartCount': 2, 'state': {'waiting': {'reason': 'CrashLoopBackOff'}},"
    "    'lastState': {'terminated': {'exitCode': 137, 'reason': 'OOMKilled', 'finishedAt': '2026-12-02T11:55:00Z'}}}]}}";

static void pod_columns(void **state)
{
        json_t *table = build("Pod", "[]");

        (void)state;
        assert_string_equal(json_string_value(json_object_get(table, "kind")), "Table");
        assert_string_equal(json_string_value(json_object_get(table, "apiVersion")),
                            "meta.k8s.io/v1");
        assert_json_equal(json_object_get(table, "metadata"), "{'resourceVersion': '42'}");
        assert_json_equal(json_object_get(table, "rows"), "[]");
        assert_json_equal(json_array_get(json_object_get(table, "columnDefinitions"), 0),
                          "{'name': 'Name', 'type': 'string', 'format': 'name', 'priority': 0,"
                          " 'description': 'Name of the pod, unique within its namespace.'}");
        {
                static const char *const names[] = {"Name",
                                                    "Ready",
                                                    "Status",
                                                    "Restarts",
                                                    "Age",
                                                    "Devices",
                                                    "IP",
                                                    "Node",
                                                    "Nominated Node",
                                                    "Readiness Gates"};
                static const int priorities[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
                const json_t *columns = json_object_get(table, "columnDefinitions");

                assert_int_equal(json_array_size(columns), XP_ELEMENTSOF(names));
                for (size_t i = 0; i < XP_ELEMENTSOF(names); i++) {
                        const json_t *c = json_array_get(columns, i);

                        assert_string_equal(json_string_value(json_object_get(c, "name")),
                                            names[i]);
                        assert_int_equal(json_integer_value(json_object_get(c, "priority")),
                                         priorities[i]);
                        assert_string_equal(json_string_value(json_object_get(c, "type")),
                                            "string");
                        assert_true(json_string_length(json_object_get(c, "description")) > 0);
                        assert_string_equal(json_string_value(json_object_get(c, "format")),
                                            i == 0 ? "name" : "");
                }
        }
        json_decref(table);
}

static void pod_running_with_restarts(void **state)
{
        char items[4096];
        json_t *table;

        (void)state;
        snprintf(items, sizeof(items), "[%s]", running_pod);
        table = build("Pod", items);
        /* the last container that explains the state wins; restarts add up; the latest ended */
        assert_row(
            table,
            0,
            "['train-1', '1/2', 'CrashLoopBackOff', '3 (5m ago)', '2d', 'nvidia.com/gpu=2,vendor.com/npu=2', '10.0.0.5', 'gpu-node-1', '<none>', '<none>']");
        assert_null(
            json_object_get(json_array_get(json_object_get(table, "rows"), 0), "conditions"));
        json_decref(table);
}

static void pod_pending(void **state)
{
        json_t *table = build(
            "Pod",
            "[{'metadata': {'name': 'wait', 'creationTimestamp': '2026-12-02T11:59:30Z'},"
            "  'spec': {'containers': [{'name': 'a'}], 'readinessGates': [{'conditionType': 'x.io/ok'}, {'conditionType': 'y.io/ok'}]},"
            "  'status': {'phase': 'Pending', 'nominatedNodeName': 'gpu-node-2',"
            "   'conditions': [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable'}, {'type': 'x.io/ok', 'status': 'True'}]}},"
            " {'metadata': {'name': 'gated', 'creationTimestamp': '2026-12-02T11:00:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Pending', 'conditions': [{'type': 'PodScheduled', 'status': 'False', 'reason': 'SchedulingGated'}]}},"
            " {'metadata': {'name': 'pulling', 'creationTimestamp': '2026-12-02T11:00:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Pending', 'containerStatuses': [{'name': 'a', 'state': {'waiting': {'reason': 'ContainerCreating'}}}]}}]");

        (void)state;
        assert_row(
            table,
            0,
            "['wait', '0/1', 'Pending', '0', '30s', '<none>', '<none>', '<none>', 'gpu-node-2', '1/2']");
        assert_row(
            table,
            1,
            "['gated', '0/1', 'SchedulingGated', '0', '60m', '<none>', '<none>', '<none>', '<none>', '<none>']");
        assert_row(
            table,
            2,
            "['pulling', '0/1', 'ContainerCreating', '0', '60m', '<none>', '<none>', '<none>', '<none>', '<none>']");
        json_decref(table);
}

static void pod_terminating_and_finished(void **state)
{
        json_t *table = build(
            "Pod",
            "[{'metadata': {'name': 'going', 'creationTimestamp': '2026-12-02T09:00:00Z', 'deletionTimestamp': '2026-12-02T11:59:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Running', 'containerStatuses': [{'name': 'a', 'ready': true, 'state': {'running': {}}}]}},"
            " {'metadata': {'name': 'lost', 'creationTimestamp': '2026-12-02T09:00:00Z', 'deletionTimestamp': '2026-12-02T11:59:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}]}, 'status': {'phase': 'Running', 'reason': 'NodeLost'}},"
            " {'metadata': {'name': 'done', 'creationTimestamp': '2026-12-02T09:00:00Z', 'deletionTimestamp': '2026-12-02T11:59:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Succeeded', 'containerStatuses': [{'name': 'a', 'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}]}},"
            " {'metadata': {'name': 'oom', 'creationTimestamp': '2026-12-02T09:00:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Failed', 'containerStatuses': [{'name': 'a', 'state': {'terminated': {'exitCode': 137, 'reason': 'OOMKilled'}}}]}},"
            " {'metadata': {'name': 'killed', 'creationTimestamp': '2026-12-02T09:00:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}, {'name': 'b'}]},"
            "  'status': {'phase': 'Failed', 'containerStatuses': [{'name': 'a', 'state': {'terminated': {'exitCode': 3}}},"
            "   {'name': 'b', 'state': {'terminated': {'exitCode': 137, 'signal': 9}}}]}},"
            " {'metadata': {'name': 'half', 'creationTimestamp': '2026-12-02T09:00:00Z'},"
            "  'spec': {'containers': [{'name': 'a'}, {'name': 'b'}]},"
            "  'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}],"
            "   'containerStatuses': [{'name': 'a', 'ready': true, 'state': {'running': {}}},"
            "   {'name': 'b', 'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}]}}]");
        const json_t *rows = json_object_get(table, "rows");

        (void)state;
        assert_row(
            table,
            0,
            "['going', '1/1', 'Terminating', '0', '3h', '<none>', '<none>', '<none>', '<none>', '<none>']");
        assert_row(
            table,
            1,
            "['lost', '0/1', 'Unknown', '0', '3h', '<none>', '<none>', '<none>', '<none>', '<none>']");
        /* a finished pod being deleted is not Terminating */
        assert_row(
            table,
            2,
            "['done', '0/1', 'Completed', '0', '3h', '<none>', '<none>', '<none>', '<none>', '<none>']");
        assert_row(
            table,
            3,
            "['oom', '0/1', 'OOMKilled', '0', '3h', '<none>', '<none>', '<none>', '<none>', '<none>']");
        /* the first container is looked at last, so it explains the state */
        assert_row(
            table,
            4,
            "['killed', '0/2', 'ExitCode:3', '0', '3h', '<none>', '<none>', '<none>', '<none>', '<none>']");
        /* Completed while another container still runs reads Running */
        assert_row(
            table,
            5,
            "['half', '1/2', 'Running', '0', '3h', '<none>', '<none>', '<none>', '<none>', '<none>']");
        assert_json_equal(
            json_object_get(json_array_get(rows, 2), "conditions"),
            "[{'type': 'Completed', 'status': 'True', 'reason': 'Succeeded', 'message': 'The pod has completed successfully.'}]");
        assert_json_equal(
            json_object_get(json_array_get(rows, 3), "conditions"),
            "[{'type': 'Completed', 'status': 'True', 'reason': 'Failed', 'message': 'The pod failed.'}]");
        assert_null(json_object_get(json_array_get(rows, 0), "conditions"));
        json_decref(table);

        table = build(
            "Pod",
            "[{'metadata': {'name': 's'}, 'spec': {'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Failed', 'containerStatuses': [{'name': 'a', 'state': {'terminated': {'exitCode': 137, 'signal': 9}}}]}}]");
        assert_row(
            table,
            0,
            "['s', '0/1', 'Signal:9', '0', '<unknown>', '<none>', '<none>', '<none>', '<none>', '<none>']");
        json_decref(table);
}

static void pod_init_containers(void **state)
{
        json_t *table = build(
            "Pod",
            "[{'metadata': {'name': 'init', 'creationTimestamp': '2026-12-02T11:58:00Z'},"
            "  'spec': {'initContainers': [{'name': 'fetch', 'resources': {'limits': {'nvidia.com/gpu': '4'}}}, {'name': 'warm'}],"
            "   'containers': [{'name': 'a', 'resources': {'limits': {'nvidia.com/gpu': '1'}}}, {'name': 'b', 'resources': {'limits': {'nvidia.com/gpu': '1', 'vendor.com/npu': '1'}}}]},"
            "  'status': {'phase': 'Pending',"
            "   'initContainerStatuses': [{'name': 'fetch', 'restartCount': 0, 'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}},"
            "    {'name': 'warm', 'state': {'running': {}}}],"
            "   'containerStatuses': [{'name': 'a', 'state': {'waiting': {'reason': 'PodInitializing'}}}, {'name': 'b', 'state': {'waiting': {'reason': 'PodInitializing'}}}]}},"
            " {'metadata': {'name': 'crash'}, 'spec': {'initContainers': [{'name': 'i'}], 'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Pending', 'initContainerStatuses': [{'name': 'i', 'restartCount': 4,"
            "   'state': {'waiting': {'reason': 'CrashLoopBackOff'}}, 'lastState': {'terminated': {'exitCode': 1, 'finishedAt': '2026-12-02T11:59:00Z'}}}]}},"
            " {'metadata': {'name': 'failed'}, 'spec': {'initContainers': [{'name': 'i'}], 'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Failed', 'initContainerStatuses': [{'name': 'i', 'state': {'terminated': {'exitCode': 2}}}]}},"
            " {'metadata': {'name': 'sidecar'}, 'spec': {'initContainers': [{'name': 'proxy', 'restartPolicy': 'Always'}], 'containers': [{'name': 'a'}]},"
            "  'status': {'phase': 'Running', 'conditions': [{'type': 'Initialized', 'status': 'True'}],"
            "   'initContainerStatuses': [{'name': 'proxy', 'started': true, 'ready': true, 'restartCount': 1, 'state': {'running': {}},"
            "    'lastState': {'terminated': {'exitCode': 1, 'finishedAt': '2026-12-02T11:50:00Z'}}}],"
            "   'containerStatuses': [{'name': 'a', 'ready': true, 'state': {'running': {}}}]}}]");

        (void)state;
        /* the pod needs the largest init container's GPUs while it initializes */
        assert_row(
            table,
            0,
            "['init', '0/2', 'Init:1/2', '0', '2m', 'nvidia.com/gpu=4,vendor.com/npu=1', '<none>', '<none>', '<none>', '<none>']");
        assert_row(
            table,
            1,
            "['crash', '0/1', 'Init:CrashLoopBackOff', '4 (60s ago)', '<unknown>', '<none>', '<none>', '<none>', '<none>', '<none>']");
        assert_row(
            table,
            2,
            "['failed', '0/1', 'Init:ExitCode:2', '0', '<unknown>', '<none>', '<none>', '<none>', '<none>', '<none>']");
        /* a running sidecar counts among the containers, and its restarts stay counted */
        assert_row(
            table,
            3,
            "['sidecar', '2/2', 'Running', '1 (10m ago)', '<unknown>', '<none>', '<none>', '<none>', '<none>', '<none>']");
        json_decref(table);
}

/* ---- nodes ---------------------------------------------------------------------------------- */

static const char gpu_node[] =
    "{'metadata': {'name': 'gpu-node-1', 'creationTimestamp': '2026-11-22T12:00:00Z',"
    "  'labels': {'node-role.kubernetes.io/worker': '', 'node-role.kubernetes.io/gpu': '', 'node-role.kubernetes.io/': 'x', 'kubernetes.io/role': 'gpu'}},"
    " 'spec': {},"
    " 'status': {'allocatable': {'cpu': '96', 'memory': '527951184Ki', 'pods': '110', 'nvidia.com/gpu': '8', 'hugepages-2Mi': '0'},"
    "  'conditions': [{'type': 'MemoryPressure', 'status': 'False'}, {'type': 'Ready', 'status': 'True'}],"
    "  'addresses': [{'type': 'Hostname', 'address': 'gpu-node-1'}, {'type': 'InternalIP', 'address': '10.1.0.11'}, {'type': 'ExternalIP', 'address': '203.0.113.7'}],"
    "  'nodeInfo': {'kubeletVersion': 'v1.31.0-xpool', 'osImage': 'Debian GNU/Linux 12 (bookworm)', 'kernelVersion': '6.1.0-27-amd64', 'containerRuntimeVersion': 'xpool://0.1.0'},"
    "  'xpool': {'devices': ["
    "   {'id': 'GPU-0', 'model': 'NVIDIA H100 80GB HBM3'}, {'id': 'GPU-1', 'model': 'NVIDIA H100 80GB HBM3'},"
    "   {'id': 'GPU-2', 'model': 'NVIDIA H100 80GB HBM3'}, {'id': 'GPU-3', 'model': 'NVIDIA H100 80GB HBM3'},"
    "   {'id': 'GPU-4', 'model': 'NVIDIA H100 80GB HBM3'}, {'id': 'GPU-5', 'model': 'NVIDIA H100 80GB HBM3'},"
    "   {'id': 'GPU-6', 'model': 'NVIDIA H100 80GB HBM3'}, {'id': 'GPU-7', 'model': 'NVIDIA H100 80GB HBM3'}]}}}";

static const char npu_node[] =
    "{'metadata': {'name': 'npu-node-1', 'creationTimestamp': '2026-12-02T07:30:00Z'},"
    " 'spec': {'unschedulable': true},"
    " 'status': {'allocatable': {'cpu': '95500m', 'memory': '1536Mi', 'vendor.com/npu': '2', 'nvidia.com/gpu': '0'},"
    "  'conditions': [{'type': 'Ready', 'status': 'Unknown'}],"
    "  'addresses': [{'type': 'InternalIP', 'address': '10.1.0.12'}],"
    "  'nodeInfo': {'kubeletVersion': 'v1.31.0-xpool'},"
    "  'xpool': {'devices': [{'id': 'npu0', 'model': 'Ascend 910B'}, {'id': 'npu1', 'model': 'Ascend 910B'}, {'id': 'fpga0'}]}}}";

static void node_rows(void **state)
{
        char items[8192];
        json_t *table;

        (void)state;
        snprintf(items,
                 sizeof(items),
                 "[%s, %s, {'metadata': {'name': 'bare'}, 'spec': {'unschedulable': true}}]",
                 gpu_node,
                 npu_node);
        table = build("Node", items);
        assert_row(
            table,
            0,
            "['gpu-node-1', 'Ready', 'gpu,worker', '10d', 'v1.31.0-xpool', 'nvidia.com/gpu=8', '10.1.0.11', '203.0.113.7', '96', '503Gi',"
            " '8x NVIDIA H100 80GB HBM3', 'Debian GNU/Linux 12 (bookworm)', '6.1.0-27-amd64', 'xpool://0.1.0']");
        /* a Ready condition that is not True reads NotReady, as in kubectl */
        assert_row(
            table,
            1,
            "['npu-node-1', 'NotReady,SchedulingDisabled', '<none>', '4h30m', 'v1.31.0-xpool', 'nvidia.com/gpu=0,vendor.com/npu=2', '10.1.0.12', '<none>', '95.5', '1.5Gi',"
            " '2x Ascend 910B,1x <unknown>', '<unknown>', '<unknown>', '<unknown>']");
        assert_row(
            table,
            2,
            "['bare', 'Unknown,SchedulingDisabled', '<none>', '<unknown>', '', '<none>', '<none>', '<none>', '<unknown>', '<unknown>', '<none>', '<unknown>', '<unknown>', '<unknown>']");
        json_decref(table);
}

static void node_quantities(void **state)
{
        static const struct {
                const char *cpu, *memory, *cpu_cell, *memory_cell;
        } cases[] = {
            {"'1'", "'1023'", "1", "1023"},
            {"'250m'", "'1Ki'", "0.25", "1Ki"},
            {"'1001m'", "'10239'", "1.001", "9.9Ki"},
            {"0.5", "'64Gi'", "0.5", "64Gi"},
            {"'-1'", "'8Ei'", "<unknown>", "<unknown>"},
            {"'2k'", "'1E'", "2000", "888Pi"},
            {"'x'", "true", "<unknown>", "<unknown>"},
            {"4", "1048576", "4", "1Mi"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                char items[256];
                json_t *table, *cells;

                snprintf(items,
                         sizeof(items),
                         "[{'status': {'allocatable': {'cpu': %s, 'memory': %s}}}]",
                         cases[i].cpu,
                         cases[i].memory);
                table = build("Node", items);
                cells = json_object_get(json_array_get(json_object_get(table, "rows"), 0), "cells");
                assert_string_equal(json_string_value(json_array_get(cells, 8)), cases[i].cpu_cell);
                assert_string_equal(json_string_value(json_array_get(cells, 9)),
                                    cases[i].memory_cell);
                json_decref(table);
        }
}

/* ---- events, namespaces, leases, other kinds ------------------------------------------------ */

static void event_rows(void **state)
{
        json_t *table = build(
            "Event",
            "[{'metadata': {'name': 'train-1.17abc', 'namespace': 'ml'}, 'type': 'Warning', 'reason': 'BackOff',"
            "  'involvedObject': {'kind': 'Pod', 'name': 'train-1', 'fieldPath': 'spec.containers{side}'},"
            "  'source': {'component': 'xpool-agent', 'host': 'gpu-node-1'}, 'message': '  Back-off restarting failed container\\n',"
            "  'firstTimestamp': '2026-12-02T11:00:00Z', 'lastTimestamp': '2026-12-02T11:58:55Z', 'count': 7},"
            " {'metadata': {'name': 'e2'}, 'type': 'Normal', 'reason': 'Scheduled', 'involvedObject': {'kind': 'Pod', 'name': 'wait'},"
            "  'reportingComponent': 'xpool-scheduler', 'eventTime': '2026-12-02T11:59:50.123456Z', 'message': 'Bound'},"
            " {'metadata': {'name': 'e3'}, 'type': 'Normal', 'reason': 'Seen', 'involvedObject': {'kind': 'Node'},"
            "  'firstTimestamp': '2026-12-02T10:00:00Z', 'series': {'count': 12, 'lastObservedTime': '2026-12-02T11:59:00.000000Z'}},"
            " {}]");
        const json_t *columns = json_object_get(table, "columnDefinitions");

        (void)state;
        assert_row(
            table,
            0,
            "['65s', 'Warning', 'BackOff', 'pod/train-1', 'spec.containers{side}', 'xpool-agent, gpu-node-1', 'Back-off restarting failed container', '60m', 7, 'train-1.17abc']");
        assert_row(
            table,
            1,
            "['10s', 'Normal', 'Scheduled', 'pod/wait', '', 'xpool-scheduler', 'Bound', '10s', 1, 'e2']");
        assert_row(table, 2, "['60s', 'Normal', 'Seen', 'node', '', '', '', '120m', 12, 'e3']");
        assert_row(table, 3, "['<unknown>', '', '', '', '', '', '', '<unknown>', 1, '']");
        assert_string_equal(json_string_value(json_object_get(json_array_get(columns, 8), "type")),
                            "integer");
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(columns, 9), "format")), "name");
        json_decref(table);
}

static void namespace_lease_and_other_rows(void **state)
{
        json_t *table = build(
            "Namespace",
            "[{'metadata': {'name': 'ml', 'creationTimestamp': '2026-12-01T12:00:00Z'}, 'status': {'phase': 'Active'}},"
            " {'metadata': {'name': 'old', 'creationTimestamp': '2026-12-01T12:00:00Z', 'deletionTimestamp': '2026-12-02T11:00:00Z'},"
            "  'status': {'phase': 'Terminating'}},"
            " {'metadata': {'name': 'new', 'creationTimestamp': '2026-12-02T11:59:59Z'}}]");

        (void)state;
        assert_row(table, 0, "['ml', 'Active', '24h']");
        assert_row(table, 1, "['old', 'Terminating', '24h']");
        assert_row(table, 2, "['new', 'Active', '1s']");
        json_decref(table);

        table = build(
            "Lease",
            "[{'metadata': {'name': 'gpu-node-1', 'namespace': 'kube-node-lease', 'creationTimestamp': '2026-12-02T10:00:00Z'},"
            "  'spec': {'holderIdentity': 'gpu-node-1', 'leaseDurationSeconds': 40}},"
            " {'metadata': {'name': 'xpool-scheduler'}, 'spec': {}}]");
        assert_row(table, 0, "['gpu-node-1', 'gpu-node-1', '120m']");
        assert_row(table, 1, "['xpool-scheduler', '', '<unknown>']");
        assert_int_equal(json_array_size(json_object_get(table, "columnDefinitions")), 3);
        json_decref(table);

        table = build(
            "Widget",
            "[{'metadata': {'name': 'settings', 'creationTimestamp': '2026-12-02T11:57:00Z'}, 'data': {'a': 'b'}}]");
        assert_row(table, 0, "['settings', '3m']");
        assert_json_equal(
            json_object_get(table, "columnDefinitions"),
            "[{'name': 'Name', 'type': 'string', 'format': 'name', 'priority': 0, 'description': 'Name of the object.'},"
            " {'name': 'Age', 'type': 'string', 'format': '', 'priority': 0, 'description': 'Time since the object was created.'}]");
        json_decref(table);
}

/* ---- include modes and odd input ------------------------------------------------------------ */

static void include_modes(void **state)
{
        json_t *items = J(
            "[{'kind': 'Pod', 'apiVersion': 'v1', 'metadata': {'name': 'p', 'namespace': 'ml', 'labels': {'a': 'b'}},"
            "  'spec': {'containers': []}}, 7]");
        json_t *table = NULL;
        const json_t *row;

        (void)state;
        assert_int_equal(xp_table_build("Pod", items, NULL, now, XP_TABLE_INCLUDE_NONE, &table), 0);
        row = json_array_get(json_object_get(table, "rows"), 0);
        assert_null(json_object_get(row, "object"));
        assert_json_equal(json_object_get(table, "metadata"), "{}");
        json_decref(table);

        assert_int_equal(xp_table_build("Pod", items, "7", now, XP_TABLE_INCLUDE_METADATA, &table),
                         0);
        row = json_array_get(json_object_get(table, "rows"), 0);
        assert_json_equal(
            json_object_get(row, "object"),
            "{'kind': 'PartialObjectMetadata', 'apiVersion': 'meta.k8s.io/v1', 'metadata': {'name': 'p', 'namespace': 'ml', 'labels': {'a': 'b'}}}");
        /* a copy: the table outlives changes to the list */
        assert_true(json_object_get(json_object_get(row, "object"), "metadata") !=
                    json_object_get(json_array_get(items, 0), "metadata"));
        /* an item that is not an object gets an empty metadata */
        assert_json_equal(
            json_object_get(json_array_get(json_object_get(table, "rows"), 1), "object"),
            "{'kind': 'PartialObjectMetadata', 'apiVersion': 'meta.k8s.io/v1', 'metadata': {}}");
        json_decref(table);

        assert_int_equal(xp_table_build("Pod", items, NULL, now, XP_TABLE_INCLUDE_OBJECT, &table),
                         0);
        row = json_array_get(json_object_get(table, "rows"), 0);
        assert_true(json_equal(json_object_get(row, "object"), json_array_get(items, 0)));
        assert_true(json_object_get(row, "object") != json_array_get(items, 0));
        assert_json_equal(
            json_object_get(json_array_get(json_object_get(table, "rows"), 1), "object"), "7");
        json_decref(table);

        /* not a list: no rows */
        assert_int_equal(xp_table_build("Pod", NULL, NULL, now, XP_TABLE_INCLUDE_OBJECT, &table),
                         0);
        assert_int_equal(json_array_size(json_object_get(table, "rows")), 0);
        json_decref(table);
        assert_int_equal(
            xp_table_build(
                NULL, json_array_get(items, 0), NULL, now, XP_TABLE_INCLUDE_OBJECT, &table),
            0);
        assert_int_equal(json_array_size(json_object_get(table, "rows")), 0);
        assert_int_equal(json_array_size(json_object_get(table, "columnDefinitions")), 2);
        json_decref(table);
        json_decref(items);
}

/* Whatever shape the fields have, every row has one cell per column, each a string or integer. */
static void malformed_objects(void **state)
{
        static const char *const kinds[] = {"Pod", "Node", "Event", "Namespace", "Lease", "Secret"};
        static const char items[] =
            "[null, 1, 'x', [], {}, {'metadata': 5}, {'metadata': {'name': 7, 'creationTimestamp': 'soon', 'labels': ['a'], 'deletionTimestamp': 1}},"
            " {'spec': {'containers': 'many', 'initContainers': [1, {'resources': {'limits': {'nvidia.com/gpu': 'lots'}}}], 'readinessGates': [{}], 'unschedulable': 'yes'},"
            "  'status': {'phase': 3, 'conditions': [null, {'type': 'Ready'}], 'containerStatuses': [null, {'state': 'x', 'lastState': {'terminated': {'finishedAt': 5}}}],"
            "   'initContainerStatuses': [{'state': {'terminated': {'exitCode': 'x', 'reason': 1}}}], 'podIPs': [5], 'allocatable': {'cpu': [], 'memory': {}, 'x.io/y': 'z'},"
            "   'addresses': [{'type': 'InternalIP'}], 'nodeInfo': 'none', 'xpool': {'devices': [1, {'model': 2}]}}},"
            " {'spec': {'containers': [{'resources': {'limits': {'nvidia.com/gpu': '9223372036854775807'}}}, {'resources': {'limits': {'nvidia.com/gpu': '9223372036854775807'}}}]}},"
            " {'involvedObject': 'pod', 'source': [], 'series': {'count': 'x'}, 'count': -3, 'message': 5, 'eventTime': 'now'}]";
        json_t *list = J(items);

        (void)state;
        for (size_t k = 0; k < XP_ELEMENTSOF(kinds); k++) {
                json_t *table = NULL, *row;
                size_t i, n_columns;

                assert_int_equal(
                    xp_table_build(kinds[k], list, NULL, now, XP_TABLE_INCLUDE_METADATA, &table),
                    0);
                n_columns = json_array_size(json_object_get(table, "columnDefinitions"));
                assert_int_equal(json_array_size(json_object_get(table, "rows")),
                                 json_array_size(list));
                json_array_foreach(json_object_get(table, "rows"), i, row)
                {
                        const json_t *cells = json_object_get(row, "cells"), *cell;
                        size_t j;

                        assert_int_equal(json_array_size(cells), n_columns);
                        json_array_foreach(cells, j, cell)
                            assert_true(json_is_string(cell) || json_is_integer(cell));
                }
                json_decref(table);
        }

        /* the malformed quantity and the overflowing sum read <unknown> */
        {
                json_t *table = build("Pod", items);

                assert_string_equal(
                    json_string_value(json_array_get(
                        json_object_get(json_array_get(json_object_get(table, "rows"), 7), "cells"),
                        5)),
                    "<unknown>");
                assert_string_equal(
                    json_string_value(json_array_get(
                        json_object_get(json_array_get(json_object_get(table, "rows"), 8), "cells"),
                        5)),
                    "<unknown>");
                json_decref(table);
        }
        json_decref(list);
}

/* ---- printing ------------------------------------------------------------------------------- */

static json_t *printable_pods(void)
{
        char items[8192];

        snprintf(
            items,
            sizeof(items),
            "[%s, {'metadata': {'name': 'wait', 'namespace': 'default', 'creationTimestamp': '2026-12-02T11:59:30Z'},"
            " 'spec': {'containers': [{'name': 'a'}]}, 'status': {'phase': 'Pending', 'nominatedNodeName': 'gpu-node-2'}}]",
            running_pod);
        return build("Pod", items);
}

static void print_pods(void **state)
{
        json_t *table = printable_pods();

        (void)state;
        assert_printed(
            table,
            false,
            false,
            false,
            "NAME      READY   STATUS             RESTARTS     AGE   DEVICES\n"
            "train-1   1/2     CrashLoopBackOff   3 (5m ago)   2d    nvidia.com/gpu=2,vendor.com/npu=2\n"
            "wait      0/1     Pending            0            30s   <none>\n");
        assert_printed(
            table,
            true,
            false,
            false,
            "NAME      READY   STATUS             RESTARTS     AGE   DEVICES                             IP         NODE         NOMINATED NODE   READINESS GATES\n"
            "train-1   1/2     CrashLoopBackOff   3 (5m ago)   2d    nvidia.com/gpu=2,vendor.com/npu=2   10.0.0.5   gpu-node-1   <none>           <none>\n"
            "wait      0/1     Pending            0            30s   <none>                              <none>     <none>       gpu-node-2       <none>\n");
        assert_printed(
            table,
            false,
            true,
            false,
            "train-1   1/2   CrashLoopBackOff   3 (5m ago)   2d    nvidia.com/gpu=2,vendor.com/npu=2\n"
            "wait      0/1   Pending            0            30s   <none>\n");
        assert_printed(
            table,
            false,
            false,
            true,
            "NAMESPACE   NAME      READY   STATUS             RESTARTS     AGE   DEVICES\n"
            "ml          train-1   1/2     CrashLoopBackOff   3 (5m ago)   2d    nvidia.com/gpu=2,vendor.com/npu=2\n"
            "default     wait      0/1     Pending            0            30s   <none>\n");
        json_decref(table);

        /* no rows: nothing at all, not even headers */
        table = build("Pod", "[]");
        assert_printed(table, false, false, false, "");
        assert_printed(table, true, true, true, "");
        json_decref(table);
}

static void print_nodes_wide(void **state)
{
        char items[8192];
        json_t *table;

        (void)state;
        snprintf(items, sizeof(items), "[%s, %s]", gpu_node, npu_node);
        table = build("Node", items);
        assert_printed(
            table,
            false,
            false,
            false,
            "NAME         STATUS                        ROLES        AGE     VERSION         DEVICES\n"
            "gpu-node-1   Ready                         gpu,worker   10d     v1.31.0-xpool   nvidia.com/gpu=8\n"
            "npu-node-1   NotReady,SchedulingDisabled   <none>       4h30m   v1.31.0-xpool   nvidia.com/gpu=0,vendor.com/npu=2\n");
        assert_printed(
            table,
            true,
            false,
            false,
            "NAME         STATUS                        ROLES        AGE     VERSION         DEVICES                             INTERNAL-IP   EXTERNAL-IP   CPU    MEMORY   MODELS                        OS-IMAGE                         KERNEL-VERSION   CONTAINER-RUNTIME\n"
            "gpu-node-1   Ready                         gpu,worker   10d     v1.31.0-xpool   nvidia.com/gpu=8                    10.1.0.11     203.0.113.7   96     503Gi    8x NVIDIA H100 80GB HBM3      Debian GNU/Linux 12 (bookworm)   6.1.0-27-amd64   xpool://0.1.0\n"
            "npu-node-1   NotReady,SchedulingDisabled   <none>       4h30m   v1.31.0-xpool   nvidia.com/gpu=0,vendor.com/npu=2   10.1.0.12     <none>        95.5   1.5Gi    2x Ascend 910B,1x <unknown>   <unknown>                        <unknown>        <unknown>\n");
        json_decref(table);
}

/* A Table as another server sends it: cells of every JSON type, a newline, terminal escapes. */
static void print_foreign_table(void **state)
{
        json_t *table = J(
            "{'kind': 'Table', 'apiVersion': 'meta.k8s.io/v1', 'metadata': {'resourceVersion': '9'},"
            " 'columnDefinitions': [{'name': 'Name', 'type': 'string', 'format': 'name'}, {'name': 'Replicas', 'type': 'integer'},"
            "  {'name': 'Note', 'type': 'string'}, {'name': 'Detail', 'type': 'string', 'priority': 1}, {'name': 'x', 'type': 'string'}],"
            " 'rows': [{'cells': ['web', 3, 'line one\\nline two', 'hidden', true, 'beyond the columns']},"
            "  {'cells': ['\\u001b[31mred\\u001b[0m', -1, 1.5, null, {'a': [1]}], 'object': {'metadata': {'name': 'x'}}},"
            "  {'cells': ['h\\u00e9llo', 12345678901, 'tab\\there']},"
            "  {'cells': ['short']}]}");

        (void)state;
        assert_printed(table,
                       false,
                       false,
                       false,
                       "NAME             REPLICAS      NOTE          X\n"
                       "web              3             line one...   true\n"
                       "^[[31mred^[[0m   -1            1.5           {\"a\":[1]}\n"
                       "héllo            12345678901   tab^Ihere\n"
                       "short\n");
        /* with the namespace: rows without an object read <unknown>, objects without one nothing */
        assert_printed(
            table,
            true,
            true,
            true,
            "<unknown>   web              3             line one...   hidden   true\n"
            "            ^[[31mred^[[0m   -1            1.5                    {\"a\":[1]}\n"
            "<unknown>   héllo            12345678901   tab^Ihere\n"
            "<unknown>   short\n");
        json_decref(table);
}

static void print_rejects_bad_tables(void **state)
{
        static const struct {
                const char *table, *message;
        } cases[] = {
            {"[]", "not a Table: not a JSON object"},
            {"{'kind': 'PodList', 'columnDefinitions': [], 'rows': []}",
             "not a Table: kind is PodList"},
            {"{'columnDefinitions': [], 'rows': []}",
             "not a Table: kind is missing or not a string"},
            {"{'kind': 'Table', 'rows': []}",
             "not a Table: columnDefinitions is missing or not a list"},
            {"{'kind': 'Table', 'columnDefinitions': [{'name': 'A'}, 'B'], 'rows': []}",
             "columnDefinitions[1] is not an object"},
            {"{'kind': 'Table', 'columnDefinitions': [{'name': 'A'}, {'name': 2}], 'rows': []}",
             "columnDefinitions[1].name is not a string"},
            {"{'kind': 'Table', 'columnDefinitions': [{'name': 'A', 'priority': '1'}], 'rows': []}",
             "columnDefinitions[0].priority is not an integer"},
            {"{'kind': 'Table', 'columnDefinitions': [{'name': 'A'}], 'rows': {}}",
             "not a Table: rows is not a list"},
            {"{'kind': 'Table', 'columnDefinitions': [{'name': 'A'}], 'rows': [{'cells': ['a']}, ['b']]}",
             "rows[1] is not an object"},
            {"{'kind': 'Table', 'columnDefinitions': [{'name': 'A'}], 'rows': [{'cells': 'a'}]}",
             "rows[0].cells is not a list"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                json_t *table = J(cases[i].table);
                struct xp_error err = {0};
                char *text = NULL;

                assert_int_equal(print(table, true, false, true, &text, &err), -EINVAL);
                assert_int_equal(err.code, -EINVAL);
                assert_string_equal(err.msg, cases[i].message);
                /* nothing written on failure */
                assert_string_equal(text, "");
                free(text);
                json_decref(table);
        }

        /* a Table without rows or cells is fine */
        {
                json_t *table = J(
                    "{'kind': 'Table', 'columnDefinitions': [{'name': 'A'}, {'name': 'B'}], 'rows': [{}, {'cells': null}]}");

                assert_printed(table, false, false, false, "A     B\n\n\n");
                json_decref(table);
        }
}

static void print_write_error(void **state)
{
        json_t *table = printable_pods();
        struct xp_error err = {0};
        FILE *full = fopen("/dev/full", "we");

        (void)state;
        if (!full) {
                json_decref(table);
                skip();
        }
        assert_int_equal(xp_table_print(full, table, true, false, false, &err), -EIO);
        assert_string_equal(err.msg, "writing the table failed");
        fclose(full);
        json_decref(table);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(ages),
            cmocka_unit_test(pod_columns),
            cmocka_unit_test(pod_running_with_restarts),
            cmocka_unit_test(pod_pending),
            cmocka_unit_test(pod_terminating_and_finished),
            cmocka_unit_test(pod_init_containers),
            cmocka_unit_test(node_rows),
            cmocka_unit_test(node_quantities),
            cmocka_unit_test(event_rows),
            cmocka_unit_test(namespace_lease_and_other_rows),
            cmocka_unit_test(include_modes),
            cmocka_unit_test(malformed_objects),
            cmocka_unit_test(print_pods),
            cmocka_unit_test(print_nodes_wide),
            cmocka_unit_test(print_foreign_table),
            cmocka_unit_test(print_rejects_bad_tables),
            cmocka_unit_test(print_write_error),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
