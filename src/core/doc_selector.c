/* SPDX-License-Identifier: Apache-2.0 */
/* A LabelSelector object in selector syntax (xpool/doc.h), as a Scale's status.selector. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/doc.h"

struct requirement {
        const char *key;
        const json_t *expression; /* NULL: key=value of matchLabels */
        const char *value;
};

static int by_key(const void *a, const void *b)
{
        return strcmp(((const struct requirement *)a)->key, ((const struct requirement *)b)->key);
}

static int by_string(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "k in (a,b)": the values sorted, as Kubernetes' Requirement.String(). */
static int print_values(FILE *f, const json_t *values)
{
        size_t n = json_array_size(values), i;
        const char **sorted = calloc(n ? n : 1, sizeof(*sorted));
        const json_t *v;

        if (!sorted)
                return -ENOMEM;
        json_array_foreach(values, i, v) sorted[i] = json_is_string(v) ? json_string_value(v) : "";
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(sorted, n, sizeof(*sorted), by_string);
        fputc('(', f);
        for (i = 0; i < n; i++)
                fprintf(f, "%s%s", i ? "," : "", sorted[i]);
        fputc(')', f);
        free(sorted);
        return 0;
}

static int print_requirement(FILE *f, const struct requirement *q)
{
        const char *op = q->expression ? xp_json_str_at(q->expression, "operator", "") : "";
        const json_t *values = q->expression ? json_object_get(q->expression, "values") : NULL;

        if (!q->expression)
                return fprintf(f, "%s=%s", q->key, q->value), 0;
        if (strcmp(op, "Exists") == 0)
                return fprintf(f, "%s", q->key), 0;
        if (strcmp(op, "DoesNotExist") == 0)
                return fprintf(f, "!%s", q->key), 0;
        fprintf(f, "%s %s ", q->key, strcmp(op, "NotIn") == 0 ? "notin" : "in");
        return print_values(f, values);
}

static size_t collect(const json_t *selector, struct requirement *out)
{
        const json_t *labels = xp_json_object_at(selector, "matchLabels");
        const json_t *expressions = json_object_get(selector, "matchExpressions");
        const char *key;
        json_t *v;
        size_t n = 0, i;

        json_object_foreach((json_t *)labels, key, v) out[n++] = (struct requirement){
            .key = key, .value = json_is_string(v) ? json_string_value(v) : ""};
        json_array_foreach(expressions, i, v)
        {
                if (json_is_object(v))
                        out[n++] = (struct requirement){.key = xp_json_str_at(v, "key", ""),
                                                        .expression = v};
        }
        return n;
}

int xp_json_label_selector_string(const json_t *selector, char **ret)
{
        size_t max = json_object_size(xp_json_object_at(selector, "matchLabels")) +
                     json_array_size(json_object_get(selector, "matchExpressions"));
        struct requirement *reqs = calloc(max ? max : 1, sizeof(*reqs));
        char *text = NULL;
        size_t len = 0, n;
        FILE *f;
        int r = 0;

        if (!reqs)
                return -ENOMEM;
        n = collect(selector, reqs);
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(reqs, n, sizeof(*reqs), by_key);
        f = open_memstream(&text, &len);
        if (!f) {
                free(reqs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (i)
                        fputc(',', f);
                r = print_requirement(f, &reqs[i]);
        }
        free(reqs);
        if (fclose(f) != 0 || r < 0) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        return 0;
}
