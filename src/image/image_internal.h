/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the image store's files share: digests (digest.c), manifests, indexes and configs
 * (manifest.c, config.c: pure, fuzzed), platforms (platform.c), layer unpacking (unpack.c), the
 * registry settings and credentials (regconf.c, auth.c), the registry client (remote.c) and
 * the store's directory (store.c, blobs.c).
 */

#include <gnutls/crypto.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/image.h"
#include "xpool/map.h"

/* Bounds on what registries and tarballs hand us. */
#define XP_IMAGE_MANIFEST_MAX   (4u * 1024 * 1024) /* a manifest or index, as containerd */
#define XP_IMAGE_CONFIG_MAX     (8u * 1024 * 1024) /* an image config */
#define XP_IMAGE_LAYERS_MAX     128                /* layers of one image (overlay's limit) */
#define XP_IMAGE_INDEX_MAX      1024               /* entries of one index */
#define XP_IMAGE_CONFIG_ITEMS   4096               /* entries of Env, Cmd, Labels, ... */
#define XP_IMAGE_DIGEST_LEN     (7 + 64)           /* "sha256:" + hex */
#define XP_IMAGE_DIGEST_BUFSIZE (XP_IMAGE_DIGEST_LEN + 1)

/* Media types. */
#define XP_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define XP_MT_DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
#define XP_MT_DOCKER_CONFIG   "application/vnd.docker.container.image.v1+json"
#define XP_MT_OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define XP_MT_OCI_INDEX       "application/vnd.oci.image.index.v1+json"
#define XP_MT_OCI_CONFIG      "application/vnd.oci.image.config.v1+json"
#define XP_MT_OCI_LAYER_TAR   "application/vnd.oci.image.layer.v1.tar"

/* ---- digest.c ---------------------------------------------------------------------------------
 */

/* Whether s is "sha256:<64 lower-case hex>". */
bool xp_image_digest_ok(const char *s);

struct xp_sha256 {
        gnutls_hash_hd_t h;
};
int xp_sha256_init(struct xp_sha256 *s);
void xp_sha256_update(struct xp_sha256 *s, const void *data, size_t size);
/* Writes "sha256:<hex>" into out and releases the state. */
void xp_sha256_final(struct xp_sha256 *s, char out[static XP_IMAGE_DIGEST_BUFSIZE]);
/* The digest of data[0..size). */
int xp_sha256_digest(const void *data, size_t size, char out[static XP_IMAGE_DIGEST_BUFSIZE]);
/*
 * Checks data against digest: 0, or -EILSEQ with err saying what (what names the blob:
 * "the manifest", "layer 2").
 */
int xp_image_digest_check(
    const void *data, size_t size, const char *digest, const char *what, struct xp_error *err);

/* ---- manifest.c -------------------------------------------------------------------------------
 */

/* A descriptor (OCI image spec): what a manifest or index points to. */
struct xp_image_desc {
        char *media_type;
        char *digest;
        int64_t size;
        char *os, *architecture, *variant; /* index entries' platform; NULL when absent */
};

/* A manifest or an index (manifest list). */
struct xp_image_manifest {
        bool index;       /* an index: manifests is set; otherwise config and layers */
        char *media_type; /* the document's own (or the one it was served as) */
        struct xp_image_desc config;
        struct xp_image_desc *layers;
        size_t n_layers;
        struct xp_image_desc *manifests;
        size_t n_manifests;
};

/*
 * Decodes a manifest or an index. content_type (may be NULL) is the type the registry served it
 * as, used when the document names none. -EBADMSG with err saying what is wrong (JSON,
 * schemaVersion, Docker schema 1, an unknown media type, a descriptor without a valid digest or
 * size, too many layers or entries, a layer of a type that is not a filesystem layer, a config
 * that is not an image config); -ENOMEM.
 */
int xp_image_manifest_parse(const char *data,
                            size_t size,
                            const char *content_type,
                            struct xp_image_manifest *ret,
                            struct xp_error *err);
void xp_image_manifest_done(struct xp_image_manifest *m);

/* Whether media_type names a manifest or an index a registry may serve. */
bool xp_image_media_is_manifest(const char *media_type);

/* ---- platform.c -------------------------------------------------------------------------------
 */

struct xp_image_platform {
        char os[16], architecture[16], variant[16]; /* variant "" when none */
};

/* Parses and normalizes "os/arch[/variant]" (x86_64 is amd64, aarch64 arm64, arm64's v8 is
 * its default). -EINVAL with err. */
int xp_image_platform_parse(const char *text, struct xp_image_platform *ret, struct xp_error *err);

