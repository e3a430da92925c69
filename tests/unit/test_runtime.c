/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process runtime against real processes: this binary is its own shim (main() runs
 * xp_shim_main() for "__shim") and its own small container programs ("__alloc", "__open").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"
#include "xpool/contain.h"
#include "xpool/podnet.h"
#include "xpool/runtime.h"

struct fixture {
        struct tmpdir *tmp;
        char state[128], logs[128];
        struct xp_runtime *rt;
        char self[4096];
};

/* The container name: unique per test process, so runs in parallel (several checkouts on one
 * machine) never share a cgroup xpool/<uid>/<container>. */
static char cname[32];

static char *const default_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};

/* The test's directory, which its containers write (the rest of the node is read-only to them,
 * their /tmp their own), and the one of this program, which some of them run (a checkout below
 * /tmp would be hidden by their own /tmp); the runtime copies them. */
static const char *const *shared(const struct fixture *f)
{
        static const char *paths[3];
        static char program_dir[sizeof(f->self)];
        char *slash;

        snprintf(program_dir, sizeof(program_dir), "%s", f->self);
        slash = strrchr(program_dir, '/');
        if (slash && slash != program_dir)
                *slash = '\0';
        paths[0] = f->tmp->dir;
        paths[1] = slash && slash != program_dir ? program_dir : NULL;
        return paths;
}

static void open_rt(struct fixture *f, uint64_t max_bytes, unsigned max_files)
{
        struct xp_runtime_options o = {
            .state_dir = f->state,
            .log_dir = f->logs,
            .share_paths = shared(f),
            .log_max_bytes = max_bytes,
            .log_max_files = max_files,
        };
        struct xp_error err = {0};

        assert_int_equal(xp_runtime_open(&o, &f->rt, &err), 0);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        ssize_t n;

        assert_non_null(f);
        tmpdir_setup((void **)&f->tmp, "runtime", "data");
        snprintf(f->state, sizeof(f->state), "%s/containers", f->tmp->path);
        snprintf(f->logs, sizeof(f->logs), "%s/logs", f->tmp->path);
        n = readlink("/proc/self/exe", f->self, sizeof(f->self) - 1);
        assert_true(n > 0);
        f->self[n] = '\0';
        open_rt(f, 0, 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        struct xp_container_record *v = NULL;
        size_t n = 0;

        /* forget what the test left, so no cgroup of it stays behind */
        if (xp_runtime_list(f->rt, &v, &n, NULL) == 0)
                for (size_t i = 0; i < n; i++) {
                        if (!v[i].exited)
                                (void)xp_runtime_kill(
                                    f->rt, v[i].pod_uid, v[i].container, SIGKILL, NULL);
                        for (int k = 0;
                             k < 100 &&
                             xp_runtime_remove(f->rt, v[i].pod_uid, v[i].container, NULL) == -EBUSY;
                             k++)
                                usleep(20000);
                }
        xp_container_records_free(v, n);
        xp_runtime_free(f->rt);
        tmpdir_teardown((void **)&f->tmp);
        free(f);
        return 0;
}

static struct xp_container_launch launch_of(const char *uid, char *const *argv)
{
        return (struct xp_container_launch){
            .pod_uid = uid,
            .pod_namespace = "default",
            .pod_name = "pod",
            .container = cname,
            .argv = argv,
            .env = default_env,
        };
}

static void
start_ok(struct fixture *f, const struct xp_container_launch *l, struct xp_container_record *rec)
{
        struct xp_error err = {0};
        int r = xp_runtime_start(f->rt, l, rec, &err);

        if (r < 0)
                fail_msg("start %s: %d %s", l->pod_uid, r, xp_error_message(&err));
}

static char *slurp(const char *path)
{
        FILE *fp = fopen(path, "r");
        char *buf = NULL;
        size_t len = 0;
        ssize_t n;

        if (!fp)
                return NULL;
        n = getdelim(&buf, &len, '\0', fp);
        fclose(fp);
        if (n < 0) {
                free(buf);
                buf = strdup("");
        }
        return buf;
}

static void kill_ok(struct fixture *f, const char *uid, int sig)
{
        struct xp_error err = {0};
        int r = xp_runtime_kill(f->rt, uid, cname, sig, &err);

        if (r < 0) {
                char path[512];
                char *x;

                usleep(100000);
                snprintf(path, sizeof(path), "%s/%s/%s/exit.json", f->state, uid, cname);
                x = slurp(path);
                fail_msg("kill %s: %d %s (%s)", uid, r, xp_error_message(&err), x ? x : "-");
        }
}

/* Waits (up to 30 s, woken by the event fd) until the container has exited; fills *ret. */
static void wait_exit(struct fixture *f, const char *uid, struct xp_container_record *ret)
{
        for (int i = 0; i < 600; i++) {
                struct xp_container_record *v = NULL;
                struct pollfd p = {.fd = xp_runtime_event_fd(f->rt), .events = POLLIN};
                size_t n = 0;
                bool done = false;

                assert_int_equal(xp_runtime_list(f->rt, &v, &n, NULL), 0);
                for (size_t k = 0; k < n; k++)
                        if (strcmp(v[k].pod_uid, uid) == 0 && v[k].exited) {
                                *ret = v[k];
                                v[k] = (struct xp_container_record){0};
                                done = true;
                        }
                xp_container_records_free(v, n);
                if (done)
                        return;
                poll(&p, 1, 50);
        }
        fail_msg("container %s did not exit", uid);
}

static struct xp_container_record run_to_end(struct fixture *f, const struct xp_container_launch *l)
{
        struct xp_container_record rec = {0}, end = {0};

        start_ok(f, l, &rec);
        if (rec.start_failed)
                fail_msg("start of %s failed: %s", l->pod_uid, rec.message ? rec.message : "-");
        assert_true(rec.pid > 0);
        xp_container_record_clear(&rec);
        wait_exit(f, l->pod_uid, &end);
        return end;
}

static char *log_file(struct fixture *f, const char *uid, const char *leaf)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/default_pod_%s/%s/%s", f->logs, uid, cname, leaf);
        return slurp(path);
}

static bool log_exists(struct fixture *f, const char *uid, const char *leaf)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/default_pod_%s/%s/%s", f->logs, uid, cname, leaf);
        return access(path, F_OK) == 0;
}

/* Whether the attempt's live log is marked complete: its write bits off (xpool/logread.h). */
static bool log_complete(struct fixture *f, const char *uid, const char *attempt_log)
{
        char path[512];
        struct stat st;

        snprintf(path, sizeof(path), "%s/default_pod_%s/%s/%s", f->logs, uid, cname, attempt_log);
        return stat(path, &st) == 0 && !(st.st_mode & 0222);
}

/* Checks every line is `TIME STREAM F|P MSG` with a 30-character UTC time, and returns how
 * many lines equal "STREAM TAG MSG" after the time. */
