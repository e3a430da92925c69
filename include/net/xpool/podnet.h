/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Pod networking on a node: each pod gets a network namespace of its own, made by the agent and
 * kept as a bind mount NETNS_DIR/<pod uid> (as `ip netns add` does), and the node's CNI network
 * (include/xpool/cni.h) sets it up: an interface, an address, the pod's hostPorts. Every
 * container of the pod joins that namespace (xp_contain.netns). docs/networking.md has the
 * user's view.
 *
 * Restart safety: what was set up is recorded in STATE_DIR/<pod uid>.json before and after the
 * ADD (written atomically, fsynced): an agent that restarts finds each pod's namespace and
 * address there and does not ADD again; a record whose ADD may have been interrupted, or whose
 * namespace is gone (the node rebooted), is DELed with the configuration it was made with, so
 * the IPAM plugin releases its address. Teardown is DEL, unmount, remove the file, remove the
 * record, in that order: a failure leaves the record, and the teardown can be tried again.
 *
 * Calls for different pods may run at once from several threads; the caller serializes calls
 * for one pod.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/cni.h"
#include "xpool/error.h"
#include "xpool/macro.h"

#define XP_PODNET_NETNS_DIR "/run/xpool/netns"
#define XP_PODNET_CONF_DIR  "/etc/cni/net.d"
#define XP_PODNET_BIN_DIRS  "/usr/lib/cni:/opt/cni/bin"
#define XP_PODNET_IFNAME    "eth0"
/* Longest path of a pod's namespace: a netns_dir of at most 256 bytes, a uid, "/". */
#define XP_PODNET_PATH_MAX 512

/* ---- network namespaces (netns.c) ----------------------------------------------------------- */

/*
 * Makes dir (mode 0755, with its parents) a mount point with shared propagation, as iproute2
 * does with /run/netns: a namespace mounted below it is then unmounted everywhere its mount was
 * propagated to. -errno with err naming the directory.
 */
int xp_netns_dir_prepare(const char *dir, struct xp_error *err);

/*
 * A new network namespace, bind-mounted on path (a new empty file): made by a short-lived thread
 * of this process that unshares its network namespace, mounts it, and sets its loopback
 * interface up. -EEXIST when path exists; -errno with err otherwise (nothing left behind).
 */
int xp_netns_create(const char *path, struct xp_error *err);

/* 1 when a network namespace is mounted on path, 0 when path is no such mount (a plain file,
 * missing), -errno when it cannot be told. */
int xp_netns_mounted(const char *path);

/* Unmounts (lazily: processes still in it keep it) and removes path. A missing path is fine. */
int xp_netns_remove(const char *path, struct xp_error *err);

/* Whether this process may make network namespaces: 0, or -errno (EPERM when not root). */
int xp_netns_probe(struct xp_error *err);

/* ---- what is kept of a pod's network (podnet_record.c) ------------------------------------- */

struct xp_podnet_record {
        char *uid, *pod_namespace, *pod_name;
        char *netns;            /* the namespace's path */
        char *ifname;           /* CNI_IFNAME */
        bool ready;             /* the ADD finished; false: it was begun (or not), never finished */
        json_t *network;        /* the configuration list the ADD used: the DEL uses the same */
        json_t *runtime_config; /* the ADD's runtimeConfig (portMappings); NULL: none */
        json_t *result;         /* ready: the ADD's result (DEL's and CHECK's prevResult) */
};

void xp_podnet_record_clear(struct xp_podnet_record *r);

/* Whether uid may name a pod's namespace and record: a CNI container id, at most
 * XP_CNI_ID_MAX characters ([A-Za-z0-9][A-Za-z0-9_.-]*, not ending in ".json"). */
bool xp_podnet_uid_ok(const char *uid);

/* The record as JSON (caller decrefs), NULL on -ENOMEM. */
json_t *xp_podnet_record_to_json(const struct xp_podnet_record *r);
/* A record from JSON; every field checked. -EINVAL with err saying which; -ENOMEM. */
int xp_podnet_record_from_json(const json_t *json,
                               struct xp_podnet_record *ret,
                               struct xp_error *err);

/* DIR/<uid>.json, written atomically and durably (mode 0600). -errno with err. */
int xp_podnet_record_write(const char *dir, const struct xp_podnet_record *r, struct xp_error *err);
/* Reads DIR/<uid>.json. -ENOENT when there is none; -EINVAL (err names the file) when it does
 * not parse. */
int xp_podnet_record_read(const char *dir,
                          const char *uid,
                          struct xp_podnet_record *ret,
                          struct xp_error *err);
/* Removes DIR/<uid>.json; a missing one is fine. */
int xp_podnet_record_remove(const char *dir, const char *uid, struct xp_error *err);
/* The uids of the records in dir, sorted (caller frees each and the array). */
int xp_podnet_record_list(const char *dir, char ***ret, size_t *ret_n, struct xp_error *err);

