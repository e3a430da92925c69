/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes of any kind: a create with what the server owns in its metadata, what an update keeps
 * of it, and the read-modify-write loop that redoes a write that lost a race.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/codec.h"
#include "xpool/object.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define GENERATE_ATTEMPTS 8
#define CHANGE_ATTEMPTS   8

static int replace_string(char **field, const char *value)
{
        char *copy = NULL;

        if (value) {
                copy = strdup(value);
                if (!copy)
                        return -ENOMEM;
        }
        free(*field);
        *field = copy;
        return 0;
}

static int generate_name(char **name, const char *prefix)
{
        free(*name);
        *name = NULL;
        return xp_registry_generate_name(prefix ? prefix : "", name);
}

/* The metadata a new object gets from the server, whatever its author wrote. */
static int set_owned(struct xp_object_meta *meta, bool generated)
{
        char uid[XP_REGISTRY_UID_STRING];
        int r;

        /* validation already required name or generateName */
        r = generated ? generate_name(&meta->name, meta->generate_name) : 0;
        if (r >= 0)
                r = xp_registry_uid(uid);
        if (r >= 0)
                r = replace_string(&meta->uid, uid);
        if (r >= 0)
                r = replace_string(&meta->resource_version, NULL); /* the store sets it */
        meta->creation_timestamp = time(NULL);
        meta->deletion_timestamp = 0;
        return r;
}

/*
 * The names a create writes under: *name, or with prefix (generateName; NULL when the author named
 * the object) another when a generated one is taken. Held by the model, or by the create alone
 * once it has freed the model.
 */
struct create_names {
        char **name;
        const char *prefix;
};

/* Writes out; a generated name that is taken gets another, as Kubernetes retries it. */
static int create_named(struct xp_registry *registry,
                        const struct xp_kind *kind,
                        const char *ns,
                        const struct create_names *names,
                        json_t *out,
                        char **ret_text,
                        struct xp_error *err)
{
        int r;

        for (unsigned attempt = 0;; attempt++) {
                /* an answer as text leaves the object to nobody but the store's readers */
                struct xp_store_written written = {.want_text = ret_text != NULL,
                                                   .share = ret_text != NULL};

                r = xp_store_create_text(
                    registry->store, kind->plural, ns, *names->name, out, &written, err);
                if (r >= 0 && ret_text)
                        *ret_text = written.text;
                if (r != -EEXIST || !names->prefix || attempt == GENERATE_ATTEMPTS)
                        return r;
                r = generate_name(names->name, names->prefix);
                if (r < 0)
                        return r;
                if (json_object_set_new(
                        json_object_get(out, "metadata"), "name", json_string(*names->name)) < 0)
                        return -ENOMEM;
        }
}

/* The metadata the server owns and the kind's defaults set on object, which is then encoded. */
static int encode_new(const struct xp_kind *kind, void *object, bool generated, json_t **ret_out)
{
        struct xp_object_meta *meta = kind->meta(object);
        int r = set_owned(meta, generated);

        if (kind->status_subresource)
                meta->generation = 1; /* generation.c: one more per change of the spec */
        if (r >= 0 && kind->set_defaults)
                r = kind->set_defaults(object);
        if (r >= 0)
                r = kind->to_json(object, ret_out);
        return r;
}

/* out admitted and, unless dry, written: 1, 0 when admission refused it, or -errno. */
static int admit_and_write(struct xp_registry *registry,
                           const struct xp_kind *kind,
                           const char *ns,
                           const struct create_names *names,
                           json_t *out,
                           const struct xp_registry_admit *admit,
                           bool dry,
                           char **ret_text,
                           struct xp_error *err)
{
        /* the check and the write as one where a quota counts what is written (quota_lock); a
         * pod's check charges its quotas at once instead, so its commit runs outside the lock */
        bool pod = strcmp(kind->plural, "pods") == 0;
        bool quota_held = !pod && admit && ns && ns[0] && registry_quotas_present(registry, ns);
        struct quota_charge charge = {0}, *outer = registry_quota_charge;
        int r;

        if (quota_held)
                pthread_mutex_lock(&registry->quota_lock);
        registry_quota_charge = pod && !dry ? &charge : NULL;
        r = admit ? admit->check(admit->userdata, out) : 1;
        registry_quota_charge = outer;
        if (r > 0 && !dry && (r = create_named(registry, kind, ns, names, out, ret_text, err)) >= 0)
                r = 1;
        registry_quota_charge_settle(registry, &charge);
        if (quota_held)
                pthread_mutex_unlock(&registry->quota_lock);
        return r;
}

/*
 * A create; with ret_name, *object is taken once encoded: freed while its blocks are still in the
 * cache from the encode, not after the commit's wait (the write needs no more of it than its
 * names), and *ret_name gets the name.
 */
