/* SPDX-License-Identifier: Apache-2.0 */
/* Replies every handler builds: Kubernetes Status objects, JSON bodies, store errors. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

static int reply_set(struct reply *ret, unsigned code, json_t *body)
{
        json_decref(ret->body);
        ret->code = code;
        ret->body = body;
        return 0;
}

/* A Status of the given code and reason, with details.name, .group and .kind where given. */
static int status_build(struct reply *ret,
                        unsigned code,
                        const char *reason,
                        const char *name,
                        const char *group,
                        const char *kind,
                        char *message)
{
        json_t *details, *status;

        /* Names from the URL may hold any bytes; a JSON string must be UTF-8. */
        if (!xp_utf8_valid(message, strlen(message)))
                for (char *c = message; *c; c++)
                        if ((unsigned char)*c >= 0x80)
                                *c = '?';

        details = json_object();
        if (!details)
                return -ENOMEM;
        if (name && xp_utf8_valid(name, strlen(name)))
                json_object_set_new(details, "name", json_string(name));
        if (group && group[0])
                json_object_set_new(details, "group", json_string(group));
        if (kind)
                json_object_set_new(details, "kind", json_string(kind));
        status = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:o, s:I}",
                           "kind",
                           "Status",
                           "apiVersion",
                           "v1",
                           "metadata",
                           "status",
                           "Failure",
                           "message",
                           message,
                           "reason",
                           reason,
                           "details",
                           details,
                           "code",
                           (json_int_t)code);
        if (!status)
                return -ENOMEM;
        return reply_set(ret, code, status);
}

static int status_vformat(struct reply *ret,
                          unsigned code,
                          const char *reason,
                          const char *name,
                          const char *group,
                          const char *kind,
                          const char *fmt,
                          va_list ap) __attribute__((format(printf, 7, 0)));
static int status_vformat(struct reply *ret,
                          unsigned code,
                          const char *reason,
                          const char *name,
                          const char *group,
                          const char *kind,
                          const char *fmt,
                          va_list ap)
{
        char message[2048];

        vsnprintf(message, sizeof message, fmt, ap);
        return status_build(ret, code, reason, name, group, kind, message);
}

int reply_status(struct reply *ret,
                 unsigned code,
                 const char *reason,
                 const char *name,
                 const char *kind,
                 const char *fmt,
                 ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = status_vformat(ret, code, reason, name, NULL, kind, fmt, ap);
        va_end(ap);
        return r;
}

int reply_status_group(struct reply *ret,
                       unsigned code,
                       const char *reason,
                       const char *name,
                       const char *group,
                       const char *kind,
                       const char *fmt,
                       ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = status_vformat(ret, code, reason, name, group, kind, fmt, ap);
        va_end(ap);
        return r;
}

void kind_qualified(const struct xp_kind *kind, bool resource, char buf[static 128])
{
        const char *name = resource ? xp_kind_url_plural(kind) : kind->kind;

        if (kind->group[0])
                snprintf(buf, 128, "%s.%s", name, kind->group);
        else
                snprintf(buf, 128, "%s", name);
}

const char *cause_type(const char *message)
{
        static const struct {
                const char *prefix, *type;
        } types[] = {
            {"Required value", "FieldValueRequired"},
            {"Unsupported value", "FieldValueNotSupported"},
            {"Forbidden", "FieldValueForbidden"},
            {"Duplicate value", "FieldValueDuplicate"},
            {"Too long", "FieldValueTooLong"},
            {"Too many", "FieldValueTooMany"},
            {"Not found", "FieldValueNotFound"},
        };

        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                if (strncmp(message, types[i].prefix, strlen(types[i].prefix)) == 0)
                        return types[i].type;
        return "FieldValueInvalid";
}

int reply_invalid(struct reply *ret,
                  const struct xp_kind *kind,
                  const char *name,
                  const char *problem)
{
        const char *sep = strstr(problem, ": ");
        char qualified[128];
        json_t *cause, *causes;
        int r;

        if (!name)
                name = "";
        /* Strict field validation's unknown fields are 400, as the API server's decoder says. */
        if (sep && strncmp(sep + 2, "unknown field \"", 15) == 0)
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    name,
                    kind->plural,
                    "%s in version \"%s\" cannot be handled as a %s: strict decoding error: unknown field \"%.*s\"",
                    kind->kind,
                    kind->version,
                    kind->kind,
                    (int)(sep - problem),
                    problem);
        /* errors.NewInvalid(): details.kind is the kind, as kubectl prints it: The Pod "x" is
         * invalid: FIELD: MESSAGE, from the causes */
        kind_qualified(kind, false, qualified);
        r = reply_status_group(ret,
                               422,
                               "Invalid",
                               name,
                               kind->group,
                               kind->kind,
                               "%s \"%s\" is invalid: %s",
                               qualified,
                               name,
                               problem);
        if (r < 0)
                return r;
        cause = sep ? json_pack("{s:s, s:s, s:s%}",
                                "reason",
                                cause_type(sep + 2),
                                "message",
                                sep + 2,
                                "field",
                                problem,
                                (size_t)(sep - problem))
                    : json_pack("{s:s, s:s}", "reason", cause_type(problem), "message", problem);
        causes = cause ? json_pack("[o]", cause) : NULL;
        if (!causes ||
            json_object_set_new(json_object_get(ret->body, "details"), "causes", causes) < 0)
                return -ENOMEM;
        return 0;
}

