/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubeconfig.h"
#include "xpool/atomic_file.h"
#include "xpool/macro.h"
#include "xpool/yaml.h"

/* Standard base64 with padding (RFC 4648 section 4), as client-go decodes it. */
static char *base64(const char *data, size_t len)
{
        static const char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const unsigned char *p = (const unsigned char *)data;
        char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;

                if (i + 1 < len)
                        v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
                *o++ = i + 2 < len ? alphabet[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

int kubeconfig_write(const char *path,
                     const char *server_url,
                     const char *ca_pem,
                     const char *token,
                     const char *user,
                     struct xp_error *err)
{
        _cleanup_(json_decrefp) json_t *config = NULL;
        _cleanup_free_ char *ca_data = NULL, *text = NULL;
        json_t *cluster;
        size_t len;
        int r;

        if (!server_url || !server_url[0] || !token || !token[0] || !user || !user[0])
                return xp_errorf(
                    err,
                    -EINVAL,
                    "kubeconfig '%s': the server URL, token and user must not be empty",
                    path);
        cluster = json_pack("{s:s}", "server", server_url);
        if (!cluster)
                return -ENOMEM;
        if (ca_pem) {
                ca_data = base64(ca_pem, strlen(ca_pem));
                if (!ca_data || json_object_set_new(cluster,
                                                    "certificate-authority-data",
                                                    json_string(ca_data)) < 0) {
                        json_decref(cluster);
                        return -ENOMEM;
                }
        }
        config = json_pack(
            "{s:s, s:s, s:[{s:s, s:o}], s:[{s:s, s:{s:s}}], s:[{s:s, s:{s:s, s:s, s:s}}], s:s, s:{}}",
            "apiVersion",
            "v1",
            "kind",
            "Config",
            "clusters",
            "name",
            "xpool",
            "cluster",
            cluster,
            "users",
            "name",
            user,
            "user",
            "token",
            token,
            "contexts",
            "name",
            "xpool",
            "context",
            "cluster",
            "xpool",
            "user",
            user,
            "namespace",
            "default",
            "current-context",
            "xpool",
            "preferences");
        if (!config) /* json_pack() released cluster ("o" steals it, also on failure) */
                return xp_errorf(err, -EINVAL, "kubeconfig '%s': a value is not valid UTF-8", path);
        r = xp_yaml_dump(config, &text, &len);
        if (r < 0)
                return xp_errorf(
                    err, r, "kubeconfig '%s': cannot write YAML: %s", path, strerror(-r));
        return xp_write_file_atomic(path, text, len, 0600, err);
}
