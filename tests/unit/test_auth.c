/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "server/auth.h"
#include "xpool/logsign.h"
#include "xpool/macro.h"

static int setup(void **state)
{
        return tmpdir_setup(state, "auth", "tokens");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static void write_text(const char *path, const char *text)
{
        FILE *file = fopen(path, "we");

        assert_non_null(file);
        assert_int_equal(fputs(text, file) >= 0, 1);
        assert_int_equal(fclose(file), 0);
}

static size_t count_lines(const char *path)
{
        FILE *file = fopen(path, "re");
        size_t n = 0;
        int c;

        assert_non_null(file);
        while ((c = fgetc(file)) != EOF)
                n += c == '\n';
        fclose(file);
        return n;
}

/* Past the one-second reload interval. */
static void wait_reload(void)
{
        struct timespec ts = {.tv_sec = 1, .tv_nsec = 100 * 1000 * 1000};

        nanosleep(&ts, NULL);
}

static int authenticate(struct auth *auth, const char *token, struct auth_identity *ret)
{
        char header[256];

        snprintf(header, sizeof(header), "Bearer %s", token);
        return auth_authenticate(auth, header, ret, NULL);
}

static void open_bootstraps_admin(void **state)
{
        struct tmpdir *f = *state;
        _cleanup_(auth_freep) struct auth *auth = NULL, *again = NULL;
        _cleanup_free_ char *admin = NULL;
        char *none = (char *)"unchanged"; /* must become NULL */
        struct auth_identity who = {0};
        struct xp_error err = {0};
        struct stat st;
        mode_t old = umask(0);

        assert_int_equal(auth_open(f->dir, &auth, &admin, &err), 0);
        umask(old);
        assert_non_null(admin);
        assert_int_equal(strlen(admin), 4 + 12 + 1 + 64);
        assert_memory_equal(admin, "xpa_", 4);
        assert_int_equal(admin[16], '.');
        assert_int_equal(stat(f->path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(count_lines(f->path), 1);

        assert_int_equal(authenticate(auth, admin, &who), 0);
        assert_int_equal(who.role, XP_TOKEN_ADMIN);
        assert_string_equal(who.subject, "admin");
        assert_memory_equal(who.token_id, admin + 4, 12);
        assert_int_equal(strlen(who.token_id), 12);

        /* the file holds the hash, never the token or its secret */
        {
                char text[512] = {0};
                FILE *file = fopen(f->path, "re");

                assert_non_null(file);
                assert_true(fread(text, 1, sizeof(text) - 1, file) > 0);
                fclose(file);
                assert_null(strstr(text, admin + 17));
                assert_non_null(strstr(text, " admin admin "));
        }

        /* an existing file is opened as it is: no second admin */
        assert_int_equal(auth_open(f->dir, &again, &none, &err), 0);
        assert_null(none);
        assert_int_equal(count_lines(f->path), 1);
        assert_int_equal(authenticate(again, admin, &who), 0);
}

static void create_revoke_reload(void **state)
{
        struct tmpdir *f = *state;
        _cleanup_(auth_freep) struct auth *auth = NULL;
        _cleanup_free_ char *admin = NULL, *node = NULL, *node_id = NULL, *reader = NULL,
                            *reader_id = NULL;
        _cleanup_free_ struct xp_token_info *list = NULL;
        struct auth_identity who = {0};
        struct xp_error err = {0};
        size_t n = 0;

        assert_int_equal(auth_open(f->dir, &auth, &admin, &err), 0);
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_NODE, "n1", &node, &node_id, &err), 0);
        assert_memory_equal(node, "xpn_", 4);
        assert_int_equal(
            xp_token_create(f->dir, XP_TOKEN_READER, "ci@example", &reader, &reader_id, &err), 0);
        assert_memory_equal(reader, "xpr_", 4);
        assert_string_not_equal(node_id, reader_id);

        wait_reload();
        assert_int_equal(authenticate(auth, node, &who), 0);
        assert_int_equal(who.role, XP_TOKEN_NODE);
        assert_string_equal(who.subject, "n1");
        assert_string_equal(who.token_id, node_id);
        assert_int_equal(authenticate(auth, reader, &who), 0);
        assert_int_equal(who.role, XP_TOKEN_READER);
        assert_string_equal(who.subject, "ci@example");

        assert_int_equal(xp_token_list(f->dir, &list, &n, &err), 0);
        assert_int_equal(n, 3);
        assert_string_equal(list[1].id, node_id);
        assert_int_equal(list[1].role, XP_TOKEN_NODE);
        assert_string_equal(list[1].subject, "n1");
        assert_int_equal(strlen(list[1].created), 20);

        assert_int_equal(xp_token_revoke(f->dir, node_id, &err), 0);
        assert_int_equal(count_lines(f->path), 2);
        assert_int_equal(xp_token_revoke(f->dir, node_id, &err), -ENOENT);
        assert_non_null(strstr(err.msg, node_id));
        assert_int_equal(xp_token_revoke(f->dir, "../etc", &err), -EINVAL);
        wait_reload();
        assert_int_equal(auth_authenticate(auth, "Bearer x", &who, &err), -EACCES);
        assert_int_equal(authenticate(auth, node, &who), -EACCES);
        assert_int_equal(authenticate(auth, reader, &who), 0);
        assert_int_equal(authenticate(auth, admin, &who), 0);

        /* bad subjects change nothing */
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_NODE, "N_1", &node, &node_id, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "N_1"));
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_READER, "a b", &node, &node_id, &err),
                         -EINVAL);
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_READER, "", &node, &node_id, &err),
                         -EINVAL);
        assert_int_equal(xp_token_create(f->dir, (enum xp_token_role)9, "x", &node, &node_id, &err),
                         -EINVAL);
        assert_int_equal(count_lines(f->path), 2);
}

