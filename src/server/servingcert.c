/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet-serving signer and its approval rules (servingcert.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "servingcert.h"
#include "tls.h"
#include "xpool/macro.h"
#include "xpool/random.h"

#define DAY          (24 * 60 * 60)
#define SKEW_SECONDS 3600
#define NAME_MAX_LEN 256
#define KEY_ID_MAX   64
#define SANS_MAX     32

struct servingcert_signer {
        gnutls_x509_crt_t ca;
        gnutls_x509_privkey_t key;
};

/* One name the request asks for: a DNS name, or an IP address's bytes. */
struct san {
        int type; /* GNUTLS_SAN_DNSNAME or GNUTLS_SAN_IPADDRESS */
        unsigned char data[NAME_MAX_LEN];
        size_t len;
};

static void crq_freep(gnutls_x509_crq_t *crq)
{
        if (*crq)
                gnutls_x509_crq_deinit(*crq);
}

static void crt_freep(gnutls_x509_crt_t *crt)
{
        if (*crt)
                gnutls_x509_crt_deinit(*crt);
}

void servingcert_signer_free(struct servingcert_signer *s)
{
        if (!s)
                return;
        if (s->ca)
                gnutls_x509_crt_deinit(s->ca);
        if (s->key)
                gnutls_x509_privkey_deinit(s->key);
        free(s);
}

static int import_pem(const char *dir, const char *file, bool key, void *ret, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL, *pem = NULL;
        gnutls_datum_t d;
        int r;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        r = tls_load_pem(path, &pem, err);
        if (r < 0)
                return r;
        d = (gnutls_datum_t){.data = (unsigned char *)pem, .size = (unsigned)strlen(pem)};
        if (key)
                r = gnutls_x509_privkey_import2(
                    *(gnutls_x509_privkey_t *)ret, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
        else
                r = gnutls_x509_crt_import(*(gnutls_x509_crt_t *)ret, &d, GNUTLS_X509_FMT_PEM);
        explicit_bzero(pem, strlen(pem));
        if (r < 0)
                return xp_errorf(err, -EINVAL, "'%s': %s", path, gnutls_strerror(r));
        return 0;
}

int servingcert_signer_new(const char *dir, struct servingcert_signer **ret, struct xp_error *err)
{
        struct servingcert_signer *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        r = gnutls_x509_crt_init(&s->ca) < 0 || gnutls_x509_privkey_init(&s->key) < 0 ? -ENOMEM : 0;
        if (r >= 0)
                r = import_pem(dir, TLS_KUBELET_CA_CERT, false, &s->ca, err);
        if (r >= 0)
                r = import_pem(dir, TLS_KUBELET_CA_KEY, true, &s->key, err);
        if (r < 0) {
                servingcert_signer_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* The subject must be the node's, as kubelet-serving requests name it. */
static int check_subject(gnutls_x509_crq_t crq, const char *node, struct xp_error *err)
{
        char cn[NAME_MAX_LEN + 32], want[NAME_MAX_LEN + 32], org[64];
        size_t cn_len = sizeof(cn), org_len = sizeof(org);

        snprintf(want, sizeof(want), "system:node:%s", node);
        if (gnutls_x509_crq_get_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cn_len) <
                0 ||
            strcmp(cn, want) != 0)
                return xp_errorf(err,
                                 -EPERM,
                                 "the request's subject is not CN=%s: a node asks only for itself",
                                 want);
        if (gnutls_x509_crq_get_dn_by_oid(
                crq, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, 0, org, &org_len) < 0 ||
            strcmp(org, "system:nodes") != 0)
                return xp_errorf(err, -EPERM, "the request's subject is not O=system:nodes");
        return 0;
}

/* The names the request asks for: DNS names and IP addresses only, at least one. */
static int read_sans(gnutls_x509_crq_t crq, struct san *ret, size_t *ret_n, struct xp_error *err)
{
        size_t n = 0;

        for (unsigned seq = 0;; seq++) {
                struct san s = {0};
                unsigned type = 0;
                int r;

                s.len = sizeof(s.data) - 1;
                r = gnutls_x509_crq_get_subject_alt_name(crq, seq, s.data, &s.len, &type, NULL);
                if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
                        break;
                if (r < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "the request's names do not parse: %s",
                                         gnutls_strerror(r));
                if (type != GNUTLS_SAN_DNSNAME && type != GNUTLS_SAN_IPADDRESS)
                        return xp_errorf(
                            err,
                            -EPERM,
                            "the request asks for a name of type %u: only DNS names and IP addresses",
                            type);
                if (n == SANS_MAX)
                        return xp_errorf(
                            err, -EPERM, "the request asks for more than %d names", SANS_MAX);
                s.type = (int)type;
                ret[n++] = s;
        }
        if (n == 0)
                return xp_errorf(err, -EPERM, "the request asks for no name (DNS name or address)");
        *ret_n = n;
        return 0;
}

static bool address_allowed(const struct san *s, const char *const *addresses, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                unsigned char bytes[16];
                size_t len = strchr(addresses[i], ':') ? 16 : 4;

                if (inet_pton(len == 16 ? AF_INET6 : AF_INET, addresses[i], bytes) == 1 &&
                    len == s->len && memcmp(bytes, s->data, len) == 0)
                        return true;
        }
        return false;
}

/* Every name must be the node's: its name, or one of its addresses. */
static int check_sans(const struct san *sans,
                      size_t n_sans,
                      const char *node,
                      const char *const *addresses,
                      size_t n_addresses,
                      struct xp_error *err)
{
        for (size_t i = 0; i < n_sans; i++) {
                const struct san *s = &sans[i];
                char text[INET6_ADDRSTRLEN];

                if (s->type == GNUTLS_SAN_DNSNAME) {
                        if (s->len != strlen(node) ||
                            strncasecmp((const char *)s->data, node, s->len))
                                return xp_errorf(err,
                                                 -EPERM,
                                                 "DNS name \"%.*s\" is not node \"%s\"'s name",
                                                 (int)s->len,
                                                 (const char *)s->data,
                                                 node);
                        continue;
                }
                if (s->len != 4 && s->len != 16)
                        return xp_errorf(err, -EINVAL, "an IP address of %zu bytes", s->len);
                if (!address_allowed(s, addresses, n_addresses)) {
                        inet_ntop(s->len == 4 ? AF_INET : AF_INET6, s->data, text, sizeof(text));
                        return xp_errorf(err,
                                         -EPERM,
                                         "address %s is not one of node \"%s\"'s addresses",
                                         text,
                                         node);
                }
        }
        return 0;
}

static int
parse_request(const char *csr_pem, size_t csr_len, gnutls_x509_crq_t *ret, struct xp_error *err)
{
        gnutls_x509_crq_t crq = NULL;
        gnutls_datum_t d = {.data = (unsigned char *)csr_pem, .size = (unsigned)csr_len};
        int r;

        if (csr_len > TLS_PEM_MAX)
                return xp_errorf(err, -EINVAL, "the request is larger than %d bytes", TLS_PEM_MAX);
        r = gnutls_x509_crq_init(&crq);
        if (r < 0)
                return -ENOMEM;
        r = gnutls_x509_crq_import(crq, &d, GNUTLS_X509_FMT_PEM);
        if (r < 0) {
                gnutls_x509_crq_deinit(crq);
                return xp_errorf(err,
                                 -EINVAL,
                                 "the request is not a PEM CERTIFICATE REQUEST: %s",
                                 gnutls_strerror(r));
        }
        r = gnutls_x509_crq_verify(crq, 0);
        if (r < 0) {
                gnutls_x509_crq_deinit(crq);
                return xp_errorf(
                    err, -EINVAL, "the request's signature is wrong: %s", gnutls_strerror(r));
        }
        *ret = crq;
        return 0;
}

static int set_sans(gnutls_x509_crt_t crt, const struct san *sans, size_t n)
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < n; i++)
                r = gnutls_x509_crt_set_subject_alt_name(
                    crt, sans[i].type, sans[i].data, (unsigned)sans[i].len, GNUTLS_FSAN_APPEND);
        return r;
}

