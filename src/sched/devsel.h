/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Device selection inside one node (src/sched/devsel.c): which k devices of one resource, or
 * which share of which device, serve a request, with the best interconnect among the chosen
 * devices and the least harm to what stays free. Pure and allocation-free: the scheduler calls
 * it for its best candidate nodes on every placement.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEVSEL_MAX 64 /* devices of one resource on one node */

struct devsel_device {
        int numa;             /* NUMA node, -1 when unknown */
        int64_t memory_bytes; /* device memory, 0 when unknown */
        int64_t used_milli;   /* 0..1000: what placed pods hold of it */
        bool healthy;         /* unhealthy devices are never chosen */
        /* Must be among the chosen (the kubelet's must-include devices): a whole-device request
         * the required devices cannot join (more of them than asked, one used, unhealthy or
         * off the request's NUMA node) is 0; a share goes to one of them. */
        bool required;
};

struct devsel_node {
        size_t n; /* at most DEVSEL_MAX */
        const struct devsel_device *devices;
        /*
         * affinity[i * n + j] (symmetric; the diagonal unused): how well devices i and j are
         * connected, higher is better: devsel_link_affinity() of their link.
         */
        const uint16_t *affinity;
};

/* The affinity of a link: NVLink by its link count above every PCIe level, then PIX > PXB > PHB
 * > NODE > SYS (enum xp_link_level), 0 when unknown. */
uint16_t devsel_link_affinity(int level, int64_t nvlinks);

struct devsel_request {
        /* A multiple of 1000: that many whole devices (each unused). Below 1000: a share of one
         * device (one with at least that much left). Anything else is -EINVAL. */
        int64_t milli;
        int64_t min_memory_bytes; /* each chosen device's memory at least this (0: any) */
        int numa;                 /* -1: any; else only devices on this NUMA node */
};

struct devsel_result {
        size_t n;                  /* devices chosen */
        size_t index[DEVSEL_MAX];  /* into node->devices */
        int64_t milli[DEVSEL_MAX]; /* what each gives: 1000, or the share */
        int64_t score;             /* higher is better; comparable across nodes for one request */
        int numa;                  /* the NUMA node all chosen devices share, -1 when mixed */
};

/* 1 with *ret, 0 when the node cannot serve the request, -EINVAL for a bad request. */
int devsel_choose(const struct devsel_node *node,
                  const struct devsel_request *req,
                  struct devsel_result *ret);

/*
 * Details of devsel_choose() (docs/scheduler.md, "Device selection", has the score formula):
 * - -EINVAL also for a bad node: NULL arguments, n above DEVSEL_MAX, devices NULL with n > 0, a
 *   used_milli outside 0..1000 or a negative memory_bytes; numa below -1 or a negative
 *   min_memory_bytes in the request. k whole devices with k above n is 0, not -EINVAL.
 * - A NULL affinity means every link is unknown (0).
 * - A device whose memory is unknown (0) never meets a min_memory_bytes above 0.
 * - On 0 and -EINVAL *ret is left untouched; on 1 only n, index[0..n), milli[0..n), score and
 *   numa are written, index ascending.
 */
