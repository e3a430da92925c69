/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's write queue (retryq.h): entries by pod uid in a search tree, the waiting ones in a
 * FIFO list scanned for the first one due. Pure: the clock is the caller's.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "finalstatus.h"
#include "retryq.h"

struct qentry {
        char *uid, *namespace, *name;
        json_t *status;     /* waiting to be written; NULL: none */
        const json_t *sent; /* the status of the write out (the writer's), until it is done */
        bool delete;        /* a DELETE waits (behind the status) */
        bool queued;        /* in the list */
        bool out;           /* handed to a writer */
        bool dropped;       /* the pod went while a write was out: freed when it comes back */
        bool unreachable;   /* the last failure had no answer from the server */
        unsigned tries;
        int64_t due_ns;  /* the back-off's end */
        int64_t hold_ns; /* the waiting status waits for a newer one until then; 0: none */
        struct qentry *next;
};

struct xp_retryq {
        struct xp_retryq_config config;
        void *tree; /* struct qentry by uid */
        struct qentry *head, *tail;
        size_t n;
        json_t *finals; /* what the pods' terminal statuses fixed, by uid (finalstatus.h) */
};

static int entry_compare(const void *a, const void *b)
{
        return strcmp(((const struct qentry *)a)->uid, ((const struct qentry *)b)->uid);
}

static void entry_free(void *p)
{
        struct qentry *e = p;

        json_decref(e->status);
        free(e->uid);
        free(e->namespace);
        free(e->name);
        free(e);
}

int xp_retryq_new(const struct xp_retryq_config *config, struct xp_retryq **ret)
{
        struct xp_retryq *q;

        if (config->initial_ns <= 0 || config->max_ns < config->initial_ns)
                return -EINVAL;
        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->config = *config;
        q->finals = json_object();
        if (!q->finals) {
                free(q);
                return -ENOMEM;
        }
        *ret = q;
        return 0;
}

void xp_retryq_free(struct xp_retryq *q)
{
        if (!q)
                return;
        tdestroy(q->tree, entry_free);
        json_decref(q->finals);
        free(q);
}

size_t xp_retryq_pods(const struct xp_retryq *q)
{
        return q->n;
}

static void enqueue(struct xp_retryq *q, struct qentry *e)
{
        if (e->queued || e->out)
                return;
        e->queued = true;
        e->next = NULL;
        if (q->tail)
                q->tail->next = e;
        else
                q->head = e;
        q->tail = e;
}

static void unlink_entry(struct xp_retryq *q, struct qentry *e)
{
        struct qentry *prev = NULL;

        if (!e->queued)
                return;
        for (struct qentry *i = q->head; i; prev = i, i = i->next) {
                if (i != e)
                        continue;
                if (prev)
                        prev->next = e->next;
                else
                        q->head = e->next;
                if (q->tail == e)
                        q->tail = prev;
                break;
        }
        e->queued = false;
        e->next = NULL;
}

/* Out of the tree (and the count); freed now unless a write of it is out. */
static void forget(struct xp_retryq *q, struct qentry *e)
{
        unlink_entry(q, e);
        tdelete(e, &q->tree, entry_compare);
        q->n--;
        if (e->out)
                e->dropped = true;
        else
                entry_free(e);
}

/* The entry of uid, made when missing. NULL on -ENOMEM. */
static struct qentry *
entry_get(struct xp_retryq *q, const char *ns, const char *name, const char *uid)
{
        struct qentry key = {.uid = (char *)uid}, *e, **found;

        found = tfind(&key, &q->tree, entry_compare);
        if (found)
                return *found;
        e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        e->uid = strdup(uid);
        e->namespace = strdup(ns);
        e->name = strdup(name);
        if (!e->uid || !e->namespace || !e->name || !tsearch(e, &q->tree, entry_compare)) {
                entry_free(e);
                return NULL;
        }
        q->n++;
        return e;
}

