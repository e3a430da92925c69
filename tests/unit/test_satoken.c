/* SPDX-License-Identifier: Apache-2.0 */
/* Service account tokens (src/server/satoken.h): signing, checking, and who they speak for. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "registry_fixture.h"

#include "server/auth.h"
#include "server/satoken.h"
#include "xpool/macro.h"

#define NOW 1800000000

struct state {
        struct registry_fixture f;
        struct satoken_key *key;
        char key_path[128];
};

static int setup(void **state)
{
        struct state *s = calloc(1, sizeof(*s));
        struct xp_error err = {0};

        assert_non_null(s);
        fixture_open(&s->f, "satoken", 0);
        snprintf(s->key_path, sizeof s->key_path, "%s/" SATOKEN_KEY_FILE, s->f.dir->dir);
        if (satoken_key_open(s->key_path, &s->key, &err) < 0)
                fail_msg("key: %s", err.msg);
        *state = s;
        return 0;
}

static int teardown(void **state)
{
        struct state *s = *state;

        satoken_key_free(s->key);
        fixture_close(&s->f);
        free(s);
        return 0;
}

/* Claims as TokenRequest makes them, for web in ns, bound to pod when not NULL. */
static json_t *claims(const char *aud, int64_t exp, const char *pod)
{
        json_t *c = json_pack("{s:[s], s:I, s:I, s:I, s:s, s:s, s:{s:s, s:{s:s, s:s}}}",
                              "aud",
                              aud,
                              "exp",
                              (json_int_t)exp,
                              "iat",
                              (json_int_t)NOW,
                              "nbf",
                              (json_int_t)NOW,
                              "iss",
                              SATOKEN_ISSUER,
                              "sub",
                              "system:serviceaccount:ns:web",
                              "kubernetes.io",
                              "namespace",
                              "ns",
                              "serviceaccount",
                              "name",
                              "web",
                              "uid",
                              "sa-uid-1");

        assert_non_null(c);
        if (pod)
                assert_int_equal(
                    json_object_set_new(json_object_get(c, "kubernetes.io"),
                                        "pod",
                                        json_pack("{s:s, s:s}", "name", pod, "uid", "pod-uid-1")),
                    0);
        return c;
}

static char *sign(const struct satoken_key *key, json_t *c)
{
        char *token = NULL;

        assert_int_equal(satoken_sign(key, c, &token), 0);
        json_decref(c);
        return token;
}

static int
verify(const struct satoken_key *key, const char *token, int64_t now, char *why, size_t size)
{
        struct xp_error err = {0};
        json_t *got = NULL;
        int r = satoken_verify(key, token, strlen(token), now, &got, &err);

        if (why)
                snprintf(why, size, "%s", err.msg);
        json_decref(got);
        return r;
}

static void signs_and_verifies(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims(SATOKEN_ISSUER, NOW + 3600, NULL));
        struct xp_error err = {0};
        json_t *got = NULL;

        assert_true(satoken_looks_like_jwt(token, strlen(token)));
        assert_int_equal(satoken_verify(s->key, token, strlen(token), NOW + 10, &got, &err), 0);
        assert_string_equal(json_string_value(json_object_get(got, "sub")),
                            "system:serviceaccount:ns:web");
        json_decref(got);
        assert_false(satoken_looks_like_jwt("xpa_0123456789ab.00", 19));
}

static void expiry_and_not_before(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims(SATOKEN_ISSUER, NOW + 600, NULL));
        char why[256];

        assert_int_equal(verify(s->key, token, NOW + 599, NULL, 0), 0);
        assert_int_equal(verify(s->key, token, NOW + 600, why, sizeof why), -EACCES);
        assert_string_equal(why, "the service account token has expired");
        assert_int_equal(verify(s->key, token, NOW - 1, why, sizeof why), -EACCES);
        assert_string_equal(why, "the service account token is not valid yet");
}

static void wrong_key_and_kept_key(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims(SATOKEN_ISSUER, NOW + 3600, NULL));
        struct satoken_key *other = NULL, *again = NULL;
        char path[160], why[256];
        struct xp_error err = {0};
        struct stat st;

        snprintf(path, sizeof path, "%s/other.key", s->f.dir->dir);
        assert_int_equal(satoken_key_open(path, &other, &err), 0);
        assert_int_equal(verify(other, token, NOW, why, sizeof why), -EACCES);
        assert_string_equal(why, "the service account token's signature is invalid");
        /* the key made at the first start is read back at the next: tokens stay valid */
        assert_int_equal(satoken_key_open(s->key_path, &again, &err), 0);
        assert_int_equal(verify(again, token, NOW, NULL, 0), 0);
        assert_int_equal(stat(s->key_path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        satoken_key_free(other);
        satoken_key_free(again);
}

static void tampered_and_malformed(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims(SATOKEN_ISSUER, NOW + 3600, NULL));
        _cleanup_free_ char *admin = sign(s->key, claims(SATOKEN_ISSUER, NOW + 3600, NULL));
        _cleanup_free_ char *forged = NULL;
        char *dot1 = strchr(token, '.'), *dot2 = strchr(dot1 + 1, '.');
        char why[256];

        /* another body under the first token's signature */
        dot2[-2] = dot2[-2] == 'A' ? 'B' : 'A';
        assert_int_equal(verify(s->key, token, NOW, why, sizeof why), -EACCES);
        /* a signature cut short */
        admin[strlen(admin) - 4] = '\0';
        assert_int_equal(verify(s->key, admin, NOW, NULL, 0), -EACCES);
        /* alg none, as attacks on JWT libraries try */
        assert_int_equal(
            asprintf(&forged, "eyJhbGciOiJub25lIn0.%.*s.", (int)(dot2 - dot1 - 1), dot1 + 1) > 0,
            1);
        assert_int_equal(verify(s->key, forged, NOW, why, sizeof why), -EACCES);
        assert_int_equal(verify(s->key, "eyJ.x", NOW, why, sizeof why), -EACCES);
        assert_string_equal(why, "malformed service account token");
}

