/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connections in the daemon, as the front door keeps them (door.h): one record per
 * connection from libmicrohttpd's "started" notification to its "closed" one, its deadline, its
 * user once a request authenticated, and the counts the limits are checked against.
 *
 * The door shuts a connection down (shutdown(2), not close) to evict it: the daemon's thread
 * then reads the end of the stream and closes it itself. The "closed" notification comes before
 * the daemon closes the socket and takes the same lock, so a descriptor is never shut down after
 * it was closed and perhaps reused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "door_internal.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

static struct conn *conns_of(struct MHD_Connection *mhd)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return info ? info->socket_context : NULL;
}

/* A connection leaves the pre-auth count once, when it authenticates or is evicted. */
static void preauth_leave(struct xp_http_door *d, struct conn *c)
{
        if (!c->preauth)
                return;
        c->preauth = false;
        d->n_preauth--;
        d->preauth_clients[c->client]--;
}

static void evict(struct xp_http_door *d, struct conn *c, const char *why)
{
        xp_debug("http", "closing a connection: %s", why);
        preauth_leave(d, c);
        c->evicted = true;
        d->n_evicted++;
        shutdown(c->fd, SHUT_RDWR);
}

/* The oldest pre-auth connection (of client, unless client is -1), or NULL. */
static struct conn *oldest_preauth(struct xp_http_door *d, int64_t client)
{
        for (struct conn *c = d->conns_head; c; c = c->next)
                if (c->preauth && (client < 0 || c->client == client))
                        return c;
        return NULL;
}

bool conns_make_room(struct xp_http_door *d, uint32_t client)
{
        const struct xp_http_door_limits *l = &d->limits;
        unsigned handing = atomic_load(&d->handing);
        struct conn *victim = NULL;
        bool room;

        pthread_mutex_lock(&d->lock);
        if (d->preauth_clients[client] >= l->preauth_per_client)
                victim = oldest_preauth(d, client);
        else if (d->n_preauth + handing >= l->preauth_max)
                victim = oldest_preauth(d, -1);
        if (victim)
                evict(d, victim, "making room for a new one (the oldest not authenticated)");
        /* Evicted connections keep their slot in the daemon until it reaps them, which its own
         * limit leaves room for (xp_http_door_mhd_options()). */
        room = d->n_preauth + handing < l->preauth_max &&
               d->n_conns - d->n_evicted + handing < l->connections_max &&
               d->n_conns + handing < l->connections_max + l->preauth_max;
        pthread_mutex_unlock(&d->lock);
        return room;
}

void conns_expire(struct xp_http_door *d, int64_t now)
{
        pthread_mutex_lock(&d->lock);
        /* A handed connection the daemon never started (it could not take it) counts no more. */
        if (now - d->last_hand_ms > 1000)
                atomic_store(&d->handing, 0);
        for (struct conn *c = d->conns_head; c; c = c->next)
                if (!c->evicted && c->deadline_ms && now > c->deadline_ms)
                        evict(d, c, "past its deadline");
        pthread_mutex_unlock(&d->lock);
}

static void conns_started(struct xp_http_door *d, struct MHD_Connection *mhd, void **ctx)
{
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const union MHD_ConnectionInfo *tls =
            MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        struct conn *c = calloc(1, sizeof *c);

        if (atomic_load(&d->handing) > 0)
                atomic_fetch_sub(&d->handing, 1);
        if (!c) {
                /* Without a record the door cannot look after it: end it. */
                if (fd)
                        shutdown(fd->connect_fd, SHUT_RDWR);
                return;
        }
        c->mhd = mhd;
        c->fd = fd ? fd->connect_fd : -1;
        c->client = addr && addr->client_addr ? door_client_slot(addr->client_addr) : 0;
        c->user = -1;
        c->deadline_ms = xp_monotonic_ms() + d->limits.head_timeout_ms;
        c->tls = tls ? tls->tls_session : NULL;
        if (c->tls)
                mhderr_watch_tls(c);
        pthread_mutex_lock(&d->lock);
        c->prev = d->conns_tail;
        if (d->conns_tail)
                d->conns_tail->next = c;
        else
                d->conns_head = c;
        d->conns_tail = c;
        d->n_conns++;
        c->preauth = true;
        d->n_preauth++;
        d->preauth_clients[c->client]++;
        pthread_mutex_unlock(&d->lock);
        *ctx = c;
}

static void user_release(struct xp_http_door *d, struct conn *c)
{
        struct user *u;

        if (c->user < 0)
                return;
        u = &d->users[c->user];
        if (c->stream) {
                u->streams--;
                c->stream = false;
        }
        u->connections--;
        c->user = -1;
}

static void conns_closed(struct xp_http_door *d, struct conn *c)
{
        pthread_mutex_lock(&d->lock);
        preauth_leave(d, c);
        user_release(d, c);
        if (c->evicted)
                d->n_evicted--;
        if (c->prev)
                c->prev->next = c->next;
        else
                d->conns_head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                d->conns_tail = c->prev;
        d->n_conns--;
        pthread_mutex_unlock(&d->lock);
        free(c);
}

void conns_notify(void *cls,
                  struct MHD_Connection *mhd,
                  void **socket_context,
                  enum MHD_ConnectionNotificationCode toe)
{
        struct xp_http_door *d = cls;

        if (toe == MHD_CONNECTION_NOTIFY_STARTED)
                conns_started(d, mhd, socket_context);
        else if (*socket_context)
                conns_closed(d, *socket_context);
        if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
                *socket_context = NULL;
}

/* ---- per request ------------------------------------------------------------------------------
 */

