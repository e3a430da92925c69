/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registration and heartbeats: the Node is created (or updated, keeping what the operator set:
 * labels, annotations, taints), its status written, the Lease created, and the Lease
 * kube-node-lease/NAME renewed every heartbeat, which is what the server's node monitor reads. The
 * Ready condition's heartbeat is refreshed every node_status_ms. A failed renewal is logged and
 * retried at the next heartbeat: the server marks the node Unknown only after its grace period.
 * The first renewal after failures has every pod compared with the server again (resync).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent_internal.h"
#include "devhealth.h"
#include "ephemeral.h"
#include "pull.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define LEASE_DURATION_S 40
/* how often the endpoint's serving certificate is checked for renewal (serving.c) */
#define CERT_CHECK_NS (3600LL * 1000000000)
#define LEASE_PATH    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

static int patch_node_status(struct xp_agent *agent,
                             struct xp_apiclient *client,
                             const json_t *existing,
                             json_t *status,
                             struct xp_error *err)
{
        json_t *merged = xp_agent_node_status_patch(existing, status);
        json_auto_t *body = merged ? json_pack("{s:o}", "status", merged) : NULL;
        char path[512];

        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", agent->node_name);
        return xp_apiclient_json(
            client, "PATCH", path, "application/merge-patch+json", body, NULL, NULL, err);
}

static int renew_lease(struct xp_agent *agent, struct xp_apiclient *client, struct xp_error *err);

int xp_agent_register(struct xp_agent *agent, struct xp_apiclient *client, struct xp_error *err)
{
        json_auto_t *existing = NULL, *merged = NULL;
        char path[512];
        int r;

        r = xp_apiclient_json(
            client, "POST", "/api/v1/nodes", NULL, agent->node_json, NULL, NULL, err);
        if (r == -EEXIST) {
                snprintf(path, sizeof(path), "/api/v1/nodes/%s", agent->node_name);
                r = xp_apiclient_json(client, "GET", path, NULL, NULL, NULL, &existing, err);
                if (r < 0)
                        return xp_error_prefix(err, r, "reading Node %s", agent->node_name);
                merged = xp_agent_node_merge(existing, agent->node_json);
                if (!merged)
                        return -ENOMEM;
                r = xp_apiclient_json(client, "PUT", path, NULL, merged, NULL, NULL, err);
        }
        if (r < 0)
                return xp_error_prefix(err, r, "registering Node %s", agent->node_name);
        /* a create or update of the main resource may leave the stored status as it was */
        r = patch_node_status(
            agent, client, existing, json_object_get(agent->node_json, "status"), err);
        if (r < 0)
                return xp_error_prefix(err, r, "writing the status of Node %s", agent->node_name);
        /* the Lease exists once the Node is Ready, so the node monitor never sees one without */
        r = renew_lease(agent, client, err);
        if (r < 0)
                return xp_error_prefix(
                    err, r, "creating Lease kube-node-lease/%s", agent->node_name);
        return 0;
}

static int renew_lease(struct xp_agent *agent, struct xp_apiclient *client, struct xp_error *err)
{
        char now[XP_MICROTIME_MAX], path[512];
        json_auto_t *lease = NULL, *patch = NULL;
        int r;

        xp_time_format_microtime(xp_agent_now_ns() / 1000, now);
        snprintf(path, sizeof(path), LEASE_PATH "/%s", agent->node_name);
        patch = json_pack("{s:{s:s, s:i, s:s}}",
                          "spec",
                          "holderIdentity",
                          agent->node_name,
                          "leaseDurationSeconds",
                          LEASE_DURATION_S,
                          "renewTime",
                          now);
        if (!patch)
                return -ENOMEM;
        r = xp_apiclient_json(
            client, "PATCH", path, "application/merge-patch+json", patch, NULL, NULL, err);
        if (r != -ENOENT)
                return r;
        lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s}}",
                          "apiVersion",
                          "coordination.k8s.io/v1",
                          "kind",
                          "Lease",
                          "metadata",
                          "name",
                          agent->node_name,
                          "namespace",
                          "kube-node-lease",
                          "spec",
                          "holderIdentity",
                          agent->node_name,
                          "leaseDurationSeconds",
                          LEASE_DURATION_S,
                          "acquireTime",
                          now,
                          "renewTime",
                          now);
        if (!lease)
                return -ENOMEM;
        return xp_apiclient_json(client, "POST", LEASE_PATH, NULL, lease, NULL, NULL, err);
}