static int count_lines(const char *text, const char *stream_tag_msg)
{
        int count = 0;

        for (const char *line = text; *line;) {
                const char *nl = strchr(line, '\n');
                size_t len = (size_t)(nl - line);

                assert_non_null(nl);
                assert_true(len > 31);
                assert_int_equal(line[4], '-');
                assert_int_equal(line[10], 'T');
                assert_int_equal(line[19], '.');
                assert_int_equal(line[29], 'Z');
                assert_int_equal(line[30], ' ');
                if (len - 31 == strlen(stream_tag_msg) &&
                    memcmp(line + 31, stream_tag_msg, len - 31) == 0)
                        count++;
                line = nl + 1;
        }
        return count;
}

static int count_newlines(const char *text)
{
        int n = 0;

        for (; *text; text++)
                n += *text == '\n';
        return n;
}

static void exit_codes(void **state)
{
        struct fixture *f = *state;
        char *const ok[] = {"true", NULL}, *const three[] = {"sh", "-c", "exit 3", NULL};
        struct xp_container_launch l = launch_of("uid-true", ok);
        struct xp_container_record r = run_to_end(f, &l);

        assert_true(r.exited);
        assert_int_equal(r.exit_code, 0);
        assert_int_equal(r.signal, 0);
        assert_false(r.oom_killed);
        assert_string_equal(r.pod_namespace, "default");
        assert_string_equal(r.container, cname);
        assert_true(r.finished_ns >= r.started_ns && r.started_ns > 0);
        xp_container_record_clear(&r);
        l = launch_of("uid-three", three);
        r = run_to_end(f, &l);
        assert_int_equal(r.exit_code, 3);
        xp_container_record_clear(&r);
}

/* The pod's one record once it is attempt's and exited (list_pod, 30 s at most). */
static struct xp_container_record listed_exit(struct fixture *f, const char *uid, unsigned attempt)
{
        for (int i = 0; i < 600; i++) {
                struct pollfd p = {.fd = xp_runtime_event_fd(f->rt), .events = POLLIN};
                struct xp_container_record *v = NULL, r;
                size_t n = 0;

                assert_int_equal(xp_runtime_list_pod(f->rt, uid, &v, &n, NULL), 0);
                assert_int_equal(n, 1);
                r = v[0];
                free(v);
                if (r.exited && r.attempt == attempt)
                        return r;
                xp_container_record_clear(&r);
                poll(&p, 1, 50);
        }
        fail_msg("attempt %u of %s did not exit", attempt, uid);
        return (struct xp_container_record){0};
}

/* A listing keeps what it read of the spec (speccache.c): the next attempt's spec, written over
 * it, is read anew, and a removal forgets it. */
static void listing_follows_new_attempts(void **state)
{
        struct fixture *f = *state;
        char *const ok[] = {"true", NULL}, *const three[] = {"sh", "-c", "exit 3", NULL};
        struct xp_container_launch l = launch_of("uid-again", ok);
        struct xp_container_record rec = {0}, r, *v = NULL;
        size_t n = 1;

        start_ok(f, &l, &rec);
        xp_container_record_clear(&rec);
        r = listed_exit(f, "uid-again", 0);
        assert_int_equal(r.exit_code, 0);
        xp_container_record_clear(&r);
        r = listed_exit(f, "uid-again", 0); /* the kept keys: the same record */
        assert_string_equal(r.pod_name, "pod");
        assert_string_equal(r.container, cname);
        xp_container_record_clear(&r);
        l = launch_of("uid-again", three);
        l.pod_name = "pod-renamed"; /* what only the new spec says */
        l.attempt = 1;
        start_ok(f, &l, &rec);
        xp_container_record_clear(&rec);
        r = listed_exit(f, "uid-again", 1);
        assert_int_equal(r.exit_code, 3);
        assert_string_equal(r.pod_name, "pod-renamed");
        xp_container_record_clear(&r);
        assert_int_equal(xp_runtime_remove(f->rt, "uid-again", cname, NULL), 0);
        assert_int_equal(xp_runtime_list_pod(f->rt, "uid-again", &v, &n, NULL), 0);
        assert_int_equal(n, 0);
        xp_container_records_free(v, n);
}

/* take_exits names each pod whose container exited, once; list_pod reads just that pod. */
/* The pods the event fd names (xp_runtime_take_exits()) once it is readable, 30 s at most. */
static size_t take_exits_soon(struct fixture *f, char ***uids)
{
        size_t n = 0;

        for (int i = 0; i < 600 && n == 0; i++) {
                struct pollfd p = {.fd = xp_runtime_event_fd(f->rt), .events = POLLIN};

                poll(&p, 1, 50);
                assert_int_equal(xp_runtime_take_exits(f->rt, uids, &n, NULL), 0);
                if (n == 0)
                        free(*uids);
        }
        return n;
}

