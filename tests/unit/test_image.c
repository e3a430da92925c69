/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The image store's pure parts: references (a table of what Docker accepts and refuses),
 * pull policy defaults, platforms, manifests and indexes, configs, digests, the registries file,
 * credentials and challenges.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/image_internal.h"

static void references(void **state)
{
        static const struct {
                const char *text, *domain, *path, *tag, *digest;
        } ok[] = {
            {"busybox", "docker.io", "library/busybox", "latest", NULL},
            {"busybox:1.36", "docker.io", "library/busybox", "1.36", NULL},
            {"user/app", "docker.io", "user/app", "latest", NULL},
            {"docker.io/busybox", "docker.io", "library/busybox", "latest", NULL},
            {"index.docker.io/library/busybox:x", "docker.io", "library/busybox", "x", NULL},
            {"registry.example:5000/team/app:v1", "registry.example:5000", "team/app", "v1", NULL},
            {"localhost/app", "localhost", "app", "latest", NULL},
            {"localhost:5000/a/b/c", "localhost:5000", "a/b/c", "latest", NULL},
            {"127.0.0.1:5000/app:1", "127.0.0.1:5000", "app", "1", NULL},
            {"[::1]:5000/app", "[::1]:5000", "app", "latest", NULL},
            {"Registry/app", "Registry", "app", "latest", NULL},
            {"a__b/c-d_e.f--g:T_1.x-y", "docker.io", "a__b/c-d_e.f--g", "T_1.x-y", NULL},
            {"app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
             "docker.io",
             "library/app",
             NULL,
             "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
            {"host:1/app:t@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
             "host:1",
             "app",
             "t",
             "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
        };
        static const char *const bad[] = {
            "",
            "UPPER",
            "app:",
            ":tag",
            "app:-tag",
            "app:.tag",
            "a//b",
            "a/",
            "/a",
            "a..b",
            "a_-b",
            "app@sha256:abc",
            "app@md5:0123456789abcdef0123456789abcdef",
            "app@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
            "host:99999/app",
            "-host.x/app",
            "app with space",
            "app\t",
            "[::1/app",
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(ok); i++) {
                struct xp_image_ref ref;
                struct xp_error err = {0};

                if (xp_image_ref_parse(ok[i].text, &ref, &err) < 0)
                        fail_msg("%s: %s", ok[i].text, err.msg);
                assert_string_equal(ref.domain, ok[i].domain);
                assert_string_equal(ref.path, ok[i].path);
                if (ok[i].tag)
                        assert_string_equal(ref.tag, ok[i].tag);
                else
                        assert_null(ref.tag);
                if (ok[i].digest)
                        assert_string_equal(ref.digest, ok[i].digest);
                else
                        assert_null(ref.digest);
                xp_image_ref_done(&ref);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                struct xp_image_ref ref = {0};
                struct xp_error err = {0};

                if (xp_image_ref_parse(bad[i], &ref, &err) != -EINVAL)
                        fail_msg("\"%s\" was taken", bad[i]);
                assert_non_null(strstr(err.msg, bad[i][0] ? "image" : "empty"));
                assert_null(ref.domain);
        }
}

static void format_and_policy(void **state)
{
        struct xp_image_ref ref;
        char *s;

        (void)state;
        assert_int_equal(xp_image_ref_parse("busybox", &ref, NULL), 0);
        s = xp_image_ref_format(&ref);
        assert_string_equal(s, "docker.io/library/busybox:latest");
        free(s);
        s = xp_image_ref_repository(&ref);
        assert_string_equal(s, "docker.io/library/busybox");
        free(s);
        xp_image_ref_done(&ref);
        assert_string_equal(xp_image_default_pull_policy("busybox"), "Always");
        assert_string_equal(xp_image_default_pull_policy("busybox:latest"), "Always");
        assert_string_equal(xp_image_default_pull_policy("busybox:1.36"), "IfNotPresent");
        assert_string_equal(
            xp_image_default_pull_policy(
                "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
            "IfNotPresent");
        assert_string_equal(xp_image_default_pull_policy("NOT VALID"), "IfNotPresent");
}

#define D(c)                                                                                       \
        "sha256:" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c  \
            c c c c c c c c c c c c c c c c c c c c c c c c

static void platforms(void **state)
{
        static const char index[] =
            "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
            "\"manifests\":["
            "{\"digest\":\"" D(
                "a") "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v6\"}},"
                     "{\"digest\":\"" D(
                         "b") "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
                              "{\"digest\":\"" D(
                                  "c") "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}},"
                                       "{\"digest\":\"" D(
                                           "d") "\",\"size\":10,\"platform\":{\"os\":\"unknown\",\"architecture\":\"unknown\"}},"
                                                "{\"digest\":\"" D(
                                                    "e") "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\"}}]}";
        struct xp_image_manifest m;
        struct xp_image_platform p;
        struct xp_error err = {0};
        size_t i = 99;

        (void)state;
        assert_int_equal(xp_image_manifest_parse(index, strlen(index), NULL, &m, &err), 0);
        assert_true(m.index);
        assert_int_equal(xp_image_platform_parse("linux/amd64", &p, NULL), 0);
        assert_int_equal(xp_image_platform_select(&m, &p, &i, NULL), 0);
        assert_int_equal(i, 2);
        assert_int_equal(xp_image_platform_parse("linux/aarch64", &p, NULL), 0);
        assert_string_equal(p.architecture, "arm64");
        assert_int_equal(xp_image_platform_select(&m, &p, &i, NULL), 0);
        assert_int_equal(i, 1);
        assert_int_equal(xp_image_platform_parse("linux/arm/v7", &p, NULL), 0);
        assert_int_equal(xp_image_platform_select(&m, &p, &i, NULL), 0);
        assert_int_equal(i, 4);
        /* v8 of arm runs the closest lower variant */
        assert_int_equal(xp_image_platform_parse("linux/arm/v8", &p, NULL), 0);
        assert_int_equal(xp_image_platform_select(&m, &p, &i, NULL), 0);
        assert_int_equal(i, 4);
        assert_int_equal(xp_image_platform_parse("linux/s390x", &p, NULL), 0);
        assert_int_equal(xp_image_platform_select(&m, &p, &i, &err), -ENOEXEC);
        assert_non_null(strstr(
            err.msg,
            "no image for linux/s390x in the index (it has: linux/arm/v6, linux/arm64/v8, linux/amd64"));
        assert_int_equal(xp_image_platform_parse("linux", &p, NULL), -EINVAL);
        assert_int_equal(xp_image_platform_parse("Linux/AMD64", &p, NULL), -EINVAL);
        assert_int_equal(xp_image_platform_parse("linux/amd64/v2/x", &p, NULL), -EINVAL);
        xp_image_manifest_done(&m);
        assert_non_null(strchr(xp_image_platform_host(), '/'));
}

static void manifests(void **state)
{
        static const char good[] =
            "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
            "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":\"" D(
                "1") "\",\"size\":7},"
                     "\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":\"" D(
                         "2") "\",\"size\":9},"
                              "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" D(
                                  "3") "\",\"size\":0}]}";
        static const struct {
                const char *text, *error;
        } bad[] = {
            {"[", "not JSON"},
            {"[]", "not a JSON object"},
            {"{\"schemaVersion\":1}", "schema 1"},
            {"{\"schemaVersion\":3}", "schemaVersion: must be 2"},
            {"{\"schemaVersion\":2}", "neither a manifest"},
            {"{\"schemaVersion\":2,\"mediaType\":\"text/html\"}",
             "text/html is not an image manifest"},
            {"{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:1\",\"size\":1},\"layers\":[]}",
             "config.digest: must be sha256"},
            {"{\"schemaVersion\":2,\"config\":{\"digest\":\"" D(
                 "1") "\",\"size\":-1},\"layers\":[]}",
             "config.size: must be a non-negative integer"},
            {"{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.cncf.helm.config.v1+json\",\"digest\":\"" D(
                 "1") "\",\"size\":1},\"layers\":[]}",
             "not a container image config"},
            {"{\"schemaVersion\":2,\"config\":{\"digest\":\"" D(
                 "1") "\",\"size\":1},\"layers\":{}}",
             "layers: must be an array"},
            {"{\"schemaVersion\":2,\"config\":{\"digest\":\"" D(
                 "1") "\",\"size\":1},\"layers\":[{\"mediaType\":\"application/x-evil\",\"digest\":\"" D("2") "\",\"size\":1}]}",
             "layers[0].mediaType: application/x-evil is not a filesystem layer"},
            {"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" D(
                 "2") "\",\"size\":1,\"platform\":[]}]}",
             "manifests[0].platform: must be an object"},
            {"{\"schemaVersion\":2,\"schemaVersion\":2}", "duplicate"},
        };
        struct xp_image_manifest m;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_image_manifest_parse(good, strlen(good), NULL, &m, &err), 0);
        assert_false(m.index);
        assert_int_equal(m.n_layers, 2);
        assert_string_equal(m.config.digest, D("1"));
        assert_int_equal(m.layers[0].size, 9);
        xp_image_manifest_done(&m);
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                xp_error_clear(&err);
                if (xp_image_manifest_parse(bad[i].text, strlen(bad[i].text), NULL, &m, &err) !=
                    -EBADMSG)
                        fail_msg("%s was taken", bad[i].text);
                if (!strstr(err.msg, bad[i].error))
                        fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].error);
        }
        assert_true(xp_image_media_is_manifest(XP_MT_DOCKER_LIST));
        assert_false(xp_image_media_is_manifest("application/json"));
}

