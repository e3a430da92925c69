/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Controller expectations: the creations and deletions a controller made and has not yet seen
 * come back through its watch. Deletions are tracked by pod name, so a pod seen terminating and
 * then gone counts once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replicaset.h"
#include "xpool/macro.h"

struct expectation {
        char *key;
        int32_t adds;
        struct xp_map deletes; /* pod name -> the name (owned) */
        int64_t since_ms;
};

static void clear_deletes(struct expectation *x)
{
        for (size_t i = 0; i < x->deletes.cap; i++)
                if (x->deletes.values && x->deletes.values[i])
                        free(x->deletes.values[i]);
        xp_map_done(&x->deletes);
}

static void expectation_free(struct expectation *x)
{
        if (!x)
                return;
        clear_deletes(x);
        free(x->key);
        free(x);
}

void xp_expectations_init(struct xp_expectations *e)
{
        *e = (struct xp_expectations){0};
}

void xp_expectations_done(struct xp_expectations *e)
{
        for (size_t i = 0; i < e->map.cap; i++)
                if (e->map.values && e->map.values[i])
                        expectation_free(e->map.values[i]);
        xp_map_done(&e->map);
}

/* key's expectation, made when absent (empty). NULL on -ENOMEM. */
static struct expectation *get_or_make(struct xp_expectations *e, const char *key)
{
        struct expectation *x = xp_map_get(&e->map, key);

        if (x)
                return x;
        x = calloc(1, sizeof(*x));
        if (!x)
                return NULL;
        x->key = strdup(key);
        if (!x->key || xp_map_put(&e->map, x->key, x) < 0) {
                expectation_free(x);
                return NULL;
        }
        return x;
}

int xp_expectations_expect_creations(struct xp_expectations *e,
                                     const char *key,
                                     int32_t n,
                                     int64_t now_ms)
{
        struct expectation *x = get_or_make(e, key);

        if (!x)
                return -ENOMEM;
        x->adds = n;
        x->since_ms = now_ms;
        return 0;
}

int xp_expectations_expect_deletions(
    struct xp_expectations *e, const char *key, const char *const *pods, size_t n, int64_t now_ms)
{
        struct expectation *x = get_or_make(e, key);

        if (!x)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char *name;

                if (xp_map_get(&x->deletes, pods[i]))
                        continue;
                name = strdup(pods[i]);
                if (!name || xp_map_put(&x->deletes, name, name) < 0) {
                        free(name);
                        return -ENOMEM;
                }
        }
        x->since_ms = now_ms;
        return 0;
}

void xp_expectations_creation_observed(struct xp_expectations *e, const char *key)
{
        struct expectation *x = xp_map_get(&e->map, key);

        if (x && x->adds > 0)
                x->adds--;
}

void xp_expectations_deletion_observed(struct xp_expectations *e, const char *key, const char *pod)
{
        struct expectation *x = xp_map_get(&e->map, key);

        if (x)
                free(xp_map_del(&x->deletes, pod));
}

bool xp_expectations_satisfied(const struct xp_expectations *e, const char *key, int64_t now_ms)
{
        const struct expectation *x = xp_map_get(&e->map, key);

        if (!x)
                return true;
        if (x->adds <= 0 && x->deletes.n == 0)
                return true;
        return now_ms - x->since_ms >= XP_RS_EXPECTATIONS_TTL_MS;
}

void xp_expectations_delete(struct xp_expectations *e, const char *key)
{
        expectation_free(xp_map_del(&e->map, key));
}
