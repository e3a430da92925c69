/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The PCI ids of the accelerators the pci backend knows, matched on vendor AND device id (never
 * on the class code alone: a BMC's VGA controller or an NVSwitch bridge is no accelerator).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/object.h"

/* The driver family: how a device's nodes under /dev are named and which devices share indexes. */
enum xp_pci_family {
        XP_PCI_NVIDIA,    /* /dev/nvidia<minor>, nvidiactl, nvidia-uvm, nvidia-uvm-tools */
        XP_PCI_AMDGPU,    /* /dev/dri/renderD<N> (from drm/), /dev/kfd */
        XP_PCI_INTEL_GPU, /* /dev/dri/card<N>, /dev/dri/renderD<N>; i915 or xe by the driver */
        XP_PCI_HYGON_DCU, /* /dev/dri/renderD<N>, /dev/kfd (an amdgpu-derived driver) */
        XP_PCI_ASCEND,    /* /dev/davinci<N>, davinci_manager, devmm_svm, hisi_hdc */
        XP_PCI_CAMBRICON, /* /dev/cambricon_dev<N>, /dev/cambricon_ctl */
        XP_PCI_HABANA,    /* /dev/accel/accel<N>, /dev/accel/accel_controlD<N> (from accel/) */
        XP_PCI_TPU,       /* /dev/accel<N> */
        XP_PCI_INTEL_NPU, /* /dev/accel/accel<N> (ivpu, from accel/) */
        XP_PCI_XILINX, /* /dev/dri/renderD<N> of the user PF, /dev/xclmgmt<instance> of the mgmt PF
                        */
        XP_PCI_INTEL_FPGA, /* /dev/dfl-fme.<N>, /dev/dfl-port.<N> */
        XP_PCI_ENFLAME,    /* /dev/gcu<N> */
        XP_PCI_ILUVATAR,   /* /dev/iluvatar<N> */
        XP_PCI_MTHREADS,   /* /dev/dri/card<N>, /dev/dri/renderD<N> */
        XP_PCI_METAX,      /* /dev/dri/renderD<N>, /dev/mxcd */
};

struct xp_pci_id {
        uint16_t vendor;
        uint16_t device;
        enum xp_device_kind kind;
        enum xp_pci_family family;
        const char *vendor_name;   /* "NVIDIA" */
        const char *model;         /* as the vendor's tools name it: "NVIDIA H100 80GB HBM3" */
        const char *resource_name; /* the vendor's device plugin's default: "nvidia.com/gpu" */
        bool management; /* a management function (Alveo mgmt PF): merged with its slot's others */
};

/* The entry for vendor:device, or NULL when the id is no accelerator xpool knows. */
const struct xp_pci_id *xp_pci_id_lookup(uint16_t vendor, uint16_t device);

/* The whole table, for tests and documentation. */
const struct xp_pci_id *xp_pci_id_table(size_t *ret_n);
