/* SPDX-License-Identifier: Apache-2.0 */
/* configMap, secret and projected volumes as files (src/agent/podconfig_volumes.c) and the
 * kubelet's atomic layout on disk (src/agent/podconfig_write.c). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent_internal.h"
#include "agent/podconfig.h"
#include "xpool/codec.h"
#include "xpool/runtime.h"

static json_t *objects; /* the server's: "resource/name" -> object */

static int fake_get(const char *resource,
                    const char *ns,
                    const char *name,
                    json_t **ret,
                    void *userdata,
                    struct xp_error *err)
{
        char key[256];
        json_t *o;

        (void)err;
        (void)userdata;
        assert_string_equal(ns, "team");
        snprintf(key, sizeof(key), "%s/%s", resource, name);
        o = json_object_get(objects, key);
        if (!o)
                return -ENOENT;
        *ret = json_incref(o);
        return 0;
}

static int setup(void **state)
{
        (void)state;
        objects = json_loads("{\"configmaps/app\":{\"data\":{\"mode\":\"fast\",\"level\":\"3\"},"
                             "\"binaryData\":{\"blob\":\"AAE=\"}},"
                             "\"secrets/db\":{\"data\":{\"password\":\"czNjcjN0\"}}}",
                             0,
                             NULL);
        assert_non_null(objects);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        json_decref(objects);
        return 0;
}

/* r of the volume (JSON), its files in *f, its wait message in *wait, its error in err. */
static int
files_of(const char *vol_json, struct xp_podconfig_files *f, char **wait, struct xp_error *err)
{
        json_t *vol = json_loads(vol_json, 0, NULL);
        struct xp_podconfig_reader reader = {.get = fake_get, .ns = "team"};
        int r;

        assert_non_null(vol);
        r = xp_podconfig_volume_files(vol, &reader, f, wait, err);
        json_decref(reader.seen);
        json_decref(vol);
        return r;
}

static const struct xp_podconfig_file *file(const struct xp_podconfig_files *f, const char *path)
{
        for (size_t i = 0; i < f->n; i++)
                if (strcmp(f->v[i].path, path) == 0)
                        return &f->v[i];
        return NULL;
}

static void config_map_every_key(void **state)
{
        struct xp_podconfig_files f = {0};
        struct xp_error err = {0};
        char *wait = NULL;

        (void)state;
        assert_int_equal(
            files_of("{\"name\":\"cfg\",\"configMap\":{\"name\":\"app\"}}", &f, &wait, &err), 1);
        assert_int_equal(f.n, 3);
        assert_string_equal(file(&f, "mode")->data, "fast");
        assert_int_equal(file(&f, "mode")->mode, 0644);
        assert_int_equal(file(&f, "blob")->len, 2); /* binaryData decoded */
        assert_memory_equal(file(&f, "blob")->data, "\0\1", 2);
        xp_podconfig_files_clear(&f);
}

static void items_and_modes(void **state)
{
        struct xp_podconfig_files f = {0};
        struct xp_error err = {0};
        char *wait = NULL;

        (void)state;
        assert_int_equal(
            files_of("{\"name\":\"s\",\"secret\":{\"secretName\":\"db\",\"defaultMode\":256,"
                     "\"items\":[{\"key\":\"password\",\"path\":\"conf/pw\",\"mode\":384}]}}",
                     &f,
                     &wait,
                     &err),
            1);
        assert_int_equal(f.n, 1);
        assert_string_equal(file(&f, "conf/pw")->data, "s3cr3t"); /* decoded */
        assert_int_equal(file(&f, "conf/pw")->mode, 0600);
        xp_podconfig_files_clear(&f);
        /* a missing key: the kubelet's words, unless optional */
        assert_int_equal(files_of("{\"name\":\"cfg\",\"configMap\":{\"name\":\"app\",\"items\":"
                                  "[{\"key\":\"nope\",\"path\":\"n\"}]}}",
                                  &f,
                                  &wait,
                                  &err),
                         0);
        assert_string_equal(wait,
                            "MountVolume.SetUp failed for volume \"cfg\" : configmap "
                            "references non-existent config key: nope");
        free(wait);
        assert_int_equal(f.n, 0);
        assert_int_equal(files_of("{\"name\":\"cfg\",\"configMap\":{\"name\":\"app\",\"optional\":"
                                  "true,\"items\":[{\"key\":\"nope\",\"path\":\"n\"},"
                                  "{\"key\":\"level\",\"path\":\"l\"}]}}",
                                  &f,
                                  &wait,
                                  &err),
                         1);
        assert_int_equal(f.n, 1);
        assert_string_equal(file(&f, "l")->data, "3");
        xp_podconfig_files_clear(&f);
}

