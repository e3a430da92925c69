/* SPDX-License-Identifier: Apache-2.0 */
/* Service account tokens: ES256 JSON Web Tokens (satoken.h). */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "satoken.h"
#include "xpool/atomic_file.h"
#include "xpool/base64.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/tls_key.h"

#define COORD_LEN 32 /* a P-256 coordinate: r and s of a signature */
#define KEY_MAX   (16 * 1024)

struct satoken_key {
        gnutls_privkey_t priv;
        gnutls_pubkey_t pub;
        char kid[64]; /* base64url of the SHA-256 of the public key, as Kubernetes' key id */
        char *header; /* the JOSE header's part, the same in every token: made once (key_id) */
};

void satoken_key_free(struct satoken_key *key)
{
        if (!key)
                return;
        if (key->priv)
                gnutls_privkey_deinit(key->priv);
        if (key->pub)
                gnutls_pubkey_deinit(key->pub);
        free(key->header);
        free(key);
}

/* ---- base64url without padding (RFC 7515) ---------------------------------------------------- */

static char *b64url_encode(const void *data, size_t len)
{
        char *text = NULL;
        size_t n;

        if (xp_base64_encode(data, len, &text) < 0)
                return NULL;
        for (char *p = text; *p; p++)
                *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
        n = strlen(text);
        while (n > 0 && text[n - 1] == '=')
                text[--n] = '\0';
        return text;
}

static int b64url_decode(const char *text, size_t len, char **ret, size_t *ret_len)
{
        char *std = malloc(len + 4);
        size_t n = 0;
        int r;

        if (!std)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                char c = text[i];

                if (c == '+' || c == '/' || c == '=') {
                        free(std);
                        return -EINVAL;
                }
                std[n++] = c == '-' ? '+' : c == '_' ? '/' : c;
        }
        while (n % 4)
                std[n++] = '=';
        r = xp_base64_decode(std, n, ret, ret_len);
        free(std);
        return r;
}

bool satoken_looks_like_jwt(const char *text, size_t len)
{
        size_t dots = 0;

        if (len < 5 || strncmp(text, "eyJ", 3) != 0)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = text[i];

                if (c == '.')
                        dots++;
                else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_'))
                        return false;
        }
        return dots == 2;
}

/* ---- the key --------------------------------------------------------------------------------- */

static int make_key_file(const char *path, struct xp_error *err)
{
        gnutls_datum_t pem = {0};
        int r = xp_tls_new_p256_pem(&pem);

        if (r < 0)
                return xp_errorf(err,
                                 r == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL,
                                 "cannot make the service account key '%s': %s",
                                 path,
                                 gnutls_strerror(r));
        r = xp_write_file_atomic(path, pem.data, pem.size, 0600, err);
        gnutls_memset(pem.data, 0, pem.size);
        gnutls_free(pem.data);
        return r;
}

/* A JSON value as a part of a token: base64url of its compact text, keys sorted. */
static char *json_part(const json_t *value)
{
        char *text = json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS);
        char *part = text ? b64url_encode(text, strlen(text)) : NULL;

        free(text);
        return part;
}

/* The key's id and with it the header of its tokens. */
static int key_id(struct satoken_key *key)
{
        unsigned char id[32];
        size_t id_len = sizeof(id);
        json_t *header;
        char *text;
        int r = gnutls_pubkey_get_key_id(key->pub, GNUTLS_KEYID_USE_SHA256, id, &id_len);

        if (r < 0)
                return -EINVAL;
        text = b64url_encode(id, id_len);
        if (!text)
                return -ENOMEM;
        snprintf(key->kid, sizeof(key->kid), "%s", text);
        free(text);
        header = json_pack("{s:s, s:s}", "alg", "ES256", "kid", key->kid);
        key->header = header ? json_part(header) : NULL;
        json_decref(header);
        return key->header ? 0 : -ENOMEM;
}