static void node_key(void **state)
{
        struct tmpdir *f = *state;
        _cleanup_(auth_freep) struct auth *auth = NULL;
        _cleanup_free_ char *admin = NULL, *t1 = NULL, *id1 = NULL, *t2 = NULL, *id2 = NULL,
                            *t3 = NULL, *id3 = NULL;
        char id[XP_TOKEN_ID_LEN + 1] = "";
        uint8_t key[AUTH_KEY_LEN], want[AUTH_KEY_LEN];
        struct auth_identity who = {0};
        struct xp_error err = {0};
        char xid[XP_LOGSIGN_ID_MAX];

        assert_int_equal(auth_open(f->dir, &auth, &admin, &err), 0);
        assert_int_equal(auth_node_key(auth, "n1", id, key), -ENOENT);
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_NODE, "n1", &t1, &id1, &err), 0);
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_NODE, "n1", &t2, &id2, &err), 0);
        assert_int_equal(xp_token_create(f->dir, XP_TOKEN_NODE, "n2", &t3, &id3, &err), 0);
        wait_reload();
        /* Neither used yet: the newest. The key is what the agent computes from its token. */
        assert_int_equal(auth_node_key(auth, "n1", id, key), 0);
        assert_string_equal(id, id2);
        assert_int_equal(xp_logsign_key_from_token(t2, xid, want, &err), 0);
        assert_memory_equal(key, want, AUTH_KEY_LEN);
        /* The one that authenticated last wins, also across a reload of the file. */
        assert_int_equal(authenticate(auth, t1, &who), 0);
        assert_int_equal(auth_node_key(auth, "n1", id, key), 0);
        assert_string_equal(id, id1);
        assert_int_equal(authenticate(auth, t2, &who), 0);
        assert_int_equal(authenticate(auth, t1, &who), 0);
        assert_int_equal(xp_token_revoke(f->dir, id3, &err), 0);
        wait_reload();
        assert_int_equal(auth_node_key(auth, "n1", id, key), 0);
        assert_string_equal(id, id1);
        assert_int_equal(auth_node_key(auth, "n2", id, key), -ENOENT);
        /* Not a node's token: an admin named like a node does not count. */
        assert_int_equal(auth_node_key(auth, "admin", id, key), -ENOENT);
}

