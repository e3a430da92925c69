/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A cmocka fixture of the registry's and the controllers' tests: a store on a fresh temporary
 * directory, a registry over it, and a clock whose time is the test's to move (monotonic now_ms;
 * the wall clock moves with it from FIXTURE_WALL_START). Header-only, static inline, as
 * tmpdir.h; include after <cmocka.h>.
 */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/clock.h"
#include "tmpdir.h"
#include "xpool/registry.h"
#include "xpool/store.h"

#define FIXTURE_WALL_START 1800000000 /* 2027-01-15T08:00:00Z */

struct registry_fixture {
        struct tmpdir *dir;
        struct xp_store *store;
        struct xp_registry *registry;
        int64_t now_ms;
        struct xp_clock clock;
};

static inline int64_t fixture_monotonic_ms(void *userdata)
{
        return *(int64_t *)userdata;
}

static inline int64_t fixture_wall_s(void *userdata)
{
        return FIXTURE_WALL_START + *(int64_t *)userdata / 1000;
}

/* Opens the store (keeping history events; 0: the default) and the registry; now_ms 0. */
static inline void fixture_open(struct registry_fixture *f, const char *name, size_t history)
{
        struct xp_error err = {0};
        void *dir;

        tmpdir_setup(&dir, name, "state.db");
        f->dir = dir;
        struct xp_store_options options = {.path = f->dir->path, .event_history = history};
        if (xp_store_open(&options, &f->store, &err) < 0)
                fail_msg("store: %s", err.msg);
        if (xp_registry_new(f->store, &f->registry, &err) < 0)
                fail_msg("registry: %s", err.msg);
        f->now_ms = 0;
        f->clock = (struct xp_clock){
            .monotonic_ms = fixture_monotonic_ms,
            .wall_s = fixture_wall_s,
            .userdata = &f->now_ms,
        };
}

static inline void fixture_close(struct registry_fixture *f)
{
        void *dir = f->dir;

        xp_registry_free(f->registry);
        xp_store_close(f->store);
        tmpdir_teardown(&dir);
}

/* The stored object (a new reference), or NULL when absent. */
static inline json_t *
fixture_get(struct registry_fixture *f, const char *kind, const char *ns, const char *name)
{
        json_t *object = NULL;
        uint64_t version;

        if (xp_store_get(f->store, kind, ns, name, &object, &version, NULL) < 0)
                return NULL;
        return object;
}

/* Writes object (taken) as it is, created or replacing what is stored. */
static inline void fixture_put(
    struct registry_fixture *f, const char *kind, const char *ns, const char *name, json_t *object)
{
        json_t *old = fixture_get(f, kind, ns, name);
        uint64_t version;

        assert_non_null(object);
        if (old)
                assert_int_equal(
                    xp_store_update(f->store, kind, ns, name, 0, object, &version, NULL), 0);
        else
                assert_int_equal(xp_store_create(f->store, kind, ns, name, object, &version, NULL),
                                 0);
        json_decref(old);
        json_decref(object);
}

/* Writes the JSON text made of fmt and its arguments, as fixture_put(). */
static inline void fixture_put_text(struct registry_fixture *f,
                                    const char *kind,
                                    const char *ns,
                                    const char *name,
                                    const char *fmt,
                                    ...) __attribute__((format(printf, 5, 6)));
static inline void fixture_put_text(struct registry_fixture *f,
                                    const char *kind,
                                    const char *ns,
                                    const char *name,
                                    const char *fmt,
                                    ...)
{
        char text[2048];
        json_error_t jerr;
        json_t *object;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        object = json_loads(text, 0, &jerr);
        if (!object)
                fail_msg("bad test JSON: %s: %s", jerr.text, text);
        fixture_put(f, kind, ns, name, object);
}
