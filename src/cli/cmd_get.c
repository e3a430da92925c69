/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool get: objects as kubectl prints them. A named object's table comes from the server (a
 * meta.k8s.io/v1 Table; a server that answers the plain object gets the same table built here). A
 * list's table is built here, with the server's own code (xp_table_build()), from the plain list
 * decoded less what no row reads: the server streams a plain list from its stored text, while its
 * Table parses every object whole, most of the time `xpool get pods` took.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "xpool/apiresource.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/table.h"

static const char usage[] =
    "Usage: xpool get TYPE [NAME...] [-o wide|json|yaml|name] [-n NS | -A] [-l SELECTOR]\n"
    "                 [--field-selector SELECTOR] [--no-headers] [-w]\n\n"
    "Lists objects, or shows the named ones. TYPE is pods, nodes, namespaces, events or leases,\n"
    "by plural, singular or short name (po, no, ns, ev); TYPE/NAME also works.\n\n"
    "  -o, --output FORMAT      wide (more columns), json, yaml or name\n"
    "  -A, --all-namespaces     every namespace (adds a NAMESPACE column)\n"
    "  -l, --selector SEL       label selector (app=web,tier!=db)\n"
    "      --field-selector SEL field selector (spec.nodeName=gpu-1)\n"
    "      --no-headers         no header line\n"
    "  -w, --watch              after the list, print changes as they happen\n" XP_CLIENT_USAGE;

enum format {
        FORMAT_TABLE,
        FORMAT_WIDE,
        FORMAT_JSON,
        FORMAT_YAML,
        FORMAT_NAME
};

static const struct {
        const char *name;
        enum format format;
} formats[] = {
    {"wide", FORMAT_WIDE},
    {"json", FORMAT_JSON},
    {"yaml", FORMAT_YAML},
    {"name", FORMAT_NAME},
};

struct get {
        struct xp_client *client;
        const struct xp_api_resource *resource;
        enum format format;
        bool all_namespaces, no_headers, watch;
        const char *label_selector, *field_selector;
        const char *namespace; /* NULL across namespaces and for cluster-scoped resources */
        bool headers_printed;
};

static bool tabular(const struct get *g)
{
        return g->format == FORMAT_TABLE || g->format == FORMAT_WIDE;
}

/* The NAMESPACE column is the only one read from the rows' objects rather than their cells. */
static bool with_namespace(const struct get *g)
{
        return g->all_namespaces && g->resource->namespaced;
}

/*
 * What the rows' objects must hold: nothing unless the NAMESPACE column reads them. Asking the
 * server for none spares it copying and sending every object's metadata (its managedFields are
 * most of a pod's table) and spares this process decoding it.
 */
static enum xp_table_include row_objects(const struct get *g)
{
        return with_namespace(g) ? XP_TABLE_INCLUDE_METADATA : XP_TABLE_INCLUDE_NONE;
}

/* A Table for what the server answered: its own when it sent one, else one built here. */
static int to_table(const struct get *g, json_t *answer, json_t **ret)
{
        const json_t *items = json_object_get(answer, "items");
        const char *version;
        json_t *single = NULL;
        int r;

        if (xp_streq0(json_string_value(json_object_get(answer, "kind")), "Table")) {
                *ret = json_incref(answer);
                return 0;
        }
        if (!items) {
                single = json_pack("[O]", answer);
                if (!single)
                        return -ENOMEM;
                items = single;
        }
        version = json_string_value(
            json_object_get(json_object_get(answer, "metadata"), "resourceVersion"));
        r = xp_table_build(g->resource->kind, items, version, time(NULL), row_objects(g), ret);
        json_decref(single);
        return r;
}

static size_t n_rows(const json_t *table)
{
        return json_array_size(json_object_get(table, "rows"));
}

static int print_table(struct get *g, const json_t *table)
{
        struct xp_error err = {0};
        int r;

        if (n_rows(table) == 0)
                return 0;
        r = xp_table_print(stdout,
                           table,
                           g->format == FORMAT_WIDE,
                           g->no_headers || g->headers_printed,
                           with_namespace(g),
                           &err);
        if (r < 0) {
                fprintf(
                    stderr, "error: cannot print the server's table: %s\n", xp_error_message(&err));
                return r;
        }
        g->headers_printed = true;
        fflush(stdout);
        return 0;
}