static void malformed_headers(void **state)
{
        struct tmpdir *f = *state;
        _cleanup_(auth_freep) struct auth *auth = NULL;
        _cleanup_free_ char *admin = NULL;
        struct auth_identity who = {0};
        struct xp_error err = {0};
        char header[2048], bad[128];
        static const struct {
                const char *header;
                const char *message;
        } cases[] = {
            {NULL, "no bearer token"},
            {"", "no bearer token"},
            {"Basic dXNlcjpwYXNz", "not `Bearer <token>`"},
            {"Bearer", "not `Bearer <token>`"},
            {"Bearerxpa_", "not `Bearer <token>`"},
            {"Bearer    ", "no token after"},
            {"Bearer a b", "text after the token"},
            {"Bearer abc", "malformed token"},
            {"Bearer xpa_0123456789ab.00", "malformed token"},
        };

        assert_int_equal(auth_open(f->dir, &auth, &admin, &err), 0);
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                xp_error_clear(&err);
                assert_int_equal(auth_authenticate(auth, cases[i].header, &who, &err), -EACCES);
                if (!strstr(err.msg, cases[i].message))
                        fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].message);
        }

        /* case-insensitive scheme, extra blanks around the token */
        snprintf(header, sizeof(header), "bearer \t%s  ", admin);
        assert_int_equal(auth_authenticate(auth, header, &who, &err), 0);

        /* the right id with a wrong secret, role letter or case is unknown */
        strcpy(bad, admin);
        bad[40] = bad[40] == '0' ? '1' : '0';
        assert_int_equal(authenticate(auth, bad, &who), -EACCES);
        strcpy(bad, admin);
        bad[2] = 'r';
        xp_error_clear(&err);
        snprintf(header, sizeof(header), "Bearer %s", bad);
        assert_int_equal(auth_authenticate(auth, header, &who, &err), -EACCES);
        assert_non_null(strstr(err.msg, "unknown or revoked token"));
        strcpy(bad, admin);
        bad[2] = 'x';
        assert_int_equal(authenticate(auth, bad, &who), -EACCES);
        strcpy(bad, admin);
        for (char *p = bad + 17; *p; p++)
                if (*p >= 'a' && *p <= 'f')
                        *p = (char)(*p - 'a' + 'A');
        assert_int_equal(authenticate(auth, bad, &who), -EACCES);

        /* an oversized header */
        memset(header, 'a', sizeof(header) - 1);
        header[sizeof(header) - 1] = '\0';
        memcpy(header, "Bearer ", 7);
        assert_int_equal(auth_authenticate(auth, header, &who, &err), -EACCES);
        assert_int_equal(authenticate(auth, admin, &who), 0);
}

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void corrupt_files(void **state)
{
        struct tmpdir *f = *state;
        static const struct {
                const char *line;
                const char *message;
        } cases[] = {
            {"abc " HASH " admin x\n", "expected 5 fields"},
            {"abc " HASH " admin x 2026-01-01T00:00:00Z more\n", "expected 5 fields"},
            {"ABC " HASH " admin x 2026-01-01T00:00:00Z\n", "id 'ABC'"},
            {"abc 0123 admin x 2026-01-01T00:00:00Z\n", "the hash is not 64"},
            {"abc " HASH " root x 2026-01-01T00:00:00Z\n", "role 'root'"},
            {"abc " HASH " node Not_A_Node 2026-01-01T00:00:00Z\n", "Not_A_Node"},
            {"abc " HASH " admin x yesterday\n", "created 'yesterday'"},
            {"ok " HASH " admin x 2026-01-01T00:00:00Z\n", "appears twice"},
            {"abc " HASH " admin x 2026-01-01T00:00:00Z", "no newline"},
        };

        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                _cleanup_(auth_freep) struct auth *auth = NULL;
                _cleanup_free_ char *admin = NULL, *token = NULL;
                struct xp_error err = {0};
                char text[512], where[128];

                snprintf(text,
                         sizeof(text),
                         "# tokens\nok " HASH " reader ci 2026-01-01T00:00:00Z\n\n%s",
                         cases[i].line);
                write_text(f->path, text);
                assert_int_equal(auth_open(f->dir, &auth, &admin, &err), -EINVAL);
                assert_null(auth);
                snprintf(where, sizeof(where), "%s:4: ", f->path);
                if (!strstr(err.msg, where) || !strstr(err.msg, cases[i].message))
                        fail_msg("case %zu: '%s' lacks '%s' or '%s'",
                                 i,
                                 err.msg,
                                 where,
                                 cases[i].message);
                /* writers refuse to touch a corrupt file */
                assert_int_equal(xp_token_create(f->dir, XP_TOKEN_ADMIN, "x", &token, NULL, &err),
                                 -EINVAL);
                assert_null(token);
                assert_int_equal(count_lines(f->path), 4 - (i == XP_ELEMENTSOF(cases) - 1));
        }
}

