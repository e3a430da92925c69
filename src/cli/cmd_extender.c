/* SPDX-License-Identifier: Apache-2.0 */
/* xpool extender: kube-scheduler's extender, until SIGINT or SIGTERM (docs/kubernetes.md). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kubeapi_flags.h"
#include "xpool/extender.h"
#include "xpool/log.h"
#include "xpool/macro.h"

static const char usage[] =
    "Usage: xpool extender [OPTIONS]\n\n"
    "Serves kube-scheduler's extender protocol (filter, prioritize and, with --bind, bind) from\n"
    "xpool's scheduling core, fed by a list and watch of the cluster's Nodes and Pods, until SIGINT\n"
    "or SIGTERM. See docs/kubernetes.md.\n\n"
    "  -l, --listen HOST:PORT     where to serve (default 127.0.0.1:8888)\n"
    "      --tls-cert-file FILE   serve HTTPS with this certificate (PEM) ...\n"
    "      --tls-key-file FILE    ... and its key\n"
    "      --client-ca-file FILE  HTTPS: only clients with a certificate this CA signed\n"
    "      --insecure-http        allow plain HTTP on an address other than loopback\n"
    "      --bind                 serve bind: write each Binding with xpool's device placement\n"
    "      --profile NAME         spread (default) or binpack\n" XP_CLI_KUBEAPI_USAGE;

struct extender_args {
        struct xp_extender_options *o;
        char *listen;
        bool insecure_http;
        struct xp_cli_kubeapi api;
};

static bool is_loopback(const char *host)
{
        return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

static int extender_option(int c, const char *arg, void *userdata)
{
        struct extender_args *a = userdata;

        if (xp_cli_kubeapi_option(c, arg, &a->api))
                return 0;
        switch (c) {
        case 'l':
                free(a->listen);
                a->listen = strdup(arg);
                if (!a->listen)
                        return XP_EXIT_FAILURE;
                if (xp_cli_parse_listen(a->listen, false, &a->o->listen_host, &a->o->listen_port) <
                    0) {
                        fprintf(
                            stderr,
                            "xpool extender: --listen '%s': expected HOST:PORT, e.g. 0.0.0.0:8443\n",
                            arg);
                        return XP_EXIT_USAGE;
                }
                break;
        case 'c':
                a->o->tls_cert_file = arg;
                break;
        case 'k':
                a->o->tls_key_file = arg;
                break;
        case 'a':
                a->o->client_ca_file = arg;
                break;
        case 'I':
                a->insecure_http = true;
                break;
        case 'b':
                a->o->bind = true;
                break;
        case 'p':
                if (strcmp(arg, "spread") != 0 && strcmp(arg, "binpack") != 0) {
                        fprintf(stderr,
                                "xpool extender: --profile '%s': expected spread or binpack\n",
                                arg);
                        return XP_EXIT_USAGE;
                }
                a->o->sched.profile =
                    strcmp(arg, "binpack") == 0 ? XP_SCHED_BINPACK : XP_SCHED_SPREAD;
                break;
        }
        return 0;
}

int xp_cmd_extender(int argc, char **argv)
{
        static const struct option options[] = {
            {"listen", required_argument, NULL, 'l'},
            {"tls-cert-file", required_argument, NULL, 'c'},
            {"tls-key-file", required_argument, NULL, 'k'},
            {"client-ca-file", required_argument, NULL, 'a'},
            {"insecure-http", no_argument, NULL, 'I'},
            {"bind", no_argument, NULL, 'b'},
            {"profile", required_argument, NULL, 'p'},
            XP_CLI_KUBEAPI_OPTIONS,
            {"help", no_argument, NULL, 'h'},
            {},
        };
        struct xp_extender_options o = {
            .listen_host = "127.0.0.1", .listen_port = 8888, .sched = {.seed = 1}};
        struct extender_args a = {.o = &o};
        _cleanup_free_ char *listen = NULL;
        struct xp_extender *e = NULL;
        struct xp_error err = {0};
        sigset_t mask;
        int r, sig;

        r = xp_cli_getopt(argc, argv, "l:h", options, usage, extender_option, &a);
        listen = a.listen;
        if (r != 0)
                return r < 0 ? 0 : r;
        o.kubeconfig = a.api.kubeconfig;
        o.serviceaccount_dir = a.api.serviceaccount_dir;
        if (optind < argc) {
                fprintf(
                    stderr, "xpool extender: unexpected argument '%s'\n\n%s", argv[optind], usage);
                return XP_EXIT_USAGE;
        }
        /* bind writes to the API with the extender's credentials: not for anyone on the network */
        if (!o.tls_cert_file && !is_loopback(o.listen_host) && !a.insecure_http) {
                fprintf(
                    stderr,
                    "xpool extender: serving plain HTTP on %s would let anyone who reaches it ask for placements%s: give --tls-cert-file and --tls-key-file (and --client-ca-file), listen on 127.0.0.1, or say --insecure-http\n",
                    o.listen_host,
                    o.bind ? " and bind pods" : "");
                return XP_EXIT_USAGE;
        }
        xp_cli_block_stop_signals(&mask);

        r = xp_extender_new(&o, &e, &err);
        if (r < 0) {
                fprintf(stderr, "xpool extender: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        /* the port on stdout, alone on its line, for scripts that asked for port 0 */
        printf("%u\n", xp_extender_port(e));
        fflush(stdout);
        xp_log(LOG_INFO,
               "xpool extender: serving %s on %s port %u%s",
               o.tls_cert_file ? "HTTPS" : "HTTP",
               o.listen_host,
               xp_extender_port(e),
               o.bind ? " with bind" : "");
        sig = xp_cli_wait_stop(&mask);
        xp_log(LOG_INFO, "xpool extender: %s, stopping", strsignal(sig));
        xp_extender_free(e);
        return 0;
}
