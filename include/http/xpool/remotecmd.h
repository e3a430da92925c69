/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes' remote command and port-forward protocols as the kubelet serves them (docs/agent.md,
 * "Exec, attach, port-forward"), the parts that are data: the subprotocols, the channels, the
 * terminal size messages of the resize channel, and the v1 Status the error channel ends with.
 * Pure functions, no I/O: tests/fuzz/fuzz_remotecmd.c runs the resize parser on arbitrary bytes.
 *
 * Over a WebSocket (v5.channel.k8s.io, v4.channel.k8s.io) every binary message starts with its
 * channel's byte; over SPDY (v4.channel.k8s.io) each channel is a stream the client opens with a
 * "streamType" header. port-forward (portforward.k8s.io) is SPDY only: on its own, or tunnelled
 * through a WebSocket (SPDY/3.1+portforward.k8s.io) whose binary messages carry its bytes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XP_RC_V5          "v5.channel.k8s.io"
#define XP_RC_V4          "v4.channel.k8s.io"
#define XP_PF_PROTOCOL    "portforward.k8s.io"
#define XP_PF_WS_PROTOCOL "SPDY/3.1+portforward.k8s.io"

/* The channels of a remote command, numbered as on a WebSocket. */
enum xp_rc_channel {
        XP_RC_STDIN = 0,
        XP_RC_STDOUT = 1,
        XP_RC_STDERR = 2,
        XP_RC_ERROR = 3,
        XP_RC_RESIZE = 4,
        XP_RC_CHANNELS,
        XP_RC_CLOSE = 255, /* v5: the client closed the channel named by the next byte */
};

/* The channel of a SPDY stream's "streamType" ("stdin", "stdout", ...), or -EINVAL. */
int xp_rc_channel_from_stream_type(const char *type);

#define XP_RC_RESIZE_MAX 256 /* bytes of one terminal size message */

/*
 * One terminal size message: a JSON object with Width and Height (names matched without regard
 * to case, as Go's encoding/json does), each 0..65535, other members ignored; blanks around it
 * are fine. 0, or -EINVAL with *ret_why (static) for anything else, and for a message over
 * XP_RC_RESIZE_MAX bytes.
 */
int xp_rc_parse_resize(const uint8_t *data,
                       size_t len,
                       uint16_t *ret_width,
                       uint16_t *ret_height,
                       const char **ret_why);

/*
 * The v1 Status a remote command ends with, as one line of JSON (caller frees; NULL: -ENOMEM):
 * exited with code 0 is Success; another code is Failure with reason NonZeroExitCode, the code as
 * an ExitCode cause and the kubelet's words ("command terminated with non-zero exit code: error
 * executing command [sh -c exit 3], exit code 3"), so that kubectl says "command terminated with
 * exit code 3" and exits with it. argv names the command (NULL for attach).
 */
char *xp_rc_status_exit(char *const *argv, int exit_code);

/* A Status Failure, reason InternalError, code 500, message "Internal error occurred: <msg>",
 * as the kubelet reports an exec that could not run. NULL: -ENOMEM. */
char *xp_rc_status_error(const char *message);