static void fails_closed_on_broken_reload(void **state)
{
        struct tmpdir *f = *state;
        struct xp_token_info *list = NULL;
        size_t n = 0;
        _cleanup_(auth_freep) struct auth *auth = NULL;
        _cleanup_free_ char *admin = NULL;
        struct auth_identity who = {0};
        struct xp_error err = {0};
        char text[512];
        FILE *file;
        size_t len;

        assert_int_equal(auth_open(f->dir, &auth, &admin, &err), 0);
        file = fopen(f->path, "re");
        assert_non_null(file);
        len = fread(text, 1, sizeof(text) - 1, file);
        fclose(file);
        text[len] = '\0';

        write_text(f->path, "garbage\n");
        wait_reload();
        assert_int_equal(
            auth_authenticate(
                auth,
                "Bearer xpa_000000000000.0000000000000000000000000000000000000000000000000000000000000000",
                &who,
                &err),
            -EACCES);
        {
                char header[256];

                snprintf(header, sizeof(header), "Bearer %s", admin);
                xp_error_clear(&err);
                assert_int_equal(auth_authenticate(auth, header, &who, &err), -EACCES);
                assert_non_null(strstr(err.msg, "tokens file is missing or damaged"));
                /* where it is broken is for the operator, not for any client */
                assert_null(strstr(err.msg, f->path));
                xp_error_clear(&err);
                assert_int_equal(xp_token_list(f->dir, &list, &n, &err), -EINVAL);
                assert_non_null(strstr(err.msg, ":1: expected 5 fields"));
        }
        unlink(f->path);
        wait_reload();
        assert_int_equal(authenticate(auth, admin, &who), -EACCES);

        write_text(f->path, text);
        wait_reload();
        assert_int_equal(authenticate(auth, admin, &who), 0);
        assert_int_equal(who.role, XP_TOKEN_ADMIN);
}

