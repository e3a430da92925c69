/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jansson values as YAML, in the shape `kubectl get -o yaml` prints, through libyaml's emitter.
 *
 * libyaml chooses a scalar's style from its syntax only: it quotes what plain YAML cannot write
 * (indicators, ": ", " #", leading or trailing spaces, control characters), but a string such as
 * "true", "1.5" or "yes" would go out plain and read back as a boolean or a number. So every
 * string that some reader would resolve to anything but itself is double-quoted here, for the
 * union of the YAML 1.2 core schema (our loader), YAML 1.1 (booleans y/n/yes/no/on/off, 0b and 0
 * octal integers, underscores, sexagesimal 1:20, timestamps, <<, =) and go-yaml, which kubectl
 * uses (underscores anywhere in a number, 0x/0o/0b prefixes in either case, timestamps). The
 * union quotes a few strings that one reader alone would take as strings ("y" and "1e3" are
 * strings to PyYAML, a boolean and a real to go-yaml); quoting is always safe, leaving one out
 * is not.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/yaml.h"

#define DIGITS "0123456789"

/* ------------------------------------------------------------------------------------------ */
/* Which strings must be quoted */

static bool str_in(const char *s, const char *const *list)
{
        for (; *list; list++)
                if (!strcmp(s, *list))
                        return true;
        return false;
}

/* null, booleans and the other special plain scalars of YAML 1.1 and 1.2 */
static bool is_special_word(const char *s)
{
        static const char *const words[] = {
            "",      "~",     "null",  "Null",  "NULL",  "y",     "Y",     "yes",   "Yes",
            "YES",   "n",     "N",     "no",    "No",    "NO",    "true",  "True",  "TRUE",
            "false", "False", "FALSE", "on",    "On",    "ON",    "off",   "Off",   "OFF",
            ".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
            ".nan",  ".NaN",  ".NAN",  "<<",    "=",     NULL,
        };

        return str_in(s, words);
}

/* The length of the run of characters from set and '_' at s, and whether it holds one of set. */
static size_t run(const char *s, const char *set, bool *ret_any)
{
        size_t n = 0;
        bool any = false;

        for (; s[n] && (s[n] == '_' || strchr(set, s[n])); n++)
                any |= s[n] != '_';
        if (ret_any)
                *ret_any = any;
        return n;
}

/* 0x1f, 0o17, 0b101 in either case, with underscores; t has no sign. */
static bool is_prefixed_int(const char *t)
{
        const char *digits;
        bool any;

        if (t[0] != '0')
                return false;
        switch (t[1]) {
        case 'x':
        case 'X':
                digits = DIGITS "abcdefABCDEF";
                break;
        case 'o':
        case 'O':
                digits = "01234567";
                break;
        case 'b':
        case 'B':
                digits = "01";
                break;
        default:
                return false;
        }
        /* YAML 1.1 takes "0x_" as an integer too */
        return t[2] && t[2 + run(t + 2, digits, &any)] == '\0';
}

/*
 * Decimal integers and reals, with underscores anywhere (go-yaml drops them all before it
 * parses): [0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9_]+)? with a digit in the mantissa, or an underscore
 * beside a dot (older PyYAML takes "._" for a real). t has no sign.
 *
 * The YAML 1.1 type repository writes [0-9.]* after the dot, which would make "1.2.3" and
 * "10.0.0.5" reals; no reader does that (PyYAML, go-yaml, SnakeYAML, Psych), and kubectl prints
 * versions and addresses plain, so neither are they quoted here.
 */
static bool is_decimal_number(const char *t)
{
        bool any, fraction = false, exponent;
        size_t n = run(t, DIGITS, &any), mantissa = n;

        if (t[n] == '.') {
                size_t f = run(t + n + 1, DIGITS, &fraction);

                mantissa += f;
                n += 1 + f;
                if (!any && !fraction && mantissa == 0)
                        return false;
        } else if (!any) {
                return false;
        }
        if (t[n] == 'e' || t[n] == 'E') {
                n++;
                if (t[n] == '+' || t[n] == '-')
                        n++;
                n += run(t + n, DIGITS, &exponent);
                if (!exponent)
                        return false;
        }
        return t[n] == '\0';
}

/* YAML 1.1 sexagesimal: [0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?, t without sign. */
static bool is_sexagesimal(const char *t)
{
        size_t n;
        bool colon = false;

        if (!(t[0] >= '0' && t[0] <= '9'))
                return false;
        n = run(t, DIGITS, NULL);
        while (t[n] == ':') {
                size_t digits = strspn(t + n + 1, DIGITS);

                if (digits == 0 || digits > 2 || (digits == 2 && t[n + 1] > '5'))
                        return false;
                n += 1 + digits;
                colon = true;
        }
        if (!colon)
                return false;
        if (t[n] == '.')
                n += 1 + run(t + n + 1, DIGITS, NULL);
        return t[n] == '\0';
}

