/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What CNI plugins print (include/xpool/cni.h): results, of which the runtime keeps the pod's
 * addresses, and errors. Results come from plugins, i.e. from outside xpool: every field is
 * checked, and bounded, before it is used (tests/fuzz/fuzz_cni_result.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/cni.h"
#include "xpool/netcidr.h"

/* Entries of "ips" and "interfaces" looked at: far more than a pod has. */
#define LIST_MAX 64

void xp_cni_result_done(struct xp_cni_result *r)
{
        json_decref(r->json);
        free(r->cni_version);
        *r = (struct xp_cni_result){0};
}

/* "IP/PREFIX" into *ret: an interface's address, so host bits are its own. */
static bool parse_cidr(const char *text, struct xp_cni_ip *ret)
{
        struct xp_net_cidr cidr;

        if (xp_net_cidr_parse(text, XP_NET_CIDR_HOST_BITS, &cidr, NULL) < 0)
                return false;
        ret->family = cidr.family;
        ret->prefix = cidr.prefix;
        return inet_ntop(cidr.family, cidr.addr, ret->address, sizeof(ret->address)) != NULL;
}

/* Keeps ip unless an address of its family is kept already. */
static void keep(struct xp_cni_result *r, const struct xp_cni_ip *ip)
{
        for (size_t i = 0; i < r->n_ips; i++)
                if (r->ips[i].family == ip->family)
                        return;
        if (r->n_ips < XP_CNI_IPS_MAX)
                r->ips[r->n_ips++] = *ip;
}

/* IPv4 first, as containerd orders a dual-stack pod's addresses. */
static void order(struct xp_cni_result *r)
{
        if (r->n_ips == 2 && r->ips[0].family == AF_INET6) {
                struct xp_cni_ip t = r->ips[0];

                r->ips[0] = r->ips[1];
                r->ips[1] = t;
        }
}

/* Whether interface index idx of interfaces is ifname in the sandbox. */
static bool pod_interface(const json_t *interfaces, const json_t *idx, const char *ifname)
{
        const json_t *iface;
        const char *sandbox;

        if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
            json_integer_value(idx) >= LIST_MAX)
                return false;
        iface = json_array_get(interfaces, (size_t)json_integer_value(idx));
        sandbox = json_string_value(json_object_get(iface, "sandbox"));
        return sandbox && *sandbox &&
               (!ifname ||
                strcmp(json_string_value(json_object_get(iface, "name")) ?: "", ifname) == 0);
}

static int check_list(const json_t *list, const char *key, struct xp_error *err)
{
        if (!list)
                return 0;
        if (!json_is_array(list))
                return xp_errorf(err, -EINVAL, "CNI result: %s: not an array", key);
        for (size_t i = 0; i < json_array_size(list) && i < LIST_MAX; i++)
                if (!json_is_object(json_array_get(list, i)))
                        return xp_errorf(
                            err, -EINVAL, "CNI result: %s[%zu]: not an object", key, i);
        return 0;
}

/* 0.3.0 and later: "ips", the pod's being those of ifname in the sandbox. */
static int
current_ips(const json_t *json, const char *ifname, struct xp_cni_result *r, struct xp_error *err)
{
        const json_t *ips = json_object_get(json, "ips");
        const json_t *interfaces = json_object_get(json, "interfaces");
        bool any_named = false;
        int rc;

        if ((rc = check_list(ips, "ips", err)) < 0 ||
            (rc = check_list(interfaces, "interfaces", err)) < 0)
                return rc;
        for (size_t i = 0; i < json_array_size(ips) && i < LIST_MAX; i++) {
                const json_t *entry = json_array_get(ips, i);
                const json_t *idx = json_object_get(entry, "interface");
                struct xp_cni_ip ip;

                if (!parse_cidr(json_string_value(json_object_get(entry, "address")), &ip))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "CNI result: ips[%zu].address: missing or not an address with its prefix (10.88.0.5/16)",
                            i);
                if (idx && !json_is_integer(idx))
                        return xp_errorf(
                            err, -EINVAL, "CNI result: ips[%zu].interface: not an integer", i);
                any_named |= pod_interface(interfaces, idx, ifname);
        }
        /* a second pass: the pod's interface's addresses when one is named, else all */
        for (size_t i = 0; i < json_array_size(ips) && i < LIST_MAX; i++) {
                const json_t *entry = json_array_get(ips, i);
                struct xp_cni_ip ip;

                if (any_named &&
                    !pod_interface(interfaces, json_object_get(entry, "interface"), ifname))
                        continue;
                if (parse_cidr(json_string_value(json_object_get(entry, "address")), &ip))
                        keep(r, &ip);
        }
        return 0;
}

