/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one kind of private key xpool makes (the CA's, the API server's, the service account
 * signer's, the agents' serving keys): ECDSA on P-256, small and fast to sign with, which every
 * TLS client and JWT verifier of the Kubernetes era accepts (ES256).
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/* A new P-256 key (caller deinits): 0 or a GnuTLS error code (< 0). */
int xp_tls_new_p256(gnutls_x509_privkey_t *ret);
/* A new P-256 key as unencrypted PKCS#8 PEM in *ret_pem (caller wipes it, gnutls_memset, and
 * frees it, gnutls_free): 0 or a GnuTLS error code (< 0). */
int xp_tls_new_p256_pem(gnutls_datum_t *ret_pem);
