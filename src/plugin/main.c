/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool-device-plugin device-plugin [OPTIONS]`: the kubelet device plugin alone. `xpool
 * device-plugin` runs this executable when it is beside it: linked with only what the plugin
 * uses (gRPC, protobuf-c, jansson, libyaml), it leaves out the server's and the CLI's libraries
 * (GnuTLS, libcurl, libmicrohttpd, SQLite), whose pages would double the plugin's resident size
 * on every node (bench/bench_device_plugin.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "xpool/log.h"

int main(int argc, char **argv)
{
        /* the same arguments as `xpool device-plugin`, so either runs it */
        if (argc < 2 || strcmp(argv[1], "device-plugin") != 0) {
                fprintf(
                    stderr,
                    "usage: xpool-device-plugin device-plugin [OPTIONS] (see xpool device-plugin --help)\n");
                return 2;
        }
        xp_log_init();
        return xp_device_plugin_main(argc - 1, argv + 1);
}
