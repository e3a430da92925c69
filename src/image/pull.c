/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pulling an image: the manifest from the first endpoint that has it (the registry's mirrors,
 * then the registry), an index resolved to the platform, the config, then each layer the store
 * lacks streamed straight into its unpacking (a thread downloads into a socket, this one
 * unpacks from it), every blob checked against its digest before the store takes it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pull.h"
#include "remote.h"

#define ACCEPT_MANIFESTS                                                                           \
        XP_MT_OCI_INDEX ", " XP_MT_OCI_MANIFEST ", " XP_MT_DOCKER_LIST ", " XP_MT_DOCKER_MANIFEST

void xp_pull_done(struct xp_pull *p)
{
        xp_image_ref_done(&p->ref);
        free(p->canonical);
        for (size_t i = 0; i < p->n_creds; i++)
                xp_image_cred_done(&p->creds[i]);
        free(p->creds);
        xp_image_remote_free(p->reg);
        free(p->top_digest);
        free(p->manifest_digest);
        free(p->top_data);
        free(p->manifest_data);
        free(p->config_data);
        xp_image_manifest_done(&p->manifest);
        xp_image_config_done(&p->config);
        xp_image_strv_free(p->diff_ids);
}

static int
add_cred(struct xp_pull *p, const char *text, size_t size, const char *where, struct xp_error *err)
{
        struct xp_image_cred c = {0}, *grown;
        int r;

        r = xp_image_auth_lookup(text, size, p->ref.domain, p->ref.path, &c, err);
        if (r <= 0)
                return r < 0 ? xp_error_prefix(err, r, "%s", where) : 0;
        grown = realloc(p->creds, (p->n_creds + 1) * sizeof(*grown));
        if (!grown) {
                xp_image_cred_done(&c);
                return -ENOMEM;
        }
        p->creds = grown;
        p->creds[p->n_creds++] = c;
        return 0;
}

/* The candidate credentials, in order: the pod's pull secrets, the registries file's auth,
 * the node's credentials file. */
int xp_pull_gather_creds(struct xp_pull *p, struct xp_error *err)
{
        const struct xp_regconf_host *h = xp_regconf_find(p->s->conf, p->ref.domain);
        int r;

        for (size_t i = 0; i < p->o->n_docker_configs; i++) {
                const char *t = p->o->docker_configs[i];
                char where[64];

                snprintf(where, sizeof(where), "imagePullSecrets[%zu]", i);
                if (t && (r = add_cred(p, t, strlen(t), where, err)) < 0)
                        return r;
        }
        if (h && (h->username || h->auth)) {
                _cleanup_free_ char *text = NULL;
                json_auto_t *j = json_pack("{s:{s:{s:s?, s:s?, s:s?}}}",
                                           "auths",
                                           p->ref.domain,
                                           "username",
                                           h->username,
                                           "password",
                                           h->password,
                                           "auth",
                                           h->auth);

                text = j ? json_dumps(j, 0) : NULL;
                if (!text)
                        return -ENOMEM;
                if ((r = add_cred(p, text, strlen(text), "the registries file's auth", err)) < 0)
                        return r;
        }
        if (p->s->auth_text &&
            (r = add_cred(p, p->s->auth_text, p->s->auth_size, "the credentials file", err)) < 0)
                return r;
        return 0;
}

/* The manifest by reference from the endpoint base: 0 with p->reg set, or -errno. */
static int try_endpoint(struct xp_pull *p,
                        const char *base,
                        struct xp_image_remote_blob *ret,
                        struct xp_error *err)
{
        const char *host = strstr(base, "://") + 3;
        char host_buf[512];
        struct xp_image_remote_opts o = {
            .base = base,
            .host = host_buf,
            .repo = p->ref.path,
            .conf = p->s->conf,
            .creds = p->creds,
            .n_creds = p->n_creds,
            .cancel = p->o->cancel,
        };
        struct xp_image_remote *reg = NULL;
        int r;

        snprintf(host_buf, sizeof(host_buf), "%.*s", (int)strcspn(host, "/"), host);
        r = xp_image_remote_new(&o, &reg, err);
        if (r < 0)
                return r;
        r = xp_image_remote_fetch(reg,
                                  "manifests",
                                  p->ref.digest ? p->ref.digest : p->ref.tag,
                                  ACCEPT_MANIFESTS,
                                  XP_IMAGE_MANIFEST_MAX,
                                  ret,
                                  err);
        if (r < 0) {
                xp_image_remote_free(reg);
                return r;
        }
        p->reg = reg;
        return 0;
}

