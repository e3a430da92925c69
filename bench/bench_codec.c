/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How fast the object model goes in and out of JSON: decode+validate, encode, and YAML manifest
 * loading of a realistic pod. Prints figures; asserts nothing.
 *
 *   build/bench/bench_codec [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "xpool/codec.h"
#include "xpool/manifest.h"

static const char pod_yaml[] =
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: trainer-0\n"
    "  namespace: research\n"
    "  labels: {app: trainer, job: llm, tier: gpu}\n"
    "  annotations: {owner: team-a}\n"
    "spec:\n"
    "  containers:\n"
    "  - name: trainer\n"
    "    image: ai-framework:latest\n"
    "    command: [python, train.py, --epochs, \"3\"]\n"
    "    env: [{name: NCCL_DEBUG, value: INFO}, {name: OMP_NUM_THREADS, value: \"8\"}]\n"
    "    resources:\n"
    "      limits: {cpu: \"8\", memory: 64Gi, nvidia.com/gpu: 4}\n"
    "      requests: {cpu: 4000m, memory: 32Gi, nvidia.com/gpu: 4}\n"
    "    ports: [{containerPort: 29500}]\n"
    "  nodeSelector: {xpool.io/gpu-product: H100-SXM}\n"
    "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
    "  affinity:\n"
    "    podAntiAffinity:\n"
    "      requiredDuringSchedulingIgnoredDuringExecution:\n"
    "      - labelSelector: {matchLabels: {job: llm}}\n"
    "        topologyKey: kubernetes.io/hostname\n";

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *what, long n, double seconds)
{
        printf("%-28s %10.0f /s  %8.2f us each\n",
               what,
               (double)n / seconds,
               seconds * 1e6 / (double)n);
}

int main(int argc, char **argv)
{
        long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
        struct xp_manifest manifest;
        struct xp_error err = {0};
        struct rusage usage;
        json_t *json;
        char *text;
        double t;

        if (iterations <= 0 ||
            xp_manifest_load_buffer(
                pod_yaml, sizeof(pod_yaml) - 1, "bench.yaml", 0, &manifest, &err) < 0 ||
            xp_pod_to_json(manifest.objects[0].pod, &json) < 0) {
                fprintf(stderr, "bench_codec: setup failed: %s\n", err.msg);
                return 1;
        }
        text = json_dumps(json, JSON_COMPACT);
        json_decref(json);
        xp_manifest_done(&manifest);
        printf("pod: %zu bytes of JSON, %ld iterations\n", strlen(text), iterations);

        t = now();
        for (long i = 0; i < iterations; i++) {
                struct xp_pod *pod;

                if (xp_pod_from_json_text(text, strlen(text), NULL, 0, &pod, &err) < 0)
                        return 1;
                xp_pod_free(pod);
        }
        report("JSON text -> Pod (validated)", iterations, now() - t);

        {
                struct xp_pod *pod;

                if (xp_pod_from_json_text(text, strlen(text), NULL, 0, &pod, &err) < 0)
                        return 1;
                t = now();
                for (long i = 0; i < iterations; i++) {
                        char *out;

                        if (xp_pod_to_json(pod, &json) < 0)
                                return 1;
                        out = json_dumps(json, JSON_COMPACT);
                        json_decref(json);
                        free(out);
                }
                report("Pod -> JSON text", iterations, now() - t);
                xp_pod_free(pod);
        }

        t = now();
        for (long i = 0; i < iterations; i++) {
                if (xp_manifest_load_buffer(
                        pod_yaml, sizeof(pod_yaml) - 1, "bench.yaml", 0, &manifest, &err) < 0)
                        return 1;
                xp_manifest_done(&manifest);
        }
        report("YAML manifest -> Pod", iterations, now() - t);

        getrusage(RUSAGE_SELF, &usage);
        printf("peak RSS: %.1f MiB\n", (double)usage.ru_maxrss / 1024.0);
        free(text);
        return 0;
}
