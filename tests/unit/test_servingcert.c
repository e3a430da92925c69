/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet-serving signer's approval rules (servingcert.h) and the agent's side of it
 * (agent/servingcert.h): requests made as the agent makes them, and forged ones.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "server/servingcert.h"
#include "server/tls.h"
#include "xpool/macro.h"

struct fixture {
        struct tmpdir t;
        struct servingcert_signer *signer;
        gnutls_x509_privkey_t key;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_error err = {0};
        void *t = NULL;

        if (!f || tmpdir_setup(&t, "servingcert", "pki") != 0)
                return -1;
        f->t = *(struct tmpdir *)t;
        free(t);
        if (tls_ensure_ca(f->t.path, &err) < 0 || tls_ensure_kubelet_ca(f->t.path, &err) < 0 ||
            servingcert_signer_new(f->t.path, &f->signer, &err) < 0 ||
            gnutls_x509_privkey_init(&f->key) < 0 ||
            gnutls_x509_privkey_generate(
                f->key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0) {
                fprintf(stderr, "setup: %s\n", err.msg);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[256];

        servingcert_signer_free(f->signer);
        gnutls_x509_privkey_deinit(f->key);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->t.dir);
        if (system(cmd) != 0)
                return -1;
        free(f);
        return 0;
}

/* A request with subject CN, O and the names (a "dns:" or "ip:" prefix each, "email:" too). */
static char *request(struct fixture *f, const char *cn, const char *org, const char *const *names)
{
        gnutls_x509_crq_t crq = NULL;
        gnutls_datum_t pem = {0};
        char *text;

        assert_int_equal(gnutls_x509_crq_init(&crq), 0);
        assert_int_equal(gnutls_x509_crq_set_dn_by_oid(
                             crq, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn)),
                         0);
        assert_int_equal(gnutls_x509_crq_set_dn_by_oid(
                             crq, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, org, (unsigned)strlen(org)),
                         0);
        for (size_t i = 0; names && names[i]; i++) {
                unsigned char ip[16];
                const char *v = strchr(names[i], ':') + 1;

                if (strncmp(names[i], "ip:", 3) == 0) {
                        bool v6 = strchr(v, ':') != NULL;

                        assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, v, ip), 1);
                        assert_int_equal(
                            gnutls_x509_crq_set_subject_alt_name(
                                crq, GNUTLS_SAN_IPADDRESS, ip, v6 ? 16 : 4, GNUTLS_FSAN_APPEND),
                            0);
                } else {
                        assert_int_equal(
                            gnutls_x509_crq_set_subject_alt_name(crq,
                                                                 strncmp(names[i], "dns:", 4) == 0
                                                                     ? GNUTLS_SAN_DNSNAME
                                                                     : GNUTLS_SAN_RFC822NAME,
                                                                 v,
                                                                 (unsigned)strlen(v),
                                                                 GNUTLS_FSAN_APPEND),
                            0);
                }
        }
        assert_int_equal(gnutls_x509_crq_set_key(crq, f->key), 0);
        assert_int_equal(gnutls_x509_crq_sign2(crq, f->key, GNUTLS_DIG_SHA256, 0), 0);
        assert_int_equal(gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_PEM, &pem), 0);
        gnutls_x509_crq_deinit(crq);
        text = strndup((const char *)pem.data, pem.size);
        gnutls_free(pem.data);
        assert_non_null(text);
        return text;
}

static const char *const node_addresses[] = {"10.0.0.1", "fd00::1"};

static int sign(struct fixture *f, const char *pem, char **ret, struct xp_error *err)
{
        return servingcert_sign(
            f->signer, "n1", node_addresses, 2, pem, strlen(pem), time(NULL), ret, err);
}

/* The CA certificate DIR/name of the fixture. */
static gnutls_x509_crt_t load_ca(struct fixture *f, const char *name)
{
        _cleanup_free_ char *path = NULL, *pem = NULL;
        struct xp_error err = {0};
        gnutls_x509_crt_t ca;
        gnutls_datum_t d;

        assert_true(asprintf(&path, "%s/%s", f->t.path, name) > 0);
        assert_int_equal(tls_load_pem(path, &pem, &err), 0);
        assert_int_equal(gnutls_x509_crt_init(&ca), 0);
        d = (gnutls_datum_t){.data = (unsigned char *)pem, .size = (unsigned)strlen(pem)};
        assert_int_equal(gnutls_x509_crt_import(ca, &d, GNUTLS_X509_FMT_PEM), 0);
        return ca;
}

/* The node's own name and addresses: a certificate the kubelet-serving CA verifies, for exactly
 * those names. */
