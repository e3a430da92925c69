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
#include <unistd.h>

#include <cmocka.h>

#include "xpool/error.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"
#include "xpool/map.h"
#include "xpool/random.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

/* ---- errors --------------------------------------------------------------------------------- */

static int fails_with(struct xp_error *err, const char *path)
{
        return xp_errorf(err, -ENOENT, "cannot open '%s'", path);
}

static void errorf_returns_code(void **state)
{
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(fails_with(&err, "/etc/xpool.conf"), -ENOENT);
        assert_int_equal(err.code, -ENOENT);
        assert_string_equal(err.msg, "cannot open '/etc/xpool.conf'");
        assert_string_equal(xp_error_message(&err), "cannot open '/etc/xpool.conf'");

        /* NULL is allowed and the code still comes back */
        assert_int_equal(fails_with(NULL, "x"), -ENOENT);
        assert_int_equal(xp_errorf(NULL, -EINVAL, "%s", "ignored"), -EINVAL);

        /* a later error replaces the earlier one */
        assert_int_equal(xp_errorf(&err, -E2BIG, "too big: %d", 42), -E2BIG);
        assert_int_equal(err.code, -E2BIG);
        assert_string_equal(err.msg, "too big: 42");
}

static void errorf_truncates_long_messages(void **state)
{
        struct xp_error err = {0};
        char big[2 * XP_ERROR_MSG_MAX];

        (void)state;
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(xp_errorf(&err, -EINVAL, "%s", big), -EINVAL);
        assert_int_equal(strlen(err.msg), XP_ERROR_MSG_MAX - 1);
        assert_int_equal(err.code, -EINVAL);
}

static void error_prefix_adds_context(void **state)
{
        struct xp_error err = {0};

        (void)state;
        xp_errorf(&err, -EINVAL, "\"1.5x\" is not a valid quantity");
        assert_int_equal(xp_error_prefix(&err, -EINVAL, "pod.yaml:%d", 12), -EINVAL);
        assert_string_equal(err.msg, "pod.yaml:12: \"1.5x\" is not a valid quantity");
        assert_int_equal(err.code, -EINVAL);

        assert_int_equal(xp_error_prefix(&err, -EINVAL, "loading %s", "manifests"), -EINVAL);
        assert_string_equal(xp_error_message(&err),
                            "loading manifests: pod.yaml:12: \"1.5x\" is not a valid quantity");

        /* a code without a message gets strerror() behind the prefix */
        err = (struct xp_error){.code = -ENOENT};
        assert_int_equal(xp_error_prefix(&err, -ENOENT, "open"), -ENOENT);
        assert_string_equal(err.msg, "open: No such file or directory");

        /* an unset error takes the code; a NULL one still passes the code through */
        xp_error_clear(&err);
        assert_int_equal(xp_error_prefix(&err, -ENOMEM, "reading"), -ENOMEM);
        assert_int_equal(err.code, -ENOMEM);
        assert_string_equal(err.msg, "reading: Cannot allocate memory");
        assert_int_equal(xp_error_prefix(NULL, -ENOMEM, "x"), -ENOMEM);
}

