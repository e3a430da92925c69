/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Field selectors. Parsing follows k8s.io/apimachinery/pkg/fields (terms split at unescaped
 * commas, the first "!=", "==" or "=" in a term is its operator, nothing trimmed, empty terms
 * skipped); the fields each kind supports follow the API server's field label conversion
 * functions (pkg/apis/core/v1/conversion.go) and what its registries put into an object's
 * selectable fields (pkg/registry/core/pod, node, event, namespace), so that a selector answers
 * here as it would there.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/selector.h"
#include "xpool/strutil.h"

enum field_source {
        FROM_PATH,         /* the string (or boolean) at path; "" when missing */
        FROM_BOOL,         /* the boolean at path; "false" when missing (Kubernetes' zero value) */
        FROM_POD_IP,       /* status.podIPs[0].ip, else status.podIP */
        FROM_EVENT_SOURCE, /* source.component, else reportingComponent */
        FROM_NOTHING,      /* accepted by Kubernetes but never set in its field set: always "" */
};

struct field_def {
        const char *label;
        enum field_source source;
        const char *path[3]; /* JSON member names, NULL-terminated */
};

struct kind_def {
        const char *kind;
        const struct field_def *fields;
        size_t n_fields;
};

#define META_NAME                                                                                  \
        {                                                                                          \
                .label = "metadata.name", .path = { "metadata", "name" }                           \
        }
#define META_NAMESPACE                                                                             \
        {                                                                                          \
                .label = "metadata.namespace", .path = { "metadata", "namespace" }                 \
        }

static const struct field_def pod_fields[] = {
    META_NAME,
    META_NAMESPACE,
    {.label = "spec.nodeName", .path = {"spec", "nodeName"}},
    /* what clients from before v1 sent for spec.nodeName */
    {.label = "spec.host", .path = {"spec", "nodeName"}},
    {.label = "spec.restartPolicy", .path = {"spec", "restartPolicy"}},
    {.label = "spec.schedulerName", .path = {"spec", "schedulerName"}},
    {.label = "spec.serviceAccountName", .path = {"spec", "serviceAccountName"}},
    {.label = "spec.hostNetwork", .source = FROM_BOOL, .path = {"spec", "hostNetwork"}},
    {.label = "status.phase", .path = {"status", "phase"}},
    {.label = "status.podIP", .source = FROM_POD_IP},
    {.label = "status.podIPs", .source = FROM_NOTHING},
    {.label = "status.nominatedNodeName", .path = {"status", "nominatedNodeName"}},
};

/* Nodes are cluster-scoped: Kubernetes refuses metadata.namespace for them. */
static const struct field_def node_fields[] = {
    META_NAME,
    {.label = "spec.unschedulable", .source = FROM_BOOL, .path = {"spec", "unschedulable"}},
};

static const struct field_def event_fields[] = {
    META_NAME,
    META_NAMESPACE,
    {.label = "involvedObject.kind", .path = {"involvedObject", "kind"}},
    {.label = "involvedObject.namespace", .path = {"involvedObject", "namespace"}},
    {.label = "involvedObject.name", .path = {"involvedObject", "name"}},
    {.label = "involvedObject.uid", .path = {"involvedObject", "uid"}},
    {.label = "involvedObject.apiVersion", .path = {"involvedObject", "apiVersion"}},
    {.label = "involvedObject.resourceVersion", .path = {"involvedObject", "resourceVersion"}},
    {.label = "involvedObject.fieldPath", .path = {"involvedObject", "fieldPath"}},
    {.label = "reason", .path = {"reason"}},
    {.label = "reportingComponent", .path = {"reportingComponent"}},
    {.label = "source", .source = FROM_EVENT_SOURCE},
    {.label = "type", .path = {"type"}},
};

/* Namespaces are cluster-scoped too. */
static const struct field_def namespace_fields[] = {
    META_NAME,
    {.label = "status.phase", .path = {"status", "phase"}},
};

/* Lease and every kind without its own conversion function. */
static const struct field_def meta_fields[] = {
    META_NAME,
    META_NAMESPACE,
};

static const struct kind_def kinds[] = {
    {.kind = "Pod", .fields = pod_fields, .n_fields = XP_ELEMENTSOF(pod_fields)},
    {.kind = "Node", .fields = node_fields, .n_fields = XP_ELEMENTSOF(node_fields)},
    {.kind = "Event", .fields = event_fields, .n_fields = XP_ELEMENTSOF(event_fields)},
    {.kind = "Namespace", .fields = namespace_fields, .n_fields = XP_ELEMENTSOF(namespace_fields)},
};

