/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Container Network Interface as a container runtime uses it (the CNI specification 1.0.0,
 * and the results of 0.1.0 to 0.4.0 that older plugins print): network configuration lists,
 * executing their plugins (ADD, DEL, CHECK) with the configuration on stdin and the CNI_*
 * variables, and the results and errors the plugins print. The plugins themselves are the ones
 * Debian packages (containernetworking-plugins: bridge, host-local, portmap, ...) or any other.
 * docs/networking.md has the user's view.
 *
 * Lifecycle: a configuration is read (xp_cni_conf_parse(), xp_cni_conf_load_dir(),
 * xp_cni_conf_default()) and freed with xp_cni_conf_free(); xp_cni_add() and friends only read
 * it, so one configuration serves concurrent calls from several threads.
 */

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"

/* Longest configuration file read, plugins in one list, output read from a plugin. */
#define XP_CNI_CONF_MAX    (1024 * 1024)
#define XP_CNI_PLUGINS_MAX 32
#define XP_CNI_OUTPUT_MAX  (1024 * 1024)
/* A container id (CNI_CONTAINERID), as the specification allows: [A-Za-z0-9][A-Za-z0-9_.-]*. */
#define XP_CNI_ID_MAX 128
/* How long one plugin may take by default (xp_cni_args.timeout_ms 0). */
#define XP_CNI_TIMEOUT_MS 30000

/* A network configuration list: "name", "cniVersion" and the "plugins" run in order. */
struct xp_cni_conf {
        char *name;        /* the network's name */
        char *cni_version; /* "1.0.0", ... */
        char *source;      /* the file it was read from; NULL: built in */
        bool disable_check;
        json_t *json; /* the list as read (a single configuration made a list of one) */
};

void xp_cni_conf_free(struct xp_cni_conf *c);
XP_DEFINE_FREEP(struct xp_cni_conf, xp_cni_conf_free)

/*
 * A configuration list (.conflist: "plugins") or a single plugin's configuration (.conf, .json:
 * "type" at the top, made a list of one as libcni does) from text. source names it in errors
 * ("/etc/cni/net.d/10-x.conflist:3:5: ..."). Checked: a JSON object of at most XP_CNI_CONF_MAX
 * bytes, no duplicate keys; "name" as the specification allows it (a letter or digit, then
 * letters, digits, '_', '.', '-'); "cniVersion" a version; 1 to XP_CNI_PLUGINS_MAX plugins, each
 * an object with a "type" that is a plain file name (no '/': it is looked up in the plugin
 * directories) and, if it has one, an "ipam" object with such a "type". -EINVAL with err
 * naming the file and what is wrong; -ENOMEM.
 */
int xp_cni_conf_parse(const char *text,
                      size_t len,
                      const char *source,
                      struct xp_cni_conf **ret,
                      struct xp_error *err);
/* The same from a JSON value (a record's copy of the list the ADD used); json is copied. */
int xp_cni_conf_from_json(const json_t *json,
                          const char *source,
                          struct xp_cni_conf **ret,
                          struct xp_error *err);

/*
 * The network of a configuration directory as containerd and CRI-O pick it: the first file, in
 * byte order of the names, that ends in .conflist, .conf or .json. -ENOENT (with err saying so)
 * when the directory is missing or has none; that file's errors (xp_cni_conf_parse()) otherwise:
 * a broken first file is an error, not a reason to take the next one.
 */
int xp_cni_conf_load_dir(const char *dir, struct xp_cni_conf **ret, struct xp_error *err);

/* The built-in network's defaults (docs/networking.md). */
#define XP_CNI_DEFAULT_NETWORK "xpool"
#define XP_CNI_DEFAULT_BRIDGE  "xpool0"
#define XP_CNI_DEFAULT_SUBNET  "10.87.0.0/16" /* not 10.88: podman and containerd's examples */

/*
 * The network used when the configuration directory has none: "xpool", a bridge plugin on
 * bridge XP_CNI_DEFAULT_BRIDGE (the pods' gateway, with IP masquerade and hairpin mode) with
 * host-local addresses from subnet (NULL: XP_CNI_DEFAULT_SUBNET) and a default route, then the
 * portmap plugin for hostPorts. -EINVAL when subnet is not an IPv4 or IPv6 network
 * ("10.87.0.0/16": the address's host bits zero, a prefix of /8 to /30, /64 to /126 for IPv6).
 */
int xp_cni_conf_default(const char *subnet, struct xp_cni_conf **ret, struct xp_error *err);

/* The number of plugins, and plugin i's "type" (borrowed from c). */
size_t xp_cni_conf_plugins(const struct xp_cni_conf *c);
const char *xp_cni_conf_plugin_type(const struct xp_cni_conf *c, size_t i);
/* Plugin i's "ipam" "type" (borrowed), NULL when it delegates to none. */
const char *xp_cni_conf_ipam_type(const struct xp_cni_conf *c, size_t i);

/*
 * The configuration plugin i receives on stdin, as libcni builds it: the plugin's own object
 * with the list's "name" and "cniVersion", "prevResult" when prev_result is given, and
 * "runtimeConfig" holding the members of runtime_config (e.g. "portMappings") that the plugin
 * asks for in its "capabilities". Caller decrefs *ret. -ENOMEM.
 */
int xp_cni_netconf(const struct xp_cni_conf *c,
                   size_t i,
                   const json_t *prev_result,
                   const json_t *runtime_config,
                   json_t **ret);

/* Compares two "MAJOR.MINOR.PATCH" versions (missing parts are 0): <0, 0, >0. */
int xp_cni_version_compare(const char *a, const char *b);

/* ---- results -------------------------------------------------------------------------------- */

/* At most one address of each family, as Kubernetes' podIPs. */
#define XP_CNI_IPS_MAX 2