static void wrong_audience(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims("vault", NOW + 3600, NULL));
        char why[256];

        assert_int_equal(verify(s->key, token, NOW, why, sizeof why), -EACCES);
        assert_string_equal(why, "the service account token is not for this server (audience)");
}

static void put_account(struct state *s, const char *annotations)
{
        fixture_put_text(
            &s->f,
            "serviceaccounts",
            "ns",
            "web",
            "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":"
            "\"web\",\"namespace\":\"ns\",\"uid\":\"sa-uid-1\"%s}}",
            annotations);
}

static int authenticate(struct state *s, const char *token, struct auth_identity *who, char *why)
{
        struct xp_error err = {0};
        int r = satoken_authenticate(s->key, s->f.store, token, strlen(token), NOW, who, &err);

        snprintf(why, 256, "%s", err.msg);
        return r;
}

static void who_the_token_is(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims(SATOKEN_ISSUER, NOW + 3600, NULL));
        struct auth_identity who;
        char why[256], user[400];

        assert_int_equal(authenticate(s, token, &who, why), -EACCES);
        assert_string_equal(why,
                            "the service account ns/web this token was made for no longer exists");
        put_account(s, "");
        assert_int_equal(authenticate(s, token, &who, why), 0);
        assert_true(who.service_account);
        assert_int_equal(who.role, 0);
        auth_user_name(&who, user, sizeof user);
        assert_string_equal(user, "system:serviceaccount:ns:web");
        /* granted a role by an admin's annotation */
        put_account(s, ",\"annotations\":{\"xpool.io/role\":\"reader\"}");
        assert_int_equal(authenticate(s, token, &who, why), 0);
        assert_int_equal(who.role, XP_TOKEN_READER);
        put_account(s, ",\"annotations\":{\"xpool.io/role\":\"node\"}");
        assert_int_equal(authenticate(s, token, &who, why), 0);
        assert_int_equal(who.role, 0);
        /* deleted and made again: another uid, the old tokens die */
        fixture_put_text(
            &s->f,
            "serviceaccounts",
            "ns",
            "web",
            "{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns\",\"uid\":\"sa-uid-2\"}}");
        assert_int_equal(authenticate(s, token, &who, why), -EACCES);
}

static void bound_pod_gone(void **state)
{
        struct state *s = *state;
        _cleanup_free_ char *token = sign(s->key, claims(SATOKEN_ISSUER, NOW + 3600, "p1"));
        struct auth_identity who;
        char why[256];

        put_account(s, "");
        assert_int_equal(authenticate(s, token, &who, why), -EACCES);
        assert_string_equal(why, "the pod ns/p1 this token was made for no longer exists");
        fixture_put_text(
            &s->f,
            "pods",
            "ns",
            "p1",
            "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\",\"uid\":\"pod-uid-1\"}}");
        assert_int_equal(authenticate(s, token, &who, why), 0);
        assert_string_equal(who.pod_name, "p1");
        fixture_put_text(
            &s->f,
            "pods",
            "ns",
            "p1",
            "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\",\"uid\":\"pod-uid-1\","
            "\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"}}");
        assert_int_equal(authenticate(s, token, &who, why), -EACCES);
        assert_string_equal(why, "the pod ns/p1 is being deleted");
        assert_int_equal(xp_store_delete(s->f.store, "pods", "ns", "p1", 0, NULL, NULL, NULL), 0);
        assert_int_equal(authenticate(s, token, &who, why), -EACCES);
}

static void what_a_service_account_may_do(void **state)
{
        struct auth_identity who = {
            .service_account = true, .subject = "web", .sa_namespace = "ns"};
        struct auth_request pods = {
            .verb = AUTH_LIST, .group = "", .resource = "pods", .namespace = "ns"};
        struct auth_request api = {.verb = AUTH_LIST, .path = "/api/v1"};
        struct auth_request metrics = {.verb = AUTH_LIST, .path = "/metrics"};
        char reason[512];

        (void)state;
        assert_int_equal(auth_authorize(&who, &pods, reason, sizeof reason), AUTH_DENY);
        assert_string_equal(reason,
                            "pods is forbidden: User \"system:serviceaccount:ns:web\" cannot list "
                            "resource \"pods\" in API group \"\" in the namespace \"ns\"");
        assert_int_equal(auth_authorize(&who, &api, reason, sizeof reason), AUTH_ALLOW);
        assert_int_equal(auth_authorize(&who, &metrics, reason, sizeof reason), AUTH_DENY);
        who.role = XP_TOKEN_READER;
        assert_int_equal(auth_authorize(&who, &pods, reason, sizeof reason), AUTH_ALLOW);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(signs_and_verifies, setup, teardown),
            cmocka_unit_test_setup_teardown(expiry_and_not_before, setup, teardown),
            cmocka_unit_test_setup_teardown(wrong_key_and_kept_key, setup, teardown),
            cmocka_unit_test_setup_teardown(tampered_and_malformed, setup, teardown),
            cmocka_unit_test_setup_teardown(wrong_audience, setup, teardown),
            cmocka_unit_test_setup_teardown(who_the_token_is, setup, teardown),
            cmocka_unit_test_setup_teardown(bound_pod_gone, setup, teardown),
            cmocka_unit_test(what_a_service_account_may_do),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
