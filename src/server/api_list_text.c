/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A list of the current state answered from the store's text (xp_store_list_text()): each object
 * is copied into the answer as the store wrote it, so a list of 100,000 pods builds neither a
 * tree of every object nor its encoding. Selectors parse each object to match it, but what
 * matches is still copied as text. A Table, a page (?limit, ?continue) and a list at an older
 * version take the general path (handle_list()), as does a list with an object that is not ASCII
 * (the answers escape everything else, and the general path does that).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/registry.h"
#include "xpool/selector.h"
#include "xpool/store.h"

/* the list's head, written in front of the items once the version is known */
#define HEAD_ROOM 600

struct list_text {
        struct xp_label_selector *labels;
        struct xp_field_selector *fields;
        bool filtered;
        bool not_ascii; /* an object the general path must answer */
        char *buf;
        size_t len, cap;
        size_t items;
};

static int append(struct list_text *l, const char *text, size_t n)
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

/*
 * 1 when the object matches the selectors, 0 when not. Labels alone need only the labels'
 * text: a pod's metadata also holds its managedFields, most of its size.
 */
static int matches(struct list_text *l, const char *text, size_t len)
{
        size_t start = 0, n = 0;
        json_t *object;
        bool match;
        int r;

        if (xp_field_selector_is_empty(l->fields)) {
                r = xp_store_text_labels(text, len, &start, &n);
                if (r == 0 || r == -ENOENT)
                        return labels_match(l->labels, text + start, r == 0 ? n : 0);
        }
        object = json_loadb(text, len, 0, NULL);
        if (!object)
                return -ENOMEM;
        match = selectors_match(l->labels, l->fields, object);
        json_decref(object);
        return match;
}

static int add_item(const char *ns, const char *name, const char *text, size_t len, void *userdata)
{
        struct list_text *l = userdata;
        int r;

        (void)ns;
        (void)name;
        if (!text_is_ascii(text, len)) {
                l->not_ascii = true;
                return -EILSEQ;
        }
        if (l->filtered) {
                r = matches(l, text, len);
                if (r <= 0)
                        return r;
        }
        r = l->items++ ? append(l, ",", 1) : 0;
        return r < 0 ? r : append(l, text, len);
}

/* The whole answer in l->buf: the head in front of the items, the tail after. */
static int finish(struct list_text *l, const struct xp_kind *kind, uint64_t version, char **ret)
{
        char head[HEAD_ROOM], rv[24];
        int n;

        xp_registry_version_format(version, rv);
        n = snprintf(head,
                     sizeof head,
                     "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":"
                     "\"%s\"},\"items\":[",
                     kind->list_kind,
                     kind->api_version,
                     rv);
        if (n < 0 || (size_t)n >= sizeof head || append(l, "]}\n\0", 4) < 0)
                return -ENOMEM;
        memmove(l->buf + n, l->buf + HEAD_ROOM, l->len - HEAD_ROOM);
        memcpy(l->buf, head, (size_t)n);
        *ret = l->buf;
        l->buf = NULL;
        return 0;
}

int list_text(const struct request *req,
              const struct xp_kind *kind,
              const struct list_options *o,
              bool *ret_answered,
              struct reply *ret)
{
        struct list_text l = {0};
        struct xp_error err = {0};
        uint64_t version;
        char *text = NULL;
        int r;

        *ret_answered = false;
        if (o->limit > 0 || o->continue_token || (o->match == LIST_MATCH_EXACT && o->version) ||
            request_wants_table(req))
                return 1;
        r = selectors_parse(req, kind, &l.labels, &l.fields, ret);
        if (r <= 0) {
                *ret_answered = true;
                return r;
        }
        l.filtered = !xp_label_selector_is_empty(l.labels) || !xp_field_selector_is_empty(l.fields);
        r = append(&l, (char[HEAD_ROOM]){0}, HEAD_ROOM);
        if (r >= 0)
                r = xp_store_list_text(req->api->store,
                                       kind->plural,
                                       kind->namespaced ? req->namespace : "",
                                       add_item,
                                       &l,
                                       &version,
                                       &err);
        if (r >= 0)
                r = finish(&l, kind, version, &text);
        xp_label_selector_free(l.labels);
        xp_field_selector_free(l.fields);
        free(l.buf);
        if (l.not_ascii)
                return 1;
        *ret_answered = true;
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_store_error(ret, r, kind, NULL, &err);
        json_decref(ret->body);
        ret->body = NULL;
        ret->code = 200;
        ret->text = text;
        ret->content_type = "application/json";
        return 0;
}
