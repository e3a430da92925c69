/* SPDX-License-Identifier: Apache-2.0 */
/* The conditions of an object's status by type (xpool/condition.h). */
#include "xpool/condition.h"
#include "xpool/strutil.h"

ssize_t xp_condition_index(const json_t *status, const char *type)
{
        const json_t *conditions = json_object_get(status, "conditions"), *c;
        size_t i;

        if (!type)
                return -1;
        json_array_foreach(conditions, i, c)
        {
                if (xp_streq0(json_string_value(json_object_get(c, "type")), type))
                        return (ssize_t)i;
        }
        return -1;
}

json_t *xp_condition_get(const json_t *status, const char *type)
{
        ssize_t i = xp_condition_index(status, type);

        return i < 0 ? NULL : json_array_get(json_object_get(status, "conditions"), (size_t)i);
}
