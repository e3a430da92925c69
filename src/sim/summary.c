/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several seeds' replays of one policy summarized: the mean ratio at each percent of arrived
 * demand, the spread at 100 % and at the end, the fragmentation rate and the speed. The sums are
 * kept in the summary while runs are added (the squares in a second array), so no result needs
 * to be kept.
 */
#include <math.h>

#include "xpool/sim.h"

void xp_sim_summary_add(struct xp_sim_summary *s, const struct xp_sim_result *r)
{
        double end = r->ratio[s->percent];

        if (s->runs == 0)
                for (size_t k = 0; k <= XP_SIM_PERCENT_MAX; k++)
                        s->mean[k] = 0;
        for (size_t k = 0; k <= XP_SIM_PERCENT_MAX; k++)
                s->mean[k] += r->ratio[k] >= 0 ? r->ratio[k] : NAN;
        /* sums of squares go into the spread fields until finish() */
        s->sd100 += r->ratio[100] * r->ratio[100];
        s->sd_end += end * end;
        s->frag_rate += r->frag_rate;
        s->time_avg += r->time_avg;
        s->placements_per_s += r->seconds > 0 ? (double)r->arrived / r->seconds : 0;
        s->runs++;
}

static double spread(double sum_sq, double mean, size_t n)
{
        double v = n > 1 ? (sum_sq - (double)n * mean * mean) / (double)(n - 1) : 0;

        return v > 0 ? sqrt(v) : 0;
}

void xp_sim_summary_finish(struct xp_sim_summary *s)
{
        double n = (double)s->runs;

        if (s->runs == 0)
                return;
        for (size_t k = 0; k <= XP_SIM_PERCENT_MAX; k++)
                s->mean[k] = isnan(s->mean[k]) ? -1 : s->mean[k] / n;
        s->sd100 = spread(s->sd100, s->mean[100], s->runs);
        s->sd_end = spread(s->sd_end, s->mean[s->percent], s->runs);
        s->frag_rate /= n;
        s->time_avg /= n;
        s->placements_per_s /= n;
}
