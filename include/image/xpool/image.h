/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node's image store (src/image/, docs/images.md): container images resolved by reference as
 * container engines resolve them, pulled over the OCI distribution API (v2) or imported from an
 * OCI layout or docker-archive tarball, every blob checked against its digest, each layer
 * unpacked once into a content-addressed directory that an overlay mount can use as a lower
 * layer as it is (whiteouts as overlayfs writes them).
 *
 * The store is a directory (the agent's DATA/images, XP_DATADIR_IMAGES) shared by every process
 * that opens it: the agent, `xpool image`, a runtime. Processes coordinate through file locks, so
 * a layer that two pulls need is fetched and unpacked once, by whichever comes first, and the
 * other waits for it. What is in the store is complete: downloads and unpacks happen in tmp/ and
 * are renamed into place once verified; tmp/ is emptied at open of whatever a killed process
 * left there.
 *
 * Lifecycle: xp_image_store_open() ... xp_image_store_free(). A store handle may be used by
 * several threads at once. Images (struct xp_image) are snapshots owned by the caller.
 *
 * Errors: -errno with err saying what and where, e.g.
 *   -EINVAL      a reference that does not parse
 *   -ENOENT      no such image in the store; the registry has no such repository, tag or digest
 *   -EACCES      the registry refused the credentials (401/403)
 *   -EBADMSG     a manifest, index or config that is malformed or of an unsupported kind
 *   -EILSEQ      a blob whose content does not match its digest
 *   -EPERM       a hostile layer: a path leaving the layer root, a device node in an untrusted
 *                image
 *   -ENOEXEC     no manifest for the platform asked for
 *   -ETIMEDOUT   the registry did not answer in time (or stalled)
 *   -ECONNREFUSED, -EHOSTUNREACH, -EPROTO (TLS)  the registry could not be reached
 *   -EIO         the registry answered an error (5xx, ...), or a read/write failed
 *   -EBUSY       removing an image that is held (in use)
 *   -ECANCELED   the pull's cancel flag was set
 *   -ENOSPC, -ENOMEM
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"

/* ---- references (src/image/ref.c) ------------------------------------------------------------ */

#define XP_IMAGE_DEFAULT_DOMAIN "docker.io"
#define XP_IMAGE_DEFAULT_TAG    "latest"
#define XP_IMAGE_REF_MAX        1024 /* longest reference text taken */

/*
 * A reference, normalized as Docker and containerd normalize it:
 *   busybox                        docker.io/library/busybox:latest
 *   user/app:1.2                   docker.io/user/app:1.2
 *   registry.example:5000/app      registry.example:5000/app:latest
 *   localhost/app@sha256:<hex>     localhost/app@sha256:<hex> (no tag)
 * The first component is a registry when it holds a '.' or a ':', or is "localhost" (or has
 * an upper-case letter, as in Docker); "index.docker.io" is docker.io.
 */
struct xp_image_ref {
        char *domain; /* "docker.io", "registry.example:5000", "[::1]:5000", "localhost" */
        char *path;   /* the repository in the registry: "library/busybox" */
        char *tag;    /* NULL only when a digest is given without a tag */
        char *digest; /* "sha256:<64 lower-case hex>", or NULL */
};

/*
 * Parses text (at most XP_IMAGE_REF_MAX bytes) into *ret (caller clears with
 * xp_image_ref_done()). -EINVAL with err saying what is wrong (an upper-case repository, a bad
 * tag, a digest that is not sha256:<64 hex>, ...); -ENOMEM. *ret untouched on failure.
 */
int xp_image_ref_parse(const char *text, struct xp_image_ref *ret, struct xp_error *err);
void xp_image_ref_done(struct xp_image_ref *ref);

/* "domain/path[:tag][@digest]" (caller frees); NULL when out of memory. */
char *xp_image_ref_format(const struct xp_image_ref *ref);

/* "domain/path" (caller frees); NULL when out of memory. */
char *xp_image_ref_repository(const struct xp_image_ref *ref);

/*
 * Kubernetes' default imagePullPolicy for a container's image text: "Always" when it names no
 * tag and no digest or the tag "latest", else "IfNotPresent". An unparsable text: "IfNotPresent"
 * (the pull then says what is wrong).
 */
const char *xp_image_default_pull_policy(const char *text);

/* ---- platforms --------------------------------------------------------------------------------
 */

/* "os/architecture[/variant]" as OCI names them: "linux/amd64", "linux/arm64/v8", "linux/arm/v7".
 */
#define XP_IMAGE_PLATFORM_MAX 64

/* This machine's platform (uname, GOARCH spelling), e.g. "linux/amd64". Static storage. */
const char *xp_image_platform_host(void);

/* ---- the image config (what a runtime starts from) --------------------------------------------
 */

/* The parts of an image's config (the OCI image spec's "config" object) a runtime needs. Every
 * array is NULL-terminated, or NULL when the image does not set it. */
struct xp_image_config {
        char **entrypoint;    /* Entrypoint */
        char **cmd;           /* Cmd */
        char **env;           /* Env: "NAME=value" */
        char *working_dir;    /* WorkingDir; NULL: unset (the runtime's default is "/") */
        char *user;           /* User: "uid", "uid:gid", "name", "name:group"; NULL: unset */
        char **exposed_ports; /* ExposedPorts keys: "80/tcp", "53/udp" */
        char **volumes;       /* Volumes keys: "/data" */
        char **labels;        /* Labels: "key=value" */
        char *stop_signal;    /* StopSignal, NULL: unset */
        char *os, *architecture, *variant; /* the image's platform (variant may be NULL) */
};

/* ---- images -----------------------------------------------------------------------------------
 */

/* One image in the store: a snapshot, owned by the caller (xp_image_free()). */
struct xp_image {
        char *id;     /* the config's digest, "sha256:<hex>": the image ID, as Docker's */
        char *digest; /* the manifest's digest: NAME@digest pulls exactly this image */
        char **names; /* NULL-terminated canonical references naming it: its tags first, then
                         repo@digest ones; empty (not NULL) when only its ID names it */
        struct xp_image_config config;
        size_t n_layers;
        char **layers;    /* n_layers absolute paths of the unpacked layers, bottom first: an
                             overlay's lowerdir is them in reverse order, ':'-joined */
        char **diff_ids;  /* n_layers "sha256:<hex>": each layer's uncompressed digest */
        uint64_t size;    /* bytes the layers hold unpacked (the Node's sizeBytes) */
        int64_t pulled_s; /* when it was pulled or imported, unix seconds */
        bool untrusted;   /* unpacked as untrusted (see xp_image_pull_options) */
};
void xp_image_free(struct xp_image *img);
XP_DEFINE_FREEP(struct xp_image, xp_image_free)
void xp_image_list_free(struct xp_image **images, size_t n);

/*
 * The overlay lowerdir of img: its layers top first, ':'-joined (caller frees). Relative to the
 * store's layer directory when relative is true (for a mount made after chdir() to
 * xp_image_store_layers_dir(), which keeps a deep image within the one-page limit of mount
 * options, as containerd does). NULL when out of memory.
 */
char *xp_image_lowerdir(const struct xp_image *img, bool relative);

/*
 * The imageID the kubelet reports for a container started from img by reference (the container's
 * image, as written): "REPO@sha256:<manifest digest>" of reference's repository when img is known
 * by it, else its first repo@digest name, else its ID "sha256:<config digest>" (an image imported
 * without a repository digest). Caller frees; NULL when out of memory.
 */
char *xp_image_status_id(const struct xp_image *img, const char *reference);

/*
 * The image the kubelet (with containerd) reports for a container started from img by reference:
 * the reference fully qualified ("busybox" is "docker.io/library/busybox:latest") when img is
 * known by that name, else the first tagged name img is known by, else the reference fully
 * qualified ("REPO@sha256:<digest>" of an untagged pull by digest). Caller frees; NULL when out
 * of memory.
 */
char *xp_image_status_ref(const struct xp_image *img, const char *reference);

/* ---- the store --------------------------------------------------------------------------------
 */

/* Defaults of the files below: used when they exist, ignored when they do not. */
#define XP_IMAGE_REGISTRIES_DEFAULT "/etc/xpool/registries.yaml"
#define XP_IMAGE_AUTH_DEFAULT       "/etc/xpool/auth.json"

struct xp_image_store_config {
        /* per-registry settings (mirrors, plain HTTP, CA files, trust, timeouts), YAML as
         * docs/images.md says; NULL: XP_IMAGE_REGISTRIES_DEFAULT when it exists */
        const char *registries_file;
        /* the node's credentials, Docker's config.json format ("auths"); NULL:
         * XP_IMAGE_AUTH_DEFAULT when it exists */
        const char *auth_file;
        const char *platform; /* what pulls select from an index; NULL: xp_image_platform_host() */
};

struct xp_image_store;

/*
 * Opens (creating, mode 0700, with missing parents) the store in dir, reads the registry
 * settings and credentials, and empties tmp/ of what a killed pull or import left. config may be
 * NULL (the defaults). A registries file or credentials file that does not parse fails the open
 * with its place (`registries.yaml:4:7: mirrors."docker.io".endpoint: ...`). Caller frees *ret
 * with xp_image_store_free().
 */
int xp_image_store_open(const char *dir,
                        const struct xp_image_store_config *config,
                        struct xp_image_store **ret,
                        struct xp_error *err);
void xp_image_store_free(struct xp_image_store *s);
XP_DEFINE_FREEP(struct xp_image_store, xp_image_store_free)

/* The directory the store's layers are in (borrowed from s): see xp_image_lowerdir(). */
const char *xp_image_store_layers_dir(const struct xp_image_store *s);

/*
 * The image text names, when the store has it: a reference (normalized: "busybox" finds
 * docker.io/library/busybox:latest), NAME@digest, the full ID "sha256:<hex>" or a unique prefix
 * of at least 12 hex digits of it. -ENOENT when absent; -EINVAL for text that is none of these.
 */
int xp_image_get(struct xp_image_store *s,
                 const char *text,
                 struct xp_image **ret,
                 struct xp_error *err);

/* Every image, newest first. Caller frees with xp_image_list_free(). */
int xp_image_list(struct xp_image_store *s,
                  struct xp_image ***ret,
                  size_t *ret_n,
                  struct xp_error *err);

/* ---- pulling (src/image/pull.c) ---------------------------------------------------------------
 */

/* Where a pull stands, for progress reports. Strings borrowed for the call. */
struct xp_image_progress {
        const char *reference; /* canonical */
        const char *what;      /* "manifest", "config", "layer", "unpack", "done" */
        const char *digest;    /* the blob, when what is a blob */
        uint64_t done, total;  /* bytes of the blob (total 0: unknown) */
        bool shared;           /* another pull fetched it: nothing was downloaded */
};
typedef void (*xp_image_progress_fn)(const struct xp_image_progress *p, void *userdata);

struct xp_image_pull_options {
        /* "os/arch[/variant]" to pick from an index; NULL: the store's */
        const char *platform;
        /* Unpack as untrusted: setuid and setgid bits and file capabilities are dropped, a
         * layer holding a device node (other than an overlay whiteout) is refused. Also set
         * for registries the registries file marks untrusted. */
        bool untrusted;
        /* Credentials tried before the node's credentials file, in order: Docker config.json
         * texts ({"auths": {...}}) or .dockercfg texts ({"HOST": {"auth": ...}}), as
         * kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg Secrets hold them. */
        const char *const *docker_configs;
        size_t n_docker_configs;
        const atomic_bool *cancel; /* NULL: not cancellable */
        xp_image_progress_fn progress;
        void *userdata;
};

/*
 * Pulls reference from its registry (through its mirrors first, as the registries file says):
 * the manifest (an index or manifest list resolved to the platform), the config and every layer
 * the store does not have yet, each checked against its digest before use, then names the image
 * by reference (and repo@digest). A name that named another image before now names this one.
 * opts may be NULL. Caller frees *ret (ret may be NULL). On failure the store is as it was,
 * apart from layers that were complete (kept for the next try).
 */
int xp_image_pull(struct xp_image_store *s,
                  const char *reference,
                  const struct xp_image_pull_options *opts,
                  struct xp_image **ret,
                  struct xp_error *err);

/* ---- importing (src/image/import.c) -----------------------------------------------------------
 */

struct xp_image_import_options {
        const char *platform; /* as for pulls */
        bool untrusted;       /* as for pulls */
        /* the repository for images the tarball names by tag only (an OCI layout's
         * org.opencontainers.image.ref.name "latest"), or that it does not name */
        const char *name;
};

/*
 * Loads the images of an OCI image layout tarball (oci-layout, index.json, blobs/) or a
 * docker-archive tarball (`docker save`, `skopeo copy ... docker-archive:`: manifest.json), with
 * the same checks as a pull (every blob against its digest, every layer's diff_id), and names
 * them as the tarball does. Caller frees *ret with xp_image_list_free() (ret may be NULL).
 * -EBADMSG (err naming the member) for a tarball that is neither or is damaged.
 */
int xp_image_import(struct xp_image_store *s,
                    const char *file,
                    const struct xp_image_import_options *opts,
                    struct xp_image ***ret,
                    size_t *ret_n,
                    struct xp_error *err);

/* ---- in use, removal (src/image/store.c) ------------------------------------------------------
 */

/*
 * Holds the image with ID image_id (its "sha256:<hex>") for holder (a name of the caller's
 * choosing, e.g. a container's id: [A-Za-z0-9._-], at most 200 bytes): neither remove nor prune
 * takes it while any holder holds it. Durable (a file under holds/): a runtime restarted holds
 * what it held. Holding again under the same holder replaces the hold. -ENOENT when the store
 * has no such image.
 */
int xp_image_hold(struct xp_image_store *s,
                  const char *image_id,
                  const char *holder,
                  struct xp_error *err);
/* The same, with what the holder is in words for the user ("pod default/web, container app",
 * one line): what rm's refusal names instead of the holder (NULL: the holder). */
int xp_image_hold_for(struct xp_image_store *s,
                      const char *image_id,
                      const char *holder,
                      const char *what,
                      struct xp_error *err);

/* Drops holder's hold. 0 also when it held nothing. */
int xp_image_release(struct xp_image_store *s, const char *holder, struct xp_error *err);

/*
 * Removes what text names (as xp_image_get()): a name goes, and the image with it once no name
 * is left; an ID removes the image with all its names. Its layers go when no other image uses
 * them. -EBUSY (err naming a holder) while the image is held; -ENOENT.
 */
int xp_image_remove(struct xp_image_store *s, const char *text, struct xp_error *err);

struct xp_image_prune_result {
        size_t images; /* images removed */
        size_t layers; /* unpacked layers removed */
        size_t blobs;  /* manifests, configs, ... removed */
        uint64_t bytes;
};

/*
 * Removes what no image uses (layers and blobs left by removals or failed pulls) and, with all,
 * every image that is not held. Pulls in progress are waited for.
 */
int xp_image_prune(struct xp_image_store *s,
                   bool all,
                   struct xp_image_prune_result *ret,
                   struct xp_error *err);

/* Image garbage collection, as the kubelet's image manager (docs/images.md). */
struct xp_image_gc_options {
        uint64_t want_bytes; /* stop once this much is freed; UINT64_MAX: every image that may go */
        int64_t min_age_s;   /* an image pulled less than this ago stays (the kubelet's
                                --minimum-image-ttl-duration) */
        int64_t now_s;       /* 0: the clock's */
        bool nonblock;       /* -EAGAIN instead of waiting for pulls under way */
        /* the images the node's containers still use, running or not (the kubelet counts every
         * container the runtime has): names or IDs as xp_image_get() takes them; kept as held
         * ones are */
        const char *const *in_use;
        size_t n_in_use;
};
struct xp_image_gc_result {
        size_t eligible; /* images that could go: not held, old enough */
        size_t images;   /* images removed */
        uint64_t bytes;  /* bytes their layers and blobs gave back */
};
/*
 * Removes images no container holds, the least recently used first (the last hold taken or
 * given back; an image never held first), until want_bytes are freed or none is left to take;
 * their layers and blobs go when no image left uses them. 0 also when short of want_bytes
 * (ret->bytes says what went), -EAGAIN (nonblock, a pull under way), -errno.
 */
int xp_image_gc(struct xp_image_store *s,
                const struct xp_image_gc_options *o,
                struct xp_image_gc_result *ret,
                struct xp_error *err);
