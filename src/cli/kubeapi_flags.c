/* SPDX-License-Identifier: Apache-2.0 */
/* --kubeconfig and --serviceaccount-dir, as every in-cluster command takes them (kubeapi_flags.h).
 */
#include <stdbool.h>

#include "kubeapi_flags.h"

bool xp_cli_kubeapi_option(int c, const char *arg, struct xp_cli_kubeapi *ret)
{
        switch (c) {
        case 'K':
                ret->kubeconfig = arg;
                return true;
        case 'S':
                ret->serviceaccount_dir = arg;
                return true;
        default:
                return false;
        }
}
