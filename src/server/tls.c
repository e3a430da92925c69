/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tls.h"
#include "xpool/atomic_file.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"
#include "xpool/random.h"
#include "xpool/tls_key.h"

#define DAY          (24 * 60 * 60)
#define HOST_MAX     253
#define KEY_ID_MAX   64
#define SKEW_SECONDS 3600 /* certificates start an hour back, for clients whose clocks lag */

static void crt_freep(gnutls_x509_crt_t *crt)
{
        if (*crt)
                gnutls_x509_crt_deinit(*crt);
}

static void key_freep(gnutls_x509_privkey_t *key)
{
        if (*key)
                gnutls_x509_privkey_deinit(*key);
}

static void datum_freep(gnutls_datum_t *d)
{
        gnutls_free(d->data);
}

#define _cleanup_crt_   _cleanup_(crt_freep)
#define _cleanup_key_   _cleanup_(key_freep)
#define _cleanup_datum_ _cleanup_(datum_freep)

/* A host as the certificate holds it: raw address bytes for IP literals, else the name. */
struct host {
        bool ip;
        unsigned char addr[16];
        size_t addr_len;
        char name[HOST_MAX + 1];
};

static int gnutls_errno(int r)
{
        return r == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL;
}

static char *join(const char *dir, const char *file)
{
        char *path;

        return asprintf(&path, "%s/%s", dir, file) < 0 ? NULL : path;
}

static int parse_host(const char *text, struct host *ret, struct xp_error *err)
{
        char buf[HOST_MAX + 1];
        size_t len = strlen(text);

        *ret = (struct host){0};
        if (len == 0 || len > HOST_MAX)
                return xp_errorf(
                    err, -EINVAL, "host '%s': expected 1 to %d characters", text, HOST_MAX);
        if (text[0] == '[' && text[len - 1] == ']') {
                memcpy(buf, text + 1, len - 2);
                buf[len - 2] = '\0';
                if (inet_pton(AF_INET6, buf, ret->addr) != 1)
                        return xp_errorf(err, -EINVAL, "host '%s': not an IPv6 address", text);
                ret->ip = true;
                ret->addr_len = 16;
                return 0;
        }
        if (inet_pton(AF_INET, text, ret->addr) == 1) {
                ret->ip = true;
                ret->addr_len = 4;
                return 0;
        }
        if (inet_pton(AF_INET6, text, ret->addr) == 1) {
                ret->ip = true;
                ret->addr_len = 16;
                return 0;
        }
        for (size_t i = 0; i < len; i++) {
                char c = text[i];
                bool wildcard = i == 0 && c == '*' && text[1] == '.';

                if (!wildcard && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                   (c >= '0' && c <= '9') || c == '-' || c == '.'))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "host '%s': character %zu is not allowed in a DNS name or an IP address",
                            text,
                            i + 1);
        }
        for (size_t i = 0; i <= len; i++)
                ret->name[i] =
                    (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] - 'A' + 'a' : text[i]);
        return 0;
}

static bool host_equal(const struct host *a, const struct host *b)
{
        if (a->ip != b->ip)
                return false;
        if (a->ip)
                return a->addr_len == b->addr_len && memcmp(a->addr, b->addr, a->addr_len) == 0;
        return strcmp(a->name, b->name) == 0;
}

/* The requested hosts and the loopback ones, without duplicates. */
static int collect_hosts(
    const char *const *hosts, size_t n_hosts, struct host *ret, size_t *ret_n, struct xp_error *err)
{
        static const char *const always[] = {"127.0.0.1", "::1", "localhost"};
        size_t n = 0;

        if (n_hosts > TLS_HOSTS_MAX)
                return xp_errorf(err, -E2BIG, "%zu hosts, at most %d", n_hosts, TLS_HOSTS_MAX);
        for (size_t i = 0; i < XP_ELEMENTSOF(always) + n_hosts; i++) {
                const char *text =
                    i < XP_ELEMENTSOF(always) ? always[i] : hosts[i - XP_ELEMENTSOF(always)];
                struct host h;
                bool seen = false;
                int r;

                r = parse_host(text, &h, err);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < n; j++)
                        seen = seen || host_equal(&ret[j], &h);
                if (!seen)
                        ret[n++] = h;
        }
        *ret_n = n;
        return 0;
}

static int read_file(const char *path, gnutls_datum_t *ret, struct xp_error *err)
{
        _cleanup_close_ int fd = -1;
        char *data = NULL;
        size_t size;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open '%s': %m", path);
        r = xp_read_fd_all(fd, TLS_PEM_MAX, &data, &size);
        if (r == -E2BIG)
                return xp_errorf(err,
                                 r,
                                 "'%s' is larger than %d bytes: not a PEM certificate or key",
                                 path,
                                 TLS_PEM_MAX);
        if (r < 0)
                return xp_errorf(err, r, "cannot read '%s': %s", path, strerror(-r));
        ret->data = (unsigned char *)data;
        ret->size = (unsigned)size;
        return 0;
}