static int print_names(const struct get *g, const json_t *items)
{
        char type[96];
        size_t i;
        json_t *item;

        xp_api_resource_type_name(g->resource, type, sizeof(type));
        json_array_foreach(items, i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));

                printf("%s/%s\n", type, name ? name : "");
        }
        fflush(stdout);
        return 0;
}

static void no_resources(const struct get *g)
{
        if (g->namespace)
                fprintf(stderr, "No resources found in %s namespace.\n", g->namespace);
        else
                fprintf(stderr, "No resources found\n");
}

/* Asks the server's Table for the rows' objects as row_objects() needs them. */
static int add_table_query(const struct get *g, char *buf, size_t size)
{
        if (!tabular(g) || row_objects(g) != XP_TABLE_INCLUDE_NONE)
                return 0;
        return xp_client_add_query(buf, size, "includeObject", "None");
}

static int
collection_path(const struct get *g, bool watch, const char *version, char *buf, size_t size)
{
        int r = xp_api_resource_path(g->resource, g->namespace, NULL, buf, size);

        if (r >= 0 && g->label_selector)
                r = xp_client_add_query(buf, size, "labelSelector", g->label_selector);
        if (r >= 0 && g->field_selector)
                r = xp_client_add_query(buf, size, "fieldSelector", g->field_selector);
        if (r >= 0 && watch)
                r = xp_client_add_query(buf, size, "watch", "1");
        if (r >= 0 && watch && version && *version)
                r = xp_client_add_query(buf, size, "resourceVersion", version);
        return r;
}

/* ---- watch ---- */

struct watch {
        struct get *get;
        char *line; /* the partial line so far */
        size_t len;
        int result;
};

static int watch_event(struct get *g, const char *text, size_t len)
{
        json_auto_t *event = json_loadb(text, len, 0, NULL);
        json_auto_t *items = NULL, *table = NULL;
        const char *type = json_string_value(json_object_get(event, "type"));
        json_t *object = json_object_get(event, "object");
        int r;

        if (!type || !json_is_object(object)) {
                fprintf(stderr,
                        "error: the server sent a watch event that is not {type, object}\n");
                return -EBADMSG;
        }
        if (strcmp(type, "ERROR") == 0) {
                const char *message = json_string_value(json_object_get(object, "message"));

                fprintf(stderr, "error: the watch ended: %s\n", message ? message : "(no message)");
                return -EIO;
        }
        if (strcmp(type, "BOOKMARK") == 0)
                return 0;
        switch (g->format) {
        case FORMAT_JSON:
                return xp_cli_print_json(stdout, object);
        case FORMAT_YAML:
                fputs("---\n", stdout);
                return xp_cli_print_yaml(stdout, object);
        case FORMAT_NAME:
                items = json_pack("[O]", object);
                return items ? print_names(g, items) : -ENOMEM;
        default:
                r = to_table(g, object, &table);
                return r < 0 ? r : print_table(g, table);
        }
}

static int on_watch_data(const char *data, size_t len, void *userdata)
{
        struct watch *w = userdata;

        for (size_t i = 0; i < len; i++) {
                if (data[i] != '\n') {
                        char *line;

                        if (w->len >= 16 * 1024 * 1024)
                                return w->result = -E2BIG;
                        line = realloc(w->line, w->len + 2);
                        if (!line)
                                return w->result = -ENOMEM;
                        w->line = line;
                        w->line[w->len++] = data[i];
                        continue;
                }
                if (w->len > 0) {
                        int r = watch_event(w->get, w->line, w->len);

                        w->len = 0;
                        if (r < 0)
                                return w->result = r;
                }
        }
        return 0;
}

static int watch(struct get *g, const char *version)
{
        struct watch w = {.get = g};
        struct xp_error err = {0};
        char path[4096];
        int r = collection_path(g, true, version, path, sizeof(path));

        if (r < 0) {
                fprintf(stderr, "error: the selectors are too long\n");
                return XP_EXIT_FAILURE;
        }
        r = xp_client_stream(g->client, path, "application/json", on_watch_data, &w, &err);
        free(w.line);
        if (r < 0 && r != w.result)
                xp_client_report(&err);
        return r < 0 ? XP_EXIT_FAILURE : 0;
}

/* ---- list and named objects ---- */

/*
 * The plain list at path, decoded for a table built here (to_table()). The server answers a
 * plain list from its stored text without parsing it, while its Table parses every object
 * whole; decoding here only what the rows read costs a fraction of that (docs/cli.md).
 */
