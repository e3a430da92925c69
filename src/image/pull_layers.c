/* SPDX-License-Identifier: Apache-2.0 */
/* The rest of a pull: the config, the layers (downloaded straight into their unpacking), the
 * blobs kept and the image recorded. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pull.h"
#include "remote.h"

static void progress(struct xp_pull *p,
                     const char *what,
                     const char *digest,
                     uint64_t done,
                     uint64_t total,
                     bool shared)
{
        struct xp_image_progress pr = {
            .reference = p->canonical,
            .what = what,
            .digest = digest,
            .done = done,
            .total = total,
            .shared = shared,
        };

        if (p->o->progress)
                p->o->progress(&pr, p->o->userdata);
}

static int pull_config(struct xp_pull *p, struct xp_error *err)
{
        const struct xp_image_desc *d = &p->manifest.config;
        struct xp_image_remote_blob b = {0};
        int r;

        r = xp_store_blob_get(
            p->s, d->digest, XP_IMAGE_CONFIG_MAX, &p->config_data, &p->config_size, NULL);
        if (r < 0) {
                progress(p, "config", d->digest, 0, (uint64_t)d->size, false);
                r = xp_image_remote_fetch(
                    p->reg, "blobs", d->digest, NULL, XP_IMAGE_CONFIG_MAX, &b, err);
                if (r >= 0)
                        r = xp_image_digest_check(
                            b.data, b.size, d->digest, "the image config", err);
                if (r >= 0) {
                        p->config_data = TAKE_PTR(b.data);
                        p->config_size = b.size;
                }
                xp_image_remote_blob_done(&b);
                if (r < 0)
                        return r;
        }
        r = xp_image_config_parse(
            p->config_data, p->config_size, &p->config, &p->diff_ids, &p->n_diff_ids, err);
        if (r < 0)
                return xp_error_prefix(err, r, "the image config %s", d->digest);
        r = xp_image_platform_check(&p->config, &p->platform, err);
        if (r < 0)
                return r;
        if (p->n_diff_ids != p->manifest.n_layers)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "the manifest has %zu layers and the config %zu diff_ids",
                                 p->manifest.n_layers,
                                 p->n_diff_ids);
        return 0;
}

/* The download half of a layer: the registry's answer into a socket the unpacking reads. */
struct download {
        struct xp_image_remote *reg;
        const char *digest;
        int fd;
        int result;
        uint64_t bytes;
        struct xp_error err;
};

static void *download_thread(void *userdata)
{
        struct download *d = userdata;

        d->result = xp_image_remote_stream(d->reg, d->digest, d->fd, &d->bytes, &d->err);
        /* the end of the stream for the unpacking */
        close(d->fd);
        return NULL;
}

struct layer_fill {
        struct xp_pull *p;
        size_t i;
};

static int
fill_from_registry(int fs_fd, struct xp_image_unpacked *ret, void *userdata, struct xp_error *err)
{
        struct layer_fill *f = userdata;
        struct download d = {.reg = f->p->reg, .digest = f->p->manifest.layers[f->i].digest};
        int sv[2], r;
        pthread_t thread;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return xp_errorf(err, -errno, "socketpair: %m");
        d.fd = sv[1];
        r = -pthread_create(&thread, NULL, download_thread, &d);
        if (r < 0) {
                close(sv[0]);
                close(sv[1]);
                return xp_errorf(err, r, "starting the download: %s", strerror(-r));
        }
        r = xp_image_unpack(sv[0], fs_fd, f->p->untrusted, f->p->o->cancel, ret, err);
        /* a download still sending (the unpacking failed) stops on EPIPE */
        close(sv[0]);
        pthread_join(thread, NULL);
        /* the download's failure explains a truncated stream better than the tar error, unless
         * it failed because the unpacking stopped reading */
        if (d.result < 0 && !(r < 0 && (d.result == -EPIPE || d.result == -ECONNRESET))) {
                if (err)
                        *err = d.err;
                return d.result;
        }
        return r < 0 ? xp_error_prefix(err, r, "layer %s", d.digest) : 0;
}

