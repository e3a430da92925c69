/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's terminal status is final (finalstatus.h). What finals holds for a pod: its terminal
 * "phase", the "reason" and "message" that came with it (absent when none did) and the
 * "conditions" its terminal statuses had, one of each type.
 */
#include <errno.h>
#include <stdbool.h>

#include "finalstatus.h"
#include "xpool/condition.h"
#include "xpool/strutil.h"

static const char *const WORDS[] = {"phase", "reason", "message"};

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static bool terminal(const char *phase)
{
        return xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed");
}

/* The phase, reason and message of from into to; one from lacks is removed from to. */
static int copy_words(json_t *to, const json_t *from)
{
        for (size_t i = 0; i < sizeof(WORDS) / sizeof(WORDS[0]); i++) {
                const json_t *v = json_object_get(from, WORDS[i]);

                if (!v)
                        (void)json_object_del(to, WORDS[i]);
                else if (json_object_set_new(to, WORDS[i], json_deep_copy(v)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Each condition of from whose type to lacks, appended to to's (made when missing). */
static int add_missing_conditions(json_t *to, const json_t *from)
{
        json_t *conds = json_object_get(to, "conditions");
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(from, "conditions"), i, c)
        {
                if (!str(c, "type") || xp_condition_get(to, str(c, "type")))
                        continue;
                if (!json_is_array(conds)) {
                        conds = json_array();
                        if (json_object_set_new(to, "conditions", conds) < 0)
                                return -ENOMEM;
                }
                if (json_array_append_new(conds, json_deep_copy(c)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int xp_agent_final_status(json_t *finals, const char *uid, json_t *status)
{
        json_t *kept = json_object_get(finals, uid);
        const char *phase = str(status, "phase");
        int r;

        if (!kept) {
                if (!terminal(phase))
                        return 0;
                kept = json_object();
                if (json_object_set_new(finals, uid, kept) < 0 || copy_words(kept, status) < 0)
                        return -ENOMEM;
        } else if (xp_streq0(phase, str(kept, "phase")) && !json_object_get(kept, "reason") &&
                   json_object_get(status, "reason")) {
                /* a terminal status without a reason, then one that gives it */
                if (copy_words(kept, status) < 0)
                        return -ENOMEM;
        } else if (copy_words(status, kept) < 0)
                return -ENOMEM;
        r = add_missing_conditions(kept, status);
        if (r >= 0)
                r = add_missing_conditions(status, kept);
        return r < 0 ? r : 1;
}