/*
 * YAML 1.1 and go-yaml timestamps start with a four-digit year and '-'; what follows a date
 * ("2026-12-02T15:04:05Z", "2001-12-14 21:59:43.10 -5") holds only these characters.
 */
static bool is_timestamp(const char *s)
{
        if (strspn(s, DIGITS) != 4 || s[4] != '-' || !(s[5] >= '0' && s[5] <= '9'))
                return false;
        return strspn(s, DIGITS "-:.+TtZz \t") == strlen(s);
}

/* Whether a string written plain would resolve to anything but that string in some reader. */
static bool needs_type_quotes(const char *s, size_t len)
{
        const char *t = s;

        if (strlen(s) != len)
                return false; /* a NUL inside: libyaml double-quotes it anyway */
        if (is_special_word(s) || is_timestamp(s))
                return true;
        if (*t == '+' || *t == '-')
                t++;
        return is_prefixed_int(t) || is_decimal_number(t) || is_sexagesimal(t);
}

/* Line breaks other than \n (\r, NEL, LS, PS) read back as \n from a literal block or folded. */
static bool has_other_breaks(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c == '\r')
                        return true;
                if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] == 0x85)
                        return true;
                if (c == 0xe2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
                    ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9))
                        return true;
        }
        return false;
}

/* ------------------------------------------------------------------------------------------ */
/* Output */

struct buffer {
        char *data;
        size_t len;
        size_t allocated;
};

static int buffer_write(void *userdata, unsigned char *bytes, size_t size)
{
        struct buffer *b = userdata;

        if (size >= b->allocated - b->len) {
                size_t allocated = b->allocated ? b->allocated : 1024;
                char *data;

                while (size >= allocated - b->len) {
                        if (allocated > SIZE_MAX / 2)
                                return 0;
                        allocated *= 2;
                }
                data = realloc(b->data, allocated);
                if (!data)
                        return 0;
                b->data = data;
                b->allocated = allocated;
        }
        memcpy(b->data + b->len, bytes, size);
        b->len += size;
        b->data[b->len] = '\0';
        return 1;
}

/* Hands the event to the emitter, which owns it from here on. */
static int emit(yaml_emitter_t *emitter, yaml_event_t *e)
{
        if (!yaml_emitter_emit(emitter, e))
                return emitter->error == YAML_EMITTER_ERROR ? -EINVAL : -ENOMEM;
        return 0;
}

static int emit_scalar(yaml_emitter_t *emitter,
                       const char *text,
                       size_t len,
                       bool plain_implicit,
                       yaml_scalar_style_t style)
{
        yaml_event_t e;

        if (!yaml_scalar_event_initialize(
                &e, NULL, NULL, (yaml_char_t *)text, (int)len, plain_implicit, 1, style))
                return xp_utf8_valid(text, len) ? -ENOMEM : -EINVAL;
        return emit(emitter, &e);
}

