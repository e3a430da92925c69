/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's client slots (clientslots.h): one set of code for the writer threads' clients and
 * the idle clients of pods' starts, which status.c, events.c and config_clients.c each held a
 * copy of.
 */
#include "clientslots.h"

#include <errno.h>
#include <stdlib.h>

#include "xpool/log.h"

void xp_client_slots_init(struct xp_client_slots *s, size_t limit)
{
        *s = (struct xp_client_slots){.limit = limit < XP_CLIENT_SLOTS_MAX ? limit
                                                                           : XP_CLIENT_SLOTS_MAX};
}

bool xp_client_slots_put(struct xp_client_slots *s, struct xp_apiclient *client)
{
        if (s->n >= s->limit)
                return false;
        s->items[s->n++] = client;
        if (s->cancelled)
                xp_apiclient_cancel(client);
        return true;
}

void xp_client_slots_drop(struct xp_client_slots *s, const struct xp_apiclient *client)
{
        for (size_t i = 0; i < s->n; i++)
                if (s->items[i] == client) {
                        s->items[i] = s->items[--s->n];
                        return;
                }
}

struct xp_apiclient *xp_client_slots_pop(struct xp_client_slots *s)
{
        return s->n > 0 ? s->items[--s->n] : NULL;
}

int xp_client_slots_open(struct xp_client_slots *s,
                         const struct xp_apiclient_options *api,
                         struct xp_apiclient **ret,
                         struct xp_error *err)
{
        int r = xp_apiclient_new(api, ret, err);

        if (r < 0)
                return r;
        if (!xp_client_slots_put(s, *ret) && s->cancelled)
                xp_apiclient_cancel(*ret); /* no slot: a later cancel would miss it */
        return 0;
}

void xp_client_slots_close(struct xp_client_slots *s, struct xp_apiclient *client)
{
        if (!client)
                return;
        xp_client_slots_drop(s, client);
        xp_apiclient_free(client);
}

void xp_client_slots_init_writers(struct xp_client_slots *s,
                                  size_t limit,
                                  const struct xp_apiclient_options *api,
                                  size_t writer_size,
                                  const char *what)
{
        xp_client_slots_init(s, limit);
        s->api = api;
        s->writer_size = writer_size;
        s->what = what;
}

int xp_client_slots_thread_begin(void *userdata, void **ret_ctx)
{
        struct xp_client_slots *s = userdata;
        struct xp_apiclient **writer =
            s->writer_size >= sizeof(*writer) ? calloc(1, s->writer_size) : NULL;
        struct xp_error err = {0};
        int r;

        if (!writer)
                return -ENOMEM;
        r = xp_client_slots_open(s, s->api, writer, &err);
        if (r < 0) {
                xp_log(
                    LOG_ERR, "agent: cannot make %s's client: %s", s->what, xp_error_message(&err));
                free(writer);
                return r;
        }
        *ret_ctx = writer;
        return 0;
}

void xp_client_slots_thread_end(void *userdata, void *ctx)
{
        if (!ctx)
                return;
        xp_client_slots_close(userdata, *(struct xp_apiclient **)ctx);
        free(ctx);
}

void xp_client_slots_stopping(void *userdata)
{
        xp_client_slots_cancel(userdata);
}

void xp_client_slots_cancel(struct xp_client_slots *s)
{
        s->cancelled = true;
        for (size_t i = 0; i < s->n; i++)
                xp_apiclient_cancel(s->items[i]);
}

void xp_client_slots_free_all(struct xp_client_slots *s)
{
        while (s->n > 0)
                xp_apiclient_free(s->items[--s->n]);
}
