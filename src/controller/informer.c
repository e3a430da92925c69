/* SPDX-License-Identifier: Apache-2.0 */
/* The informer (informer.h): a list per kind, then the store's event log from there. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "informer.h"
#include "xpool/log.h"
#include "xpool/log_limit.h"
#include "xpool/map.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

#define DEFAULT_BATCH 256
/* What lists leave out, while each leaves out the same: written again after this long */
#define SKIPPED_SAID_AGAIN_MS 60000

/* The lines of the objects one list left out (a lost key file): written at its end, limited. */
struct skipped {
        char **lines;
        size_t n, cap;
        uint64_t digest; /* of the lines, in order */
        struct xp_log_limit limit;
};

struct xp_informer {
        struct xp_informer_options options;
        uint64_t *seen;     /* per handler: the log is read up to here */
        const char **kinds; /* per handler: its resource, for the waiter */
        struct xp_store_waiter *waiter;
        struct xp_store_event_buffer events; /* reused by every scan */
        struct skipped skipped;
};

int xp_informer_new(const struct xp_informer_options *options, struct xp_informer **ret)
{
        struct xp_informer *informer;

        if (!options->store || options->n_handlers == 0)
                return -EINVAL;
        informer = calloc(1, sizeof *informer);
        if (!informer)
                return -ENOMEM;
        informer->options = *options;
        if (informer->options.batch == 0)
                informer->options.batch = DEFAULT_BATCH;
        informer->seen = calloc(options->n_handlers, sizeof *informer->seen);
        informer->kinds = calloc(options->n_handlers, sizeof *informer->kinds);
        for (size_t k = 0; informer->kinds && k < options->n_handlers; k++)
                informer->kinds[k] = options->handlers[k].resource;
        if (!informer->seen || !informer->kinds ||
            xp_store_waiter_new(
                options->store, informer->kinds, options->n_handlers, &informer->waiter) < 0) {
                xp_informer_free(informer);
                return -ENOMEM;
        }
        *ret = informer;
        return 0;
}

void xp_informer_free(struct xp_informer *informer)
{
        if (!informer)
                return;
        xp_store_waiter_free(informer->waiter);
        xp_store_event_buffer_free(&informer->events);
        for (size_t i = 0; i < informer->skipped.n; i++)
                free(informer->skipped.lines[i]);
        free(informer->skipped.lines);
        free(informer->kinds);
        free(informer->seen);
        free(informer);
}

static void deliver(const struct xp_informer *informer,
                    xp_informer_fn fn,
                    const json_t *object,
                    uint64_t version)
{
        if (fn && object)
                fn(informer->options.userdata, object, version);
}