/*
 * The index entry to pull for want: same os and architecture, the closest variant (the same,
 * none, or for arm a lower one). -ENOEXEC with err listing what the index has when none fits.
 */
int xp_image_platform_select(const struct xp_image_manifest *index,
                             const struct xp_image_platform *want,
                             size_t *ret,
                             struct xp_error *err);

/* Whether an image config's platform can run on want (-ENOEXEC with err when it cannot). */
int xp_image_platform_check(const struct xp_image_config *config,
                            const struct xp_image_platform *want,
                            struct xp_error *err);

/* ---- config.c ---------------------------------------------------------------------------------
 */

/*
 * Decodes an image config: its runtime part into *ret (caller clears with
 * xp_image_config_done()) and rootfs.diff_ids into *ret_diff_ids (NULL-terminated, caller frees
 * with xp_image_strv_free(); *ret_n of them). -EBADMSG with err naming the field; -ENOMEM.
 */
int xp_image_config_parse(const char *data,
                          size_t size,
                          struct xp_image_config *ret,
                          char ***ret_diff_ids,
                          size_t *ret_n,
                          struct xp_error *err);
void xp_image_config_done(struct xp_image_config *c);

/* JSON text of at most max bytes, duplicate keys refused: -EBADMSG with err ("not JSON: line 1
 * column 5: ..."). */
int xp_image_json_load(
    const char *data, size_t size, size_t max, json_t **ret, struct xp_error *err);

/* Frees a NULL-terminated string array (NULL is fine). */
void xp_image_strv_free(char **v);
/* A copy of a NULL-terminated array (NULL for NULL); -ENOMEM. */
int xp_image_strv_copy(char *const *v, char ***ret);
size_t xp_image_strv_length(char *const *v);

/* ---- unpack.c, unpack_entry.c -----------------------------------------------------------------
 */

struct xp_image_unpacked {
        char blob_digest[XP_IMAGE_DIGEST_BUFSIZE]; /* of the bytes read (compressed) */
        char diff_id[XP_IMAGE_DIGEST_BUFSIZE];     /* of the tar stream (uncompressed) */
        uint64_t size;                             /* bytes of the regular files */
        uint64_t read;                             /* bytes read from fd */
        unsigned stripped; /* setuid/setgid bits and file capabilities dropped (untrusted) */
};

/*
 * Unpacks a layer (a tar stream, plain, gzip or zstd) read from fd to its end into the empty
 * directory root_fd, as overlayfs wants a lower layer: whiteouts (.wh.NAME) become 0:0
 * character devices, opaque directories (.wh..wh..opq) get trusted.overlay.opaque=y. Nothing is
 * created outside root_fd: entries are resolved with openat2(RESOLVE_BENEATH) and never through
 * a symbolic link that leaves the root; '..' in a name or a hard link's target, and an entry
 * reached through a link out of the root, fail with -EPERM. Untrusted: device nodes fail with
 * -EPERM, setuid/setgid bits and security.capability are dropped. The caller compares the
 * digests with what it expects before using the directory; on failure it removes it.
 * -EBADMSG for a damaged or truncated stream, -ECANCELED when *cancel is set.
 */
int xp_image_unpack(int fd,
                    int root_fd,
                    bool untrusted,
                    const atomic_bool *cancel,
                    struct xp_image_unpacked *ret,
                    struct xp_error *err);

struct archive;
struct archive_entry;

/* unpack_entry.c: one tar entry into root_fd (the data is read from a). */
struct xp_unpack_state {
        int root_fd;
        bool untrusted;
        bool root; /* running as root: owners, device nodes, trusted xattrs */
        uint64_t size;
        unsigned stripped;
};
int xp_unpack_entry(struct xp_unpack_state *st,
                    struct archive *a,
                    struct archive_entry *e,
                    struct xp_error *err);

/* Removes the tree name in dir_fd (a file or a directory with everything below it), never
 * following a symbolic link. 0 also when it does not exist. */
int xp_remove_tree_at(int dir_fd, const char *name);

/* ---- regconf.c: the registries file -----------------------------------------------------------
 */

#define XP_REGCONF_CONNECT_MS 10000 /* connecting to a registry */
#define XP_REGCONF_STALL_MS   30000 /* a transfer without a byte for this long fails */

/* What the file says about one host (a registry or a mirror), "*" for every other. */
struct xp_regconf_host {
        char *host;
        char **mirrors;  /* endpoint URLs tried before the registry itself; NULL: none */
        bool plain_http; /* the registry itself over http:// */
        bool insecure_skip_verify;
        bool untrusted;
        char *ca_file, *cert_file, *key_file;
        char *username, *password, *auth; /* auth: base64 of user:password */
};

