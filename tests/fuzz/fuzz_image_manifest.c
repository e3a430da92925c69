/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what registries and tarballs hand the image store: manifests and indexes
 * (xp_image_manifest_parse(), then platform selection over an index), image configs
 * (xp_image_config_parse()), the registries file (xp_regconf_parse()) and credentials
 * (xp_image_auth_lookup()). Whatever parses holds only valid digests and bounded counts; a
 * selected index entry is in range; every failure sets its message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void manifest(const char *text, size_t size)
{
        struct xp_image_manifest m;
        struct xp_image_platform p;
        struct xp_error err = {0};
        size_t i = SIZE_MAX;

        if (xp_image_manifest_parse(text, size, NULL, &m, &err) < 0) {
                check(err.code < 0 && err.msg[0]);
                return;
        }
        check(m.media_type && xp_image_media_is_manifest(m.media_type));
        if (m.index) {
                check(m.n_manifests <= XP_IMAGE_INDEX_MAX);
                for (size_t k = 0; k < m.n_manifests; k++)
                        check(xp_image_digest_ok(m.manifests[k].digest) &&
                              m.manifests[k].size >= 0);
                check(xp_image_platform_parse("linux/amd64", &p, NULL) == 0);
                if (xp_image_platform_select(&m, &p, &i, NULL) == 0)
                        check(i < m.n_manifests);
        } else {
                check(xp_image_digest_ok(m.config.digest) && m.n_layers <= XP_IMAGE_LAYERS_MAX);
                for (size_t k = 0; k < m.n_layers; k++)
                        check(xp_image_digest_ok(m.layers[k].digest));
        }
        xp_image_manifest_done(&m);
}

static void config(const char *text, size_t size)
{
        struct xp_image_config c;
        struct xp_error err = {0};
        char **ids = NULL;
        size_t n = 0;

        if (xp_image_config_parse(text, size, &c, &ids, &n, &err) < 0) {
                check(err.code < 0 && err.msg[0]);
                return;
        }
        check(n <= XP_IMAGE_LAYERS_MAX && xp_image_strv_length(ids) == n);
        for (size_t k = 0; k < n; k++)
                check(xp_image_digest_ok(ids[k]));
        xp_image_strv_free(ids);
        xp_image_config_done(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        struct xp_regconf *rc = NULL;
        struct xp_image_cred cred = {0};

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        manifest(text, size);
        config(text, size);
        if (xp_regconf_parse(text, size, "fuzz", &rc, NULL) >= 0) {
                check(rc->connect_ms > 0 && rc->stall_ms > 0);
                (void)xp_regconf_find(rc, "docker.io");
                xp_regconf_free(rc);
        }
        if (xp_image_auth_lookup(text, size, "docker.io", "library/busybox", &cred, NULL) > 0)
                check(cred.username && cred.password);
        xp_image_cred_done(&cred);
        free(text);
        return 0;
}
