/* SPDX-License-Identifier: Apache-2.0 */
/* The spec's kept keys (src/runtime/speccache.c): taken only while the file is the one read. */
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

#include "runtime/speccache.h"

struct fixture {
        char dir[64], path[96];
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-speccache-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        snprintf(f->path, sizeof(f->path), "%s/spec.json", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char tmp[128];

        snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
        unlink(tmp);
        unlink(f->path);
        rmdir(f->dir);
        free(f);
        return 0;
}

/* Writes text as the runtime does: a new file renamed over the old one. */
static void write_spec(const struct fixture *f, const char *text, struct stat *st)
{
        char tmp[128];
        FILE *fp;

        snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
        fp = fopen(tmp, "w");
        assert_non_null(fp);
        fputs(text, fp);
        assert_int_equal(fclose(fp), 0);
        assert_int_equal(rename(tmp, f->path), 0);
        assert_int_equal(stat(f->path, st), 0);
}

static void keeps_only_what_is_read_again(void **state)
{
        struct fixture *f = *state;
        struct speccache c = {0};
        json_t *spec = json_pack("{s:s, s:s, s:i, s:[s], s:{s:s}}",
                                 "pod_uid",
                                 "u1",
                                 "container",
                                 "main",
                                 "attempt",
                                 2,
                                 "env",
                                 "A=1",
                                 "oci",
                                 "id",
                                 "x");
        json_t *kept;
        struct stat st;

        write_spec(f, "{}", &st);
        speccache_put(&c, f->dir, &st, spec);
        json_decref(spec);
        kept = speccache_get(&c, f->dir, &st);
        assert_non_null(kept);
        assert_string_equal(json_string_value(json_object_get(kept, "pod_uid")), "u1");
        assert_int_equal(json_integer_value(json_object_get(kept, "attempt")), 2);
        assert_string_equal(json_string_value(json_object_get(json_object_get(kept, "oci"), "id")),
                            "x");
        assert_null(json_object_get(kept, "env"));
        json_decref(kept);
        speccache_done(&c);
}

static void a_new_file_is_read_again(void **state)
{
        struct fixture *f = *state;
        struct speccache c = {0};
        json_t *spec = json_pack("{s:i}", "attempt", 0);
        struct stat old, now;

        write_spec(f, "{\"attempt\":0}", &old);
        speccache_put(&c, f->dir, &old, spec);
        write_spec(f, "{\"attempt\":1}", &now);
        assert_null(speccache_get(&c, f->dir, &now));
        /* and forgotten: not even the old file's identity finds it */
        assert_null(speccache_get(&c, f->dir, &old));
        speccache_put(&c, f->dir, &now, spec);
        speccache_forget(&c, f->dir);
        assert_null(speccache_get(&c, f->dir, &now));
        json_decref(spec);
        speccache_done(&c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(keeps_only_what_is_read_again, setup, teardown),
            cmocka_unit_test_setup_teardown(a_new_file_is_read_again, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