static int load_crt(const char *path, gnutls_x509_crt_t *ret, struct xp_error *err)
{
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        gnutls_datum_t d = {0};
        int r;

        r = read_file(path, &d, err);
        if (r < 0)
                return r;
        r = gnutls_x509_crt_init(&crt);
        if (r >= 0)
                r = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM);
        free(d.data);
        if (r < 0)
                return xp_errorf(err,
                                 gnutls_errno(r),
                                 "'%s' is not a PEM certificate: %s",
                                 path,
                                 gnutls_strerror(r));
        *ret = TAKE_PTR(crt);
        return 0;
}

static int load_key(const char *path, gnutls_x509_privkey_t *ret, struct xp_error *err)
{
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        gnutls_datum_t d = {0};
        int r;

        r = read_file(path, &d, err);
        if (r < 0)
                return r;
        r = gnutls_x509_privkey_init(&key);
        if (r >= 0)
                r = gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
        gnutls_memset(d.data, 0, d.size);
        free(d.data);
        if (r < 0)
                return xp_errorf(err,
                                 gnutls_errno(r),
                                 "'%s' is not an unencrypted PEM private key: %s",
                                 path,
                                 gnutls_strerror(r));
        *ret = TAKE_PTR(key);
        return 0;
}

static bool pair_matches(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
        unsigned char a[KEY_ID_MAX], b[KEY_ID_MAX];
        size_t a_len = sizeof(a), b_len = sizeof(b);

        if (gnutls_x509_crt_get_key_id(crt, 0, a, &a_len) < 0 ||
            gnutls_x509_privkey_get_key_id(key, 0, b, &b_len) < 0)
                return false;
        return a_len == b_len && memcmp(a, b, a_len) == 0;
}

static int load_pair(const char *cert_path,
                     const char *key_path,
                     gnutls_x509_crt_t *ret_crt,
                     gnutls_x509_privkey_t *ret_key,
                     struct xp_error *err)
{
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        int r;

        r = load_crt(cert_path, &crt, err);
        if (r < 0)
                return r;
        r = load_key(key_path, &key, err);
        if (r < 0)
                return r;
        if (!pair_matches(crt, key))
                return xp_errorf(
                    err, -EINVAL, "'%s' is not the private key of '%s'", key_path, cert_path);
        *ret_crt = TAKE_PTR(crt);
        *ret_key = TAKE_PTR(key);
        return 0;
}

int tls_check_pair(const char *cert_path, const char *key_path, struct xp_error *err)
{
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;

        return load_pair(cert_path, key_path, &crt, &key, err);
}

int tls_load_pem(const char *path, char **ret, struct xp_error *err)
{
        gnutls_datum_t d = {0};
        char *text;
        int r;

        r = read_file(path, &d, err);
        if (r < 0)
                return r;
        text = realloc(d.data, d.size + 1);
        if (!text) {
                free(d.data);
                return -ENOMEM;
        }
        text[d.size] = '\0';
        if (strlen(text) != d.size || !strstr(text, "-----BEGIN ")) {
                free(text);
                return xp_errorf(err, -EINVAL, "'%s' is not a PEM file (no -----BEGIN line)", path);
        }
        *ret = text;
        return 0;
}

static int write_pem(const char *path, const gnutls_datum_t *pem, mode_t mode, struct xp_error *err)
{
        return xp_write_file_atomic(path, pem->data, pem->size, mode, err);
}

