/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Opening a store at a path in the store's damage tests: header-only, static inline (each test
 * binary is one source file). Include after <cmocka.h> and "xpool/store.h".
 */

/* The store at path, open; fails the test when it does not open. */
static inline struct xp_store *open_ok(const char *path)
{
        struct xp_store_options options = {.path = path};
        struct xp_error err = {0};
        struct xp_store *store = NULL;

        if (xp_store_open(&options, &store, &err) < 0)
                fail_msg("open %s: %s", path, err.msg);
        return store;
}

/* What opening the store at path returns (closed again when it opened), err set. */
static inline int open_err(const char *path, struct xp_error *err)
{
        struct xp_store_options options = {.path = path};
        struct xp_store *store = NULL;
        int r = xp_store_open(&options, &store, err);

        if (r >= 0)
                xp_store_close(store);
        return r;
}
