/* SPDX-License-Identifier: Apache-2.0 */
/* ECDSA P-256 keys (include/http/xpool/tls_key.h), made in one place for every user. */
#include "xpool/tls_key.h"

int xp_tls_new_p256(gnutls_x509_privkey_t *ret)
{
        gnutls_x509_privkey_t key = NULL;
        int r = gnutls_x509_privkey_init(&key);

        if (r >= 0)
                r = gnutls_x509_privkey_generate(
                    key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
        if (r < 0) {
                if (key)
                        gnutls_x509_privkey_deinit(key);
                return r;
        }
        *ret = key;
        return 0;
}

int xp_tls_new_p256_pem(gnutls_datum_t *ret_pem)
{
        gnutls_x509_privkey_t key = NULL;
        int r = xp_tls_new_p256(&key);

        if (r < 0)
                return r;
        r = gnutls_x509_privkey_export2_pkcs8(
            key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, ret_pem);
        gnutls_x509_privkey_deinit(key);
        return r;
}
