/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's streams at once and each user's share of them (stream_internal.h). Every stream
 * comes through the API server's connection, so the server names who asked (xpoolUser, signed
 * with the rest): counted by that name, one user's exec loop holds its share and the other users'
 * streams still get in, where counting them all as the server's let one user take every one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream_internal.h"

void stream_users_init(struct stream_users *u, unsigned max, unsigned per_user)
{
        *u = (struct stream_users){.max = max, .per_user = per_user};
}

void stream_users_done(struct stream_users *u)
{
        free(u->users);
        *u = (struct stream_users){0};
}

/* The user's entry, or NULL. */
static struct stream_user *find(struct stream_users *u, const char *user)
{
        for (size_t i = 0; i < u->n; i++)
                if (u->users[i].active > 0 && strcmp(u->users[i].name, user) == 0)
                        return &u->users[i];
        return NULL;
}

/* A new entry for user (a free one reused: entries are at most the streams held). */
static struct stream_user *add(struct stream_users *u, const char *user)
{
        struct stream_user *e = NULL;

        for (size_t i = 0; i < u->n && !e; i++)
                if (u->users[i].active == 0)
                        e = &u->users[i];
        if (!e) {
                if (u->n == u->cap) {
                        size_t cap = u->cap ? u->cap * 2 : 8;
                        struct stream_user *users = realloc(u->users, cap * sizeof(*users));

                        if (!users)
                                return NULL;
                        u->users = users;
                        u->cap = cap;
                }
                e = &u->users[u->n++];
        }
        *e = (struct stream_user){0};
        snprintf(e->name, sizeof(e->name), "%s", user);
        return e;
}

int stream_users_admit(struct stream_users *u, const char *user)
{
        struct stream_user *e = NULL;
        bool named = user && *user;

        if (named && strlen(user) >= sizeof(e->name))
                return -EINVAL;
        if (u->active >= u->max)
                return -EBUSY;
        if (named) {
                e = find(u, user);
                if (e && e->active >= u->per_user)
                        return -EDQUOT;
                if (!e && !(e = add(u, user)))
                        return -ENOMEM;
                e->active++;
        }
        u->active++;
        return 0;
}

void stream_users_release(struct stream_users *u, const char *user)
{
        struct stream_user *e = user && *user ? find(u, user) : NULL;

        if (e)
                e->active--;
        if (u->active > 0)
                u->active--;
}

unsigned stream_users_held(const struct stream_users *u, const char *user)
{
        for (size_t i = 0; user && i < u->n; i++)
                if (u->users[i].active > 0 && strcmp(u->users[i].name, user) == 0)
                        return u->users[i].active;
        return 0;
}