static void error_prefix_truncates(void **state)
{
        struct xp_error err = {0};
        char big[XP_ERROR_MSG_MAX];

        (void)state;
        memset(big, 'y', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        xp_errorf(&err, -EIO, "%s", big);
        assert_int_equal(xp_error_prefix(&err, -EIO, "ctx"), -EIO);
        assert_int_equal(strlen(err.msg), XP_ERROR_MSG_MAX - 1);
        assert_memory_equal(err.msg, "ctx: yyy", 8);
}

static void error_message_fallbacks(void **state)
{
        struct xp_error err = {0};

        (void)state;
        assert_string_equal(xp_error_message(NULL), "unknown error");
        assert_string_equal(xp_error_message(&err), "no error");
        err.code = -ENOMEM;
        assert_string_equal(xp_error_message(&err), strerror(ENOMEM));
        err.code = -EACCES;
        assert_string_equal(xp_error_message(&err), "Permission denied");

        xp_errorf(&err, -EIO, "disk on fire");
        assert_string_equal(xp_error_message(&err), "disk on fire");
        xp_error_clear(&err);
        assert_int_equal(err.code, 0);
        assert_string_equal(xp_error_message(&err), "no error");
        xp_error_clear(NULL);
}

/* ---- quoting -------------------------------------------------------------------------------- */

static void quote_escapes(void **state)
{
        static const struct {
                const char *in;
                const char *out;
        } cases[] = {
            {"", "\"\""},
            {"abc", "\"abc\""},
            {"nvidia.com/gpu", "\"nvidia.com/gpu\""},
            {"say \"hi\"", "\"say \\\"hi\\\"\""},
            {"C:\\dir", "\"C:\\\\dir\""},
            {"a\tb\nc\r", "\"a\\x09b\\x0ac\\x0d\""},
            {"\x01\x1f", "\"\\x01\\x1f\""},
            {" ~", "\" ~\""},
            {"\x7f", "\"\\x7f\""},
            {"caf\xc3\xa9", "\"caf\\xc3\\xa9\""},
            {"\x80\xff", "\"\\x80\\xff\""},
            {"'single'", "\"'single'\""},
        };
        char buf[XP_QUOTE_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++)
                assert_string_equal(xp_quote(cases[i].in, buf), cases[i].out);
        assert_ptr_equal(xp_quote("x", buf), buf);
        assert_string_equal(xp_quote(NULL, buf), "(null)");
}

static void quote_truncates_after_64_bytes(void **state)
{
        char in[200], expected[XP_QUOTE_MAX], buf[XP_QUOTE_MAX];

        (void)state;
        /* 64 bytes: shown whole */
        memset(in, 'a', 64);
        in[64] = '\0';
        snprintf(expected, sizeof(expected), "\"%s\"", in);
        assert_string_equal(xp_quote(in, buf), expected);

        /* 65 bytes: the first 64 and "..." after the closing quote */
        memset(in, 'a', 65);
        in[64] = 'b';
        in[65] = '\0';
        snprintf(expected, sizeof(expected), "\"%.64s\"...", in);
        assert_string_equal(xp_quote(in, buf), expected);
        assert_null(strchr(buf, 'b'));

        /* the worst case: 64 escaped bytes, each \xNN, still fits the buffer */
        memset(in, 0xff, 199);
        in[199] = '\0';
        xp_quote(in, buf);
        assert_int_equal(strlen(buf), 1 + 64 * 4 + 1 + 3);
        assert_true(strlen(buf) < XP_QUOTE_MAX);
        assert_memory_equal(buf, "\"\\xff\\xff", 9);
        assert_string_equal(buf + strlen(buf) - 8, "\\xff\"...");

        /* escapes count input bytes, not output bytes */
        memset(in, '"', 70);
        in[70] = '\0';
        xp_quote(in, buf);
        assert_int_equal(strlen(buf), 1 + 64 * 2 + 1 + 3);
}

static void quote_mem_shows_nul(void **state)
{
        char buf[XP_QUOTE_MAX];

        (void)state;
        assert_string_equal(xp_quote_mem("a\0b", 3, buf), "\"a\\x00b\"");
        assert_string_equal(xp_quote_mem("\0", 1, buf), "\"\\x00\"");
        assert_string_equal(xp_quote_mem("abc", 0, buf), "\"\"");
        assert_string_equal(xp_quote_mem("abcdef", 3, buf), "\"abc\"");
}

static void strdup0_and_streq0(void **state)
{
        char *copy;

        (void)state;
        assert_null(xp_strdup0(NULL));
        copy = xp_strdup0("x");
        assert_non_null(copy);
        assert_string_equal(copy, "x");
        free(copy);

        assert_true(xp_streq0(NULL, NULL));
        assert_false(xp_streq0(NULL, ""));
        assert_false(xp_streq0("", NULL));
        assert_true(xp_streq0("", ""));
        assert_true(xp_streq0("a", "a"));
        assert_false(xp_streq0("a", "b"));
}

/* ---- RFC 3339 ------------------------------------------------------------------------------- */

static void time_parse_valid(void **state)
{
        static const struct {
                const char *text;
                int64_t seconds;
        } cases[] = {
            {"1970-01-01T00:00:00Z", 0},
            {"2026-12-02T15:51:44Z", 1796226704},
            {"2026-12-02t15:51:44z", 1796226704},
            {"2026-12-02T15:51:44.123456Z", 1796226704},
            {"2026-12-02T15:51:44.999999999Z", 1796226704}, /* fractions are dropped */
            {"2026-12-02T15:51:44.0Z", 1796226704},
            {"2026-12-02T15:51:44+08:00", 1796197904}, /* 07:51:44Z */
            {"2026-12-02T15:51:44.5+08:00", 1796197904},
            {"2026-12-02T15:51:44-05:30", 1796246504}, /* 21:21:44Z */
            {"2026-12-02T15:51:44+00:00", 1796226704},
            {"2026-12-02T15:51:44-00:00", 1796226704},
            {"2026-01-01T05:00:00+08:00", 1767225600 - 3 * 3600}, /* the day before in UTC */
            {"2024-02-29T12:00:00Z", 1709208000},
            {"2000-02-29T00:00:00Z", 951782400},
            {"1969-12-31T23:59:59Z", -1},
            {"9999-12-31T23:59:59Z", 253402300799},
            {"0000-01-01T00:00:00Z", -62167219200},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                int64_t t = 12345;

                if (xp_time_parse_rfc3339(cases[i].text, &t) != 0)
                        fail_msg("\"%s\" rejected", cases[i].text);
                if (t != cases[i].seconds)
                        fail_msg("\"%s\" gave %lld, expected %lld",
                                 cases[i].text,
                                 (long long)t,
                                 (long long)cases[i].seconds);
        }
}

static void time_parse_invalid(void **state)
{
        static const char *const bad[] = {
            "9999-12-31T23:59:59-01:00", /* past year 9999 once the offset is applied */
            "0000-01-01T00:00:00+00:01", /* before year 0 */
            "",
            "2026",
            "2026-12-02",
            "2026-02-30T00:00:00Z",
            "2026-02-29T00:00:00Z", /* not a leap year */
            "2100-02-29T00:00:00Z", /* not a leap year either */
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-12-00T00:00:00Z",
            "2026-12-32T00:00:00Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02T23:60:00Z",
            "2026-12-02T23:59:61Z",
            "2026-12-02T15:04:05",                      /* missing Z */
            "2026-12-02T15:04:05Zjunk",                 /* trailing junk */
            "2026-12-02T15:04:05Z ",                    /* trailing space */
            " 2026-12-02T15:04:05Z",                    /* leading space */
            "2026-12-02 15:04:05Z",                     /* space instead of T */
            "2026-12-02T15:04:05.Z",                    /* empty fraction */
            "2026-12-02T15:04:05,5Z",                   /* comma fraction */
            "2026-12-02T15:04:05+0800",                 /* offset without colon */
            "2026-12-02T15:04:05+08",                   /* short offset */
            "2026-12-02T15:04:05+24:00",                /* offset hour out of range */
            "2026-12-02T15:04:05+08:60",                /* offset minute out of range */
            "2026-12-02T15:04:05+08:00Z",               /* offset and Z */
            "2026-12-02T15:04:05UTC",                   /* zone name */
            "2026-1-02T15:04:05Z",                      /* one-digit month */
            "2026-12-02T5:04:05Z",                      /* one-digit hour */
            "26-12-02T15:04:05Z",                       /* two-digit year */
            "+2026-12-02T15:04:05Z",                    /* sign before the year */
            "2026/12/02T15:04:05Z",                     /* wrong separators */
            "2026-12-02T15-04-05Z",                     /* wrong separators */
            "2026-12-02T15:04:05\nZ",                   /* control character */
            "\xef\xbc\x92\x30\x32\x36-12-02T15:04:05Z", /* a fullwidth digit */
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                int64_t t = 12345;

                if (xp_time_parse_rfc3339(bad[i], &t) != -EINVAL)
                        fail_msg("\"%s\" not rejected with -EINVAL", bad[i]);
                assert_int_equal(t, 12345); /* untouched on failure */
        }
}

static void time_format(void **state)
{
        static const struct {
                int64_t seconds;
                const char *text;
        } cases[] = {
            {0, "1970-01-01T00:00:00Z"},
            {1796226704, "2026-12-02T15:51:44Z"},
            {1709208000, "2024-02-29T12:00:00Z"},
            {-1, "1969-12-31T23:59:59Z"},
            {253402300799, "9999-12-31T23:59:59Z"},
            {-62167219200, "0000-01-01T00:00:00Z"},
        };
        char buf[XP_RFC3339_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                assert_int_equal(xp_time_format_rfc3339(cases[i].seconds, buf), 0);
                assert_string_equal(buf, cases[i].text);
        }
        /* outside the years 0000-9999 there is no RFC 3339 text: an error, not a made-up time */
        strcpy(buf, "untouched");
        assert_int_equal(xp_time_format_rfc3339(253402300800, buf), -ERANGE);
        assert_int_equal(xp_time_format_rfc3339(-62167219201, buf), -ERANGE);
        assert_int_equal(xp_time_format_rfc3339(INT64_MAX, buf), -ERANGE);
        assert_string_equal(buf, "untouched");
}

static void time_round_trip(void **state)
{
        static const char *const texts[] = {
            "2026-12-02T15:51:44Z",
            "1999-12-31T23:59:59Z",
            "2000-01-01T00:00:00Z",
            "2024-02-29T00:00:00Z",
            "1900-03-01T12:34:56Z",
            "1970-01-01T00:00:01Z",
        };
        char buf[XP_RFC3339_MAX];

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(texts); i++) {
                int64_t t;

                assert_int_equal(xp_time_parse_rfc3339(texts[i], &t), 0);
                assert_int_equal(xp_time_format_rfc3339(t, buf), 0);
                assert_string_equal(buf, texts[i]);
        }

        /* format then parse gives the same second, a few years either side of the epoch */
        for (int64_t t = -(int64_t)86400 * 366; t < (int64_t)86400 * 366 * 60;
             t += 86400 * 7 + 3631) {
                int64_t back;

                assert_int_equal(xp_time_format_rfc3339(t, buf), 0);
                assert_int_equal(xp_time_parse_rfc3339(buf, &back), 0);
                assert_int_equal(back, t);
        }
        /* other spellings of the same instant come back in UTC without a fraction */
        {
                int64_t t;

                assert_int_equal(xp_time_parse_rfc3339("2026-12-02T23:30:00.75-01:00", &t), 0);
                assert_int_equal(xp_time_format_rfc3339(t, buf), 0);
                assert_string_equal(buf, "2026-12-03T00:30:00Z");
        }
}

