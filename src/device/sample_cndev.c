/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cambricon MLUs' figures through CNDev (sample_internal.h): utilisation, memory used and total,
 * board temperature, power and health, what Cambricon's mlu-exporter reports as mlu_*. Each
 * inventory device is matched to CNDev's card by its PCI address; a figure the driver does not
 * answer stays out. A call's first failure on a card is logged (a warning, a debug line when the
 * card only lacks the figure), never again, so a broken driver cannot flood the log.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "sample_internal.h"
#include "xpool/log.h"

enum cndev_call {
        CALL_UTIL,
        CALL_MEMORY,
        CALL_TEMPERATURE,
        CALL_POWER,
        CALL_HEALTH
};

static const char *const call_names[] = {
    [CALL_UTIL] = "cndevGetDeviceUtilizationInfo",
    [CALL_MEMORY] = "cndevGetMemoryUsage",
    [CALL_TEMPERATURE] = "cndevGetTemperatureInfo",
    [CALL_POWER] = "cndevGetPowerInfo",
    [CALL_HEALTH] = "cndevGetCardHealthState",
};

static bool is_cambricon(const struct xp_device *d)
{
        return !d->simulated && d->pci_address && d->vendor &&
               strcasecmp(d->vendor, "Cambricon") == 0;
}

static int find_index(const struct xp_node_inventory *inventory, const struct cndev_pcie_info *p)
{
        char pci[32];

        snprintf(pci, sizeof(pci), "%04x:%02x:%02x.%x", p->domain, p->bus, p->device, p->function);
        for (size_t i = 0; i < inventory->devices.n; i++) {
                const struct xp_device *d = &inventory->devices.items[i];

                if (is_cambricon(d) && strcasecmp(d->pci_address, pci) == 0)
                        return (int)i;
        }
        return -1;
}

static void
map_cards(struct cndev_sampler *s, const struct xp_node_inventory *inventory, unsigned n)
{
        for (unsigned card = 0; card < n && card < 256; card++) {
                union cndev_answer a = {.version = CNDEV_API_VERSION};
                int i;

                if (s->api.get_pcie_info(&a.pcie, (int)card) != CNDEV_SUCCESS)
                        continue;
                i = find_index(inventory, &a.pcie);
                if (i >= 0)
                        s->cards[i] = (struct cndev_card){.mapped = true, .card = (int)card};
        }
}

int cndev_sampler_open(const struct xp_discovery_config *config,
                       const struct xp_node_inventory *inventory,
                       struct cndev_sampler *ret)
{
        struct cndev_sampler s = {0};
        unsigned n_cards = 0;
        bool any = false;

        *ret = s;
        for (size_t i = 0; i < inventory->devices.n; i++)
                any = any || is_cambricon(&inventory->devices.items[i]);
        if (!any || xp_cndev_api_open(xp_cndev_library(config ? config->cndev_library : NULL),
                                      &s.api,
                                      &n_cards) < 0)
                return 0;
        s.cards = calloc(inventory->devices.n ? inventory->devices.n : 1, sizeof(*s.cards));
        if (!s.cards) {
                xp_cndev_api_close(&s.api);
                return -ENOMEM;
        }
        s.n = inventory->devices.n;
        s.inventory = inventory;
        map_cards(&s, inventory, n_cards);
        *ret = s;
        return 0;
}

void cndev_sampler_close(struct cndev_sampler *s)
{
        free(s->cards);
        xp_cndev_api_close(&s->api);
        *s = (struct cndev_sampler){0};
}

static struct cndev_card *card_of(struct cndev_sampler *s, size_t i)
{
        struct cndev_card *c = i < s->n ? &s->cards[i] : NULL;

        return s->api.dl && c && c->mapped ? c : NULL;
}

/* r's first failure of call on card c, in words once. */
static bool answered(struct cndev_sampler *s, size_t i, enum cndev_call call, int r)
{
        struct cndev_card *c = &s->cards[i];
        char buf[96];

        if (r == CNDEV_SUCCESS)
                return true;
        if (c->logged & (1u << call))
                return false;
        c->logged |= 1u << call;
        xp_log(r == CNDEV_ERROR_NOT_SUPPORTED ? LOG_DEBUG : LOG_WARNING,
               "cndev: %s on card %d (%s) failed: %s; its figure is left out",
               call_names[call],
               c->card,
               s->inventory->devices.items[i].pci_address,
               xp_cndev_strerror(&s->api, r, buf));
        return false;
}

#define MIB ((int64_t)1 << 20)

/* A broken library's figure would overflow in bytes: left out instead. */
static bool mib_in_range(int64_t mib)
{
        return mib >= 0 && mib <= INT64_MAX / MIB;
}

void cndev_sampler_read(struct cndev_sampler *s, size_t i, struct xp_device_sample *ret)
{
        const struct cndev_card *c = card_of(s, i);
        union cndev_answer a = {.version = CNDEV_API_VERSION};

        if (!c)
                return;
        if (s->api.get_utilization &&
            answered(s, i, CALL_UTIL, s->api.get_utilization(&a.util, c->card))) {
                ret->has |= XP_SAMPLE_UTIL;
                ret->utilization_percent = a.util.average_core;
        }
        a = (union cndev_answer){.version = CNDEV_API_VERSION};
        if (s->api.get_memory_usage &&
            answered(s, i, CALL_MEMORY, s->api.get_memory_usage(&a.memory, c->card)) &&
            mib_in_range(a.memory.physical_used_mib) && mib_in_range(a.memory.physical_total_mib)) {
                ret->has |= XP_SAMPLE_MEM_USED | XP_SAMPLE_MEM_TOTAL;
                ret->memory_used_bytes = a.memory.physical_used_mib * MIB;
                ret->memory_total_bytes = a.memory.physical_total_mib * MIB;
        }
        a = (union cndev_answer){.version = CNDEV_API_VERSION};
        if (s->api.get_temperature &&
            answered(s, i, CALL_TEMPERATURE, s->api.get_temperature(&a.temperature, c->card))) {
                ret->has |= XP_SAMPLE_TEMP;
                ret->temperature_celsius = a.temperature.board;
        }
        a = (union cndev_answer){.version = CNDEV_API_VERSION};
        if (s->api.get_power && answered(s, i, CALL_POWER, s->api.get_power(&a.power, c->card))) {
                ret->has |= XP_SAMPLE_POWER;
                ret->power_watts = a.power.usage_w;
        }
}

void cndev_sampler_health(struct cndev_sampler *s, size_t i, struct xp_device_sample *ret)
{
        const struct cndev_card *c = card_of(s, i);
        union cndev_answer a = {.version = CNDEV_API_VERSION};

        if (!c || !s->api.get_health ||
            !answered(s, i, CALL_HEALTH, s->api.get_health(&a.health, c->card)))
                return;
        if (a.health.health == 1) {
                if (ret->health == XP_DEVICE_HEALTH_UNKNOWN)
                        ret->health = XP_DEVICE_HEALTHY;
                return;
        }
        ret->health = XP_DEVICE_UNHEALTHY;
        snprintf(ret->health_reason,
                 sizeof(ret->health_reason),
                 "CNDev reports the card unhealthy (state %d)",
                 a.health.health);
}
