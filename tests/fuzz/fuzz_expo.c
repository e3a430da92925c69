/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_expo_parse() (xpool/expo.h), which reads what agents answer at /metrics/resource
 * and checks expositions in the tests, in both formats, and xp_sim_script_parse() (the
 * metricsScript of node descriptions) on the same bytes. Checks: a failure is -EINVAL with a
 * message (or -ENOMEM); every sample handed over has a name and labels with names and values.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/devsample.h"
#include "xpool/expo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static int on_sample(const struct xp_expo_sample *s, void *userdata)
{
        (void)userdata;
        check(s->name && s->name[0] && s->family);
        for (size_t i = 0; i < s->n_labels; i++)
                check(s->labels[i].name && s->labels[i].value);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_sim_script *script = NULL;
        struct xp_device_sample sample = {0};
        struct xp_error err = {0};
        int r;

        if (size > 65536)
                return 0;
        for (int f = 0; f < 2; f++) {
                err.msg[0] = '\0';
                r = xp_expo_parse(
                    (const char *)data, size, (enum xp_expo_format)f, on_sample, NULL, &err);
                check(r == 0 || ((r == -EINVAL && err.msg[0]) || r == -ENOMEM));
        }
        if (xp_sim_script_parse((const char *)data, size, "fuzz", &script, &err) >= 0 && script) {
                xp_sim_script_eval(script, "gpu-0", 12345, &sample);
                xp_sim_script_free(script);
        }
        return 0;
}