static void escape_is_quote_without_quotes(void **state)
{
        char buf[XP_QUOTE_MAX];
        char longer[100];

        (void)state;
        assert_string_equal(xp_escape("nvidia.com/gpu", buf), "nvidia.com/gpu");
        assert_string_equal(xp_escape("a\tb\"c", buf), "a\\x09b\\\"c");
        memset(longer, 'k', sizeof(longer) - 1);
        longer[sizeof(longer) - 1] = '\0';
        xp_escape(longer, buf);
        assert_int_equal(strlen(buf), 64 + 3);
        assert_string_equal(buf + 64, "...");
}

static void utf8_validity(void **state)
{
        static const struct {
                const char *text;
                bool valid;
        } cases[] = {
            {"plain ascii", true},
            {"GPU \xe6\x98\xbe\xe5\x8d\xa1", true}, /* 显卡 */
            {"\xf0\x9f\x9a\x80", true},             /* U+1F680 */
            {"\xc3\x28", false},                    /* bad continuation */
            {"\xc0\xaf", false},                    /* overlong '/' */
            {"\xe0\x80\xaf", false},                /* overlong, 3 bytes */
            {"\xed\xa0\x80", false},                /* a UTF-16 surrogate */
            {"\xf4\x90\x80\x80", false},            /* past U+10FFFF */
            {"\xe6\x98", false},                    /* cut short */
            {"\x80", false},                        /* a lone continuation byte */
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++)
                if (xp_utf8_valid(cases[i].text, strlen(cases[i].text)) != cases[i].valid)
                        fail_msg("case %zu: expected %s", i, cases[i].valid ? "valid" : "invalid");
}

