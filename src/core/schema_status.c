/* SPDX-License-Identifier: Apache-2.0 */
#include "schema_status.h"

static const struct xp_enum_name condition_status_names[] = {
    {"True", XP_CONDITION_TRUE},
    {"False", XP_CONDITION_FALSE},
    {"Unknown", XP_CONDITION_UNKNOWN},
    {NULL, 0},
};

#define CONDITION_FIELD(json_name, type, member, ...)                                              \
        XP_FIELD(json_name, type, struct xp_condition, member, __VA_ARGS__)

/* Pod and Node conditions differ in one timestamp, which goes in the middle. */
#define CONDITION_FIELDS(probe_or_heartbeat)                                                       \
        CONDITION_FIELD("type", XP_FT_STRING, type, .flags = XP_FIELD_REQUIRED),                   \
            CONDITION_FIELD("status",                                                              \
                            XP_FT_ENUM,                                                            \
                            status,                                                                \
                            .flags = XP_FIELD_REQUIRED,                                            \
                            .enum_names = condition_status_names),                                 \
            probe_or_heartbeat,                                                                    \
            CONDITION_FIELD("lastTransitionTime", XP_FT_TIME, last_transition_time),               \
            CONDITION_FIELD("reason", XP_FT_STRING, reason),                                       \
            CONDITION_FIELD("message", XP_FT_STRING, message)

static const struct xp_field pod_condition_fields[] = {
    CONDITION_FIELDS(CONDITION_FIELD("lastProbeTime", XP_FT_TIME, last_probe_time)),
};
const struct xp_schema xp_pod_condition_schema =
    XP_SCHEMA(struct xp_condition, "PodCondition", pod_condition_fields);

static const struct xp_field node_condition_fields[] = {
    CONDITION_FIELDS(CONDITION_FIELD("lastHeartbeatTime", XP_FT_TIME, last_heartbeat_time)),
};
const struct xp_schema xp_node_condition_schema =
    XP_SCHEMA(struct xp_condition, "NodeCondition", node_condition_fields);

const char *xp_condition_status_to_string(enum xp_condition_status status)
{
        return xp_enum_to_string(condition_status_names, (int)status);
}

int xp_condition_status_from_string(const char *s)
{
        return xp_enum_from_string(condition_status_names, s);
}
