/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * CDI (Container Device Interface) spec files for a node's devices: JSON files in /var/run/cdi
 * that containerd and CRI-O read to turn a fully qualified device name ("xpool.io/gpu=GPU-8f1c...")
 * into container edits (device nodes, and whatever else a spec asks for). docs/kubernetes.md
 * ("CDI spec files") is the operator's view.
 *
 * xpool writes one spec per device kind under its own vendor, xpool.io (kinds xpool.io/gpu,
 * xpool.io/npu, xpool.io/fpga, ...), so its names never clash with a vendor's own spec (NVIDIA's
 * nvidia-ctk writes nvidia.com/gpu). A device's CDI name is its id; a device without device
 * nodes, or whose id cannot be a CDI name, has none (there is nothing for a runtime to inject).
 * The kubelet device plugin names these devices in Allocate; the container runtime work reuses
 * the same names and files.
 */

#include <jansson.h>
#include <stddef.h>

#include "xpool/error.h"
#include "xpool/object.h"

#define XP_CDI_DIR      "/var/run/cdi"
#define XP_CDI_VERSION  "0.5.0" /* the oldest that has everything xpool writes */
#define XP_CDI_VENDOR   "xpool.io"
#define XP_CDI_NAME_MAX 256

/*
 * device's fully qualified CDI name ("xpool.io/gpu=GPU-8f1c...") into buf: 0, or -ENOENT when
 * the device has none (see above), -ENAMETOOLONG for a small buffer.
 */
int xp_cdi_device_name(const struct xp_device *device, char *buf, size_t size);

/*
 * The spec of one kind ("xpool.io/gpu") for inventory's devices of that kind, as a JSON object
 * (caller owns the reference). -ENOENT when no device of the inventory has that kind, -ENOMEM.
 */
int xp_cdi_spec_build(const struct xp_node_inventory *inventory, const char *kind, json_t **ret);

/*
 * Writes the spec of every kind the inventory has into dir (created 0755 when missing), each
 * replaced atomically (readers see the old or the new file, never a part) as
 * "<vendor>-<class>.json" with mode 0644, checked with xp_cdi_check() first; removes xpool's spec
 * files of kinds the node no longer has. -errno with err naming the file on failure.
 */
int xp_cdi_write(const struct xp_node_inventory *inventory, const char *dir, struct xp_error *err);

/*
 * Checks a CDI spec against the CDI specification (versions 0.3.0 to 1.0.0): the members, their
 * types, the vendor, class and device name syntax, unique device names, non-empty container
 * edits, environment entries NAME=value, absolute device and mount paths, device types b, c, u
 * or p and permissions from "rwm"; unknown members are refused. -EINVAL with err giving the JSON
 * pointer of the first fault and what is wrong ("/devices/2/containerEdits/deviceNodes/0/type:
 * 'x' is not a device type (b, c, u or p)").
 */
int xp_cdi_check(const json_t *spec, struct xp_error *err);

/* Reads path (JSON, at most 4 MiB) and checks it: -EINVAL as above with the file's name first. */
int xp_cdi_check_file(const char *path, struct xp_error *err);
