/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kept-alive clients of a pod's start (agent_internal.h): its ConfigMaps and Secrets and the
 * TokenRequest of its kube-api-access volume. A client made for one start and freed after it
 * costs a TCP connection per pod, which the server pays for as much as for the TokenRequest
 * itself (docs/agent.md); the few starts that run at once take turns with these instead.
 */
#include "agent_internal.h"

int xp_agent_config_client_take(struct xp_agent *agent,
                                struct xp_apiclient **ret,
                                struct xp_error *err)
{
        pthread_mutex_lock(&agent->config_clients_lock);
        *ret = xp_client_slots_pop(&agent->config_clients);
        pthread_mutex_unlock(&agent->config_clients_lock);
        return *ret ? 0 : xp_apiclient_new(&agent->api, ret, err);
}

void xp_agent_config_client_give(struct xp_agent *agent, struct xp_apiclient *client)
{
        bool kept;

        if (!client)
                return;
        pthread_mutex_lock(&agent->config_clients_lock);
        kept = xp_client_slots_put(&agent->config_clients, client);
        pthread_mutex_unlock(&agent->config_clients_lock);
        if (!kept)
                xp_apiclient_free(client);
}

void xp_agent_config_clients_free(struct xp_agent *agent)
{
        xp_client_slots_free_all(&agent->config_clients);
}
