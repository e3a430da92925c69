/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kube layer's clients and checkers from the command line, for
 * tests/integration/22-device-plugin.sh:
 *   kube_tool podres SOCKET [NAMESPACE/NAME]  List and GetAllocatableResources (and Get) as JSON
 *   kube_tool cdi-check FILE...               xp_cdi_check_file() on each: "ok FILE" or the error
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/cdi.h"
#include "xpool/podresources.h"

static json_t *devices_json(const struct xp_podres_devices *d, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++) {
                json_t *ids = json_array(), *numa = json_array();

                for (size_t k = 0; k < d[i].ids.n; k++)
                        json_array_append_new(ids, json_string(d[i].ids.items[k]));
                for (size_t k = 0; k < d[i].numa_nodes.n; k++)
                        json_array_append_new(numa, json_integer(d[i].numa_nodes.items[k]));
                json_array_append_new(
                    a,
                    json_pack(
                        "{s:s,s:o,s:o}", "resource", d[i].resource_name, "ids", ids, "numa", numa));
        }
        return a;
}

static json_t *pod_json(const struct xp_podres_pod *pod)
{
        json_t *containers = json_array();

        for (size_t c = 0; c < pod->containers.n; c++) {
                const struct xp_podres_container *ct = &pod->containers.items[c];
                json_t *cpus = json_array(), *cdi = json_array();

                for (size_t k = 0; k < ct->cpu_ids.n; k++)
                        json_array_append_new(cpus, json_integer(ct->cpu_ids.items[k]));
                for (size_t k = 0; k < ct->cdi_devices.n; k++)
                        json_array_append_new(cdi, json_string(ct->cdi_devices.items[k]));
                json_array_append_new(containers,
                                      json_pack("{s:s,s:o,s:o,s:o}",
                                                "name",
                                                ct->name,
                                                "devices",
                                                devices_json(ct->devices.items, ct->devices.n),
                                                "cpus",
                                                cpus,
                                                "cdi",
                                                cdi));
        }
        return json_pack("{s:s,s:s,s:o}",
                         "namespace",
                         pod->namespace,
                         "name",
                         pod->name,
                         "containers",
                         containers);
}

static int podres(const char *socket, const char *get)
{
        struct xp_podres_client *c = NULL;
        struct xp_podres_list list = {0};
        struct xp_podres_allocatable alloc = {0};
        struct xp_error err = {0};
        json_t *out = json_object(), *pods = json_array();
        int r;

        r = xp_podres_client_new(socket, 5000, &c, &err);
        if (r >= 0)
                r = xp_podres_list(c, &list, &err);
        if (r >= 0)
                r = xp_podres_allocatable(c, &alloc, &err);
        if (r >= 0 && get) {
                char ns[256];
                const char *slash = strchr(get, '/');
                struct xp_podres_pod pod = {0};

                snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - get) : 0, get);
                r = xp_podres_get(c, ns, slash ? slash + 1 : get, &pod, &err);
                if (r >= 0)
                        json_object_set_new(out, "get", pod_json(&pod));
                xp_podres_pod_done(&pod);
        }
        if (r < 0) {
                fprintf(stderr, "kube_tool: %s\n", xp_error_message(&err));
        } else {
                for (size_t i = 0; i < list.pods.n; i++)
                        json_array_append_new(pods, pod_json(&list.pods.items[i]));
                json_object_set(out, "pods", pods);
                json_object_set_new(
                    out, "allocatable", devices_json(alloc.devices.items, alloc.devices.n));
                if (list.pods.n > 0 && list.pods.items[0].containers.n > 0 &&
                    list.pods.items[0].containers.items[0].devices.n > 0) {
                        const struct xp_podres_devices *d =
                            &list.pods.items[0].containers.items[0].devices.items[0];
                        const struct xp_podres_pod *owner =
                            xp_podres_find_device(&list, d->resource_name, d->ids.items[0]);

                        json_object_set_new(out, "owner", json_string(owner ? owner->name : ""));
                }
                json_dumpf(out, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
                printf("\n");
        }
        json_decref(out);
        json_decref(pods);
        xp_podres_list_done(&list);
        xp_podres_allocatable_done(&alloc);
        xp_podres_client_free(c);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
        int failed = 0;

        if (argc >= 3 && strcmp(argv[1], "podres") == 0)
                return podres(argv[2], argc > 3 ? argv[3] : NULL);
        if (argc >= 3 && strcmp(argv[1], "cdi-check") == 0) {
                for (int i = 2; i < argc; i++) {
                        struct xp_error err = {0};

                        if (xp_cdi_check_file(argv[i], &err) < 0) {
                                printf("invalid %s\n", xp_error_message(&err));
                                failed = 1;
                        } else {
                                printf("ok %s\n", argv[i]);
                        }
                }
                return failed;
        }
        fprintf(stderr, "usage: kube_tool podres SOCKET [NS/NAME] | kube_tool cdi-check FILE...\n");
        return 2;
}
