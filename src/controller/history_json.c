/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history as JSON (xp_history_to_json(), history.h), the shape the dashboard reads: points
 * as arrays rather than objects, since an hour of a hundred series is tens of thousands of them.
 */
#include <errno.h>
#include <stdbool.h>

#include "history_internal.h"
#include "xpool/history.h"

static json_t *
points_json(const struct series *s, int64_t now_step, const struct xp_history *h, bool usage)
{
        json_t *points = json_array();

        for (int64_t step = now_step - (int64_t)h->n_slots + 1; points && step <= now_step;
             step++) {
                const struct slot *slot;
                json_t *point;

                if (step < 0)
                        continue;
                slot = &s->slots[(size_t)step % h->n_slots];
                if (slot->step != step)
                        continue;
                if (usage)
                        point =
                            json_pack("[If]", step * h->step_s, slot->n ? slot->a / slot->n : 0);
                else
                        point = json_pack("[Iff]", step * h->step_s, slot->a, slot->b);
                if (json_array_append_new(points, point) < 0) {
                        json_decref(points);
                        return NULL;
                }
        }
        return points;
}

static json_t *set_json(const struct series_set *set,
                        const char *const keys[3],
                        int64_t now_step,
                        const struct xp_history *h,
                        bool usage)
{
        json_t *all = json_array();

        for (size_t i = 0; all && i < set->n; i++) {
                const struct series *s = &set->items[i];
                json_t *points;

                if (s->last <= now_step - (int64_t)h->n_slots)
                        continue;
                points = points_json(s, now_step, h, usage);
                if (json_array_append_new(all,
                                          json_pack("{s:s,s:s,s:s,s:o*}",
                                                    keys[0],
                                                    s->name[0],
                                                    keys[1],
                                                    s->name[1],
                                                    keys[2],
                                                    s->name[2],
                                                    "points",
                                                    points)) < 0) {
                        json_decref(all);
                        return NULL;
                }
        }
        return all;
}

int xp_history_to_json(struct xp_history *history, int64_t now_s, json_t **ret)
{
        static const char *const alloc_keys[3] = {"resource", "kind", "node"};
        static const char *const usage_keys[3] = {"node", "device", "kind"};
        int64_t now_step = (now_s < 0 ? 0 : now_s) / history->step_s;
        json_t *doc;

        pthread_mutex_lock(&history->lock);
        doc = json_pack("{s:I,s:I,s:I,s:o*,s:o*}",
                        "stepSeconds",
                        history->step_s,
                        "windowSeconds",
                        (json_int_t)history->n_slots * history->step_s,
                        "now",
                        now_s,
                        "allocation",
                        set_json(&history->alloc, alloc_keys, now_step, history, false),
                        "usage",
                        set_json(&history->usage, usage_keys, now_step, history, true));
        pthread_mutex_unlock(&history->lock);
        if (!doc)
                return -ENOMEM;
        *ret = doc;
        return 0;
}
