/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The messages on a container's attach socket (xp_runtime_attach()): its shim serves the
 * container's output to every client attached, and its stdin (when spec.containers[].stdin) to
 * those that write it. A SOCK_SEQPACKET socket at STATE/<pod uid>/<container>/attach.sock
 * (mode 0600, in the runtime's state directory, which no container sees): each message is one
 * record, its first byte the type below, the rest its payload (at most XP_ATTACH_DATA_MAX).
 *
 * The shim sends HELLO first, then the container's output as it reads it, and EXIT before it
 * closes, once the container has ended. A container with a terminal (tty: true) has one output,
 * STDOUT, and its stdin is the terminal's input: the line discipline turns a client's 0x03 into
 * SIGINT for the foreground process, and RESIZE sets the terminal's size. A client that does not
 * read keeps at most XP_ATTACH_QUEUE_MAX bytes queued; beyond that the shim closes it (the logs
 * keep everything).
 */

#include <stdint.h>

#define XP_ATTACH_SOCKET    "attach.sock"
#define XP_ATTACH_DATA_MAX  (32 * 1024)
#define XP_ATTACH_QUEUE_MAX (1024 * 1024)
#define XP_ATTACH_CLIENTS   16 /* attached at once; more are refused (closed at once) */

enum xp_attach_message {
        /* from the shim */
        XP_ATTACH_HELLO = 1,  /* payload: one byte of XP_ATTACH_HAS_* flags */
        XP_ATTACH_STDOUT = 2, /* payload: the container's output */
        XP_ATTACH_STDERR = 3,
        XP_ATTACH_EXIT = 4, /* the container ended; the shim closes next */
        /* from a client */
        XP_ATTACH_STDIN_OPEN = 16,  /* this client writes stdin (stdinOnce: its end closes it) */
        XP_ATTACH_STDIN = 17,       /* payload: bytes for the container's stdin */
        XP_ATTACH_STDIN_CLOSE = 18, /* this client's stdin ended */
        XP_ATTACH_RESIZE = 19,      /* payload: the terminal's columns then rows, two uint16_t in
                                     * host order (ignored without a terminal) */
};

#define XP_ATTACH_HAS_STDIN 0x01 /* the container's stdin is open to clients */
#define XP_ATTACH_HAS_TTY   0x02 /* the container's stdio is a terminal (spec tty: true) */
