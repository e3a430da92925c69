/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's pod network (include/xpool/podnet.h): which network pods get and whether they can
 * get one at all, and each pod's setup and teardown, recorded so that an agent that restarts
 * neither ADDs twice nor forgets to DEL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xpool/podnet.h"

struct xp_podnet {
        char *state_dir, *bin_dirs, *netns_dir;
        int64_t timeout_ms;
        struct xp_cni_conf *conf; /* NULL when unavailable */
        char *reason, *why;       /* unavailable: the condition's reason and message */
        char *describe;
};

void xp_podnet_free(struct xp_podnet *pn)
{
        if (!pn)
                return;
        free(pn->state_dir);
        free(pn->bin_dirs);
        free(pn->netns_dir);
        xp_cni_conf_free(pn->conf);
        free(pn->reason);
        free(pn->why);
        free(pn->describe);
        free(pn);
}

static int unavailable(struct xp_podnet *pn, const char *reason, const struct xp_error *e)
{
        pn->reason = strdup(reason);
        pn->why = strdup(xp_error_message(e));
        return pn->reason && pn->why ? 0 : -ENOMEM;
}

/* Every plugin (and IPAM plugin) of the network in the plugin directories. */
static int
find_plugins(const struct xp_podnet *pn, const struct xp_cni_conf *c, struct xp_error *err)
{
        for (size_t i = 0; i < xp_cni_conf_plugins(c); i++) {
                const char *types[] = {xp_cni_conf_plugin_type(c, i), xp_cni_conf_ipam_type(c, i)};

                for (size_t k = 0; k < XP_ELEMENTSOF(types); k++) {
                        char *path = NULL;
                        int r;

                        if (!types[k])
                                continue;
                        r = xp_cni_find_plugin(pn->bin_dirs, types[k], &path, err);
                        free(path);
                        if (r < 0)
                                return xp_error_prefix(err, r, "network \"%s\"", c->name);
                }
        }
        return 0;
}

/* `CNI network "xpool" (bridge, portmap) from FILE`. */
static int describe(struct xp_podnet *pn)
{
        const struct xp_cni_conf *c = pn->conf;
        char types[256] = "";
        size_t len = 0;

        for (size_t i = 0; i < xp_cni_conf_plugins(c) && len < sizeof(types); i++) {
                int n = snprintf(types + len,
                                 sizeof(types) - len,
                                 "%s%s",
                                 i ? ", " : "",
                                 xp_cni_conf_plugin_type(c, i));
                len += n > 0 ? (size_t)n : 0;
        }
        return asprintf(&pn->describe,
                        "CNI network \"%s\" (%s) from %s",
                        c->name,
                        types,
                        c->source ? c->source : "the built-in configuration") < 0
                   ? -ENOMEM
                   : 0;
}

/* The network pods get, or why they get none. */
static int load(struct xp_podnet *pn, const struct xp_podnet_options *o, struct xp_error *err)
{
        const char *conf_dir = o->conf_dir ? o->conf_dir : XP_PODNET_CONF_DIR;
        _cleanup_(xp_cni_conf_freep) struct xp_cni_conf *conf = NULL;
        struct xp_error e = {0};
        int r;

        r = xp_cni_conf_load_dir(conf_dir, &conf, &e);
        if (r == -ENOENT) {
                /* the operator's pod CIDR is an error of the command line, not of the node */
                r = xp_cni_conf_default(o->pod_cidr, &conf, err);
                if (r < 0)
                        return r;
        } else if (r < 0) {
                return r == -ENOMEM ? xp_errorf(err, r, "out of memory")
                                    : unavailable(pn, "CNIConfigInvalid", &e);
        }
        if (find_plugins(pn, conf, &e) < 0)
                return unavailable(pn, "CNIPluginNotFound", &e);
        if (xp_netns_probe(&e) < 0 || xp_netns_dir_prepare(pn->netns_dir, &e) < 0)
                return unavailable(pn, "NetworkNamespacesUnavailable", &e);
        pn->conf = TAKE_PTR(conf);
        return describe(pn) < 0 ? xp_errorf(err, -ENOMEM, "out of memory") : 0;
}