/* ---- the node's pod network (podnet.c) ------------------------------------------------------ */

struct xp_podnet_options {
        const char *state_dir; /* the records: DATA/network (required; created 0700) */
        const char *conf_dir;  /* NULL: XP_PODNET_CONF_DIR */
        const char *bin_dirs;  /* ':'-separated; NULL: XP_PODNET_BIN_DIRS */
        const char *netns_dir; /* NULL: XP_PODNET_NETNS_DIR */
        const char *pod_cidr;  /* the built-in network's subnet; NULL: XP_CNI_DEFAULT_SUBNET */
        int64_t timeout_ms;    /* each plugin call; 0: XP_CNI_TIMEOUT_MS */
};

struct xp_podnet;

/*
 * Reads the network (the configuration directory's first file, else the built-in one), looks
 * its plugins up, checks that network namespaces can be made and prepares their directory.
 * What keeps pods from getting a network is not an error here: xp_podnet_unavailable() says
 * it. -errno with err only for the state directory, a bad pod_cidr, a netns_dir that is not
 * absolute or longer than 256 bytes, or -ENOMEM.
 */
int xp_podnet_open(const struct xp_podnet_options *options,
                   struct xp_podnet **ret,
                   struct xp_error *err);
void xp_podnet_free(struct xp_podnet *pn);
XP_DEFINE_FREEP(struct xp_podnet, xp_podnet_free)

/*
 * NULL when pods can get their own network; else why not (borrowed), with *ret_reason (may be
 * NULL) the node condition's reason: CNIConfigInvalid, CNIPluginNotFound,
 * NetworkNamespacesUnavailable.
 */
const char *xp_podnet_unavailable(const struct xp_podnet *pn, const char **ret_reason);
/* What pods get, for the node condition: `CNI network "xpool" (bridge, portmap) from FILE`
 * (borrowed). */
const char *xp_podnet_describe(const struct xp_podnet *pn);
/* The subnets the network's IPAM hands pods addresses from, as its configuration names them
 * ("subnet" and "ranges" of each plugin's "ipam", "range" as whereabouts has it), at most max
 * into ret (borrowed, while pn lives): how many. 0 when it names none (an IPAM such as dhcp) or
 * pods get no network. */
size_t xp_podnet_subnets(const struct xp_podnet *pn, const char **ret, size_t max);

/* A pod to set up. */
struct xp_podnet_pod {
        const char *uid, *pod_namespace, *pod_name;
        /* the runtimeConfig the plugins may ask for ({"portMappings": [...]}); NULL: none */
        const json_t *runtime_config;
};

/* A pod's network as it is set up. */
struct xp_podnet_info {
        char netns[XP_PODNET_PATH_MAX];       /* the namespace's path */
        struct xp_cni_ip ips[XP_CNI_IPS_MAX]; /* IPv4 first */
        size_t n_ips;
};

/*
 * The pod's network: when a ready record exists and its namespace is still mounted, that one,
 * without any plugin call (1); else (after cleaning up what an interrupted or stale one left) a
 * new namespace, ADD, and the record (0). A failed ADD is DELed and leaves nothing. -EINVAL for
 * a uid that cannot name one; -ENETDOWN while the network is unavailable; -EIO, -ETIMEDOUT,
 * -EAGAIN from the plugins, -EADDRNOTAVAIL for a result without an address, with err.
 */
int xp_podnet_setup(struct xp_podnet *pn,
                    const struct xp_podnet_pod *pod,
                    struct xp_podnet_info *ret,
                    struct xp_error *err);

/*
 * The network of pod uid as recorded: 0 with *ret when ready and its namespace mounted;
 * -ESTALE when its ADD never finished or its namespace is gone (xp_podnet_teardown() cleans it
 * up); -ENOENT when there is none.
 */
int xp_podnet_get(struct xp_podnet *pn,
                  const char *uid,
                  struct xp_podnet_info *ret,
                  struct xp_error *err);

/* CHECK of the pod's network: 0 when its plugins find it as they made it. -ENOENT, -ESTALE as
 * xp_podnet_get(); the plugins' errors. */
int xp_podnet_check(struct xp_podnet *pn, const char *uid, struct xp_error *err);

/*
 * Tears the pod's network down: DEL with the recorded configuration (the namespace's path, or
 * "" when it is gone), then unmount and remove the namespace, then the record. 0, also when
 * there was nothing; a failed DEL keeps the record (and the namespace) and returns its error.
 */
int xp_podnet_teardown(struct xp_podnet *pn, const char *uid, struct xp_error *err);

/* The uids of every pod with a record (re-adoption: pods that are gone are torn down). */
int xp_podnet_list(struct xp_podnet *pn, char ***ret, size_t *ret_n, struct xp_error *err);
