/* SPDX-License-Identifier: Apache-2.0 */
/* xpool token create|list|revoke: the API server's bearer tokens in DATA_DIR/tokens. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xpool/datadir.h"
#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/token.h"

static const char usage[] =
    "Usage: xpool token create (--admin | --reader | --node NAME) [--subject LABEL] [--data-dir DIR]\n"
    "       xpool token list [--data-dir DIR]\n"
    "       xpool token revoke ID [--data-dir DIR]\n\n"
    "Manages the bearer tokens of `xpool server` (DIR/tokens, which holds only their hashes).\n"
    "A running server picks up changes within a second. See docs/security.md.\n\n"
    "  create        make a token and print it once (it cannot be shown again)\n"
    "      --admin       may do everything\n"
    "      --reader      may get, list and watch everything\n"
    "      --node NAME   for the agent of node NAME: may update that node, its lease, its pods'\n"
    "                    status, and create events\n"
    "      --subject LABEL  who holds an admin or reader token (default: the role's name)\n"
    "  list          show every token's id, role, subject and creation time\n"
    "  revoke ID     delete the token with that id (as `list` shows it)\n"
    "  -d, --data-dir DIR  the server's data directory (default $XDG_STATE_HOME/xpool, else\n"
    "                      /var/lib/xpool as root, else ~/.local/state/xpool)\n";

static int token_create(const char *data_dir, enum xp_token_role role, const char *subject)
{
        _cleanup_free_ char *token = NULL, *id = NULL, *tokens_path = NULL;
        struct xp_error err = {0};
        bool first;
        int r;

        if (asprintf(&tokens_path, "%s/tokens", data_dir) < 0)
                return XP_EXIT_FAILURE;
        first = access(tokens_path, F_OK) < 0 && errno == ENOENT;
        r = xp_datadir_make(data_dir, &err);
        if (r < 0) {
                fprintf(stderr, "xpool token: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        r = xp_token_create(data_dir, role, subject, &token, &id, &err);
        if (r < 0) {
                fprintf(stderr, "xpool token create: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        /* The token alone on stdout, so that `xpool token create ... > FILE` stores just it. */
        printf("%s\n", token);
        fflush(stdout);
        fprintf(
            stderr,
            "Created %s token %s for %s in %s. It is shown only this once: store it now (mode 0600).\n",
            xp_token_role_to_string(role),
            id,
            subject,
            tokens_path);
        /* A token works only on the server whose data directory holds it, and a server's first
         * start writes the tokens file: without one, the usual slip is a server started with
         * --data-dir DIR (xpool up --data-dir DIR) and a token made in the default directory. */
        if (first)
                fprintf(stderr,
                        "Note: %s held no tokens yet: no server has started with this data "
                        "directory. For a server started with --data-dir DIR, run this again "
                        "with --data-dir DIR.\n",
                        data_dir);
        if (role == XP_TOKEN_NODE)
                fprintf(stderr, "Use it with: xpool agent --server URL --token-file FILE\n");
        else
                fprintf(
                    stderr,
                    "Use it with: kubectl --server URL --token TOKEN ..., or in a kubeconfig\n");
        fprintf(stderr, "Revoke it with: xpool token revoke %s --data-dir %s\n", id, data_dir);
        return 0;
}