static void missing_objects_wait(void **state)
{
        struct xp_podconfig_files f = {0};
        struct xp_error err = {0};
        char *wait = NULL;

        (void)state;
        assert_int_equal(
            files_of("{\"name\":\"cfg\",\"configMap\":{\"name\":\"gone\"}}", &f, &wait, &err), 0);
        assert_string_equal(
            wait, "MountVolume.SetUp failed for volume \"cfg\" : configmap \"gone\" not found");
        free(wait);
        assert_int_equal(
            files_of("{\"name\":\"s\",\"secret\":{\"secretName\":\"gone\"}}", &f, &wait, &err), 0);
        assert_string_equal(
            wait, "MountVolume.SetUp failed for volume \"s\" : secret \"gone\" not found");
        free(wait);
        assert_int_equal(
            files_of("{\"name\":\"s\",\"secret\":{\"secretName\":\"gone\",\"optional\":true}}",
                     &f,
                     &wait,
                     &err),
            1);
        assert_int_equal(f.n, 0);
        assert_null(wait);
}

static void projected_sources(void **state)
{
        struct xp_podconfig_files f = {0};
        struct xp_error err = {0};
        char *wait = NULL;

        (void)state;
        assert_int_equal(
            files_of(
                "{\"name\":\"p\",\"projected\":{\"defaultMode\":288,\"sources\":["
                "{\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"mode\",\"path\":\"m\"}]}},"
                "{\"secret\":{\"name\":\"db\"}}]}}",
                &f,
                &wait,
                &err),
            1);
        assert_int_equal(f.n, 2);
        assert_string_equal(file(&f, "m")->data, "fast");
        assert_int_equal(file(&f, "m")->mode, 0440);
        assert_string_equal(file(&f, "password")->data, "s3cr3t");
        xp_podconfig_files_clear(&f);
        assert_int_equal(
            files_of(
                "{\"name\":\"p\",\"projected\":{\"sources\":[{\"secret\":{\"name\":\"gone\"}}]}}",
                &f,
                &wait,
                &err),
            0);
        assert_string_equal(
            wait, "MountVolume.SetUp failed for volume \"p\" : secret \"gone\" not found");
        free(wait);
        assert_int_equal(
            files_of("{\"name\":\"p\",\"projected\":{\"sources\":[{\"clusterTrustBundle\":{}}]}}",
                     &f,
                     &wait,
                     &err),
            -EPERM);
        assert_non_null(strstr(xp_error_message(&err),
                               "sources[0]: only configMap, secret, downwardAPI and "
                               "serviceAccountToken sources are supported by xpool"));
        /* a reader without a token source (not the agent's) */
        err = (struct xp_error){0};
        assert_int_equal(
            files_of(
                "{\"name\":\"p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}}]}}",
                &f,
                &wait,
                &err),
            -EPERM);
}

/* The token source of the tests: the audience and seconds it was asked for, as the token. */
static int fake_token(const json_t *pod,
                      const char *audience,
                      int64_t seconds,
                      void *userdata,
                      char **ret,
                      struct xp_error *err)
{
        (void)userdata;
        (void)err;
        return asprintf(
                   ret,
                   "%s|%s|%lld",
                   json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")),
                   audience ? audience : "-",
                   (long long)seconds) < 0
                   ? -ENOMEM
                   : 0;
}

