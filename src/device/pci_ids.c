/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The accelerator PCI ids. Sources: the PCI ID Repository (pci.ids) for NVIDIA, AMD, Intel,
 * Xilinx, Habana, Enflame and Moore Threads; the vendors' Linux drivers and device plugins for
 * ids pci.ids does not list yet (Huawei Ascend, Cambricon, Google TPU, Hygon DCU, Intel NPU,
 * newer NVIDIA and AMD parts). Entries marked "unverified" come from vendor material as recalled
 * and should be checked against a real card before anyone relies on them.
 *
 * Model names follow what the vendor's own tools print (nvidia-smi, rocm-smi, npu-smi, cnmon), so
 * the catalog and overrides match either source. Resource names are the defaults of the vendors'
 * Kubernetes device plugins; Xilinx/AMD Alveo cards get amd.com/xilinx_<card> (the plugin appends
 * the shell name, which sysfs does not tell: overridable by configuration).
 */
#include <stdlib.h>

#include "pci_ids.h"

#define ENTRY(vendor_id, device_id, kind_, family_, vendor_, model_, resource_, mgmt_)             \
        {                                                                                          \
                .vendor = vendor_id, .device = device_id, .kind = kind_, .family = family_,        \
                .vendor_name = vendor_, .model = model_, .resource_name = resource_,               \
                .management = mgmt_,                                                               \
        }
#define NV(dev, name)                                                                              \
        ENTRY(0x10de, dev, XP_DEVICE_GPU, XP_PCI_NVIDIA, "NVIDIA", name, "nvidia.com/gpu", false)
#define AMD(dev, name)                                                                             \
        ENTRY(0x1002, dev, XP_DEVICE_GPU, XP_PCI_AMDGPU, "AMD", name, "amd.com/gpu", false)
#define INTEL_GPU(dev, name)                                                                       \
        ENTRY(0x8086,                                                                              \
              dev,                                                                                 \
              XP_DEVICE_GPU,                                                                       \
              XP_PCI_INTEL_GPU,                                                                    \
              "Intel",                                                                             \
              name,                                                                                \
              "gpu.intel.com/i915",                                                                \
              false)
#define ASCEND(dev, name, res)                                                                     \
        ENTRY(0x19e5, dev, XP_DEVICE_NPU, XP_PCI_ASCEND, "Huawei", name, res, false)
#define MLU(dev, name)                                                                             \
        ENTRY(0xcabc,                                                                              \
              dev,                                                                                 \
              XP_DEVICE_NPU,                                                                       \
              XP_PCI_CAMBRICON,                                                                    \
              "Cambricon",                                                                         \
              name,                                                                                \
              "cambricon.com/mlu",                                                                 \
              false)
#define HYGON(dev, name)                                                                           \
        ENTRY(0x1d94, dev, XP_DEVICE_GPU, XP_PCI_HYGON_DCU, "Hygon", name, "hygon.com/dcu", false)
#define ALVEO(dev, name, res, mgmt)                                                                \
        ENTRY(0x10ee, dev, XP_DEVICE_FPGA, XP_PCI_XILINX, "AMD Xilinx", name, res, mgmt)
#define INTEL_FPGA(dev, name)                                                                      \
        ENTRY(0x8086,                                                                              \
              dev,                                                                                 \
              XP_DEVICE_FPGA,                                                                      \
              XP_PCI_INTEL_FPGA,                                                                   \
              "Intel",                                                                             \
              name,                                                                                \
              "fpga.intel.com/region",                                                             \
              false)
#define HABANA(dev, name)                                                                          \
        ENTRY(0x1da3, dev, XP_DEVICE_NPU, XP_PCI_HABANA, "Habana", name, "habana.ai/gaudi", false)
#define TPU(dev, name)                                                                             \
        ENTRY(0x1ae0, dev, XP_DEVICE_NPU, XP_PCI_TPU, "Google", name, "google.com/tpu", false)
