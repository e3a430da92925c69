/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The flags of the commands that reach a Kubernetes API server as a client in the cluster (xpool
 * extender, xpool inventory): --kubeconfig and --serviceaccount-dir, with one usage text.
 */

#include <getopt.h>
#include <stdbool.h>

#define XP_CLI_KUBEAPI_USAGE                                                                       \
        "      --kubeconfig FILE      reach the API with this kubeconfig (default: $KUBECONFIG, "  \
        "else\n"                                                                                   \
        "                             the pod's service account)\n"                                \
        "      --serviceaccount-dir DIR  the service account's token and ca.crt\n"                 \
        "                             (default /var/run/secrets/kubernetes.io/serviceaccount)\n"

/* The two entries of a getopt_long table; their short codes are 'K' and 'S'. */
#define XP_CLI_KUBEAPI_OPTIONS                                                                     \
        {"kubeconfig", required_argument, NULL, 'K'},                                              \
        {                                                                                          \
                "serviceaccount-dir", required_argument, NULL, 'S'                                 \
        }

struct xp_cli_kubeapi {
        const char *kubeconfig;
        const char *serviceaccount_dir;
};

/* Takes c when it is one of the two flags (arg borrowed from argv): true, else false. */
bool xp_cli_kubeapi_option(int c, const char *arg, struct xp_cli_kubeapi *ret);