static int list_for_table(const struct get *g, const char *path, json_t **ret, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        json_error_t jerr;
        size_t len;
        int r = xp_client_get_text(g->client, path, &text, &len, err);

        if (r < 0)
                return r;
        r = xp_table_list_decode(text, len, ret);
        if (r == -ENOMEM)
                return xp_errorf(err, r, "out of memory decoding the list from the server");
        if (r != -EBADMSG)
                return r;
        /* Not JSON: the whole parse says where. */
        *ret = json_loadb(text, len, 0, &jerr);
        if (!*ret)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "the server answered GET %s with something that is not JSON: "
                                 "%d:%d: %s",
                                 path,
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        json_decref(*ret);
        *ret = NULL;
        return xp_errorf(
            err, -EBADMSG, "the server answered GET %s with JSON that is not a list", path);
}

static int show_list(struct get *g)
{
        json_auto_t *answer = NULL, *table = NULL;
        struct xp_error err = {0};
        const json_t *items;
        const char *version;
        char path[4096];
        int r = collection_path(g, false, NULL, path, sizeof(path));

        if (r < 0) {
                fprintf(stderr, "error: the selectors are too long\n");
                return XP_EXIT_FAILURE;
        }
        if (tabular(g))
                r = list_for_table(g, path, &answer, &err);
        else
                r = xp_client_json(g->client, "GET", path, NULL, NULL, NULL, &answer, &err);
        if (r < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        version = json_string_value(
            json_object_get(json_object_get(answer, "metadata"), "resourceVersion"));
        items = json_object_get(answer, "items");
        if (tabular(g)) {
                r = to_table(g, answer, &table);
                if (r >= 0 && n_rows(table) == 0 && !g->watch)
                        no_resources(g);
                if (r >= 0)
                        r = print_table(g, table);
        } else if (g->format == FORMAT_NAME) {
                r = print_names(g, items);
        } else {
                json_auto_t *list = xp_cli_list_new(items ? items : json_array());

                r = !list                      ? -ENOMEM
                    : g->format == FORMAT_JSON ? xp_cli_print_json(stdout, list)
                                               : xp_cli_print_yaml(stdout, list);
        }
        if (r < 0)
                return XP_EXIT_FAILURE;
        fflush(stdout);
        return g->watch ? watch(g, version) : 0;
}

static int show_named(struct get *g, char **names, size_t n)
{
        json_auto_t *objects = json_array(), *table = NULL;
        int status = 0, r = 0;

        if (!objects)
                return XP_EXIT_FAILURE;
        for (size_t i = 0; i < n; i++) {
                json_auto_t *answer = NULL, *one = NULL;
                struct xp_error err = {0};
                char path[2048];

                if (xp_api_resource_path(g->resource, g->namespace, names[i], path, sizeof(path)) <
                        0 ||
                    add_table_query(g, path, sizeof(path)) < 0) {
                        fprintf(stderr, "error: the name %s is too long\n", names[i]);
                        status = XP_EXIT_FAILURE;
                        continue;
                }
                r = xp_client_json(g->client,
                                   "GET",
                                   path,
                                   NULL,
                                   NULL,
                                   tabular(g) ? XP_CLIENT_ACCEPT_TABLE : "application/json",
                                   &answer,
                                   &err);
                if (r < 0) {
                        xp_client_report(&err);
                        status = XP_EXIT_FAILURE;
                        /* Nothing else can work when the server is not there. */
                        if (r != -ENOENT)
                                return status;
                        continue;
                }
                if (!tabular(g)) {
                        if (json_array_append(objects, answer) < 0)
                                return XP_EXIT_FAILURE;
                        continue;
                }
                /* One table for every name, as kubectl prints them: the first one's columns. */
                if (to_table(g, answer, &one) < 0)
                        return XP_EXIT_FAILURE;
                if (!table)
                        table = json_incref(one);
                else if (json_array_extend(json_object_get(table, "rows"),
                                           json_object_get(one, "rows")) < 0)
                        return XP_EXIT_FAILURE;
        }
        if (tabular(g))
                r = table ? print_table(g, table) : 0;
        else if (g->format == FORMAT_NAME)
                r = print_names(g, objects);
        else if (json_array_size(objects) == 1)
                r = g->format == FORMAT_JSON
                        ? xp_cli_print_json(stdout, json_array_get(objects, 0))
                        : xp_cli_print_yaml(stdout, json_array_get(objects, 0));
        else if (json_array_size(objects) > 1) {
                json_auto_t *list = xp_cli_list_new(objects);

                r = !list                      ? -ENOMEM
                    : g->format == FORMAT_JSON ? xp_cli_print_json(stdout, list)
                                               : xp_cli_print_yaml(stdout, list);
        }
        return r < 0 ? XP_EXIT_FAILURE : status;
}

static int get_option(int c, const char *arg, void *userdata)
{
        struct get *g = userdata;

        switch (c) {
        case 'o': {
                size_t i;

                for (i = 0; i < XP_ELEMENTSOF(formats); i++)
                        if (strcmp(formats[i].name, arg) == 0)
                                break;
                if (i == XP_ELEMENTSOF(formats)) {
                        fprintf(
                            stderr,
                            "xpool get: unsupported output format '%s' (supported: wide, json, yaml, name)\n",
                            arg);
                        return XP_EXIT_USAGE;
                }
                g->format = formats[i].format;
                break;
        }
        case 'A':
                g->all_namespaces = true;
                break;
        case 'l':
                g->label_selector = arg;
                break;
        case 'F':
                g->field_selector = arg;
                break;
        case 'H':
                g->no_headers = true;
                break;
        case 'w':
                g->watch = true;
                break;
        }
        return 0;
}

int xp_cmd_get(int argc, char **argv)
{
        static const struct option options[] = {
            {"output", required_argument, NULL, 'o'},
            {"all-namespaces", no_argument, NULL, 'A'},
            {"selector", required_argument, NULL, 'l'},
            {"field-selector", required_argument, NULL, 'F'},
            {"no-headers", no_argument, NULL, 'H'},
            {"watch", no_argument, NULL, 'w'},
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        _cleanup_free_ char **names = NULL;
        struct xp_client_options copts = {0};
        struct get g = {.format = FORMAT_TABLE};
        struct xp_error err = {0};
        _cleanup_free_ char *type_owned = NULL;
        const char *type = NULL;
        size_t n_names = 0;
        int r;

        r = xp_client_getopt(argc, argv, "o:Al:n:wh", options, usage, &copts, get_option, &g);
        if (r != 0)
                return r < 0 ? 0 : r;
        if (optind >= argc) {
                fprintf(
                    stderr,
                    "xpool get: say what to get: a TYPE (pods, nodes, namespaces, events, leases)\n");
                fputs(usage, stderr);
                return XP_EXIT_USAGE;
        }
        names = calloc((size_t)argc, sizeof(char *));
        if (!names)
                return XP_EXIT_FAILURE;
        /* TYPE NAME... or TYPE/NAME... (one type: the table has one set of columns). */
        type = argv[optind];
        if (!strchr(type, '/')) {
                for (int i = optind + 1; i < argc; i++)
                        names[n_names++] = argv[i];
        } else {
                for (int i = optind; i < argc; i++) {
                        char *slash = strchr(argv[i], '/');

                        if (!slash || (size_t)(slash - argv[i]) != strcspn(type, "/") ||
                            strncmp(argv[i], type, (size_t)(slash - argv[i])) != 0) {
                                fprintf(
                                    stderr,
                                    "xpool get: give TYPE NAME... or TYPE/NAME... of one type, not %s after %s\n",
                                    argv[i],
                                    type);
                                return XP_EXIT_USAGE;
                        }
                        names[n_names++] = slash + 1;
                }
                type = strndup(type, strcspn(type, "/"));
                if (!type)
                        return XP_EXIT_FAILURE;
                type_owned = (char *)type;
        }
        if (g.all_namespaces && copts.namespace) {
                fprintf(stderr, "xpool get: -A and -n exclude each other\n");
                return XP_EXIT_USAGE;
        }
        if (g.watch && n_names > 0) {
                fprintf(
                    stderr,
                    "xpool get: -w watches a list: leave out the names and select with -l or --field-selector\n");
                return XP_EXIT_USAGE;
        }
        g.resource = xp_api_resource_find(type, &err);
        if (!g.resource) {
                fprintf(stderr, "error: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        r = xp_client_new(&copts, &client, &err);
        if (r < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        g.client = client;
        if (g.resource->namespaced && !(g.all_namespaces && n_names == 0))
                g.namespace = xp_client_namespace(client);
        if (n_names > 0)
                return show_named(&g, names, n_names);
        return show_list(&g);
}