static int token_list(const char *data_dir)
{
        _cleanup_free_ struct xp_token_info *tokens = NULL;
        struct xp_error err = {0};
        size_t n = 0;
        int r;

        r = xp_token_list(data_dir, &tokens, &n, &err);
        if (r == -ENOENT) {
                fprintf(
                    stderr,
                    "xpool token list: no tokens in '%s' yet: `xpool server` makes an admin token on its first start, or run `xpool token create --admin`\n",
                    data_dir);
                return XP_EXIT_FAILURE;
        }
        if (r < 0) {
                fprintf(stderr, "xpool token list: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        printf("%-14s %-7s %-30s %s\n", "ID", "ROLE", "SUBJECT", "CREATED");
        for (size_t i = 0; i < n; i++)
                printf("%-14s %-7s %-30s %s\n",
                       tokens[i].id,
                       xp_token_role_to_string(tokens[i].role),
                       tokens[i].subject,
                       tokens[i].created);
        return 0;
}

static int token_revoke(const char *data_dir, const char *id)
{
        struct xp_error err = {0};
        int r;

        r = xp_token_revoke(data_dir, id, &err);
        if (r < 0) {
                fprintf(stderr, "xpool token revoke: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        fprintf(stderr, "Revoked token %s; a running server refuses it within a second.\n", id);
        return 0;
}

struct token_args {
        int role, roles; /* the last of --admin, --reader, --node, and how many were given */
        const char *node, *subject, *data_dir; /* borrowed from argv */
};

static int token_option(int c, const char *arg, void *userdata)
{
        struct token_args *a = userdata;

        switch (c) {
        case 'a':
                a->role = XP_TOKEN_ADMIN;
                a->roles++;
                break;
        case 'r':
                a->role = XP_TOKEN_READER;
                a->roles++;
                break;
        case 'n':
                a->role = XP_TOKEN_NODE;
                a->node = arg;
                a->roles++;
                break;
        case 's':
                a->subject = arg;
                break;
        case 'd':
                a->data_dir = arg;
                break;
        }
        return 0;
}

int xp_cmd_token(int argc, char **argv)
{
        static const struct option options[] = {
            {"admin", no_argument, NULL, 'a'},
            {"reader", no_argument, NULL, 'r'},
            {"node", required_argument, NULL, 'n'},
            {"subject", required_argument, NULL, 's'},
            {"data-dir", required_argument, NULL, 'd'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        _cleanup_free_ char *default_dir = NULL;
        struct token_args a = {0};
        const char *data_dir, *subject, *verb;
        int r;

        r = xp_cli_getopt(argc, argv, "d:h", options, usage, token_option, &a);
        if (r != 0)
                return r < 0 ? 0 : r;
        data_dir = a.data_dir;
        subject = a.subject;
        if (optind >= argc) {
                fprintf(stderr, "xpool token: expected create, list or revoke\n\n%s", usage);
                return XP_EXIT_USAGE;
        }
        verb = argv[optind++];
        if (!data_dir) {
                default_dir = xp_cli_data_dir("xpool token", NULL);
                if (!default_dir)
                        return XP_EXIT_FAILURE;
                data_dir = default_dir;
        }
        if (strcmp(verb, "create") == 0) {
                if (optind < argc || a.roles != 1) {
                        fprintf(
                            stderr,
                            "xpool token create: give exactly one of --admin, --reader or --node NAME\n\n%s",
                            usage);
                        return XP_EXIT_USAGE;
                }
                if (a.role == XP_TOKEN_NODE && subject) {
                        fprintf(
                            stderr,
                            "xpool token create: a node token's subject is its node name: drop --subject\n");
                        return XP_EXIT_USAGE;
                }
                if (!subject)
                        subject =
                            a.role == XP_TOKEN_NODE ? a.node : xp_token_role_to_string(a.role);
                return token_create(data_dir, a.role, subject);
        }
        if (a.roles > 0 || subject) {
                fprintf(stderr,
                        "xpool token %s: --admin, --reader, --node and --subject go with create\n",
                        verb);
                return XP_EXIT_USAGE;
        }
        if (strcmp(verb, "list") == 0 && optind == argc)
                return token_list(data_dir);
        if (strcmp(verb, "revoke") == 0 && optind + 1 == argc)
                return token_revoke(data_dir, argv[optind]);
        fprintf(stderr, "xpool token: expected `create ...`, `list` or `revoke ID`\n\n%s", usage);
        return XP_EXIT_USAGE;
}