static uint64_t object_version(const json_t *object)
{
        const char *text = json_string_value(
            json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
        uint64_t version = 0;

        if (text)
                (void)xp_registry_version_parse(text, &version);
        return version;
}

/* An object the store cannot decrypt (a lost key file): left out, so the controllers and the
 * API serve everything else, and kept to be said at the list's end. */
struct skip_context {
        struct skipped *skipped;
        const char *resource;
};

/* Room for one more line: 0, or -ENOMEM. */
static int skipped_grow(struct skipped *s)
{
        size_t cap = s->cap ? 2 * s->cap : 8;
        char **lines;

        if (s->n < s->cap)
                return 0;
        lines = reallocarray(s->lines, cap, sizeof *lines);
        if (!lines)
                return -ENOMEM;
        s->lines = lines;
        s->cap = cap;
        return 0;
}

static void skipped(const char *ns, const char *name, const char *why, void *userdata)
{
        const struct skip_context *ctx = userdata;
        struct skipped *s = ctx->skipped;
        char *line = NULL;
        int n = asprintf(
            &line, "leaving out %s %s%s%s: %s", ctx->resource, ns, *ns ? "/" : "", name, why);

        if (n < 0 || skipped_grow(s) < 0) {
                /* no room to keep it: said at once rather than lost */
                xp_log(LOG_WARNING, "controllers: %s", n < 0 ? why : line);
                if (n >= 0)
                        free(line);
                return;
        }
        s->lines[s->n++] = line;
        s->digest = xp_hash_add(s->digest, line, (size_t)n + 1);
}

/*
 * The end of a list: its lines are written when what it left out differs from what the last
 * written list left out, or a minute has passed since; a list repeated meanwhile (a relist) adds
 * nothing to the log.
 */
static void skipped_say(struct skipped *s)
{
        uint64_t held = 0;

        if (xp_log_limit_check(
                &s->limit, s->digest, xp_monotonic_ms(), SKIPPED_SAID_AGAIN_MS, &held)) {
                for (size_t i = 0; i < s->n; i++)
                        xp_log(LOG_WARNING, "controllers: %s", s->lines[i]);
                if (held > 0 && s->n > 0)
                        xp_log(LOG_WARNING,
                               "controllers: (%" PRIu64
                               " lists since these lines were last written left out the same)",
                               held);
        }
        for (size_t i = 0; i < s->n; i++)
                free(s->lines[i]);
        s->n = 0;
        s->digest = XP_HASH_INIT;
}

int xp_informer_list(struct xp_informer *informer, struct xp_error *err)
{
        const struct xp_informer_options *o = &informer->options;

        informer->skipped.digest = XP_HASH_INIT;
        for (size_t k = 0; k < o->n_handlers; k++) {
                const struct xp_informer_handler *h = &o->handlers[k];
                struct skip_context skip = {.skipped = &informer->skipped, .resource = h->resource};
                json_t *items, *item;
                uint64_t version;
                size_t i;
                int r;

                r = xp_store_list_readable(
                    o->store,
                    h->resource,
                    NULL,
                    &(struct xp_store_skip){.fn = skipped, .userdata = &skip},
                    &items,
                    &version,
                    err);
                if (r < 0) {
                        skipped_say(&informer->skipped);
                        return r;
                }
                json_array_foreach(items, i, item)
                    deliver(informer, h->add, item, object_version(item));
                json_decref(items);
                informer->seen[k] = version;
        }
        skipped_say(&informer->skipped);
        return 0;
}

static xp_informer_fn callback_of(const struct xp_informer_handler *h,
                                  enum xp_store_event_type type)
{
        switch (type) {
        case XP_STORE_ADDED:
                return h->add;
        case XP_STORE_MODIFIED:
                return h->update;
        case XP_STORE_DELETED:
                return h->delete;
        }
        return NULL;
}

/* Reads one kind's events to the end of the log: 1 when any came, 0 none, -errno. */
static int sync_kind(struct xp_informer *informer, size_t k, struct xp_error *err)
{
        const struct xp_informer_options *o = &informer->options;
        const struct xp_informer_handler *h = &o->handlers[k];
        struct xp_store_event_buffer *buf = &informer->events;
        uint64_t through;
        size_t n;
        int r, any = 0;

        do {
                r = xp_store_events_scan_into(
                    o->store, h->resource, NULL, informer->seen[k], o->batch, buf, &through, err);
                if (r < 0)
                        return r;
                n = buf->n;
                for (size_t i = 0; i < n; i++)
                        deliver(informer,
                                callback_of(h, buf->events[i].type),
                                buf->events[i].object,
                                buf->events[i].resource_version);
                /* at once, as the trees were before: back to the allocator while warm */
                xp_store_event_buffer_clear(buf);
                informer->seen[k] = through;
                any |= n > 0;
        } while (n == o->batch);
        return any;
}

int xp_informer_sync(struct xp_informer *informer, struct xp_error *err)
{
        const struct xp_informer_options *o = &informer->options;
        int r, any = 0;

        for (size_t k = 0; k < o->n_handlers; k++) {
                r = sync_kind(informer, k, err);
                if (r == -XP_STORE_EXPIRED) {
                        /* what the events built may miss deletions: start again from a list */
                        if (o->reset)
                                o->reset(o->userdata);
                        r = xp_informer_list(informer, err);
                        return r < 0 ? r : 2;
                }
                if (r < 0)
                        return r;
                any |= r;
        }
        return any;
}

uint64_t xp_informer_position(const struct xp_informer *informer)
{
        uint64_t oldest = UINT64_MAX;

        for (size_t k = 0; k < informer->options.n_handlers; k++)
                if (informer->seen[k] < oldest)
                        oldest = informer->seen[k];
        return oldest;
}

int xp_informer_wait(struct xp_informer *informer, int timeout_ms)
{
        return xp_store_waiter_wait(informer->waiter, informer->seen, timeout_ms);
}

void xp_informer_wake(struct xp_informer *informer)
{
        xp_store_waiter_wake(informer->waiter);
}
