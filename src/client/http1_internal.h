/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Between the transport's connection (http1_conn.c) and its requests (http1.c). */

#include <stdint.h>
#include <sys/types.h>

#include "http1.h"
#include "xpool/macro.h"

/* Records the failure in c and returns -EIO. */
int http1_fail(struct http1_conn *c, enum http1_failure failure, const char *fmt, ...)
    _printf_(3, 4);
/* Connects (and shakes hands) by deadline_ms (monotonic ms, 0: none). 0 or -EIO (c->failure). */
int http1_open(struct http1_conn *c, int64_t deadline_ms);
/* Closes the connection; the settings stay. */
void http1_close(struct http1_conn *c);
/* Waits until c->fd is ready for events, checking c->cancelled. 0 or -EIO (c->failure). */
int http1_wait(struct http1_conn *c, short events, int64_t deadline_ms);
/* Some bytes of the answer (0: the server ended the connection), or -EIO (c->failure). */
ssize_t http1_recv(struct http1_conn *c, char *buf, size_t len, int64_t deadline_ms);
/* All of buf, or -EIO (c->failure). */
int http1_send(struct http1_conn *c, const char *buf, size_t len, int64_t deadline_ms);
