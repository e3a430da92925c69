/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A plain-text answer on a libmicrohttpd connection, as the agent's endpoints (logs, streams)
 * answer what they refuse: the text made of fmt and ap, Content-Type text/plain; charset=utf-8.
 */

#include <microhttpd.h>
#include <stdarg.h>

#include "xpool/macro.h"

/* Queues the answer: MHD_YES, or MHD_NO when it could not be made or queued. */
enum MHD_Result
xp_http_queue_text(struct MHD_Connection *conn, unsigned code, const char *fmt, va_list ap)
    _printf_(3, 0);