#define INTEL_NPU(dev, name)                                                                       \
        ENTRY(0x8086,                                                                              \
              dev,                                                                                 \
              XP_DEVICE_VPU,                                                                       \
              XP_PCI_INTEL_NPU,                                                                    \
              "Intel",                                                                             \
              name,                                                                                \
              "npu.intel.com/accel",                                                               \
              false)
#define ENFLAME(dev, name)                                                                         \
        ENTRY(0x1e36, dev, XP_DEVICE_NPU, XP_PCI_ENFLAME, "Enflame", name, "enflame.com/gcu", false)
#define ILUVATAR(dev, name)                                                                        \
        ENTRY(0x1e3e,                                                                              \
              dev,                                                                                 \
              XP_DEVICE_GPU,                                                                       \
              XP_PCI_ILUVATAR,                                                                     \
              "Iluvatar",                                                                          \
              name,                                                                                \
              "iluvatar.ai/gpu",                                                                   \
              false)
#define MTHREADS(dev, name)                                                                        \
        ENTRY(0x1ed5,                                                                              \
              dev,                                                                                 \
              XP_DEVICE_GPU,                                                                       \
              XP_PCI_MTHREADS,                                                                     \
              "Moore Threads",                                                                     \
              name,                                                                                \
              "mthreads.com/gpu",                                                                  \
              false)
#define METAX(dev, name)                                                                           \
        ENTRY(0x9999, dev, XP_DEVICE_GPU, XP_PCI_METAX, "MetaX", name, "metax-tech.com/gpu", false)

