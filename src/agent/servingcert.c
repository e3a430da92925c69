/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's serving key and certificate (servingcert.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "servingcert.h"
#include "xpool/atomic_file.h"
#include "xpool/base64.h"
#include "xpool/client.h"
#include "xpool/fileio.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/tls_key.h"

#define PEM_MAX    (64 * 1024)
#define DAY        (24 * 60 * 60)
#define KEY_ID_MAX 64
#define SIGNER     "kubernetes.io/kubelet-serving"

static char *read_text(const char *dir, const char *file)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        char *text = NULL;
        size_t len = 0;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return NULL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || xp_read_fd_all(fd, PEM_MAX, &text, &len) < 0)
                return NULL;
        return text;
}

static int
write_text(const char *dir, const char *file, const char *text, mode_t mode, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        return xp_write_file_atomic(path, text, strlen(text), mode, err);
}

/* The key on disk, else a new one written (0600) before any request names it. */
static int ensure_key(const char *dir, char **ret_pem, struct xp_error *err)
{
        gnutls_datum_t pem = {0};
        char *text = read_text(dir, XP_AGENT_SERVING_KEY);
        int r;

        if (text) {
                *ret_pem = text;
                return 0;
        }
        r = xp_tls_new_p256_pem(&pem);
        if (r < 0)
                return xp_errorf(err, -EIO, "cannot make the serving key: %s", gnutls_strerror(r));
        text = strndup((const char *)pem.data, pem.size);
        gnutls_memset(pem.data, 0, pem.size);
        gnutls_free(pem.data);
        if (!text)
                return -ENOMEM;
        r = write_text(dir, XP_AGENT_SERVING_KEY, text, 0600, err);
        if (r < 0) {
                free(text);
                return r;
        }
        *ret_pem = text;
        return 0;
}

static bool has_names(gnutls_x509_crt_t crt, const struct xp_agent_serving_options *o)
{
        return gnutls_x509_crt_check_hostname2(crt, o->node_name, 0) &&
               gnutls_x509_crt_check_hostname2(crt, o->address, 0);
}

/* Whether crt verifies with the cluster CA (o->ca_pem): an agent's certificate must not since the
 * kubelet-serving CA signs them (a certificate the cluster CA signed is an earlier server's). */
static bool cluster_ca_signed(gnutls_x509_crt_t crt, const struct xp_agent_serving_options *o)
{
        gnutls_x509_crt_t *cas = NULL;
        unsigned n = 0, status = 1;
        gnutls_datum_t d = {.data = (unsigned char *)o->ca_pem, .size = (unsigned)o->ca_pem_len};

        if (gnutls_x509_crt_list_import2(&cas, &n, &d, GNUTLS_X509_FMT_PEM, 0) < 0)
                return false;
        if (gnutls_x509_crt_verify(crt, cas, n, 0, &status) < 0)
                status = 1;
        for (unsigned i = 0; i < n; i++)
                gnutls_x509_crt_deinit(cas[i]);
        gnutls_free(cas);
        return status == 0;
}

/*
 * Whether the certificate was signed for this cluster by its kubelet-serving signer: asked for
 * under the cluster CA the agent trusts now (the copy written beside it: a new cluster's server
 * has a new kubelet-serving CA, which the agent never sees) and not signed by that CA itself.
 * Without a CA to compare (no --ca-file), not checked.
 */
static bool from_cluster(gnutls_x509_crt_t crt, const struct xp_agent_serving_options *o)
{
        _cleanup_free_ char *issued_under = NULL;

        if (!o->ca_pem)
                return true;
        issued_under = read_text(o->dir, XP_AGENT_SERVING_CLUSTER_CA);
        return issued_under && strlen(issued_under) == o->ca_pem_len &&
               memcmp(issued_under, o->ca_pem, o->ca_pem_len) == 0 && !cluster_ca_signed(crt, o);
}

/* Why the certificate on disk cannot serve: not for key_pem, the names, this cluster's signer, or
 * near its end; NULL when it can. */
