/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/logsign.h"
#include "xpool/signonce.h"
#include "xpool/strutil.h"

#define MAC_LEN 32

struct used {
        uint8_t mac[MAC_LEN];
        int64_t expiry;
        char owner[XP_SIGN_ONCE_OWNER_MAX + 1]; /* "": none */
};

struct xp_sign_once {
        pthread_mutex_t lock;
        struct used *used;
        size_t n, cap;
};

int xp_sign_once_new(size_t cap, struct xp_sign_once **ret)
{
        struct xp_sign_once *g;

        if (cap == 0)
                return -EINVAL;
        g = calloc(1, sizeof *g);
        if (!g)
                return -ENOMEM;
        g->used = calloc(cap, sizeof *g->used);
        if (!g->used) {
                free(g);
                return -ENOMEM;
        }
        g->cap = cap;
        pthread_mutex_init(&g->lock, NULL);
        *ret = g;
        return 0;
}

void xp_sign_once_free(struct xp_sign_once *g)
{
        if (!g)
                return;
        pthread_mutex_destroy(&g->lock);
        free(g->used);
        free(g);
}

/* <id>:<expiry>:<hex MAC>: the expiry and the MAC. */
static int parse(const char *header, int64_t *ret_expiry, uint8_t mac[static MAC_LEN])
{
        const char *colon = header ? strchr(header, ':') : NULL;
        char *end;
        long long expiry;

        if (!colon || colon[1] < '0' || colon[1] > '9')
                return -EINVAL;
        errno = 0;
        expiry = strtoll(colon + 1, &end, 10);
        if (errno != 0 || *end != ':' || strlen(end + 1) != 2 * MAC_LEN ||
            xp_hex_decode(end + 1, mac, MAC_LEN) < 0)
                return -EINVAL;
        *ret_expiry = expiry;
        return 0;
}

/* The expired ones dropped (the last moved into each gap). */
static void forget_expired(struct xp_sign_once *g, int64_t now)
{
        for (size_t i = 0; i < g->n;)
                if (g->used[i].expiry < now)
                        g->used[i] = g->used[--g->n];
                else
                        i++;
}

/* Whether the mac was claimed (0), or -EALREADY; -EDQUOT when owner holds its share. Locked. */
static int check_claim(const struct xp_sign_once *g, const uint8_t *mac, const char *owner)
{
        size_t share = g->cap / XP_SIGN_ONCE_SHARES, held = 0;

        for (size_t i = 0; i < g->n; i++) {
                if (memcmp(g->used[i].mac, mac, MAC_LEN) == 0)
                        return -EALREADY;
                held += *owner && strcmp(g->used[i].owner, owner) == 0;
        }
        return *owner && held >= (share > 0 ? share : 1) ? -EDQUOT : 0;
}

int xp_sign_once_claim(struct xp_sign_once *g, const char *header, const char *owner, int64_t now)
{
        uint8_t mac[MAC_LEN];
        int64_t expiry;
        int r;

        if (!owner)
                owner = "";
        if (parse(header, &expiry, mac) < 0 || strlen(owner) > XP_SIGN_ONCE_OWNER_MAX)
                return -EINVAL;
        pthread_mutex_lock(&g->lock);
        forget_expired(g, now);
        r = check_claim(g, mac, owner);
        if (r == 0 && g->n == g->cap)
                r = -ENOSPC;
        if (r == 0) {
                memcpy(g->used[g->n].mac, mac, MAC_LEN);
                strcpy(g->used[g->n].owner, owner);
                g->used[g->n++].expiry = expiry;
        }
        pthread_mutex_unlock(&g->lock);
        return r;
}

void xp_sign_once_release(struct xp_sign_once *g, const char *header)
{
        uint8_t mac[MAC_LEN];
        int64_t expiry;

        if (parse(header, &expiry, mac) < 0)
                return;
        pthread_mutex_lock(&g->lock);
        for (size_t i = 0; i < g->n; i++)
                if (memcmp(g->used[i].mac, mac, MAC_LEN) == 0) {
                        g->used[i] = g->used[--g->n];
                        break;
                }
        pthread_mutex_unlock(&g->lock);
}

size_t xp_sign_once_count(struct xp_sign_once *g)
{
        size_t n;

        pthread_mutex_lock(&g->lock);
        n = g->n;
        pthread_mutex_unlock(&g->lock);
        return n;
}