static void configs(void **state)
{
        static const char good[] =
            "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Entrypoint\":[\"/bin/ep\"],"
            "\"Cmd\":[\"a\",\"b\"],\"Env\":[\"A=1\",\"PATH=/bin\"],\"WorkingDir\":\"/w\",\"User\":\"1000:1000\","
            "\"ExposedPorts\":{\"80/tcp\":{}},\"Volumes\":{\"/data\":{}},\"Labels\":{\"k\":\"v\"},\"StopSignal\":\"SIGINT\"},"
            "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D("4") "\"]}}";
        static const struct {
                const char *text, *error;
        } bad[] = {
            {"{\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"x\"]}}", "rootfs.diff_ids[0]"},
            {"{\"rootfs\":{\"type\":\"tar\",\"diff_ids\":[]}}", "rootfs.type"},
            {"{\"config\":{\"Env\":[\"NOEQUALS\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
             "config.Env[0]"},
            {"{\"config\":{\"Cmd\":\"sh\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
             "config.Cmd: must be an array"},
            {"{\"config\":{\"Cmd\":[1]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
             "config.Cmd[0]"},
            {"{\"config\":{\"WorkingDir\":\"rel\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
             "not an absolute path"},
            {"{\"config\":{\"Labels\":{\"a\":1}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
             "config.Labels.a"},
            {"{\"os\":5,\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}", "os: must be a string"},
        };
        struct xp_image_config c;
        struct xp_image_platform p;
        struct xp_error err = {0};
        char **ids = NULL;
        size_t n = 0;

        (void)state;
        assert_int_equal(xp_image_config_parse(good, strlen(good), &c, &ids, &n, &err), 0);
        assert_string_equal(c.entrypoint[0], "/bin/ep");
        assert_null(c.entrypoint[1]);
        assert_string_equal(c.cmd[1], "b");
        assert_string_equal(c.env[1], "PATH=/bin");
        assert_string_equal(c.working_dir, "/w");
        assert_string_equal(c.user, "1000:1000");
        assert_string_equal(c.exposed_ports[0], "80/tcp");
        assert_string_equal(c.volumes[0], "/data");
        assert_string_equal(c.labels[0], "k=v");
        assert_string_equal(c.stop_signal, "SIGINT");
        assert_int_equal(n, 1);
        assert_string_equal(ids[0], D("4"));
        assert_int_equal(xp_image_platform_parse("linux/amd64", &p, NULL), 0);
        assert_int_equal(xp_image_platform_check(&c, &p, NULL), 0);
        assert_int_equal(xp_image_platform_parse("linux/arm64", &p, NULL), 0);
        assert_int_equal(xp_image_platform_check(&c, &p, &err), -ENOEXEC);
        assert_non_null(strstr(err.msg, "the image is for linux/amd64, this node is linux/arm64"));
        xp_image_strv_free(ids);
        xp_image_config_done(&c);
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                xp_error_clear(&err);
                if (xp_image_config_parse(bad[i].text, strlen(bad[i].text), &c, &ids, &n, &err) !=
                    -EBADMSG)
                        fail_msg("%s was taken", bad[i].text);
                if (!strstr(err.msg, bad[i].error))
                        fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].error);
        }
}

