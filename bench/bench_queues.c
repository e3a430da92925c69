/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Queues and preemption in the scheduler core at cluster scale: NODES synthetic nodes (8 GPUs
 * each in two NVLink islands of 4, 96 CPUs), 8 team queues under 2 organisations (guarantees,
 * limits, weights), PODS pods of 1, 2, 4 and 8 GPUs, round robin over the teams, each admitted by
 * its queue (limits up the tree), placed, bound and charged. The same pods
 * are then placed on a fresh snapshot without queues, for the difference. Finally, on the full
 * cluster, 100 pods of 8 GPUs at a higher priority each preempt (the search over every node) and
 * take their node. Prints placements/s both ways, and the preemption search's p50/p99, all in
 * the thread's CPU time (a shared machine's waits left out). Asserts nothing.
 *
 *   build/bench/bench_queues [NODES [PODS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "xpool/codec.h"
#include "xpool/preempt.h"
#include "xpool/queue.h"
#include "xpool/sched.h"

#define TEAMS 8

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

static struct xp_node *make_node(int i)
{
        char *text = NULL, *devs = NULL, *links = NULL;
        size_t n_devs = 0, n_links = 0;
        FILE *d = open_memstream(&devs, &n_devs), *l = open_memstream(&links, &n_links);
        struct xp_node *node = NULL;
        struct xp_error err = {0};

        for (int g = 0; g < 8; g++) {
                fprintf(
                    d,
                    "%s{\"id\":\"q%d-%d\",\"kind\":\"gpu\",\"vendor\":\"NVIDIA\",\"resourceName\":\"nvidia.com/gpu\",\"index\":%d,\"numaNode\":%d}",
                    g ? "," : "",
                    i,
                    g,
                    g,
                    g / 4);
                for (int h = g + 1; h < 8; h++)
                        fprintf(l,
                                "%s{\"a\":\"q%d-%d\",\"b\":\"q%d-%d\",\"level\":\"%s\"%s}",
                                g || h > 1 ? "," : "",
                                i,
                                g,
                                i,
                                h,
                                g / 4 == h / 4 ? "NVLink" : "SYS",
                                g / 4 == h / 4 ? ",\"nvlinks\":12" : "");
        }
        fclose(d);
        fclose(l);
        if (asprintf(
                &text,
                "{\"metadata\":{\"name\":\"node-%d\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                "\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},"
                "\"xpool\":{\"numaNodes\":[{\"id\":0,\"cpus\":\"0-47\"},{\"id\":1,\"cpus\":\"48-95\"}],\"devices\":[%s],\"links\":[%s]}}}",
                i,
                devs,
                links) < 0 ||
            xp_node_from_json_text(text, strlen(text), "node", XP_DECODE_TRUSTED, &node, &err) < 0)
                node = NULL;
        free(text);
        free(devs);
        free(links);
        return node;
}

static struct xp_pod *make_pod(int i, int gpus, int priority)
{
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        char *text = NULL;

        if (asprintf(
                &text,
                "{\"metadata\":{\"name\":\"pod-%d\",\"namespace\":\"bench\",\"labels\":{\"xpool.io/queue\":\"team-%d\"}},"
                "\"spec\":{\"priority\":%d,\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":"
                "{\"cpu\":\"%d\",\"nvidia.com/gpu\":\"%d\"}}}]}}",
                i,
                i % TEAMS,
                priority,
                gpus * 4,
                gpus) < 0 ||
            xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                pod = NULL;
        free(text);
        return pod;
}

static int define_queues(struct xp_queues *qs, int n_nodes)
{
        int64_t gpus = (int64_t)n_nodes * 8 * 1000;
        struct xp_error err = {0};

        for (int o = 0; o < 2; o++) {
                char name[16];
                struct xp_queue_quota q = {"nvidia.com/gpu", gpus / 2, -1, 0};
                snprintf(name, sizeof(name), "org-%d", o);
                if (xp_queues_set(
                        qs,
                        &(struct xp_queue_spec){
                            .name = name, .quotas = &q, .n_quotas = 1, .reclaimable = true},
                        &err) < 0)
                        return -1;
        }
        for (int t = 0; t < TEAMS; t++) {
                char name[16], parent[16];
                struct xp_queue_quota q = {"nvidia.com/gpu", gpus / TEAMS, gpus / 2, 0};
                snprintf(name, sizeof(name), "team-%d", t);
                snprintf(parent, sizeof(parent), "org-%d", t % 2);
                if (xp_queues_set(qs,
                                  &(struct xp_queue_spec){.name = name,
                                                          .parent = parent,
                                                          .quotas = &q,
                                                          .n_quotas = 1,
                                                          .weight = 1 + t % 3,
                                                          .reclaimable = true},
                                  &err) < 0)
                        return -1;
        }
        return xp_queues_capacity(qs, "nvidia.com/gpu", gpus);
}

/* Places pod i (bound and charged when it fits); returns 1 placed, 0 not. */
static int place(struct xp_sched *sched, struct xp_queues *qs, struct xp_pod *pod, int gpus)
{
        struct xp_queue_amount a = {"nvidia.com/gpu", gpus * 1000};
        const char *queue = xp_strmap_get(&pod->metadata.labels, XP_QUEUE_LABEL);
        struct xp_placement pl = {0};
        struct xp_error err = {0};
        char *reason = NULL, *ann = NULL;
        int r;

        if (qs) {
                if (xp_queues_admit(qs, queue, &a, 1, &reason) == XP_QUEUE_REFUSED) {
                        free(reason);
                        return 0;
                }
        }
        r = xp_sched_place(sched, pod, &pl, &reason, &err);
        free(reason);
        if (r != 1)
                return 0;
        if (xp_placement_to_json(&pl, &ann) < 0 ||
            xp_strmap_set(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION, ann) < 0)
                return 0;
        pod->spec.node_name = strdup(pl.node);
        r = xp_sched_pod_add(sched, pod, &err);
        if (r >= 0 && qs)
                (void)xp_queues_charge(qs, queue, &a, 1, +1);
        free(ann);
        xp_placement_done(&pl);
        return r >= 0;
}

static double run(int n_nodes, int n_pods, bool queues, struct xp_sched **ret)
{
        static const int mix[] = {1, 1, 1, 1, 2, 2, 4, 8};
        struct xp_sched_options o = {
            .profile = XP_SCHED_BINPACK, .seed = 1, .feasible_nodes_to_find = 100};
        struct xp_queues *qs = NULL;
        struct xp_sched *sched = NULL;
        uint64_t t = 0;
        int placed = 0;

        if (xp_sched_new(&o, &sched) < 0 ||
            (queues && (xp_queues_new(&qs) < 0 || define_queues(qs, n_nodes) < 0)))
                return -1;
        for (int i = 0; i < n_nodes; i++) {
                struct xp_node *node = make_node(i);
                struct xp_error err = {0};
                if (!node || xp_sched_node_set(sched, node, &err) < 0)
                        return -1;
                xp_node_free(node);
        }
        for (int i = 0; i < n_pods; i++) {
                struct xp_pod *pod = make_pod(i, mix[i % 8], 0);
                uint64_t start = bench_cpu_ns();
                if (!pod)
                        return -1;
                placed += place(sched, qs, pod, mix[i % 8]);
                t += bench_cpu_ns() - start;
                xp_pod_free(pod);
        }
        printf("%s: %d of %d pods placed, %.0f placements/s\n",
               queues ? "queues on " : "queues off",
               placed,
               n_pods,
               n_pods / ((double)t / 1e9));
        xp_queues_free(qs);
        *ret = sched;
        return (double)t;
}

int main(int argc, char **argv)
{
        int n_nodes = argc > 1 ? atoi(argv[1]) : 5000, n_pods = argc > 2 ? atoi(argv[2]) : 20000;
        struct xp_sched *sched = NULL;
        uint64_t lat[100];
        size_t n = 0;

        struct xp_sched *plain = NULL;

        bench_loadavg("start");
        /* the mix asks for more GPUs than there are: the cluster ends full */
        if (n_nodes <= 0 || n_pods <= 0 || run(n_nodes, n_pods, true, &sched) < 0 ||
            run(n_nodes, n_pods, false, &plain) < 0)
                return 1;
        xp_sched_free(plain);
        for (int i = 0; i < 100; i++) {
                struct xp_pod *pod = make_pod(1000000 + i, 8, 100);
                struct xp_preemption pre = {0};
                struct xp_error err = {0};
                uint64_t start = bench_cpu_ns();
                int r = pod ? xp_sched_preempt(sched, pod, NULL, &pre, &err) : -1;

                lat[n++] = bench_cpu_ns() - start;
                if (r == 1) {
                        /* the victims go and the pod takes their place */
                        for (size_t v = 0; v < pre.n_victims; v++)
                                (void)xp_sched_pod_remove(
                                    sched, pre.victims[v].namespace, pre.victims[v].name);
                        (void)place(sched, NULL, pod, 8);
                }
                xp_preemption_done(&pre);
                xp_pod_free(pod);
        }
        qsort(lat, n, sizeof(*lat), cmp_u64);
        printf("preemption search at %d nodes: p50 %.2f ms, p99 %.2f ms\n",
               n_nodes,
               (double)lat[n / 2] / 1e6,
               (double)lat[n * 99 / 100] / 1e6);
        bench_loadavg("end");
        xp_sched_free(sched);
        return 0;
}