static void test_own_names_signed(void **state)
{
        struct fixture *f = *state;
        const char *const names[] = {"dns:n1", "ip:10.0.0.1", "ip:fd00::1", NULL};
        _cleanup_free_ char *pem = request(f, "system:node:n1", "system:nodes", names);
        _cleanup_free_ char *cert = NULL;
        struct xp_error err = {0};
        gnutls_x509_crt_t crt, ca, cluster;
        gnutls_datum_t d;
        unsigned status = 1;

        assert_int_equal(sign(f, pem, &cert, &err), 0);
        assert_int_equal(gnutls_x509_crt_init(&crt), 0);
        d = (gnutls_datum_t){.data = (unsigned char *)cert, .size = (unsigned)strlen(cert)};
        assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
        ca = load_ca(f, "kubelet-ca.crt");
        assert_int_equal(gnutls_x509_crt_verify(crt, &ca, 1, 0, &status), 0);
        assert_int_equal(status, 0);
        /* the kubelet-serving CA's alone: the cluster CA, which clients of the API trust, does
         * not vouch for an agent */
        cluster = load_ca(f, "ca.crt");
        assert_int_equal(gnutls_x509_crt_verify(crt, &cluster, 1, 0, &status), 0);
        assert_int_not_equal(status, 0);
        gnutls_x509_crt_deinit(cluster);
        assert_true(gnutls_x509_crt_check_hostname2(crt, "n1", 0));
        assert_true(gnutls_x509_crt_check_hostname2(crt, "10.0.0.1", 0));
        assert_true(gnutls_x509_crt_check_hostname2(crt, "fd00::1", 0));
        assert_false(gnutls_x509_crt_check_hostname2(crt, "n2", 0));
        assert_false(gnutls_x509_crt_check_hostname2(crt, "localhost", 0));
        assert_int_equal(gnutls_x509_crt_get_ca_status(crt, NULL), 0);
        assert_true(gnutls_x509_crt_get_expiration_time(crt) - time(NULL) >
                    (SERVINGCERT_DAYS - 1) * 86400L);
        gnutls_x509_crt_deinit(ca);
        gnutls_x509_crt_deinit(crt);
}

static void expect_refused(struct fixture *f,
                           const char *cn,
                           const char *org,
                           const char *const *names,
                           int code,
                           const char *words)
{
        _cleanup_free_ char *pem = request(f, cn, org, names);
        char *cert = NULL;
        struct xp_error err = {0};

        assert_int_equal(sign(f, pem, &cert, &err), code);
        assert_null(cert);
        if (!strstr(err.msg, words))
                fail_msg("\"%s\" does not say \"%s\"", err.msg, words);
}

/* A node asking for another node's name, an address not its own, as another subject. */
static void test_other_names_refused(void **state)
{
        struct fixture *f = *state;
        const char *const other_name[] = {"dns:n1", "dns:n2", NULL};
        const char *const other_address[] = {"dns:n1", "ip:10.0.0.2", NULL};
        const char *const loopback[] = {"ip:127.0.0.1", NULL};
        const char *const wildcard[] = {"dns:*.n1", NULL};
        const char *const email[] = {"dns:n1", "email:root@n1", NULL};
        const char *const own[] = {"dns:n1", NULL};

        expect_refused(f, "system:node:n1", "system:nodes", other_name, -EPERM, "\"n2\"");
        expect_refused(f, "system:node:n1", "system:nodes", other_address, -EPERM, "10.0.0.2");
        expect_refused(f, "system:node:n1", "system:nodes", loopback, -EPERM, "127.0.0.1");
        expect_refused(f, "system:node:n1", "system:nodes", wildcard, -EPERM, "*.n1");
        expect_refused(f, "system:node:n1", "system:nodes", email, -EPERM, "only DNS names");
        expect_refused(f, "system:node:n2", "system:nodes", own, -EPERM, "CN=system:node:n1");
        expect_refused(f, "system:node:n1", "system:masters", own, -EPERM, "O=system:nodes");
        expect_refused(f, "system:node:n1", "system:nodes", NULL, -EPERM, "no name");
}

/* Not a request, or one whose signature does not hold. */
static void test_garbage_invalid(void **state)
{
        struct fixture *f = *state;
        const char *const own[] = {"dns:n1", NULL};
        _cleanup_free_ char *pem = request(f, "system:node:n1", "system:nodes", own);
        struct xp_error err = {0};
        char *cert = NULL, *body;

        assert_int_equal(sign(f, "not a request", &cert, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "CERTIFICATE REQUEST"));
        /* one character of the base64 body changed: the self-signature no longer holds (or the
         * DER no longer parses), refused either way */
        body = strstr(pem, "\n") + 40;
        *body = *body == 'A' ? 'B' : 'A';
        assert_int_equal(sign(f, pem, &cert, &err), -EINVAL);
        assert_null(cert);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_own_names_signed, setup, teardown),
            cmocka_unit_test_setup_teardown(test_other_names_refused, setup, teardown),
            cmocka_unit_test_setup_teardown(test_garbage_invalid, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