struct xp_regconf {
        struct xp_regconf_host *hosts;
        size_t n;
        int64_t connect_ms, stall_ms;
};

/* Parses the file's text; name for messages. -EINVAL with err at the place; -ENOMEM. */
int xp_regconf_parse(
    const char *data, size_t size, const char *name, struct xp_regconf **ret, struct xp_error *err);
/* Reads path: a missing file is an empty configuration unless must_exist. */
int xp_regconf_load(const char *path,
                    bool must_exist,
                    struct xp_regconf **ret,
                    struct xp_error *err);
void xp_regconf_free(struct xp_regconf *c);
/* The settings of host ("registry.example:5000"), else of "*", else NULL. */
const struct xp_regconf_host *xp_regconf_find(const struct xp_regconf *c, const char *host);

/* ---- auth.c: credentials and challenges ------------------------------------------------------ */

struct xp_image_cred {
        char *username, *password;
};
void xp_image_cred_done(struct xp_image_cred *c);

/*
 * The credential for host (a registry "host[:port]") and repo (its repository path) in a Docker
 * config.json text ({"auths": {KEY: {"auth": base64(user:password)} | {"username", "password"}}})
 * or a .dockercfg text ({KEY: {...}}): the longest KEY (scheme, /v1/ and trailing slashes
 * ignored; index.docker.io is docker.io) that is the host or a path prefix of host/repo.
 * 1 with *ret filled (caller clears), 0 when none matches, -EINVAL with err for a text that
 * does not parse.
 */
int xp_image_auth_lookup(const char *text,
                         size_t size,
                         const char *host,
                         const char *repo,
                         struct xp_image_cred *ret,
                         struct xp_error *err);

/* A WWW-Authenticate challenge: Bearer realm="...",service="...",scope="..." or Basic. */
struct xp_image_challenge {
        char scheme[16]; /* "Bearer", "Basic" as sent */
        char *realm, *service, *scope;
};
/* -EINVAL for a header without a scheme; -ENOMEM. Unknown parameters are ignored. */
int xp_image_challenge_parse(const char *header, struct xp_image_challenge *ret);
void xp_image_challenge_done(struct xp_image_challenge *c);

/* ---- store.c, blobs.c, layers.c: the store's directory ----------------------------------------
 */

#include <pthread.h>

struct xp_image_store {
        char *dir, *layers_dir;
        int dir_fd;
        struct xp_regconf *conf;
        char *auth_text; /* the node's credentials file, NULL: none */
        size_t auth_size;
        struct xp_image_platform platform;
};

/* Takes the store's lock (the file "lock"): shared by pulls and imports, exclusive for what
 * deletes content (remove's cleanup, prune). Returns the fd to close, or -errno. nonblock:
 * -EWOULDBLOCK instead of waiting. */
int xp_store_lock(struct xp_image_store *s, bool exclusive, bool nonblock);
/* Marks the image used now (used/HEX's mtime), for image garbage collection's order. */
void xp_store_touch_used(struct xp_image_store *s, const char *image_id);
/* Takes the lock of refs.json (exclusive): the fd, or -errno. */
int xp_store_refs_lock(struct xp_image_store *s);

/* refs.json: {"images": [{"id", "digest", "manifest", "names", "layers", "size", "pulled",
 * "untrusted"}]}; an absent file is an empty store. Caller holds the refs lock. */
int xp_store_refs_load(struct xp_image_store *s, json_t **ret, struct xp_error *err);
int xp_store_refs_save(struct xp_image_store *s, json_t *refs, struct xp_error *err);
/* Takes the refs lock and loads refs.json: the lock's fd (the caller closes it), or -errno. */
int xp_store_refs_open(struct xp_image_store *s, json_t **ret, struct xp_error *err);

/* The record of one image, as pull and import make it. */
struct xp_store_record {
        const char *id, *digest, *manifest; /* config, top-level, platform manifest digests */
        const char *const *names;           /* canonical names: tags and repo@digest ones */
        size_t n_names;
        char *const *diff_ids;
        size_t n_layers;
        uint64_t size;
        bool untrusted;
};
/* Records the image (its names taken from any other image that had them), under the refs lock,
 * and returns it as an xp_image when ret is not NULL. */
int xp_store_record(struct xp_image_store *s,
                    const struct xp_store_record *rec,
                    struct xp_image **ret,
                    struct xp_error *err);

