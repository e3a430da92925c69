/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The shim's side of attach (xpool/attach.h): the socket, the clients, the container's stdin.
 * The shim's loop polls what attach_poll() lists and hands the results to attach_handle(); each
 * piece of output it reads goes to attach_output() besides the log. Single-threaded, never
 * blocking: a client's writes are queued, the container's stdin is written as it takes it.
 */

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/attach.h"
#include "xpool/error.h"

#define ATTACH_POLL_MAX (2 + XP_ATTACH_CLIENTS)

struct attach_record;

struct attach_client {
        int fd; /* -1: free slot */
        bool writes_stdin;
        struct attach_record *queue, *queue_tail;
        size_t queued;
};

struct attach {
        bool opened;   /* clients[] is set up */
        int dir_fd;    /* the container's state directory */
        int listen_fd; /* -1: not serving */
        int stdin_fd;  /* the write end of the container's stdin; -1: none or closed */
        int tty_fd;    /* the container's terminal (a master of its own, for resize); -1: none */
        bool stdin_once;
        char *pending; /* stdin bytes the pipe has not taken yet */
        size_t pending_len, pending_off;
        struct attach_client clients[XP_ATTACH_CLIENTS];
        /* which pollfd is whose, from the last attach_poll() */
        int poll_kind[ATTACH_POLL_MAX];
};

/*
 * Serves DIR/attach.sock; stdin_fd (taken; -1: none) is the container's stdin to write.
 * -errno with err. attach_tty() then gives it the container's terminal (taken).
 */
int attach_open(
    struct attach *a, const char *dir, int stdin_fd, bool stdin_once, struct xp_error *err);
/* The container's stdio is the terminal whose master is tty_fd (taken): RESIZE sets its size. */
void attach_tty(struct attach *a, int tty_fd);
/* Fills fds (ATTACH_POLL_MAX at most) with what to poll; returns how many. */
size_t attach_poll(struct attach *a, struct pollfd *fds);
/* Handles the results of the last attach_poll(). */
void attach_handle(struct attach *a, const struct pollfd *fds, size_t n);
/* The container wrote data to stdout (stderr when err): to every client. */
void attach_output(struct attach *a, bool err, const char *data, size_t len);
/* The container ended: EXIT to every client (best effort), then everything closed and the socket
 * removed. Also frees a that never opened. */
void attach_close(struct attach *a);
