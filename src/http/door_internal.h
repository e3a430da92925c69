/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by the front door's files: door.c (the thread, the waiting connections), conns.c (the
 * connections in the daemon, users and deadlines) and mhderr.c (libmicrohttpd's own errors).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xpool/http_door.h"

/* Client addresses are counted in this many slots, by hash (a /64 for IPv6). */
#define CLIENT_SLOTS 4096

/* A connection in the daemon; its socket context in libmicrohttpd. Guarded by door->lock. */
struct conn {
        struct MHD_Connection *mhd;
        int fd;
        uint32_t client;     /* slot of the client's address */
        int64_t deadline_ms; /* 0: none (a handler runs) */
        int user;            /* index in door->users; -1: not authenticated (pre-auth) */
        bool preauth;        /* counted as not authenticated (door->n_preauth) */
        bool stream;         /* the request in progress is counted as a stream */
        bool evicted;        /* shut down by the door: closing */
        /* Touched only by the connection's own thread: */
        bool response_queued;     /* for the request in progress */
        bool rewritten;           /* the door answered one of libmicrohttpd's errors */
        void *tls;                /* gnutls_session_t, or NULL */
        struct conn *prev, *next; /* door->conns, oldest first */
};

struct user {
        char name[256];
        unsigned connections, streams;
};

struct xp_http_door {
        struct xp_http_door_limits limits;
        xp_http_format_error format_error;
        bool tls;
        int listen_fd, epoll_fd, stop_fd;
        struct MHD_Daemon *daemon;
        pthread_t thread;
        bool started;
        bool accept_paused; /* out of descriptors: the listening socket is out of the epoll set */

        /* The door thread's own: connections waiting for their first head. */
        struct pending *pending_head, *pending_tail; /* oldest first */
        struct pending *graveyard; /* gone, freed once the events at hand are handled */
        unsigned n_pending;
        uint16_t pending_clients[CLIENT_SLOTS];
        char *peek; /* XP_HTTP_HEAD_MAX + 1 bytes */

        pthread_mutex_t lock; /* the rest */
        struct conn *conns_head, *conns_tail;
        unsigned n_conns, n_preauth, n_evicted;
        uint16_t preauth_clients[CLIENT_SLOTS];
        struct user *users;
        size_t n_users, cap_users;
        atomic_uint handing; /* handed to the daemon, not yet started there */
        int64_t last_hand_ms;
};

/* The slot of an address (IPv4, or the /64 of IPv6). */
uint32_t door_client_slot(const struct sockaddr *sa);

/* conns.c */
/* Whether a connection may be handed to the daemon now, making room by evicting the oldest
 * pre-auth connection (of the client when it holds its share) when needed. */
bool conns_make_room(struct xp_http_door *door, uint32_t client);
/* Shuts down the connections past their deadline. */
void conns_expire(struct xp_http_door *door, int64_t now_ms);
void conns_notify(void *cls,
                  struct MHD_Connection *mhd,
                  void **socket_context,
                  enum MHD_ConnectionNotificationCode toe);

/* mhderr.c */
/* Routes a TLS connection's reads through the door, so that its thread is known. */
void mhderr_watch_tls(struct conn *c);
/* Marks c as the connection this thread serves (for the error log). */
void mhderr_set_current(struct conn *c);
/* libmicrohttpd's error log: turns its own error pages into the owner's. */
void mhderr_log(void *cls, const char *fmt, va_list ap);
/* The full HTTP answer (status line, headers, body) for a refusal; caller frees. */
char *door_format_answer(const struct xp_http_door *door,
                         const struct xp_http_refusal *refusal,
                         size_t *ret_len);