/* A blob (manifest, index, config) into blobs/sha256/, checked against digest first. */
int xp_store_blob_put(struct xp_image_store *s,
                      const char *digest,
                      const void *data,
                      size_t size,
                      struct xp_error *err);
/* A blob of the store, checked against its digest: -ENOENT when absent, -EILSEQ when damaged. */
int xp_store_blob_get(struct xp_image_store *s,
                      const char *digest,
                      size_t max,
                      char **ret,
                      size_t *ret_size,
                      struct xp_error *err);

/* The directory name of a layer in layers/: the diff_id's hex, ".untrusted" appended for an
 * untrusted unpack. buf: at least 80 bytes. */
void xp_store_layer_name(const char *diff_id, bool untrusted, char *buf, size_t size);
/* Whether the layer is in the store, with its size. */
bool xp_store_layer_present(struct xp_image_store *s,
                            const char *diff_id,
                            bool untrusted,
                            uint64_t *ret_size);

/* Fills the empty directory fs_fd with the layer; the result's digests are compared by the
 * caller of xp_store_layer_ensure() through expect. */
typedef int (*xp_store_layer_fill_fn)(int fs_fd,
                                      struct xp_image_unpacked *ret,
                                      void *userdata,
                                      struct xp_error *err);

/*
 * Makes sure layer diff_id is in the store: present, or made by fill into tmp/ and renamed into
 * layers/ once its diff_id (and, when blob_digest is not NULL, the digest of what was read) is
 * what is expected. One process or thread fills a layer at a time (a lock per layer); the others
 * wait (until *cancel) and find it made: *ret_shared true. *ret_size: the layer's size.
 */
int xp_store_layer_ensure(struct xp_image_store *s,
                          const char *diff_id,
                          const char *blob_digest,
                          bool untrusted,
                          const atomic_bool *cancel,
                          xp_store_layer_fill_fn fill,
                          void *userdata,
                          bool *ret_shared,
                          uint64_t *ret_size,
                          struct xp_error *err);

/* Makes a new directory in tmp/ (prefix-XXXXXX): its path in *ret (caller frees). */
int xp_store_tmpdir(struct xp_image_store *s, const char *prefix, char **ret, struct xp_error *err);

/* The image of a refs.json record. */
int xp_store_image_from_record(struct xp_image_store *s,
                               const json_t *rec,
                               struct xp_image **ret,
                               struct xp_error *err);

/* ---- what the records use (gcuse.c) --------------------------------------------------------- */

#define GC_USE_KEY_MAX 100 /* "L" or "B" and a layer's directory or a blob's hex */

/* Every layer directory and blob the records of refs name, with how many name it. */
struct gc_uses {
        struct xp_map map; /* key -> struct gc_use */
        struct gc_use **all;
        size_t n, cap;
};

/* Counts what every record of refs uses. -ENOMEM (u is then empty). */
int gc_uses_count(struct gc_uses *u, const json_t *refs);
/* Whether a record uses the layer directory (layer) or blob hex called name. */
bool gc_uses_has(const struct gc_uses *u, bool layer, const char *name);
typedef void (*gc_gone_fn)(void *cls, bool layer, const char *name);
/* Takes record rec's uses away; gone is called for each name no record uses any more. */
void gc_uses_drop(struct gc_uses *u, const json_t *rec, gc_gone_fn gone, void *cls);
void gc_uses_done(struct gc_uses *u);
/* The bytes of a layer (its size file) or a blob in the store; 0 when it is not there. */
uint64_t xp_store_content_size(struct xp_image_store *s, bool layer, const char *name);
/* The bytes of the layers and blobs no record in uses uses (what xp_store_gc() would take). */
uint64_t xp_store_unused_bytes(struct xp_image_store *s, const struct gc_uses *uses);

/* Removes what no record uses (layers, blobs) and tmp/ leftovers; the caller holds the store's
 * lock exclusively and the refs lock. */
int xp_store_gc(struct xp_image_store *s,
                const json_t *refs,
                struct xp_image_prune_result *res,
                struct xp_error *err);
/* Removes path (a file or a tree) as xp_remove_tree_at() does; errors are ignored. */
void xp_store_remove_path(const char *path);
/* The record of refs text names (xp_image_get()'s rules): 1 with its index and whether the ID
 * named it; -ENOENT (err: no image TEXT in the store), -EINVAL. */
int xp_store_find(
    const json_t *refs, const char *text, size_t *ret_index, bool *ret_by_id, struct xp_error *err);
/* Whether image id is held: 1 with the first holder's name in holder, else 0. */
int xp_store_held(struct xp_image_store *s, const char *id, char *holder, size_t size);