static void exits_name_their_pods(void **state)
{
        struct fixture *f = *state;
        char *const ok[] = {"true", NULL}, *const slow[] = {"sleep", "30", NULL};
        struct xp_container_launch a = launch_of("uid-a", ok), b = launch_of("uid-b", slow);
        struct xp_container_record rec = {0}, *v = NULL;
        char **uids = NULL;
        size_t n = 0;

        start_ok(f, &b, &rec);
        xp_container_record_clear(&rec);
        start_ok(f, &a, &rec);
        xp_container_record_clear(&rec);
        /* uid-a's exit comes; uid-b runs on */
        n = take_exits_soon(f, &uids);
        assert_int_equal(n, 1);
        assert_string_equal(uids[0], "uid-a");
        free(uids[0]);
        free(uids);
        /* taken: the next call names nothing */
        assert_int_equal(xp_runtime_take_exits(f->rt, &uids, &n, NULL), 0);
        assert_int_equal(n, 0);
        free(uids);

        assert_int_equal(xp_runtime_list_pod(f->rt, "uid-a", &v, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_true(v[0].exited);
        assert_int_equal(v[0].exit_code, 0);
        xp_container_records_free(v, n);
        assert_int_equal(xp_runtime_list_pod(f->rt, "uid-b", &v, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_false(v[0].exited);
        xp_container_records_free(v, n);
        assert_int_equal(xp_runtime_list_pod(f->rt, "uid-none", &v, &n, NULL), 0);
        assert_int_equal(n, 0);
        free(v);
        assert_int_equal(xp_runtime_list_pod(f->rt, "../x", &v, &n, NULL), -EINVAL);

        assert_int_equal(xp_runtime_kill(f->rt, "uid-b", cname, SIGKILL, NULL), 0);
        wait_exit(f, "uid-b", &rec);
        xp_container_record_clear(&rec);
}

static void cri_log_format(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {
            "sh",
            "-c",
            "echo out1; echo err1 >&2; echo; head -c 20000 /dev/zero | tr '\\0' x; echo; printf partial",
            NULL};
        struct xp_container_launch l = launch_of("uid-cri", argv);
        struct xp_container_record r = run_to_end(f, &l);
        _cleanup_free_ char *text = NULL, *p16k = NULL, *rest = NULL;

        assert_int_equal(r.exit_code, 0);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-cri", "0.log");
        assert_non_null(text);
        assert_int_equal(count_lines(text, "stdout F out1"), 1);
        assert_int_equal(count_lines(text, "stderr F err1"), 1);
        assert_int_equal(count_lines(text, "stdout F "), 1);
        assert_int_equal(count_lines(text, "stdout P partial"), 1);
        /* a line over 16 KiB: one P fragment of exactly 16384 bytes, then the F rest */
        p16k = malloc(16384 + 10);
        rest = malloc(20000 - 16384 + 10);
        strcpy(p16k, "stdout P ");
        memset(p16k + 9, 'x', 16384);
        p16k[9 + 16384] = '\0';
        strcpy(rest, "stdout F ");
        memset(rest + 9, 'x', 20000 - 16384);
        rest[9 + 20000 - 16384] = '\0';
        assert_int_equal(count_lines(text, p16k), 1);
        assert_int_equal(count_lines(text, rest), 1);
        assert_true(log_complete(f, "uid-cri", "0.log"));
        assert_false(log_exists(f, "uid-cri", "0.end")); /* no marker file of its own */
}

static void rotation(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {
            "sh", "-c", "i=0; while [ $i -lt 40 ]; do echo line-$i; i=$((i+1)); done", NULL};
        struct xp_container_launch l = launch_of("uid-rot", argv);
        struct xp_container_record r;
        _cleanup_free_ char *live = NULL, *one = NULL, *two = NULL;
        struct stat st;
        char path[512];

        xp_runtime_free(f->rt);
        open_rt(f, 200, 2); /* 4 lines of 45 bytes per file */
        l.attempt = 2;
        r = run_to_end(f, &l);
        assert_int_equal(r.exit_code, 0);
        xp_container_record_clear(&r);
        live = log_file(f, "uid-rot", "2.log");
        one = log_file(f, "uid-rot", "2.log.1");
        two = log_file(f, "uid-rot", "2.log.2");
        assert_non_null(live);
        assert_non_null(one);
        assert_non_null(two);
        assert_false(log_exists(f, "uid-rot", "2.log.3"));
        assert_true(log_complete(f, "uid-rot", "2.log"));
        assert_int_equal(count_lines(live, "stdout F line-39"), 1);
        assert_int_equal(count_lines(two, "stdout F line-0"), 0); /* rotated away */
        for (size_t i = 0; i < 3; i++) {
                static const char *const leaves[] = {"2.log", "2.log.1", "2.log.2"};

                snprintf(
                    path, sizeof(path), "%s/default_pod_uid-rot/%s/%s", f->logs, cname, leaves[i]);
                assert_int_equal(stat(path, &st), 0);
                assert_true(st.st_size > 0 && st.st_size <= 200);
        }
        /* 12 lines kept in all, the newest: line-28 .. line-39, oldest first in .log.2 */
        assert_int_equal(count_newlines(live) + count_newlines(one) + count_newlines(two), 12);
        assert_int_equal(count_lines(two, "stdout F line-28"), 1);
        assert_int_equal(count_lines(one, "stdout F line-32"), 1);
}

static void start_failure(void **state)
{
        struct fixture *f = *state;
        char *const missing[] = {"/nonexistent/prog", NULL}, *const nopath[] = {
                                                                 "no-such-command-xp", NULL};
        struct xp_container_launch l = launch_of("uid-fail", missing);
        struct xp_container_record r = {0};

        start_ok(f, &l, &r);
        assert_true(r.start_failed);
        assert_true(r.exited);
        assert_int_equal(r.exit_code, 128);
        assert_int_equal(r.pid, 0);
        assert_string_equal(r.message, "exec \"/nonexistent/prog\": No such file or directory");
        xp_container_record_clear(&r);
        assert_true(log_complete(f, "uid-fail", "0.log"));
        l = launch_of("uid-fail2", nopath);
        start_ok(f, &l, &r);
        assert_true(r.start_failed);
        assert_string_equal(r.message, "exec \"no-such-command-xp\": No such file or directory");
        xp_container_record_clear(&r);
}

static void env_and_dir(void **state)
{
        struct fixture *f = *state;
        char *const env[] = {"PATH=/usr/bin:/bin", "FOO=bar baz", NULL};
        char *const argv_env[] = {"env", NULL}, *const argv_pwd[] = {"pwd", NULL};
        struct xp_container_launch l = launch_of("uid-env", argv_env);
        struct xp_container_record r;
        _cleanup_free_ char *text = NULL, *text2 = NULL;
        char want[256];

        l.env = env;
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-env", "0.log");
        assert_int_equal(count_lines(text, "stdout F PATH=/usr/bin:/bin"), 1);
        assert_int_equal(count_lines(text, "stdout F FOO=bar baz"), 1);
        assert_int_equal(count_newlines(text), 2); /* nothing else */

        l = launch_of("uid-pwd", argv_pwd);
        l.working_dir = f->tmp->dir;
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text2 = log_file(f, "uid-pwd", "0.log");
        snprintf(want, sizeof(want), "stdout F %s", f->tmp->dir);
        assert_int_equal(count_lines(text2, want), 1);
}

static void run_as_user(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"sh", "-c", "id -u; id -g; id -G", NULL};
        struct xp_container_launch l = launch_of("uid-user", argv);
        struct xp_container_record r;
        _cleanup_free_ char *text = NULL;

        if (geteuid() != 0) {
                print_message("skipped: changing the user needs root\n");
                skip();
        }
        l.set_user = true;
        l.uid = 65534;
        l.gid = 65533;
        r = run_to_end(f, &l);
        assert_int_equal(r.exit_code, 0);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-user", "0.log");
        assert_int_equal(count_lines(text, "stdout F 65534"), 1);
        assert_int_equal(count_lines(text, "stdout F 65533"), 2); /* gid, and the only group */
}

static void no_new_privs(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"grep", "NoNewPrivs", "/proc/self/status", NULL};
        struct xp_container_launch l = launch_of("uid-nnp", argv);
        struct xp_container_record r = run_to_end(f, &l);
        _cleanup_free_ char *text = log_file(f, "uid-nnp", "0.log");

        assert_int_equal(r.exit_code, 0);
        xp_container_record_clear(&r);
        assert_int_equal(count_lines(text, "stdout F NoNewPrivs:\t1"), 1);
}

static void kill_term(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"sleep", "100", NULL};
        struct xp_container_launch l = launch_of("uid-term", argv);
        struct xp_container_record r = {0};

        start_ok(f, &l, &r);
        assert_false(r.exited);
        xp_container_record_clear(&r);
        kill_ok(f, "uid-term", SIGTERM);
        wait_exit(f, "uid-term", &r);
        assert_int_equal(r.signal, SIGTERM);
        assert_int_equal(r.exit_code, 143);
        xp_container_record_clear(&r);
        assert_int_equal(xp_runtime_kill(f->rt, "uid-term", cname, SIGTERM, NULL), -ESRCH);
}

/* Waits (up to 30 s) for path to exist. */
static bool exists_soon(const char *path)
{
        for (int i = 0; i < 3000; i++) {
                if (access(path, F_OK) == 0)
                        return true;
                usleep(10000);
        }
        return false;
}

/*
 * SIGTERM goes to the main process alone, as Kubernetes' runtimes send it to the container's
 * process 1: what its handler forks runs to its end (signalling every process of the cgroup again
 * and again until no new one came killed the `touch` of a shell's TERM trap, so a graceful
 * deletion lost the container's own clean-up), and its other processes are its to stop.
 */
static void term_to_main_only(void **state)
{
        struct fixture *f = *state;
        char cmd[1024], main_up[256], main_done[256], child_up[256], child_term[256];
        char *const argv[] = {"sh", "-c", cmd, NULL};
        struct xp_container_launch l = launch_of("uid-term-main", argv);
        struct xp_container_record r = {0};

        snprintf(main_up, sizeof(main_up), "%s/main.up", f->tmp->dir);
        snprintf(main_done, sizeof(main_done), "%s/main.done", f->tmp->dir);
        snprintf(child_up, sizeof(child_up), "%s/child.up", f->tmp->dir);
        snprintf(child_term, sizeof(child_term), "%s/child.term", f->tmp->dir);
        /* the child: a TERM trap of its own that forks nothing; a process that forks all the time
         * (a pass over the cgroup always finds a new pid); the main process: a trap that forks,
         * then exits 0 */
        snprintf(cmd,
                 sizeof(cmd),
                 "sh -c 'trap \": >%s\" TERM; touch %s; while :; do sleep 0.05; done' & "
                 "sh -c 'trap \"\" TERM; while :; do /bin/true; done' & "
                 "trap 'sleep 0.1; touch %s; exit 0' TERM; "
                 "until [ -e %s ]; do sleep 0.01; done; touch %s; "
                 "while :; do sleep 0.05; done",
                 child_term,
                 child_up,
                 main_done,
                 child_up,
                 main_up);
        start_ok(f, &l, &r);
        xp_container_record_clear(&r);
        assert_true(exists_soon(main_up));
        kill_ok(f, "uid-term-main", SIGTERM);
        wait_exit(f, "uid-term-main", &r);
        assert_int_equal(r.exit_code, 0);
        assert_int_equal(r.signal, 0);
        xp_container_record_clear(&r);
        assert_int_equal(access(main_done, F_OK), 0);
        /* the rest was SIGKILLed once the main process exited, never SIGTERMed */
        assert_int_equal(access(child_term, F_OK), -1);
}

/*
 * The host pid of the process whose command line is "sleep SECONDS", 0 when none: a container's
 * processes print the pids of their own pid namespace.
 */
static pid_t sleeper(const char *seconds)
{
        DIR *d = opendir("/proc");
        struct dirent *e;
        pid_t found = 0;

        assert_non_null(d);
        while (!found && (e = readdir(d))) {
                char path[300], buf[256] = "";
                FILE *fp;
                size_t n;

                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
                fp = fopen(path, "r");
                if (!fp)
                        continue;
                n = fread(buf, 1, sizeof(buf) - 1, fp);
                fclose(fp);
                if (n > 6 && strcmp(buf, "sleep") == 0 && strcmp(buf + 6, seconds) == 0)
                        found = (pid_t)strtol(e->d_name, NULL, 10);
        }
        closedir(d);
        return found;
}

/* A duration no other test (or run) sleeps for: "100.<our pid><n>". */
static const char *sleep_marker(char buf[static 32], int n)
{
        snprintf(buf, 32, "100.%d%d", (int)getpid(), n);
        return buf;
}

/* Whether pid ends (or is a zombie) within 30 s. */
static bool gone_soon(pid_t pid)
{
        for (int i = 0; i < 3000; i++) {
                char path[64], buf[512];
                FILE *fp;
                bool zombie = false;

                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                fp = fopen(path, "r");
                if (!fp)
                        return true;
                if (fgets(buf, sizeof(buf), fp) && strrchr(buf, ')'))
                        zombie = strrchr(buf, ')')[2] == 'Z';
                fclose(fp);
                if (zombie)
                        return true;
                usleep(10000);
        }
        return false;
}

/* Waits (up to 30 s) for "sleep seconds" to run: its host pid. */
static pid_t sleeper_soon(const char *seconds)
{
        pid_t pid = 0;

        for (int i = 0; i < 3000 && !(pid = sleeper(seconds)); i++)
                usleep(10000);
        if (!pid)
                fail_msg("no process sleep %s", seconds);
        return pid;
}

static void grandchildren(void **state)
{
        struct fixture *f = *state;
        char m1[32], m2[32], cmd1[96], cmd2[96];
        char *const leaves[] = {"sh", "-c", cmd1, NULL};
        char *const waits[] = {"sh", "-c", cmd2, NULL};
        struct xp_container_launch l = launch_of("uid-gc1", leaves);
        struct xp_container_record r;
        pid_t left;

        snprintf(cmd1, sizeof(cmd1), "sleep %s & sleep 0.3; exit 0", sleep_marker(m1, 1));
        snprintf(cmd2, sizeof(cmd2), "sleep %s & wait", sleep_marker(m2, 2));
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        for (int i = 0; i < 3000 && sleeper(m1); i++)
                usleep(10000);
        assert_int_equal(sleeper(m1), 0);

        l = launch_of("uid-gc2", waits);
        start_ok(f, &l, &r);
        left = sleeper_soon(m2);
        kill_ok(f, "uid-gc2", SIGKILL);
        assert_true(gone_soon(r.pid));
        xp_container_record_clear(&r);
        wait_exit(f, "uid-gc2", &r);
        assert_int_equal(r.signal, SIGKILL);
        xp_container_record_clear(&r);
        assert_true(gone_soon(left));
}

/* Lists until the event fd stays quiet: true when it does within a second (a bounded wait). */
static bool events_consumed(struct fixture *f, struct pollfd *p)
{
        for (int i = 0; i < 100; i++) {
                struct xp_container_record *v = NULL;
                size_t n = 0;

                if (poll(p, 1, 0) == 0)
                        return true;
                if (xp_runtime_list(f->rt, &v, &n, NULL) != 0)
                        return false;
                xp_container_records_free(v, n);
                usleep(10000);
        }
        return false;
}

static void readopt(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"sleep", "100", NULL};
        struct xp_container_launch l = launch_of("uid-adopt", argv);
        struct xp_container_record r = {0}, *v = NULL;
        struct pollfd p;
        size_t n = 0;
        pid_t pid;

        start_ok(f, &l, &r);
        pid = r.pid;
        xp_container_record_clear(&r);
        assert_int_equal(xp_runtime_start(f->rt, &l, &r, NULL), -EEXIST);
        xp_runtime_free(f->rt);
        open_rt(f, 0, 0);
        assert_int_equal(xp_runtime_list(f->rt, &v, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(v[0].pod_uid, "uid-adopt");
        assert_false(v[0].exited);
        assert_int_equal(v[0].pid, pid);
        xp_container_records_free(v, n);
        assert_int_equal(xp_runtime_remove(f->rt, "uid-adopt", cname, NULL), -EBUSY);
        kill_ok(f, "uid-adopt", SIGKILL);
        p = (struct pollfd){.fd = xp_runtime_event_fd(f->rt), .events = POLLIN};
        assert_int_equal(poll(&p, 1, 10000), 1);
        assert_int_equal(xp_runtime_list(f->rt, &v, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_true(v[0].exited);
        assert_int_equal(v[0].signal, SIGKILL);
        assert_int_equal(v[0].exit_code, 137);
        xp_container_records_free(v, n);
        /* A list consumes the events: the exit's, and the shim's own end (its pidfd), which may
         * come just after the exit was announced, so a second list may be needed for it. */
        assert_true(events_consumed(f, &p));
        assert_int_equal(xp_runtime_remove(f->rt, "uid-adopt", cname, NULL), 0);
        assert_int_equal(xp_runtime_list(f->rt, &v, &n, NULL), 0);
        assert_int_equal(n, 0);
        free(v);
        assert_int_equal(xp_runtime_remove(f->rt, "uid-adopt", cname, NULL), -ENOENT);
        assert_true(log_complete(f, "uid-adopt", "0.log")); /* logs stay */
        assert_int_equal(xp_runtime_remove_logs(f->rt, "default", "pod", "uid-adopt", NULL), 0);
        assert_false(log_exists(f, "uid-adopt", "0.log"));
}

/* A machine without cgroups: the container's process group stands in for its cgroup. */
static void without_cgroups(void **state)
{
        struct fixture *f = *state;
        char marker[32], cmd[96];
        char *const waits[] = {"sh", "-c", cmd, NULL};
        struct xp_container_launch l = launch_of("uid-nocg", waits);
        struct xp_cgroup_limits lim = {.memory_bytes = 16 << 20};
        struct xp_runtime_options o = {.state_dir = f->state,
                                       .log_dir = f->logs,
                                       .cgroup_root = f->tmp->dir,
                                       .share_paths = shared(f)};
        struct xp_container_record r = {0};
        pid_t left;

        snprintf(cmd, sizeof(cmd), "sleep %s & wait", sleep_marker(marker, 3));
        xp_runtime_free(f->rt);
        assert_int_equal(xp_runtime_open(&o, &f->rt, NULL), 0);
        assert_int_equal(xp_runtime_cgroup_mode(f->rt), XP_CGROUP_NONE);
        assert_false(xp_runtime_isolation(f->rt) & XP_ISOLATION_CGROUPS);
        assert_non_null(xp_runtime_warning(f->rt));
        assert_non_null(strstr(xp_runtime_warning(f->rt), "without limits"));
        l.limits = &lim; /* ignored, as the warning says */
        start_ok(f, &l, &r);
        left = sleeper_soon(marker);
        kill_ok(f, "uid-nocg", SIGTERM);
        assert_true(gone_soon(r.pid));
        xp_container_record_clear(&r);
        wait_exit(f, "uid-nocg", &r);
        assert_int_equal(r.signal, SIGTERM);
        assert_false(r.oom_killed);
        xp_container_record_clear(&r);
        assert_true(gone_soon(left));
}

static void lost_shim(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"sleep", "100", NULL};
        struct xp_container_launch l = launch_of("uid-lost", argv);
        struct xp_container_record r = {0};
        char path[512];
        _cleanup_free_ char *running = NULL;
        char **uids = NULL;
        const char *p;
        size_t n;
        pid_t shim;

        start_ok(f, &l, &r);
        xp_container_record_clear(&r);
        snprintf(path, sizeof(path), "%s/uid-lost/%s/running.json", f->state, cname);
        running = slurp(path);
        assert_non_null(running);
        p = strstr(running, "\"shim_pid\":");
        assert_non_null(p);
        shim = (pid_t)strtol(p + 11, NULL, 10);
        assert_int_equal(kill(shim, SIGKILL), 0);
        assert_true(gone_soon(shim));
        /* a shim's death is an event too (shimwatch.c): it names the pod, which announced none */
        n = take_exits_soon(f, &uids);
        assert_int_equal(n, 1);
        assert_string_equal(uids[0], "uid-lost");
        free(uids[0]);
        free(uids);
        wait_exit(f, "uid-lost", &r);
        assert_non_null(r.message);
        assert_non_null(strstr(r.message, "died without recording the exit"));
        assert_true(gone_soon(r.pid));
        xp_container_record_clear(&r);
        assert_int_equal(xp_runtime_remove(f->rt, "uid-lost", cname, NULL), 0);
        if (xp_runtime_cgroup_mode(f->rt) == XP_CGROUP_V1) {
                snprintf(path, sizeof(path), "/sys/fs/cgroup/pids/xpool/uid-lost/%s", cname);
                assert_int_equal(access(path, F_OK), -1);
        }
}

static void bad_launch(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"true", NULL}, *const empty[] = {NULL};
        struct xp_container_launch l = launch_of("../x", argv);
        struct xp_container_record r = {0};
        struct xp_error err = {0};

        assert_int_equal(xp_runtime_start(f->rt, &l, &r, &err), -EINVAL);
        l = launch_of("uid-bad", empty);
        assert_int_equal(xp_runtime_start(f->rt, &l, &r, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "argv"));
}

/* ---- with real cgroups ---- */

static bool have_cgroups(struct fixture *f)
{
        if (xp_runtime_cgroup_mode(f->rt) == XP_CGROUP_NONE) {
                const char *w = xp_runtime_warning(f->rt);

                print_message("skipped: %s\n", w ? w : "no cgroups");
                return false;
        }
        return true;
}

static void oom_killed(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {f->self, "__alloc", "64", NULL};
        struct xp_cgroup_limits lim = {.memory_bytes = 16 << 20};
        struct xp_container_launch l = launch_of("uid-oom", argv);
        struct xp_container_record r;

        if (!have_cgroups(f))
                skip();
        l.limits = &lim;
        r = run_to_end(f, &l);
        assert_true(r.oom_killed);
        assert_int_equal(r.signal, SIGKILL);
        xp_container_record_clear(&r);
}

/* A group's directory in the memory hierarchy (v1) or the unified one (v2). */
static void group_dir(const char *group, char *buf, size_t size)
{
        bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;

        snprintf(buf, size, "/sys/fs/cgroup/%s%s", v2 ? "" : "memory/", group);
}

/* Each runtime's pods' groups are below its own parent: the same for the same state directory
 * (an agent started again finds its groups), another for another (agents side by side never
 * reclaim each other's). A container's end takes its group and its pod's with it, and the empty
 * parent only once its runtime is gone (a running agent's next start finds it made); a parent
 * left empty otherwise goes with the runtime. */
static void cgroup_parent_per_state(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"true", NULL};
        struct xp_container_launch l = launch_of("uid-parent", argv);
        struct xp_runtime_options o;
        struct xp_container_record r;
        struct xp_runtime *other = NULL;
        char other_state[160], parent[64], group[128], dir[256];

        snprintf(parent, sizeof(parent), "%s", xp_runtime_cgroup_parent(f->rt));
        assert_int_equal(strncmp(parent, "xpool/agent-", 12), 0);
        assert_int_equal(strlen(parent), 12 + 16);
        xp_runtime_free(f->rt);
        open_rt(f, 0, 0);
        assert_string_equal(xp_runtime_cgroup_parent(f->rt), parent);
        snprintf(other_state, sizeof(other_state), "%s/other", f->tmp->path);
        o = (struct xp_runtime_options){
            .state_dir = other_state, .log_dir = f->logs, .share_paths = shared(f)};
        assert_int_equal(xp_runtime_open(&o, &other, NULL), 0);
        assert_string_not_equal(xp_runtime_cgroup_parent(other), parent);
        xp_runtime_free(other);
        if (!have_cgroups(f))
                skip();
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        snprintf(group, sizeof(group), "%s/uid-parent", parent);
        group_dir(group, dir, sizeof(dir));
        for (int i = 0; i < 3000 && access(dir, F_OK) == 0; i++)
                usleep(10 * 1000); /* the shim removes them after it reported the exit */
        assert_int_equal(access(dir, F_OK), -1);
        /* the last pod's end left the parent to the runtime that runs */
        group_dir(parent, dir, sizeof(dir));
        assert_int_equal(access(dir, F_OK), 0);
        assert_int_equal(xp_runtime_remove(f->rt, "uid-parent", cname, NULL), 0);
        /* the runtime takes it with it */
        xp_runtime_free(f->rt);
        f->rt = NULL;
        assert_int_equal(access(dir, F_OK), -1);
        open_rt(f, 0, 0);
}

/* A shim that outlives its runtime (a killed agent) removes the parent at its end, as before: no
 * group is left behind for good */
static void cgroup_parent_after_runtime(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"sleep", "100", NULL};
        struct xp_container_launch l = launch_of("uid-parent-late", argv);
        struct xp_container_record r = {0};
        char parent[64], dir[256];

        if (!have_cgroups(f))
                skip();
        snprintf(parent, sizeof(parent), "%s", xp_runtime_cgroup_parent(f->rt));
        start_ok(f, &l, &r);
        xp_runtime_free(f->rt);
        f->rt = NULL;
        group_dir(parent, dir, sizeof(dir));
        assert_int_equal(access(dir, F_OK), 0);
        assert_int_equal(kill(r.pid, SIGKILL), 0);
        for (int i = 0; i < 3000 && access(dir, F_OK) == 0; i++)
                usleep(10 * 1000); /* the shim removes them after it reported the exit */
        assert_int_equal(access(dir, F_OK), -1);
        xp_container_record_clear(&r);
        /* the shim records the exit after it removed the groups */
        open_rt(f, 0, 0);
        wait_exit(f, "uid-parent-late", &r);
        xp_container_record_clear(&r);
        assert_int_equal(xp_runtime_remove(f->rt, "uid-parent-late", cname, NULL), 0);
}

