/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "xpool/names.h"
#include "xpool/strutil.h"

static bool is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..len) */
static bool is_dns_label(const char *s, size_t len)
{
        if (len == 0 || len > XP_DNS1123_LABEL_MAX)
                return false;
        if (!is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_lower_alnum(s[i]) && s[i] != '-')
                        return false;
        return true;
}

static bool is_dns_subdomain(const char *s, size_t len)
{
        if (len == 0 || len > XP_DNS1123_SUBDOMAIN_MAX)
                return false;
        if (!is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
                return false;
        for (size_t i = 0; i < len; i++) {
                if (is_lower_alnum(s[i]))
                        continue;
                if (s[i] == '-')
                        continue;
                /* a '.' may not touch another '.' or a '-' */
                if (s[i] == '.' && is_lower_alnum(s[i - 1]) && is_lower_alnum(s[i + 1]))
                        continue;
                return false;
        }
        return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool is_name_part(const char *s, size_t len)
{
        if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

int xp_check_dns1123_subdomain(const char *value, struct xp_error *err)
{
        char q[XP_QUOTE_MAX];
        size_t len = strlen(value);

        if (len > XP_DNS1123_SUBDOMAIN_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "Invalid value: %s: must be no more than 253 characters",
                                 xp_quote(value, q));
        if (!is_dns_subdomain(value, len))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "Invalid value: %s: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')",
                    xp_quote(value, q));
        return 0;
}

int xp_check_dns1123_label(const char *value, struct xp_error *err)
{
        char q[XP_QUOTE_MAX];
        size_t len = strlen(value);

        if (len > XP_DNS1123_LABEL_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "Invalid value: %s: must be no more than 63 characters",
                                 xp_quote(value, q));
        if (!is_dns_label(value, len))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "Invalid value: %s: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name')",
                    xp_quote(value, q));
        return 0;
}

int xp_check_qualified_name(const char *value, struct xp_error *err)
{
        char q[XP_QUOTE_MAX];
        const char *slash = strchr(value, '/');
        const char *name = slash ? slash + 1 : value;
        size_t name_len = strlen(name);

        if (slash) {
                size_t prefix_len = (size_t)(slash - value);

                if (prefix_len == 0)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "Invalid value: %s: the prefix before '/' must not be empty",
                            xp_quote(value, q));
                if (!is_dns_subdomain(value, prefix_len))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "Invalid value: %s: the prefix before '/' must be a lowercase RFC 1123 subdomain of at most 253 characters (e.g. 'example.com')",
                            xp_quote(value, q));
        }
        if (name_len == 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "Invalid value: %s: the name part must not be empty",
                                 xp_quote(value, q));
        if (name_len > XP_QUALIFIED_NAME_MAX)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "Invalid value: %s: the name part must be no more than 63 characters",
                    xp_quote(value, q));
        if (!is_name_part(name, name_len))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "Invalid value: %s: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or 'example.com/MyName')",
                    xp_quote(value, q));
        return 0;
}

int xp_check_label_value(const char *value, struct xp_error *err)
{
        char q[XP_QUOTE_MAX];
        size_t len = strlen(value);

        if (len == 0)
                return 0;
        if (len > XP_LABEL_VALUE_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "Invalid value: %s: must be no more than 63 characters",
                                 xp_quote(value, q));
        if (!is_name_part(value, len))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "Invalid value: %s: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                    xp_quote(value, q));
        return 0;
}

static bool is_alnum_ascii(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

char *xp_label_value_from(const char *text, char buf[static XP_LABEL_VALUE_MAX + 1])
{
        size_t n = 0;

        for (const char *p = text; *p && n < XP_LABEL_VALUE_MAX; p++) {
                char c = *p;

                if (!is_alnum_ascii(c) && c != '.' && c != '_' && c != '-')
                        c = '-';
                if (n == 0 && !is_alnum_ascii(c))
                        continue;
                buf[n++] = c;
        }
        while (n > 0 && !is_alnum_ascii(buf[n - 1]))
                n--;
        buf[n] = '\0';
        return buf;
}

int xp_check_env_name(const char *value, struct xp_error *err)
{
        char q[XP_QUOTE_MAX];

        if (!*value)
                return xp_errorf(
                    err, -EINVAL, "Required value: an environment variable needs a name");
        for (const char *p = value; *p; p++)
                if (*p < 0x20 || *p > 0x7e || *p == '=')
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "Invalid value: %s: an environment variable name must consist of printable ASCII characters other than '='",
                            xp_quote(value, q));
        return 0;
}