static const char *
cert_unusable(const char *cert_pem, const char *key_pem, const struct xp_agent_serving_options *o)
{
        gnutls_x509_crt_t crt = NULL;
        gnutls_x509_privkey_t key = NULL;
        gnutls_datum_t c = {.data = (unsigned char *)cert_pem, .size = (unsigned)strlen(cert_pem)};
        gnutls_datum_t k = {.data = (unsigned char *)key_pem, .size = (unsigned)strlen(key_pem)};
        unsigned char a[KEY_ID_MAX], b[KEY_ID_MAX];
        size_t a_len = sizeof(a), b_len = sizeof(b);
        const char *why = "it does not parse";

        if (gnutls_x509_crt_init(&crt) >= 0 && gnutls_x509_privkey_init(&key) >= 0 &&
            gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM) >= 0 &&
            gnutls_x509_privkey_import2(key, &k, GNUTLS_X509_FMT_PEM, NULL, 0) >= 0 &&
            gnutls_x509_crt_get_key_id(crt, 0, a, &a_len) >= 0 &&
            gnutls_x509_privkey_get_key_id(key, 0, b, &b_len) >= 0)
                why = a_len != b_len || memcmp(a, b, a_len) != 0 ? "it is not the key's"
                      : !has_names(crt, o)                       ? "it does not name the node"
                      : !from_cluster(crt, o) ? "this cluster's kubelet-serving CA did not sign it"
                      : gnutls_x509_crt_get_expiration_time(crt) - time(NULL) <=
                              (time_t)XP_AGENT_SERVING_RENEW_DAYS * DAY
                          ? "it ends within 30 days"
                          : NULL;
        if (crt)
                gnutls_x509_crt_deinit(crt);
        if (key)
                gnutls_x509_privkey_deinit(key);
        return why;
}

/* The PKCS#10 request, as the kubelet makes it: CN=system:node:NAME, O=system:nodes. */
static int make_request(const char *key_pem, const struct xp_agent_serving_options *o, char **ret)
{
        gnutls_x509_crq_t crq = NULL;
        gnutls_x509_privkey_t key = NULL;
        gnutls_datum_t k = {.data = (unsigned char *)key_pem, .size = (unsigned)strlen(key_pem)};
        gnutls_datum_t pem = {0};
        unsigned char ip[16];
        bool v6 = strchr(o->address, ':') != NULL;
        char cn[300];
        int r;

        snprintf(cn, sizeof(cn), "system:node:%s", o->node_name);
        if (inet_pton(v6 ? AF_INET6 : AF_INET, o->address, ip) != 1)
                return -EINVAL;
        if ((r = gnutls_x509_privkey_init(&key)) < 0 ||
            (r = gnutls_x509_privkey_import2(key, &k, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0 ||
            (r = gnutls_x509_crq_init(&crq)) < 0 ||
            (r = gnutls_x509_crq_set_dn_by_oid(
                 crq, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn))) < 0 ||
            (r = gnutls_x509_crq_set_dn_by_oid(
                 crq, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, "system:nodes", 12)) < 0 ||
            (r = gnutls_x509_crq_set_subject_alt_name(crq,
                                                      GNUTLS_SAN_DNSNAME,
                                                      o->node_name,
                                                      (unsigned)strlen(o->node_name),
                                                      GNUTLS_FSAN_APPEND)) < 0 ||
            (r = gnutls_x509_crq_set_subject_alt_name(
                 crq, GNUTLS_SAN_IPADDRESS, ip, v6 ? 16 : 4, GNUTLS_FSAN_APPEND)) < 0 ||
            (r = gnutls_x509_crq_set_key(crq, key)) < 0 ||
            (r = gnutls_x509_crq_sign2(crq, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (r = gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_PEM, &pem)) < 0)
                r = -EIO;
        if (crq)
                gnutls_x509_crq_deinit(crq);
        if (key)
                gnutls_x509_privkey_deinit(key);
        if (r >= 0 && xp_base64_encode(pem.data, pem.size, ret) < 0)
                r = -ENOMEM;
        gnutls_free(pem.data);
        return r;
}

/* Asks the server to sign: the certificate's PEM text (caller frees). */
static int ask(struct xp_apiclient *client,
               const char *key_pem,
               const struct xp_agent_serving_options *o,
               char **ret,
               struct xp_error *err)
{
        _cleanup_free_ char *request = NULL;
        json_t *csr = NULL, *answer = NULL;
        const char *cert;
        size_t len = 0;
        int r;

        r = make_request(key_pem, o, &request);
        if (r < 0)
                return xp_errorf(err, r, "cannot make the certificate request for %s", o->address);
        csr = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:[s, s]}}",
                        "apiVersion",
                        "certificates.k8s.io/v1",
                        "kind",
                        "CertificateSigningRequest",
                        "metadata",
                        "generateName",
                        "csr-",
                        "spec",
                        "request",
                        request,
                        "signerName",
                        SIGNER,
                        "usages",
                        "digital signature",
                        "server auth");
        if (!csr)
                return -ENOMEM;
        r = xp_apiclient_json(client,
                              "POST",
                              "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                              NULL,
                              csr,
                              NULL,
                              &answer,
                              err);
        json_decref(csr);
        if (r < 0)
                return xp_error_prefix(
                    err, r, "the server did not sign the agent's serving certificate");
        cert = json_string_value(json_object_get(json_object_get(answer, "status"), "certificate"));
        r = cert ? xp_base64_decode(cert, strlen(cert), ret, &len) : -EBADMSG;
        json_decref(answer);
        if (r < 0)
                return xp_errorf(err, -EBADMSG, "the server's answer holds no status.certificate");
        return 0;
}

