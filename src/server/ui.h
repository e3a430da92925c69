/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The web dashboard's routes (ui.c, docs/dashboard.md). */

#include <stdbool.h>

struct request;
struct route;
struct reply;

/* The dashboard's own files (/ui, /ui/...), which need no token; /ui/api/ does. */
bool ui_path_is_public(const char *path);

/* GET /ui, /ui/, /ui/{file}: the embedded files, with ETags and the page's security headers. */
int handle_ui_asset(const struct request *req, const struct route *route, struct reply *ret);
/* GET /ui/api/history: the server's last hour (controller/history.h) as JSON. */
int handle_ui_history(const struct request *req, const struct route *route, struct reply *ret);
