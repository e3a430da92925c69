/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload's typical pods, as the FGD paper takes them: pod shapes (CPU, GPU per device,
 * device count, allowed models) counted over the trace, the most frequent first, until they
 * cover 95 % of the pods; their shares renormalized over what was kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define TYPICAL_PERCENT 95

static int same_spec(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int cmp_typical(const void *a, const void *b)
{
        const struct xp_sched_typical_pod *x = a, *y = b;

        if (x->weight != y->weight)
                return x->weight > y->weight ? -1 : 1;
        if (x->cpu_milli != y->cpu_milli)
                return x->cpu_milli < y->cpu_milli ? -1 : 1;
        if (x->gpu_milli != y->gpu_milli)
                return x->gpu_milli < y->gpu_milli ? -1 : 1;
        if (x->gpu_count != y->gpu_count)
                return x->gpu_count < y->gpu_count ? -1 : 1;
        return strcmp(x->models ? x->models : "", y->models ? y->models : "");
}

int xp_sim_typical_pods(const struct xp_sim_trace *t,
                        struct xp_sched_typical_pod **ret,
                        size_t *ret_n)
{
        struct xp_sched_typical_pod *tp = calloc(t->n_pods ? t->n_pods : 1, sizeof(*tp));
        size_t n = 0, keep = 0;
        double cum = 0;

        if (!tp)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_pods; i++) {
                const struct xp_sim_pod *p = &t->pods[i];
                struct xp_sched_typical_pod x = {
                    .cpu_milli = p->cpu_milli,
                    .gpu_count = p->num_gpu,
                    .gpu_milli = p->num_gpu == 0   ? 0
                                 : p->num_gpu == 1 ? p->gpu_milli
                                                   : 1000,
                    .models = p->gpu_spec,
                    .weight = 1,
                };
                size_t k;
                for (k = 0; k < n; k++)
                        if (tp[k].cpu_milli == x.cpu_milli && tp[k].gpu_milli == x.gpu_milli &&
                            tp[k].gpu_count == x.gpu_count && same_spec(tp[k].models, x.models))
                                break;
                if (k < n)
                        tp[k].weight++;
                else
                        tp[n++] = x;
        }
        qsort(tp, n, sizeof(*tp), cmp_typical);
        while (keep < n && cum * 100 < (double)t->n_pods * TYPICAL_PERCENT)
                cum += tp[keep++].weight;
        *ret = tp;
        *ret_n = keep;
        return 0;
}
