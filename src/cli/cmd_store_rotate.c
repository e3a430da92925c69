/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool store rotate-key: a new primary key for the Secrets' encryption at rest, every Secret
 * encrypted with it, the old keys retired. Each step is durable before the next begins, and at
 * every point between them each Secret is under a key the file holds:
 *   1. the key file gains the new key as its primary (written atomically, fsync'ed);
 *   2. one store transaction rewrites every Secret row (objects and event log) under it;
 *   3. the key file keeps the primary only.
 * A crash after 1 or 2 leaves both keys: run it again (it adds another key and finishes).
 * XPOOL_TEST_CRASH_ROTATE=1|2 kills the process after that step, for the tests.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xpool/datadir.h"
#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/storekeys.h"

XP_DEFINE_FREEP(struct xp_store, xp_store_close)

static void crash_point(int step)
{
        const char *at = getenv("XPOOL_TEST_CRASH_ROTATE");

        if (at && atoi(at) == step) {
                fflush(stdout);
                raise(SIGKILL);
        }
}

static int fail(int r, const struct xp_error *err)
{
        fprintf(stderr,
                "xpool store rotate-key: %s\n%s",
                xp_error_message(err),
                r == -EBUSY ? "xpool store rotate-key: stop the server first\n" : "");
        return XP_EXIT_FAILURE;
}

/* The key file, or none yet (Secrets written before encryption get their first key). */
static int load(const char *path, struct xp_store_keys **ret, struct xp_error *err)
{
        int r = xp_store_keys_load(path, false, ret, err);

        if (r != -ENOENT)
                return r;
        *ret = calloc(1, sizeof(**ret));
        return *ret ? 0 : xp_errorf(err, -ENOMEM, "out of memory");
}

int xp_cli_store_rotate_key(const char *dir, const char *db)
{
        _cleanup_(xp_store_keys_freep) struct xp_store_keys *keys = NULL;
        _cleanup_free_ char *path = xp_datadir_path(dir, XP_DATADIR_ENCRYPTION);
        _cleanup_(xp_store_closep) struct xp_store *store = NULL;
        struct xp_error err = {0};
        const char *name = NULL;
        uint64_t n = 0;
        size_t old;
        int r;

        if (!path)
                return XP_EXIT_FAILURE;
        r = load(path, &keys, &err);
        if (r >= 0) {
                old = keys->n;
                r = xp_store_keys_add(keys, &name, &err);
        }
        /* the store first: a running server (its lock) refuses before anything changes */
        if (r >= 0)
                r = xp_store_open(
                    &(struct xp_store_options){
                        .path = db, .keys = keys, .encrypted_kinds = XP_STORE_ENCRYPTED_KINDS},
                    &store,
                    &err);
        /* step 1: durable before any row is written under the new key */
        if (r >= 0)
                r = xp_store_keys_save(path, keys, &err);
        if (r < 0)
                return fail(r, &err);
        printf("added:      key %s, the primary now (%s)\n", name, path);
        crash_point(1);
        r = xp_store_reencrypt(store, &n, &err);
        if (r < 0)
                return fail(r, &err);
        printf(
            "encrypted:  %" PRIu64 " Secret rows (objects and event log) with key %s\n", n, name);
        crash_point(2);
        xp_store_keys_retire(keys);
        r = xp_store_keys_save(path, keys, &err);
        if (r < 0)
                return fail(r, &err);
        printf("retired:    %zu old key%s\n", old, old == 1 ? "" : "s");
        return 0;
}
