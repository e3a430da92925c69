/* SPDX-License-Identifier: Apache-2.0 */
/* Queues: limits up the tree, guarantees, weighted DRF fair shares, borrowing and reclaim. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/queue.h"

#define GPU "nvidia.com/gpu"
#define K   1000 /* milli per unit */

static struct xp_queues *queues_new(void)
{
        struct xp_queues *qs = NULL;

        assert_int_equal(xp_queues_new(&qs), 0);
        return qs;
}

static void define(struct xp_queues *qs,
                   const char *name,
                   const char *parent,
                   int64_t gpu_guaranteed,
                   int64_t gpu_limit,
                   double weight,
                   bool reclaimable)
{
        const struct xp_queue_quota quota = {
            .resource = GPU,
            .guaranteed = gpu_guaranteed * K,
            .limit = gpu_limit < 0 ? -1 : gpu_limit * K,
        };
        const struct xp_queue_spec spec = {
            .name = name,
            .parent = parent,
            .quotas = &quota,
            .n_quotas = 1,
            .weight = weight,
            .reclaimable = reclaimable,
        };
        struct xp_error err = {0};

        assert_int_equal(xp_queues_set(qs, &spec, &err), 0);
}

static void gpus(struct xp_queues *qs, const char *queue, int64_t allocated, int64_t pending)
{
        const struct xp_queue_amount a = {GPU, allocated * K}, p = {GPU, pending * K};

        assert_int_equal(xp_queues_charge(qs, queue, &a, 1, +1), 0);
        assert_int_equal(xp_queues_pend(qs, queue, &p, 1, +1), 0);
}

static int64_t figure(struct xp_queues *qs, const char *queue, const char *res, size_t what)
{
        struct xp_queue_figures *f = NULL;
        size_t n = 0;
        int64_t v = -42;

        assert_int_equal(xp_queues_figures(qs, queue, &f, &n), 0);
        for (size_t i = 0; i < n; i++)
                if (strcmp(f[i].resource, res) == 0)
                        v = what == 0   ? f[i].deserved
                            : what == 1 ? f[i].allocated
                            : what == 2 ? f[i].borrowed
                                        : f[i].pending;
        free(f);
        return v;
}

static int64_t deserved(struct xp_queues *qs, const char *queue, const char *res)
{
        return figure(qs, queue, res, 0);
}

/*
 * The worked example of docs/scheduler.md ("Fair share"), the DRF paper's own: 9 GPUs and 18
 * CPUs; team A's tasks want <1 GPU, 4 CPU>, team B's <3 GPU, 1 CPU>, both want far more than
 * there is and nobody has a guarantee. A's dominant resource is CPU (4/18 per task), B's the GPU
 * (3/9). DRF equalizes the dominant shares: A gets 3 tasks <3 GPU, 12 CPU>, B 2 tasks <6 GPU,
 * 2 CPU>, both at a dominant share of 2/3; the GPUs run out first, so nobody grows further and
 * 4 CPUs stay idle.
 */
static void drf_worked_example(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();
        const struct xp_queue_quota none[] = {{.resource = GPU, .limit = -1},
                                              {.resource = "cpu", .limit = -1}};
        const struct xp_queue_amount a_tasks[] = {{GPU, 10 * K}, {"cpu", 40 * K}};
        const struct xp_queue_amount b_tasks[] = {{GPU, 30 * K}, {"cpu", 10 * K}};
        struct xp_error err = {0};

        for (const char *const *q = (const char *const[]){"team-a", "team-b", NULL}; *q; q++)
                assert_int_equal(xp_queues_set(qs,
                                               &(struct xp_queue_spec){.name = *q,
                                                                       .quotas = none,
                                                                       .n_quotas = 2,
                                                                       .reclaimable = true},
                                               &err),
                                 0);
        assert_int_equal(xp_queues_capacity(qs, GPU, 9 * K), 0);
        assert_int_equal(xp_queues_capacity(qs, "cpu", 18 * K), 0);
        assert_int_equal(xp_queues_pend(qs, "team-a", a_tasks, 2, +1), 0);
        assert_int_equal(xp_queues_pend(qs, "team-b", b_tasks, 2, +1), 0);
        xp_queues_compute(qs);
        assert_int_equal(deserved(qs, "team-a", GPU), 3 * K);
        assert_int_equal(deserved(qs, "team-a", "cpu"), 12 * K);
        assert_int_equal(deserved(qs, "team-b", GPU), 6 * K);
        assert_int_equal(deserved(qs, "team-b", "cpu"), 2 * K);
        xp_queues_free(qs);
}