static void cpuset_applied(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {"grep", "Cpus_allowed_list", "/proc/self/status", NULL};
        struct xp_cgroup_limits lim = {.cpuset_cpus = "0"};
        struct xp_container_launch l = launch_of("uid-cpuset", argv);
        struct xp_container_record r;
        _cleanup_free_ char *text = NULL;

        if (!have_cgroups(f))
                skip();
        l.limits = &lim;
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-cpuset", "0.log");
        assert_int_equal(count_lines(text, "stdout F Cpus_allowed_list:\t0"), 1);
}

static void devices_restricted(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {f->self, "__open", "/dev/null", "/dev/zero", NULL};
        struct xp_cgroup_device null = {.type = 'c', .major = 1, .minor = 3, .access = "rwm"};
        struct xp_cgroup_limits lim = {.restrict_devices = true, .devices = &null, .n_devices = 1};
        struct xp_container_launch l = launch_of("uid-dev", argv);
        struct xp_container_record r;
        _cleanup_free_ char *text = NULL;

        if (!have_cgroups(f))
                skip();
        if (xp_runtime_cgroup_mode(f->rt) == XP_CGROUP_V2) {
                print_message("skipped: %s\n", xp_runtime_warning(f->rt));
                skip();
        }
        l.limits = &lim;
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-dev", "0.log");
        assert_int_equal(count_lines(text, "stdout F /dev/null: ok"), 1);
        assert_int_equal(count_lines(text, "stdout F /dev/zero: Operation not permitted"), 1);
}

