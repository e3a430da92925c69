/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/log.h"

/* Runs fn with stderr sent to a temporary file and returns what it wrote (caller frees). */
static char *capture_stderr(void (*fn)(void))
{
        FILE *tmp = tmpfile();
        int saved = dup(STDERR_FILENO);
        char *text = calloc(1, 4096);
        size_t n;

        assert_non_null(tmp);
        assert_true(saved >= 0);
        fflush(stderr);
        assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
        fn();
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        rewind(tmp);
        n = fread(text, 1, 4095, tmp);
        text[n] = '\0';
        fclose(tmp);
        return text;
}

static void levels_come_from_the_environment(void **state)
{
        (void)state;
        unsetenv("XPOOL_DEBUG");
        setenv("XPOOL_LOG_LEVEL", "warning", 1);
        xp_log_init();
        assert_int_equal(xp_log_get_max_level(), LOG_WARNING);
        setenv("XPOOL_LOG_LEVEL", "DEBUG", 1);
        xp_log_init();
        assert_int_equal(xp_log_get_max_level(), LOG_DEBUG);
        unsetenv("XPOOL_LOG_LEVEL");
        xp_log_set_max_level(LOG_INFO);
        assert_int_equal(xp_log_get_max_level(), LOG_INFO);
}

static void debug_flags_select_subsystems(void **state)
{
        (void)state;
        setenv("XPOOL_DEBUG", "sched,nvml", 1);
        xp_log_init();
        assert_true(xp_log_debug_enabled("sched"));
        assert_true(xp_log_debug_enabled("nvml"));
        assert_false(xp_log_debug_enabled("sch"));
        assert_false(xp_log_debug_enabled("store"));
        assert_int_equal(xp_log_get_max_level(), LOG_DEBUG);
        setenv("XPOOL_DEBUG", "all", 1);
        xp_log_init();
        assert_true(xp_log_debug_enabled("anything"));
        unsetenv("XPOOL_DEBUG");
        xp_log_init();
        assert_false(xp_log_debug_enabled("sched"));
        xp_log_set_max_level(LOG_INFO);
}

static void log_errno_line(void)
{
        int r = xp_log_errno(LOG_ERR, -ENOENT, "Failed to open '%s': %m (100%% sure)", "/x");

        assert_int_equal(r, -ENOENT);
}

static void log_filtered_line(void)
{
        xp_log(LOG_DEBUG, "not shown %d", 1);
        xp_log(LOG_INFO, "shown %d", 2);
}

static void messages_expand_errno_and_respect_the_level(void **state)
{
        char *out;

        (void)state;
        xp_log_set_max_level(LOG_INFO);
        out = capture_stderr(log_errno_line);
        assert_non_null(
            strstr(out, " error Failed to open '/x': No such file or directory (100% sure)\n"));
        free(out);
        out = capture_stderr(log_filtered_line);
        assert_null(strstr(out, "not shown"));
        assert_non_null(strstr(out, " info shown 2\n"));
        free(out);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(levels_come_from_the_environment),
            cmocka_unit_test(debug_flags_select_subsystems),
            cmocka_unit_test(messages_expand_errno_and_respect_the_level),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
