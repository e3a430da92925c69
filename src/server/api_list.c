/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A list's options as kube-apiserver reads them (ListOptions): ?limit and ?continue paging,
 * ?resourceVersion with ?resourceVersionMatch, and the watch's ?sendInitialEvents and
 * ?allowWatchBookmarks, validated with ValidateListOptions' rules and words (422 Invalid on
 * ListOptions.meta.k8s.io).
 *
 * A continue token is what kube-apiserver's is: base64url (no padding) of
 * {"v":"meta.k8s.io/v1","rv":N,"start":"KEY\u0000"}, with KEY the last listed object's key
 * under its resource (pods/NAMESPACE/NAME). The next page lists the snapshot at rv
 * (xp_registry_list_at()) from after KEY; when the store's event log no longer reaches back
 * to rv the token has expired: 410 Expired, with a token in the Status' metadata.continue that
 * goes on from the same place in the current list (rv -1), as Kubernetes answers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/base64.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

#define LIST_ERRORS_MAX 4
#define TOKEN_MAX       2048 /* bytes of a continue token we read */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64url without padding (RFC 4648 section 5), as Go's RawURLEncoding. */
static char *b64url_encode(const char *data, size_t len)
{
        char *out = malloc(len / 3 * 4 + 5), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)(unsigned char)data[i] << 16;
                size_t n = len - i < 3 ? len - i : 3;

                if (n > 1)
                        v |= (uint32_t)(unsigned char)data[i + 1] << 8;
                if (n > 2)
                        v |= (unsigned char)data[i + 2];
                for (size_t k = 0; k <= n; k++)
                        *o++ = b64url[(v >> (18 - 6 * k)) & 63];
        }
        *o = '\0';
        return out;
}

static int b64url_decode(const char *text, char **ret, size_t *ret_len)
{
        size_t len = strlen(text);
        char *std = strdup(text);
        int r;

        if (!std)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (std[i] == '-')
                        std[i] = '+';
                else if (std[i] == '_')
                        std[i] = '/';
                else if (std[i] == '+' || std[i] == '/' || std[i] == '=')
                        std[i] = '!'; /* not of this alphabet */
        }
        r = xp_base64_decode(std, len, ret, ret_len);
        free(std);
        return r;
}

/* The key under the resource that lists sort by: "pods/NAMESPACE/NAME" ("nodes//NAME"). */
static void list_key(const struct xp_kind *kind, const json_t *object, char *buf, size_t size)
{
        const json_t *meta = json_object_get(object, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));

        snprintf(buf, size, "%s/%s/%s", kind->plural, ns ? ns : "", name ? name : "");
}

static int
list_continue_encode(const struct xp_kind *kind, const json_t *last, int64_t version, char **ret)
{
        char key[3 * XP_STORE_KEY_MAX + 8];
        json_t *token;
        char *text;
        size_t len;

        list_key(kind, last, key, sizeof(key));
        len = strlen(key);
        key[len] = '\0'; /* the token starts after the key: key + "\0" */
        token = json_pack("{s:s, s:I, s:s%}",
                          "v",
                          "meta.k8s.io/v1",
                          "rv",
                          (json_int_t)version,
                          "start",
                          key,
                          len + 1);
        text = token ? json_dumps(token, JSON_COMPACT) : NULL;
        json_decref(token);
        if (!text)
                return -ENOMEM;
        *ret = b64url_encode(text, strlen(text));
        free(text);
        return *ret ? 0 : -ENOMEM;
}

/* 400 invalid continue token, in kube-apiserver's words. */
static int bad_token(struct reply *ret, const char *why)
{
        return reply_status(ret,
                            400,
                            "BadRequest",
                            NULL,
                            NULL,
                            "invalid continue token: continue key is not valid%s%s",
                            why[0] ? ": " : "",
                            why);
}

