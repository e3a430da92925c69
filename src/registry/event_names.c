/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The names of the Events the server's controllers record, in Kubernetes' recorder's shape: the
 * object's name and the hex of the event's time in nanoseconds (client-go's
 * fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())), so that name order, a list's and `kubectl
 * describe`'s for the Events of one second, is time order: the scheduler's Scheduled comes
 * before the agent's Created and Started, whose names have the same shape. Each name is later
 * than the one before (a clock that repeats a nanosecond gets the next one), so none is made
 * twice.
 *
 * A repeat (the same object, reason and message) counts on the Event already named, as the
 * recorder's correlator does: the names handed out are remembered by a hash of what is reported,
 * in a table of EVENT_NAMES slots kept in memory as the correlator's cache is. After a restart,
 * or once another report took its slot, a repeat makes a new Event, as in Kubernetes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/map.h"

#define EVENT_NAMES 16384 /* 256 KiB: the names are remade from the object's and the time */

struct event_name_slot {
        uint64_t key;     /* the hash of what is reported; 0: empty */
        uint64_t time_ns; /* in the name of its Event */
};

int registry_event_names_init(struct event_names *names)
{
        pthread_mutex_init(&names->lock, NULL);
        names->slots = calloc(EVENT_NAMES, sizeof(*names->slots));
        return names->slots ? 0 : -ENOMEM;
}

void registry_event_names_done(struct event_names *names)
{
        free(names->slots);
        pthread_mutex_destroy(&names->lock);
}

/* A hash of what e reports: its namespace, object (kind, name, uid), reason and message. */
static uint64_t report_key(const struct xp_registry_event *e)
{
        const char *parts[] = {e->namespace, e->kind, e->name, e->uid, e->reason, e->message};
        uint64_t h = XP_HASH_INIT;

        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) /* each with its NUL */
                h = xp_hash_add(h, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1);
        return h ? h : 1;
}

static int64_t realtime_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool registry_event_name(struct xp_registry *registry,
                         const struct xp_registry_event *e,
                         char name[static XP_STORE_KEY_MAX + 1])
{
        struct event_names *names = &registry->event_names;
        uint64_t key = report_key(e);
        struct event_name_slot *slot = &names->slots[key % EVENT_NAMES];
        bool repeat;
        int64_t now = realtime_ns();

        pthread_mutex_lock(&names->lock);
        repeat = slot->key == key;
        if (!repeat) {
                if (now <= names->last_ns)
                        now = names->last_ns + 1;
                names->last_ns = now;
                *slot = (struct event_name_slot){.key = key, .time_ns = (uint64_t)now};
        }
        snprintf(name,
                 XP_STORE_KEY_MAX + 1,
                 "%.*s.%" PRIx64,
                 XP_STORE_KEY_MAX - 17,
                 e->name ? e->name : "",
                 slot->time_ns);
        pthread_mutex_unlock(&names->lock);
        return repeat;
}
