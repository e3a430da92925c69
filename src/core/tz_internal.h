/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A loaded zone (tzfile.c) and the POSIX TZ rule of its footer (tzrule.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tz_date {
        char kind; /* 'M' (Mm.w.d), 'J' (Jn, 1-365, no Feb 29) or 'D' (n, 0-365) */
        int month, week, day;
        int64_t time_s; /* local time of the change, may be negative or past 24 h */
};

struct tz_rule {
        int32_t std_off; /* east of UTC */
        int32_t dst_off;
        bool has_dst;
        struct tz_date start, end;
};

struct xp_tz {
        int64_t *at;  /* transition instants, ascending */
        uint8_t *idx; /* the type in force from at[i] */
        size_t n;
        int32_t *off;   /* per type: offset east of UTC */
        uint8_t *isdst; /* per type */
        size_t n_types;
        bool has_rule; /* the footer's rule, for instants past the last transition */
        struct tz_rule rule;
};

/* Parses a POSIX TZ string ("CET-1CEST,M3.5.0,M10.5.0/3"); -EINVAL. */
int tz_rule_parse(const char *text, struct tz_rule *ret);
/* The rule's offset east of UTC at instant t. */
int32_t tz_rule_offset(const struct tz_rule *rule, int64_t t);
