/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One file per subcommand; main.c dispatches through the table in commands.c. */

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_cli_command {
        const char *name;
        const char *summary; /* one line for `xpool help`; NULL: hidden */
        int (*run)(int argc, char **argv);
        /* NULL run: the executable beside ours that runs the command (dispatch.c) */
        const char *exe;
};

/* Every command, as `xpool help` lists them (commands.c). */
extern const struct xp_cli_command xp_cli_commands[];
/* The functions of the commands xp_cli_commands hands to xpool-full (commands_full.c). */
extern const struct xp_cli_command xp_cli_full_commands[];

/*
 * Runs the command argv[1] from the first of tables (NULL-terminated) that has it: its function,
 * or else its executable beside ours (xp_cli_exec_beside()). Handles no command, --help, -h and
 * --version as `xpool` always has. Returns the exit status.
 */
int xp_cli_dispatch(const struct xp_cli_command *const *tables, int argc, char **argv);

/*
 * Replaces this process with the executable exe found beside our own (/proc/self/exe), with
 * argv (argv[0] replaced by its path). Returns only on failure: XP_EXIT_FAILURE after saying on
 * stderr which executable could not be run and why.
 */
int xp_cli_exec_beside(const char *exe, char **argv);

/* Exit codes: 0 success, 1 the operation failed, 2 bad usage. */
#define XP_EXIT_FAILURE 1
#define XP_EXIT_USAGE   2

int xp_cmd_version(int argc, char **argv);
int xp_cmd_validate(int argc, char **argv);
int xp_cmd_convert(int argc, char **argv);
int xp_cmd_devices(int argc, char **argv);
int xp_cmd_server(int argc, char **argv);
int xp_cmd_token(int argc, char **argv);
int xp_cmd_store(int argc, char **argv);
/* xpool store rotate-key (cmd_store_rotate.c): an exit status. */
int xp_cli_store_rotate_key(const char *dir, const char *db);
int xp_cmd_image(int argc, char **argv);
int xp_cmd_help(int argc, char **argv);
int xp_cmd_apply(int argc, char **argv);
int xp_cmd_get(int argc, char **argv);
int xp_cmd_describe(int argc, char **argv);
int xp_cmd_delete(int argc, char **argv);
int xp_cmd_logs(int argc, char **argv);
int xp_cmd_top(int argc, char **argv);
int xp_cmd_why(int argc, char **argv);
int xp_cmd_run(int argc, char **argv);
int xp_cmd_agent(int argc, char **argv);
int xp_cmd_up(int argc, char **argv);
int xp_cmd_device_plugin(int argc, char **argv);
/* The device plugin in this process (xp_cmd_device_plugin runs the lean executable instead when
 * it is beside ours; src/plugin/main.c calls this). */
int xp_device_plugin_main(int argc, char **argv);
int xp_cmd_extender(int argc, char **argv);
int xp_cmd_sim(int argc, char **argv);
int xp_cmd_inventory(int argc, char **argv);

/*
 * Takes one option of a subcommand's own (a code of its shortopts or options other than -h) with
 * its argument: 0 to go on, or the exit status to stop with after saying why.
 */
typedef int xp_cli_option_fn(int c, const char *arg, void *userdata);

/*
 * The option loop of a subcommand: getopt_long over argv from its first argument with shortopts
 * and options, -h/--help printing usage to stdout, an unknown option (or a missing argument)
 * printing it to stderr, and every other code handed to fn (NULL when the subcommand has none of
 * its own). Returns 0 when the options are over (optind at the first operand), -1 after --help
 * (exit 0), XP_EXIT_USAGE after an unknown option, or fn's exit status.
 */
int xp_cli_getopt(int argc,
                  char **argv,
                  const char *shortopts,
                  const struct option *options,
                  const char *usage,
                  xp_cli_option_fn *fn,
                  void *userdata);

/*
 * The one pod a command such as `xpool logs POD` or `xpool why POD` names, after its options
 * (argv[optind]): its name, kubectl's pod/NAME, pods/NAME and po/NAME taken too. NULL after
 * saying on stderr that none or more than one was named ("xpool CMD: name the pod: xpool CMD
 * POD") and printing usage.
 */
const char *xp_cli_pod_arg(int argc, char **argv, const char *cmd, const char *usage);

/*
 * The data directory a command works on (caller frees): given (--data-dir) when not NULL, else
 * the default root (xp_datadir_default()). NULL after saying why on stderr, prefixed with cmd.
 */
char *xp_cli_data_dir(const char *cmd, const char *given);

/*
 * Readies the data directory of a server (`xpool server`, `xpool up`): refuses root's state left
 * in its former default when dir is the default (given false), creates dir (0700) when missing,
 * and logs a warning when dir or its pki/ is open to others. 0, or XP_EXIT_FAILURE after saying
 * why on stderr.
 */
int xp_cli_prepare_data_dir(const char *cmd, const char *dir, bool given);

/*
 * Says on stderr why a server in dir did not start (r and err from xp_server_new()); for a
 * damaged store (-EUCLEAN) also how to see the damage and recover. Returns XP_EXIT_FAILURE.
 */
int xp_cli_start_failed(const char *cmd, const char *dir, int r, const struct xp_error *err);

/*
 * Splits HOST:PORT (or [V6]:PORT) into host and port, in place: -EINVAL when it is not one. With
 * host_optional, ":PORT" is taken too, with *ret_host NULL.
 */
int xp_cli_parse_listen(char *text, bool host_optional, const char **ret_host, uint16_t *ret_port);

