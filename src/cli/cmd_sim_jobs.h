/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

#include "xpool/sim.h"

#define SIM_JOBS_MAX 64

struct sim_job_error {
        int rc; /* 0: none */
        size_t job;
        char msg[256];
};

/*
 * Runs replay j with opts[j] into res[j] for j < n, on up to workers processes at once (1: in
 * this one). The results carry no placements. 0, or the first failure's -errno with *e naming
 * the job and the reason; the other jobs are finished either way.
 */
int sim_jobs_run(const struct xp_sim_trace *t,
                 const struct xp_sim_options *opts,
                 struct xp_sim_result *res,
                 size_t n,
                 unsigned workers,
                 struct sim_job_error *e);