/* Writers in several processes at once: the lock keeps every token. */
static void concurrent_writers(void **state)
{
        struct tmpdir *f = *state;
        enum {
                PROCS = 4,
                EACH = 8
        };
        pid_t pids[PROCS];

        for (int p = 0; p < PROCS; p++) {
                pids[p] = fork();
                assert_true(pids[p] >= 0);
                if (pids[p] == 0) {
                        for (int i = 0; i < EACH; i++) {
                                char *token = NULL, subject[32];

                                snprintf(subject, sizeof(subject), "n%d-%d", p, i);
                                if (xp_token_create(
                                        f->dir, XP_TOKEN_NODE, subject, &token, NULL, NULL) < 0)
                                        _exit(1);
                                free(token);
                        }
                        _exit(0);
                }
        }
        for (int p = 0; p < PROCS; p++) {
                int status;

                assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
                assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        assert_int_equal(count_lines(f->path), PROCS * EACH);
}

enum {
        D = AUTH_DENY,
        A = AUTH_ALLOW,
        P = AUTH_ALLOW_IF_POD_ON_NODE
};

struct rule {
        enum auth_verb verb;
        const char *group, *resource, *subresource, *namespace, *name;
        int admin, reader, node; /* the decision for admin, reader and node "n1" */
};

static const struct rule rules[] = {
    /* reads */
    {AUTH_GET, "", "pods", NULL, "default", "p", A, A, A},
    {AUTH_LIST, "", "pods", NULL, NULL, NULL, A, A, A},
    {AUTH_WATCH, "", "pods", NULL, "default", NULL, A, A, A},
    {AUTH_GET, "", "nodes", NULL, NULL, "n2", A, A, A},
    {AUTH_LIST, "", "namespaces", NULL, NULL, NULL, A, A, A},
    {AUTH_GET, "coordination.k8s.io", "leases", NULL, "kube-node-lease", "n2", A, A, A},
    {AUTH_GET, "", "pods", "status", "default", "p", A, A, A},
    {AUTH_GET, "", "pods", "log", "default", "p", A, A, P},
    {AUTH_GET, "", NULL, NULL, NULL, NULL, A, A, A},
    /* non-resource writes */
    {AUTH_CREATE, "", NULL, NULL, NULL, NULL, A, D, D},
    /* nodes */
    {AUTH_CREATE, "", "nodes", NULL, NULL, "n1", A, D, A},
    {AUTH_UPDATE, "", "nodes", NULL, NULL, "n1", A, D, A},
    {AUTH_PATCH, "", "nodes", NULL, NULL, "n1", A, D, A},
    {AUTH_UPDATE, "", "nodes", "status", NULL, "n1", A, D, A},
    {AUTH_PATCH, "", "nodes", "status", NULL, "n1", A, D, A},
    {AUTH_DELETE, "", "nodes", NULL, NULL, "n1", A, D, D},
    {AUTH_CREATE, "", "nodes", NULL, NULL, "n2", A, D, D},
    {AUTH_UPDATE, "", "nodes", NULL, NULL, "n2", A, D, D},
    {AUTH_PATCH, "", "nodes", "status", NULL, "n2", A, D, D},
    {AUTH_CREATE, "", "nodes", NULL, NULL, NULL, A, D, D},
    {AUTH_UPDATE, "", "nodes", NULL, NULL, "n10", A, D, D},
    {AUTH_UPDATE, "", "nodes", NULL, NULL, "n", A, D, D},
    {AUTH_UPDATE, "example.com", "nodes", NULL, NULL, "n1", A, D, D},
    /* leases */
    {AUTH_CREATE, "coordination.k8s.io", "leases", NULL, "kube-node-lease", "n1", A, D, A},
    {AUTH_UPDATE, "coordination.k8s.io", "leases", NULL, "kube-node-lease", "n1", A, D, A},
    {AUTH_PATCH, "coordination.k8s.io", "leases", NULL, "kube-node-lease", "n1", A, D, A},
    {AUTH_DELETE, "coordination.k8s.io", "leases", NULL, "kube-node-lease", "n1", A, D, A},
    {AUTH_UPDATE, "coordination.k8s.io", "leases", NULL, "kube-node-lease", "n2", A, D, D},
    {AUTH_UPDATE, "coordination.k8s.io", "leases", NULL, "default", "n1", A, D, D},
    {AUTH_UPDATE, "", "leases", NULL, "kube-node-lease", "n1", A, D, D},
    {AUTH_DELETE, "coordination.k8s.io", "leases", NULL, "kube-node-lease", NULL, A, D, D},
    /* events */
    {AUTH_CREATE, "", "events", NULL, "default", NULL, A, D, A},
    {AUTH_UPDATE, "", "events", NULL, "default", "e", A, D, A},
    {AUTH_PATCH, "", "events", NULL, "default", "e", A, D, A},
    {AUTH_DELETE, "", "events", NULL, "default", "e", A, D, D},
    /* pods */
    {AUTH_UPDATE, "", "pods", "status", "default", "p", A, D, P},
    {AUTH_PATCH, "", "pods", "status", "default", "p", A, D, P},
    {AUTH_DELETE, "", "pods", NULL, "default", "p", A, D, P},
    {AUTH_DELETE, "", "pods", NULL, "default", NULL, A, D, D},
    {AUTH_CREATE, "", "pods", NULL, "default", "p", A, D, D},
    {AUTH_UPDATE, "", "pods", NULL, "default", "p", A, D, D},
    {AUTH_PATCH, "", "pods", NULL, "default", "p", A, D, D},
    {AUTH_CREATE, "", "pods", "binding", "default", "p", A, D, D},
    {AUTH_DELETE, "", "pods", "status", "default", "p", A, D, D},
    {AUTH_CREATE, "", "pods", "log", "default", "p", A, D, D},
    /* namespaces */
    {AUTH_CREATE, "", "namespaces", NULL, NULL, "ns", A, D, D},
    {AUTH_DELETE, "", "namespaces", NULL, NULL, "ns", A, D, D},
};

static void role_verb_table(void **state)
{
        static const char *const subjects[] = {"root", "ci", "n1"};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(rules); i++) {
                const struct rule *r = &rules[i];
                const struct auth_request req = {
                    .verb = r->verb,
                    .group = r->group,
                    .resource = r->resource,
                    .subresource = r->subresource,
                    .namespace = r->namespace,
                    .name = r->name,
                    .path = "/x",
                };
                const int want[] = {r->admin, r->reader, r->node};

                for (int role = XP_TOKEN_ADMIN; role <= XP_TOKEN_NODE; role++) {
                        struct auth_identity who = {.role = role};
                        char reason[512] = "unset";
                        enum auth_decision d;

                        strcpy(who.subject, subjects[role - 1]);
                        d = auth_authorize(&who, &req, reason, sizeof(reason));
                        if ((int)d != want[role - 1])
                                fail_msg("rule %zu (%s %s/%s %s): %s got %d, want %d",
                                         i,
                                         auth_verb_to_string(r->verb),
                                         r->resource ? r->resource : "-",
                                         r->subresource ? r->subresource : "-",
                                         r->name ? r->name : "-",
                                         xp_token_role_to_string(role),
                                         (int)d,
                                         want[role - 1]);
                        if (d == AUTH_DENY)
                                assert_non_null(strstr(reason, "forbidden: User \"system:"));
                        else
                                assert_string_equal(reason, "");
                }
        }
}