void xp_http_door_request_begin(struct xp_http_door *d, struct MHD_Connection *mhd)
{
        struct conn *c = conns_of(mhd);

        (void)d;
        if (!c)
                return;
        c->response_queued = false;
        mhderr_set_current(c);
}

static void set_deadline(struct xp_http_door *d, struct MHD_Connection *mhd, unsigned after_ms);

struct header_walk {
        struct xp_http_header_check check;
        struct xp_http_refusal *ret;
        int r;
};

static enum MHD_Result header_walk(void *cls,
                                   enum MHD_ValueKind kind,
                                   const char *key,
                                   size_t key_size,
                                   const char *value,
                                   size_t value_size)
{
        struct header_walk *w = cls;

        (void)kind;
        w->r = xp_http_check_header(
            &w->check, key, key_size, value ? value : "", value ? value_size : 0, w->ret);
        return w->r < 0 ? MHD_NO : MHD_YES;
}

int xp_http_door_check_request(struct xp_http_door *d,
                               struct MHD_Connection *mhd,
                               const char *raw_target,
                               struct xp_http_refusal *ret)
{
        struct header_walk w = {.ret = ret};
        int r;

        r = raw_target ? xp_http_check_target(raw_target, strlen(raw_target), ret)
                       : xp_http_refuse(ret, 400, "the request has no target");
        if (r < 0)
                return r;
        MHD_get_connection_values_n(mhd, MHD_HEADER_KIND, header_walk, &w);
        if (w.r < 0)
                return w.r;
        r = xp_http_check_headers_end(&w.check, ret);
        if (r < 0)
                return r;
        set_deadline(d, mhd, d->limits.body_timeout_ms);
        return 0;
}

/* The user's index in d->users, added when new; -1 when out of memory. Under d->lock. */
static int user_index(struct xp_http_door *d, const char *name)
{
        size_t free_slot = d->n_users;

        for (size_t i = 0; i < d->n_users; i++) {
                if (strcmp(d->users[i].name, name) == 0)
                        return (int)i;
                if (free_slot == d->n_users && !d->users[i].connections)
                        free_slot = i;
        }
        if (free_slot == d->n_users) {
                if (d->n_users == d->cap_users) {
                        size_t cap = d->cap_users ? d->cap_users * 2 : 16;
                        struct user *users = realloc(d->users, cap * sizeof *users);

                        if (!users)
                                return -1;
                        d->users = users;
                        d->cap_users = cap;
                }
                d->n_users++;
        }
        d->users[free_slot] = (struct user){0};
        snprintf(d->users[free_slot].name, sizeof d->users[free_slot].name, "%s", name);
        return (int)free_slot;
}

static int admit_locked(struct xp_http_door *d,
                        struct conn *c,
                        const char *user,
                        bool stream,
                        struct xp_http_refusal *ret)
{
        const struct xp_http_door_limits *l = &d->limits;
        int i;

        if (c->user < 0 || strcmp(d->users[c->user].name, user) != 0) {
                user_release(d, c);
                i = user_index(d, user);
                if (i < 0)
                        return xp_http_refuse(ret, 500, "out of memory");
                if (d->users[i].connections >= l->user_connections_max) {
                        xp_http_refuse(
                            ret,
                            429,
                            "too many connections of user %s: the limit is %u, please try again later",
                            user,
                            l->user_connections_max);
                        return -EBUSY;
                }
                preauth_leave(d, c);
                c->user = i;
                d->users[i].connections++;
        }
        if (stream) {
                struct user *u = &d->users[c->user];

                if (u->streams >= l->user_streams_max) {
                        xp_http_refuse(
                            ret,
                            429,
                            "too many watches of user %s: the limit is %u streams at once, please try again later",
                            user,
                            l->user_streams_max);
                        return -EBUSY;
                }
                u->streams++;
                c->stream = true;
        }
        return 0;
}

int xp_http_door_admit(struct xp_http_door *d,
                       struct MHD_Connection *mhd,
                       const char *user,
                       bool stream,
                       struct xp_http_refusal *ret)
{
        struct conn *c = conns_of(mhd);
        int r;

        if (!c)
                return 0;
        pthread_mutex_lock(&d->lock);
        r = c->evicted ? 0 : admit_locked(d, c, user, stream, ret);
        pthread_mutex_unlock(&d->lock);
        return r;
}

static void set_deadline(struct xp_http_door *d, struct MHD_Connection *mhd, unsigned after_ms)
{
        struct conn *c = conns_of(mhd);

        if (!c)
                return;
        pthread_mutex_lock(&d->lock);
        c->deadline_ms = after_ms ? xp_monotonic_ms() + after_ms : 0;
        pthread_mutex_unlock(&d->lock);
}

void xp_http_door_body_done(struct xp_http_door *d, struct MHD_Connection *mhd)
{
        set_deadline(d, mhd, 0);
}

void xp_http_door_response_queued(struct xp_http_door *d, struct MHD_Connection *mhd)
{
        struct conn *c = conns_of(mhd);

        (void)d;
        if (c)
                c->response_queued = true;
}

void xp_http_door_request_end(struct xp_http_door *d, struct MHD_Connection *mhd)
{
        struct conn *c = conns_of(mhd);

        if (!c)
                return;
        c->response_queued = false; /* the next request has none yet */
        pthread_mutex_lock(&d->lock);
        if (c->stream) {
                d->users[c->user].streams--;
                c->stream = false;
        }
        c->deadline_ms = xp_monotonic_ms() +
                         (c->user >= 0 ? d->limits.idle_timeout_ms : d->limits.head_timeout_ms);
        pthread_mutex_unlock(&d->lock);
}