/* The certificate: the request's subject and key, the checked names, serverAuth. */
static int make_crt(const struct servingcert_signer *s,
                    gnutls_x509_crq_t crq,
                    const struct san *sans,
                    size_t n_sans,
                    int64_t now,
                    gnutls_x509_crt_t *ret)
{
        _cleanup_(crt_freep) gnutls_x509_crt_t crt = NULL;
        unsigned char serial[16], id[KEY_ID_MAX], ca_id[KEY_ID_MAX];
        size_t id_len = sizeof(id), ca_id_len = sizeof(ca_id);
        time_t ca_end = gnutls_x509_crt_get_expiration_time(s->ca);
        time_t end = (time_t)now + (time_t)SERVINGCERT_DAYS * DAY;
        int r;

        if (xp_random_bytes(serial, sizeof(serial)) < 0)
                return GNUTLS_E_RANDOM_FAILED;
        serial[0] = (serial[0] & 0x7f) | 0x40;
        if (ca_end != (time_t)-1 && ca_end < end)
                end = ca_end;
        if ((r = gnutls_x509_crt_init(&crt)) < 0 || (r = gnutls_x509_crt_set_crq(crt, crq)) < 0 ||
            (r = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
            (r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
            (r = gnutls_x509_crt_set_activation_time(crt, (time_t)now - SKEW_SECONDS)) < 0 ||
            (r = gnutls_x509_crt_set_expiration_time(crt, end)) < 0 ||
            (r = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
            (r = gnutls_x509_crt_set_key_usage(
                 crt, GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_ENCIPHERMENT)) < 0 ||
            (r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
            (r = gnutls_x509_crt_get_key_id(crt, 0, id, &id_len)) < 0 ||
            (r = gnutls_x509_crt_set_subject_key_id(crt, id, id_len)) < 0 ||
            (r = gnutls_x509_crt_get_subject_key_id(s->ca, ca_id, &ca_id_len, NULL)) < 0 ||
            (r = gnutls_x509_crt_set_authority_key_id(crt, ca_id, ca_id_len)) < 0 ||
            (r = set_sans(crt, sans, n_sans)) < 0 ||
            (r = gnutls_x509_crt_sign2(crt, s->ca, s->key, GNUTLS_DIG_SHA256, 0)) < 0)
                return r;
        *ret = TAKE_PTR(crt);
        return 0;
}

int servingcert_sign(const struct servingcert_signer *s,
                     const char *node,
                     const char *const *addresses,
                     size_t n_addresses,
                     const char *csr_pem,
                     size_t csr_len,
                     int64_t now,
                     char **ret_pem,
                     struct xp_error *err)
{
        _cleanup_(crq_freep) gnutls_x509_crq_t crq = NULL;
        _cleanup_(crt_freep) gnutls_x509_crt_t crt = NULL;
        struct san sans[SANS_MAX];
        gnutls_datum_t pem = {0};
        size_t n_sans = 0;
        int r;

        r = parse_request(csr_pem, csr_len, &crq, err);
        if (r >= 0)
                r = check_subject(crq, node, err);
        if (r >= 0)
                r = read_sans(crq, sans, &n_sans, err);
        if (r >= 0)
                r = check_sans(sans, n_sans, node, addresses, n_addresses, err);
        if (r < 0)
                return r;
        r = make_crt(s, crq, sans, n_sans, now, &crt);
        if (r >= 0)
                r = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem);
        if (r < 0)
                return xp_errorf(err,
                                 r == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL,
                                 "cannot sign the request: %s",
                                 gnutls_strerror(r));
        *ret_pem = strndup((const char *)pem.data, pem.size);
        gnutls_free(pem.data);
        return *ret_pem ? 0 : -ENOMEM;
}