struct xp_cni_ip {
        int family;                     /* AF_INET or AF_INET6 */
        char address[INET6_ADDRSTRLEN]; /* without the prefix length, as inet_ntop writes it */
        unsigned prefix;
};

struct xp_cni_result {
        json_t *json;      /* what the plugin printed: the next plugin's prevResult */
        char *cni_version; /* NULL when the result has none (0.1.0) */
        struct xp_cni_ip ips[XP_CNI_IPS_MAX]; /* the pod's addresses, IPv4 first */
        size_t n_ips;
};

/*
 * A plugin's result (stdout after success): for 0.3.0 and later "ips" (each "address" as
 * "IP/PREFIX", "interface" an index into "interfaces"), for 0.1.0 and 0.2.0 "ip4" and "ip6"
 * ("ip"). The pod's addresses are those of the interface named ifname in the sandbox (the
 * container's network namespace), or every address when no interface is named, at most one per
 * family in the order given, IPv4 first. A result without addresses is valid (n_ips 0).
 * -EINVAL with err saying what and where ("ips[1].address: ..."); -ENOMEM. *ret (caller clears
 * with xp_cni_result_done()) is set only on success.
 */
int xp_cni_result_parse(const char *text,
                        size_t len,
                        const char *ifname,
                        struct xp_cni_result *ret,
                        struct xp_error *err);
/* The same from a JSON value (a record's copy of the result); json is referenced, not copied. */
int xp_cni_result_from_json(json_t *json,
                            const char *ifname,
                            struct xp_cni_result *ret,
                            struct xp_error *err);
void xp_cni_result_done(struct xp_cni_result *r);

/*
 * A plugin's error (stdout after a non-zero exit): {"code": N, "msg": "...", "details": "..."}.
 * 0 with *ret_code and msg ("msg: details", truncated to size) when text is one; -EINVAL when
 * it is not (a plugin that printed something else, or nothing).
 */
int xp_cni_error_parse(const char *text, size_t len, int *ret_code, char *msg, size_t size);

/* The error code that asks the runtime to try again later (CNI 1.0.0). */
#define XP_CNI_ERR_TRY_AGAIN 11

/* ---- execution ------------------------------------------------------------------------------ */

/* What a plugin is told besides its configuration: the CNI_* variables. */
struct xp_cni_args {
        const char *container_id; /* CNI_CONTAINERID: the pod's uid */
        const char *netns;        /* CNI_NETNS: the path of its network namespace ("" on a DEL
                                     whose namespace is gone) */
        const char *ifname;       /* CNI_IFNAME: "eth0" */
        const char *args;         /* CNI_ARGS: "K8S_POD_NAMESPACE=...;..."; NULL: none */
        const char *bin_dirs;     /* CNI_PATH: the plugin directories, ':'-separated */
        int64_t timeout_ms;       /* per plugin; 0: XP_CNI_TIMEOUT_MS */
};

/*
 * The plugin called type in bin_dirs (':'-separated, searched in order): an executable regular
 * file. *ret (caller frees) is its path. -ENOENT with err naming the plugin and the directories;
 * -EINVAL for a type that is not a plain file name; -ENOMEM.
 */
int xp_cni_find_plugin(const char *bin_dirs, const char *type, char **ret, struct xp_error *err);

/*
 * Runs one plugin: exe with CNI_COMMAND command ("ADD", "DEL", "CHECK", "VERSION") and args in
 * its environment (and PATH: the caller's, else a default one, so that plugins find iptables),
 * input on stdin, in a process group of its own with default signal handling. Waits at most
 * args->timeout_ms, then kills the group (SIGKILL). On exit 0, *ret (caller frees; NUL-ended,
 * possibly empty) is what it printed. -ETIMEDOUT; -EAGAIN for an error with code
 * XP_CNI_ERR_TRY_AGAIN; -EIO for any other failure, with err saying `plugin "bridge" (ADD):
 * <msg> (code N)` or the exit status and what it wrote to stderr; -E2BIG when it printed more
 * than XP_CNI_OUTPUT_MAX; the -errno of a failed spawn.
 */
int xp_cni_exec(const char *exe,
                const char *command,
                const struct xp_cni_args *args,
                const char *input,
                size_t input_len,
                char **ret,
                struct xp_error *err);

/*
 * ADD of a whole list: each plugin in order, the result of one the prevResult of the next, as
 * the specification says. *ret (caller clears) is the last result, parsed for args->ifname.
 * Stops at the first failure, whose error it returns (xp_cni_exec()'s, or -EINVAL for output
 * that is no result): the caller then DELs the list, as the specification asks of runtimes.
 * runtime_config may be NULL.
 */
int xp_cni_add(const struct xp_cni_conf *c,
               const struct xp_cni_args *args,
               const json_t *runtime_config,
               struct xp_cni_result *ret,
               struct xp_error *err);
/*
 * DEL of a whole list: each plugin in reverse order, with the ADD's result as prevResult (for
 * cniVersion 0.4.0 and later; result may be NULL when there is none). Goes on past a failing
 * plugin, so that the others still release what they hold (the IPAM plugin its address), and
 * returns the first failure.
 */
int xp_cni_del(const struct xp_cni_conf *c,
               const struct xp_cni_args *args,
               const json_t *runtime_config,
               const json_t *result,
               struct xp_error *err);
/*
 * CHECK of a whole list, in order, with the ADD's result as prevResult: 0 when every plugin
 * finds the network as it made it. Nothing is run (0) for a cniVersion before 0.4.0 or a list
 * with "disableCheck": true.
 */
int xp_cni_check(const struct xp_cni_conf *c,
                 const struct xp_cni_args *args,
                 const json_t *runtime_config,
                 const json_t *result,
                 struct xp_error *err);
