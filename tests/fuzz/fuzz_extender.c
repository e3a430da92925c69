/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the extender's request decoding and handling: each input is decoded as ExtenderArgs and
 * as ExtenderBindingArgs, and served as filter and prioritize by an extender holding a small
 * cluster. A decode either fills everything or leaves nothing with a message; every answer is a
 * JSON document with a status kube-scheduler understands; the extender answers a good request
 * afterwards as before.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/extender.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static const char node[] =
    "{\"metadata\":{\"name\":\"n1\",\"annotations\":{\"xpool.io/inventory\":"
    "\"{\\\"version\\\":1,\\\"devices\\\":[{\\\"id\\\":\\\"g0\\\",\\\"resource\\\":\\\"nvidia.com/gpu\\\","
    "\\\"kind\\\":\\\"gpu\\\",\\\"index\\\":0},{\\\"id\\\":\\\"g1\\\",\\\"index\\\":1}],\\\"links\\\":[\\\"NV4\\\"]}\"}},"
    "\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"2\"},"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";
static const char good[] =
    "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}},\"NodeNames\":[\"n1\"]}";

static struct xp_extender *extender(void)
{
        static struct xp_extender *e;
        struct xp_extender_options o = {.no_api = true, .sched = {.seed = 1}};
        json_t *n;

        if (e)
                return e;
        n = json_loads(node, 0, NULL);
        check(n && xp_extender_new(&o, &e, NULL) == 0 && xp_extender_node_set(e, n, NULL) == 0);
        json_decref(n);
        return e;
}

static void serve(const char *verb, const char *body, size_t len)
{
        char *out = NULL;
        json_t *j;
        int status = xp_extender_handle(extender(), verb, body, len, &out);

        check(status == 200 || status == 400 || status == 422 || status == 404);
        j = out ? json_loads(out, 0, NULL) : NULL;
        check(j != NULL);
        json_decref(j);
        free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_extender_args a = {0};
        struct xp_extender_binding b = {0};
        struct xp_error err = {0};
        const char *body = (const char *)data;
        char *out = NULL;
        int r;

        r = xp_extender_args_decode(body, size, &a, &err);
        if (r < 0) {
                check(err.msg[0] != '\0' && !a.pod && !a.pod_json && !a.names);
        } else {
                check(a.pod && a.pod_json && (a.n_names == 0 || a.names));
                for (size_t i = 0; i < a.n_names; i++)
                        check(a.names[i] && a.names[i][0]);
                xp_extender_args_done(&a);
        }
        err.msg[0] = '\0';
        r = xp_extender_binding_decode(body, size, &b, &err);
        if (r < 0)
                check(err.msg[0] != '\0' && !b.pod_name);
        else
                check(b.pod_name && b.pod_namespace && b.node);
        xp_extender_binding_done(&b);
        serve("filter", body, size);
        serve("prioritize", body, size);
        /* still serving: the good request fits n1 */
        check(xp_extender_handle(extender(), "filter", good, strlen(good), &out) == 200);
        check(strstr(out, "\"NodeNames\":[\"n1\"]") != NULL);
        free(out);
        return 0;
}