/*
 * The value of a duration flag (xp_duration_parse(): "500ms", "10s", "1m30s", "5"), from 1 ms
 * to max_ms: 0 with *ret, or XP_EXIT_USAGE after saying why on stderr, as
 * "xpool agent: --heartbeat: duration '5x': unknown unit at 'x' (ms, s, m or h)".
 */
int xp_cli_parse_duration(
    const char *cmd, const char *flag, const char *arg, int64_t max_ms, int64_t *ret);

/*
 * --terminated-pod-gc-threshold N of `xpool server` and `xpool up`: 0 with *ret (N, or -1 for
 * 0, no collection; see xp_server_options), or XP_EXIT_USAGE after saying why on stderr.
 */
int xp_cli_parse_pod_gc_threshold(const char *cmd, const char *arg, int64_t *ret);

#include <signal.h>

/* Blocks SIGINT and SIGTERM (call before starting threads) and ignores SIGPIPE. */
void xp_cli_block_stop_signals(sigset_t *mask);
/* Waits for one of the signals xp_cli_block_stop_signals() blocked and returns it. */
int xp_cli_wait_stop(const sigset_t *mask);

#include <stdbool.h>
#include <stddef.h>

#include "xpool/manifest.h"

/* What `-f FILE... [--strict]` commands share. */
struct xp_cli_manifest_args {
        const char **files; /* borrowed from argv */
        size_t n_files;
        bool strict;
        const char *output; /* -o, NULL when not given */
};

/*
 * Parses `-f/--filename FILE` (repeatable), `--strict` and, when allow_output, `-o FORMAT`.
 * Prints usage (with usage_text) and returns XP_EXIT_USAGE on bad usage, 0 to go on, and -1
 * after --help (exit 0).
 */
int xp_cli_parse_manifest_args(int argc,
                               char **argv,
                               const char *usage_text,
                               bool allow_output,
                               struct xp_cli_manifest_args *ret);

/* Loads one file, printing the error to stderr on failure. */
int xp_cli_load_manifest(const char *file, bool strict, struct xp_manifest *ret);

#include <jansson.h>

struct xp_client;

/*
 * The objects of manifests given with -f (files, directories of *.yaml, *.yml and *.json in name
 * order, '-' for standard input) as JSON the API takes, namespaced ones with metadata.namespace
 * set from the client's namespace when they name none. Everything is loaded and checked before
 * anything is returned. Prints what is wrong (file:line:column, or a namespace that contradicts
 * -n) to stderr and returns -errno; on success *ret is a new JSON array.
 */
int xp_cli_load_objects(const char *const *files,
                        size_t n_files,
                        bool strict,
                        const struct xp_client *client,
                        json_t **ret);

/* ---- the pod network options of `xpool agent` and `xpool up` (podnet_args.c) ---------------- */

struct xp_agent_options;

enum {
        XP_CLI_OPT_POD_NETWORK = 0x300,
        XP_CLI_OPT_CNI_CONF_DIR,
        XP_CLI_OPT_CNI_BIN_DIR,
        XP_CLI_OPT_NETNS_DIR,
        XP_CLI_OPT_POD_CIDR,
        XP_CLI_OPT_IPC_DIR,
        XP_CLI_OPT_API_SERVICE_ADDRESS,
};

#define XP_CLI_PODNET_LONG_OPTIONS                                                                 \
        {"pod-network", required_argument, NULL, XP_CLI_OPT_POD_NETWORK},                          \
            {"cni-conf-dir", required_argument, NULL, XP_CLI_OPT_CNI_CONF_DIR},                    \
            {"cni-bin-dir", required_argument, NULL, XP_CLI_OPT_CNI_BIN_DIR},                      \
            {"netns-dir", required_argument, NULL, XP_CLI_OPT_NETNS_DIR},                          \
            {"ipc-dir", required_argument, NULL, XP_CLI_OPT_IPC_DIR},                              \
            {"api-service-address", required_argument, NULL, XP_CLI_OPT_API_SERVICE_ADDRESS},      \
        {                                                                                          \
                "pod-cidr", required_argument, NULL, XP_CLI_OPT_POD_CIDR                           \
        }

#define XP_CLI_PODNET_USAGE                                                                        \
        "      --pod-network MODE   cni (default): each pod gets a network namespace of its\n"     \
        "                           own from the CNI plugins; host: every pod runs on the\n"       \
        "                           node's network (docs/networking.md)\n"                         \
        "      --cni-conf-dir DIR   the CNI network configuration (default /etc/cni/net.d; none\n" \
        "                           there: the built-in bridge network)\n"                         \
        "      --cni-bin-dir DIRS   the CNI plugins, ':'-separated (default\n"                     \
        "                           /usr/lib/cni:/opt/cni/bin)\n"                                  \
        "      --netns-dir DIR      where the pods' network namespaces are mounted (default\n"     \
        "                           /run/xpool/agent-<key>/netns, the agent's own)\n"              \
        "      --ipc-dir DIR        where the pods' IPC namespaces are mounted (default\n"         \
        "                           /run/xpool/agent-<key>/ipc, the agent's own)\n"                \
        "      --pod-cidr CIDR      the built-in network's pod addresses (default 10.87.0.0/16)\n" \
        "      --api-service-address ADDR:PORT\n"                                                  \
        "                           the pods' address of the API server, put on the node's lo\n"   \
        "                           and forwarded to the server (default 10.96.0.1:443; none:\n"   \
        "                           the agent's own address of the server)\n"

/*
 * Takes one of the options above into o (strings borrowed from arg): 0, or XP_EXIT_USAGE after
 * saying on stderr (prefixed with cmd) what is wrong with it.
 */
int xp_cli_podnet_option(const char *cmd, int c, const char *arg, struct xp_agent_options *o);