static bool contained(struct fixture *f, unsigned need)
{
        if ((xp_runtime_isolation(f->rt) & need) == need)
                return true;
        print_message("skipped: %s\n", xp_runtime_warning(f->rt));
        return false;
}

/* The default containment: Docker's capabilities, no_new_privs, the seccomp filter, its own pid
 * namespace and /proc, the node's secrets hidden, the cgroup file system out of reach. */
static void default_containment(void **state)
{
        struct fixture *f = *state;
        char secret[300], script[1024];
        char *const argv[] = {"sh", "-c", script, NULL};
        const char *hide[] = {secret, NULL};
        struct xp_runtime_options o = {.state_dir = f->state,
                                       .log_dir = f->logs,
                                       .hide_paths = hide,
                                       .share_paths = shared(f)};
        struct xp_container_launch l = launch_of("uid-contain", argv);
        struct xp_container_record r;
        _cleanup_free_ char *text = NULL, *spec_text = NULL;
        char spec[512];
        FILE *fp;

        snprintf(secret, sizeof(secret), "%s/secret", f->tmp->path);
        fp = fopen(secret, "w");
        assert_non_null(fp);
        fputs("s3cr3t\n", fp);
        fclose(fp);
        xp_runtime_free(f->rt);
        assert_int_equal(xp_runtime_open(&o, &f->rt, NULL), 0);
        if (!contained(f,
                       XP_ISOLATION_NAMESPACES | XP_ISOLATION_CAPABILITIES | XP_ISOLATION_SECCOMP))
                skip();
        snprintf(
            script,
            sizeof(script),
            "grep -E '^(CapEff|CapBnd|CapInh|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; "
            "cat %s; ls %s | grep -q . && echo state visible; "
            "echo pid $$; grep -q __shim /proc/1/cmdline && echo init is the shim; "
            "echo others $(ls /proc | grep '^[0-9]' | awk '$1 > 20' | wc -l); "
            "ls /sys/fs/cgroup | wc -l; touch /sys/kernel/x || echo sys read-only; "
            "echo procsys $(awk '$5 == \"/proc/sys\" {split($6, o, \",\"); print o[1]}' "
            "/proc/self/mountinfo); "
            "touch /etc/.xpool-test || echo etc read-only; "
            "unshare -m true || echo no unshare; "
            "echo memfds $(ls -l /proc/self/fd | grep -c memfd:); "
            "grep -q . /proc/self/cgroup && ! grep -qv ':/$' /proc/self/cgroup && echo cgroupns root",
            secret,
            f->state);
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        /* the runtime compiled the filter (once), not the shim, and handed it over on an fd the
         * container does not keep; the spec holds no copy */
        snprintf(spec, sizeof(spec), "%s/uid-contain/%s/spec.json", f->state, cname);
        spec_text = slurp(spec);
        assert_non_null(spec_text);
        assert_non_null(strstr(spec_text, "\"filter_fd\":true"));
        assert_null(strstr(spec_text, "\"filter\":"));
        /* a process container makes no group where only an OCI runtime does: its shim is given
         * no such hierarchy to remove groups from */
        assert_null(strstr(spec_text, "\"cgroup_v1_others\""));
        text = log_file(f, "uid-contain", "0.log");
        assert_int_equal(count_lines(text, "stdout F CapEff:\t00000000a80425fb"), 1);
        assert_int_equal(count_lines(text, "stdout F CapBnd:\t00000000a80425fb"), 1);
        assert_int_equal(count_lines(text, "stdout F CapInh:\t0000000000000000"), 1);
        assert_int_equal(count_lines(text, "stdout F CapAmb:\t0000000000000000"), 1);
        assert_int_equal(count_lines(text, "stdout F NoNewPrivs:\t1"), 1);
        assert_int_equal(count_lines(text, "stdout F Seccomp:\t2"), 1);
        assert_int_equal(count_lines(text, "stdout F s3cr3t"), 0);
        assert_int_equal(count_lines(text, "stdout F state visible"), 0);
        /* the shell is pid 2, the shim the namespace's init; none of the node's processes */
        assert_int_equal(count_lines(text, "stdout F pid 2"), 1);
        assert_int_equal(count_lines(text, "stdout F init is the shim"), 1);
        assert_int_equal(count_lines(text, "stdout F others 0"), 1);
        assert_int_equal(count_lines(text, "stdout F 0"), 1); /* an empty /sys/fs/cgroup (v1) */
        assert_int_equal(count_lines(text, "stdout F sys read-only"), 1);
        assert_int_equal(count_lines(text, "stdout F procsys ro"), 1);
        assert_int_equal(count_lines(text, "stdout F etc read-only"), 1);
        assert_int_equal(count_lines(text, "stdout F no unshare"), 1);
        assert_int_equal(count_lines(text, "stdout F memfds 0"), 1);
        /* its cgroup namespace made once it was in its groups (its mounts before): each
         * hierarchy's path is its namespace's root, none a path up and over to its group */
        assert_int_equal(count_lines(text, "stdout F cgroupns root"), 1);
}

