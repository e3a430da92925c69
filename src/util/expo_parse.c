/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exposition parser and checker (xpool/expo.h): every line against the text format 0.0.4 or
 * OpenMetrics 1.0, as Prometheus' own parsers read them, plus the rules their parsers leave to
 * the writer: a family's lines together, TYPE before its samples, a series once, buckets
 * ascending and ending at +Inf. Series are remembered by a 64-bit hash of their canonical text.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/expo.h"
#include "xpool/macro.h"

struct hashset {
        uint64_t *slots; /* 0: empty */
        size_t cap, n;
};

struct parser {
        enum xp_expo_format format;
        size_t line;
        struct xp_error *err;
        char family[256];
        enum xp_expo_type type;
        bool has_help, has_type, has_samples, eof;
        struct hashset families; /* finished ones */
        struct hashset series;   /* of the whole exposition */
        /* the histogram bucket run in progress */
        uint64_t bucket_key;
        bool bucket_open;
        double bucket_le, bucket_count;
};

static uint64_t hash_text(uint64_t h, const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char)s[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

#define HASH_SEED UINT64_C(0xcbf29ce484222325)

/* 1 when added, 0 when present already, -ENOMEM. */
static int hashset_add(struct hashset *s, uint64_t h)
{
        if (h == 0)
                h = 1;
        if ((s->n + 1) * 2 > s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 256;
                uint64_t *slots = calloc(cap, sizeof(*slots));

                if (!slots)
                        return -ENOMEM;
                for (size_t i = 0; i < s->cap; i++)
                        if (s->slots[i])
                                for (size_t j = s->slots[i] & (cap - 1);; j = (j + 1) & (cap - 1))
                                        if (!slots[j]) {
                                                slots[j] = s->slots[i];
                                                break;
                                        }
                free(s->slots);
                s->slots = slots;
                s->cap = cap;
        }
        for (size_t j = h & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
                if (s->slots[j] == h)
                        return 0;
                if (!s->slots[j]) {
                        s->slots[j] = h;
                        s->n++;
                        return 1;
                }
        }
}

static bool hashset_has(const struct hashset *s, uint64_t h)
{
        if (h == 0)
                h = 1;
        if (!s->cap)
                return false;
        for (size_t j = h & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
                if (s->slots[j] == h)
                        return true;
                if (!s->slots[j])
                        return false;
        }
}

static int fail(struct parser *p, const char *fmt, ...) _printf_(2, 3);
static int fail(struct parser *p, const char *fmt, ...)
{
        char msg[200];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return xp_errorf(p->err, -EINVAL, "line %zu: %s", p->line, msg);
}

static bool name_start(char c, bool metric)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
}

static bool name_char(char c, bool metric)
{
        return name_start(c, metric) || (c >= '0' && c <= '9');
}

/* The length of the name at s (0: none). */
static size_t name_len(const char *s, bool metric)
{
        size_t n = 0;

        if (!name_start(s[0], metric))
                return 0;
        while (name_char(s[n], metric))
                n++;
        return n;
}

/* "+Inf", "-Inf", "NaN" or a decimal floating-point number taking the whole token. */
static bool parse_value(const char *s, size_t n, double *ret)
{
        char buf[64], *end;

        if (n == 0 || n >= sizeof(buf))
                return false;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "Inf") == 0) {
                *ret = INFINITY;
                return true;
        }
        if (strcmp(buf, "-Inf") == 0) {
                *ret = -INFINITY;
                return true;
        }
        if (strcmp(buf, "NaN") == 0) {
                *ret = NAN;
                return true;
        }
        if (strpbrk(buf, "xXnNiI"))
                return false; /* hex, and strtod's own spellings of inf and nan */
        errno = 0;
        *ret = strtod(buf, &end);
        return end == buf + n && errno != ERANGE;
}

const char *xp_expo_sample_label(const struct xp_expo_sample *sample, const char *name)
{
        for (size_t i = 0; i < sample->n_labels; i++)
                if (strcmp(sample->labels[i].name, name) == 0)
                        return sample->labels[i].value;
        return NULL;
}

/* ---- labels --------------------------------------------------------------------------------- */

/*
 * Reads one label value after its opening quote into out (unescaped, NUL-terminated); *pos ends
 * after the closing quote. 0 or the failure.
 */