static void digests(void **state)
{
        struct xp_error err = {0};
        char d[XP_IMAGE_DIGEST_BUFSIZE];

        (void)state;
        assert_int_equal(xp_sha256_digest("", 0, d), 0);
        assert_string_equal(
            d, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_int_equal(xp_image_digest_check("", 0, d, "the blob", NULL), 0);
        assert_int_equal(xp_image_digest_check("x", 1, d, "layer 2", &err), -EILSEQ);
        assert_non_null(strstr(err.msg, "layer 2 does not match its digest: expected sha256:e3b0"));
        assert_true(xp_image_digest_ok(d));
        d[10] = 'G';
        assert_false(xp_image_digest_ok(d));
}

static void registries_file(void **state)
{
        static const char good[] =
            "mirrors:\n"
            "  docker.io:\n"
            "    endpoint: [\"https://mirror.example:5000/\", \"http://127.0.0.1:5001\"]\n"
            "configs:\n"
            "  \"127.0.0.1:5000\":\n"
            "    plain_http: true\n"
            "    untrusted: true\n"
            "    tls: {ca_file: /etc/ca.crt}\n"
            "    auth: {username: u, password: p}\n"
            "  \"*\": {untrusted: true}\n"
            "timeouts: {connect: 500ms, stall: 1m}\n";
        static const struct {
                const char *text, *error;
        } bad[] = {
            {"mirrors: [1]\n", "r:1:10: mirrors: must be a mapping"},
            {"configs:\n  h:\n    plain_http: yes\n",
             "r:3:17: configs.\"h\": must be true or false"},
            {"configs:\n  h:\n    tls:\n      cafile: x\n",
             "r:4:7: configs.\"h\": unknown key \"cafile\""},
            {"mirrors:\n  h: {endpoint: [\"ftp://x\"]}\n",
             "r:2:18: mirrors.\"h\": must be an http:// or https:// URL"},
            {"timeouts: {stall: forever}\n", "timeouts.stall: must be a duration"},
            {"mirror: {}\n", "unknown key \"mirror\""},
            {"a: 1\n---\nb: 2\n", "one YAML document"},
        };
        const struct xp_regconf_host *h;
        struct xp_regconf *c = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_regconf_parse(good, strlen(good), "r", &c, &err) < 0)
                fail_msg("%s", err.msg);
        h = xp_regconf_find(c, "docker.io");
        assert_non_null(h);
        assert_string_equal(h->mirrors[0], "https://mirror.example:5000");
        assert_string_equal(h->mirrors[1], "http://127.0.0.1:5001");
        h = xp_regconf_find(c, "127.0.0.1:5000");
        assert_true(h->plain_http && h->untrusted);
        assert_string_equal(h->ca_file, "/etc/ca.crt");
        assert_string_equal(h->username, "u");
        h = xp_regconf_find(c, "other.example");
        assert_string_equal(h->host, "*");
        assert_int_equal(c->connect_ms, 500);
        assert_int_equal(c->stall_ms, 60000);
        xp_regconf_free(c);
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                xp_error_clear(&err);
                c = NULL;
                if (xp_regconf_parse(bad[i].text, strlen(bad[i].text), "r", &c, &err) != -EINVAL)
                        fail_msg("%s was taken", bad[i].text);
                if (!strstr(err.msg, bad[i].error))
                        fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].error);
                assert_null(c);
        }
}