/* A process pod's emptyDir and hostPath volumes: made on the node, bound at their mountPath,
 * readOnly kept; a hostPath that holds one of the node's secrets, or of the wrong type, is
 * refused; the emptyDir goes with the pod. */
static void process_volumes(void **state)
{
        struct fixture *f = *state;
        char secret[300], host[300], mnt[300], scratch[320], ro[320], script[1024], path[600];
        char *const argv[] = {"sh", "-c", script, NULL};
        const char *hide[] = {secret, NULL};
        struct xp_runtime_options o = {.state_dir = f->state,
                                       .log_dir = f->logs,
                                       .hide_paths = hide,
                                       .share_paths = shared(f)};
        struct xp_container_mount m[] = {
            {.kind = XP_VOLUME_EMPTY_DIR, .volume = "scratch", .destination = scratch},
            {.kind = XP_VOLUME_HOST_PATH,
             .volume = "in",
             .source = host,
             .allowed = f->tmp->path,
             .host_type = "DirectoryOrCreate",
             .destination = ro,
             .read_only = true},
        };
        struct xp_container_launch l = launch_of("uid-vol", argv);
        struct xp_container_record r;
        struct xp_error err = {0};
        _cleanup_free_ char *text = NULL, *written = NULL;

        snprintf(secret, sizeof(secret), "%s/secret", f->tmp->path);
        snprintf(host, sizeof(host), "%s/host/in", f->tmp->path);
        snprintf(mnt, sizeof(mnt), "%s/mnt", f->tmp->path);
        snprintf(scratch, sizeof(scratch), "%s/scratch", mnt);
        snprintf(ro, sizeof(ro), "%s/ro", mnt);
        assert_int_equal(mkdir(secret, 0700), 0);
        assert_int_equal(mkdir(mnt, 0755), 0);
        xp_runtime_free(f->rt);
        assert_int_equal(xp_runtime_open(&o, &f->rt, NULL), 0);
        if (!contained(f, XP_ISOLATION_NAMESPACES))
                skip();
        l.mounts = m;
        l.n_mounts = XP_ELEMENTSOF(m);
        snprintf(script,
                 sizeof(script),
                 "echo shared > %s/f; ls -d %s && echo in there; touch %s/x || echo ro refused",
                 scratch,
                 ro,
                 ro);
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-vol", "0.log");
        assert_int_equal(count_lines(text, "stdout F in there"), 1);
        assert_int_equal(count_lines(text, "stdout F ro refused"), 1);
        /* DirectoryOrCreate made it; the emptyDir is the pod's directory on the node */
        assert_int_equal(access(host, F_OK), 0);
        snprintf(path, sizeof(path), "%s/.pods/uid-vol/volumes/scratch/f", f->state);
        written = slurp(path);
        assert_non_null(written);
        assert_string_equal(written, "shared\n");
        assert_int_equal(xp_runtime_remove(f->rt, "uid-vol", cname, NULL), 0);

        /* a hostPath holding a secret the node hides; one of the wrong type */
        m[1].source = f->tmp->path;
        assert_true(xp_runtime_start(f->rt, &l, &r, &err) < 0);
        assert_non_null(strstr(xp_error_message(&err), "one of the node's secrets"));
        m[1].source = host;
        m[1].host_type = "File";
        assert_int_equal(xp_runtime_start(f->rt, &l, &r, &err), -EINVAL);
        assert_non_null(strstr(xp_error_message(&err), "hostPath type check failed"));
        assert_non_null(strstr(xp_error_message(&err), "is not a file"));

        assert_int_equal(xp_runtime_remove_pod(f->rt, "uid-vol", &err), 0);
        snprintf(path, sizeof(path), "%s/.pods/uid-vol", f->state);
        assert_int_equal(access(path, F_OK), -1);
}