static void forbidden_messages(void **state)
{
        struct auth_identity node = {.role = XP_TOKEN_NODE, .subject = "n1"};
        struct auth_identity reader = {.role = XP_TOKEN_READER, .subject = "ci"};
        char reason[512];
        struct auth_request req = {
            .verb = AUTH_UPDATE,
            .group = "",
            .resource = "nodes",
            .name = "n2",
        };

        (void)state;
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(
            reason,
            "nodes \"n2\" is forbidden: User \"system:node:n1\" cannot update resource \"nodes\" in API group \"\" at the cluster scope");

        req = (struct auth_request){
            .verb = AUTH_CREATE,
            .group = "",
            .resource = "pods",
            .namespace = "default",
        };
        assert_int_equal(auth_authorize(&reader, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(
            reason,
            "pods is forbidden: User \"system:reader:ci\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\"");

        req = (struct auth_request){
            .verb = AUTH_PATCH,
            .group = "coordination.k8s.io",
            .resource = "leases",
            .namespace = "kube-node-lease",
            .name = "n2",
        };
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(
            reason,
            "leases.coordination.k8s.io \"n2\" is forbidden: User \"system:node:n1\" cannot patch resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\"");

        req = (struct auth_request){
            .verb = AUTH_CREATE,
            .group = "",
            .resource = "pods",
            .subresource = "binding",
            .namespace = "default",
            .name = "p",
        };
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(
            reason,
            "pods \"p\" is forbidden: User \"system:node:n1\" cannot create resource \"pods/binding\" in API group \"\" in the namespace \"default\"");

        req = (struct auth_request){.verb = AUTH_DELETE, .path = "/version"};
        assert_int_equal(auth_authorize(&reader, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(reason,
                            "forbidden: User \"system:reader:ci\" cannot delete path \"/version\"");

        /* a short buffer is cut, still terminated */
        assert_int_equal(auth_authorize(&reader, &req, reason, 10), AUTH_DENY);
        assert_string_equal(reason, "forbidden");
        /* an unknown verb is denied even to an admin */
        {
                struct auth_identity admin = {.role = XP_TOKEN_ADMIN, .subject = "a"};

                req.verb = (enum auth_verb)42;
                assert_int_equal(auth_authorize(&admin, &req, reason, sizeof(reason)), AUTH_DENY);
        }
}

/* Secrets are the admin's: a reader (as Kubernetes' view role) and a node read none. */
static void secrets_are_the_admins(void **state)
{
        struct auth_identity admin = {.role = XP_TOKEN_ADMIN, .subject = "ops"};
        struct auth_identity node = {.role = XP_TOKEN_NODE, .subject = "n1"};
        struct auth_identity reader = {.role = XP_TOKEN_READER, .subject = "ci"};
        struct auth_request req = {.verb = AUTH_GET,
                                   .group = "",
                                   .resource = "secrets",
                                   .namespace = "default",
                                   .name = "db"};
        char reason[512];

        (void)state;
        assert_int_equal(auth_authorize(&admin, &req, reason, sizeof(reason)), AUTH_ALLOW);
        assert_int_equal(auth_authorize(&reader, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(
            reason,
            "secrets \"db\" is forbidden: User \"system:reader:ci\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\"");
        /* a node: only what a pod bound to it names (the server looks), in the node
         * authorizer's words when none does */
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)),
                         AUTH_ALLOW_IF_REFERENCED);
        assert_string_equal(
            reason,
            "secrets \"db\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object");
        req.verb = AUTH_LIST;
        req.name = NULL;
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_DENY);
        assert_string_equal(
            reason,
            "secrets is forbidden: User \"system:node:n1\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": can only get individual resources of this type");
        assert_int_equal(auth_authorize(&reader, &req, reason, sizeof(reason)), AUTH_DENY);
        req.verb = AUTH_UPDATE;
        req.name = "db";
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_DENY);
        req.resource = "configmaps";
        req.verb = AUTH_LIST;
        req.name = NULL;
        assert_int_equal(auth_authorize(&reader, &req, reason, sizeof(reason)), AUTH_ALLOW);
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_DENY);
        req.verb = AUTH_GET;
        req.name = "app";
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)),
                         AUTH_ALLOW_IF_REFERENCED);
        assert_non_null(strstr(reason, "configmaps \"app\" is forbidden"));
        req.group = "example.com"; /* another group's configmaps are not the rule's */
        assert_int_equal(auth_authorize(&node, &req, reason, sizeof(reason)), AUTH_ALLOW);
}

