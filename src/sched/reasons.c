/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why a pod fits nowhere, in kube-scheduler's words (framework.FitError): each reason with the
 * count of nodes that gave it, "<count> <reason>", sorted as strings, joined with ", ":
 *   0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient
 * nvidia.com/gpu.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

int reason_describe(const struct xp_sched *sched, const struct reason *r, char **ret)
{
        int n;

        switch (r->kind) {
        case REASON_UNSCHEDULABLE:
                n = asprintf(ret, "node(s) were unschedulable");
                break;
        case REASON_AFFINITY:
                n = asprintf(ret, "node(s) didn't match Pod's node affinity/selector");
                break;
        case REASON_TAINT:
                n = asprintf(
                    ret, "node(s) had untolerated taint {%s: %s}", r->taint->key, r->taint->value);
                break;
        case REASON_INSUFFICIENT:
                n = asprintf(ret, "Insufficient %s", sched->res_names[r->res]);
                break;
        case REASON_TOO_MANY_PODS:
                n = asprintf(ret, "Too many pods");
                break;
        case REASON_ANTI_AFFINITY:
                n = asprintf(ret, "node(s) didn't match pod anti-affinity rules");
                break;
        case REASON_EXISTING_ANTI_AFFINITY:
                n = asprintf(ret, "node(s) didn't satisfy existing pods anti-affinity rules");
                break;
        case REASON_HOST_PORTS:
                n = asprintf(ret, "node(s) didn't have free ports for the requested pod ports");
                break;
        case REASON_NUMA:
        default:
                n = asprintf(ret, "node(s) couldn't align devices and CPUs on one NUMA node");
                break;
        }
        if (n < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

bool reason_unresolvable(const struct reason *r)
{
        return r->kind == REASON_UNSCHEDULABLE || r->kind == REASON_AFFINITY ||
               r->kind == REASON_TAINT;
}

static int
reason_text(const struct xp_sched *sched, const struct reason *r, size_t count, char **ret)
{
        _cleanup_free_ char *text = NULL;
        int rc = reason_describe(sched, r, &text);

        if (rc < 0)
                return rc;
        if (asprintf(ret, "%zu %s", count, text) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* The node's reasons in kube-scheduler's words, joined by ", ". */
int reasons_join(const struct xp_sched *sched, const struct reasons *rs, char **ret)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        for (size_t i = 0; i < rs->n; i++) {
                _cleanup_free_ char *one = NULL;
                size_t l;
                char *m;
                int r = reason_describe(sched, &rs->items[i], &one);

                if (r < 0)
                        return r;
                l = strlen(one);
                m = realloc(text, len + l + 3);
                if (!m)
                        return -ENOMEM;
                text = m;
                if (len) {
                        memcpy(text + len, ", ", 2);
                        len += 2;
                }
                memcpy(text + len, one, l + 1);
                len += l;
        }
        *ret = TAKE_PTR(text);
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int reasons_format(const struct xp_sched *sched,
                   size_t n_nodes,
                   const struct reason_hist *hist,
                   size_t n_hist,
                   char **ret)
{
        _cleanup_free_ char **texts = NULL;
        char *buf = NULL;
        size_t len;
        FILE *f;
        int r = 0;

        if (n_nodes == 0) {
                buf = strdup("no nodes available to schedule pods");
                if (!buf)
                        return -ENOMEM;
                *ret = buf;
                return 0;
        }
        texts = calloc(n_hist + 1, sizeof(*texts));
        if (!texts)
                return -ENOMEM;
        for (size_t i = 0; i < n_hist && r == 0; i++)
                r = reason_text(sched, &hist[i].reason, hist[i].count, &texts[i]);
        if (r == 0) {
                qsort(texts, n_hist, sizeof(*texts), cmp_str);
                f = open_memstream(&buf, &len);
                if (!f) {
                        r = -ENOMEM;
                } else {
                        fprintf(f, "0/%zu nodes are available:", n_nodes);
                        for (size_t i = 0; i < n_hist; i++)
                                fprintf(f, "%s%s", i ? ", " : " ", texts[i]);
                        fputc('.', f);
                        if (fclose(f) != 0) {
                                free(buf);
                                r = -ENOMEM;
                        }
                }
        }
        for (size_t i = 0; i < n_hist; i++)
                free(texts[i]);
        if (r < 0)
                return r;
        *ret = buf;
        return 0;
}