/* Guarantees first (as far as the demand reaches), the idle rest by DRF: 16 GPUs, A and B each
 * guaranteed 4. A alone asks for 12 and gets them (B's idle guarantee lent); when B asks for 6,
 * A's extra 8 and B's extra 2 grow at one rate: B is full at 2, A takes the 6 left. */
static void guarantees_then_idle(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();

        define(qs, "a", NULL, 4, -1, 1, true);
        define(qs, "b", NULL, 4, -1, 1, true);
        assert_int_equal(xp_queues_capacity(qs, GPU, 16 * K), 0);
        gpus(qs, "a", 0, 12);
        xp_queues_compute(qs);
        assert_int_equal(deserved(qs, "a", GPU), 12 * K);
        assert_int_equal(deserved(qs, "b", GPU), 0);
        gpus(qs, "b", 0, 6);
        xp_queues_compute(qs);
        assert_int_equal(deserved(qs, "a", GPU), 10 * K);
        assert_int_equal(deserved(qs, "b", GPU), 6 * K);
        xp_queues_free(qs);
}

/* Weights divide what is idle: 3 to 1. */
static void weights_divide_idle(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();

        define(qs, "heavy", NULL, 0, -1, 3, true);
        define(qs, "light", NULL, 0, -1, 1, true);
        assert_int_equal(xp_queues_capacity(qs, GPU, 16 * K), 0);
        gpus(qs, "heavy", 0, 16);
        gpus(qs, "light", 0, 16);
        xp_queues_compute(qs);
        assert_int_equal(deserved(qs, "heavy", GPU), 12 * K);
        assert_int_equal(deserved(qs, "light", GPU), 4 * K);
        xp_queues_free(qs);
}

/* Limits bind up the tree, with the reason `xpool why` shows. */
static void limits_up_the_tree(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();
        const struct xp_queue_amount two = {GPU, 2 * K};
        char *reason = NULL;

        define(qs, "org", NULL, 8, 8, 1, true);
        define(qs, "team-a", "org", 4, 6, 1, true);
        define(qs, "team-b", "org", 4, -1, 1, true);
        assert_int_equal(xp_queues_capacity(qs, GPU, 32 * K), 0);
        gpus(qs, "team-a", 2, 0);
        xp_queues_compute(qs);
        assert_int_equal(xp_queues_admit(qs, "team-a", &two, 1, &reason), XP_QUEUE_WITHIN);
        gpus(qs, "team-a", 3, 0);
        assert_int_equal(xp_queues_admit(qs, "team-a", &two, 1, &reason), XP_QUEUE_REFUSED);
        assert_string_equal(
            reason,
            "queue \"team-a\" is over its limit of nvidia.com/gpu: 5 allocated + 2 requested > 6");
        free(reason);
        /* team-b is within its own limits, but the parent's 8 are spent */
        gpus(qs, "team-b", 2, 0);
        reason = xp_queues_blocking(qs, "team-b", &two, 1);
        assert_string_equal(
            reason,
            "queue \"org\" is over its limit of nvidia.com/gpu: 7 allocated + 2 requested > 8");
        free(reason);
        /* a parent takes no pods of its own */
        reason = xp_queues_blocking(qs, "org", &two, 1);
        assert_string_equal(
            reason, "queue \"org\" has child queues: pods must name a queue without children");
        free(reason);
        reason = xp_queues_blocking(qs, "nope", &two, 1);
        assert_string_equal(reason, "queue \"nope\" does not exist");
        free(reason);
        define(qs, "lost", "gone", 1, -1, 1, true);
        reason = xp_queues_blocking(qs, "lost", &two, 1);
        assert_non_null(strstr(reason, "its parent \"gone\" does not exist"));
        free(reason);
        xp_queues_free(qs);
}