int xp_podnet_open(const struct xp_podnet_options *o, struct xp_podnet **ret, struct xp_error *err)
{
        _cleanup_(xp_podnet_freep) struct xp_podnet *pn = calloc(1, sizeof(*pn));
        int r;

        if (!pn)
                return xp_errorf(err, -ENOMEM, "pod network: out of memory");
        if (!o->state_dir)
                return xp_errorf(err, -EINVAL, "pod network: a state directory is required");
        pn->state_dir = strdup(o->state_dir);
        pn->bin_dirs = strdup(o->bin_dirs ? o->bin_dirs : XP_PODNET_BIN_DIRS);
        pn->netns_dir = strdup(o->netns_dir ? o->netns_dir : XP_PODNET_NETNS_DIR);
        pn->timeout_ms = o->timeout_ms;
        if (!pn->state_dir || !pn->bin_dirs || !pn->netns_dir)
                return xp_errorf(err, -ENOMEM, "pod network: out of memory");
        if (pn->netns_dir[0] != '/' || strlen(pn->netns_dir) > 256)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "the network namespaces' directory %s: not an absolute path of at most 256 bytes",
                    pn->netns_dir);
        if (mkdir(pn->state_dir, 0700) < 0 && errno != EEXIST)
                return xp_errorf(err, -errno, "making %s: %s", pn->state_dir, strerror(errno));
        r = load(pn, o, err);
        if (r < 0)
                return xp_error_prefix(err, r, "pod network");
        *ret = TAKE_PTR(pn);
        return 0;
}

const char *xp_podnet_unavailable(const struct xp_podnet *pn, const char **ret_reason)
{
        if (ret_reason)
                *ret_reason = pn->reason;
        return pn->conf ? NULL : pn->why;
}

const char *xp_podnet_describe(const struct xp_podnet *pn)
{
        return pn->describe ? pn->describe : "no pod network";
}

/* ---- one pod --------------------------------------------------------------------------------- */

/* The CNI_ARGS the kubelet's runtimes pass (plugins ignore those they do not know). */
static char *cni_args(const struct xp_podnet_record *r)
{
        char *s;

        return asprintf(&s,
                        "IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;"
                        "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=%s",
                        r->pod_namespace,
                        r->pod_name,
                        r->uid,
                        r->uid) < 0
                   ? NULL
                   : s;
}

/* DEL of a recorded network with its own configuration, then its namespace and the record. */
static int
teardown_record(struct xp_podnet *pn, const struct xp_podnet_record *rec, struct xp_error *err)
{
        _cleanup_(xp_cni_conf_freep) struct xp_cni_conf *conf = NULL;
        _cleanup_free_ char *args = cni_args(rec);
        int mounted = xp_netns_mounted(rec->netns), r;

        if (!args)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = xp_cni_conf_from_json(rec->network, NULL, &conf, err);
        if (r >= 0)
                r = xp_cni_del(conf,
                               &(struct xp_cni_args){.container_id = rec->uid,
                                                     /* a namespace that is gone is "" to DEL */
                                                     .netns = mounted > 0 ? rec->netns : "",
                                                     .ifname = rec->ifname,
                                                     .args = args,
                                                     .bin_dirs = pn->bin_dirs,
                                                     .timeout_ms = pn->timeout_ms},
                               rec->runtime_config,
                               rec->result,
                               err);
        if (r < 0)
                return r;
        r = xp_netns_remove(rec->netns, err);
        if (r < 0)
                return r;
        return xp_podnet_record_remove(pn->state_dir, rec->uid, err);
}

static void info_of(const struct xp_podnet_record *rec,
                    const struct xp_cni_result *res,
                    struct xp_podnet_info *ret)
{
        snprintf(ret->netns, sizeof(ret->netns), "%s", rec->netns);
        memcpy(ret->ips, res->ips, sizeof(ret->ips));
        ret->n_ips = res->n_ips;
}

/* A ready record whose namespace is mounted: 0 with *ret; -ESTALE otherwise. */
static int
ready_info(const struct xp_podnet_record *rec, struct xp_podnet_info *ret, struct xp_error *err)
{
        struct xp_cni_result res = {0};
        int r;

        if (!rec->ready || xp_netns_mounted(rec->netns) <= 0)
                return xp_errorf(err,
                                 -ESTALE,
                                 "the network of pod %s: %s",
                                 rec->uid,
                                 rec->ready ? "its namespace is gone" : "its ADD never finished");
        r = xp_cni_result_from_json(rec->result, rec->ifname, &res, err);
        if (r < 0)
                return r;
        info_of(rec, &res, ret);
        xp_cni_result_done(&res);
        return 0;
}

/* The ADD of a new network into rec (recorded already, not ready) and its namespace. */
static int add(struct xp_podnet *pn,
               struct xp_podnet_record *rec,
               struct xp_podnet_info *ret,
               struct xp_error *err)
{
        _cleanup_free_ char *args = cni_args(rec);
        struct xp_cni_args a = {.container_id = rec->uid,
                                .netns = rec->netns,
                                .ifname = rec->ifname,
                                .args = args,
                                .bin_dirs = pn->bin_dirs,
                                .timeout_ms = pn->timeout_ms};
        struct xp_cni_result res = {0};
        int r;