static int emit_string(yaml_emitter_t *emitter, const char *s, size_t len)
{
        if (len > INT32_MAX)
                return -EINVAL; /* libyaml counts lengths in int */
        if (needs_type_quotes(s, len))
                return emit_scalar(emitter, s, len, false, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
        if (has_other_breaks(s, len))
                return emit_scalar(emitter, s, len, false, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
        if (memchr(s, '\n', len))
                /* libyaml falls back to double quotes where a literal block cannot hold it */
                return emit_scalar(emitter, s, len, false, YAML_LITERAL_SCALAR_STYLE);
        return emit_scalar(emitter, s, len, true, YAML_ANY_SCALAR_STYLE);
}

/*
 * The shortest of %.15g..%.17g that reads back to d, with a '.' in the mantissa so that it stays
 * a real in every schema (2.0, 1.0e+300; YAML 1.1 wants the dot). Needs the C locale.
 */
static void format_real(double d, char buf[static 40])
{
        char *e;

        for (int precision = 15; precision <= 17; precision++) {
                snprintf(buf, 32, "%.*g", precision, d);
                if (strtod(buf, NULL) == d)
                        break;
        }
        if (strchr(buf, '.'))
                return;
        e = strchr(buf, 'e');
        if (e) {
                memmove(e + 2, e, strlen(e) + 1);
                memcpy(e, ".0", 2);
        } else {
                strcat(buf, ".0");
        }
}

static int emit_value(yaml_emitter_t *emitter, const json_t *value, unsigned depth);

static int emit_object(yaml_emitter_t *emitter, const json_t *value, unsigned depth)
{
        json_t *object = (json_t *)value; /* iterating does not modify it */
        yaml_event_t e;
        int r;

        if (!yaml_mapping_start_event_initialize(&e, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE))
                return -ENOMEM;
        r = emit(emitter, &e);
        if (r < 0)
                return r;
        for (void *i = json_object_iter(object); i; i = json_object_iter_next(object, i)) {
                r = emit_string(emitter, json_object_iter_key(i), json_object_iter_key_len(i));
                if (r < 0)
                        return r;
                r = emit_value(emitter, json_object_iter_value(i), depth + 1);
                if (r < 0)
                        return r;
        }
        if (!yaml_mapping_end_event_initialize(&e))
                return -ENOMEM;
        return emit(emitter, &e);
}

static int emit_array(yaml_emitter_t *emitter, const json_t *value, unsigned depth)
{
        yaml_event_t e;
        int r;

        if (!yaml_sequence_start_event_initialize(&e, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE))
                return -ENOMEM;
        r = emit(emitter, &e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_array_size(value); i++) {
                r = emit_value(emitter, json_array_get(value, i), depth + 1);
                if (r < 0)
                        return r;
        }
        if (!yaml_sequence_end_event_initialize(&e))
                return -ENOMEM;
        return emit(emitter, &e);
}

static int emit_value(yaml_emitter_t *emitter, const json_t *value, unsigned depth)
{
        char buf[40];

        if (depth > XP_YAML_DUMP_MAX_DEPTH)
                return -EINVAL;
        switch (json_typeof(value)) {
        case JSON_OBJECT:
                return emit_object(emitter, value, depth);
        case JSON_ARRAY:
                return emit_array(emitter, value, depth);
        case JSON_STRING:
                return emit_string(emitter, json_string_value(value), json_string_length(value));
        case JSON_INTEGER:
                snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(value));
                break;
        case JSON_REAL:
                if (!isfinite(json_real_value(value)))
                        return -EINVAL;
                format_real(json_real_value(value), buf);
                break;
        case JSON_TRUE:
                strcpy(buf, "true");
                break;
        case JSON_FALSE:
                strcpy(buf, "false");
                break;
        case JSON_NULL:
                strcpy(buf, "null");
                break;
        default:
                return -EINVAL;
        }
        return emit_scalar(emitter, buf, strlen(buf), true, YAML_PLAIN_SCALAR_STYLE);
}

static int emit_document(yaml_emitter_t *emitter, const json_t *value)
{
        yaml_event_t e;
        int r;

        if (!value)
                return -EINVAL;
        if (!yaml_document_start_event_initialize(&e, NULL, NULL, NULL, 1))
                return -ENOMEM;
        r = emit(emitter, &e);
        if (r < 0)
                return r;
        r = emit_value(emitter, value, 1);
        if (r < 0)
                return r;
        if (!yaml_document_end_event_initialize(&e, 1))
                return -ENOMEM;
        return emit(emitter, &e);
}

static int emit_stream(yaml_emitter_t *emitter, const json_t *const *values, size_t n)
{
        yaml_event_t e;
        int r;

        if (!yaml_stream_start_event_initialize(&e, YAML_UTF8_ENCODING))
                return -ENOMEM;
        r = emit(emitter, &e);
        for (size_t i = 0; i < n && r >= 0; i++)
                r = emit_document(emitter, values[i]);
        if (r < 0)
                return r;
        if (!yaml_stream_end_event_initialize(&e))
                return -ENOMEM;
        r = emit(emitter, &e);
        if (r < 0)
                return r;
        return yaml_emitter_flush(emitter) ? 0 : -ENOMEM;
}

static int dump(const json_t *const *values, size_t n, char **ret_text, size_t *ret_len)
{
        _cleanup_free_ char *empty = NULL;
        struct buffer b = {0};
        yaml_emitter_t emitter;
        locale_t c_locale, saved;
        int r;

        if ((!values && n > 0) || !ret_text)
                return -EINVAL;
        if (n == 0) {
                empty = strdup("");
                if (!empty)
                        return -ENOMEM;
                *ret_text = TAKE_PTR(empty);
                if (ret_len)
                        *ret_len = 0;
                return 0;
        }
        /* reals print with '.', whatever the program's locale */
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (!c_locale)
                return -ENOMEM;
        if (!yaml_emitter_initialize(&emitter)) {
                freelocale(c_locale);
                return -ENOMEM;
        }
        yaml_emitter_set_output(&emitter, buffer_write, &b);
        yaml_emitter_set_encoding(&emitter, YAML_UTF8_ENCODING);
        yaml_emitter_set_indent(&emitter, 2);
        yaml_emitter_set_width(&emitter, -1);
        yaml_emitter_set_unicode(&emitter, 1);
        yaml_emitter_set_break(&emitter, YAML_LN_BREAK);

        saved = uselocale(c_locale);
        r = emit_stream(&emitter, values, n);
        uselocale(saved);
        yaml_emitter_delete(&emitter);
        freelocale(c_locale);
        if (r >= 0 && !b.data)
                r = -EINVAL; /* libyaml wrote nothing */
        if (r < 0) {
                free(b.data);
                return r;
        }
        *ret_text = b.data;
        if (ret_len)
                *ret_len = b.len;
        return 0;
}

int xp_yaml_dump(const json_t *value, char **ret_text, size_t *ret_len)
{
        if (!value)
                return -EINVAL;
        return dump(&value, 1, ret_text, ret_len);
}

int xp_yaml_dump_documents(json_t *const *values, size_t n, char **ret_text, size_t *ret_len)
{
        return dump((const json_t *const *)values, n, ret_text, ret_len);
}
