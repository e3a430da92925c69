/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether two failures of a pod give the same reasons. Kube-scheduler's message counts the
 * nodes ("0/3 nodes are available: 1 node(s) didn't match ..., 2 Insufficient cpu."), so it
 * changes whenever a node comes or goes although nothing changed for the pod: compared as text,
 * every pass over thousands of waiting pods would rewrite each one's status and start a new
 * Event. Compared here: the reasons without their counts, in any order (they are sorted as
 * strings with their counts, so a count going from 9 to 10 can move one). A message with
 * preemption's tail ("... 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No
 * preemption victims found for incoming pod.") is compared in its two parts, each so.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/macro.h"

#include "scheduler_state.h"

#define REASONS_MAX 32 /* more reasons than this: compared as text */

static const char reasons_prefix[] = " nodes are available: ";

/* The reasons of a FitError's message ("0/N nodes are available: " skipped), or NULL. */
static const char *reasons_start(const char *message)
{
        const char *c = message;

        if (strncmp(c, "0/", 2) != 0)
                return NULL;
        c += 2;
        if (*c < '0' || *c > '9')
                return NULL;
        while (*c >= '0' && *c <= '9')
                c++;
        if (strncmp(c, reasons_prefix, sizeof reasons_prefix - 1) != 0)
                return NULL;
        return c + sizeof reasons_prefix - 1;
}

struct reason_text {
        const char *text;
        size_t len;
};

/* Splits reasons at ", " into ret without each one's leading count: how many, or -1 when more
 * than REASONS_MAX. */
static int reasons_split(const char *reasons, struct reason_text ret[static REASONS_MAX])
{
        int n = 0;

        for (const char *c = reasons; c;) {
                const char *end = strstr(c, ", ");
                const char *text = c;

                if (n == REASONS_MAX)
                        return -1;
                while (*text >= '0' && *text <= '9')
                        text++;
                if (text > c && *text == ' ')
                        text++;
                else
                        text = c;
                ret[n].text = text;
                ret[n].len = end ? (size_t)(end - text) : strlen(text);
                if (ret[n].len > 0 && text[ret[n].len - 1] == '.')
                        ret[n].len--; /* the last one's full stop, wherever it sorted */
                n++;
                c = end ? end + 2 : NULL;
        }
        return n;
}

static bool one_same(const char *a, const char *b)
{
        struct reason_text ra[REASONS_MAX], rb[REASONS_MAX];
        bool used[REASONS_MAX] = {false};
        const char *sa, *sb;
        int na, nb;

        if (!a || !b)
                return a == b;
        sa = reasons_start(a);
        sb = reasons_start(b);
        if (!sa || !sb)
                return strcmp(a, b) == 0;
        na = reasons_split(sa, ra);
        nb = reasons_split(sb, rb);
        if (na < 0 || nb < 0)
                return strcmp(a, b) == 0;
        if (na != nb)
                return false;
        for (int i = 0; i < na; i++) {
                int j = 0;

                while (j < nb && (used[j] || rb[j].len != ra[i].len ||
                                  memcmp(rb[j].text, ra[i].text, ra[i].len) != 0))
                        j++;
                if (j == nb)
                        return false;
                used[j] = true;
        }
        return true;
}

static const char tail_mark[] = ". preemption: ";

/* Whether a reason (its count left out) says the node lacked room: a resource or a pod's place. */
static bool reason_is_room(const struct reason_text *r)
{
        static const char *const room[] = {"Insufficient ", "Too many pods"};

        for (size_t i = 0; i < XP_ELEMENTSOF(room); i++)
                if (r->len >= strlen(room[i]) && strncmp(r->text, room[i], strlen(room[i])) == 0)
                        return true;
        return false;
}

bool reasons_room_only(const char *message)
{
        struct reason_text reasons[REASONS_MAX];
        const char *start = message ? reasons_start(message) : NULL;
        const char *tail = start ? strstr(start, tail_mark) : NULL;
        _cleanup_free_ char *head = NULL;
        int n;

        if (!start)
                return false;
        /* preemption's tail says why evicting would not help, not why the pod did not fit */
        if (tail && !(start = head = strndup(start, (size_t)(tail - start))))
                return false;
        n = reasons_split(start, reasons);
        for (int i = 0; i < n; i++)
                if (!reason_is_room(&reasons[i]))
                        return false;
        return n > 0;
}

bool reasons_same(const char *a, const char *b)
{
        const char *ta = a ? strstr(a, tail_mark) : NULL, *tb = b ? strstr(b, tail_mark) : NULL;
        _cleanup_free_ char *ha = NULL, *hb = NULL;

        if (!ta && !tb)
                return one_same(a, b);
        if (!ta || !tb)
                return false;
        /* the heads keep their full stop, as a message without a tail ends */
        ha = strndup(a, (size_t)(ta - a) + 1);
        hb = strndup(b, (size_t)(tb - b) + 1);
        if (!ha || !hb)
                return strcmp(a, b) == 0;
        return one_same(ha, hb) && one_same(ta + sizeof tail_mark - 1, tb + sizeof tail_mark - 1);
}
