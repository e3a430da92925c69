/* SPDX-License-Identifier: Apache-2.0 */
/* xpool store check|recover|rotate-key: the server's store, examined and, when damaged, started
 * over; its Secrets' key replaced (cmd_store_rotate.c). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xpool/datadir.h"
#include "xpool/macro.h"
#include "xpool/store.h"

#define XP_EXIT_DAMAGED 3

static const char usage[] =
    "Usage: xpool store check [--data-dir DIR]\n"
    "       xpool store recover [--data-dir DIR]\n"
    "       xpool store rotate-key [--data-dir DIR]\n\n"
    "The server's store (DIR/state.db and its seal, DIR/state.db.seal). A server refuses to start\n"
    "on a damaged store and says so; these say what is there and start over. See docs/store.md.\n\n"
    "  check     examine the store without changing anything (PRAGMA integrity_check, the\n"
    "            version counter, the seal): exit 0 when intact (or when there is none yet),\n"
    "            3 when damaged, 1 when it cannot be examined\n"
    "  recover   start a damaged store over from what is intact: the objects that read back go\n"
    "            into a new database whose versions continue above every version ever handed\n"
    "            out, the damaged files are moved into DIR/state.db.damaged-TIMESTAMP/; prints\n"
    "            what was lost. Stop the server first. Does nothing to an intact store.\n"
    "  -d, --data-dir DIR  the server's data directory (default $XDG_STATE_HOME/xpool, else\n"
    "                      /var/lib/xpool as root, else ~/.local/state/xpool)\n";

static void print_lost(const struct xp_store_report *r)
{
        if (r->lost_from > 0)
                printf("lost:       versions %" PRIu64 "..%" PRIu64 " (%" PRIu64
                       " acknowledged writes)\n",
                       r->lost_from,
                       r->lost_to,
                       r->lost_to - r->lost_from + 1);
        else if (r->damaged)
                printf("lost:       not known from the files alone (`recover` counts what it "
                       "keeps)\n");
}

static void print_report(const char *path, const struct xp_store_report *r)
{
        printf("store:      %s\n", path);
        if (!r->exists) {
                printf("verdict:    %s\n", r->finding);
                return;
        }
        printf("database:   version %" PRIu64 ", %" PRIu64 " objects, integrity %s\n",
               r->version,
               r->objects,
               r->integrity);
        if (r->sealed)
                printf("seal:       store %016" PRIx64 ", last commit %" PRIu64
                       ", versions reserved up to %" PRIu64 "\n",
                       r->store_id,
                       r->sealed_version,
                       r->reserved);
        else
                printf("seal:       none\n");
        if (r->in_use)
                printf("in use:     a process has the store open: the figures may be moving\n");
        printf("verdict:    %s%s\n", r->damaged ? "DAMAGED: " : "intact: ", r->finding);
        if (r->bad_checksums)
                printf("checksums:  %" PRIu64 " failed: %s\n", r->bad_checksums, r->bad_rows);
        print_lost(r);
}

static int store_check(const char *dir, const char *path)
{
        struct xp_store_report report;
        struct xp_error err = {0};

        if (xp_store_check(path, &report, &err) < 0) {
                fprintf(stderr, "xpool store check: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        print_report(path, &report);
        if (!report.damaged)
                return 0;
        printf("to recover: xpool store recover --data-dir %s\n", dir);
        return XP_EXIT_DAMAGED;
}

static int store_recover(const char *path)
{
        struct xp_store_recovery rec;
        struct xp_error err = {0};

        if (xp_store_recover(path, &rec, &err) < 0) {
                fprintf(stderr, "xpool store recover: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        if (!rec.recovered) {
                printf("nothing to recover: %s\n", rec.before.finding);
                return 0;
        }
        printf("store:      %s\n", path);
        printf("was:        %s\n", rec.before.finding);
        print_lost(&rec.before);
        printf("kept:       %" PRIu64 " objects", rec.kept);
        if (rec.dropped)
                printf("; %" PRIu64 " rows did not read back as objects and were left out",
                       rec.dropped);
        printf("\n");
        if (rec.notes[0])
                printf("note:       %s\n", rec.notes);
        printf("aside:      the damaged files are in %s\n", rec.aside);
        printf("continues:  at version %" PRIu64 ", above every version handed out before: no "
               "resourceVersion is used twice; watchers get 410 Gone and list again\n",
               rec.next_version);
        return 0;
}

static int store_option(int c, const char *arg, void *userdata)
{
        const char **dir = userdata;

        if (c == 'd')
                *dir = arg;
        return 0;
}

int xp_cmd_store(int argc, char **argv)
{
        static const struct option options[] = {
            {"data-dir", required_argument, NULL, 'd'},
            {"help", no_argument, NULL, 'h'},
            {},
        };
        _cleanup_free_ char *dir = NULL, *path = NULL;
        const char *given = NULL, *verb;
        int r;

        r = xp_cli_getopt(argc, argv, "d:h", options, usage, store_option, &given);
        if (r != 0)
                return r < 0 ? 0 : r;
        if (optind + 1 != argc ||
            (strcmp(argv[optind], "check") != 0 && strcmp(argv[optind], "recover") != 0 &&
             strcmp(argv[optind], "rotate-key") != 0)) {
                fprintf(stderr, "xpool store: say check, recover or rotate-key\n\n%s", usage);
                return XP_EXIT_USAGE;
        }
        verb = argv[optind];
        dir = xp_cli_data_dir("xpool store", given);
        if (!dir)
                return XP_EXIT_FAILURE;
        path = xp_datadir_path(dir, XP_DATADIR_STORE);
        if (!path)
                return XP_EXIT_FAILURE;
        if (strcmp(verb, "rotate-key") == 0)
                return xp_cli_store_rotate_key(dir, path);
        return strcmp(verb, "check") == 0 ? store_check(dir, path) : store_recover(path);
}
