/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sets of completion indexes and their text in a Job's status (completedIndexes,
 * failedIndexes): ascending, every run of two or more consecutive
 * indexes written as "a-b", as Kubernetes writes them ("1,3-5,7-8").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "xpool/macro.h"

int xp_job_indexes_init(struct xp_job_indexes *ret, int32_t n)
{
        if (n < 0 || n > XP_JOB_INDEXES_MAX)
                return -EINVAL;
        uint8_t *set = calloc((size_t)n + 1, 1);
        if (!set)
                return -ENOMEM;
        *ret = (struct xp_job_indexes){.set = set, .n = n};
        return 0;
}

void xp_job_indexes_done(struct xp_job_indexes *set)
{
        free(set->set);
        *set = (struct xp_job_indexes){0};
}

void xp_job_indexes_add(struct xp_job_indexes *set, int32_t i)
{
        if (i < 0 || i >= set->n || set->set[i])
                return;
        set->set[i] = 1;
        set->count++;
}

bool xp_job_indexes_has(const struct xp_job_indexes *set, int32_t i)
{
        return i >= 0 && i < set->n && set->set[i];
}

static int parse_index(
    const char *p, char **end, const struct xp_job_indexes *set, long *ret, struct xp_error *err)
{
        if (*p < '0' || *p > '9')
                return xp_errorf(err,
                                 -EINVAL,
                                 "cannot convert string to integer for index: \"%.*s\"",
                                 (int)strcspn(p, ",-"),
                                 p);
        long v = strtol(p, end, 10);
        if (v >= set->n)
                return xp_errorf(err, -EINVAL, "too large index: %ld", v);
        *ret = v;
        return 0;
}

int xp_job_indexes_parse(const char *text, struct xp_job_indexes *set, struct xp_error *err)
{
        _cleanup_free_ uint8_t *mark = calloc((size_t)set->n + 1, 1);
        const char *p = text;
        long last = -1;
        int r;

        if (!mark)
                return -ENOMEM;
        while (*p) {
                long a, b;
                char *end;
                if ((r = parse_index(p, &end, set, &a, err)) < 0)
                        return r;
                b = a;
                if (*end == '-') {
                        if ((r = parse_index(end + 1, &end, set, &b, err)) < 0)
                                return r;
                        if (b < a)
                                return xp_errorf(
                                    err,
                                    -EINVAL,
                                    "non-increasing order, previous: %ld, current: %ld",
                                    a,
                                    b);
                }
                if (a <= last)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "non-increasing order, previous: %ld, current: %ld",
                                         last,
                                         a);
                for (long i = a; i <= b; i++)
                        mark[i] = 1;
                last = b;
                if (*end == ',' && end[1])
                        end++;
                else if (*end)
                        return xp_errorf(
                            err, -EINVAL, "unexpected character '%c' in the index list", *end);
                p = end;
        }
        for (int32_t i = 0; i < set->n; i++)
                if (mark[i])
                        xp_job_indexes_add(set, i);
        return 0;
}

int xp_job_indexes_format(const struct xp_job_indexes *set, char **ret)
{
        size_t cap = 64, len = 0;
        char *out = malloc(cap);

        if (!out)
                return -ENOMEM;
        out[0] = '\0';
        for (int32_t i = 0; i < set->n;) {
                if (!set->set[i]) {
                        i++;
                        continue;
                }
                int32_t j = i;
                while (j + 1 < set->n && set->set[j + 1])
                        j++;
                char part[32];
                int n = j > i ? snprintf(part, sizeof(part), "%s%d-%d", len ? "," : "", i, j)
                              : snprintf(part, sizeof(part), "%s%d", len ? "," : "", i);
                if (len + (size_t)n + 1 > cap) {
                        cap = (len + (size_t)n + 1) * 2;
                        char *grown = realloc(out, cap);
                        if (!grown) {
                                free(out);
                                return -ENOMEM;
                        }
                        out = grown;
                }
                memcpy(out + len, part, (size_t)n + 1);
                len += (size_t)n;
                i = j + 1;
        }
        *ret = out;
        return 0;
}