static void read_fd_all_bounds_what_it_reads(void **state)
{
        char big[100000];
        char *data = NULL;
        size_t size = 0;
        FILE *f = tmpfile();

        (void)state;
        assert_non_null(f);
        memset(big, 'x', sizeof(big));
        assert_int_equal(fwrite(big, 1, sizeof(big), f), sizeof(big));
        fflush(f);
        rewind(f);
        assert_int_equal(xp_read_fd_all(fileno(f), sizeof(big), &data, &size), 0);
        assert_int_equal(size, sizeof(big));
        assert_memory_equal(data, big, size);
        free(data);
        data = NULL;
        rewind(f);
        assert_int_equal(xp_read_fd_all(fileno(f), sizeof(big) - 1, &data, &size), -E2BIG);
        assert_null(data);
        assert_int_equal(xp_read_fd_all(-1, 10, &data, &size), -EBADF);
        fclose(f);
}

/*
 * A PEM file read into memory that held other bytes before (a freed buffer of the same size,
 * which malloc hands out again): the text ends at its size. Without the NUL, strlen() ran on into
 * those bytes and the agent took its serving certificate's cluster CA copy for another one.
 */
static void read_fd_all_text_ends_at_its_size(void **state)
{
        static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        size_t len = sizeof(pem) - 1, size = 0;
        char *data = NULL, *dirty;
        FILE *f = tmpfile();

        (void)state;
        assert_non_null(f);
        assert_int_equal(fwrite(pem, 1, len, f), len);
        fflush(f);
        for (int i = 0; i < 8; i++) {
                /* the size xp_read_fd_all asks for a regular file (fileio.c, first_size()) */
                dirty = malloc(len + 4096);
                assert_non_null(dirty);
                memset(dirty, 'A', len + 4096);
                assert_int_equal(dirty[len], 'A'); /* the stores stay: they are read */
                free(dirty);
                rewind(f);
                assert_int_equal(xp_read_fd_all(fileno(f), 4096, &data, &size), 0);
                assert_int_equal(size, len);
                assert_int_equal(data[size], '\0');
                assert_int_equal(strlen(data), len);
                free(data);
        }
        fclose(f);
}

