/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what CNI plugins print (include/xpool/cni.h): xp_cni_result_parse(), and
 * xp_cni_error_parse() and xp_cni_conf_parse() over the same bytes. The first byte picks the
 * interface the pod's addresses are taken from (odd: "eth0", even: any). Checks the contract:
 * a result has at most one address of each family, IPv4 first, each a valid address with a
 * prefix that fits it; a failure is a negative code with a message and nothing returned.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/cni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void check_result(const struct xp_cni_result *r)
{
        unsigned char addr[16];

        check(r->json != NULL && r->n_ips <= XP_CNI_IPS_MAX);
        for (size_t i = 0; i < r->n_ips; i++) {
                const struct xp_cni_ip *ip = &r->ips[i];

                check(ip->family == AF_INET || ip->family == AF_INET6);
                check(inet_pton(ip->family, ip->address, addr) == 1);
                check(ip->prefix <= (ip->family == AF_INET ? 32u : 128u));
                check(i == 0 || ip->family != r->ips[0].family);
        }
        check(r->n_ips < 2 || r->ips[0].family == AF_INET);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_cni_result r = {0};
        struct xp_cni_conf *c = NULL;
        struct xp_error err = {0};
        const char *text = (const char *)data + 1;
        char msg[256];
        int code = -1, rc;

        if (size < 1)
                return 0;
        rc = xp_cni_result_parse(text, size - 1, (data[0] & 1) ? "eth0" : NULL, &r, &err);
        if (rc == 0) {
                check_result(&r);
                xp_cni_result_done(&r);
        } else {
                check(rc < 0 && err.msg[0] != '\0' && r.json == NULL && r.n_ips == 0);
        }
        rc = xp_cni_error_parse(text, size - 1, &code, msg, sizeof(msg));
        check(rc == -EINVAL || (rc == 0 && code >= 0 && strlen(msg) < sizeof(msg)));
        xp_error_clear(&err);
        rc = xp_cni_conf_parse(text, size - 1, "fuzz", &c, &err);
        if (rc == 0) {
                check(c->name && c->cni_version && xp_cni_conf_plugins(c) >= 1);
                for (size_t i = 0; i < xp_cni_conf_plugins(c); i++)
                        check(!strchr(xp_cni_conf_plugin_type(c, i), '/'));
                xp_cni_conf_free(c);
        } else {
                check(rc < 0 && c == NULL && err.msg[0] != '\0');
        }
        return 0;
}
