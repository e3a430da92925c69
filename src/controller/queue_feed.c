/* SPDX-License-Identifier: Apache-2.0 */
/* The informer's callbacks for the kinds only queues need (the scheduler's table lists them). */
#include "queue_state.h"
#include "scheduler_state.h"

void queue_on_queue(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        queue_ctl_queue(((struct xp_scheduler *)userdata)->queues, object, false);
}

void queue_on_queue_deleted(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        queue_ctl_queue(((struct xp_scheduler *)userdata)->queues, object, true);
}

void queue_on_namespace(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        queue_ctl_namespace(((struct xp_scheduler *)userdata)->queues, object, false);
}

void queue_on_namespace_deleted(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        queue_ctl_namespace(((struct xp_scheduler *)userdata)->queues, object, true);
}