int reply_patch_failed(struct reply *ret, const char *why)
{
        char *patch_warning = ret->warning;
        size_t n = 0, free_pair = 0;

        /* a warn-agent "-" warning (RFC 7234), as kube-apiserver sends them: printable ASCII in
         * a quoted string */
        n += (size_t)snprintf(patch_warning, sizeof ret->warning, "299 - \"");
        for (const char *c = why; *c && n + 4 < sizeof ret->warning; c++) {
                if (*c == '"' || *c == '\\')
                        patch_warning[n++] = '\\';
                patch_warning[n++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
        }
        patch_warning[n++] = '"';
        patch_warning[n] = '\0';
        while (free_pair + 2 < XP_ELEMENTSOF(ret->headers) && ret->headers[free_pair])
                free_pair += 2;
        if (free_pair + 2 < XP_ELEMENTSOF(ret->headers)) {
                ret->headers[free_pair] = "Warning";
                ret->headers[free_pair + 1] = patch_warning;
                ret->headers[free_pair + 2] = NULL;
        }
        return reply_status(ret,
                            422,
                            "Invalid",
                            NULL,
                            NULL,
                            "the server rejected our request due to an error in our request");
}

int reply_success(struct reply *ret, unsigned code)
{
        json_t *status = json_pack("{s:s, s:s, s:{}, s:s, s:I}",
                                   "kind",
                                   "Status",
                                   "apiVersion",
                                   "v1",
                                   "metadata",
                                   "status",
                                   "Success",
                                   "code",
                                   (json_int_t)code);

        if (!status)
                return -ENOMEM;
        return reply_set(ret, code, status);
}

int reply_json(struct reply *ret, unsigned code, json_t *body)
{
        if (!body)
                return -ENOMEM;
        return reply_set(ret, code, body);
}

bool text_is_ascii(const char *text, size_t len)
{
        uint64_t any = 0, word;
        size_t i = 0;

        /* eight bytes at a time: it runs over every object a watch or a list passes on */
        for (; i + 8 <= len; i += 8) {
                memcpy(&word, text + i, 8);
                any |= word;
        }
        for (; i < len; i++)
                any |= (unsigned char)text[i];
        return !(any & UINT64_C(0x8080808080808080));
}

int reply_written(struct reply *ret, unsigned code, char **text, json_t **object)
{
        size_t len = *text ? strlen(*text) : 0;
        char *line;

        /* The store's text is UTF-8; an answer escapes everything else to ASCII, as ever. */
        if (!text_is_ascii(*text, len))
                len = 0;
        line = len ? realloc(*text, len + 2) : NULL;
        if (!line)
                return reply_json(ret, code, TAKE_PTR(*object));
        /* One line per document, as send_reply() writes a JSON body. */
        line[len] = '\n';
        line[len + 1] = '\0';
        *text = NULL;
        json_decref(ret->body);
        ret->body = NULL;
        ret->code = code;
        ret->text = line;
        ret->content_type = "application/json";
        return 0;
}

int reply_store_error(struct reply *ret,
                      int r,
                      const struct xp_kind *kind,
                      const char *name,
                      const struct xp_error *err)
{
        const char *plural = kind ? kind->plural : NULL, *group = kind ? kind->group : NULL;
        char what[128] = "object";

        if (!name)
                name = "";
        /* errors.NewNotFound() and friends name the resource with its group:
         * leases.coordination.k8s.io */
        if (kind)
                kind_qualified(kind, true, what);
        switch (r) {
        case -ENOENT:
                return reply_status_group(
                    ret, 404, "NotFound", name, group, plural, "%s \"%s\" not found", what, name);
        case -EEXIST:
                return reply_status_group(ret,
                                          409,
                                          "AlreadyExists",
                                          name,
                                          group,
                                          plural,
                                          "%s \"%s\" already exists",
                                          what,
                                          name);
        case -ESTALE:
                return reply_status_group(
                    ret,
                    409,
                    "Conflict",
                    name,
                    group,
                    plural,
                    "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please apply your changes to the latest version and try again",
                    what,
                    name);
        case -EINVAL:
                return reply_status(
                    ret, 400, "BadRequest", name, plural, "%s", xp_error_message(err));
        case -E2BIG:
                return reply_status(
                    ret, 413, "RequestEntityTooLarge", name, plural, "%s", xp_error_message(err));
        case -XP_STORE_EXPIRED:
                return reply_status(ret, 410, "Expired", NULL, NULL, "%s", xp_error_message(err));
        default:
                /* a stored row failed its checksum (-EUCLEAN): the operator must hear of it,
                 * not only the client (docs/store.md, "Damage") */
                if (r == -EUCLEAN)
                        xp_log(LOG_ERR, "%s", xp_error_message(err));
                return reply_status(ret,
                                    500,
                                    "InternalError",
                                    name,
                                    plural,
                                    "Internal error occurred: %s",
                                    xp_error_message(err));
        }
}

const char *store_namespace(const struct request *req, const struct xp_kind *kind)
{
        return kind->namespaced ? req->namespace : "";
}

int reply_no_resource(struct reply *ret, const char *method, const char *path)
{
        return reply_status(ret,
                            404,
                            "NotFound",
                            NULL,
                            NULL,
                            "the server could not find the requested resource: %s %s",
                            method,
                            path);
}
