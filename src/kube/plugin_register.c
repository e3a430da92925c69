/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registration with the kubelet: Registration.Register on kubelet.sock, made asynchronously on
 * the plugin's completion queue, so the loop goes on serving while the kubelet answers (the
 * kubelet may call back GetDevicePluginOptions and ListAndWatch before it does). A refusal or an
 * absent kubelet is retried with a back-off; a kubelet that restarts is registered with anew
 * (plugin.c notices).
 */
#include <errno.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define REG_TIMEOUT_MS     10000
#define REG_BACKOFF_MIN_MS 500
#define REG_BACKOFF_MAX_MS 30000

struct kube_reg_call {
        struct kube_tag tag;
        struct xp_kube_plugin *plugin;
        struct kube_endpoint *ep; /* NULL once cancelled */
        ino_t kubelet_ino;
        grpc_channel *channel;
        grpc_call *call;
        struct kube_unary u;
};

static void reg_free(struct kube_reg_call *rc)
{
        if (rc->call)
                grpc_call_unref(rc->call);
        if (rc->channel)
                grpc_channel_destroy(rc->channel);
        kube_unary_done(&rc->u);
        free(rc);
}

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

static void reg_done(struct kube_tag *tag, bool ok)
{
        struct kube_reg_call *rc = (struct kube_reg_call *)tag;
        struct kube_endpoint *ep = rc->ep;

        rc->plugin->reg_calls--;
        if (ep) {
                ep->reg_call = NULL;
                if (ok && rc->u.status == GRPC_STATUS_OK) {
                        ep->reg = KUBE_REG_DONE;
                        ep->reg_kubelet_ino = rc->kubelet_ino;
                        ep->reg_backoff_ms = 0;
                        xp_log(LOG_INFO,
                               "%s: registered with the kubelet (endpoint %s)",
                               ep->res->name,
                               ep->socket_name);
                } else {
                        char *details = grpc_slice_to_c_string(rc->u.details);
                        char why[512];

                        snprintf(why,
                                 sizeof(why),
                                 "%s%s%s",
                                 ok ? kube_rpc_status_name(rc->u.status) : "call failed",
                                 details && *details ? ": " : "",
                                 details ? details : "");
                        gpr_free(details);
                        retry_later(ep, why);
                }
        }
        reg_free(rc);
}

static grpc_byte_buffer *request_of(const struct kube_endpoint *ep)
{
        V1beta1__DevicePluginOptions options = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;

        options.get_preferred_allocation_available = true;
        req.version = (char *)XP_KUBE_API_VERSION;
        req.endpoint = ep->socket_name;
        req.resource_name = ep->res->name;
        req.options = &options;
        return kube_rpc_pack(&req.base);
}

void kube_register_start(struct kube_endpoint *ep, ino_t kubelet_ino, int64_t now_ms)
{
        struct xp_kube_plugin *p = ep->plugin;
        struct kube_reg_call *rc = calloc(1, sizeof(*rc));
        grpc_channel_credentials *creds;
        char *target = NULL;

        (void)now_ms;
        if (!rc) {
                retry_later(ep, "out of memory");
                return;
        }
        rc->tag.done = reg_done;
        rc->plugin = p;
        rc->ep = ep;
        rc->kubelet_ino = kubelet_ino;
        kube_unary_init(&rc->u);
        if (kube_rpc_target(p->kubelet_socket, &target, NULL) < 0) {
                reg_free(rc);
                retry_later(ep, "the kubelet's socket path is too long");
                return;
        }
        /* a channel per attempt: no reconnect back-off carried over from a kubelet that left */
        creds = grpc_insecure_credentials_create();
        rc->channel = grpc_channel_create(target, creds, NULL);
        grpc_channel_credentials_release(creds);
        free(target);
        rc->call = grpc_channel_create_call(
            rc->channel,
            NULL,
            GRPC_PROPAGATE_DEFAULTS,
            p->cq,
            grpc_slice_from_static_string("/v1beta1.Registration/Register"),
            NULL,
            kube_rpc_deadline_ms(REG_TIMEOUT_MS),
            NULL);
        rc->u.send = request_of(ep);
        if (!rc->call || !rc->u.send ||
            kube_unary_start(rc->call, &rc->u, &rc->tag) != GRPC_CALL_OK) {
                reg_free(rc);
                retry_later(ep, "cannot start the call");
                return;
        }
        p->reg_calls++;
        ep->reg = KUBE_REG_PENDING;
        ep->reg_call = rc;
}

void kube_register_cancel(struct kube_endpoint *ep)
{
        struct kube_reg_call *rc = ep->reg_call;

        if (!rc)
                return;
        rc->ep = NULL;
        ep->reg_call = NULL;
        ep->reg = KUBE_REG_IDLE;
        grpc_call_cancel(rc->call, NULL);
}
