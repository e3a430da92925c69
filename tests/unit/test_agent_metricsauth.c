/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who may read the agent's /metrics (agent/metricsauth.h, docs/monitoring.md): the bearer token
 * is taken from the header as Prometheus sends it, the server's SelfSubjectAccessReview answer
 * decides (401 for a token it refuses, 403 for one not allowed nodes/metrics), answers are
 * remembered so a second scrape does not ask again, and a server that cannot be reached is a
 * failure that is not remembered. The server is a small HTTP responder on loopback that counts
 * what it is asked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/metricsauth.h"

struct responder {
        int listen_fd;
        int port;
        char url[64]; /* the agent's options borrow it */
        int asked;    /* requests answered */
        char last_body[2048];
        pthread_t thread;
};

/* One request per connection: a review allowed for "good", refused for "other", else 401. */
static void answer_one(struct responder *r, int fd)
{
        char req[8192], reply[1024];
        const char *refused = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"code\":401,"
                              "\"reason\":\"Unauthorized\",\"message\":\"Unauthorized\"}";
        const char *body;
        size_t len = 0;
        ssize_t n;

        while (len < sizeof req - 1 && (n = read(fd, req + len, sizeof req - 1 - len)) > 0) {
                len += (size_t)n;
                req[len] = '\0';
                const char *head_end = strstr(req, "\r\n\r\n");
                const char *cl = strcasestr(req, "Content-Length:");
                if (head_end && cl && len >= (size_t)(head_end + 4 - req) + (size_t)atoi(cl + 15))
                        break;
        }
        req[len] = '\0';
        snprintf(r->last_body, sizeof r->last_body, "%s", strstr(req, "\r\n\r\n") ?: "");
        if (strstr(req, "Authorization: Bearer good\r\n"))
                body = "{\"kind\":\"SelfSubjectAccessReview\",\"status\":{\"allowed\":true}}";
        else if (strstr(req, "Authorization: Bearer other\r\n"))
                body = "{\"kind\":\"SelfSubjectAccessReview\",\"status\":{\"allowed\":false}}";
        else
                body = NULL;
        snprintf(reply,
                 sizeof reply,
                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 body ? "201 Created" : "401 Unauthorized",
                 strlen(body ?: refused),
                 body ?: refused);
        /* counted before the client can read the answer and look at the count */
        __atomic_add_fetch(&r->asked, 1, __ATOMIC_SEQ_CST);
        assert_true(write(fd, reply, strlen(reply)) > 0);
}

static int asked(struct responder *r)
{
        return __atomic_load_n(&r->asked, __ATOMIC_SEQ_CST);
}

static void *serve(void *userdata)
{
        struct responder *r = userdata;
        int fd;

        while ((fd = accept(r->listen_fd, NULL, NULL)) >= 0) {
                answer_one(r, fd);
                close(fd);
        }
        return NULL;
}

static void start(struct responder *r)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof a;

        memset(r, 0, sizeof *r);
        r->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(r->listen_fd >= 0);
        assert_int_equal(bind(r->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(r->listen_fd, 8), 0);
        assert_int_equal(getsockname(r->listen_fd, (struct sockaddr *)&a, &alen), 0);
        r->port = ntohs(a.sin_port);
        assert_int_equal(pthread_create(&r->thread, NULL, serve, r), 0);
}

static void stop(struct responder *r)
{
        shutdown(r->listen_fd, SHUT_RDWR);
        pthread_join(r->thread, NULL);
        close(r->listen_fd);
}

/* The clock of the ration test: it moves only when the test says so. */
static int64_t frozen_ms = 1000000;
static int64_t frozen_clock(void)
{
        return frozen_ms;
}

static struct xp_metrics_auth *new_auth_clock(struct responder *r, int64_t (*now_ms)(void))
{
        struct xp_apiclient_options api = {.server = r->url, .token = "xpn_agent.secret"};
        struct xp_metrics_auth *auth = NULL;

        snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d", r->port);
        assert_int_equal(
            xp_metrics_auth_new(
                &(struct xp_metrics_auth_options){.api = &api, .node_name = "n1", .now_ms = now_ms},
                &auth),
            0);
        return auth;
}

static struct xp_metrics_auth *new_auth(struct responder *r)
{
        return new_auth_clock(r, NULL);
}

static void bearer_header(void **state)
{
        (void)state;
        assert_string_equal(xp_metrics_auth_bearer("Bearer abc"), "abc");
        assert_string_equal(xp_metrics_auth_bearer("bearer  abc"), "abc");
        assert_null(xp_metrics_auth_bearer("Basic YWJjOmRlZg=="));
        assert_null(xp_metrics_auth_bearer("Bearer "));
        assert_null(xp_metrics_auth_bearer(NULL));
}

