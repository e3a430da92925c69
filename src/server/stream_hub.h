/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The stream hub (stream_hub.c): one thread writes the chunks of every watch, in place of a
 * thread per connection that wakes for every commit. A connection's thread hands its socket (and
 * its TLS session) over once the answer's head went out and sleeps until the stream ends; the
 * hub's thread asks each stream for what it has after every write to the store (gathered when
 * many streams follow a stream of writes) and when the stream said it falls due, frames it as
 * HTTP/1.1 chunks and writes it without blocking: a client that does not read holds back only its
 * own stream, and one that goes away (its socket hung up) ends its stream at once.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xp_store;
struct stream_hub;

/*
 * What a stream has to send, asked on the hub's thread (one call at a time): 1 with *ret_data and
 * *ret_len (0: nothing now; the bytes stay the stream's until its next call) and *ret_due_ms
 * (CLOCK_MONOTONIC: ask again then, news or not); 0 when the stream ended (its last bytes came
 * with the call before); -errno to drop the connection. A write to the store is news: the hub
 * asks then too.
 */
typedef int (*stream_pump_fn)(
    void *state, int64_t now_ms, const char **ret_data, size_t *ret_len, int64_t *ret_due_ms);

/* A client that reads nothing for this long is dropped, as the daemon's timeout dropped it when
 * its thread was blocked in send(): it holds a thread, a connection and its user's stream slot. */
#define STREAM_HUB_STALL_MS 120000

/*
 * Starts the hub's threads; store and stopping (streams end once it is set) are borrowed. A
 * stream whose client takes nothing for stall_ms (0: STREAM_HUB_STALL_MS) ends with -ETIMEDOUT.
 */
int stream_hub_new(struct xp_store *store,
                   const atomic_bool *stopping,
                   int64_t stall_ms,
                   struct stream_hub **ret);

/* Ends every stream (their stream_hub_serve() returns 0) and refuses new ones. NULL is fine. */
void stream_hub_stop(struct stream_hub *hub);

/* After stream_hub_stop() and once no thread is in stream_hub_serve(). NULL is fine. */
void stream_hub_free(struct stream_hub *hub);

/*
 * Serves one stream on a connection's socket fd, through tls (its gnutls session) when not NULL,
 * as HTTP/1.1 chunks, blocking the calling thread until it ends. 0 when it ended (pump said so,
 * or the hub stopped): the caller writes the last chunk; -EPIPE when the client went away or a
 * write failed; -ETIMEDOUT when the client took nothing for the stall limit; -ESHUTDOWN when the
 * hub had stopped already; -ENOMEM; pump's own -errno. The
 * socket's flags are as they were when it returns.
 */
int stream_hub_serve(struct stream_hub *hub, int fd, void *tls, stream_pump_fn pump, void *state);

/*
 * Whether the hub's listener waits on the store for writes: only while a stream is served. With
 * none it rests, so that a commit wakes no thread of the hub (for the tests).
 */
bool stream_hub_listening(struct stream_hub *hub);