static int token_files_of(const char *vol_json, struct xp_podconfig_files *f, struct xp_error *err)
{
        json_t *vol = json_loads(vol_json, 0, NULL),
               *pod = json_loads("{\"metadata\":{\"name\":\"web\"}}", 0, NULL);
        struct xp_podconfig_reader reader = {
            .get = fake_get, .ns = "team", .token = fake_token, .pod_json = pod};
        char *wait = NULL;
        int r;

        assert_non_null(vol);
        r = xp_podconfig_volume_files(vol, &reader, f, &wait, err);
        free(wait);
        json_decref(reader.seen);
        json_decref(vol);
        json_decref(pod);
        return r;
}

static void service_account_tokens(void **state)
{
        struct xp_podconfig_files f = {0};
        struct xp_error err = {0};

        (void)state;
        /* the kube-api-access volume's shape: token, CA, namespace */
        assert_int_equal(
            token_files_of(
                "{\"name\":\"kube-api-access\",\"projected\":{\"defaultMode\":420,\"sources\":["
                "{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
                "{\"serviceAccountToken\":{\"audience\":\"vault\",\"path\":\"v/t\"}}]}}",
                &f,
                &err),
            1);
        assert_string_equal(file(&f, "token")->data, "web|-|3607");
        assert_int_equal(file(&f, "token")->mode, 0644);
        assert_string_equal(file(&f, "v/t")->data, "web|vault|3600");
        xp_podconfig_files_clear(&f);
        assert_int_equal(
            token_files_of(
                "{\"name\":\"p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":599,\"path\":\"t\"}}]}}",
                &f,
                &err),
            -EINVAL);
        assert_string_equal(xp_error_message(&err),
                            "volume p: sources[0].serviceAccountToken.expirationSeconds: Invalid "
                            "value: 599: may not specify a duration less than 10 minutes");
        err = (struct xp_error){0};
        assert_int_equal(
            token_files_of(
                "{\"name\":\"p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{}}]}}",
                &f,
                &err),
            -EINVAL);
        assert_string_equal(xp_error_message(&err),
                            "volume p: sources[0].serviceAccountToken.path: Required value");
        err = (struct xp_error){0};
        assert_int_equal(
            token_files_of(
                "{\"name\":\"p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":\"../t\"}}]}}",
                &f,
                &err),
            -EINVAL);
}

/* The kubelet's renewal: past 80 % of the lifetime, or a day. */
static void token_renewal(void **state)
{
        (void)state;
        assert_true(xp_podconfig_token_fresh(1000, 1000 + 3600, 1000 + 2879));
        assert_false(xp_podconfig_token_fresh(1000, 1000 + 3600, 1000 + 2880));
        assert_false(xp_podconfig_token_fresh(1000, 1000 + 3600, 1000 + 4000));
        assert_true(xp_podconfig_token_fresh(1000, 1000 + 600, 1000 + 479));
        assert_false(xp_podconfig_token_fresh(1000, 1000 + 600, 1000 + 480));
        /* a year-long token is renewed daily */
        assert_false(xp_podconfig_token_fresh(0, 365 * 86400, 86400));
        assert_true(xp_podconfig_token_fresh(0, 365 * 86400, 86399));
}

/* A pod whose volumes are torn down leaves no token in the cache; other pods' stay, a uid that
 * begins with its uid too. */
static void tokens_of_a_torn_down_pod_are_dropped(void **state)
{
        struct xp_agent agent = {0};

        (void)state;
        pthread_mutex_init(&agent.sa_tokens_lock, NULL);
        xp_agent_tokens_forget(&agent, "u1"); /* no cache yet */
        agent.sa_tokens = json_pack("{s:{}, s:{}, s:{}, s:{}}",
                                    "u1/default//3607",
                                    "u1/builder/vault/600",
                                    "u10/default//3607",
                                    "u2/default//3607");
        assert_non_null(agent.sa_tokens);
        xp_agent_tokens_forget(&agent, "u1");
        assert_int_equal(json_object_size(agent.sa_tokens), 2);
        assert_non_null(json_object_get(agent.sa_tokens, "u10/default//3607"));
        assert_non_null(json_object_get(agent.sa_tokens, "u2/default//3607"));
        xp_agent_tokens_forget(&agent, "u3");
        assert_int_equal(json_object_size(agent.sa_tokens), 2);
        json_decref(agent.sa_tokens);
        pthread_mutex_destroy(&agent.sa_tokens_lock);
}