static int create_object(struct xp_registry *registry,
                         const struct xp_kind *kind,
                         const char *ns,
                         void **object,
                         const struct xp_registry_admit *admit,
                         bool dry,
                         json_t **ret_json,
                         char **ret_text,
                         char **ret_name,
                         struct xp_error *err)
{
        struct xp_object_meta *meta = kind->meta(*object);
        bool generated = !meta->name || !meta->name[0];
        struct create_names names = {.name = &meta->name};
        char *name = NULL, *prefix = NULL;
        json_t *out = NULL;
        int r;

        r = encode_new(kind, *object, generated, &out);
        /* The notes of a create's body (xp_codec_body_begin()) served this encode: dropped now,
         * the stored tree's containers hold their tree's reference only, and the store's writer
         * takes none of them for a shared tree to look up (compact.c's put_shared()). */
        xp_codec_body_end();
        if (r >= 0 && ret_name) {
                name = TAKE_PTR(meta->name);
                prefix = TAKE_PTR(meta->generate_name);
                kind->free(TAKE_PTR(*object));
                names.name = &name;
        }
        names.prefix = !generated ? NULL : ret_name ? prefix : meta->generate_name;
        if (r >= 0)
                r = admit_and_write(registry, kind, ns, &names, out, admit, dry, ret_text, err);
        if (r > 0 && strcmp(kind->plural, "namespaces") == 0 && !dry)
                xp_registry_namespace_created(registry, *names.name);
        if (ret_name)
                *ret_name = TAKE_PTR(name);
        free(prefix);
        if (r <= 0) {
                json_decref(out);
                return r;
        }
        *ret_json = out;
        return 1;
}

int xp_registry_create(struct xp_registry *registry,
                       const struct xp_kind *kind,
                       const char *ns,
                       void *object,
                       const struct xp_registry_admit *admit,
                       bool dry,
                       json_t **ret_json,
                       struct xp_error *err)
{
        return create_object(registry, kind, ns, &object, admit, dry, ret_json, NULL, NULL, err);
}

int xp_registry_create_text(struct xp_registry *registry,
                            const struct xp_kind *kind,
                            const char *ns,
                            void **object,
                            const struct xp_registry_admit *admit,
                            bool dry,
                            json_t **ret_json,
                            char **ret_text,
                            char **ret_name,
                            struct xp_error *err)
{
        *ret_text = NULL;
        *ret_name = NULL;
        return create_object(
            registry, kind, ns, object, admit, dry, ret_json, ret_text, ret_name, err);
}

int xp_registry_keep_owned(struct xp_object_meta *meta, const json_t *stored, struct xp_error *err)
{
        const json_t *stored_meta = json_object_get(stored, "metadata");
        const char *uid = json_string_value(json_object_get(stored_meta, "uid"));
        const char *created = json_string_value(json_object_get(stored_meta, "creationTimestamp"));
        const char *deleted = json_string_value(json_object_get(stored_meta, "deletionTimestamp"));
        const json_t *grace = json_object_get(stored_meta, "deletionGracePeriodSeconds");

        if (meta->uid && meta->uid[0] && !xp_streq0(meta->uid, uid))
                return xp_errorf(
                    err,
                    -ECANCELED,
                    "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                    meta->uid,
                    uid ? uid : "");
        if (replace_string(&meta->uid, uid) < 0 ||
            replace_string(&meta->resource_version, NULL) < 0)
                return -ENOMEM;
        if (!created || xp_time_parse_rfc3339(created, &meta->creation_timestamp) < 0)
                meta->creation_timestamp = 0;
        if (!deleted || xp_time_parse_rfc3339(deleted, &meta->deletion_timestamp) < 0)
                meta->deletion_timestamp = 0;
        meta->deletion_grace_period_seconds = (struct xp_opt_int64){
            .set = json_is_integer(grace),
            .value = json_is_integer(grace) ? json_integer_value(grace) : 0,
        };
        return 0;
}

int xp_registry_change(struct xp_registry *registry,
                       const char *resource,
                       const char *ns,
                       const char *name,
                       xp_registry_change_fn fn,
                       void *userdata,
                       json_t **ret_object,
                       struct xp_error *err)
{
        int r = -ESTALE;

        for (unsigned attempt = 0; attempt < CHANGE_ATTEMPTS && r == -ESTALE; attempt++) {
                json_t *object;
                uint64_t version;

                r = xp_store_get(registry->store, resource, ns, name, &object, &version, err);
                if (r < 0)
                        break;
                r = fn(object, userdata);
                if (r > 0) {
                        r = xp_store_update(
                            registry->store, resource, ns, name, version, object, &version, err);
                        r = r < 0 ? r : 1;
                }
                if (r >= 0 && ret_object)
                        *ret_object = json_incref(object);
                json_decref(object);
        }
        return r;
}