static mode_t umask_now(void)
{
        mode_t m = umask(022);

        umask(m);
        return m;
}

static void mkdir_p_makes_what_is_missing(void **state)
{
        char dir[] = "/tmp/xpool-test-mkdir-XXXXXX", path[128], file[128];
        struct xp_error err = {0};
        struct stat st;
        int fd;

        (void)state;
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/a//b/c", dir);
        assert_int_equal(xp_mkdir_p(path, 0700, &err), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        snprintf(file, sizeof(file), "%s/a", dir);
        assert_int_equal(stat(file, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        /* the levels above the last take 0755 (the umask allowing), the last its mode, also
         * when the path ends in slashes */
        assert_int_equal(st.st_mode & 0700, 0700);
        snprintf(path, sizeof(path), "%s/a/b/d/e//", dir);
        assert_int_equal(xp_mkdir_p(path, 0700, &err), 0);
        snprintf(file, sizeof(file), "%s/a/b/d/e", dir);
        assert_int_equal(stat(file, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        snprintf(file, sizeof(file), "%s/a/b/d", dir);
        assert_int_equal(stat(file, &st), 0);
        assert_int_equal(st.st_mode & 0700, 0700);
        assert_int_equal(st.st_mode & 0077, 0755 & ~umask_now() & 0077);
        snprintf(path, sizeof(path), "%s/a//b/c", dir);
        /* what exists is kept; again is fine */
        assert_int_equal(xp_mkdir_p(path, 0755, &err), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        /* relative to a directory fd */
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(xp_mkdir_p_at(fd, "x/y", 0755, &err), 0);
        snprintf(file, sizeof(file), "%s/x/y", dir);
        assert_int_equal(stat(file, &st), 0);
        /* a file in the way: the error names the directory that could not be made */
        snprintf(file, sizeof(file), "%s/f", dir);
        close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
        assert_int_equal(xp_mkdir_p_at(fd, "f/g/h", 0755, &err), -ENOTDIR);
        assert_non_null(strstr(err.msg, "cannot create the directory 'f/g'"));
        assert_int_equal(xp_mkdir_p("", 0755, &err), -EINVAL);
        close(fd);
        snprintf(path, sizeof(path), "rm -rf '%s'", dir);
        assert_int_equal(system(path), 0);
}

/* ---- hex, random bytes, the map ---------------------------------------------------------- */

static void hex_round_trips(void **state)
{
        const uint8_t data[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
        uint8_t back[sizeof(data)] = {0};
        char text[2 * sizeof(data) + 1];

        (void)state;
        xp_hex_encode(data, sizeof(data), text);
        assert_string_equal(text, "00017f80abff");
        assert_true(xp_hex_is_lower(text, strlen(text)));
        assert_false(xp_hex_is_lower("00017F", 6));
        assert_int_equal(xp_hex_decode(text, back, sizeof(back)), 0);
        assert_memory_equal(back, data, sizeof(data));
        assert_int_equal(xp_hex_decode("00017F80ABFF", back, sizeof(back)), 0);
        assert_memory_equal(back, data, sizeof(data));
        assert_int_equal(xp_hex_decode("0g", back, 1), -EINVAL);
        assert_int_equal(xp_hex_decode("0", back, 1), -EINVAL); /* the NUL is no digit */
        xp_hex_encode(data, 0, text);
        assert_string_equal(text, "");
}

static void random_bytes_vary(void **state)
{
        uint8_t a[32] = {0}, b[32] = {0}, zero[32] = {0};

        (void)state;
        assert_int_equal(xp_random_bytes(a, sizeof(a)), 0);
        assert_int_equal(xp_random_bytes(b, sizeof(b)), 0);
        /* 256 bits: equal or all zero only if the generator is broken */
        assert_memory_not_equal(a, b, sizeof(a));
        assert_memory_not_equal(a, zero, sizeof(a));
}

static void map_puts_gets_and_deletes(void **state)
{
        static char keys[300][8];
        struct xp_map m = {0};
        size_t live = 0;

        (void)state;
        assert_null(xp_map_get(&m, "absent"));
        assert_null(xp_map_del(&m, "absent"));
        for (size_t i = 0; i < XP_ELEMENTSOF(keys); i++) {
                snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
                assert_int_equal(xp_map_put(&m, keys[i], keys[i]), 0);
        }
        assert_int_equal(m.n, XP_ELEMENTSOF(keys));
        for (size_t i = 0; i < XP_ELEMENTSOF(keys); i += 2)
                assert_ptr_equal(xp_map_del(&m, keys[i]), keys[i]);
        for (size_t i = 0; i < XP_ELEMENTSOF(keys); i++)
                assert_ptr_equal(xp_map_get(&m, keys[i]), i % 2 ? keys[i] : NULL);
        /* replacing keeps one entry */
        assert_int_equal(xp_map_put(&m, keys[1], keys[2]), 0);
        assert_ptr_equal(xp_map_get(&m, "k1"), keys[2]);
        for (size_t i = 0; i < m.cap; i++)
                live += m.values[i] != NULL;
        assert_int_equal(live, XP_ELEMENTSOF(keys) / 2);
        assert_int_equal(m.n, live);
        xp_map_done(&m);
        assert_int_equal(m.cap, 0);
        /* FNV-1a's published value of "a", and the parts of one hash */
        assert_true(xp_hash_string("a") == 0xaf63dc4c8601ec8cull);
        assert_true(xp_hash_add(xp_hash_string("ab"), "c", 1) == xp_hash_string("abc"));
        assert_true(xp_hash_mix(1) != xp_hash_mix(2));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(errorf_returns_code),
            cmocka_unit_test(errorf_truncates_long_messages),
            cmocka_unit_test(error_prefix_adds_context),
            cmocka_unit_test(error_prefix_truncates),
            cmocka_unit_test(error_message_fallbacks),
            cmocka_unit_test(quote_escapes),
            cmocka_unit_test(quote_truncates_after_64_bytes),
            cmocka_unit_test(quote_mem_shows_nul),
            cmocka_unit_test(escape_is_quote_without_quotes),
            cmocka_unit_test(utf8_validity),
            cmocka_unit_test(read_fd_all_bounds_what_it_reads),
            cmocka_unit_test(read_fd_all_text_ends_at_its_size),
            cmocka_unit_test(mkdir_p_makes_what_is_missing),
            cmocka_unit_test(hex_round_trips),
            cmocka_unit_test(random_bytes_vary),
            cmocka_unit_test(map_puts_gets_and_deletes),
            cmocka_unit_test(strdup0_and_streq0),
            cmocka_unit_test(time_parse_valid),
            cmocka_unit_test(time_parse_invalid),
            cmocka_unit_test(time_format),
            cmocka_unit_test(time_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
