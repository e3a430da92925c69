/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registration with the kubelet: Registration.Register on kubelet.sock, made asynchronously on
 * the plugin's loop, so the loop goes on serving while the kubelet answers (the
 * kubelet may call back GetDevicePluginOptions and ListAndWatch before it does). A refusal or an
 * absent kubelet is retried with a back-off; a kubelet that restarts is registered with anew
 * (plugin.c notices).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define REG_TIMEOUT_MS     10000
#define REG_BACKOFF_MIN_MS 500
#define REG_BACKOFF_MAX_MS 30000

struct kube_reg_call {
        struct kube_endpoint *ep;
        ino_t kubelet_ino;
        struct kube_client_call *call;
};

static void retry_later(struct kube_endpoint *ep, const char *why)
{
        int64_t now = xp_monotonic_ms();

        if (ep->reg_backoff_ms < REG_BACKOFF_MIN_MS)
                ep->reg_backoff_ms = REG_BACKOFF_MIN_MS;
        xp_log(LOG_WARNING,
               "%s: the kubelet did not take the registration (%s); trying again in %" PRId64 " ms",
               ep->res->name,
               why,
               ep->reg_backoff_ms);
        ep->reg = KUBE_REG_IDLE;
        ep->reg_retry_at_ms = now + ep->reg_backoff_ms;
        ep->reg_backoff_ms *= 2;
        if (ep->reg_backoff_ms > REG_BACKOFF_MAX_MS)
                ep->reg_backoff_ms = REG_BACKOFF_MAX_MS;
}

static void reg_done(void *userdata, const struct kube_reply *reply)
{
        struct kube_reg_call *rc = userdata;
        struct kube_endpoint *ep = rc->ep;
        char why[512];

        ep->reg_call = NULL;
        ep->plugin->reg_calls--;
        if (reply->status == KUBE_STATUS_OK) {
                ep->reg = KUBE_REG_DONE;
                ep->reg_kubelet_ino = rc->kubelet_ino;
                ep->reg_backoff_ms = 0;
                xp_log(LOG_INFO,
                       "%s: registered with the kubelet (endpoint %s)",
                       ep->res->name,
                       ep->socket_name);
        } else {
                snprintf(why,
                         sizeof(why),
                         "%s%s%s",
                         kube_rpc_status_name(reply->status),
                         *reply->details ? ": " : "",
                         reply->details);
                retry_later(ep, why);
        }
        free(rc);
}

void kube_register_start(struct kube_endpoint *ep, ino_t kubelet_ino, int64_t now_ms)
{
        V1beta1__DevicePluginOptions options = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        struct xp_kube_plugin *p = ep->plugin;
        struct kube_reg_call *rc = calloc(1, sizeof(*rc));
        struct xp_error err = {0};

        (void)now_ms;
        if (!rc) {
                retry_later(ep, "out of memory");
                return;
        }
        rc->ep = ep;
        rc->kubelet_ino = kubelet_ino;
        options.get_preferred_allocation_available = true;
        req.version = (char *)XP_KUBE_API_VERSION;
        req.endpoint = ep->socket_name;
        req.resource_name = ep->res->name;
        req.options = &options;
        /* a connection per attempt: nothing carried over from a kubelet that left */
        if (kube_client_call_start(p->loop,
                                   p->kubelet_socket,
                                   "/v1beta1.Registration/Register",
                                   &req.base,
                                   KUBE_REQUEST_MAX,
                                   REG_TIMEOUT_MS,
                                   reg_done,
                                   rc,
                                   &rc->call,
                                   &err) < 0) {
                free(rc);
                retry_later(ep, xp_error_message(&err));
                return;
        }
        p->reg_calls++;
        ep->reg = KUBE_REG_PENDING;
        ep->reg_call = rc;
}

bool kube_register_due(const struct kube_endpoint *ep, int64_t now_ms)
{
        return ep->server && ep->reg == KUBE_REG_IDLE && ep->reg_retry_at_ms != 0 &&
               now_ms >= ep->reg_retry_at_ms;
}

void kube_register_cancel(struct kube_endpoint *ep)
{
        struct kube_reg_call *rc = ep->reg_call;

        if (!rc)
                return;
        ep->reg_call = NULL;
        ep->reg = KUBE_REG_IDLE;
        ep->plugin->reg_calls--;
        kube_client_call_cancel(rc->call);
        free(rc);
}
