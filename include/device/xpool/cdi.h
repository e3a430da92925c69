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
 * The kubelet device plugin names these devices in Allocate; xpool's OCI runtime reads the same
 * files (xp_cdi_specs_load(), xp_cdi_resolve()) and injects the edits of a container's devices.
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

struct xp_cdi_write_options {
        /* The directory of the simulated devices' stand-in nodes (xp_device_sim_nodes()): a
         * simulated device's node /dev/NAME is written with hostPath DIR/NAME. NULL: simulated
         * devices' nodes are written as they are. */
        const char *simulated_dev_dir;
};

/*
 * As xp_cdi_spec_build() with options (NULL: none). Each device's edits are its own device nodes
 * and, where this machine has them, its vendor's control nodes (xp_device_control_nodes()).
 */
int xp_cdi_spec_build_with(const struct xp_node_inventory *inventory,
                           const char *kind,
                           const struct xp_cdi_write_options *options,
                           json_t **ret);

/* As xp_cdi_write() with options (NULL: none). */
int xp_cdi_write_with(const struct xp_node_inventory *inventory,
                      const char *dir,
                      const struct xp_cdi_write_options *options,
                      struct xp_error *err);

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

/* ---- reading the specs of a directory (cdi_read.c), as a container runtime does ---------------
 */

#define XP_CDI_FILE_MAX  (4 * 1024 * 1024) /* a larger spec file is refused */
#define XP_CDI_FILES_MAX 1024              /* spec files read from one directory */

/*
 * One spec file's text: JSON, or YAML when name ends in ".yaml" or ".yml" (one document),
 * checked with xp_cdi_check(). *ret (caller owns) only on success; -EINVAL with err saying where
 * ("name:3:7: ..." or "name: /devices/0/name: ..."), -E2BIG over XP_CDI_FILE_MAX, -ENOMEM.
 */
int xp_cdi_spec_parse(
    const char *data, size_t size, const char *name, json_t **ret, struct xp_error *err);

/* The specs of one directory, as read at one moment. */
struct xp_cdi_specs;

/*
 * Reads every *.json, *.yaml and *.yml file of dir (sorted by name; a missing directory has
 * none). A file that cannot be read or does not check is left out, and its error is named when a
 * device it might have held is asked for. Caller frees *ret. -ENOMEM, or -errno of opendir.
 */
int xp_cdi_specs_load(const char *dir, struct xp_cdi_specs **ret, struct xp_error *err);
void xp_cdi_specs_free(struct xp_cdi_specs *specs);
XP_DEFINE_FREEP(struct xp_cdi_specs, xp_cdi_specs_free)

/*
 * The container edits that inject the devices names[0..n) (fully qualified: "vendor/class=name"),
 * merged in order: each spec's own containerEdits once, before its first device's, then each
 * device's. *ret (caller owns) is an object with the arrays "env" (a later NAME replaces an
 * earlier one), "deviceNodes" (one per path), "mounts" (one per containerPath), "hooks" and
 * "additionalGids" (each gid once), as the CDI specification defines their members. -EINVAL for
 * a name that is not fully qualified, a device two spec files define, or edits xpool cannot
 * apply (intelRdt); -ENOENT naming the device and the directory (and the files left out) when no
 * spec has it; -ENOMEM.
 */
int xp_cdi_resolve(const struct xp_cdi_specs *specs,
                   char *const *names,
                   size_t n,
                   json_t **ret,
                   struct xp_error *err);