static int parse_label_value(struct parser *p, const char *s, size_t *pos, char **out)
{
        size_t i = *pos;
        char *o = *out;

        for (;; i++) {
                if (s[i] == '\0')
                        return fail(p, "label value without its closing quote");
                if (s[i] == '"')
                        break;
                if (s[i] != '\\') {
                        *o++ = s[i];
                        continue;
                }
                i++;
                if (s[i] == '\\' || s[i] == '"')
                        *o++ = s[i];
                else if (s[i] == 'n')
                        *o++ = '\n';
                else
                        return fail(
                            p, "label value with the unknown escape \\%c", s[i] ? s[i] : '0');
        }
        *o++ = '\0';
        *pos = i + 1;
        *out = o;
        return 0;
}

/*
 * Parses {name="value",...} from s[*pos] (at '{') into labels, their texts in scratch (at least
 * as long as the line). *pos ends after '}'.
 */
static int parse_labels(struct parser *p,
                        const char *s,
                        size_t *pos,
                        struct xp_expo_label *labels,
                        size_t *n,
                        char *scratch)
{
        size_t i = *pos + 1;
        int r;

        for (*n = 0;;) {
                size_t len;

                if (s[i] == '}')
                        break;
                len = name_len(s + i, false);
                if (len == 0)
                        return fail(p, "a label name must match [a-zA-Z_][a-zA-Z0-9_]*");
                if (*n == XP_EXPO_LABELS_MAX)
                        return fail(p, "more than %d labels", XP_EXPO_LABELS_MAX);
                memcpy(scratch, s + i, len);
                scratch[len] = '\0';
                for (size_t k = 0; k < *n; k++)
                        if (strcmp(labels[k].name, scratch) == 0)
                                return fail(p, "label %s given twice", scratch);
                labels[*n].name = scratch;
                scratch += len + 1;
                i += len;
                if (s[i] != '=' || s[i + 1] != '"')
                        return fail(p, "label %s: want =\"value\"", labels[*n].name);
                i += 2;
                labels[*n].value = scratch;
                r = parse_label_value(p, s, &i, &scratch);
                if (r < 0)
                        return r;
                (*n)++;
                if (s[i] == ',') {
                        i++;
                        if (s[i] == '}' && p->format == XP_EXPO_OPENMETRICS)
                                return fail(p, "a comma before } (OpenMetrics has none)");
                } else if (s[i] != '}') {
                        return fail(p, "want , or } after a label");
                }
        }
        *pos = i + 1;
        return 0;
}

/* The series' identity: its name and labels in name order, le left out when without_le. */
static uint64_t
series_hash(const char *name, const struct xp_expo_label *labels, size_t n, bool without_le)
{
        size_t order[XP_EXPO_LABELS_MAX];
        uint64_t h = hash_text(HASH_SEED, name, strlen(name) + 1);

        for (size_t i = 0; i < n; i++) {
                size_t j = i;

                while (j > 0 && strcmp(labels[order[j - 1]].name, labels[i].name) > 0) {
                        order[j] = order[j - 1];
                        j--;
                }
                order[j] = i;
        }
        for (size_t i = 0; i < n; i++) {
                const struct xp_expo_label *l = &labels[order[i]];

                if (without_le && strcmp(l->name, "le") == 0)
                        continue;
                h = hash_text(h, l->name, strlen(l->name) + 1);
                h = hash_text(h, l->value, strlen(l->value) + 1);
        }
        return h;
}

/* ---- families ------------------------------------------------------------------------------- */

static int bucket_run_end(struct parser *p)
{
        if (p->bucket_open && !isinf(p->bucket_le))
                return fail(p, "the buckets of histogram %s end without le=\"+Inf\"", p->family);
        p->bucket_open = false;
        return 0;
}

/* Ends the current family and starts name's: a family seen before is split, an error. */
static int family_switch(struct parser *p, const char *name, size_t len)
{
        int r;

        if (p->family[0] && strlen(p->family) == len && memcmp(p->family, name, len) == 0)
                return 0;
        r = bucket_run_end(p);
        if (r < 0)
                return r;
        if (p->family[0] &&
            hashset_add(&p->families, hash_text(HASH_SEED, p->family, strlen(p->family))) < 0)
                return -ENOMEM;
        if (len >= sizeof(p->family))
                return fail(p, "metric name longer than %zu characters", sizeof(p->family) - 1);
        if (hashset_has(&p->families, hash_text(HASH_SEED, name, len)))
                return fail(
                    p,
                    "metric family %.*s continues after another family: its lines must be together",
                    (int)len,
                    name);
        memcpy(p->family, name, len);
        p->family[len] = '\0';
        p->type = XP_EXPO_UNTYPED;
        p->has_help = p->has_type = p->has_samples = false;
        return 0;
}