int xp_retryq_put_status(struct xp_retryq *q,
                         const char *pod_namespace,
                         const char *pod_name,
                         const char *uid,
                         json_t *status,
                         int64_t hold_until_ns)
{
        /* the rule first: a status it turns terminal is compared and held as one */
        int terminal = xp_agent_final_status(q->finals, uid, status);
        struct qentry *e = terminal < 0 ? NULL : entry_get(q, pod_namespace, pod_name, uid);

        if (!e) {
                json_decref(status);
                return -ENOMEM;
        }
        if (terminal)
                hold_until_ns = 0; /* final: due at once */
        /* the same status as the write out, with none waiting: that write says it already (a
         * pod synced again before its own write comes back in the watch, or in the same sync);
         * should it fail, it is put back and tried again */
        if (e->out && e->sent && !e->status && json_equal(e->sent, status)) {
                json_decref(status);
                return 0;
        }
        /* a hold only ever shortens: a pod changing every millisecond is still written */
        if (hold_until_ns <= 0 || !e->status)
                e->hold_ns = hold_until_ns > 0 ? hold_until_ns : 0;
        else if (e->hold_ns > hold_until_ns)
                e->hold_ns = hold_until_ns;
        json_decref(e->status);
        e->status = status;
        enqueue(q, e);
        return 0;
}

int xp_retryq_put_delete(struct xp_retryq *q,
                         const char *pod_namespace,
                         const char *pod_name,
                         const char *uid)
{
        struct qentry *e = entry_get(q, pod_namespace, pod_name, uid);

        if (!e)
                return -ENOMEM;
        e->delete = true;
        enqueue(q, e);
        return 0;
}

void xp_retryq_drop(struct xp_retryq *q, const char *uid)
{
        struct qentry key = {.uid = (char *)uid}, **found;

        (void)json_object_del(q->finals, uid);
        found = tfind(&key, &q->tree, entry_compare);
        if (found)
                forget(q, *found);
}

bool xp_retryq_take(struct xp_retryq *q,
                    int64_t now_ns,
                    struct xp_retryq_write *ret,
                    int64_t *ret_next)
{
        struct qentry *e;

        *ret_next = 0;
        for (e = q->head; e; e = e->next) {
                int64_t due = e->status && e->hold_ns > e->due_ns ? e->hold_ns : e->due_ns;

                if (due <= now_ns)
                        break;
                if (*ret_next == 0 || due < *ret_next)
                        *ret_next = due;
        }
        if (!e)
                return false;
        unlink_entry(q, e);
        e->out = true;
        e->sent = e->status;
        e->hold_ns = 0;
        *ret = (struct xp_retryq_write){
            .uid = e->uid,
            .namespace = e->namespace,
            .name = e->name,
            .status = e->status,
            .tries = e->tries,
            .entry = e,
        };
        /* the status first: the delete is the pod's last write */
        if (e->status)
                e->status = NULL;
        else
                e->delete = false;
        return true;
}

/* The server answered: writes waiting out a back-off because it did not are due now. */
static void bring_forward(struct xp_retryq *q, int64_t now_ns)
{
        for (struct qentry *e = q->head; e; e = e->next)
                if (e->unreachable && e->due_ns > now_ns)
                        e->due_ns = now_ns;
}

static int64_t backoff(const struct xp_retryq_config *c, unsigned tries)
{
        int64_t wait = c->initial_ns;

        for (unsigned i = 1; i < tries && wait < c->max_ns; i++)
                wait *= 2;
        return wait < c->max_ns ? wait : c->max_ns;
}

int64_t xp_retryq_done(struct xp_retryq *q,
                       struct xp_retryq_write *w,
                       enum xp_retryq_outcome outcome,
                       int64_t now_ns)
{
        struct qentry *e = w->entry;
        json_t *status = w->status;
        int64_t wait = 0;

        *w = (struct xp_retryq_write){0};
        e->out = false;
        e->sent = NULL;
        if (e->dropped) {
                json_decref(status);
                entry_free(e);
                return 0;
        }
        switch (outcome) {
        case XP_RETRYQ_GONE:
                json_decref(status);
                (void)json_object_del(q->finals, e->uid);
                forget(q, e);
                return 0;
        case XP_RETRYQ_LANDED:
                json_decref(status);
                e->tries = 0;
                e->due_ns = 0;
                e->unreachable = false;
                bring_forward(q, now_ns);
                break;
        case XP_RETRYQ_UNREACHABLE:
        case XP_RETRYQ_REFUSED:
                /* put back what failed, unless something newer replaced it meanwhile */
                if (!status)
                        e->delete = true;
                else if (!e->status)
                        e->status = status;
                else
                        json_decref(status);
                e->tries++;
                e->unreachable = outcome == XP_RETRYQ_UNREACHABLE;
                wait = backoff(&q->config, e->tries);
                e->due_ns = now_ns + wait;
                break;
        }
        if (e->status || e->delete)
                enqueue(q, e);
        else
                forget(q, e);
        return wait;
}
