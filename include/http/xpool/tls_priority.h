/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What xpool's HTTPS servers negotiate (the API server, the agent's endpoint) and what the server
 * asks of agents (a GnuTLS priority string, MHD_OPTION_HTTPS_PRIORITIES): TLS 1.3 and 1.2 only,
 * forward-secret ECDHE key exchange, AEAD ciphers (AES-GCM, ChaCha20-Poly1305), the server's
 * order. TLS 1.0 and 1.1 handshakes fail (RFC 8996). Every client of the Kubernetes era (Go's
 * crypto/tls, OpenSSL 1.1+, GnuTLS 3.6+) speaks it.
 */
#define XP_TLS_PRIORITY                                                                            \
        "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"     \
        "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"
