/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The built-in catalog of common accelerator models: nominal peak figures from the vendors'
 * public datasheets, for the scheduler to compare devices of different makes. fp16 is the dense
 * FP16 tensor/matrix figure (half the "with sparsity" figure datasheets print with an asterisk),
 * fp32 the non-tensor FP32 (vector) figure, compute units the SMs (NVIDIA), CUs (AMD), Xe cores
 * (Intel), AI cores (Ascend) or TPCs (Gaudi). A 0 means the vendor publishes no figure: the
 * field stays unknown rather than guessed. Overrides (struct xp_device_override) correct any of
 * them per site.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "xpool/macro.h"

#define CATALOG_TOKENS 3

struct catalog_model {
        /*
         * Words that must all occur in the model name, case-insensitively, as whole words; a word
         * ending in '*' may run on ("910B*" matches "910B3").
         */
        const char *words[CATALOG_TOKENS];
        double fp16_tflops;
        double fp32_tflops;
        int64_t compute_units;
};

/* Most specific first: the first entry whose words all match wins. */
static const struct catalog_model models[] = {
    /* NVIDIA: the product datasheets on nvidia.com (H200, H100, A100, A30, A10, A40, L4, L40,
     * L40S, V100, T4, RTX 6000 Ada), the HGX B200 datasheet (per GPU) and the Ada Lovelace
     * architecture whitepaper (RTX 4090); SM counts from the architecture whitepapers. */
    {{"H200", "NVL"}, 835.5, 60.0, 132},
    {{"H200"}, 989.5, 66.9, 132},
    {{"GH200"}, 989.5, 66.9, 132},
    {{"H100", "NVL"}, 835.5, 60.0, 132},
    {{"H100", "PCIe"}, 756.5, 51.2, 114},
    {{"H100"}, 989.5, 66.9, 132}, /* SXM5, "NVIDIA H100 80GB HBM3" */
    {{"H800", "PCIe"}, 756.5, 51.2, 114},
    {{"H800"}, 989.5, 66.9, 132},
    {{"B200"}, 2250.0, 0, 148},
    {{"A100"}, 312.0, 19.5, 108}, /* SXM4 and PCIe, 40GB and 80GB alike */
    {{"A800"}, 312.0, 19.5, 108},
    {{"A30"}, 165.0, 10.3, 56},
    {{"A40"}, 149.7, 37.4, 84},
    {{"A10"}, 125.0, 31.2, 72},
    {{"L40S"}, 362.05, 91.6, 142},
    {{"L40"}, 181.05, 90.5, 142}, /* dense; 362.1 is the sparsity figure */
    {{"L4"}, 121.0, 30.3, 58},
    {{"V100S"}, 130.0, 16.4, 80},
    {{"V100", "PCIe"}, 112.0, 14.0, 80},
    {{"V100"}, 125.0, 15.7, 80}, /* SXM2 */
    {{"T4"}, 65.0, 8.1, 40},
    {{"RTX", "6000", "Ada"}, 364.25, 91.1, 142},
    {{"RTX", "4090"}, 330.3, 82.6, 128},

    /* AMD Instinct: the product pages and datasheets on amd.com (peak FP16 matrix, FP32 vector). */
    {{"MI325X"}, 1307.4, 163.4, 304},
    {{"MI300X"}, 1307.4, 163.4, 304},
    {{"MI300A"}, 980.6, 122.6, 228},
    /* MI250X and MI250 are two GCDs, each its own PCI GPU: per-GCD figures (half the card's) */
    {{"MI250X"}, 191.5, 23.95, 110},
    {{"MI250"}, 181.05, 22.65, 104},
    {{"MI210"}, 181.0, 22.6, 104},
    {{"MI100"}, 184.6, 23.1, 120},

    /* Intel Data Center GPU Max and Flex: Intel's product briefs (XMX FP16, FP32 vector). */
    {{"Max", "1550"}, 832.0, 52.0, 128},
    {{"Max", "1100"}, 352.0, 22.2, 56},
    {{"Flex", "170"}, 128.0, 16.0, 32},
    {{"Flex", "140"}, 26.25, 4.0, 8}, /* two GPUs per card: per-GPU figures */

    /* Huawei Ascend: the Atlas product pages on hiascend.com (FP16 per NPU); AI core counts vary
     * by SKU of the 910B and are left to discovery. */
    {{"910B*"}, 313.0, 0, 0}, /* 910B1 ... 910B4 */
    {{"910"}, 256.0, 0, 32},
    {{"310P*"}, 70.0, 0, 8},

    /* Cambricon: the MLU product pages on cambricon.com. */
    {{"MLU370", "S4"}, 72.0, 18.0, 0},
    {{"MLU370"}, 96.0, 24.0, 0}, /* X4, X8 */
    {{"MLU590"}, 314.0, 80.0, 0},

    /* Habana (Intel Gaudi): the Gaudi 2 and Gaudi 3 white papers (BF16 matrix engines, TPCs). */
    {{"Gaudi3"}, 1835.0, 0, 64},
    {{"Gaudi", "3"}, 1835.0, 0, 64},
    {{"Gaudi2"}, 432.0, 0, 24},
    {{"Gaudi", "2"}, 432.0, 0, 24},
};

/*
 * Whether word occurs in text as a whole word, case-insensitively: not followed by a letter or
 * digit (unless word ends in '*'), and not preceded by one, except that a word starting with a
 * digit may follow letters ("Ascend910B" has "910B"; "A100" has no "A10", "L40S" no "L4").
 */
static bool has_word(const char *text, const char *word)
{
        size_t len = strlen(word);
        bool prefix = len > 0 && word[len - 1] == '*';
        char bare[32];

        if (prefix) {
                len = len - 1 < sizeof(bare) - 1 ? len - 1 : sizeof(bare) - 1;
                memcpy(bare, word, len);
                bare[len] = '\0';
                word = bare;
        }
        for (const char *p = text; (p = strcasestr(p, word)); p++) {
                bool start = p == text || !isalnum((unsigned char)p[-1]) ||
                             (isdigit((unsigned char)word[0]) && isalpha((unsigned char)p[-1]));
                bool end = prefix || !isalnum((unsigned char)p[len]);

                if (start && end)
                        return true;
        }
        return false;
}

static const struct catalog_model *find_model(const char *name)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(models); i++) {
                bool all = true;

                for (size_t w = 0; w < CATALOG_TOKENS && models[i].words[w] && all; w++)
                        all = has_word(name, models[i].words[w]);
                if (all)
                        return &models[i];
        }
        return NULL;
}

void xp_device_catalog_fill(struct xp_device *device)
{
        const struct catalog_model *m;

        if (!device || !device->model || !*device->model)
                return;
        m = find_model(device->model);
        if (!m)
                return;
        if (device->fp16_tflops == 0)
                device->fp16_tflops = m->fp16_tflops;
        if (device->fp32_tflops == 0)
                device->fp32_tflops = m->fp32_tflops;
        if (device->compute_units == 0)
                device->compute_units = m->compute_units;
}
