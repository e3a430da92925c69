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
};

extern const struct xp_cli_command xp_cli_commands[];

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
int xp_cmd_help(int argc, char **argv);
int xp_cmd_apply(int argc, char **argv);
int xp_cmd_get(int argc, char **argv);
int xp_cmd_describe(int argc, char **argv);
int xp_cmd_delete(int argc, char **argv);
int xp_cmd_logs(int argc, char **argv);
int xp_cmd_run(int argc, char **argv);
int xp_cmd_agent(int argc, char **argv);
int xp_cmd_up(int argc, char **argv);
int xp_cmd_device_plugin(int argc, char **argv);
/* The device plugin in this process (xp_cmd_device_plugin runs the lean executable instead when
 * it is beside ours; src/plugin/main.c calls this). */
int xp_device_plugin_main(int argc, char **argv);

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
