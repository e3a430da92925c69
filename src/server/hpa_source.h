/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Where the server's autoscaler controller (xpool/autoscaler.h) reads its figures: the agents'
 * usage the server keeps for metrics.k8s.io (usage.h), and a Prometheus-compatible query endpoint
 * (--hpa-prometheus-url) for External, Object and other Pods metrics.
 */

#include "xpool/autoscaler.h"
#include "xpool/error.h"

struct srv_usage;
struct srv_hpa_source;

/*
 * A source over usage (borrowed; may be NULL: no resource or device figures) and the endpoint
 * url (NULL: none): "http://HOST:PORT[/PREFIX]", HOST a name or an address. -EINVAL with err for
 * a URL it cannot use, -ENOMEM.
 */
int srv_hpa_source_new(struct srv_usage *usage,
                       const char *url,
                       struct srv_hpa_source **ret,
                       struct xp_error *err);
void srv_hpa_source_free(struct srv_hpa_source *source);
/* The ops for the controller (borrowed from source). */
const struct xp_autoscaler_metrics *srv_hpa_source_metrics(struct srv_hpa_source *source);