static int pull_layers(struct xp_pull *p, struct xp_error *err)
{
        for (size_t i = 0; i < p->manifest.n_layers; i++) {
                const struct xp_image_desc *d = &p->manifest.layers[i];
                struct layer_fill f = {.p = p, .i = i};
                uint64_t size = 0;
                bool shared = false;
                int r;

                progress(p, "layer", d->digest, 0, (uint64_t)d->size, false);
                r = xp_store_layer_ensure(p->s,
                                          p->diff_ids[i],
                                          d->digest,
                                          p->untrusted,
                                          p->o->cancel,
                                          fill_from_registry,
                                          &f,
                                          &shared,
                                          &size,
                                          err);
                if (r < 0)
                        return r;
                p->size += size;
                progress(p, "layer", d->digest, (uint64_t)d->size, (uint64_t)d->size, shared);
        }
        return 0;
}

static int record(struct xp_pull *p, struct xp_image **ret, struct xp_error *err)
{
        _cleanup_free_ char *repo = xp_image_ref_repository(&p->ref), *by_digest = NULL,
                            *tagged = NULL;
        const char *names[2];
        size_t n = 0;
        int r;

        if (!repo || asprintf(&by_digest, "%s@%s", repo, p->top_digest) < 0)
                return -ENOMEM;
        if (p->ref.tag && asprintf(&tagged, "%s:%s", repo, p->ref.tag) < 0)
                return -ENOMEM;
        if (tagged)
                names[n++] = tagged;
        names[n++] = by_digest;
        if ((r = xp_store_blob_put(p->s, p->top_digest, p->top_data, p->top_size, err)) < 0 ||
            (p->manifest_data &&
             (r = xp_store_blob_put(
                  p->s, p->manifest_digest, p->manifest_data, p->manifest_size, err)) < 0) ||
            (r = xp_store_blob_put(
                 p->s, p->manifest.config.digest, p->config_data, p->config_size, err)) < 0)
                return r;
        return xp_store_record(p->s,
                               &(struct xp_store_record){
                                   .id = p->manifest.config.digest,
                                   .digest = p->top_digest,
                                   .manifest = p->manifest_digest,
                                   .names = names,
                                   .n_names = n,
                                   .diff_ids = p->diff_ids,
                                   .n_layers = p->n_diff_ids,
                                   .size = p->size,
                                   .untrusted = p->untrusted,
                               },
                               ret,
                               err);
}

static int pull(struct xp_pull *p, struct xp_image **ret, struct xp_error *err)
{
        const struct xp_regconf_host *h;
        const char *platform = p->o->platform;
        int r;

        r = xp_image_ref_parse(p->canonical, &p->ref, err);
        if (r < 0)
                return r;
        free(p->canonical);
        p->canonical = xp_image_ref_format(&p->ref);
        if (!p->canonical)
                return -ENOMEM;
        if (platform) {
                r = xp_image_platform_parse(platform, &p->platform, err);
                if (r < 0)
                        return r;
        } else {
                p->platform = p->s->platform;
        }
        h = xp_regconf_find(p->s->conf, p->ref.domain);
        p->untrusted = p->o->untrusted || (h && h->untrusted);
        if ((r = xp_pull_gather_creds(p, err)) < 0 || (r = xp_pull_manifest(p, err)) < 0 ||
            (r = pull_config(p, err)) < 0 || (r = pull_layers(p, err)) < 0)
                return r;
        r = record(p, ret, err);
        if (r >= 0)
                progress(p, "done", p->top_digest, p->size, p->size, false);
        return r;
}

int xp_image_pull(struct xp_image_store *s,
                  const char *reference,
                  const struct xp_image_pull_options *opts,
                  struct xp_image **ret,
                  struct xp_error *err)
{
        const struct xp_image_pull_options none = {0};
        struct xp_pull p = {.s = s, .o = opts ? opts : &none};
        _cleanup_close_ int lock = -1;
        int r;

        if (!reference)
                return xp_errorf(err, -EINVAL, "no image to pull");
        p.canonical = strdup(reference);
        if (!p.canonical)
                return -ENOMEM;
        /* shared: a prune waits until the pull is over */
        lock = xp_store_lock(s, false, false);
        if (lock < 0) {
                free(p.canonical);
                return xp_errorf(err, lock, "the image store's lock: %s", strerror(-lock));
        }
        r = pull(&p, ret, err);
        if (r < 0 && p.ref.domain && r != -EINVAL)
                xp_error_prefix(err, r, "pulling %s", p.canonical);
        xp_pull_done(&p);
        return r;
}