/* A pod's volumes go with it, whether empty (an unmounted tmpfs leaves its directory) or full
 * (a configMap volume on the node's disk); a pod with none has nothing to remove. */
static void volumes_removed(void **state)
{
        char dir[] = "/tmp/xp-podconfig-XXXXXX", path[PATH_MAX];
        struct xp_podconfig_file v[] = {{"a", "one", 3, 0640}, {"sub/b", "two", 3, 0600}};
        struct xp_podconfig_files files = {v, 2};
        struct xp_error err = {0};
        struct stat st;

        (void)state;
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/volumes", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(mkdir(strcat(path, "/u1"), 0755), 0);
        assert_int_equal(mkdir(strcat(path, "/empty"), 0755), 0);
        assert_int_equal(xp_podconfig_volumes_remove(dir, "u1"), 0);
        snprintf(path, sizeof(path), "%s/volumes/u1", dir);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);

        snprintf(path, sizeof(path), "%s/volumes/u2/cfg", dir);
        assert_int_equal(xp_podconfig_write_atomic(path, &files, &err), 0);
        assert_int_equal(xp_podconfig_volumes_remove(dir, "u2"), 0);
        snprintf(path, sizeof(path), "%s/volumes/u2", dir);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);

        assert_int_equal(xp_podconfig_volumes_remove(dir, "u3"), 0);
        assert_int_equal(xp_podconfig_volumes_remove(dir, "../u2"), -EINVAL);
        snprintf(path, sizeof(path), "%s/volumes", dir);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* On a node without mount namespaces only the admission's own token volume is left out. */
static void the_admission_volume_is_skipped_without_namespaces(void **state)
{
        json_t *sa = json_loads(
            "{\"name\":\"kube-api-access-x2b4z\",\"projected\":{\"sources\":[]}}", 0, NULL);
        json_t *own =
            json_loads("{\"name\":\"kube-api-access\",\"projected\":{\"sources\":[]}}", 0, NULL);
        json_t *other = json_loads("{\"name\":\"kube-api-access-x2b4z\",\"secret\":{}}", 0, NULL);
        json_t *at = json_loads(
            "{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}", 0, NULL);
        json_t *elsewhere = json_loads("{\"mountPath\":\"/token\"}", 0, NULL);
        unsigned all = XP_ISOLATION_NAMESPACES | XP_ISOLATION_CGROUPS;

        (void)state;
        assert_true(xp_podconfig_sa_volume_skipped(XP_ISOLATION_CGROUPS, sa, at));
        assert_false(xp_podconfig_sa_volume_skipped(all, sa, at));
        assert_false(xp_podconfig_sa_volume_skipped(XP_ISOLATION_CGROUPS, own, at));
        assert_false(xp_podconfig_sa_volume_skipped(XP_ISOLATION_CGROUPS, other, at));
        assert_false(xp_podconfig_sa_volume_skipped(XP_ISOLATION_CGROUPS, sa, elsewhere));
        json_decref(sa);
        json_decref(own);
        json_decref(other);
        json_decref(at);
        json_decref(elsewhere);
}

static void bad_input_is_refused(void **state)
{
        static const char *const bad[] = {
            "{\"name\":\"c\",\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"mode\",\"path\":\"../x\"}]}}",
            "{\"name\":\"c\",\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"mode\",\"path\":\"/x\"}]}}",
            "{\"name\":\"c\",\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"mode\",\"path\":\"a/../../x\"}]}}",
            "{\"name\":\"c\",\"configMap\":{\"name\":\"app\",\"defaultMode\":4096}}",
            ("{\"name\":\"c\",\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"mode\",\"path\":\"x\"},"
             "{\"key\":\"level\",\"path\":\"x\"}]}}"),
        };
        struct xp_podconfig_files f = {0};
        char *wait = NULL;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct xp_error err = {0};

                assert_int_equal(files_of(bad[i], &f, &wait, &err), -EINVAL);
                assert_non_null(strstr(xp_error_message(&err), "volume c: "));
                assert_int_equal(f.n, 0);
        }
}