/* Reads o->continue_token into o->start and o->continue_rv: 1, or 0 with ret filled. */
static int continue_decode(const struct request *req,
                           const struct xp_kind *kind,
                           struct list_options *o,
                           struct reply *ret)
{
        char prefix[2 * XP_STORE_KEY_MAX + 4], *data = NULL;
        const char *v, *start;
        json_t *token;
        size_t len, start_len;
        json_int_t rv;

        if (strlen(o->continue_token) > TOKEN_MAX ||
            b64url_decode(o->continue_token, &data, &len) < 0)
                return bad_token(ret, "illegal base64 data");
        token = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
        free(data);
        if (!json_is_object(token)) {
                json_decref(token);
                return bad_token(ret, "not a JSON object");
        }
        v = json_string_value(json_object_get(token, "v"));
        rv = json_integer_value(json_object_get(token, "rv"));
        start = json_string_value(json_object_get(token, "start"));
        start_len = json_string_length(json_object_get(token, "start"));
        snprintf(prefix,
                 sizeof(prefix),
                 "%s/%s%s",
                 kind->plural,
                 kind->namespaced && req->namespace ? req->namespace : "",
                 kind->namespaced && req->namespace ? "/" : "");
        if (!v || strcmp(v, "meta.k8s.io/v1") != 0) {
                json_decref(token);
                return bad_token(ret, "server does not recognize this encoded version");
        }
        if (rv == 0 || !json_is_integer(json_object_get(token, "rv"))) {
                json_decref(token);
                return bad_token(
                    ret, "incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
        }
        if (!start || !start_len) {
                json_decref(token);
                return bad_token(ret, "encoded start key empty (version meta.k8s.io/v1)");
        }
        if (strncmp(start, prefix, strlen(prefix)) != 0 || start_len >= sizeof(o->start)) {
                json_decref(token);
                return bad_token(ret, "the token continues another list");
        }
        memcpy(o->start, start, start_len);
        o->start[start_len] = '\0';
        o->start_len = start_len;
        o->continue_rv = rv;
        json_decref(token);
        return 1;
}

/* ---- validation ----------------------------------------------------------------------------- */

struct list_errors {
        const char *items[LIST_ERRORS_MAX];
        char buf[LIST_ERRORS_MAX][192];
        size_t n;
};

static void list_error(struct list_errors *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void list_error(struct list_errors *e, const char *fmt, ...)
{
        va_list ap;

        if (e->n >= LIST_ERRORS_MAX)
                return;
        va_start(ap, fmt);
        vsnprintf(e->buf[e->n], sizeof(e->buf[e->n]), fmt, ap);
        va_end(ap);
        e->items[e->n] = e->buf[e->n];
        e->n++;
}

/* errors.NewInvalid(ListOptions.meta.k8s.io, "", errs): the list in brackets when more than one. */
static int reply_list_errors(struct reply *ret, const struct list_errors *e)
{
        char message[1024] = "";
        json_t *causes = json_array();
        int r;

        if (!causes)
                return -ENOMEM;
        for (size_t i = 0; i < e->n; i++) {
                const char *sep = strstr(e->items[i], ": ");
                size_t used = strlen(message);

                snprintf(
                    message + used, sizeof(message) - used, "%s%s", i ? ", " : "", e->items[i]);
                if (json_array_append_new(causes,
                                          json_pack("{s:s, s:s, s:s%}",
                                                    "reason",
                                                    cause_type(sep + 2),
                                                    "message",
                                                    sep + 2,
                                                    "field",
                                                    e->items[i],
                                                    (size_t)(sep - e->items[i]))) < 0) {
                        json_decref(causes);
                        return -ENOMEM;
                }
        }
        r = reply_status_group(ret,
                               422,
                               "Invalid",
                               "",
                               "meta.k8s.io",
                               "ListOptions",
                               e->n > 1 ? "ListOptions.meta.k8s.io \"\" is invalid: [%s]"
                                        : "ListOptions.meta.k8s.io \"\" is invalid: %s",
                               message);
        if (r < 0 ||
            json_object_set_new(json_object_get(ret->body, "details"), "causes", causes) < 0)
                return -ENOMEM;
        return 0;
}

/* validateWatchOptions, with the WatchList feature on as in Kubernetes 1.32. */
static void check_watch(const struct list_options *o, const char *match, struct list_errors *e)
{
        if (o->send_initial >= 0 && o->match != LIST_MATCH_NOT_OLDER)
                list_error(e,
                           "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                           "resourceVersionMatch to NotOlderThan");
        if (!match || !match[0])
                return;
        if (o->send_initial < 0)
                list_error(e,
                           "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
                           "for watch unless sendInitialEvents is provided");
        if (o->match != LIST_MATCH_NOT_OLDER)
                list_error(e,
                           "resourceVersionMatch: Unsupported value: \"%s\": supported values: "
                           "\"NotOlderThan\"",
                           match);
        if (o->continue_token)
                list_error(e,
                           "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
                           "when continue is provided");
}

/* ValidateListOptions for a list. */
static void
check_list(const struct list_options *o, const char *rv, const char *match, struct list_errors *e)
{
        if (match && match[0]) {
                if (!rv || !rv[0])
                        list_error(e,
                                   "resourceVersionMatch: Forbidden: resourceVersionMatch is "
                                   "forbidden unless resourceVersion is provided");
                if (o->continue_token)
                        list_error(e,
                                   "resourceVersionMatch: Forbidden: resourceVersionMatch is "
                                   "forbidden when continue is provided");
                if (o->match == LIST_MATCH_OTHER)
                        list_error(e,
                                   "resourceVersionMatch: Unsupported value: \"%s\": supported "
                                   "values: \"Exact\", \"NotOlderThan\", \"\"",
                                   match);
                if (o->match == LIST_MATCH_EXACT && rv && strcmp(rv, "0") == 0)
                        list_error(e,
                                   "resourceVersionMatch: Forbidden: resourceVersionMatch "
                                   "\"exact\" is forbidden for resourceVersion \"0\"");
        }
        if (o->send_initial >= 0)
                list_error(e,
                           "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
}

static enum list_match match_parse(const char *match)
{
        if (!match || !match[0])
                return LIST_MATCH_NONE;
        if (strcmp(match, "Exact") == 0)
                return LIST_MATCH_EXACT;
        if (strcmp(match, "NotOlderThan") == 0)
                return LIST_MATCH_NOT_OLDER;
        return LIST_MATCH_OTHER;
}

/* ?limit: a non-negative integer (0 or absent: everything). */
static int limit_parse(const char *v, int64_t *ret_limit, struct reply *ret)
{
        char *end;
        long long n;

        *ret_limit = 0;
        if (!v || !v[0])
                return 1;
        errno = 0;
        n = strtoll(v, &end, 10);
        if (errno || *end)
                return reply_status(ret,
                                    400,
                                    "BadRequest",
                                    NULL,
                                    NULL,
                                    "limit: Invalid value: %s: expected an integer",
                                    xp_quote(v, (char[XP_QUOTE_MAX]){0}));
        *ret_limit = n > 0 ? n : 0; /* kube-apiserver lists everything for a negative limit */
        return 1;
}

int list_options_parse(const struct request *req,
                       const struct xp_kind *kind,
                       bool watch,
                       struct list_options *o,
                       struct reply *ret)
{
        const char *rv = request_query(req, "resourceVersion");
        const char *match = request_query(req, "resourceVersionMatch");
        const char *send = request_query(req, "sendInitialEvents");
        struct list_errors errors = {0};
        int r;

        *o = (struct list_options){.send_initial = -1};
        o->continue_token = request_query(req, "continue");
        if (o->continue_token && !o->continue_token[0])
                o->continue_token = NULL;
        o->match = match_parse(match);
        o->bookmarks = query_flag(request_query(req, "allowWatchBookmarks"));
        if (send)
                o->send_initial = query_flag(send);
        r = limit_parse(request_query(req, "limit"), &o->limit, ret);
        if (r <= 0)
                return r;
        if (watch)
                check_watch(o, match, &errors);
        else
                check_list(o, rv, match, &errors);
        if (errors.n)
                return reply_list_errors(ret, &errors);
        if (rv && rv[0] && strcmp(rv, "0") != 0) {
                if (!xp_registry_version_parse(rv, &o->version))
                        return reply_status(
                            ret,
                            400,
                            "BadRequest",
                            NULL,
                            NULL,
                            "resourceVersion: Invalid value: %s: expected a resource version this server wrote",
                            xp_quote(rv, (char[XP_QUOTE_MAX]){0}));
                if (o->continue_token && !watch)
                        return reply_status(
                            ret,
                            400,
                            "BadRequest",
                            NULL,
                            NULL,
                            "specifying resource version is not allowed when using continue");
        }
        if (o->continue_token && !watch)
                return continue_decode(req, kind, o, ret);
        return wait_fresh(req, rv, ret);
}

/* ---- one page ------------------------------------------------------------------------------- */

/* 410 Expired with a token that goes on from the same place in the current list. */
static int
reply_expired(const struct xp_kind *kind, const struct list_options *o, struct reply *ret)
{
        json_t *token = json_pack("{s:s, s:I, s:s%}",
                                  "v",
                                  "meta.k8s.io/v1",
                                  "rv",
                                  (json_int_t)-1,
                                  "start",
                                  o->start,
                                  o->start_len);
        char *text = token ? json_dumps(token, JSON_COMPACT) : NULL, *encoded;
        int r;

        (void)kind;
        json_decref(token);
        encoded = text ? b64url_encode(text, strlen(text)) : NULL;
        free(text);
        if (!encoded)
                return -ENOMEM;
        r = reply_status(
            ret,
            410,
            "Expired",
            NULL,
            NULL,
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.");
        if (r >= 0 && json_object_set_new(json_object_get(ret->body, "metadata"),
                                          "continue",
                                          json_string(encoded)) < 0)
                r = -ENOMEM;
        free(encoded);
        return r;
}

int list_read(const struct request *req,
              const struct xp_kind *kind,
              const struct list_options *o,
              json_t **ret_items,
              uint64_t *ret_version,
              struct reply *ret)
{
        const char *ns = kind->namespaced ? req->namespace : "";
        struct xp_error err = {0};
        uint64_t at = 0;
        int r;

        if (o->continue_token && o->continue_rv > 0)
                at = (uint64_t)o->continue_rv;
        else if (o->match == LIST_MATCH_EXACT)
                at = o->version;
        r = xp_registry_list_at(
            req->api->store, kind->plural, ns, at, ret_items, ret_version, &err);
        if (r == -XP_STORE_EXPIRED && o->continue_token)
                return reply_expired(kind, o, ret);
        if (r < 0)
                return reply_store_error(ret, r, kind, NULL, &err);
        return 1;
}

int list_page(const struct xp_kind *kind,
              const struct list_options *o,
              json_t *items,
              uint64_t version,
              json_t **ret_page,
              char **ret_continue,
              int64_t *ret_remaining)
{
        json_t *page = json_array(), *item;
        size_t i, skipped = 0;
        int r = 0;

        *ret_continue = NULL;
        *ret_remaining = -1;
        if (!page)
                return -ENOMEM;
        json_array_foreach(items, i, item)
        {
                char key[3 * XP_STORE_KEY_MAX + 8];

                list_key(kind, item, key, sizeof(key));
                /* the start is the last key and a NUL: everything after the key itself */
                if (o->continue_token && strcmp(key, o->start) <= 0) {
                        skipped++;
                        continue;
                }
                if (o->limit > 0 && json_array_size(page) == (size_t)o->limit) {
                        r = list_continue_encode(kind,
                                                 json_array_get(page, json_array_size(page) - 1),
                                                 (int64_t)version,
                                                 ret_continue);
                        *ret_remaining = (int64_t)(json_array_size(items) - i);
                        break;
                }
                if (json_array_append(page, item) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        (void)skipped;
        if (r < 0) {
                json_decref(page);
                return r;
        }
        *ret_page = page;
        return 0;
}