/* Borrowing beyond the guarantee: allowed for a reclaimable queue, refused for one that is not. */
static void borrowing(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();
        const struct xp_queue_amount one = {GPU, K};
        char *reason = NULL;

        define(qs, "lender", NULL, 2, -1, 1, true);
        define(qs, "steady", NULL, 2, -1, 1, false);
        assert_int_equal(xp_queues_capacity(qs, GPU, 8 * K), 0);
        gpus(qs, "lender", 2, 0);
        gpus(qs, "steady", 2, 0);
        xp_queues_compute(qs);
        assert_int_equal(xp_queues_admit(qs, "lender", &one, 1, &reason), XP_QUEUE_BORROW);
        assert_int_equal(xp_queues_admit(qs, "steady", &one, 1, &reason), XP_QUEUE_REFUSED);
        assert_string_equal(reason,
                            "queue \"steady\" is not reclaimable and would exceed its guaranteed "
                            "nvidia.com/gpu: 2 allocated + 1 requested > 2");
        free(reason);
        /* the resources no spec names are not managed: cpu passes */
        assert_int_equal(
            xp_queues_admit(qs, "steady", &(struct xp_queue_amount){"cpu", 64 * K}, 1, &reason),
            XP_QUEUE_WITHIN);
        xp_queues_free(qs);
}

/* A queue that lent its idle guarantee takes it back: A borrowed all 8 GPUs, B (guaranteed 4)
 * submits; B may reclaim up to its fair share and A's pods are reclaimable down to A's share. */
static void reclaim_down_to_fair_share(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();
        const struct xp_queue_amount one = {GPU, K};

        define(qs, "a", NULL, 4, -1, 1, true);
        define(qs, "b", NULL, 4, -1, 1, true);
        assert_int_equal(xp_queues_capacity(qs, GPU, 8 * K), 0);
        gpus(qs, "a", 8, 0);
        xp_queues_compute(qs);
        assert_int_equal(figure(qs, "a", GPU, 2), 4 * K);               /* borrowed */
        assert_false(xp_queues_reclaimable(qs, "a", &one, 1, &one, 1)); /* nobody asks */
        gpus(qs, "b", 0, 4);
        xp_queues_compute(qs);
        assert_int_equal(deserved(qs, "a", GPU), 4 * K);
        assert_int_equal(deserved(qs, "b", GPU), 4 * K);
        assert_true(xp_queues_may_reclaim(qs, "b", &one, 1));
        assert_true(xp_queues_reclaimable(qs, "a", &one, 1, &one, 1));
        /* four of A's pods go and four of B's come: then nobody is over */
        gpus(qs, "a", -4, 0);
        gpus(qs, "b", 4, -4);
        xp_queues_compute(qs);
        assert_false(xp_queues_reclaimable(qs, "a", &one, 1, &one, 1));
        assert_false(xp_queues_may_reclaim(qs, "b", &one, 1));
        assert_int_equal(figure(qs, "b", GPU, 1), 4 * K);
        xp_queues_free(qs);
}

/* Bad specs change nothing and say what is wrong. */
static void bad_specs(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();
        const struct xp_queue_quota q = {.resource = GPU, .guaranteed = 4 * K, .limit = 2 * K};
        struct xp_error err = {0};

        assert_int_equal(
            xp_queues_set(
                qs, &(struct xp_queue_spec){.name = "t", .quotas = &q, .n_quotas = 1}, &err),
            -EINVAL);
        assert_string_equal(
            err.msg,
            "queue t: resources[nvidia.com/gpu].limit: must be at least the guaranteed quota");
        assert_int_equal(
            xp_queues_set(qs, &(struct xp_queue_spec){.name = "t", .parent = "t"}, &err), -EINVAL);
        assert_int_equal(xp_queues_remove(qs, "t"), -ENOENT);
        xp_queues_free(qs);
}

