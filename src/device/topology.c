/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The accelerators' connection matrix as `nvidia-smi topo -m` prints it: tab-separated, a header
 * row of labels, X on the diagonal, NV<n> for direct device links, the PCIe levels otherwise,
 * then each device's CPU and NUMA affinity, then the legend.
 *
 * Labels are the kind's prefix (GPU, NPU, FPGA, VPU, ACC) numbered in inventory order within the
 * kind (discovery sorts by kind, vendor and index), so two vendors' GPUs never share a label:
 * with two AMD GPUs and an Intel GPU they are GPU0, GPU1 (AMD) and GPU2 (Intel).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link_index.h"
#include "xpool/device.h"

#define LABEL_MAX 32

static const char *kind_prefix(enum xp_device_kind kind)
{
        static const char *const prefixes[] = {
            [XP_DEVICE_KIND_UNSET] = "ACC",
            [XP_DEVICE_GPU] = "GPU",
            [XP_DEVICE_NPU] = "NPU",
            [XP_DEVICE_FPGA] = "FPGA",
            [XP_DEVICE_VPU] = "VPU",
            [XP_DEVICE_ACCELERATOR] = "ACC",
        };

        if ((size_t)kind < XP_ELEMENTSOF(prefixes) && prefixes[kind])
                return prefixes[kind];
        return "ACC";
}

static const char *const legend =
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # direct device links (NVLink, Infinity Fabric, HCCS)\n";

static void print_cell(FILE *f,
                       const struct xp_link_index *index,
                       const struct xp_node_inventory *inv,
                       const struct xp_device *a,
                       const struct xp_device *b)
{
        const struct xp_device_link *link;
        const char *level;

        if (a == b) {
                fputs(" X ", f);
                return;
        }
        link = xp_link_index_find(index, inv, a->id, b->id);
        if (!link) {
                fputs("N/A", f);
                return;
        }
        if (link->level == XP_LINK_NVLINK) {
                fprintf(f, "NV%" PRId64, link->nvlinks);
                return;
        }
        level = xp_link_level_to_string(link->level);
        fputs(level ? level : "N/A", f);
}

int xp_device_topology_format(const struct xp_node_inventory *inventory, char **ret_text)
{
        const size_t n = inventory->devices.n;
        _cleanup_free_ char(*labels)[LABEL_MAX] = NULL;
        size_t counters[XP_DEVICE_ACCELERATOR + 1] = {0};
        _cleanup_(xp_link_index_done) struct xp_link_index index = {0};
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (n == 0) {
                text = strdup("No accelerators found.\n");
                if (!text)
                        return -ENOMEM;
                *ret_text = text;
                return 0;
        }
        labels = calloc(n, sizeof(*labels));
        if (!labels || xp_link_index_update(&index, inventory) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                enum xp_device_kind kind = inventory->devices.items[i].kind;
                size_t slot = (size_t)kind < XP_ELEMENTSOF(counters) ? (size_t)kind : 0;

                snprintf(labels[i], LABEL_MAX, "%s%zu", kind_prefix(kind), counters[slot]++);
        }

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (size_t j = 0; j < n; j++)
                fprintf(f, "\t%s", labels[j]);
        fputs("\tCPU Affinity\tNUMA Affinity\n", f);
        for (size_t i = 0; i < n; i++) {
                const struct xp_device *a = &inventory->devices.items[i];

                fputs(labels[i], f);
                for (size_t j = 0; j < n; j++) {
                        fputc('\t', f);
                        print_cell(f, &index, inventory, a, &inventory->devices.items[j]);
                }
                fprintf(f, "\t%s\t", a->local_cpus && *a->local_cpus ? a->local_cpus : "N/A");
                if (a->numa_node.set)
                        fprintf(f, "%" PRId64 "\n", a->numa_node.value);
                else
                        fputs("N/A\n", f);
        }
        fputc('\n', f);
        fputs(legend, f);
        if (fclose(f) != 0 || !text) {
                free(text);
                return -ENOMEM;
        }
        *ret_text = text;
        return 0;
}
