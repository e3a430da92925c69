/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The server's /metrics (docs/monitoring.md): API requests by verb, resource and code with their
 * latency, watchers, the scheduler's attempts, the store's commits, the pool's counts
 * (controller/poolstats.h) and the process. Every figure is kept up to date as things happen,
 * so a scrape costs what the series do.
 */

#include <stdbool.h>

#include "xpool/error.h"

struct xp_store;
struct xp_scheduler;
struct xp_poolstats;
struct srv_metrics;

/* Everything borrowed until srv_metrics_free(); scheduler and pool may be NULL. */
int srv_metrics_new(struct xp_store *store,
                    struct xp_scheduler *scheduler,
                    struct xp_poolstats *pool,
                    struct srv_metrics **ret);
void srv_metrics_free(struct srv_metrics *m);

/*
 * One answered request: verb as kube-apiserver labels it (GET, LIST, WATCH, POST, PUT, PATCH,
 * DELETE), resource and subresource ("" for none; static strings), the HTTP code and how long
 * it took (a watch's duration is not observed: it lasts as long as the client wants).
 */
void srv_metrics_request(struct srv_metrics *m,
                         const char *verb,
                         const char *resource,
                         const char *subresource,
                         unsigned code,
                         double seconds);
/* A watch began (+1) or ended (-1). */
void srv_metrics_watchers(struct srv_metrics *m, int delta);

/* The scheduler and the pool are going: scrapes leave their series out from now on. */
void srv_metrics_forget_sources(struct srv_metrics *m);

/* The exposition in format (enum xp_expo_format): a new string, or -ENOMEM. */
int srv_metrics_render(struct srv_metrics *m, int format, char **ret_text, size_t *ret_len);