static int parse_type_name(struct parser *p, const char *t, enum xp_expo_type *ret)
{
        static const struct {
                const char *name;
                enum xp_expo_type type;
                bool om;
        } types[] = {
            {"gauge", XP_EXPO_GAUGE, true},
            {"counter", XP_EXPO_COUNTER, true},
            {"histogram", XP_EXPO_HISTOGRAM, true},
            {"untyped", XP_EXPO_UNTYPED, false},
            {"unknown", XP_EXPO_UNTYPED, true},
            {"summary", XP_EXPO_UNTYPED, true},
        };

        for (size_t i = 0; i < XP_ELEMENTSOF(types); i++)
                if (strcmp(types[i].name, t) == 0 &&
                    (p->format == XP_EXPO_TEXT ? strcmp(t, "unknown") != 0 : types[i].om)) {
                        *ret = types[i].type;
                        return 0;
                }
        return fail(p, "unknown metric type \"%s\"", t);
}

/* "# HELP name text", "# TYPE name type", "# EOF", other comments (text format only). */
static int parse_comment(struct parser *p, const char *s)
{
        bool help = strncmp(s, "# HELP ", 7) == 0, type = strncmp(s, "# TYPE ", 7) == 0;
        size_t len;
        int r;

        if (strcmp(s, "# EOF") == 0 && p->format == XP_EXPO_OPENMETRICS) {
                p->eof = true;
                return bucket_run_end(p);
        }
        if (!help && !type) {
                if (p->format == XP_EXPO_OPENMETRICS && strncmp(s, "# UNIT ", 7) != 0)
                        return fail(p, "OpenMetrics has no free comments");
                return 0;
        }
        len = name_len(s + 7, true);
        if (len == 0)
                return fail(p, "# %s without a valid metric name", help ? "HELP" : "TYPE");
        r = family_switch(p, s + 7, len);
        if (r < 0)
                return r;
        if (help) {
                if (p->has_help)
                        return fail(p, "a second HELP line for %s", p->family);
                p->has_help = true;
                return 0;
        }
        if (p->has_type)
                return fail(p, "a second TYPE line for %s", p->family);
        if (p->has_samples)
                return fail(p, "TYPE of %s after its samples", p->family);
        if (s[7 + len] != ' ')
                return fail(p, "# TYPE %s without a type", p->family);
        p->has_type = true;
        return parse_type_name(p, s + 8 + len, &p->type);
}

/* ---- samples -------------------------------------------------------------------------------- */

/* The suffix a sample name of the current family has ("" for the family's own name), or NULL. */
static const char *family_suffix(const struct parser *p, const char *name)
{
        static const char *const histogram[] = {"_bucket", "_sum", "_count", "_created", NULL};
        static const char *const counter_om[] = {"_total", "_created", NULL};
        const char *const *suffixes = NULL;
        size_t n = strlen(p->family);

        if (strncmp(name, p->family, n) != 0)
                return NULL;
        if (p->type == XP_EXPO_HISTOGRAM)
                suffixes = histogram;
        else if (p->type == XP_EXPO_COUNTER && p->format == XP_EXPO_OPENMETRICS)
                suffixes = counter_om;
        else
                return name[n] == '\0' ? name + n : NULL;
        for (size_t i = 0; suffixes[i]; i++)
                if (strcmp(name + n, suffixes[i]) == 0)
                        return name + n;
        return NULL;
}

static int check_bucket(struct parser *p, const struct xp_expo_sample *s, const char *name)
{
        const char *le = xp_expo_sample_label(s, "le");
        uint64_t key = series_hash(name, s->labels, s->n_labels, true);
        double bound;
        int r;

        if (!le || !parse_value(le, strlen(le), &bound) || isnan(bound))
                return fail(p, "bucket of %s without a number in le", p->family);
        if (!p->bucket_open || key != p->bucket_key) {
                r = bucket_run_end(p);
                if (r < 0)
                        return r;
                p->bucket_open = true;
                p->bucket_key = key;
        } else if (bound <= p->bucket_le) {
                return fail(p, "bucket le=\"%s\" of %s not above the one before", le, p->family);
        } else if (s->value < p->bucket_count) {
                return fail(
                    p, "bucket le=\"%s\" of %s counts less than the one before", le, p->family);
        }
        p->bucket_le = bound;
        p->bucket_count = s->value;
        return 0;
}