static int refresh_ready(struct xp_agent *agent, struct xp_apiclient *client, struct xp_error *err)
{
        json_auto_t *status = json_object();
        json_t *conditions = xp_agent_node_conditions(
            xp_agent_now_ns() / 1000000000, agent->ready_since_s, &agent->isolation);

        json_t *images = xp_agent_node_images(agent->images);

        if (!status || !conditions || json_object_set_new(status, "conditions", conditions) < 0) {
                json_decref(images);
                return -ENOMEM;
        }
        /* the images pulled, imported or removed since (xpool image works on the store too) */
        if (images && json_object_set_new(status, "images", images) < 0)
                return -ENOMEM;
        /* devices that turned unhealthy (or well again): allocatable and the inventory */
        uint64_t health = 0;
        int r = xp_agent_devhealth_node_status(agent->devhealth, status, &health);

        bool pressure = false; /* DiskPressure (nodepressure.c) */

        if (r >= 0)
                r = xp_agent_pressure_node(agent, conditions, &pressure);
        if (r < 0)
                return r;
        r = patch_node_status(agent, client, NULL, status, err);
        if (r >= 0)
                xp_agent_devhealth_published(agent->devhealth, health);
        if (r >= 0)
                xp_agent_pressure_published(agent, pressure);
        return r;
}

void *xp_agent_lease_thread(void *userdata)
{
        struct xp_agent *agent = userdata;
        struct xp_apiclient *client = agent->lease_client;
        struct xp_error err = {0};
        int64_t next_status = xp_agent_now_ns() + agent->node_status_ms * 1000000;
        int64_t next_cert = xp_agent_now_ns() + CERT_CHECK_NS;
        bool failing = false;
        int r;

        while (!xp_agent_sleep(agent, agent->heartbeat_ms)) {
                xp_error_clear(&err);
                if (xp_agent_now_ns() >= next_cert) {
                        next_cert = xp_agent_now_ns() + CERT_CHECK_NS;
                        if (xp_agent_serving_renew(agent, client, &err) < 0)
                                xp_log(
                                    LOG_WARNING,
                                    "agent: renewing the serving certificate failed, trying again in an hour: %s",
                                    xp_error_message(&err));
                        xp_error_clear(&err);
                }
                r = renew_lease(agent, client, &err);
                if (r >= 0 && (xp_agent_now_ns() >= next_status ||
                               xp_agent_pulls_images_changed(agent->pulls) ||
                               xp_agent_devhealth_changed(agent->devhealth) ||
                               xp_agent_pressure_changed(agent))) {
                        r = refresh_ready(agent, client, &err);
                        if (r >= 0)
                                next_status = xp_agent_now_ns() + agent->node_status_ms * 1000000;
                }
                if (r >= 0)
                        xp_agent_pod_api_recheck(agent);
                if (r < 0 && !atomic_load(&agent->stopping))
                        xp_log(
                            LOG_WARNING,
                            "agent: renewing Lease kube-node-lease/%s failed, retrying in %lld ms: %s",
                            agent->node_name,
                            (long long)agent->heartbeat_ms,
                            xp_error_message(&err));
                else if (r >= 0 && failing) {
                        xp_log(LOG_INFO,
                               "agent: Lease kube-node-lease/%s renewed again",
                               agent->node_name);
                        /* the server is back: what it holds of every pod is checked again */
                        xp_agent_pods_resync(&agent->pods);
                }
                failing = r < 0;
        }
        return NULL;
}