static void credentials(void **state)
{
        /* "dXNlcjpwYXNz" is user:pass, "dGVhbTpzZWNyZXQ=" team:secret */
        static const char config[] = "{\"auths\":{"
                                     "\"https://index.docker.io/v1/\":{\"auth\":\"dXNlcjpwYXNz\"},"
                                     "\"reg.example:5000\":{\"username\":\"u\",\"password\":\"p\"},"
                                     "\"reg.example:5000/team\":{\"auth\":\"dGVhbTpzZWNyZXQ=\"},"
                                     "\"bad.example\":{\"auth\":\"!!\"}}}";
        static const char dockercfg[] = "{\"old.example\":{\"auth\":\"dXNlcjpwYXNz\"}}";
        struct xp_image_cred c = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            xp_image_auth_lookup(config, strlen(config), "docker.io", "library/busybox", &c, NULL),
            1);
        assert_string_equal(c.username, "user");
        assert_string_equal(c.password, "pass");
        xp_image_cred_done(&c);
        assert_int_equal(
            xp_image_auth_lookup(config, strlen(config), "reg.example:5000", "app", &c, NULL), 1);
        assert_string_equal(c.username, "u");
        xp_image_cred_done(&c);
        /* the longest path prefix wins */
        assert_int_equal(
            xp_image_auth_lookup(config, strlen(config), "reg.example:5000", "team/app", &c, NULL),
            1);
        assert_string_equal(c.username, "team");
        xp_image_cred_done(&c);
        /* a host is not a prefix of another host */
        assert_int_equal(
            xp_image_auth_lookup(config, strlen(config), "reg.example:50001", "x", &c, NULL), 0);
        assert_int_equal(xp_image_auth_lookup(config, strlen(config), "bad.example", "x", &c, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "auths.\"bad.example\".auth: not base64 of user:password"));
        assert_int_equal(
            xp_image_auth_lookup(dockercfg, strlen(dockercfg), "old.example", "x", &c, NULL), 1);
        xp_image_cred_done(&c);
        assert_int_equal(xp_image_auth_lookup("[", 1, "x", "y", &c, &err), -EINVAL);
}