/* privileged: every capability, no filter; read_only_root: nothing but /dev writable */
static void privileged_and_read_only(void **state)
{
        struct fixture *f = *state;
        char *const argv[] = {
            "sh",
            "-c",
            "grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status; touch /x-xpool-test || echo "
            "root read-only; echo x >/dev/null && echo dev writable",
            NULL};
        struct xp_contain c = {.privileged = true, .read_only_root = true};
        struct xp_container_launch l = launch_of("uid-priv", argv);
        struct xp_container_record r;
        _cleanup_free_ char *text = NULL;
        char all[64], line[256];
        unsigned long long mine = 0;
        FILE *fp;

        if (!contained(f, XP_ISOLATION_NAMESPACES | XP_ISOLATION_CAPABILITIES))
                skip();
        c.caps.bounding = c.caps.effective = c.caps.permitted = XP_CAP_ALL;
        l.contain = &c;
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-priv", "0.log");
        /* every capability we hold (root may lack some: the shim can give no more) */
        fp = fopen("/proc/self/status", "r");
        assert_non_null(fp);
        while (fgets(line, sizeof(line), fp))
                if (sscanf(line, "CapPrm: %llx", &mine) == 1)
                        break;
        fclose(fp);
        snprintf(all, sizeof(all), "stdout F CapEff:\t%016llx", mine);
        assert_int_equal(count_lines(text, all), 1);
        assert_int_equal(count_lines(text, "stdout F Seccomp:\t0"), 1);
        assert_int_equal(count_lines(text, "stdout F NoNewPrivs:\t0"), 1);
        assert_int_equal(count_lines(text, "stdout F root read-only"), 1);
        assert_int_equal(count_lines(text, "stdout F dev writable"), 1);
        assert_int_equal(access("/x-xpool-test", F_OK), -1);
}

