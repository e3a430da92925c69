/* SPDX-License-Identifier: Apache-2.0 */
/* tls_ensure() and friends, checked by GnuTLS, openssl, a real handshake and kubectl. */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "server/kubeconfig.h"
#include "server/setup.h"
#include "server/tls.h"
#include "xpool/macro.h"
#include "xpool/yaml.h"

static int setup(void **state)
{
        return tmpdir_setup(state, "tls", "tls");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static bool have(const char *program)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", program);
        return system(cmd) == 0;
}

/* Runs a shell command; its stdout (and stderr) into out, and the exit status. */
static int run(char *out, size_t size, const char *fmt, ...) _printf_(3, 4);
static int run(char *out, size_t size, const char *fmt, ...)
{
        char cmd[2048];
        va_list ap;
        FILE *p;
        size_t n;
        int status;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        p = popen(cmd, "r");
        assert_non_null(p);
        n = fread(out, 1, size - 1, p);
        out[n] = '\0';
        status = pclose(p);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *path_in(const struct tmpdir *f, const char *name)
{
        static char paths[4][160];
        static unsigned next;
        char *p = paths[next++ % 4];

        snprintf(p, sizeof(paths[0]), "%s/%s", f->path, name);
        return p;
}

static char *read_text(const char *path)
{
        char *text = NULL;

        assert_int_equal(tls_load_pem(path, &text, NULL), 0);
        return text;
}

static mode_t mode_of(const char *path)
{
        struct stat st;

        assert_int_equal(stat(path, &st), 0);
        return st.st_mode & 07777;
}

static void creates_and_verifies(void **state)
{
        struct tmpdir *f = *state;
        const char *hosts[] = {"xpool.example", "10.1.2.3", "[fd00::7]"};
        struct xp_error err = {0};
        char out[16384];

        assert_int_equal(tls_ensure(f->path, hosts, XP_ELEMENTSOF(hosts), &err), 0);
        assert_int_equal(mode_of(f->path), 0700);
        assert_int_equal(mode_of(path_in(f, "ca.key")), 0600);
        assert_int_equal(mode_of(path_in(f, "server.key")), 0600);
        assert_int_equal(mode_of(path_in(f, "ca.crt")), 0644);
        assert_int_equal(mode_of(path_in(f, "server.crt")), 0644);
        assert_int_equal(tls_check_pair(path_in(f, "ca.crt"), path_in(f, "ca.key"), &err), 0);
        assert_int_equal(tls_check_pair(path_in(f, "server.crt"), path_in(f, "server.key"), &err),
                         0);

        if (!have("openssl")) {
                print_message("openssl is missing: skipping its checks\n");
                return;
        }
        assert_int_equal(run(out,
                             sizeof(out),
                             "openssl verify -CAfile %s %s 2>&1",
                             path_in(f, "ca.crt"),
                             path_in(f, "server.crt")),
                         0);
        assert_non_null(strstr(out, ": OK"));
        assert_int_equal(
            run(out, sizeof(out), "openssl x509 -noout -text -in %s", path_in(f, "server.crt")), 0);
        assert_non_null(strstr(out, "DNS:localhost"));
        assert_non_null(strstr(out, "DNS:xpool.example"));
        assert_non_null(strstr(out, "IP Address:127.0.0.1"));
        assert_non_null(strstr(out, "IP Address:0:0:0:0:0:0:0:1"));
        assert_non_null(strstr(out, "IP Address:10.1.2.3"));
        assert_non_null(strstr(out, "IP Address:FD00:0:0:0:0:0:0:7"));
        assert_non_null(strstr(out, "TLS Web Server Authentication"));
        assert_non_null(strstr(out, "CA:FALSE"));
        assert_non_null(strstr(out, "prime256v1"));
        assert_non_null(strstr(out, "ecdsa-with-SHA256"));
        assert_int_equal(
            run(out, sizeof(out), "openssl x509 -noout -text -in %s", path_in(f, "ca.crt")), 0);
        assert_non_null(strstr(out, "CA:TRUE"));
        assert_non_null(strstr(out, "Certificate Sign"));
        assert_non_null(strstr(out, "CN = xpool CA"));
        /* ten years, give or take the leap days and the hour of skew */
        assert_int_equal(run(out,
                             sizeof(out),
                             "openssl x509 -noout -checkend %d -in %s",
                             3640 * 24 * 3600,
                             path_in(f, "ca.crt")),
                         0);
        assert_int_not_equal(run(out,
                                 sizeof(out),
                                 "openssl x509 -noout -checkend %d -in %s",
                                 3660 * 24 * 3600,
                                 path_in(f, "ca.crt")),
                             0);
        assert_int_equal(
            run(out, sizeof(out), "openssl pkey -noout -in %s", path_in(f, "server.key")), 0);
}

static void reuses_and_regenerates(void **state)
{
        struct tmpdir *f = *state;
        const char *one[] = {"a.example"}, *two[] = {"A.example", "b.example"};
        _cleanup_free_ char *ca = NULL, *crt = NULL, *crt2 = NULL, *crt3 = NULL, *ca2 = NULL,
                            *key3 = NULL, *crt4 = NULL;
        struct xp_error err = {0};
        char cmd[512];

        assert_int_equal(tls_ensure(f->path, one, 1, &err), 0);
        ca = read_text(path_in(f, "ca.crt"));
        crt = read_text(path_in(f, "server.crt"));

        /* the same hosts, or fewer: nothing changes */
        assert_int_equal(tls_ensure(f->path, one, 1, &err), 0);
        crt2 = read_text(path_in(f, "server.crt"));
        assert_string_equal(crt, crt2);
        free(crt2);
        assert_int_equal(tls_ensure(f->path, NULL, 0, &err), 0);
        crt2 = read_text(path_in(f, "server.crt"));
        assert_string_equal(crt, crt2);

        /* a new host: a new serving certificate from the same CA */
        assert_int_equal(tls_ensure(f->path, two, 2, &err), 0);
        crt3 = read_text(path_in(f, "server.crt"));
        ca2 = read_text(path_in(f, "ca.crt"));
        assert_string_not_equal(crt, crt3);
        assert_string_equal(ca, ca2);
        assert_int_equal(tls_check_pair(path_in(f, "server.crt"), path_in(f, "server.key"), &err),
                         0);

        /* a lost or mismatched key: a new pair */
        snprintf(cmd, sizeof(cmd), "cp %s %s", path_in(f, "ca.key"), path_in(f, "server.key"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(tls_check_pair(path_in(f, "server.crt"), path_in(f, "server.key"), &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "server.key' is not the private key of"));
        assert_int_equal(tls_ensure(f->path, two, 2, &err), 0);
        assert_int_equal(tls_check_pair(path_in(f, "server.crt"), path_in(f, "server.key"), &err),
                         0);
        key3 = read_text(path_in(f, "server.key"));
        unlink(path_in(f, "server.key"));
        assert_int_equal(tls_ensure(f->path, two, 2, &err), 0);
        assert_int_equal(tls_check_pair(path_in(f, "server.crt"), path_in(f, "server.key"), &err),
                         0);
        crt4 = read_text(path_in(f, "server.crt"));
        assert_string_not_equal(crt3, crt4);

        if (!have("openssl")) {
                print_message("openssl is missing: skipping the expiry check\n");
                return;
        }
        /* a serving certificate (from this CA, for every host) that ends in 10 days is replaced;
         * one that ends in 100 days is kept */
        for (int days = 100; days >= 10; days -= 90) {
                _cleanup_free_ char *made = NULL, *after = NULL;
                char out[4096];

                assert_int_equal(
                    run(out,
                        sizeof(out),
                        "cd %s && printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:a.example,DNS:b.example\\n' > ext && "
                        "openssl req -new -key server.key -subj /CN=x -out csr 2>&1 && "
                        "openssl x509 -req -in csr -CA ca.crt -CAkey ca.key -CAcreateserial -days %d -extfile ext -out server.crt 2>&1",
                        f->path,
                        days),
                    0);
                made = read_text(path_in(f, "server.crt"));
                assert_int_equal(tls_ensure(f->path, two, 2, &err), 0);
                after = read_text(path_in(f, "server.crt"));
                if (days == 100)
                        assert_string_equal(made, after);
                else
                        assert_string_not_equal(made, after);
        }
}

static void refuses_damage(void **state)
{
        struct tmpdir *f = *state;
        const char *bad[] = {"bad host"}, *empty[] = {""}, *under[] = {"a_b.example"};
        struct xp_error err = {0};
        _cleanup_free_ char *crt = NULL;
        char cmd[512];
        char *text = (char *)"unchanged";

        assert_int_equal(tls_ensure(f->path, bad, 1, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "host 'bad host'"));
        assert_int_equal(access(f->path, F_OK), -1); /* nothing made */
        assert_int_equal(tls_ensure(f->path, empty, 1, &err), -EINVAL);
        assert_int_equal(tls_ensure(f->path, under, 1, &err), -EINVAL);

        assert_int_equal(tls_ensure(f->path, NULL, 0, &err), 0);
        crt = read_text(path_in(f, "server.crt"));

        /* half a CA is never silently replaced */
        snprintf(cmd, sizeof(cmd), "mv %s %s.saved", path_in(f, "ca.key"), path_in(f, "ca.key"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(tls_ensure(f->path, NULL, 0, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "ca.crt' exists without"));
        assert_non_null(strstr(err.msg, "ca.key"));
        assert_int_equal(access(path_in(f, "ca.key"), F_OK), -1);
        snprintf(cmd, sizeof(cmd), "mv %s.saved %s", path_in(f, "ca.key"), path_in(f, "ca.key"));
        assert_int_equal(system(cmd), 0);

        /* a CA key that is not the CA certificate's */
        snprintf(cmd,
                 sizeof(cmd),
                 "cp %s %s.saved && cp %s %s",
                 path_in(f, "ca.key"),
                 path_in(f, "ca.key"),
                 path_in(f, "server.key"),
                 path_in(f, "ca.key"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(tls_ensure(f->path, NULL, 0, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "ca.key' is not the private key of"));

        /* a serving certificate used as the CA */
        snprintf(cmd, sizeof(cmd), "cp %s %s", path_in(f, "server.crt"), path_in(f, "ca.crt"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(tls_ensure(f->path, NULL, 0, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "is not a CA certificate"));

        /* PEM loading */
        assert_int_equal(tls_load_pem(path_in(f, "nope"), &text, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "nope"));
        snprintf(cmd, sizeof(cmd), "echo hello > %s", path_in(f, "plain"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(tls_load_pem(path_in(f, "plain"), &text, &err), -EINVAL);
        assert_int_equal(tls_check_pair(path_in(f, "plain"), path_in(f, "server.key"), &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "plain' is not a PEM certificate"));
        assert_int_equal(tls_check_pair(path_in(f, "server.crt"), path_in(f, "plain"), &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "plain' is not an unencrypted PEM private key"));
        snprintf(cmd, sizeof(cmd), "head -c 70000 /dev/zero | tr '\\0' a > %s", path_in(f, "big"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(tls_load_pem(path_in(f, "big"), &text, &err), -E2BIG);
        assert_string_equal(text, "unchanged");
}

#define TOKEN "xpa_0123456789ab.0000000000000000000000000000000000000000000000000000000000000000"

static enum MHD_Result answer(void *cls,
                              struct MHD_Connection *connection,
                              const char *url,
                              const char *method,
                              const char *version,
                              const char *upload_data,
                              size_t *upload_data_size,
                              void **req_cls)
{
        const char *auth =
            MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization");
        bool ok = auth && strcmp(auth, "Bearer " TOKEN) == 0;
        const char *body = ok ? "{\"hello\":\"tls\"}" : "{\"kind\":\"Status\",\"code\":401}";
        struct MHD_Response *response;
        enum MHD_Result r;

        (void)cls, (void)url, (void)method, (void)version, (void)upload_data,
            (void)upload_data_size, (void)req_cls;
        response =
            MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(response, "Content-Type", "application/json");
        r = MHD_queue_response(connection, ok ? MHD_HTTP_OK : MHD_HTTP_UNAUTHORIZED, response);
        MHD_destroy_response(response);
        return r;
}

/* A real TLS server (libmicrohttpd with our pair), reached by curl and kubectl. */
static void handshake(void **state)
{
        struct tmpdir *f = *state;
        const char *hosts[] = {"xpool.test"};
        _cleanup_free_ char *cert = NULL, *key = NULL, *ca = NULL;
        struct xp_error err = {0};
        struct MHD_Daemon *daemon;
        const union MHD_DaemonInfo *info;
        char out[8192], other[160], kubeconfig[160];
        unsigned port;

        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
                skip();
        if (!have("curl")) {
                print_message("curl is missing: skipping the handshake\n");
                return;
        }
        assert_int_equal(tls_ensure(f->path, hosts, 1, &err), 0);
        assert_int_equal(tls_load_pem(path_in(f, "server.crt"), &cert, &err), 0);
        assert_int_equal(tls_load_pem(path_in(f, "server.key"), &key, &err), 0);
        assert_int_equal(tls_load_pem(path_in(f, "ca.crt"), &ca, &err), 0);
        daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS,
                                  0,
                                  NULL,
                                  NULL,
                                  answer,
                                  NULL,
                                  MHD_OPTION_HTTPS_MEM_CERT,
                                  cert,
                                  MHD_OPTION_HTTPS_MEM_KEY,
                                  key,
                                  MHD_OPTION_HTTPS_PRIORITIES,
                                  TLS_PRIORITY,
                                  MHD_OPTION_END);
        assert_non_null(daemon);
        info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
        assert_non_null(info);
        port = info->port;

        assert_int_equal(run(out,
                             sizeof(out),
                             "curl -sS --max-time 20 --cacert %s -H 'Authorization: Bearer " TOKEN
                             "' https://127.0.0.1:%u/ 2>&1",
                             path_in(f, "ca.crt"),
                             port),
                         0);
        assert_string_equal(out, "{\"hello\":\"tls\"}");
        assert_int_equal(run(out,
                             sizeof(out),
                             "curl -sS --max-time 20 --cacert %s -H 'Authorization: Bearer " TOKEN
                             "' https://localhost:%u/ 2>&1",
                             path_in(f, "ca.crt"),
                             port),
                         0);
        assert_string_equal(out, "{\"hello\":\"tls\"}");
        assert_int_equal(
            run(out,
                sizeof(out),
                "curl -sS --max-time 20 --cacert %s --resolve xpool.test:%u:127.0.0.1 -H 'Authorization: Bearer " TOKEN
                "' https://xpool.test:%u/ 2>&1",
                path_in(f, "ca.crt"),
                port,
                port),
            0);
        assert_string_equal(out, "{\"hello\":\"tls\"}");
        /* a name the certificate lacks, and another CA, are refused by the client */
        assert_int_not_equal(
            run(out,
                sizeof(out),
                "curl -sS --max-time 20 --cacert %s --resolve other.test:%u:127.0.0.1 https://other.test:%u/ 2>&1",
                path_in(f, "ca.crt"),
                port,
                port),
            0);
        snprintf(other, sizeof(other), "%s/other", f->dir);
        assert_int_equal(tls_ensure(other, NULL, 0, &err), 0);
        assert_int_not_equal(
            run(out,
                sizeof(out),
                "curl -sS --max-time 20 --cacert %s/ca.crt https://127.0.0.1:%u/ 2>&1",
                other,
                port),
            0);

        /* kubectl, configured by kubeconfig_write(), talks TLS with the token */
        if (have("kubectl")) {
                char url[64];

                snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", f->dir);
                snprintf(url, sizeof(url), "https://127.0.0.1:%u", port);
                assert_int_equal(kubeconfig_write(kubeconfig, url, ca, TOKEN, "admin", &err), 0);
                assert_int_equal(
                    run(out,
                        sizeof(out),
                        "kubectl --kubeconfig %s --request-timeout 20s get --raw /hello 2>&1",
                        kubeconfig),
                    0);
                assert_string_equal(out, "{\"hello\":\"tls\"}");
                assert_int_equal(kubeconfig_write(kubeconfig, url, ca, TOKEN "x", "admin", &err),
                                 0);
                assert_int_not_equal(
                    run(out,
                        sizeof(out),
                        "kubectl --kubeconfig %s --request-timeout 20s get --raw /hello 2>&1",
                        kubeconfig),
                    0);
                if (!strstr(out, "You must be logged in"))
                        fail_msg("kubectl said: %s", out);
        } else {
                print_message("kubectl is missing: skipping its check\n");
        }
        MHD_stop_daemon(daemon);
}

/* The server's priority string parses, and allows nothing below TLS 1.2. */
static void priority(void **state)
{
        gnutls_priority_t prio;
        const char *bad = NULL;
        const unsigned int *list;
        int n;

        (void)state;
        assert_int_equal(gnutls_priority_init(&prio, TLS_PRIORITY, &bad), 0);
        n = gnutls_priority_protocol_list(prio, &list);
        assert_true(n > 0);
        for (int i = 0; i < n; i++)
                assert_true(list[i] == GNUTLS_TLS1_2 || list[i] == GNUTLS_TLS1_3);
        gnutls_priority_deinit(prio);
}

static const char *member(json_t *array, const char *field)
{
        json_t *item = json_array_get(array, 0), *value;

        assert_non_null(item);
        value = json_object_get(item, field);
        assert_non_null(value);
        return json_string_value(value);
}

/* Whether the certificate (PEM) is valid for host, an IP literal or a name. */
static bool valid_for(const char *pem, const char *host)
{
        gnutls_datum_t d = {.data = (unsigned char *)pem, .size = (unsigned)strlen(pem)};
        gnutls_x509_crt_t crt;
        bool ok;

        assert_int_equal(gnutls_x509_crt_init(&crt), 0);
        assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
        ok = gnutls_x509_crt_check_hostname(crt, host) != 0;
        gnutls_x509_crt_deinit(crt);
        return ok;
}

/* The pods' way to the server (docs/networking.md, "The API from pods"): the generated
 * certificate names the kubernetes Service's ClusterIP of the range and its names. */
static void service_address(void **state)
{
        struct tmpdir *f = *state;
        struct xp_server_options options = {.data_dir = f->dir, .tls = XP_SERVER_TLS_GENERATE};
        struct xp_error err = {0};
        char *cert = NULL, *key = NULL, *ca = NULL, path[160];

        assert_int_equal(setup_tls(&options, "127.0.0.1", &cert, &key, &ca, &err), 0);
        assert_true(valid_for(cert, "10.96.0.1"));
        assert_true(valid_for(cert, "kubernetes.default.svc"));
        assert_true(valid_for(cert, "kubernetes.default.svc.cluster.local"));
        assert_true(valid_for(cert, "kubernetes"));
        assert_false(valid_for(cert, "10.96.0.2"));
        free(cert);
        free(key);
        free(ca);
        /* another range: a new certificate with its first address */
        options.service_cluster_ip_range = "10.100.0.0/16";
        assert_int_equal(setup_tls(&options, "127.0.0.1", &cert, &key, &ca, &err), 0);
        assert_true(valid_for(cert, "10.100.0.1"));
        assert_false(valid_for(cert, "10.96.0.1"));
        free(cert);
        free(key);
        free(ca);
        /* a range that is none: said, and the certificate left as it was */
        options.service_cluster_ip_range = "10.100.0.0/33";
        assert_true(setup_tls(&options, "127.0.0.1", &cert, &key, &ca, &err) < 0);
        assert_non_null(strstr(err.msg, "--service-cluster-ip-range '10.100.0.0/33'"));
        snprintf(path, sizeof(path), "%s/pki/server.crt", f->dir);
        cert = read_text(path);
        assert_true(valid_for(cert, "10.100.0.1"));
        free(cert);
}

static void kubeconfig_content(void **state)
{
        struct tmpdir *f = *state;
        char path[160], link[160], text[8192];
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        size_t n = 0, len;
        json_t *root, *cluster;
        FILE *file;
        mode_t old;
        static const struct {
                const char *in, *out;
        } vectors[] = {
            /* RFC 4648 section 10 */
            {"f", "Zg=="},
            {"fo", "Zm8="},
            {"foo", "Zm9v"},
            {"foob", "Zm9vYg=="},
            {"fooba", "Zm9vYmE="},
            {"foobar", "Zm9vYmFy"},
        };

        snprintf(path, sizeof(path), "%s/config", f->dir);
        for (size_t i = 0; i < XP_ELEMENTSOF(vectors); i++) {
                old = umask(0);
                assert_int_equal(kubeconfig_write(path,
                                                  "https://10.0.0.1:6443",
                                                  vectors[i].in,
                                                  "tok",
                                                  "system:admin:admin",
                                                  &err),
                                 0);
                umask(old);
                assert_int_equal(mode_of(path), 0600);
                file = fopen(path, "re");
                assert_non_null(file);
                len = fread(text, 1, sizeof(text), file);
                fclose(file);
                assert_int_equal(xp_yaml_load(text, len, path, &docs, &n, &err), 0);
                assert_int_equal(n, 1);
                root = docs[0].root;
                assert_string_equal(json_string_value(json_object_get(root, "apiVersion")), "v1");
                assert_string_equal(json_string_value(json_object_get(root, "kind")), "Config");
                assert_string_equal(json_string_value(json_object_get(root, "current-context")),
                                    "xpool");
                assert_string_equal(member(json_object_get(root, "clusters"), "name"), "xpool");
                cluster = json_object_get(json_array_get(json_object_get(root, "clusters"), 0),
                                          "cluster");
                assert_string_equal(json_string_value(json_object_get(cluster, "server")),
                                    "https://10.0.0.1:6443");
                assert_string_equal(
                    json_string_value(json_object_get(cluster, "certificate-authority-data")),
                    vectors[i].out);
                assert_string_equal(member(json_object_get(root, "users"), "name"),
                                    "system:admin:admin");
                assert_string_equal(
                    json_string_value(json_object_get(
                        json_object_get(json_array_get(json_object_get(root, "users"), 0), "user"),
                        "token")),
                    "tok");
                {
                        json_t *context = json_object_get(
                            json_array_get(json_object_get(root, "contexts"), 0), "context");

                        assert_string_equal(member(json_object_get(root, "contexts"), "name"),
                                            "xpool");
                        assert_string_equal(json_string_value(json_object_get(context, "cluster")),
                                            "xpool");
                        assert_string_equal(json_string_value(json_object_get(context, "user")),
                                            "system:admin:admin");
                        assert_string_equal(
                            json_string_value(json_object_get(context, "namespace")), "default");
                }
                xp_yaml_documents_free(docs, n);
        }

        /* plain http: no CA data; an existing looser file is tightened */
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(kubeconfig_write(path, "http://127.0.0.1:6443", NULL, "tok", "u", &err),
                         0);
        assert_int_equal(mode_of(path), 0600);
        file = fopen(path, "re");
        assert_non_null(file);
        len = fread(text, 1, sizeof(text) - 1, file);
        fclose(file);
        text[len] = '\0';
        assert_null(strstr(text, "certificate-authority-data"));
        assert_non_null(strstr(text, "server: http://127.0.0.1:6443"));

        /* a symbolic link is refused and its target untouched */
        snprintf(link, sizeof(link), "%s/link", f->dir);
        assert_int_equal(symlink(path, link), 0);
        assert_int_equal(kubeconfig_write(link, "https://x", NULL, "other", "u", &err), -ELOOP);
        assert_non_null(strstr(err.msg, "link' is a symbolic link"));
        file = fopen(path, "re");
        assert_non_null(file);
        assert_int_equal(fread(text, 1, sizeof(text) - 1, file), len);
        fclose(file);
        assert_int_equal(kubeconfig_write(path, "", NULL, "tok", "u", &err), -EINVAL);
        assert_int_equal(kubeconfig_write(path, "https://x", NULL, "", "u", &err), -EINVAL);
}

/* The kubelet-serving CA beside the cluster CA: its own pair, made once, and the API server's
 * certificate does not verify with it (nor an agent's with the cluster CA: test_servingcert). */
static void kubelet_ca_apart(void **state)
{
        struct tmpdir *f = *state;
        struct xp_error err = {0};
        _cleanup_free_ char *ca = NULL, *kubelet = NULL, *again = NULL;
        char out[4096], cmd[512];

        assert_int_equal(tls_ensure(f->path, NULL, 0, &err), 0);
        /* a data directory made before it: the next start adds it */
        assert_int_equal(access(path_in(f, "kubelet-ca.crt"), F_OK), -1);
        assert_int_equal(tls_ensure_kubelet_ca(f->path, &err), 0);
        assert_int_equal(mode_of(path_in(f, "kubelet-ca.key")), 0600);
        assert_int_equal(
            tls_check_pair(path_in(f, "kubelet-ca.crt"), path_in(f, "kubelet-ca.key"), &err), 0);
        ca = read_text(path_in(f, "ca.crt"));
        kubelet = read_text(path_in(f, "kubelet-ca.crt"));
        assert_string_not_equal(ca, kubelet);
        assert_int_equal(tls_ensure_kubelet_ca(f->path, &err), 0);
        again = read_text(path_in(f, "kubelet-ca.crt"));
        assert_string_equal(kubelet, again); /* kept */
        /* half of it is never silently replaced */
        assert_int_equal(unlink(path_in(f, "kubelet-ca.key")), 0);
        assert_int_equal(tls_ensure_kubelet_ca(f->path, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "kubelet-ca.crt' exists without"));
        if (!have("openssl"))
                return;
        snprintf(cmd,
                 sizeof cmd,
                 "openssl verify -CAfile %s %s 2>&1",
                 path_in(f, "kubelet-ca.crt"),
                 path_in(f, "server.crt"));
        assert_int_not_equal(run(out, sizeof(out), "%s", cmd), 0);
        assert_null(strstr(out, ": OK"));
        assert_int_equal(run(out,
                             sizeof(out),
                             "openssl x509 -noout -subject -in %s",
                             path_in(f, "kubelet-ca.crt")),
                         0);
        assert_non_null(strstr(out, "xpool kubelet-serving CA"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(creates_and_verifies, setup, teardown),
            cmocka_unit_test_setup_teardown(reuses_and_regenerates, setup, teardown),
            cmocka_unit_test_setup_teardown(refuses_damage, setup, teardown),
            cmocka_unit_test_setup_teardown(kubelet_ca_apart, setup, teardown),
            cmocka_unit_test_setup_teardown(handshake, setup, teardown),
            cmocka_unit_test(priority),
            cmocka_unit_test_setup_teardown(kubeconfig_content, setup, teardown),
            cmocka_unit_test_setup_teardown(service_address, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