/* 0.1.0 and 0.2.0: "ip4" and "ip6", each with "ip". */
static int legacy_ips(const json_t *json, struct xp_cni_result *r, struct xp_error *err)
{
        static const char *const keys[] = {"ip4", "ip6"};

        for (size_t i = 0; i < XP_ELEMENTSOF(keys); i++) {
                const json_t *o = json_object_get(json, keys[i]);
                struct xp_cni_ip ip;

                if (!o)
                        continue;
                if (!json_is_object(o) ||
                    !parse_cidr(json_string_value(json_object_get(o, "ip")), &ip) ||
                    ip.family != (i == 0 ? AF_INET : AF_INET6))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "CNI result: %s.ip: missing or not an IPv%c address with its prefix",
                            keys[i],
                            i == 0 ? '4' : '6');
                keep(r, &ip);
        }
        return 0;
}

int xp_cni_result_from_json(json_t *json,
                            const char *ifname,
                            struct xp_cni_result *ret,
                            struct xp_error *err)
{
        struct xp_cni_result r = {0};
        const json_t *version = json_object_get(json, "cniVersion");
        int rc;

        if (!json_is_object(json))
                return xp_errorf(err, -EINVAL, "CNI result: not a JSON object");
        if (version && !json_is_string(version))
                return xp_errorf(err, -EINVAL, "CNI result: cniVersion: not a string");
        if (json_object_get(json, "ips") || json_object_get(json, "interfaces"))
                rc = current_ips(json, ifname, &r, err);
        else
                rc = legacy_ips(json, &r, err);
        if (rc < 0)
                return rc;
        order(&r);
        if (version && !(r.cni_version = strdup(json_string_value(version))))
                return xp_errorf(err, -ENOMEM, "CNI result: out of memory");
        r.json = json_incref(json);
        *ret = r;
        return 0;
}

int xp_cni_result_parse(const char *text,
                        size_t len,
                        const char *ifname,
                        struct xp_cni_result *ret,
                        struct xp_error *err)
{
        json_error_t jerr;
        json_t *json;
        int r;

        if (len > XP_CNI_OUTPUT_MAX)
                return xp_errorf(err, -EINVAL, "CNI result: larger than 1 MiB");
        json = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json)
                return xp_errorf(err,
                                 -EINVAL,
                                 "CNI result: not JSON (line %d, column %d: %s)",
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        r = xp_cni_result_from_json(json, ifname, ret, err);
        json_decref(json);
        return r;
}

int xp_cni_error_parse(const char *text, size_t len, int *ret_code, char *msg, size_t size)
{
        json_t *json;
        const json_t *code;
        const char *m, *details;

        if (len == 0 || len > XP_CNI_OUTPUT_MAX)
                return -EINVAL;
        json = json_loadb(text, len, 0, NULL);
        code = json_object_get(json, "code");
        m = json_string_value(json_object_get(json, "msg"));
        if (!json_is_integer(code) || !m || json_integer_value(code) < 0 ||
            json_integer_value(code) > 1000000) {
                json_decref(json);
                return -EINVAL;
        }
        details = json_string_value(json_object_get(json, "details"));
        if (size > 0)
                snprintf(msg,
                         size,
                         "%s%s%s",
                         m,
                         details && *details ? ": " : "",
                         details && *details ? details : "");
        *ret_code = (int)json_integer_value(code);
        json_decref(json);
        return 0;
}
