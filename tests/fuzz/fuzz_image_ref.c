/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes image references (xp_image_ref_parse()) and WWW-Authenticate challenges. For every
 * reference that parses: its canonical form parses again to the same parts and formats the same
 * (normalization is idempotent), the domain and path are non-empty, a tag or a digest is set,
 * and the default pull policy is one of Kubernetes' two. A failure sets the error message.
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

static bool same(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        struct xp_image_ref ref = {0}, again = {0};
        struct xp_image_challenge ch;
        struct xp_error err = {0};

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        if (xp_image_ref_parse(text, &ref, &err) >= 0) {
                char *canon = xp_image_ref_format(&ref), *canon2;
                const char *policy = xp_image_default_pull_policy(text);

                check(canon && ref.domain[0] && ref.path[0] && (ref.tag || ref.digest));
                check(xp_image_ref_parse(canon, &again, NULL) >= 0);
                check(same(ref.domain, again.domain) && same(ref.path, again.path) &&
                      same(ref.tag, again.tag) && same(ref.digest, again.digest));
                canon2 = xp_image_ref_format(&again);
                check(canon2 && strcmp(canon, canon2) == 0);
                check(strcmp(policy, "Always") == 0 || strcmp(policy, "IfNotPresent") == 0);
                free(canon);
                free(canon2);
                xp_image_ref_done(&again);
                xp_image_ref_done(&ref);
        } else {
                check(err.code < 0 && err.msg[0]);
        }
        if (xp_image_challenge_parse(text, &ch) >= 0)
                xp_image_challenge_done(&ch);
        free(text);
        return 0;
}