static void read_at(const char *dir, const char *name, char *buf, size_t size)
{
        char path[PATH_MAX];
        FILE *fp;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fp = fopen(path, "r");
        assert_non_null(fp);
        n = fread(buf, 1, size - 1, fp);
        buf[n] = 0;
        fclose(fp);
}

static int versions(const char *dir)
{
        char cmd[PATH_MAX + 64], line[64];
        FILE *p;
        int n = -1;

        snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -c '^\\.\\.[0-9]'", dir);
        p = popen(cmd, "r");
        assert_non_null(p);
        if (fgets(line, sizeof(line), p))
                n = atoi(line);
        pclose(p);
        return n;
}

static void atomic_layout(void **state)
{
        char dir[] = "/tmp/xp-podconfig-XXXXXX", buf[PATH_MAX], path[PATH_MAX], path2[PATH_MAX];
        struct xp_podconfig_file v1[] = {{"a", "one", 3, 0640}, {"sub/b", "two", 3, 0600}},
                                 v2[] = {{"a", "uno", 3, 0644}, {"c", "tre", 3, 0644}};
        struct xp_podconfig_files f1 = {v1, 2}, f2 = {v2, 2};
        struct xp_error err = {0};
        struct stat st;
        ssize_t n;

        (void)state;
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/vol", dir);
        assert_int_equal(xp_podconfig_write_atomic(path, &f1, &err), 0);
        n = readlink(strcat(strcpy(buf, path), "/a"), buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_string_equal(buf, "..data/a");
        n = readlink(strcat(strcpy(buf, path), "/..data"), buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_true(strncmp(buf, "..20", 4) == 0); /* a timestamped version */
        read_at(path, "sub/b", buf, sizeof(buf));
        assert_string_equal(buf, "two");
        assert_int_equal(stat(strcat(strcpy(buf, path), "/a"), &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        /* the next version: a's content changed, sub gone, c new, one version directory left */
        assert_int_equal(xp_podconfig_write_atomic(path, &f2, &err), 0);
        read_at(path, "a", buf, sizeof(buf));
        assert_string_equal(buf, "uno");
        read_at(path, "c", buf, sizeof(buf));
        assert_string_equal(buf, "tre");
        assert_int_equal(lstat(strcat(strcpy(buf, path), "/sub"), &st), -1);
        assert_int_equal(versions(path), 1);
        /* the same files again: the version stays */
        n = readlink(strcat(strcpy(buf, path), "/..data"), buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_int_equal(xp_podconfig_write_atomic(path, &f2, &err), 0);
        assert_int_equal(readlink(strcat(strcpy(path2, path), "/..data"), path2, sizeof(path2) - 1),
                         n);
        path2[n] = 0;
        assert_string_equal(path2, buf);
        /* a changed mode is a change */
        v2[1].mode = 0600;
        assert_int_equal(xp_podconfig_write_atomic(path, &f2, &err), 0);
        assert_int_equal(stat(strcat(strcpy(buf, path), "/c"), &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(versions(path), 1);
        snprintf(buf, sizeof(buf), "rm -rf '%s'", dir);
        assert_int_equal(system(buf), 0);
}

/* The downward API's files: the pod's metadata (labels and annotations whole, in the kubelet's
 * key="value" form, sorted, quoted as Go's %q), a container's resources with a divisor. */
static void downward_files(void **state)
{
        struct xp_podconfig_files f = {0};
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;
        char *wait = NULL;
        json_t *pod_json = json_loads(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\","
            "\"namespace\":\"team\",\"uid\":\"u-1\",\"labels\":{\"tier\":\"a\",\"app\":\"x\"},"
            "\"annotations\":{\"note\":\"say \\\"hi\\\"\\n\\\\ok\"}},\"spec\":{\"containers\":[{"
            "\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"1500m\","
            "\"memory\":\"100Mi\"}}}]}}",
            0,
            NULL);
        json_t *vol = json_loads(
            "{\"name\":\"d\",\"downwardAPI\":{\"defaultMode\":288,\"items\":["
            "{\"path\":\"labels\",\"fieldRef\":{\"fieldPath\":\"metadata.labels\"}},"
            "{\"path\":\"meta/ann\",\"fieldRef\":{\"fieldPath\":\"metadata.annotations\"}},"
            "{\"path\":\"tier\",\"mode\":256,\"fieldRef\":{\"fieldPath\":\"metadata.labels['tier']\"}},"
            "{\"path\":\"cpu\",\"resourceFieldRef\":{\"containerName\":\"c\",\"resource\":"
            "\"limits.cpu\"}},"
            "{\"path\":\"mem\",\"resourceFieldRef\":{\"containerName\":\"c\",\"resource\":"
            "\"limits.memory\",\"divisor\":\"1Mi\"}}]}}",
            0,
            NULL);

        (void)state;
        assert_non_null(pod_json);
        assert_non_null(vol);
        assert_int_equal(xp_pod_from_json(pod_json, NULL, 0, &pod, &err), 0);
        struct xp_podconfig_reader reader = {.get = fake_get, .ns = "team", .pod = pod};

        assert_int_equal(xp_podconfig_volume_files(vol, &reader, &f, &wait, &err), 1);
        assert_int_equal(f.n, 5);
        assert_string_equal(file(&f, "labels")->data, "app=\"x\"\ntier=\"a\"");
        assert_int_equal(file(&f, "labels")->mode, 0440);
        assert_string_equal(file(&f, "meta/ann")->data, "note=\"say \\\"hi\\\"\\n\\\\ok\"");
        assert_string_equal(file(&f, "tier")->data, "a");
        assert_int_equal(file(&f, "tier")->mode, 0400);
        assert_string_equal(file(&f, "cpu")->data, "2"); /* ceil(1.5) */
        assert_string_equal(file(&f, "mem")->data, "100");
        xp_podconfig_files_clear(&f);
        json_decref(vol);

        /* what only env takes, and a resource without its container, are refused */
        vol = json_loads("{\"name\":\"d\",\"downwardAPI\":{\"items\":[{\"path\":\"n\","
                         "\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}]}}",
                         0,
                         NULL);
        assert_int_equal(xp_podconfig_volume_files(vol, &reader, &f, &wait, &err), -EINVAL);
        assert_non_null(
            strstr(err.msg, "volume d: items[0].fieldRef.fieldPath: \"spec.nodeName\""));
        json_decref(vol);
        vol = json_loads("{\"name\":\"d\",\"downwardAPI\":{\"items\":[{\"path\":\"n\","
                         "\"resourceFieldRef\":{\"resource\":\"limits.cpu\"}}]}}",
                         0,
                         NULL);
        assert_int_equal(xp_podconfig_volume_files(vol, &reader, &f, &wait, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "resourceFieldRef with containerName is required"));
        assert_int_equal(f.n, 0);
        json_decref(vol);
        json_decref(reader.seen);
        json_decref(pod_json);
        xp_pod_free(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(config_map_every_key, setup, teardown),
            cmocka_unit_test_setup_teardown(items_and_modes, setup, teardown),
            cmocka_unit_test_setup_teardown(missing_objects_wait, setup, teardown),
            cmocka_unit_test_setup_teardown(projected_sources, setup, teardown),
            cmocka_unit_test_setup_teardown(bad_input_is_refused, setup, teardown),
            cmocka_unit_test_setup_teardown(service_account_tokens, setup, teardown),
            cmocka_unit_test(token_renewal),
            cmocka_unit_test(tokens_of_a_torn_down_pod_are_dropped),
            cmocka_unit_test(volumes_removed),
            cmocka_unit_test(the_admission_volume_is_skipped_without_namespaces),
            cmocka_unit_test_setup_teardown(downward_files, setup, teardown),
            cmocka_unit_test(atomic_layout),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