/* The cluster CA the certificate was asked for under, beside it (from_cluster()). */
static int write_cluster_ca(const struct xp_agent_serving_options *o, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", o->dir, XP_AGENT_SERVING_CLUSTER_CA) < 0)
                return -ENOMEM;
        return xp_write_file_atomic(path, o->ca_pem, o->ca_pem_len, 0644, err);
}

bool xp_agent_serving_due(const struct xp_agent_serving_options *o)
{
        _cleanup_free_ char *key = read_text(o->dir, XP_AGENT_SERVING_KEY);
        _cleanup_free_ char *cert = read_text(o->dir, XP_AGENT_SERVING_CERT);
        bool due = !key || !cert || cert_unusable(cert, key, o);

        if (key)
                explicit_bzero(key, strlen(key));
        return due;
}

int xp_agent_serving_ensure(struct xp_apiclient *client,
                            const struct xp_agent_serving_options *o,
                            char **ret_cert,
                            char **ret_key,
                            struct xp_error *err)
{
        char *key = NULL, *cert = NULL;
        const char *why;
        int r;

        if (mkdir(o->dir, 0700) < 0 && errno != EEXIST)
                return xp_errorf(err, -errno, "cannot create '%s': %m", o->dir);
        r = ensure_key(o->dir, &key, err);
        if (r < 0)
                return r;
        cert = read_text(o->dir, XP_AGENT_SERVING_CERT);
        why = cert ? cert_unusable(cert, key, o) : NULL;
        if (why)
                xp_log(LOG_INFO,
                       "agent: the serving certificate in %s/" XP_AGENT_SERVING_CERT
                       " is not used: %s",
                       o->dir,
                       why);
        if (!cert || why) {
                free(cert);
                cert = NULL;
                r = ask(client, key, o, &cert, err);
                if (r >= 0)
                        r = write_text(o->dir, XP_AGENT_SERVING_CERT, cert, 0644, err);
                /* after the certificate: a crash between the two asks again */
                if (r >= 0 && o->ca_pem)
                        r = write_cluster_ca(o, err);
                if (r >= 0)
                        xp_log(
                            LOG_INFO,
                            "agent: new serving certificate for %s and %s in %s/" XP_AGENT_SERVING_CERT,
                            o->node_name,
                            o->address,
                            o->dir);
        }
        if (r < 0) {
                explicit_bzero(key, strlen(key));
                free(key);
                free(cert);
                return r;
        }
        *ret_cert = cert;
        *ret_key = key;
        return 0;
}