        if (!args)
                return xp_errorf(err, -ENOMEM, "out of memory");
        /* a file without a record is no namespace of ours (the record comes first) */
        r = xp_netns_remove(rec->netns, err);
        if (r >= 0)
                r = xp_netns_create(rec->netns, err);
        if (r < 0)
                return r;
        r = xp_cni_add(pn->conf, &a, rec->runtime_config, &res, err);
        if (r >= 0 && res.n_ips == 0)
                r = xp_errorf(err,
                              -EADDRNOTAVAIL,
                              "network \"%s\": its result has no address for %s",
                              pn->conf->name,
                              rec->ifname);
        if (r >= 0) {
                rec->ready = true;
                rec->result = json_incref(res.json);
                r = xp_podnet_record_write(pn->state_dir, rec, err);
        }
        if (r >= 0)
                info_of(rec, &res, ret);
        xp_cni_result_done(&res);
        return r;
}

/* A record that does not parse: DEL with today's configuration, as well as it goes. */
static void forget_broken(struct xp_podnet *pn, const char *uid, const char *netns)
{
        _cleanup_free_ char *args = NULL;
        int mounted = xp_netns_mounted(netns);

        if (asprintf(&args, "IgnoreUnknown=1;K8S_POD_UID=%s", uid) < 0)
                args = NULL;
        (void)xp_cni_del(pn->conf,
                         &(struct xp_cni_args){.container_id = uid,
                                               .netns = mounted > 0 ? netns : "",
                                               .ifname = XP_PODNET_IFNAME,
                                               .args = args,
                                               .bin_dirs = pn->bin_dirs,
                                               .timeout_ms = pn->timeout_ms},
                         NULL,
                         NULL,
                         NULL);
        (void)xp_netns_remove(netns, NULL);
        (void)xp_podnet_record_remove(pn->state_dir, uid, NULL);
}

/* Adds to the ADD's error in err that the DEL after it failed too (the record stays: the next
 * setup DELs again). */
static void note_del_failure(struct xp_error *err, int r, const struct xp_error *del)
{
        char add_msg[XP_ERROR_MSG_MAX];

        if (!err)
                return;
        snprintf(add_msg, sizeof(add_msg), "%s", xp_error_message(err));
        xp_errorf(err, r, "%s (and the DEL after it: %s)", add_msg, xp_error_message(del));
}

/* What an earlier setup of the pod left: 1 with *ret when it is ready, else cleaned up (0). */
static int earlier(struct xp_podnet *pn,
                   const char *uid,
                   const char *netns,
                   struct xp_podnet_info *ret,
                   struct xp_error *err)
{
        struct xp_podnet_record rec = {0};
        int r = xp_podnet_record_read(pn->state_dir, uid, &rec, NULL);

        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                forget_broken(pn, uid, netns);
                return 0;
        }
        if (ready_info(&rec, ret, NULL) >= 0) {
                xp_podnet_record_clear(&rec);
                return 1;
        }
        /* an ADD that may have been interrupted, or a namespace that is gone: DEL first */
        r = teardown_record(pn, &rec, err);
        xp_podnet_record_clear(&rec);
        return r < 0 ? xp_error_prefix(err, r, "cleaning up an earlier network") : 0;
}

int xp_podnet_setup(struct xp_podnet *pn,
                    const struct xp_podnet_pod *pod,
                    struct xp_podnet_info *ret,
                    struct xp_error *err)
{
        struct xp_podnet_record rec = {0};
        struct xp_error e = {0};
        int r;

