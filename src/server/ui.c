/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web dashboard (docs/dashboard.md): its files under /ui/, compiled into the binary
 * (ui_assets.h), and the history it draws (/ui/api/history). The files are public, as the login
 * page of any site is: they hold no data. Everything the page shows it reads from the API with
 * the token its user gives it, so /ui/api/ and the API itself are authenticated as every request
 * is. The page runs under a Content-Security-Policy that allows only its own files and requests
 * to this server: no inline script or style, no other origin, no frames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "ui.h"
#include "ui_assets.h"
#include "xpool/history.h"

#define UI_CSP                                                                                     \
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "          \
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

bool ui_path_is_public(const char *path)
{
        return strcmp(path, "/ui") == 0 ||
               (strncmp(path, "/ui/", 4) == 0 && strncmp(path, "/ui/api/", 8) != 0);
}

static const struct ui_asset *asset_find(const char *name)
{
        for (size_t i = 0; i < ui_assets_n; i++)
                if (strcmp(ui_assets[i].name, name) == 0)
                        return &ui_assets[i];
        return NULL;
}

static void ui_headers(struct reply *ret, const char *etag)
{
        static const char *const fixed[] = {
            "Content-Security-Policy",
            UI_CSP,
            "X-Content-Type-Options",
            "nosniff",
            "Referrer-Policy",
            "no-referrer",
            "X-Frame-Options",
            "DENY",
        };
        size_t n = sizeof fixed / sizeof fixed[0];

        memcpy(ret->headers, fixed, sizeof fixed);
        if (etag) {
                ret->headers[n++] = "ETag";
                ret->headers[n++] = etag;
        }
        ret->headers[n] = NULL;
}

/* Whether If-None-Match names etag (or is "*"): the client's copy is current. */
static bool etag_matches(const char *if_none_match, const char *etag)
{
        return if_none_match && (strstr(if_none_match, etag) || strcmp(if_none_match, "*") == 0);
}

int handle_ui_asset(const struct request *req, const struct route *route, struct reply *ret)
{
        const struct ui_asset *asset = asset_find(req->name ? req->name : "index.html");

        (void)route;
        if (!asset) {
                ui_headers(ret, NULL);
                return reply_status(ret,
                                    404,
                                    "NotFound",
                                    NULL,
                                    NULL,
                                    "the server could not find the requested resource: GET %s",
                                    req->path);
        }
        ui_headers(ret, asset->etag);
        if (etag_matches(request_header(req, "If-None-Match"), asset->etag)) {
                ret->code = 304;
                ret->text = strdup("");
        } else {
                ret->code = 200;
                ret->text = strndup(asset->data, asset->size);
        }
        ret->content_type = asset->type;
        return ret->text ? 0 : -ENOMEM;
}

int handle_ui_history(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *doc;
        int r;

        (void)route;
        r = xp_history_to_json(req->api->history, time(NULL), &doc);
        if (r < 0)
                return r;
        ui_headers(ret, NULL);
        return reply_json(ret, 200, doc);
}
