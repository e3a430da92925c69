/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel CPU lists, "0-3,8-11" (include/util/xpool/cpuset.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/cpuset.h"
#include "xpool/macro.h"

void xp_cpuset_add(struct xp_cpuset *set, unsigned cpu)
{
        if (cpu < XP_CPU_MAX)
                set->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

bool xp_cpuset_has(const struct xp_cpuset *set, unsigned cpu)
{
        return cpu < XP_CPU_MAX && (set->bits[cpu / 64] >> (cpu % 64)) & 1;
}

size_t xp_cpuset_count(const struct xp_cpuset *set)
{
        size_t n = 0;

        for (size_t i = 0; i < XP_ELEMENTSOF(set->bits); i++)
                n += (size_t)__builtin_popcountll(set->bits[i]);
        return n;
}

static int parse_cpu(const char **p, unsigned *ret)
{
        unsigned long v;
        char *end;

        if (**p < '0' || **p > '9')
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 10);
        if (errno || v >= XP_CPU_MAX)
                return -EINVAL;
        *p = end;
        *ret = (unsigned)v;
        return 0;
}

int xp_cpuset_parse(const char *text, struct xp_cpuset *ret)
{
        struct xp_cpuset set = {0};
        const char *p = text;

        while (*p == ' ')
                p++;
        /* the list, then nothing but the line end the kernel writes */
        while (*p && *p != '\n') {
                unsigned first, last;

                if (parse_cpu(&p, &first) < 0)
                        return -EINVAL;
                last = first;
                if (*p == '-') {
                        p++;
                        if (parse_cpu(&p, &last) < 0 || last < first)
                                return -EINVAL;
                }
                for (unsigned cpu = first; cpu <= last; cpu++)
                        xp_cpuset_add(&set, cpu);
                if (*p == ',' && p[1] >= '0' && p[1] <= '9')
                        p++;
                else if (*p && *p != '\n')
                        return -EINVAL;
        }
        while (*p == '\n' || *p == ' ')
                p++;
        if (*p)
                return -EINVAL;
        *ret = set;
        return 0;
}

int xp_cpuset_format(const struct xp_cpuset *set, char **ret)
{
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);
        bool first = true;

        if (!f)
                return -ENOMEM;
        for (unsigned cpu = 0; cpu < XP_CPU_MAX; cpu++) {
                unsigned last = cpu;

                if (!xp_cpuset_has(set, cpu))
                        continue;
                while (last + 1 < XP_CPU_MAX && xp_cpuset_has(set, last + 1))
                        last++;
                if (last == cpu)
                        fprintf(f, "%s%u", first ? "" : ",", cpu);
                else
                        fprintf(f, "%s%u-%u", first ? "" : ",", cpu, last);
                first = false;
                cpu = last;
        }
        if (fclose(f) != 0 || !out) {
                free(out);
                return -ENOMEM;
        }
        *ret = out;
        return 0;
}