static void challenges(void **state)
{
        struct xp_image_challenge ch;

        (void)state;
        assert_int_equal(
            xp_image_challenge_parse(
                "Bearer realm=\"https://auth.example/token\",service=\"registry.example\",scope=\"repository:a/b:pull\"",
                &ch),
            0);
        assert_string_equal(ch.scheme, "Bearer");
        assert_string_equal(ch.realm, "https://auth.example/token");
        assert_string_equal(ch.service, "registry.example");
        assert_string_equal(ch.scope, "repository:a/b:pull");
        xp_image_challenge_done(&ch);
        assert_int_equal(
            xp_image_challenge_parse("Basic realm=\"a \\\"quoted\\\" realm\", junk, x=y", &ch), 0);
        assert_string_equal(ch.scheme, "Basic");
        assert_string_equal(ch.realm, "a \"quoted\" realm");
        assert_null(ch.service);
        xp_image_challenge_done(&ch);
        assert_int_equal(xp_image_challenge_parse("   ", &ch), -EINVAL);
}

/* The imageID a container's status gives: the kubelet's choice among the image's names. */
#define HEX64(c) c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c
static void status_ids(void **state)
{
        char a[] = "docker.io/library/busybox:1.36";
        char b[] = "docker.io/library/busybox@sha256:" HEX64("11");
        char m[] = "registry.example:5000/mirror/busybox@sha256:" HEX64("22");
        char config[] = "sha256:" HEX64("33");
        char *pulled[] = {a, b, m, NULL}, *imported[] = {a, NULL}, *none[] = {NULL};
        struct xp_image img = {.id = config, .names = pulled};
        char *id;

        (void)state;
        /* the repository the container names, as written or short */
        id = xp_image_status_id(&img, "busybox:1.36");
        assert_string_equal(id, b);
        free(id);
        id = xp_image_status_id(&img, "registry.example:5000/mirror/busybox:1.36");
        assert_string_equal(id, m);
        free(id);
        /* another repository's name, or none parsable: the first repo@digest */
        id = xp_image_status_id(&img, "other/app:1");
        assert_string_equal(id, b);
        free(id);
        id = xp_image_status_id(&img, "Not A Reference");
        assert_string_equal(id, b);
        free(id);
        /* imported without a repository digest, or known by its ID only: the ID */
        img.names = imported;
        id = xp_image_status_id(&img, "busybox:1.36");
        assert_string_equal(id, img.id);
        free(id);
        img.names = none;
        id = xp_image_status_id(&img, img.id);
        assert_string_equal(id, img.id);
        free(id);
}

static void expect_ref(const struct xp_image *img, const char *reference, const char *want)
{
        char *got = xp_image_status_ref(img, reference);

        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
}

/* The image a container's status gives: the reference as containerd resolved it. */
static void status_refs(void **state)
{
        char latest[] = "docker.io/library/busybox:latest";
        char tagged[] = "docker.io/library/busybox:1.36";
        char local[] = "127.0.0.1:5000/x/y:1";
        char digest[] = "docker.io/library/busybox@sha256:" HEX64("11");
        char imported[] = "localhost/tools:1";
        char config[] = "sha256:" HEX64("33");
        char *pulled[] = {digest, latest, tagged, NULL}, *registry[] = {local, NULL};
        char *by_digest[] = {digest, NULL}, *store[] = {imported, NULL};
        struct xp_image img = {.id = config, .names = pulled};

        (void)state;
        /* short names fully qualified, with the default tag */
        expect_ref(&img, "busybox", latest);
        expect_ref(&img, "busybox:1.36", tagged);
        expect_ref(&img, "docker.io/library/busybox:latest", latest);
        expect_ref(&img, "index.docker.io/library/busybox:1.36", tagged);
        /* a digest reference of an image that has tags: its first tag, as containerd */
        expect_ref(&img, "busybox@sha256:" HEX64("11"), latest);
        /* a registry's reference stays as it is */
        img.names = registry;
        expect_ref(&img, "127.0.0.1:5000/x/y:1", local);
        /* an untagged pull by digest: repo@digest */
        img.names = by_digest;
        expect_ref(&img, "busybox@sha256:" HEX64("11"), digest);
        /* an image the store knows by another name: that name */
        img.names = store;
        expect_ref(&img, "tools:1", imported);
        expect_ref(&img, "localhost/tools:1", imported);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(references),
            cmocka_unit_test(format_and_policy),
            cmocka_unit_test(platforms),
            cmocka_unit_test(manifests),
            cmocka_unit_test(configs),
            cmocka_unit_test(digests),
            cmocka_unit_test(registries_file),
            cmocka_unit_test(credentials),
            cmocka_unit_test(challenges),
            cmocka_unit_test(status_ids),
            cmocka_unit_test(status_refs),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