/* Sorted by vendor, then device: xp_pci_id_lookup() searches it with bsearch(). */
static const struct xp_pci_id table[] = {
    /* AMD (ATI) */
    AMD(0x66a1, "AMD Instinct MI50"),
    AMD(0x6860, "AMD Instinct MI25"),
    AMD(0x7362, "AMD Radeon Pro V520"),
    AMD(0x738c, "AMD Instinct MI100"),
    AMD(0x738e, "AMD Instinct MI100"),
    AMD(0x73a1, "AMD Radeon Pro V620"),
    AMD(0x73a3, "AMD Radeon PRO W6800"),
    AMD(0x7408, "AMD Instinct MI250X"),
    AMD(0x740c, "AMD Instinct MI250X/MI250"),
    AMD(0x740f, "AMD Instinct MI210"),
    AMD(0x7448, "AMD Radeon PRO W7900"),
    AMD(0x74a0, "AMD Instinct MI300A"),
    AMD(0x74a1, "AMD Instinct MI300X"),
    AMD(0x74a5, "AMD Instinct MI325X"), /* unverified */
    /* NVIDIA */
    NV(0x1db1, "Tesla V100-SXM2-16GB"),
    NV(0x1db4, "Tesla V100-PCIE-16GB"),
    NV(0x1db5, "Tesla V100-SXM2-32GB"),
    NV(0x1db6, "Tesla V100-PCIE-32GB"),
    NV(0x1df6, "Tesla V100S-PCIE-32GB"),
    NV(0x1e30, "Quadro RTX 8000"),
    NV(0x1eb8, "Tesla T4"),
    NV(0x20b0, "NVIDIA A100-SXM4-40GB"),
    NV(0x20b1, "NVIDIA A100-PCIE-40GB"),
    NV(0x20b2, "NVIDIA A100-SXM4-80GB"),
    NV(0x20b5, "NVIDIA A100 80GB PCIe"),
    NV(0x20b7, "NVIDIA A30"),
    NV(0x20f1, "NVIDIA A100-PCIE-40GB"),
    NV(0x20f3, "NVIDIA A800-SXM4-80GB"),
    NV(0x20f5, "NVIDIA A800 80GB PCIe"),
    NV(0x2204, "NVIDIA GeForce RTX 3090"),
    NV(0x2230, "NVIDIA RTX A6000"),
    NV(0x2231, "NVIDIA RTX A5000"),
    NV(0x2235, "NVIDIA A40"),
    NV(0x2236, "NVIDIA A10"),
    NV(0x2321, "NVIDIA H100 NVL"),
    NV(0x2322, "NVIDIA H800 PCIe"),
    NV(0x2324, "NVIDIA H800"),
    NV(0x2329, "NVIDIA H20"), /* unverified */
    NV(0x2330, "NVIDIA H100 80GB HBM3"),
    NV(0x2331, "NVIDIA H100 PCIe"),
    NV(0x2335, "NVIDIA H200"),        /* unverified */
    NV(0x2342, "NVIDIA GH200 480GB"), /* unverified */
    NV(0x24b0, "NVIDIA RTX A4000"),
    NV(0x25b6, "NVIDIA A16"),
    NV(0x2684, "NVIDIA GeForce RTX 4090"),
    NV(0x26b1, "NVIDIA RTX 6000 Ada Generation"),
    NV(0x26b5, "NVIDIA L40"),
    NV(0x26b9, "NVIDIA L40S"), /* unverified */
    NV(0x2704, "NVIDIA GeForce RTX 4080"),
    NV(0x27b8, "NVIDIA L4"),
    NV(0x2901, "NVIDIA B200"), /* unverified */
    /* Xilinx: management and user physical functions of one Alveo card */
    ALVEO(0x5000, "AMD Alveo U200", "amd.com/xilinx_u200", true),
    ALVEO(0x5001, "AMD Alveo U200", "amd.com/xilinx_u200", false),
    ALVEO(0x5004, "AMD Alveo U250", "amd.com/xilinx_u250", true),
    ALVEO(0x5005, "AMD Alveo U250", "amd.com/xilinx_u250", false),
    ALVEO(0x500c, "AMD Alveo U280", "amd.com/xilinx_u280", true),
    ALVEO(0x500d, "AMD Alveo U280", "amd.com/xilinx_u280", false),
    ALVEO(0x5020, "AMD Alveo U50", "amd.com/xilinx_u50", true),
    ALVEO(0x5021, "AMD Alveo U50", "amd.com/xilinx_u50", false),
    ALVEO(0x505c, "AMD Alveo U55C", "amd.com/xilinx_u55c", true),
    ALVEO(0x505d, "AMD Alveo U55C", "amd.com/xilinx_u55c", false),
    /* Huawei Ascend */
    ASCEND(0xd100, "Ascend 310", "huawei.com/Ascend310"),
    ASCEND(0xd500, "Ascend 310P", "huawei.com/Ascend310P"),
    ASCEND(0xd801, "Ascend 910", "huawei.com/Ascend910"),
    ASCEND(0xd802, "Ascend 910B", "huawei.com/Ascend910"),
    ASCEND(0xd803, "Ascend 910C", "huawei.com/Ascend910"), /* unverified */
    /* Google */
    TPU(0x0027, "Google TPU v2/v3"), /* unverified */
    TPU(0x005e, "Google TPU v4"),    /* unverified */
    TPU(0x0062, "Google TPU v5p"),   /* unverified */
    TPU(0x0063, "Google TPU v5e"),   /* unverified */
    TPU(0x006f, "Google TPU v6e"),   /* unverified */
    /* Hygon */
    HYGON(0x51b7, "Hygon DCU Z100"),    /* unverified */
    HYGON(0x52b7, "Hygon DCU Z100L"),   /* unverified */
    HYGON(0x53b7, "Hygon DCU K100"),    /* unverified */
    HYGON(0x54b7, "Hygon DCU K100 AI"), /* unverified */
    /* Habana Labs (Intel Gaudi) */
    HABANA(0x1000, "Habana Gaudi HL-2000"),
    HABANA(0x1010, "Habana Gaudi HL-2000"),
    HABANA(0x1020, "Habana Gaudi2"),
    HABANA(0x1060, "Intel Gaudi 3"), /* unverified */
    /* Enflame */
    ENFLAME(0x0001, "Enflame CloudBlazer T10"),
    ENFLAME(0x0002, "Enflame CloudBlazer T11"),
    ENFLAME(0x0021, "Enflame CloudBlazer T20"),
    ENFLAME(0x0022, "Enflame CloudBlazer T20"),
    ENFLAME(0x0023, "Enflame CloudBlazer T21"),
    ENFLAME(0x0024, "Enflame CloudBlazer T21"),
    ENFLAME(0x8001, "Enflame CloudBlazer I20"),
    ENFLAME(0x8011, "Enflame CloudBlazer I10"),
    /* Iluvatar CoreX */
    ILUVATAR(0x0001, "Iluvatar BI-V100"), /* unverified */
    ILUVATAR(0x0002, "Iluvatar BI-V150"), /* unverified */
    /* Moore Threads */
    MTHREADS(0x0201, "Moore Threads MTT S80"),
    MTHREADS(0x0202, "Moore Threads MTT S70"),
    MTHREADS(0x0222, "Moore Threads MTT S3000"),
    /* Intel: GPUs, FPGA cards, NPUs */
    INTEL_FPGA(0x09c4, "Intel PAC with Arria 10 GX FPGA"),
    INTEL_FPGA(0x0b2b, "Intel FPGA PAC D5005"),
    INTEL_FPGA(0x0b30, "Intel FPGA PAC N3000"),
    INTEL_GPU(0x0bd5, "Intel Data Center GPU Max 1550"),
    INTEL_GPU(0x0bd6, "Intel Data Center GPU Max 1550"),
    INTEL_GPU(0x0bd9, "Intel Data Center GPU Max 1100"),
    INTEL_GPU(0x0bda, "Intel Data Center GPU Max 1100"),
    INTEL_GPU(0x0bdb, "Intel Data Center GPU Max 1100"),
    INTEL_GPU(0x56a0, "Intel Arc A770"),
    INTEL_GPU(0x56a1, "Intel Arc A750"),
    INTEL_GPU(0x56a2, "Intel Arc A580"),
    INTEL_GPU(0x56a5, "Intel Arc A380"),
    INTEL_GPU(0x56c0, "Intel Data Center GPU Flex 170"),
    INTEL_GPU(0x56c1, "Intel Data Center GPU Flex 140"),
    INTEL_NPU(0x643e, "Intel NPU (Lunar Lake)"),
    INTEL_NPU(0x7d1d, "Intel NPU (Meteor Lake)"),
    INTEL_NPU(0xad1d, "Intel NPU (Arrow Lake)"),
    INTEL_FPGA(0xbcce, "Intel Agilex FPGA (OFS)"),
    /* MetaX */
    METAX(0x4001, "MetaX C500"), /* unverified */
    /* Cambricon */
    MLU(0x0270, "Cambricon MLU270"),
    MLU(0x0290, "Cambricon MLU290"),
    MLU(0x0370, "Cambricon MLU370"),
    MLU(0x0590, "Cambricon MLU590"),
};

static int compare_ids(const void *key, const void *entry)
{
        const struct xp_pci_id *a = key, *b = entry;

        if (a->vendor != b->vendor)
                return a->vendor < b->vendor ? -1 : 1;
        if (a->device != b->device)
                return a->device < b->device ? -1 : 1;
        return 0;
}

const struct xp_pci_id *xp_pci_id_lookup(uint16_t vendor, uint16_t device)
{
        const struct xp_pci_id key = {.vendor = vendor, .device = device};

        return bsearch(&key, table, XP_ELEMENTSOF(table), sizeof(table[0]), compare_ids);
}

const struct xp_pci_id *xp_pci_id_table(size_t *ret_n)
{
        *ret_n = XP_ELEMENTSOF(table);
        return table;
}
