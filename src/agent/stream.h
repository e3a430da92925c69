/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's streaming endpoint: exec, attach and port-forward, which the API server proxies
 * here from kubectl (docs/agent.md, "Exec, attach, port-forward"), on the log endpoint's listener
 * and under its signature (logserver.h):
 *
 *   GET /exec/NS/POD/CONTAINER?command=...&stdin=&stdout=&stderr=&tty=&podUID=UID
 *   GET /attach/NS/POD/CONTAINER?stdin=&stdout=&stderr=&tty=&podUID=UID
 *   GET /portForward/NS/POD?podUID=UID
 *
 * each an upgrade to the protocol kubectl asked for: a WebSocket (v5.channel.k8s.io,
 * v4.channel.k8s.io; SPDY/3.1+portforward.k8s.io for port-forward) or SPDY/3.1 (X-Stream-Protocol-
 * Version v4.channel.k8s.io, portforward.k8s.io). Every stream runs on a thread of its own until
 * it ends, its client goes away, it is idle for idle_timeout, or the agent stops; it then leaves
 * nothing behind: the command and its process group are killed, every descriptor closed.
 */

#include <stdbool.h>
#include <stdint.h>

#include "logserver.h"
#include "xpool/error.h"

struct xp_runtime;
struct xp_agent_streams;

/* Streams at once; more are answered 503. */
#define XP_AGENT_STREAMS_MAX 128
/* Streams at once of one user the server names (xpoolUser), a quarter of the node's: more are
 * answered 429, while other users' still get in. */
#define XP_AGENT_STREAMS_PER_USER (XP_AGENT_STREAMS_MAX / 4)

struct xp_agent_streams_options {
        struct xp_runtime *runtime; /* borrowed; must outlive the streams */
        int64_t idle_timeout_ms;    /* no data either way this long ends a stream; 0: 4 hours */
};

int xp_agent_streams_new(const struct xp_agent_streams_options *o,
                         struct xp_agent_streams **ret,
                         struct xp_error *err);
/* The hook for xp_logserver_options.streams (borrows s). */
void xp_agent_streams_hook(struct xp_agent_streams *s, struct xp_logserver_streams *ret);
/* Ends every stream and waits for their threads (before the log endpoint stops: they hold its
 * connections); new requests are answered 503. */
void xp_agent_streams_stop(struct xp_agent_streams *s);
/* Stops, then frees. NULL is fine. */
void xp_agent_streams_free(struct xp_agent_streams *s);
/* How many streams run now (tests). */
unsigned xp_agent_streams_active(struct xp_agent_streams *s);