struct term {
        const struct field_def *field;
        char *value; /* unescaped */
        bool negated;
};

struct xp_field_selector {
        struct term *items;
        size_t n;
};

/* `fieldSelector: "<text>": <detail> at position <pos>` */
_printf_(4, 5) static int fail(
    const char *text, struct xp_error *err, size_t pos, const char *fmt, ...)
{
        char detail[XP_ERROR_MSG_MAX], q[XP_QUOTE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        return xp_errorf(
            err, -EINVAL, "fieldSelector: %s: %s at position %zu", xp_quote(text, q), detail, pos);
}

static bool is_printable(const char *s)
{
        for (; *s; s++)
                if (*s < 0x20 || *s > 0x7e)
                        return false;
        return true;
}

static const struct field_def *find_field(const char *kind, const char *label)
{
        const struct field_def *fields = meta_fields;
        size_t n = XP_ELEMENTSOF(meta_fields);

        for (size_t i = 0; kind && i < XP_ELEMENTSOF(kinds); i++)
                if (strcmp(kinds[i].kind, kind) == 0) {
                        fields = kinds[i].fields;
                        n = kinds[i].n_fields;
                }
        for (size_t i = 0; i < n; i++)
                if (strcmp(fields[i].label, label) == 0)
                        return &fields[i];
        return NULL;
}

/* Unescapes text[start..end) into *ret (caller frees): `\,` `\=` `\\`; a bare '=' is an error. */
static int unescape(const char *text, size_t start, size_t end, char **ret, struct xp_error *err)
{
        _cleanup_free_ char *value = malloc(end - start + 1);
        size_t o = 0;

        if (!value)
                return -ENOMEM;
        for (size_t i = start; i < end; i++) {
                char c = text[i];

                if (c == '=')
                        return fail(text, err, i, "unescaped '=' in a value (write '\\=')");
                if (c != '\\') {
                        value[o++] = c;
                        continue;
                }
                if (i + 1 == end)
                        return fail(
                            text, err, i, "a value cannot end in a lone '\\' (write '\\\\')");
                c = text[++i];
                if (c != '\\' && c != ',' && c != '=') {
                        char q[XP_QUOTE_MAX];

                        return fail(
                            text,
                            err,
                            i - 1,
                            "invalid escape sequence '\\' %s (only '\\,', '\\=' and '\\\\' are)",
                            xp_quote_mem(text + i, 1, q));
                }
                value[o++] = c;
        }
        value[o] = '\0';
        *ret = TAKE_PTR(value);
        return 0;
}

static void term_done(struct term *t)
{
        free(t->value);
}

void xp_field_selector_free(struct xp_field_selector *selector)
{
        if (!selector)
                return;
        for (size_t i = 0; i < selector->n; i++)
                term_done(&selector->items[i]);
        free(selector->items);
        free(selector);
}

/*
 * Parses the term text[start..end) into *t. The field's support is checked separately, after
 * every term has parsed, because Kubernetes reports syntax errors before unsupported fields.
 */
static int parse_term(const char *text,
                      size_t start,
                      size_t end,
                      struct term *t,
                      size_t *ret_field_end,
                      struct xp_error *err)
{
        size_t i, op_len = 0;

        for (i = start; i < end; i++) {
                if (text[i] == '!' && i + 1 < end && text[i + 1] == '=') {
                        t->negated = true;
                        op_len = 2;
                        break;
                }
                if (text[i] == '=') {
                        op_len = i + 1 < end && text[i + 1] == '=' ? 2 : 1;
                        break;
                }
        }
        if (op_len == 0) {
                char q[XP_QUOTE_MAX];

                return fail(text,
                            err,
                            start,
                            "expected field=value, field==value or field!=value but found %s",
                            xp_quote_mem(text + start, end - start, q));
        }
        *ret_field_end = i;
        return unescape(text, i + op_len, end, &t->value, err);
}

int xp_field_selector_parse(const char *text,
                            const char *kind,
                            struct xp_field_selector **ret,
                            struct xp_error *err)
{
        _cleanup_(xp_field_selector_freep) struct xp_field_selector *selector = NULL;
        /* where each term's field name starts and ends, for the second pass */
        size_t fields[XP_SELECTOR_REQUIREMENTS_MAX][2];
        size_t len = strlen(text), start = 0;
        char q[XP_QUOTE_MAX];

        if (len > XP_SELECTOR_TEXT_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "fieldSelector: %s: %zu bytes, more than the limit of %d",
                                 xp_quote(text, q),
                                 len,
                                 XP_SELECTOR_TEXT_MAX);
        selector = calloc(1, sizeof(*selector));
        if (!selector)
                return -ENOMEM;

        for (size_t i = 0; i <= len; i++) {
                struct term t = {0}, *items;
                int r;

                /* a backslash hides the next character, a comma among them */
                if (text[i] == '\\' && i + 1 < len) {
                        i++;
                        continue;
                }
                if (text[i] != ',' && text[i] != '\0')
                        continue;
                if (i == start) {
                        start = i + 1;
                        continue;
                }
                if (selector->n == XP_SELECTOR_REQUIREMENTS_MAX) {
                        r = xp_errorf(err,
                                      -E2BIG,
                                      "fieldSelector: %s: more than %d terms at position %zu",
                                      xp_quote(text, q),
                                      XP_SELECTOR_REQUIREMENTS_MAX,
                                      start);
                        return r;
                }
                fields[selector->n][0] = start;
                r = parse_term(text, start, i, &t, &fields[selector->n][1], err);
                items =
                    r < 0 ? NULL : reallocarray(selector->items, selector->n + 1, sizeof(*items));
                if (!items) {
                        term_done(&t);
                        return r < 0 ? r : -ENOMEM;
                }
                items[selector->n++] = t;
                selector->items = items;
                start = i + 1;
        }

        for (size_t i = 0; i < selector->n; i++) {
                size_t field_len = fields[i][1] - fields[i][0];
                _cleanup_free_ char *label = strndup(text + fields[i][0], field_len);

                if (!label)
                        return -ENOMEM;
                selector->items[i].field = find_field(kind, label);
                /* Kubernetes' message shows the label as it is; only unprintable bytes escaped */
                if (!selector->items[i].field)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "field label not supported: %s",
                                         is_printable(label) ? label : xp_escape(label, q));
        }
        *ret = TAKE_PTR(selector);
        return 0;
}

