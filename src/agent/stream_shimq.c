/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What attach sends a container's shim, in order (stream_internal.h). Each queued record is one
 * attach message (xpool/attach.h) as it goes on the socket, so a message is sent whole or not at
 * all and a full socket only delays what follows it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "stream_internal.h"
#include "xpool/attach.h"

struct shimq_msg {
        struct shimq_msg *next;
        size_t len;
        uint8_t data[]; /* the type, then the payload */
};

void shimq_init(struct shimq *q, int64_t now_ms, int64_t await_size_ms)
{
        *q = (struct shimq){.await_size = await_size_ms > 0,
                            .size_deadline = now_ms + await_size_ms};
}

void shimq_free(struct shimq *q)
{
        while (q->head) {
                struct shimq_msg *m = q->head;

                q->head = m->next;
                free(m);
        }
        q->tail = NULL;
        q->bytes = 0;
}

static struct shimq_msg *msg_new(uint8_t type, const void *payload, size_t len)
{
        struct shimq_msg *m = malloc(sizeof(*m) + 1 + len);

        if (!m)
                return NULL;
        m->next = NULL;
        m->len = 1 + len;
        m->data[0] = type;
        if (len)
                memcpy(m->data + 1, payload, len);
        return m;
}

static void append(struct shimq *q, struct shimq_msg *m)
{
        if (q->tail)
                q->tail->next = m;
        else
                q->head = m;
        q->tail = m;
        q->bytes += m->len - 1;
}

int shimq_stdin(struct shimq *q, const void *data, size_t len)
{
        struct shimq_msg *first = NULL, *last = NULL;

        /* built aside, so that a failure leaves the queue as it was */
        for (size_t off = 0; off < len;) {
                size_t k = len - off > XP_ATTACH_DATA_MAX ? XP_ATTACH_DATA_MAX : len - off;
                struct shimq_msg *m = msg_new(XP_ATTACH_STDIN, (const uint8_t *)data + off, k);

                if (!m) {
                        while (first) {
                                m = first->next;
                                free(first);
                                first = m;
                        }
                        return -ENOMEM;
                }
                if (last)
                        last->next = m;
                else
                        first = m;
                last = m;
                off += k;
        }
        if (!first)
                return 0;
        if (q->tail)
                q->tail->next = first;
        else
                q->head = first;
        q->tail = last;
        q->bytes += len;
        return 0;
}

int shimq_stdin_close(struct shimq *q)
{
        struct shimq_msg *m = msg_new(XP_ATTACH_STDIN_CLOSE, NULL, 0);

        if (!m)
                return -ENOMEM;
        append(q, m);
        return 0;
}

int shimq_resize(struct shimq *q, uint16_t cols, uint16_t rows)
{
        uint16_t size[2] = {cols, rows};
        struct shimq_msg *m = msg_new(XP_ATTACH_RESIZE, size, sizeof(size));

        if (!m)
                return -ENOMEM;
        if (!q->await_size) {
                append(q, m);
                return 0;
        }
        /* the first size: ahead of the keystrokes that waited for it */
        q->await_size = false;
        m->next = q->head;
        q->head = m;
        if (!q->tail)
                q->tail = m;
        q->bytes += m->len - 1;
        return 0;
}

bool shimq_ready(const struct shimq *q, int64_t now_ms)
{
        return q->head && (!q->await_size || now_ms >= q->size_deadline);
}

int64_t shimq_due(const struct shimq *q)
{
        return q->head && q->await_size ? q->size_deadline : INT64_MAX;
}

int shimq_flush(struct shimq *q, int fd, int64_t now_ms)
{
        if (!shimq_ready(q, now_ms))
                return 0;
        q->await_size = false; /* the deadline passed: stdin goes without a size */
        while (q->head) {
                struct shimq_msg *m = q->head;
                ssize_t n = send(fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n < 0) {
                        int r = -errno;

                        shimq_free(q);
                        return r;
                }
                q->head = m->next;
                if (!q->head)
                        q->tail = NULL;
                q->bytes -= m->len - 1;
                free(m);
        }
        return 0;
}