static void strings(void **state)
{
        (void)state;
        assert_string_equal(xp_token_role_to_string(XP_TOKEN_ADMIN), "admin");
        assert_string_equal(xp_token_role_to_string(XP_TOKEN_READER), "reader");
        assert_string_equal(xp_token_role_to_string(XP_TOKEN_NODE), "node");
        assert_null(xp_token_role_to_string((enum xp_token_role)0));
        assert_null(xp_token_role_to_string((enum xp_token_role)4));
        assert_int_equal(xp_token_role_from_string("node"), XP_TOKEN_NODE);
        assert_int_equal(xp_token_role_from_string("Node"), -EINVAL);
        assert_int_equal(xp_token_role_from_string(NULL), -EINVAL);
        assert_string_equal(auth_verb_to_string(AUTH_WATCH), "watch");
        assert_null(auth_verb_to_string((enum auth_verb)0));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(open_bootstraps_admin, setup, teardown),
            cmocka_unit_test_setup_teardown(create_revoke_reload, setup, teardown),
            cmocka_unit_test_setup_teardown(malformed_headers, setup, teardown),
            cmocka_unit_test_setup_teardown(node_key, setup, teardown),
            cmocka_unit_test_setup_teardown(corrupt_files, setup, teardown),
            cmocka_unit_test_setup_teardown(fails_closed_on_broken_reload, setup, teardown),
            cmocka_unit_test_setup_teardown(concurrent_writers, setup, teardown),
            cmocka_unit_test(role_verb_table),
            cmocka_unit_test(forbidden_messages),
            cmocka_unit_test(secrets_are_the_admins),
            cmocka_unit_test(strings),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