/* The family, type and value rules for a sample; 0 or the failure. */
static int check_sample(struct parser *p, struct xp_expo_sample *s, char *name, size_t name_n)
{
        const char *suffix = p->family[0] ? family_suffix(p, name) : NULL;
        int r;

        if (!suffix) {
                r = family_switch(p, name, name_n);
                if (r < 0)
                        return r;
                suffix = "";
        }
        p->has_samples = true;
        s->family = p->family;
        s->type = p->type;
        r = hashset_add(&p->series, series_hash(name, s->labels, s->n_labels, false));
        if (r < 0)
                return r;
        if (r == 0)
                return fail(p, "series %s given twice with the same labels", name);
        if (p->type == XP_EXPO_COUNTER && !(s->value >= 0))
                return fail(
                    p, "counter %s has the value %g: counters are never negative", name, s->value);
        if (p->type == XP_EXPO_HISTOGRAM && strcmp(suffix, "_bucket") == 0)
                return check_bucket(p, s, name);
        if (p->type == XP_EXPO_HISTOGRAM && xp_expo_sample_label(s, "le"))
                return fail(p, "only the buckets of histogram %s have an le label", p->family);
        return 0;
}

static int parse_sample(struct parser *p, const char *line, xp_expo_sample_fn cb, void *userdata)
{
        _cleanup_free_ char *scratch = malloc(strlen(line) + 1);
        struct xp_expo_label labels[XP_EXPO_LABELS_MAX];
        struct xp_expo_sample s = {.labels = labels};
        size_t len = name_len(line, true), pos, value_end;
        char name[256];
        double ts;
        int r;

        if (!scratch)
                return -ENOMEM;
        if (len == 0 || len >= sizeof(name))
                return fail(p, "a metric name must match [a-zA-Z_:][a-zA-Z0-9_:]*");
        memcpy(name, line, len);
        name[len] = '\0';
        pos = len;
        if (line[pos] == '{') {
                r = parse_labels(p, line, &pos, labels, &s.n_labels, scratch);
                if (r < 0)
                        return r;
        }
        if (line[pos] != ' ')
                return fail(p, "want one space between %s and its value", name);
        pos++;
        value_end = pos + strcspn(line + pos, " ");
        if (!parse_value(line + pos, value_end - pos, &s.value))
                return fail(p,
                            "%s: the value \"%.*s\" is not a number",
                            name,
                            (int)(value_end - pos),
                            line + pos);
        if (line[value_end] == ' ' &&
            !parse_value(line + value_end + 1, strlen(line + value_end + 1), &ts))
                return fail(p, "%s: the timestamp is not a number", name);
        s.name = name;
        r = check_sample(p, &s, name, len);
        if (r < 0)
                return r;
        return cb ? cb(&s, userdata) : 0;
}

static int parse_line(struct parser *p, const char *line, xp_expo_sample_fn cb, void *userdata)
{
        if (p->eof)
                return fail(p, "a line after # EOF");
        if (line[0] == '\0')
                return p->format == XP_EXPO_OPENMETRICS ? fail(p, "an empty line") : 0;
        if (line[0] == '#')
                return parse_comment(p, line);
        return parse_sample(p, line, cb, userdata);
}

int xp_expo_parse(const char *text,
                  size_t len,
                  enum xp_expo_format format,
                  xp_expo_sample_fn cb,
                  void *userdata,
                  struct xp_error *err)
{
        struct parser p = {.format = format, .err = err};
        _cleanup_free_ char *line = NULL;
        size_t start = 0;
        int r = 0;

        if (len > 0 && text[len - 1] != '\n')
                return xp_errorf(err, -EINVAL, "the exposition does not end with a newline");
        while (r >= 0 && start < len) {
                const char *nl = memchr(text + start, '\n', len - start);
                size_t n = (size_t)(nl - (text + start));
                char *copy = realloc(line, n + 1);

                if (!copy) {
                        r = -ENOMEM;
                        break;
                }
                line = copy;
                memcpy(line, text + start, n);
                line[n] = '\0';
                p.line++;
                if (memchr(line, '\0', n))
                        r = fail(&p, "a NUL byte");
                else
                        r = parse_line(&p, line, cb, userdata);
                start += n + 1;
        }
        if (r >= 0)
                r = bucket_run_end(&p);
        if (r >= 0 && format == XP_EXPO_OPENMETRICS && !p.eof)
                r = xp_errorf(err, -EINVAL, "the exposition does not end with # EOF");
        free(p.families.slots);
        free(p.series.slots);
        return r;
}