/* What would admit a pod each cause holds back, and nothing for one admitted. */
static void unblock_lines(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();
        const struct xp_queue_amount two = {GPU, 2 * K};
        char *text = NULL;

        define(qs, "org", NULL, 8, 8, 1, true);
        define(qs, "team-a", "org", 4, 6, 1, true);
        define(qs, "steady", NULL, 2, -1, 1, false);
        define(qs, "lost", "gone", 1, -1, 1, true);
        assert_int_equal(xp_queues_capacity(qs, GPU, 32 * K), 0);
        gpus(qs, "team-a", 5, 0);
        gpus(qs, "steady", 2, 0);
        xp_queues_compute(qs);
        assert_int_equal(xp_queues_unblock(qs, "team-a", &two, 1, &text), 1);
        assert_string_equal(text,
                            "to unblock: 1 nvidia.com/gpu freed in queue \"team-a\" (its pods done "
                            "or deleted), or its limit of nvidia.com/gpu raised to 7");
        free(text);
        assert_int_equal(xp_queues_unblock(qs, "steady", &two, 1, &text), 1);
        assert_string_equal(text,
                            "to unblock: 2 nvidia.com/gpu freed in queue \"steady\" (its pods done "
                            "or deleted), its guaranteed nvidia.com/gpu raised to 4, or the queue "
                            "made reclaimable");
        free(text);
        assert_int_equal(xp_queues_unblock(qs, "nope", &two, 1, &text), 1);
        assert_string_equal(text,
                            "to unblock: create queue \"nope\", or label the pod with an existing "
                            "queue (xpool.io/queue)");
        free(text);
        assert_int_equal(xp_queues_unblock(qs, "lost", &two, 1, &text), 1);
        assert_string_equal(
            text, "to unblock: create queue \"gone\", or give queue \"lost\" an existing parent");
        free(text);
        assert_int_equal(xp_queues_unblock(qs, "org", &two, 1, &text), 1);
        assert_string_equal(text,
                            "to unblock: label the pod with one of queue \"org\"'s child queues");
        free(text);
        assert_int_equal(
            xp_queues_charge(qs, "team-a", &(struct xp_queue_amount){GPU, 5 * K}, 1, -1), 0);
        assert_int_equal(xp_queues_unblock(qs, "team-a", &two, 1, &text), 0);
        assert_null(text);
        xp_queues_free(qs);
}

/* Issue 19: an unblock line names freeing only where it can make room, and whose pods hold
 * what is to be freed. */
static void expect_unblock(struct xp_queues *qs, const char *queue, int64_t gpus, const char *want)
{
        const struct xp_queue_amount asked = {GPU, gpus * K};
        char *text = NULL;

        assert_int_equal(xp_queues_unblock(qs, queue, &asked, 1, &text), 1);
        assert_string_equal(text, want);
        free(text);
}

static void unblock_lines_free_only_what_can_be(void **state)
{
        (void)state;
        struct xp_queues *qs = queues_new();

        define(qs, "lone", NULL, 1, -1, 1, false);
        define(qs, "capped", NULL, 0, 1, 1, true);
        define(qs, "small", NULL, 0, 3, 1, true);
        define(qs, "org", NULL, 8, 8, 1, true);
        define(qs, "team-b", "org", 0, -1, 1, true);
        define(qs, "team-c", "org", 0, -1, 1, true);
        assert_int_equal(xp_queues_capacity(qs, GPU, 32 * K), 0);
        gpus(qs, "small", 1, 0);
        gpus(qs, "team-b", 8, 0);
        xp_queues_compute(qs);
        /* nothing to reclaim: the queue holds nothing */
        expect_unblock(qs,
                       "lone",
                       2,
                       "to unblock: queue \"lone\" has nothing allocated to free: its guaranteed "
                       "nvidia.com/gpu raised to 2, or the queue made reclaimable");
        expect_unblock(qs,
                       "capped",
                       2,
                       "to unblock: queue \"capped\" has nothing allocated to free: its limit of "
                       "nvidia.com/gpu raised to 2");
        /* in use, but the pod alone is over the bound */
        expect_unblock(qs,
                       "small",
                       4,
                       "to unblock: the pod asks for 4 nvidia.com/gpu, more than queue \"small\"'s "
                       "limit of 3, so freeing its 1 allocated cannot make room: its limit of "
                       "nvidia.com/gpu raised to 5");
        /* the parent's limit, held by another of its queues */
        expect_unblock(qs,
                       "team-c",
                       1,
                       "to unblock: 1 nvidia.com/gpu freed in queue \"org\"'s queues (their pods "
                       "done or deleted; queue \"team-c\" holds 0 of its 8), or its limit of "
                       "nvidia.com/gpu raised to 9");
        expect_unblock(qs,
                       "team-b",
                       2,
                       "to unblock: 2 nvidia.com/gpu freed in queue \"org\"'s queues (their pods "
                       "done or deleted; queue \"team-b\" holds 8 of its 8), or its limit of "
                       "nvidia.com/gpu raised to 10");
        xp_queues_free(qs);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(drf_worked_example),
            cmocka_unit_test(guarantees_then_idle),
            cmocka_unit_test(weights_divide_idle),
            cmocka_unit_test(limits_up_the_tree),
            cmocka_unit_test(borrowing),
            cmocka_unit_test(reclaim_down_to_fair_share),
            cmocka_unit_test(bad_specs),
            cmocka_unit_test(unblock_lines),
            cmocka_unit_test(unblock_lines_free_only_what_can_be),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
