/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A network configuration list run as the CNI specification orders it (include/xpool/cni.h):
 * ADD through the plugins in order, each given the previous one's result; DEL in reverse order
 * with the ADD's result; CHECK in order with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/cni.h"

/* Runs plugin i with command and its configuration; *ret (caller frees) what it printed. */
static int run_plugin(const struct xp_cni_conf *c,
                      size_t i,
                      const char *command,
                      const struct xp_cni_args *args,
                      const json_t *prev,
                      const json_t *runtime_config,
                      char **ret,
                      struct xp_error *err)
{
        _cleanup_free_ char *exe = NULL, *input = NULL;
        json_t *conf = NULL;
        int r;

        r = xp_cni_find_plugin(args->bin_dirs, xp_cni_conf_plugin_type(c, i), &exe, err);
        if (r < 0)
                return r;
        r = xp_cni_netconf(c, i, prev, runtime_config, &conf);
        if (r < 0)
                return xp_errorf(err, r, "network \"%s\": out of memory", c->name);
        input = json_dumps(conf, JSON_COMPACT);
        json_decref(conf);
        if (!input)
                return xp_errorf(err, -ENOMEM, "network \"%s\": out of memory", c->name);
        return xp_cni_exec(exe, command, args, input, strlen(input), ret, err);
}

int xp_cni_add(const struct xp_cni_conf *c,
               const struct xp_cni_args *args,
               const json_t *runtime_config,
               struct xp_cni_result *ret,
               struct xp_error *err)
{
        struct xp_cni_result res = {0};
        size_t n = xp_cni_conf_plugins(c);
        int r;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *out = NULL;
                struct xp_cni_result next = {0};

                r = run_plugin(c, i, "ADD", args, res.json, runtime_config, &out, err);
                if (r >= 0)
                        r = xp_cni_result_parse(out, strlen(out), args->ifname, &next, err);
                if (r < 0) {
                        xp_cni_result_done(&res);
                        return xp_error_prefix(err, r, "network \"%s\"", c->name);
                }
                xp_cni_result_done(&res);
                res = next;
        }
        *ret = res;
        return 0;
}

/* Whether DEL and CHECK get the ADD's result: from cniVersion 0.4.0 on. */
static bool passes_result(const struct xp_cni_conf *c)
{
        return xp_cni_version_compare(c->cni_version, "0.4.0") >= 0;
}

int xp_cni_del(const struct xp_cni_conf *c,
               const struct xp_cni_args *args,
               const json_t *runtime_config,
               const json_t *result,
               struct xp_error *err)
{
        const json_t *prev = passes_result(c) ? result : NULL;
        int first = 0;

        for (size_t i = xp_cni_conf_plugins(c); i-- > 0;) {
                struct xp_error e = {0};
                char *out = NULL;
                int r = run_plugin(c, i, "DEL", args, prev, runtime_config, &out, &e);

                free(out);
                /* the others still release what they hold: the first failure is reported */
                if (r < 0 && first == 0) {
                        first = r;
                        xp_errorf(err, r, "network \"%s\": %s", c->name, xp_error_message(&e));
                }
        }
        return first;
}

int xp_cni_check(const struct xp_cni_conf *c,
                 const struct xp_cni_args *args,
                 const json_t *runtime_config,
                 const json_t *result,
                 struct xp_error *err)
{
        if (!passes_result(c) || c->disable_check)
                return 0;
        for (size_t i = 0; i < xp_cni_conf_plugins(c); i++) {
                char *out = NULL;
                int r = run_plugin(c, i, "CHECK", args, result, runtime_config, &out, err);

                free(out);
                if (r < 0)
                        return xp_error_prefix(err, r, "network \"%s\"", c->name);
        }
        return 0;
}
