/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Endpoints (core/v1) and EndpointSlice (discovery.k8s.io/v1), document kinds (xpool/doc.h):
 * stored with their ports' protocol defaulted to TCP, an EndpointSlice's addressType checked,
 * and kubectl's tables. The server keeps the `kubernetes` Service's pair pointing at itself
 * (src/server/api_service.c); nothing else writes them for now. docs/server.md, "Services".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/strutil.h"

#define LIST_MAX 3 /* kubectl shows three endpoints, then "+ N more..." */

static int default_protocols(json_t *ports)
{
        size_t i;
        json_t *p;

        json_array_foreach(ports, i, p)
        {
                if (json_is_object(p) && !json_object_get(p, "protocol") &&
                    json_object_set_new(p, "protocol", json_string("TCP")) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int endpoints_defaults(struct xp_doc *doc)
{
        size_t i;
        json_t *subset;

        json_array_foreach(json_object_get(doc->body, "subsets"), i, subset)
        {
                if (default_protocols(json_object_get(subset, "ports")) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int endpointslice_defaults(struct xp_doc *doc)
{
        return default_protocols(json_object_get(doc->body, "ports"));
}

static int endpointslice_validate(struct xp_decode_ctx *ctx,
                                  const struct xp_doc *doc,
                                  const struct xp_doc *old)
{
        const char *type = xp_json_str_at(doc->body, "addressType", NULL);

        if (!type)
                return xp_fail_field(ctx, -EINVAL, "addressType", "Required value");
        if (!xp_streq0(type, "IPv4") && !xp_streq0(type, "IPv6") && !xp_streq0(type, "FQDN"))
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "addressType",
                    "Unsupported value: \"%s\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"",
                    type);
        if (old && !xp_streq0(type, xp_json_str_at(old->body, "addressType", NULL)))
                return xp_fail_field(
                    ctx, -EINVAL, "addressType", "Invalid value: \"%s\": field is immutable", type);
        return 0;
}

/* ---- the lists kubectl prints: "a,b,c + 2 more..." ------------------------------------------ */

struct shortlist {
        char text[512];
        size_t shown, count;
};

static void shortlist_add(struct shortlist *l, const char *item)
{
        l->count++;
        if (l->shown >= LIST_MAX)
                return;
        if (l->shown++)
                strncat(l->text, ",", sizeof(l->text) - strlen(l->text) - 1);
        strncat(l->text, item, sizeof(l->text) - strlen(l->text) - 1);
}

static int shortlist_cell(json_t *cells, const struct shortlist *l, const char *empty)
{
        if (l->count == 0)
                return table_cell_str(cells, empty);
        if (l->count > LIST_MAX)
                return table_cell_printf(
                    cells, "%s + %zu more...", l->text, l->count - (size_t)LIST_MAX);
        return table_cell_str(cells, l->text);
}

/* kubectl's formatEndpoints: ip:port per address and port ([ip]:port for IPv6). */
static int endpoints_cell(json_t *cells, const json_t *object)
{
        struct shortlist l = {.text = ""};
        size_t i, j, k;
        json_t *subset, *port, *address;

        json_array_foreach(table_array(object, "subsets"), i, subset)
        {
                const json_t *addresses = table_array(subset, "addresses");

                if (json_array_size(table_array(subset, "ports")) == 0) {
                        json_array_foreach(addresses, k, address)
                            shortlist_add(&l, table_str0(address, "ip"));
                        continue;
                }
                json_array_foreach(table_array(subset, "ports"), j, port)
                {
                        json_array_foreach(addresses, k, address)
                        {
                                const char *ip = table_str0(address, "ip");
                                char one[96];

                                snprintf(one,
                                         sizeof(one),
                                         strchr(ip, ':') ? "[%s]:%lld" : "%s:%lld",
                                         ip,
                                         (long long)table_int(port, "port"));
                                shortlist_add(&l, one);
                        }
                }
        }
        return shortlist_cell(cells, &l, "<none>");
}

static const struct table_column endpoints_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Endpoints",
     .type = "string",
     .description = "The addresses and ports of the endpoints."},
    TABLE_AGE_COLUMN,
};

static int endpoints_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = endpoints_cell(cells, object);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind endpoints_table = {
    .kind = "Endpoints",
    .columns = endpoints_columns,
    .n_columns = XP_ELEMENTSOF(endpoints_columns),
    .row = endpoints_row,
};

static const struct table_column endpointslice_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "AddressType",
     .type = "string",
     .description = "The type of address carried by this EndpointSlice."},
    {.name = "Ports", .type = "string", .description = "The network ports of the endpoints."},
    {.name = "Endpoints", .type = "string", .description = "The addresses of the endpoints."},
    TABLE_AGE_COLUMN,
};

static int endpointslice_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        struct shortlist ports = {.text = ""}, addresses = {.text = ""};
        size_t i, j;
        json_t *p, *e, *a;
        int r;

        (void)row;
        json_array_foreach(table_array(object, "ports"), i, p)
        {
                char one[32];

                if (table_get(p, "port"))
                        snprintf(one, sizeof(one), "%lld", (long long)table_int(p, "port"));
                shortlist_add(&ports,
                              table_get(p, "port") ? one : (table_str(p, "name") ?: "<unset>"));
        }
        json_array_foreach(table_array(object, "endpoints"), i, e)
        {
                json_array_foreach(table_array(e, "addresses"), j, a)
                    shortlist_add(&addresses, json_string_value(a) ?: "");
        }
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "addressType"));
        if (r >= 0)
                r = shortlist_cell(cells, &ports, "<unset>");
        if (r >= 0)
                r = shortlist_cell(cells, &addresses, "<unset>");
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind endpointslice_table = {
    .kind = "EndpointSlice",
    .columns = endpointslice_columns,
    .n_columns = XP_ELEMENTSOF(endpointslice_columns),
    .row = endpointslice_row,
};

static const char *const endpoints_short_names[] = {"ep", NULL};
static const char *const no_short_names[] = {NULL};

XP_DOC_KIND_DECODER(xp_kind_endpoints)

const struct xp_kind xp_kind_endpoints = {
    .kind = "Endpoints",
    .list_kind = "EndpointsList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "endpoints",
    .singular = "endpoints",
    .short_names = endpoints_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_endpoints),
    .doc_defaults = endpoints_defaults,
    .table = &endpoints_table,
};

XP_DOC_KIND_DECODER(xp_kind_endpointslice)

const struct xp_kind xp_kind_endpointslice = {
    .kind = "EndpointSlice",
    .list_kind = "EndpointSliceList",
    .group = "discovery.k8s.io",
    .version = "v1",
    .api_version = "discovery.k8s.io/v1",
    .plural = "endpointslices",
    .singular = "endpointslice",
    .short_names = no_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_endpointslice),
    .doc_defaults = endpointslice_defaults,
    .doc_validate = endpointslice_validate,
    .table = &endpointslice_table,
};
