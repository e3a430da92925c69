/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A list of the current state answered from the store's text, streamed: the answer is read from
 * one snapshot of the store (xp_store_list_open(), the version in the list's head) a few dozen
 * objects at a time as the client takes it, each object copied as the store wrote it. So a list
 * of 100,000 pods builds neither a tree of every object, nor its encoding, nor the whole answer
 * in memory, and the first bytes go out while the rest is still read. Selectors read only the
 * labels' text where they can (a pod's metadata is mostly managedFields); what matches is still
 * copied as text. An object that is not ASCII is parsed and encoded escaped, as the general path
 * answers. A Table, a page (?limit, ?continue) and a list at an older version take the general
 * path (handle_list()). Once the head is sent an error can only cut the answer short.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/selector.h"
#include "xpool/store.h"

/* rows read from the store per step: a step's text is about ROWS objects, sent before the next */
#define LIST_STREAM_ROWS 64

struct list_stream {
        struct xp_store_cursor *cursor;
        struct xp_label_selector *labels;
        struct xp_field_selector *fields;
        bool filtered;
        bool done; /* the tail is in the buffer: nothing more to read */
        char *buf; /* what is read and not yet handed out: buf[off..len) */
        size_t len, off, cap;
        size_t items;
};

static int append(struct list_stream *l, const char *text, size_t n)
{
        if (l->len + n > l->cap) {
                size_t cap = l->cap ? l->cap : 65536;
                char *buf;

                while (cap < l->len + n)
                        cap *= 2;
                buf = realloc(l->buf, cap);
                if (!buf)
                        return -ENOMEM;
                l->buf = buf;
                l->cap = cap;
        }
        memcpy(l->buf + l->len, text, n);
        l->len += n;
        return 0;
}

/* 1 when the labels at text[0..len) match, 0 when not; an object with no labels has none. */
static int labels_match(const struct xp_label_selector *selector, const char *text, size_t len)
{
        json_t *labels = len ? json_loadb(text, len, JSON_DECODE_ANY, NULL) : NULL;
        bool match;

        if (len && !labels)
                return -ENOMEM;
        match = xp_label_selector_matches(selector, labels);
        json_decref(labels);
        return match;
}

int text_matches(const struct xp_label_selector *labels,
                 const struct xp_field_selector *fields,
                 const char *text,
                 size_t len)
{
        size_t start = 0, n = 0;
        json_t *object;
        bool match;
        int r;

        if (xp_field_selector_is_empty(fields)) {
                r = xp_store_text_labels(text, len, &start, &n);
                if (r == 0 || r == -ENOENT)
                        return labels_match(labels, text + start, r == 0 ? n : 0);
        }
        object = json_loadb(text, len, 0, NULL);
        if (!object)
                return -ENOMEM;
        match = selectors_match(labels, fields, object);
        json_decref(object);
        return match;
}

/* Text that is not ASCII is parsed and encoded escaped, as the general path's answer has it. */
static int append_object(struct list_stream *l, const char *text, size_t len)
{
        json_t *object;
        char *escaped;
        int r;

        if (text_is_ascii(text, len))
                return append(l, text, len);
        object = json_loadb(text, len, 0, NULL);
        escaped = object ? json_dumps(object, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(object);
        if (!escaped)
                return -ENOMEM;
        r = append(l, escaped, strlen(escaped));
        free(escaped);
        return r;
}

static int add_item(const char *ns, const char *name, const char *text, size_t len, void *userdata)
{
        struct list_stream *l = userdata;
        int r;

        (void)ns;
        (void)name;
        if (l->filtered) {
                r = text_matches(l->labels, l->fields, text, len);
                if (r <= 0)
                        return r;
        }
        r = l->items++ ? append(l, ",", 1) : 0;
        return r < 0 ? r : append_object(l, text, len);
}

void list_stream_free(void *state)
{
        struct list_stream *l = state;

        if (!l)
                return;
        xp_store_list_close(l->cursor);
        xp_label_selector_free(l->labels);
        xp_field_selector_free(l->fields);
        free(l->buf);
        free(l);
}

int list_stream_open(struct xp_store *store,
                     const struct xp_kind *kind,
                     const char *namespace,
                     struct xp_label_selector *labels,
                     struct xp_field_selector *fields,
                     struct list_stream **ret,
                     struct xp_error *err)
{
        struct list_stream *l = calloc(1, sizeof *l);
        char head[512], rv[24];
        uint64_t version;
        int n, r;

        if (!l) {
                xp_label_selector_free(labels);
                xp_field_selector_free(fields);
                return -ENOMEM;
        }
        l->labels = labels;
        l->fields = fields;
        l->filtered = !xp_label_selector_is_empty(labels) || !xp_field_selector_is_empty(fields);
        r = xp_store_list_open(store, kind->plural, namespace, &l->cursor, &version, err);
        if (r >= 0) {
                xp_registry_version_format(version, rv);
                n = snprintf(head,
                             sizeof head,
                             "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
                             "\"resourceVersion\":\"%s\"},\"items\":[",
                             kind->list_kind,
                             kind->api_version,
                             rv);
                r = n < 0 || (size_t)n >= sizeof head ? -ENOMEM : append(l, head, (size_t)n);
        }
        if (r < 0) {
                list_stream_free(l);
                return r;
        }
        *ret = l;
        return 0;
}

ssize_t list_stream_read(void *state, char *buf, size_t max)
{
        struct list_stream *l = state;
        struct xp_error err = {0};
        size_t n;

        while (l->len - l->off < max && !l->done) {
                int r;

                if (l->off) { /* what was handed out makes room */
                        memmove(l->buf, l->buf + l->off, l->len - l->off);
                        l->len -= l->off;
                        l->off = 0;
                }
                r = xp_store_list_next(l->cursor, LIST_STREAM_ROWS, add_item, l, &err);
                if (r == 0) {
                        l->done = true;
                        r = append(l, "]}\n", 3);
                }
                if (r < 0) {
                        /* the head is sent: the answer can only be cut short, and the client
                         * sees it broken off */
                        xp_log(LOG_WARNING,
                               "a list cut short: %s",
                               err.msg[0] ? xp_error_message(&err) : strerror(-r));
                        return r;
                }
        }
        n = l->len - l->off < max ? l->len - l->off : max;
        memcpy(buf, l->buf + l->off, n);
        l->off += n;
        return (ssize_t)n;
}

int list_text(const struct request *req,
              const struct xp_kind *kind,
              const struct list_options *o,
              bool *ret_answered,
              struct reply *ret)
{
        struct xp_label_selector *labels = NULL;
        struct xp_field_selector *fields = NULL;
        struct list_stream *l = NULL;
        struct xp_error err = {0};
        int r;

        *ret_answered = false;
        if (o->limit > 0 || o->continue_token || (o->match == LIST_MATCH_EXACT && o->version) ||
            request_wants_table(req) || kind->answer_as /* each item converted */)
                return 1;
        *ret_answered = true;
        r = selectors_parse(req, kind, &labels, &fields, ret);
        if (r <= 0)
                return r;
        r = list_stream_open(req->api->store,
                             kind,
                             kind->namespaced ? req->namespace : "",
                             labels,
                             fields,
                             &l,
                             &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_store_error(ret, r, kind, NULL, &err);
        json_decref(ret->body);
        ret->body = NULL;
        ret->code = 200;
        ret->stream =
            (struct stream){.read = list_stream_read, .free = list_stream_free, .state = l};
        ret->content_type = "application/json";
        return 0;
}