/* The common part of both certificates: a random serial, the validity, the subject, the key. */
static int new_crt(gnutls_x509_privkey_t key, const char *cn, unsigned days, gnutls_x509_crt_t *ret)
{
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        unsigned char serial[16], key_id[KEY_ID_MAX];
        size_t key_id_len = sizeof(key_id);
        time_t now = time(NULL);
        int r;

        if (xp_random_bytes(serial, sizeof(serial)) < 0)
                return GNUTLS_E_RANDOM_FAILED;
        serial[0] = (serial[0] & 0x7f) | 0x40; /* positive and 16 bytes long, as RFC 5280 asks */
        r = gnutls_x509_crt_init(&crt);
        if (r < 0)
                return r;
        if ((r = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
            (r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
            (r = gnutls_x509_crt_set_activation_time(crt, now - SKEW_SECONDS)) < 0 ||
            (r = gnutls_x509_crt_set_expiration_time(crt, now + (time_t)days * DAY)) < 0 ||
            (r = gnutls_x509_crt_set_dn_by_oid(
                 crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn))) < 0 ||
            (r = gnutls_x509_crt_set_dn_by_oid(
                 crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, "xpool", 5)) < 0 ||
            (r = gnutls_x509_crt_set_key(crt, key)) < 0 ||
            (r = gnutls_x509_privkey_get_key_id(key, 0, key_id, &key_id_len)) < 0 ||
            (r = gnutls_x509_crt_set_subject_key_id(crt, key_id, key_id_len)) < 0)
                return r;
        *ret = TAKE_PTR(crt);
        return 0;
}

static int
make_ca(const char *cert_path, const char *key_path, const char *cn, struct xp_error *err)
{
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        _cleanup_datum_ gnutls_datum_t crt_pem = {0}, key_pem = {0};
        int r;

        if ((r = xp_tls_new_p256(&key)) < 0 || (r = new_crt(key, cn, TLS_CA_DAYS, &crt)) < 0 ||
            (r = gnutls_x509_crt_set_basic_constraints(crt, 1, 0)) < 0 ||
            (r = gnutls_x509_crt_set_key_usage(
                 crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) < 0 ||
            (r = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (r = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &crt_pem)) < 0 ||
            (r = gnutls_x509_privkey_export2_pkcs8(
                 key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &key_pem)) < 0)
                return xp_errorf(err,
                                 gnutls_errno(r),
                                 "cannot make a CA for '%s': %s",
                                 cert_path,
                                 gnutls_strerror(r));
        /* The key first: a crash between the two leaves a key without a certificate, which
         * tls_ensure() reports instead of making a second CA over clients' trusted one. */
        r = write_pem(key_path, &key_pem, 0600, err);
        if (r < 0)
                return r;
        return write_pem(cert_path, &crt_pem, 0644, err);
}

static int make_server(const char *cert_path,
                       const char *key_path,
                       gnutls_x509_crt_t ca,
                       gnutls_x509_privkey_t ca_key,
                       const struct host *hosts,
                       size_t n_hosts,
                       struct xp_error *err)
{
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        _cleanup_datum_ gnutls_datum_t crt_pem = {0}, key_pem = {0};
        unsigned char ca_id[KEY_ID_MAX];
        size_t ca_id_len = sizeof(ca_id);
        int r;

        if ((r = xp_tls_new_p256(&key)) < 0 ||
            (r = new_crt(key, "xpool server", TLS_SERVER_DAYS, &crt)) < 0 ||
            (r = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
            (r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
            (r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
            (r = gnutls_x509_crt_get_subject_key_id(ca, ca_id, &ca_id_len, NULL)) < 0 ||
            (r = gnutls_x509_crt_set_authority_key_id(crt, ca_id, ca_id_len)) < 0)
                goto fail;
        for (size_t i = 0; i < n_hosts; i++) {
                if (hosts[i].ip)
                        r = gnutls_x509_crt_set_subject_alt_name(crt,
                                                                 GNUTLS_SAN_IPADDRESS,
                                                                 hosts[i].addr,
                                                                 (unsigned)hosts[i].addr_len,
                                                                 GNUTLS_FSAN_APPEND);
                else
                        r = gnutls_x509_crt_set_subject_alt_name(crt,
                                                                 GNUTLS_SAN_DNSNAME,
                                                                 hosts[i].name,
                                                                 (unsigned)strlen(hosts[i].name),
                                                                 GNUTLS_FSAN_APPEND);
                if (r < 0)
                        goto fail;
        }
        if ((r = gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (r = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &crt_pem)) < 0 ||
            (r = gnutls_x509_privkey_export2_pkcs8(
                 key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &key_pem)) < 0)
                goto fail;
        r = write_pem(key_path, &key_pem, 0600, err);
        if (r < 0)
                return r;
        return write_pem(cert_path, &crt_pem, 0644, err);
fail:
        return xp_errorf(err,
                         gnutls_errno(r),
                         "cannot make the serving certificate '%s': %s",
                         cert_path,
                         gnutls_strerror(r));
}

static bool crt_has_host(gnutls_x509_crt_t crt, const struct host *h)
{
        for (unsigned seq = 0;; seq++) {
                char buf[HOST_MAX + 1];
                size_t size = sizeof(buf) - 1;
                int type = gnutls_x509_crt_get_subject_alt_name(crt, seq, buf, &size, NULL);

                if (type == GNUTLS_E_SHORT_MEMORY_BUFFER)
                        continue;
                if (type < 0)
                        return false;
                if (h->ip && type == GNUTLS_SAN_IPADDRESS && size == h->addr_len &&
                    memcmp(buf, h->addr, size) == 0)
                        return true;
                if (!h->ip && type == GNUTLS_SAN_DNSNAME && size == strlen(h->name) &&
                    strncasecmp(buf, h->name, size) == 0)
                        return true;
        }
}

/* Whether the existing serving pair can stay; any doubt means making a new one. */
static bool server_pair_usable(const char *cert_path,
                               const char *key_path,
                               gnutls_x509_crt_t ca,
                               const struct host *hosts,
                               size_t n_hosts)
{
        _cleanup_crt_ gnutls_x509_crt_t crt = NULL;
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        unsigned status = 0;
        time_t expires;

        if (load_pair(cert_path, key_path, &crt, &key, NULL) < 0)
                return false;
        if (gnutls_x509_crt_verify(crt, &ca, 1, 0, &status) < 0 || status != 0)
                return false;
        expires = gnutls_x509_crt_get_expiration_time(crt);
        if (expires == (time_t)-1 || expires - time(NULL) < (time_t)TLS_RENEW_DAYS * DAY)
                return false;
        for (size_t i = 0; i < n_hosts; i++)
                if (!crt_has_host(crt, &hosts[i]))
                        return false;
        return true;
}

static bool exists(const char *path)
{
        return access(path, F_OK) == 0;
}

/* Makes the CA when neither file exists; loads and checks it. */
static int ensure_ca(const char *ca_crt,
                     const char *ca_key,
                     const char *cn,
                     gnutls_x509_crt_t *ret_ca,
                     gnutls_x509_privkey_t *ret_key,
                     struct xp_error *err)
{
        int r;

        if (!exists(ca_crt) && !exists(ca_key)) {
                r = make_ca(ca_crt, ca_key, cn, err);
                if (r < 0)
                        return r;
        } else if (!exists(ca_crt) || !exists(ca_key)) {
                return xp_errorf(
                    err,
                    -EINVAL,
                    "'%s' exists without '%s': restore it, or remove both to make a new CA (every client must then trust the new %s)",
                    exists(ca_crt) ? ca_crt : ca_key,
                    exists(ca_crt) ? ca_key : ca_crt,
                    strrchr(ca_crt, '/') ? strrchr(ca_crt, '/') + 1 : ca_crt);
        }
        r = load_pair(ca_crt, ca_key, ret_ca, ret_key, err);
        if (r < 0)
                return r;
        if (gnutls_x509_crt_get_ca_status(*ret_ca, NULL) <= 0)
                return xp_errorf(err, -EINVAL, "'%s' is not a CA certificate (no CA:TRUE)", ca_crt);
        return 0;
}

static int make_dir(const char *dir, struct xp_error *err)
{
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return xp_errorf(err, -errno, "cannot create the TLS directory '%s': %m", dir);
        return 0;
}

/* The CA of DIR/cert_name and DIR/key_name, called cn, made when neither exists. */
static int ensure_ca_in(const char *dir,
                        const char *cert_name,
                        const char *key_name,
                        const char *cn,
                        struct xp_error *err)
{
        _cleanup_free_ char *ca_crt = join(dir, cert_name), *ca_key = join(dir, key_name);
        _cleanup_crt_ gnutls_x509_crt_t ca = NULL;
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        int r;

        if (!ca_crt || !ca_key)
                return -ENOMEM;
        r = make_dir(dir, err);
        return r < 0 ? r : ensure_ca(ca_crt, ca_key, cn, &ca, &key, err);
}

int tls_ensure_ca(const char *dir, struct xp_error *err)
{
        return ensure_ca_in(dir, TLS_CA_CERT, TLS_CA_KEY, TLS_CA_NAME, err);
}

int tls_ensure_kubelet_ca(const char *dir, struct xp_error *err)
{
        return ensure_ca_in(dir, TLS_KUBELET_CA_CERT, TLS_KUBELET_CA_KEY, TLS_KUBELET_CA_NAME, err);
}

int tls_ensure(const char *dir, const char *const *hosts, size_t n_hosts, struct xp_error *err)
{
        _cleanup_free_ char *ca_crt = join(dir, TLS_CA_CERT), *ca_key = join(dir, TLS_CA_KEY),
                            *server_crt = join(dir, TLS_SERVER_CERT),
                            *server_key = join(dir, TLS_SERVER_KEY);
        _cleanup_crt_ gnutls_x509_crt_t ca = NULL;
        _cleanup_key_ gnutls_x509_privkey_t key = NULL;
        struct host *all;
        size_t n_all = 0;
        int r;

        if (!ca_crt || !ca_key || !server_crt || !server_key)
                return -ENOMEM;
        all = calloc(n_hosts + 3, sizeof(*all));
        if (!all)
                return -ENOMEM;
        r = collect_hosts(hosts, n_hosts, all, &n_all, err);
        if (r >= 0)
                r = make_dir(dir, err);
        if (r >= 0)
                r = ensure_ca(ca_crt, ca_key, TLS_CA_NAME, &ca, &key, err);
        if (r >= 0 && !server_pair_usable(server_crt, server_key, ca, all, n_all))
                r = make_server(server_crt, server_key, ca, key, all, n_all, err);
        free(all);
        return r;
}