static int import_key(struct satoken_key *key, const char *text, size_t size)
{
        gnutls_datum_t d = {.data = (unsigned char *)text, .size = (unsigned)size};
        int r;

        if ((r = gnutls_privkey_init(&key->priv)) < 0 ||
            (r = gnutls_privkey_import_x509_raw(key->priv, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0 ||
            (r = gnutls_pubkey_init(&key->pub)) < 0 ||
            (r = gnutls_pubkey_import_privkey(key->pub, key->priv, 0, 0)) < 0)
                return r;
        if (gnutls_privkey_get_pk_algorithm(key->priv, NULL) != GNUTLS_PK_ECDSA)
                return GNUTLS_E_UNKNOWN_PK_ALGORITHM;
        return 0;
}

int satoken_key_open(const char *path, struct satoken_key **ret, struct xp_error *err)
{
        struct satoken_key *key = calloc(1, sizeof(*key));
        char *text = NULL;
        size_t size = 0;
        struct stat st;
        int fd, r;

        if (!key)
                return -ENOMEM;
        r = stat(path, &st) < 0 && errno == ENOENT ? make_key_file(path, err) : 0;
        fd = r < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (r >= 0 && fd < 0)
                r = xp_errorf(err, -errno, "cannot open the service account key '%s'", path);
        if (fd >= 0) {
                r = xp_read_fd_all(fd, KEY_MAX, &text, &size);
                close(fd);
                if (r < 0)
                        r = xp_errorf(err, r, "cannot read the service account key '%s'", path);
        }
        if (r >= 0 && import_key(key, text, size) < 0)
                r = xp_errorf(
                    err, -EINVAL, "'%s' is not an unencrypted PEM ECDSA P-256 private key", path);
        if (r >= 0)
                r = key_id(key);
        if (text) {
                explicit_bzero(text, size);
                free(text);
        }
        if (r < 0) {
                satoken_key_free(key);
                return r;
        }
        *ret = key;
        return 0;
}

/* ---- signing --------------------------------------------------------------------------------- */

/* A coordinate as JWS writes it: big-endian, exactly COORD_LEN bytes (DER may add a zero byte
 * or drop leading ones). */
static int put_coord(unsigned char out[static COORD_LEN], const gnutls_datum_t *v)
{
        const unsigned char *p = v->data;
        size_t n = v->size;

        while (n > COORD_LEN && *p == 0) {
                p++;
                n--;
        }
        if (n > COORD_LEN)
                return -EINVAL;
        memset(out, 0, COORD_LEN - n);
        memcpy(out + COORD_LEN - n, p, n);
        return 0;
}

int satoken_sign(const struct satoken_key *key, const json_t *claims, char **ret)
{
        char *body = json_part(claims), *input = NULL;
        char *sig_text = NULL;
        gnutls_datum_t data, der = {0}, r_value = {0}, s_value = {0};
        unsigned char raw[2 * COORD_LEN];
        int r = -ENOMEM;

        if (!body || asprintf(&input, "%s.%s", key->header, body) < 0) {
                input = NULL;
                goto out;
        }
        data = (gnutls_datum_t){.data = (unsigned char *)input, .size = (unsigned)strlen(input)};
        r = gnutls_privkey_sign_data2(key->priv, GNUTLS_SIGN_ECDSA_SHA256, 0, &data, &der) < 0 ||
                    gnutls_decode_rs_value(&der, &r_value, &s_value) < 0 ||
                    put_coord(raw, &r_value) < 0 || put_coord(raw + COORD_LEN, &s_value) < 0
                ? -EINVAL
                : 0;
        if (r >= 0) {
                sig_text = b64url_encode(raw, sizeof(raw));
                r = sig_text && asprintf(ret, "%s.%s", input, sig_text) >= 0 ? 0 : -ENOMEM;
        }
out:
        gnutls_free(der.data);
        gnutls_free(r_value.data);
        gnutls_free(s_value.data);
        free(body);
        free(input);
        free(sig_text);
        return r;
}

/* ---- verifying ------------------------------------------------------------------------------- */

/* The JSON object a part of the token holds, or NULL. */
static json_t *json_of_part(const char *part, size_t len)
{
        char *text = NULL;
        size_t n = 0;
        json_t *value;

        if (b64url_decode(part, len, &text, &n) < 0)
                return NULL;
        value = json_loadb(text, n, JSON_REJECT_DUPLICATES, NULL);
        free(text);
        if (!json_is_object(value)) {
                json_decref(value);
                return NULL;
        }
        return value;
}

static bool signature_holds(const struct satoken_key *key,
                            const char *token,
                            size_t signed_len,
                            const char *sig,
                            size_t sig_len)
{
        char *raw = NULL;
        size_t n = 0;
        gnutls_datum_t data = {.data = (unsigned char *)token, .size = (unsigned)signed_len};
        gnutls_datum_t der = {0}, r_value, s_value;
        bool ok = false;

        if (b64url_decode(sig, sig_len, &raw, &n) < 0 || n != 2 * COORD_LEN)
                goto out;
        r_value = (gnutls_datum_t){.data = (unsigned char *)raw, .size = COORD_LEN};
        s_value = (gnutls_datum_t){.data = (unsigned char *)raw + COORD_LEN, .size = COORD_LEN};
        if (gnutls_encode_rs_value(&der, &r_value, &s_value) < 0)
                goto out;
        ok = gnutls_pubkey_verify_data2(key->pub, GNUTLS_SIGN_ECDSA_SHA256, 0, &data, &der) >= 0;
out:
        gnutls_free(der.data);
        free(raw);
        return ok;
}

static bool has_audience(const json_t *aud, const char *want)
{
        size_t i;
        json_t *a;

        if (json_is_string(aud))
                return xp_streq0(json_string_value(aud), want);
        json_array_foreach(aud, i, a)
        {
                if (xp_streq0(json_string_value(a), want))
                        return true;
        }
        return false;
}

/* The claims' issuer, audience and times: 0, or -EACCES with err. */
static int check_claims(const json_t *claims, int64_t now, struct xp_error *err)
{
        const json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");

        if (!xp_streq0(json_string_value(json_object_get(claims, "iss")), SATOKEN_ISSUER))
                return xp_errorf(err, -EACCES, "the service account token has another issuer");
        if (!has_audience(json_object_get(claims, "aud"), SATOKEN_ISSUER))
                return xp_errorf(
                    err, -EACCES, "the service account token is not for this server (audience)");
        if (!json_is_integer(exp) || now >= json_integer_value(exp))
                return xp_errorf(err, -EACCES, "the service account token has expired");
        if (json_is_integer(nbf) && now < json_integer_value(nbf))
                return xp_errorf(err, -EACCES, "the service account token is not valid yet");
        return 0;
}

int satoken_verify(const struct satoken_key *key,
                   const char *token,
                   size_t len,
                   int64_t now,
                   json_t **ret_claims,
                   struct xp_error *err)
{
        const char *dot1 = memchr(token, '.', len), *dot2;
        json_t *header = NULL, *claims = NULL;
        int r = -EACCES;

        if (len > SATOKEN_MAX || !satoken_looks_like_jwt(token, len) || !dot1)
                return xp_errorf(err, -EACCES, "malformed service account token");
        dot2 = memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token));
        header = json_of_part(token, (size_t)(dot1 - token));
        if (!header || !xp_streq0(json_string_value(json_object_get(header, "alg")), "ES256")) {
                r = xp_errorf(err, -EACCES, "malformed service account token (header)");
                goto out;
        }
        if (!signature_holds(
                key, token, (size_t)(dot2 - token), dot2 + 1, len - (size_t)(dot2 + 1 - token))) {
                r = xp_errorf(err, -EACCES, "the service account token's signature is invalid");
                goto out;
        }
        claims = json_of_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
        if (!claims) {
                r = xp_errorf(err, -EACCES, "malformed service account token (claims)");
                goto out;
        }
        r = check_claims(claims, now, err);
        if (r >= 0)
                *ret_claims = json_incref(claims);
out:
        json_decref(header);
        json_decref(claims);
        return r;
}