/* The JSON value at a path of member names, or NULL. */
static const json_t *get_path(const json_t *object, const char *const *path)
{
        for (; *path && object; path++)
                object = json_object_get(object, *path);
        return object;
}

/* A field's value as Kubernetes' field set holds it: strings as they are, booleans as words. */
static const char *as_string(const json_t *v)
{
        if (json_is_string(v))
                return json_string_value(v);
        if (json_is_boolean(v))
                return json_is_true(v) ? "true" : "false";
        return NULL;
}

static const char *const pod_ips_path[] = {"status", "podIPs", NULL};
static const char *const pod_ip_path[] = {"status", "podIP", NULL};
static const char *const event_source_path[] = {"source", "component", NULL};

static const char *field_value(const struct field_def *field, const json_t *object)
{
        const char *s;

        switch (field->source) {
        case FROM_PATH:
                s = as_string(get_path(object, field->path));
                return s ? s : "";
        case FROM_BOOL:
                s = as_string(get_path(object, field->path));
                return s ? s : "false";
        case FROM_POD_IP:
                /* Kubernetes keeps the first of podIPs; podIP is its v1 copy */
                s = as_string(
                    json_object_get(json_array_get(get_path(object, pod_ips_path), 0), "ip"));
                if (!s)
                        s = as_string(get_path(object, pod_ip_path));
                return s ? s : "";
        case FROM_EVENT_SOURCE:
                s = as_string(get_path(object, event_source_path));
                if (!s || !*s)
                        s = as_string(json_object_get(object, "reportingComponent"));
                return s ? s : "";
        case FROM_NOTHING:
                break;
        }
        return "";
}

bool xp_field_selector_matches(const struct xp_field_selector *selector, const json_t *object)
{
        if (!selector)
                return true;
        if (!json_is_object(object))
                object = NULL;
        for (size_t i = 0; i < selector->n; i++) {
                const struct term *t = &selector->items[i];
                bool equal = strcmp(field_value(t->field, object), t->value) == 0;

                if (equal == t->negated)
                        return false;
        }
        return true;
}

bool xp_field_selector_is_empty(const struct xp_field_selector *selector)
{
        return !selector || selector->n == 0;
}
