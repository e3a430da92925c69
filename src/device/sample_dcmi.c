/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Huawei Ascend NPUs' figures through DCMI (sample_internal.h): AI core utilisation, temperature
 * and power, what npu-exporter reports as npu_chip_info_*. Each inventory device is matched to
 * DCMI's (card, device) by its PCI address; a figure the driver does not answer stays out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "sample_internal.h"

#define CARDS_MAX 64

static bool is_ascend(const struct xp_device *d)
{
        return !d->simulated && d->pci_address && d->vendor && strcasecmp(d->vendor, "Huawei") == 0;
}

static int find_index(const struct xp_node_inventory *inventory, const struct dcmi_pcie_info_all *p)
{
        char pci[32];

        snprintf(pci,
                 sizeof(pci),
                 "%04x:%02x:%02x.%x",
                 (unsigned)p->domain,
                 p->bdf_busid,
                 p->bdf_deviceid,
                 p->bdf_funcid);
        for (size_t i = 0; i < inventory->devices.n; i++) {
                const struct xp_device *d = &inventory->devices.items[i];

                if (is_ascend(d) && strcasecmp(d->pci_address, pci) == 0)
                        return (int)i;
        }
        return -1;
}

/* Every chip of every card DCMI lists, placed at its inventory device. */
static void map_chips(struct dcmi_sampler *s, const struct xp_node_inventory *inventory)
{
        int cards[CARDS_MAX], n_cards = 0;

        if (s->api.get_card_num_list(&n_cards, cards, CARDS_MAX) != 0)
                return;
        for (int c = 0; c < n_cards && c < CARDS_MAX; c++) {
                int n_chips = 0;

                if (s->api.get_device_num_in_card(cards[c], &n_chips) != 0)
                        continue;
                for (int chip = 0; chip < n_chips && chip < CARDS_MAX; chip++) {
                        struct dcmi_pcie_info_all info = {0};
                        int i;

                        if (s->api.get_device_pcie_info(cards[c], chip, &info) != 0)
                                continue; /* an MCU, or a chip that is not there */
                        i = find_index(inventory, &info);
                        if (i >= 0)
                                s->chips[i] = (struct dcmi_chip){true, cards[c], chip};
                }
        }
}

int dcmi_sampler_open(const struct xp_discovery_config *config,
                      const struct xp_node_inventory *inventory,
                      struct dcmi_sampler *ret)
{
        struct dcmi_sampler s = {0};
        bool any = false;

        *ret = s;
        for (size_t i = 0; i < inventory->devices.n; i++)
                any = any || is_ascend(&inventory->devices.items[i]);
        if (!any ||
            xp_dcmi_api_open(xp_dcmi_library(config ? config->dcmi_library : NULL), &s.api) < 0)
                return 0;
        s.chips = calloc(inventory->devices.n ? inventory->devices.n : 1, sizeof(*s.chips));
        if (!s.chips) {
                xp_dcmi_api_close(&s.api);
                return -ENOMEM;
        }
        s.n = inventory->devices.n;
        map_chips(&s, inventory);
        *ret = s;
        return 0;
}

void dcmi_sampler_close(struct dcmi_sampler *s)
{
        free(s->chips);
        xp_dcmi_api_close(&s->api);
        *s = (struct dcmi_sampler){0};
}

void dcmi_sampler_read(struct dcmi_sampler *s, size_t i, struct xp_device_sample *ret)
{
        const struct dcmi_chip *c = i < s->n ? &s->chips[i] : NULL;
        unsigned int util;
        int temp, power;

        if (!s->api.dl || !c || !c->mapped)
                return;
        if (s->api.get_device_utilization_rate &&
            s->api.get_device_utilization_rate(
                c->card, c->device, DCMI_UTILIZATION_AICORE, &util) == 0) {
                ret->has |= XP_SAMPLE_UTIL;
                ret->utilization_percent = (double)util;
        }
        if (s->api.get_device_temperature &&
            s->api.get_device_temperature(c->card, c->device, &temp) == 0) {
                ret->has |= XP_SAMPLE_TEMP;
                ret->temperature_celsius = (double)temp;
        }
        if (s->api.get_device_power_info &&
            s->api.get_device_power_info(c->card, c->device, &power) == 0) {
                ret->has |= XP_SAMPLE_POWER;
                ret->power_watts = (double)power / 10.0; /* tenths of a watt */
        }
}