        if (!pn->conf)
                return xp_errorf(err, -ENETDOWN, "no pod network: %s", pn->why);
        if (!xp_podnet_uid_ok(pod->uid))
                return xp_errorf(
                    err, -EINVAL, "pod uid \"%s\" cannot name a network", pod->uid ? pod->uid : "");
        rec = (struct xp_podnet_record){
            .uid = strdup(pod->uid),
            .pod_namespace = strdup(pod->pod_namespace ? pod->pod_namespace : ""),
            .pod_name = strdup(pod->pod_name ? pod->pod_name : ""),
            .ifname = strdup(XP_PODNET_IFNAME),
            .network = json_incref(pn->conf->json),
            .runtime_config = pod->runtime_config ? json_deep_copy(pod->runtime_config) : NULL,
        };
        if (asprintf(&rec.netns, "%s/%s", pn->netns_dir, pod->uid) < 0)
                rec.netns = NULL;
        if (!rec.uid || !rec.pod_namespace || !rec.pod_name || !rec.ifname || !rec.netns ||
            (pod->runtime_config && !rec.runtime_config)) {
                xp_podnet_record_clear(&rec);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        r = earlier(pn, pod->uid, rec.netns, ret, err);
        if (r != 0) {
                xp_podnet_record_clear(&rec);
                return r;
        }
        /* recorded before anything is made: whatever a crash interrupts, the next agent DELs */
        r = xp_podnet_record_write(pn->state_dir, &rec, err);
        if (r >= 0) {
                r = add(pn, &rec, ret, err);
                /* the specification asks a runtime to DEL what a failed ADD may have left */
                if (r < 0 && teardown_record(pn, &rec, &e) < 0)
                        note_del_failure(err, r, &e);
        }
        xp_podnet_record_clear(&rec);
        return r;
}

int xp_podnet_get(struct xp_podnet *pn,
                  const char *uid,
                  struct xp_podnet_info *ret,
                  struct xp_error *err)
{
        struct xp_podnet_record rec = {0};
        int r = xp_podnet_record_read(pn->state_dir, uid, &rec, err);

        if (r < 0)
                return r;
        r = ready_info(&rec, ret, err);
        xp_podnet_record_clear(&rec);
        return r;
}

int xp_podnet_check(struct xp_podnet *pn, const char *uid, struct xp_error *err)
{
        _cleanup_(xp_cni_conf_freep) struct xp_cni_conf *conf = NULL;
        struct xp_podnet_record rec = {0};
        struct xp_podnet_info info;
        _cleanup_free_ char *args = NULL;
        int r = xp_podnet_record_read(pn->state_dir, uid, &rec, err);

        if (r < 0)
                return r;
        r = ready_info(&rec, &info, err);
        if (r >= 0 && !(args = cni_args(&rec)))
                r = xp_errorf(err, -ENOMEM, "out of memory");
        if (r >= 0)
                r = xp_cni_conf_from_json(rec.network, NULL, &conf, err);
        if (r >= 0)
                r = xp_cni_check(conf,
                                 &(struct xp_cni_args){.container_id = rec.uid,
                                                       .netns = rec.netns,
                                                       .ifname = rec.ifname,
                                                       .args = args,
                                                       .bin_dirs = pn->bin_dirs,
                                                       .timeout_ms = pn->timeout_ms},
                                 rec.runtime_config,
                                 rec.result,
                                 err);
        xp_podnet_record_clear(&rec);
        return r;
}

int xp_podnet_teardown(struct xp_podnet *pn, const char *uid, struct xp_error *err)
{
        struct xp_podnet_record rec = {0};
        _cleanup_free_ char *path = NULL;
        int r = xp_podnet_record_read(pn->state_dir, uid, &rec, err);

        if (r == -ENOENT) {
                /* nothing recorded: at most a namespace made before its record (never: the
                 * record comes first), removed all the same */
                if (asprintf(&path, "%s/%s", pn->netns_dir, uid) < 0)
                        return xp_errorf(err, -ENOMEM, "out of memory");
                xp_error_clear(err);
                return xp_netns_remove(path, err);
        }
        if (r < 0)
                return r;
        r = teardown_record(pn, &rec, err);
        xp_podnet_record_clear(&rec);
        return r;
}

int xp_podnet_list(struct xp_podnet *pn, char ***ret, size_t *ret_n, struct xp_error *err)
{
        return xp_podnet_record_list(pn->state_dir, ret, ret_n, err);
}

static void add_subnet(const json_t *value, const char **ret, size_t max, size_t *n)
{
        const char *text = json_string_value(value);

        if (text && strchr(text, '/') && *n < max)
                ret[(*n)++] = text;
}

size_t xp_podnet_subnets(const struct xp_podnet *pn, const char **ret, size_t max)
{
        const json_t *plugin, *set, *range;
        size_t i, j, k, n = 0;

        if (!pn->conf)
                return 0;
        json_array_foreach(json_object_get(pn->conf->json, "plugins"), i, plugin)
        {
                const json_t *ipam = json_object_get(plugin, "ipam");

                add_subnet(json_object_get(ipam, "subnet"), ret, max, &n);
                add_subnet(json_object_get(ipam, "range"), ret, max, &n);
                json_array_foreach(json_object_get(ipam, "ranges"), j, set)
                    json_array_foreach(set, k, range)
                        add_subnet(json_object_get(range, "subnet"), ret, max, &n);
        }
        return n;
}