static void decisions_and_memory(void **state)
{
        struct responder r;
        struct xp_metrics_auth *auth;
        struct xp_error err = {0};

        (void)state;
        start(&r);
        auth = new_auth(&r);
        /* no token: refused without asking the server */
        assert_int_equal(xp_metrics_auth_check(auth, NULL, &err), -EACCES);
        assert_non_null(strstr(xp_error_message(&err), "a bearer token is needed"));
        assert_int_equal(asked(&r), 0);
        /* allowed, asked once with this node's review, then remembered */
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        assert_int_equal(asked(&r), 1);
        assert_non_null(strstr(r.last_body, "\"nodes\""));
        assert_non_null(strstr(r.last_body, "\"metrics\""));
        assert_non_null(strstr(r.last_body, "\"n1\""));
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        assert_int_equal(asked(&r), 1);
        /* a token the server accepts but does not allow: 403's -EPERM, remembered */
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer other", &err), -EPERM);
        assert_string_equal(xp_error_message(&err),
                            "the token may not get nodes/metrics of node n1");
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer other", &err), -EPERM);
        assert_int_equal(asked(&r), 2);
        /* a token the server refuses: 401's -EACCES, remembered with its message */
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer wrong", &err), -EACCES);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer wrong", &err), -EACCES);
        assert_string_equal(xp_error_message(&err), "the xpool server does not accept the token");
        assert_int_equal(asked(&r), 3);
        xp_metrics_auth_free(auth);
        stop(&r);
}

static void unreachable_server_is_not_remembered(void **state)
{
        struct responder r;
        struct xp_metrics_auth *auth;
        struct xp_error err = {0};
        int r1, r2;

        (void)state;
        start(&r);
        stop(&r); /* its port is free again: connections are refused */
        auth = new_auth(&r);
        r1 = xp_metrics_auth_check(auth, "Bearer good", &err);
        assert_true(r1 < 0 && r1 != -EACCES && r1 != -EPERM);
        assert_non_null(strstr(xp_error_message(&err), "cannot ask the xpool server"));
        r2 = xp_metrics_auth_check(auth, "Bearer good", &err);
        assert_true(r2 < 0 && r2 != -EACCES && r2 != -EPERM);
        xp_metrics_auth_free(auth);
}

/* A flood of ever new wrong tokens: the server is asked about 32 of them, then no more (503's
 * -EAGAIN, saying why) until time passes; an approval remembered before still passes. */
static void refusals_rationed(void **state)
{
        struct responder r;
        struct xp_metrics_auth *auth;
        struct xp_error err = {0};
        char header[64];
        int refused = 0, rationed = 0;

        (void)state;
        start(&r);
        auth = new_auth_clock(&r, frozen_clock);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        for (int i = 0; i < 100; i++) {
                int rc;

                snprintf(header, sizeof header, "Bearer made-up-%d", i);
                rc = xp_metrics_auth_check(auth, header, &err);
                refused += rc == -EACCES;
                rationed += rc == -EAGAIN;
        }
        assert_int_equal(refused, 32);
        assert_int_equal(rationed, 68);
        assert_int_equal(asked(&r), 1 + 32);
        assert_non_null(strstr(xp_error_message(&err), "refused more than 32 tokens"));
        /* remembered answers are not rationed */
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer made-up-0", NULL), -EACCES);
        assert_int_equal(asked(&r), 1 + 32);
        /* a second later one more may be asked about */
        frozen_ms += 1000;
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer made-up-100", NULL), -EACCES);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer made-up-101", NULL), -EAGAIN);
        assert_int_equal(asked(&r), 1 + 33);
        xp_metrics_auth_free(auth);
        stop(&r);
}

/* Exhausts the ration with made-up tokens never seen before (from *next on): how many were
 * refused by the server. */
static int flood(struct xp_metrics_auth *auth, int *next, int n)
{
        char header[64];
        int refused = 0;

        for (int i = 0; i < n; i++, (*next)++) {
                snprintf(header, sizeof header, "Bearer flood-%d", *next);
                refused += xp_metrics_auth_check(auth, header, NULL) == -EACCES;
        }
        return refused;
}

/* A flood that outlasts Prometheus' cached approval: its expired approval is kept out of the
 * refusals' reach (more refusals are remembered than the table has free slots) and its token is
 * asked about again despite the ration, so its scrapes still pass; 10 minutes after the approval
 * expired it is gone and the token waits for the ration like any other. */
static void stale_approval_outlives_a_flood(void **state)
{
        struct responder r;
        struct xp_metrics_auth *auth;
        int next = 0, asked_before;

        (void)state;
        start(&r);
        frozen_ms = 2000000;
        auth = new_auth_clock(&r, frozen_clock);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        frozen_ms += 121 * 1000; /* the approval expired */
        assert_int_equal(flood(auth, &next, 40), 32);
        /* a refusal a second: more than the table's 31 free slots, while each is remembered */
        for (int i = 0; i < 40; i++) {
                frozen_ms += 1000;
                assert_int_equal(flood(auth, &next, 2), 1);
        }
        asked_before = asked(&r);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        assert_int_equal(asked(&r), asked_before + 1);
        /* approved again: remembered, not asked */
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), 0);
        assert_int_equal(asked(&r), asked_before + 1);
        /* long after its approval expired, the token waits for the ration like a new one */
        frozen_ms += 121 * 1000 + 10 * 60 * 1000;
        assert_int_equal(flood(auth, &next, 40), 32);
        assert_int_equal(xp_metrics_auth_check(auth, "Bearer good", NULL), -EAGAIN);
        xp_metrics_auth_free(auth);
        stop(&r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(bearer_header),
            cmocka_unit_test(decisions_and_memory),
            cmocka_unit_test(unreachable_server_is_not_remembered),
            cmocka_unit_test(refusals_rationed),
            cmocka_unit_test(stale_approval_outlives_a_flood),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