/*
 * The pod's network namespace (xp_contain.netns): joined, /sys/class/net showing its interfaces
 * (a sysfs of its own), and the namespaces' directory detached from the container's mounts, so
 * that the container keeps no other pod's namespace alive, and hidden (an empty directory), so
 * that it lists no other pod's pin.
 */
static void pod_network(void **state)
{
        struct fixture *f = *state;
        char dir[160], ns[200], script[512], want[64];
        char *const argv[] = {"sh", "-c", script, NULL};
        const char *detach[] = {dir, NULL};
        struct xp_runtime_options o = {.state_dir = f->state,
                                       .log_dir = f->logs,
                                       .detach_paths = detach,
                                       .share_paths = shared(f)};
        struct xp_contain c = xp_contain_default();
        struct xp_container_launch l = launch_of("uid-netns", argv);
        struct xp_container_record r;
        struct xp_error err = {0};
        _cleanup_free_ char *text = NULL;
        struct stat st;

        if (!contained(f, XP_ISOLATION_NAMESPACES) || xp_netns_probe(NULL) < 0)
                skip();
        snprintf(dir, sizeof(dir), "%s/netns", f->tmp->dir);
        snprintf(ns, sizeof(ns), "%s/pod", dir);
        assert_int_equal(xp_netns_dir_prepare(dir, &err), 0);
        assert_int_equal(xp_netns_create(ns, &err), 0);
        xp_runtime_free(f->rt);
        assert_int_equal(xp_runtime_open(&o, &f->rt, &err), 0);
        snprintf(script,
                 sizeof(script),
                 "readlink /proc/self/ns/net; echo $(ls /sys/class/net); grep -c ' %s/' "
                 "/proc/self/mountinfo; echo pins $(ls -A %s | wc -l)",
                 dir,
                 dir);
        c.netns = ns;
        l.contain = &c;
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        text = log_file(f, "uid-netns", "0.log");
        assert_int_equal(stat(ns, &st), 0);
        snprintf(want, sizeof(want), "stdout F net:[%lu]", (unsigned long)st.st_ino);
        assert_int_equal(count_lines(text, want), 1);
        assert_int_equal(count_lines(text, "stdout F lo"), 1);
        assert_int_equal(count_lines(text, "stdout F 0"), 1);
        assert_int_equal(count_lines(text, "stdout F pins 0"), 1);
        /* a namespace that is not one: the start fails, saying so */
        c.netns = f->logs;
        l.pod_uid = "uid-netns-bad";
        assert_true(xp_runtime_start(f->rt, &l, &r, &err) < 0);
        assert_non_null(strstr(err.msg, "not a network namespace"));
        assert_int_equal(xp_netns_remove(ns, &err), 0);
        assert_int_equal(umount2(dir, MNT_DETACH), 0);
}

/* A process that left its session (and tried its cgroup) dies with the container: by its pid
 * namespace, else as a descendant the subreaper shim inherited (run as non-root to see that). */
static void escapee_dies(void **state)
{
        struct fixture *f = *state;
        char marker[32], script[512];
        char *const argv[] = {"sh", "-c", script, NULL};
        struct xp_container_launch l = launch_of("uid-escape", argv);
        struct xp_container_record r;

        snprintf(
            script,
            sizeof(script),
            "setsid sh -c 'for c in pids memory cpu; do echo $$ >/sys/fs/cgroup/$c/cgroup.procs; "
            "done; exec sleep %s' </dev/null >/dev/null 2>&1 & sleep 0.3; exit 0",
            sleep_marker(marker, 4));
        r = run_to_end(f, &l);
        xp_container_record_clear(&r);
        for (int i = 0; i < 3000 && sleeper(marker); i++)
                usleep(10000);
        assert_int_equal(sleeper(marker), 0);
}

/* Container programs run by the tests above. */
static int helper_main(int argc, char **argv)
{
        if (strcmp(argv[1], "__alloc") == 0 && argc == 3) {
                size_t size = (size_t)strtoul(argv[2], NULL, 10) << 20;
                volatile char *p = malloc(size);
                unsigned sum = 0;

                if (!p)
                        return 1;
                for (size_t i = 0; i < size; i += 4096)
                        p[i] = 1;
                for (size_t i = 0; i < size; i += 4096)
                        sum += (unsigned)p[i];
                printf("touched %u pages\n", sum);
                free((void *)p);
                return 0;
        }
        for (int i = 2; i < argc; i++) {
                int fd = open(argv[i], O_RDONLY | O_CLOEXEC);

                printf("%s: %s\n", argv[i], fd >= 0 ? "ok" : strerror(errno));
                if (fd >= 0)
                        close(fd);
        }
        return 0;
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(exit_codes, setup, teardown),
            cmocka_unit_test_setup_teardown(exits_name_their_pods, setup, teardown),
            cmocka_unit_test_setup_teardown(listing_follows_new_attempts, setup, teardown),
            cmocka_unit_test_setup_teardown(cri_log_format, setup, teardown),
            cmocka_unit_test_setup_teardown(rotation, setup, teardown),
            cmocka_unit_test_setup_teardown(start_failure, setup, teardown),
            cmocka_unit_test_setup_teardown(env_and_dir, setup, teardown),
            cmocka_unit_test_setup_teardown(no_new_privs, setup, teardown),
            cmocka_unit_test_setup_teardown(run_as_user, setup, teardown),
            cmocka_unit_test_setup_teardown(kill_term, setup, teardown),
            cmocka_unit_test_setup_teardown(term_to_main_only, setup, teardown),
            cmocka_unit_test_setup_teardown(grandchildren, setup, teardown),
            cmocka_unit_test_setup_teardown(readopt, setup, teardown),
            cmocka_unit_test_setup_teardown(lost_shim, setup, teardown),
            cmocka_unit_test_setup_teardown(without_cgroups, setup, teardown),
            cmocka_unit_test_setup_teardown(bad_launch, setup, teardown),
            cmocka_unit_test_setup_teardown(oom_killed, setup, teardown),
            cmocka_unit_test_setup_teardown(cgroup_parent_per_state, setup, teardown),
            cmocka_unit_test_setup_teardown(cgroup_parent_after_runtime, setup, teardown),
            cmocka_unit_test_setup_teardown(cpuset_applied, setup, teardown),
            cmocka_unit_test_setup_teardown(devices_restricted, setup, teardown),
            cmocka_unit_test_setup_teardown(default_containment, setup, teardown),
            cmocka_unit_test_setup_teardown(privileged_and_read_only, setup, teardown),
            cmocka_unit_test_setup_teardown(process_volumes, setup, teardown),
            cmocka_unit_test_setup_teardown(escapee_dies, setup, teardown),
            cmocka_unit_test_setup_teardown(pod_network, setup, teardown),
        };

        if (argc >= 2 && strcmp(argv[1], "__shim") == 0)
                return xp_shim_main(argc - 1, argv + 1);
        snprintf(cname, sizeof(cname), "main-%d", (int)getpid());
        if (argc >= 2 && (strcmp(argv[1], "__alloc") == 0 || strcmp(argv[1], "__open") == 0))
                return helper_main(argc, argv);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