/* The registry's mirrors, then the registry itself. */
static int fetch_top(struct xp_pull *p, struct xp_image_remote_blob *ret, struct xp_error *err)
{
        const struct xp_regconf_host *h = xp_regconf_find(p->s->conf, p->ref.domain);
        const char *host = strcmp(p->ref.domain, XP_IMAGE_DEFAULT_DOMAIN) == 0
                               ? "registry-1.docker.io"
                               : p->ref.domain;
        _cleanup_free_ char *own = NULL, *mirror_said = NULL;
        struct xp_error mine = {0};
        int r = -ENOENT;

        for (char **m = h ? h->mirrors : NULL; m && *m; m++) {
                xp_error_clear(&mine);
                r = try_endpoint(p, *m, ret, &mine);
                if (r >= 0 || r == -ECANCELED) {
                        if (r < 0 && err)
                                *err = mine;
                        return r;
                }
                /* the last mirror's word: the registry's own failure alone (no route to
                 * docker.io on an offline node) would hide why the mirror did not serve it */
                free(mirror_said);
                if (asprintf(&mirror_said, "%s", xp_error_message(&mine)) < 0)
                        mirror_said = NULL;
        }
        if (asprintf(&own, "%s://%s", h && h->plain_http ? "http" : "https", host) < 0)
                return -ENOMEM;
        xp_error_clear(&mine);
        r = try_endpoint(p, own, ret, &mine);
        if (r >= 0 || r == -ECANCELED || !mirror_said)
                return r < 0 && err ? (*err = mine, r) : r;
        return xp_errorf(
            err, r, "%s; before it, the mirror: %s", xp_error_message(&mine), mirror_said);
}

/* The digest of what the registry served, checked against what was asked and what it said. */
static int check_manifest(const struct xp_image_remote_blob *b,
                          const char *want,
                          const char *what,
                          char **ret,
                          struct xp_error *err)
{
        char got[XP_IMAGE_DIGEST_BUFSIZE];
        int r;

        r = xp_sha256_digest(b->data, b->size, got);
        if (r < 0)
                return r;
        if (want && strcmp(got, want) != 0)
                return xp_errorf(err,
                                 -EILSEQ,
                                 "%s does not match its digest: expected %s, got %s",
                                 what,
                                 want,
                                 got);
        if (b->digest && xp_image_digest_ok(b->digest) && strcmp(b->digest, got) != 0)
                return xp_errorf(
                    err,
                    -EILSEQ,
                    "%s does not match the digest the registry gives for it (Docker-Content-Digest %s, got %s)",
                    what,
                    b->digest,
                    got);
        *ret = strdup(got);
        return *ret ? 0 : -ENOMEM;
}

/* The platform's manifest when the top one is an index. */
static int resolve_index(struct xp_pull *p, struct xp_error *err)
{
        struct xp_image_remote_blob b = {0};
        const struct xp_image_desc *d;
        size_t i = 0;
        int r;

        r = xp_image_platform_select(&p->manifest, &p->platform, &i, err);
        if (r < 0)
                return r;
        d = &p->manifest.manifests[i];
        r = xp_image_remote_fetch(
            p->reg, "manifests", d->digest, ACCEPT_MANIFESTS, XP_IMAGE_MANIFEST_MAX, &b, err);
        if (r >= 0)
                r = check_manifest(
                    &b, d->digest, "the platform's manifest", &p->manifest_digest, err);
        if (r >= 0) {
                xp_image_manifest_done(&p->manifest);
                r = xp_image_manifest_parse(b.data,
                                            b.size,
                                            b.content_type ? b.content_type : d->media_type,
                                            &p->manifest,
                                            err);
                if (r < 0)
                        xp_error_prefix(err, r, "the manifest %s", d->digest);
                else if (p->manifest.index)
                        r = xp_errorf(
                            err,
                            -EBADMSG,
                            "the manifest %s for %s is an index again: nested indexes are not followed",
                            d->digest,
                            d->architecture ? d->architecture : "the platform");
        }
        if (r >= 0) {
                p->manifest_data = TAKE_PTR(b.data);
                p->manifest_size = b.size;
        }
        xp_image_remote_blob_done(&b);
        return r;
}

int xp_pull_manifest(struct xp_pull *p, struct xp_error *err)
{
        struct xp_image_remote_blob b = {0};
        int r;

        r = fetch_top(p, &b, err);
        if (r >= 0)
                r = check_manifest(&b, p->ref.digest, "the manifest", &p->top_digest, err);
        if (r >= 0) {
                r = xp_image_manifest_parse(b.data, b.size, b.content_type, &p->manifest, err);
                if (r < 0)
                        xp_error_prefix(err, r, "the manifest of %s", p->canonical);
        }
        if (r >= 0) {
                p->top_data = TAKE_PTR(b.data);
                p->top_size = b.size;
        }
        xp_image_remote_blob_done(&b);
        if (r >= 0 && p->manifest.index)
                return resolve_index(p, err);
        if (r >= 0 && !(p->manifest_digest = strdup(p->top_digest)))
                return -ENOMEM;
        return r;
}
