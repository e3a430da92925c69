/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libdcmi.so for tests: the DCMI calls xpool's Ascend sampler makes, answering from a JSON
 * configuration named by $FAKE_DCMI_CONFIG, read by dcmi_init. Without the variable dcmi_init
 * fails, as on a node without the Ascend driver.
 *
 * The configuration (tests/data/dcmi/ *.json):
 *   {"cards": [{"id": 0, "chips": [{
 *       "pci": "0000:01:00.0",   // domain:bus:device.function, what dcmi_get_device_pcie_info says
 *       "aicore": 37,            // dcmi_get_device_utilization_rate(AI core), percent
 *       "temperature": 45,       // dcmi_get_device_temperature, degrees Celsius
 *       "power": 853             // dcmi_get_device_power_info, tenths of a watt
 *   }]}]}
 * A chip without "pci" is an MCU (dcmi_get_device_pcie_info fails for it); a figure left out
 * answers DCMI_ERR_CODE_NOT_SUPPORT.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DCMI_ERR_CODE_INVALID_PARAMETER (-8001)
#define DCMI_ERR_CODE_INVALID_DEVICE_ID (-8007)
#define DCMI_ERR_CODE_NOT_SUPPORT       (-8255)

/* The layout Huawei's dcmi_interface_api.h gives it. */
struct dcmi_pcie_info_all {
        unsigned int venderid, subvenderid, deviceid, subdeviceid;
        int domain;
        unsigned int bdf_busid, bdf_deviceid, bdf_funcid;
        unsigned char reserve[32];
};

/* What libdcmi.so exports, as Huawei's DCMI API reference declares it. */
int dcmi_init(void);
int dcmi_get_card_num_list(int *card_num, int *card_list, int list_len);
int dcmi_get_device_num_in_card(int card_id, int *device_num);
int dcmi_get_device_pcie_info(int card_id, int device_id, struct dcmi_pcie_info_all *info);
int dcmi_get_device_utilization_rate(int card_id,
                                     int device_id,
                                     int input_type,
                                     unsigned int *utilization_rate);
int dcmi_get_device_temperature(int card_id, int device_id, int *temperature);
int dcmi_get_device_power_info(int card_id, int device_id, int *power);

static json_t *config;

static void drop_config(void)
{
        json_decref(config);
        config = NULL;
}

int dcmi_init(void)
{
        const char *path = getenv("FAKE_DCMI_CONFIG");

        if (config)
                return 0;
        if (!path)
                return DCMI_ERR_CODE_INVALID_PARAMETER;
        config = json_load_file(path, 0, NULL);
        if (!config)
                return DCMI_ERR_CODE_INVALID_PARAMETER;
        atexit(drop_config);
        return 0;
}

static json_t *card_of(int card_id)
{
        size_t i;
        json_t *card;

        json_array_foreach(json_object_get(config, "cards"), i, card)
        {
                if (json_integer_value(json_object_get(card, "id")) == card_id)
                        return card;
        }
        return NULL;
}

static json_t *chip_of(int card_id, int device_id)
{
        json_t *chips = json_object_get(card_of(card_id), "chips");

        return device_id < 0 ? NULL : json_array_get(chips, (size_t)device_id);
}

int dcmi_get_card_num_list(int *card_num, int *card_list, int list_len)
{
        json_t *cards = json_object_get(config, "cards");
        int n = 0;

        if (!config || !card_num || !card_list)
                return DCMI_ERR_CODE_INVALID_PARAMETER;
        for (size_t i = 0; i < json_array_size(cards) && n < list_len; i++)
                card_list[n++] =
                    (int)json_integer_value(json_object_get(json_array_get(cards, i), "id"));
        *card_num = n;
        return 0;
}

int dcmi_get_device_num_in_card(int card_id, int *device_num)
{
        json_t *card = card_of(card_id);

        if (!card || !device_num)
                return DCMI_ERR_CODE_INVALID_DEVICE_ID;
        *device_num = (int)json_array_size(json_object_get(card, "chips"));
        return 0;
}

int dcmi_get_device_pcie_info(int card_id, int device_id, struct dcmi_pcie_info_all *info)
{
        const char *pci = json_string_value(json_object_get(chip_of(card_id, device_id), "pci"));
        unsigned int domain, bus, dev, fn;

        if (!pci || !info || sscanf(pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
                return DCMI_ERR_CODE_INVALID_DEVICE_ID;
        memset(info, 0, sizeof(*info));
        info->venderid = 0x19e5;
        info->domain = (int)domain;
        info->bdf_busid = bus;
        info->bdf_deviceid = dev;
        info->bdf_funcid = fn;
        return 0;
}

static int figure(int card_id, int device_id, const char *name, long long *ret)
{
        json_t *chip = chip_of(card_id, device_id), *v = json_object_get(chip, name);

        if (!chip)
                return DCMI_ERR_CODE_INVALID_DEVICE_ID;
        if (!json_is_integer(v))
                return DCMI_ERR_CODE_NOT_SUPPORT;
        *ret = json_integer_value(v);
        return 0;
}

int dcmi_get_device_utilization_rate(int card_id,
                                     int device_id,
                                     int input_type,
                                     unsigned int *utilization_rate)
{
        long long v = 0;
        int r =
            input_type == 2 ? figure(card_id, device_id, "aicore", &v) : DCMI_ERR_CODE_NOT_SUPPORT;

        if (r == 0)
                *utilization_rate = (unsigned int)v;
        return r;
}

int dcmi_get_device_temperature(int card_id, int device_id, int *temperature)
{
        long long v = 0;
        int r = figure(card_id, device_id, "temperature", &v);

        if (r == 0)
                *temperature = (int)v;
        return r;
}

int dcmi_get_device_power_info(int card_id, int device_id, int *power)
{
        long long v = 0;
        int r = figure(card_id, device_id, "power", &v);

        if (r == 0)
                *power = (int)v;
        return r;
}
