/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_kubeconfig_parse() (and through it the YAML loader and xp_base64_decode()). The
 * first byte picks the context: odd asks for the context named "xpool", even for the file's
 * current-context. Checks the contract: success gives a server and a CA length that matches
 * its NUL-terminated data; failure is a negative code with a message, the output untouched.
 * Then base64-decodes the rest directly and checks the size bound.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/base64.h"
#include "xpool/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_kubeconfig config = {.server = NULL};
        struct xp_error err = {0};
        const char *text = (const char *)data + 1;
        char *decoded = NULL;
        size_t len = 0;
        int r;

        if (size < 1)
                return 0;
        r = xp_kubeconfig_parse(
            text, size - 1, "fuzz", (data[0] & 1) ? "xpool" : NULL, &config, &err);
        if (r == 0) {
                check(config.server && config.context);
                check(!config.ca_data || strlen(config.ca_data) <= config.ca_len);
                xp_kubeconfig_done(&config);
        } else {
                check(r < 0 && err.msg[0] != '\0');
                check(config.server == NULL);
        }
        r = xp_base64_decode(text, size - 1, &decoded, &len);
        if (r == 0) {
                check(len <= (size - 1) / 4 * 3 + 2 && decoded[len] == '\0');
                free(decoded);
        } else {
                check(r == -EINVAL && decoded == NULL);
        }
        return 0;
}
