/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by the streaming endpoint's files: stream.c (requests, upgrades, the threads),
 * stream_conn.c (the client's connection: WebSocket frames or raw bytes, buffered both ways),
 * stream_spdy.c (SPDY streams over it), stream_exec.c (exec and attach) and stream_pf.c
 * (port-forward). One thread per stream, non-blocking I/O, buffers bounded: a stream that cannot
 * send stops reading what it would send.
 */

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stream.h"
#include "xpool/remotecmd.h"
#include "xpool/spdy.h"
#include "xpool/websocket.h"

#define STREAM_MESSAGE_MAX (1024 * 1024) /* a WebSocket message, or a SPDY frame */
#define STREAM_OUT_HIGH    (1024 * 1024) /* queued for the client: stop reading what adds to it */
#define STREAM_CHUNK       (32 * 1024)   /* read at once from a process or a port */

/* ---- the client's connection (stream_conn.c) ---------------------------------------------------
 */

enum sconn_mode {
        SCONN_WS,        /* WebSocket messages (exec, attach) */
        SCONN_WS_TUNNEL, /* a byte stream in WebSocket binary messages (SPDY for port-forward) */
        SCONN_RAW,       /* a byte stream (SPDY) */
};

struct buf {
        uint8_t *data;
        size_t off, len, cap;
};

struct sconn {
        int fd; /* the upgraded socket, non-blocking */
        enum sconn_mode mode;
        struct buf in;     /* read, not parsed yet */
        struct buf bytes;  /* SCONN_WS_TUNNEL: the tunnelled stream, not consumed yet */
        struct buf out;    /* to send */
        struct buf ctrl;   /* WebSocket pongs, sent at the next frame boundary of out */
        size_t frame_left; /* WebSocket modes: what is left to send of out's current frame */
        struct xp_ws_message msg;
        bool eof;             /* the client closed its side, or the connection failed */
        bool close_sent;      /* a WebSocket close frame is queued: nothing more is sent */
        bool close_received;  /* the client's WebSocket close frame came */
        int64_t last_data_ms; /* data either way, for the idle timeout (not pings) */
};

int sconn_init(struct sconn *c, int fd, enum sconn_mode mode, const void *early, size_t early_len);
void sconn_done(struct sconn *c);
/* Reads what the socket has (up to the buffer's room). 0, or -errno (eof set). */
int sconn_fill(struct sconn *c);
/* Writes what is queued, as far as the socket takes it. 0, or -errno (eof set). */
int sconn_flush(struct sconn *c);
/*
 * The end of the connection, before it is closed: what is queued goes out, then our FIN, and
 * what the client still sends (a ping, its close frame) is read and dropped until it closes too,
 * or takes nothing of our bytes for linger_ms, or stop_fd is readable. Closing with its bytes
 * unread would answer them with a reset, and a reset throws away what our kernel had not yet sent:
 * a client behind a slow server lost the end of an exec's output, cut mid-frame.
 * Under TLS c->fd is libmicrohttpd's relay pair, which it does not close when the client leaves:
 * peer_fd, the client's own socket (-1 over plain HTTP), ends the wait once the client hangs up.
 */
void sconn_linger(struct sconn *c, int stop_fd, int peer_fd, int64_t linger_ms);
/* Bytes queued for the client. */
size_t sconn_pending(const struct sconn *c);
/* Whether to poll for reading: the client may send and there is room. */
bool sconn_wants_input(const struct sconn *c);
/*
 * SCONN_WS: the next data message: 1 with *ret_data and *ret_len (borrowed until the next call),
 * 0 when there is none yet (text messages count as binary ones). Pings are answered, a close
 * answered and noted, protocol violations answered with a close frame: -EPROTO.
 */
int sconn_ws_next(struct sconn *c, const uint8_t **ret_data, size_t *ret_len);
/* SCONN_WS: queues a binary message of the byte b followed by data. -ENOMEM. */
int sconn_ws_send(struct sconn *c, uint8_t b, const void *data, size_t len);
/* SCONN_WS, SCONN_WS_TUNNEL: queues a close frame (once). */
void sconn_ws_close(struct sconn *c, uint16_t code, const char *reason);
/*
 * SCONN_WS_TUNNEL and SCONN_RAW: the stream's bytes received so far (*ret_data, *ret_len) after
 * handling the frames that carry them; -EPROTO on a WebSocket violation (close queued).
 */
int sconn_bytes(struct sconn *c, const uint8_t **ret_data, size_t *ret_len);
void sconn_bytes_consume(struct sconn *c, size_t n);
/* SCONN_WS_TUNNEL and SCONN_RAW: queues bytes of the stream. -ENOMEM. */
int sconn_bytes_send(struct sconn *c, const void *data, size_t len);

/* ---- SPDY over the connection (stream_spdy.c) --------------------------------------------------
 */

#define SPDY_STREAMS_MAX 256

struct spdy_stream {
        uint32_t id;
        struct xp_spdy_headers headers;
        bool remote_fin, local_fin, reset;
        int tag; /* the user's: a channel, a port-forward pair */
};

struct spdy_handler {
        /* a new stream: 0 to accept (a SYN_REPLY goes out), < 0 to refuse it (RST_STREAM) */
        int (*open)(void *cls, struct spdy_stream *st);
        void (*data)(void *cls, struct spdy_stream *st, const uint8_t *data, size_t len);
        void (*fin)(void *cls, struct spdy_stream *st); /* the client's side ended */
        void (*reset)(void *cls, struct spdy_stream *st);
        void *cls;
};

struct spdy {
        struct sconn *conn;
        struct xp_spdy_zlib z;
        struct spdy_stream *streams[SPDY_STREAMS_MAX];
        uint32_t last_id;
        bool goaway;
        const char *error; /* why the connection failed (static) */
};

int spdy_init(struct spdy *sp, struct sconn *conn);
void spdy_done(struct spdy *sp);
/* Handles every whole frame received: 0, or -errno when the connection is to end (GOAWAY
 * queued, error says why). */
int spdy_process(struct spdy *sp, const struct spdy_handler *h);
/* Queues data on the stream (fin: its last). -ENOMEM; -EPIPE after fin or reset. */
int spdy_send(struct spdy *sp, struct spdy_stream *st, const void *data, size_t len, bool fin);
void spdy_reset(struct spdy *sp, struct spdy_stream *st, uint32_t status);
/* Forgets streams ended both ways or reset. */
void spdy_gc(struct spdy *sp);

/* ---- a stream's session (stream.c runs the loop, the kinds fill it in) -------------------------
 */

#define SESSION_POLL_MAX 140

struct session;

struct session_ops {
        /* Once the connection is up. 0, or -errno to end at once. */
        int (*start)(struct session *s);
        /* Whatever came from the client (sconn_ws_next(), sconn_bytes()). 0, or -errno. */
        int (*input)(struct session *s);
        /* Its own descriptors to poll besides the connection's; returns how many. */
        size_t (*poll)(struct session *s, struct pollfd *fds, size_t max);
        /* Their results. 0, or -errno. */
        int (*handle)(struct session *s, const struct pollfd *fds, size_t n);
        /* NULL, or when (stream_now_ms()) it has something to do with no descriptor ready (a
         * deadline); INT64_MAX for nothing: the poll wakes by then. */
        int64_t (*due)(struct session *s);
        /* Whether it has said all it will (the connection then closes once flushed). */
        bool (*done)(struct session *s);
        /* The client went away, or the agent stops: end everything now. */
        void (*abort)(struct session *s);
        void (*free)(struct session *s);
};

enum stream_kind {
        STREAM_EXEC,
        STREAM_ATTACH,
        STREAM_PORTFORWARD
};

struct stream_request {
        enum stream_kind kind;
        char ns[64], pod[254], container[64], uid[129];
        char **argv; /* exec: the command */
        bool in, out, err, tty;
        bool websocket;       /* else SPDY */
        const char *protocol; /* the subprotocol chosen (static) */
        char user[24];        /* the server's xpoolUser; "": none */
};

struct session {
        struct xp_agent_streams *owner;
        struct xp_runtime *runtime;
        struct stream_request req;
        struct sconn conn;
        struct spdy spdy; /* over conn, unless req.websocket with a channel protocol */
        bool spdy_ready;
        const struct session_ops *ops;
        void *state;
        int64_t idle_timeout_ms;
        /* Under TLS, the client's own socket (conn.fd is libmicrohttpd's pair, which it does not
         * end when the client goes away), watched for the hang-up; -1 for plain HTTP. */
        int peer_fd;
};

/* ---- the node's streams at once, and each user's share (stream_users.c) -----------------------
 * A user is the server's xpoolUser (16 hex digits); a stream without one (auth off, an older
 * server) counts against the node's streams only.
 */
struct stream_users {
        struct stream_user {
                char name[24];
                unsigned active; /* 0: a free entry */
        } * users;
        size_t n, cap;
        unsigned active;   /* every stream */
        unsigned max;      /* the node's */
        unsigned per_user; /* one named user's */
};

void stream_users_init(struct stream_users *u, unsigned max, unsigned per_user);
void stream_users_done(struct stream_users *u);
/* Counts a stream of user (NULL or "": no one's) in: 0; -EBUSY when the node holds max,
 * -EDQUOT when the user holds per_user, -EINVAL for a name too long, -ENOMEM. */
int stream_users_admit(struct stream_users *u, const char *user);
/* The end of a stream stream_users_admit() counted in, of the same user. */
void stream_users_release(struct stream_users *u, const char *user);
/* The streams user holds now. */
unsigned stream_users_held(const struct stream_users *u, const char *user);

/* stream_exec.c, stream_pf.c */
extern const struct session_ops xp_stream_exec_ops;
extern const struct session_ops xp_stream_pf_ops;

/* stream.c: the monotonic clock in ms. */
int64_t stream_now_ms(void);

/* ---- what attach sends a container's shim (stream_shimq.c) -------------------------------------
 * stdin, terminal sizes and stdin's end, in one queue in the order the client sent them, so that
 * a size takes effect before any keystroke that came after it and none is lost to a full socket.
 * A terminal gets its first size before any keystroke: kubectl sends the first size and stdin
 * from two goroutines, so stdin may come first on the wire. Until that size (or the deadline),
 * stdin waits here; the first size then goes ahead of it.
 */
struct shimq_msg;

struct shimq {
        struct shimq_msg *head, *tail;
        size_t bytes;          /* payload queued (stdin's flow control) */
        bool await_size;       /* a terminal with no size yet: stdin waits */
        int64_t size_deadline; /* stream_now_ms() after which stdin goes without a size */
};

/* An empty queue; await_size_ms > 0: a terminal whose stdin waits that long for the first size. */
void shimq_init(struct shimq *q, int64_t now_ms, int64_t await_size_ms);
void shimq_free(struct shimq *q);
/* Queues stdin bytes (in messages of XP_ATTACH_DATA_MAX at most). -ENOMEM, nothing queued. */
int shimq_stdin(struct shimq *q, const void *data, size_t len);
/* Queues stdin's end. -ENOMEM. */
int shimq_stdin_close(struct shimq *q);
/* Queues a terminal size; the first one goes ahead of stdin that waited for it. -ENOMEM. */
int shimq_resize(struct shimq *q, uint16_t cols, uint16_t rows);
/* Whether there is something to send now (poll the socket for POLLOUT). */
bool shimq_ready(const struct shimq *q, int64_t now_ms);
/* When queued stdin stops waiting for a size (INT64_MAX: nothing waits for a deadline). */
int64_t shimq_due(const struct shimq *q);
/* Sends what is ready, in order, as far as fd (a SOCK_SEQPACKET socket) takes it: 0, or -errno
 * when the socket failed (the queue is then dropped). */
int shimq_flush(struct shimq *q, int fd, int64_t now_ms);
