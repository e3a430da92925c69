/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Platforms: which manifest of an index this node pulls, as containerd's platforms package
 * matches them (normalized architectures, arm64's default variant v8, arm variants that run
 * older ones).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "image_internal.h"

static const struct {
        const char *alias, *arch, *variant;
} arch_aliases[] = {
    {"x86_64", "amd64", ""},
    {"x86-64", "amd64", ""},
    {"aarch64", "arm64", ""},
    {"armhf", "arm", "v7"},
    {"armel", "arm", "v6"},
    {"i386", "386", ""},
    {"i686", "386", ""},
};

static void normalize(struct xp_image_platform *p)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(arch_aliases); i++)
                if (strcmp(p->architecture, arch_aliases[i].alias) == 0) {
                        snprintf(
                            p->architecture, sizeof(p->architecture), "%s", arch_aliases[i].arch);
                        if (!p->variant[0])
                                snprintf(
                                    p->variant, sizeof(p->variant), "%s", arch_aliases[i].variant);
                }
        /* arm64's only variant is its default */
        if (strcmp(p->architecture, "arm64") == 0 && strcmp(p->variant, "v8") == 0)
                p->variant[0] = '\0';
        if (strcmp(p->architecture, "arm") == 0 && !p->variant[0])
                snprintf(p->variant, sizeof(p->variant), "v7");
}

static bool part_ok(const char *s, size_t n)
{
        if (n == 0 || n >= 16)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
                      s[i] == '-'))
                        return false;
        return true;
}

int xp_image_platform_parse(const char *text, struct xp_image_platform *ret, struct xp_error *err)
{
        struct xp_image_platform p = {0};
        const char *a = text ? strchr(text, '/') : NULL, *v = a ? strchr(a + 1, '/') : NULL;
        size_t n_os = a ? (size_t)(a - text) : 0, n_arch, n_var = 0;

        if (!a)
                return xp_errorf(err,
                                 -EINVAL,
                                 "platform \"%s\": must be os/architecture[/variant]",
                                 text ? text : "");
        n_arch = v ? (size_t)(v - a - 1) : strlen(a + 1);
        if (v)
                n_var = strlen(v + 1);
        if (!part_ok(text, n_os) || !part_ok(a + 1, n_arch) || (v && !part_ok(v + 1, n_var)))
                return xp_errorf(err,
                                 -EINVAL,
                                 "platform \"%s\": must be os/architecture[/variant] in lower case",
                                 text);
        memcpy(p.os, text, n_os);
        memcpy(p.architecture, a + 1, n_arch);
        if (v)
                memcpy(p.variant, v + 1, n_var);
        normalize(&p);
        *ret = p;
        return 0;
}

const char *xp_image_platform_host(void)
{
        static char text[XP_IMAGE_PLATFORM_MAX];
        struct xp_image_platform p = {.os = "linux"};
        struct utsname u;

        if (text[0])
                return text;
        if (uname(&u) < 0)
                snprintf(p.architecture, sizeof(p.architecture), "amd64");
        else
                snprintf(p.architecture, sizeof(p.architecture), "%.15s", u.machine);
        normalize(&p);
        /* armv7l and friends */
        if (strncmp(p.architecture, "armv", 4) == 0) {
                snprintf(p.variant, sizeof(p.variant), "v%c", p.architecture[4]);
                snprintf(p.architecture, sizeof(p.architecture), "arm");
        }
        snprintf(text,
                 sizeof(text),
                 "%s/%s%s%s",
                 p.os,
                 p.architecture,
                 p.variant[0] ? "/" : "",
                 p.variant);
        return text;
}

/* How well an entry's platform fits want: 0 not at all, higher better. */
static int
score(const char *os, const char *arch, const char *variant, const struct xp_image_platform *want)
{
        struct xp_image_platform p = {0};

        if (!os || !arch)
                return 0;
        snprintf(p.os, sizeof(p.os), "%s", os);
        snprintf(p.architecture, sizeof(p.architecture), "%s", arch);
        snprintf(p.variant, sizeof(p.variant), "%s", variant ? variant : "");
        normalize(&p);
        if (strcmp(p.os, want->os) != 0 || strcmp(p.architecture, want->architecture) != 0)
                return 0;
        if (strcmp(p.variant, want->variant) == 0)
                return 100;
        if (!p.variant[0])
                return 50;
        /* arm v7 runs v6 and v5: the closest lower variant */
        if (strcmp(p.architecture, "arm") == 0 && p.variant[0] == 'v' && want->variant[0] == 'v' &&
            p.variant[1] < want->variant[1])
                return 10 + (p.variant[1] - '0');
        return 0;
}

int xp_image_platform_select(const struct xp_image_manifest *index,
                             const struct xp_image_platform *want,
                             size_t *ret,
                             struct xp_error *err)
{
        char have[512] = "";
        size_t len = 0;
        int best = 0;

        for (size_t i = 0; i < index->n_manifests; i++) {
                const struct xp_image_desc *d = &index->manifests[i];
                int s = score(d->os, d->architecture, d->variant, want);

                if (s > best && xp_image_media_is_manifest(d->media_type ? d->media_type
                                                                         : XP_MT_OCI_MANIFEST)) {
                        best = s;
                        *ret = i;
                }
                if (d->os && d->architecture && len < sizeof(have) - 1)
                        len += (size_t)snprintf(have + len,
                                                sizeof(have) - len,
                                                "%s%s/%s%s%s",
                                                len ? ", " : "",
                                                d->os,
                                                d->architecture,
                                                d->variant ? "/" : "",
                                                d->variant ? d->variant : "");
        }
        if (best > 0)
                return 0;
        return xp_errorf(err,
                         -ENOEXEC,
                         "no image for %s/%s%s%s in the index (it has: %s)",
                         want->os,
                         want->architecture,
                         want->variant[0] ? "/" : "",
                         want->variant,
                         have[0] ? have : "no platforms");
}

int xp_image_platform_check(const struct xp_image_config *config,
                            const struct xp_image_platform *want,
                            struct xp_error *err)
{
        /* a config without a platform (some builders leave it out) is taken as it is */
        if (!config->os || !config->architecture)
                return 0;
        if (score(config->os, config->architecture, config->variant, want) > 0)
                return 0;
        return xp_errorf(err,
                         -ENOEXEC,
                         "the image is for %s/%s%s%s, this node is %s/%s%s%s",
                         config->os,
                         config->architecture,
                         config->variant ? "/" : "",
                         config->variant ? config->variant : "",
                         want->os,
                         want->architecture,
                         want->variant[0] ? "/" : "",
                         want->variant);
}
