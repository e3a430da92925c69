/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods' teardown off the reconcile loop (podclean.h): a pool of one thread whose jobs free
 * themselves when done.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podclean.h"
#include "podconfig.h"
#include "xpool/datadir.h"
#include "xpool/log.h"
#include "xpool/workers.h"

struct xp_agent_podclean {
        struct xp_runtime *runtime;
        const char *data_dir;
        struct xp_workers *pool;
};

struct clean_job {
        struct xp_work work; /* first: the pool's */
        char *namespace, *name, *uid;
        bool whole;
};

static void job_free(struct clean_job *job)
{
        free(job->namespace);
        free(job->name);
        free(job->uid);
        free(job);
}

static void clean(const struct xp_agent_podclean *c,
                  const char *ns,
                  const char *name,
                  const char *uid,
                  bool whole)
{
        struct xp_error err = {0};
        int r;

        if (whole && xp_runtime_remove_logs(c->runtime, ns, name, uid, &err) < 0 &&
            err.code != -ENOENT)
                xp_log(LOG_WARNING,
                       "agent: removing the logs of pod %s/%s: %s",
                       ns,
                       name,
                       xp_error_message(&err));
        xp_error_clear(&err);
        if (whole && xp_runtime_remove_pod(c->runtime, uid, &err) < 0 && err.code != -EBUSY)
                xp_log(LOG_WARNING,
                       "agent: removing what pod %s/%s left on the node: %s",
                       ns,
                       name,
                       xp_error_message(&err));
        r = xp_podconfig_volumes_remove(c->data_dir, uid);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "agent: removing the volumes of pod %s/%s: %s",
                       ns,
                       name,
                       strerror(-r));
}

static void clean_run(void *userdata, void *ctx, struct xp_work *work)
{
        const struct clean_job *job = (const struct clean_job *)work;

        (void)ctx;
        clean(userdata, job->namespace, job->name, job->uid, job->whole);
}

static void clean_done(void *userdata, void *ctx, struct xp_work *work)
{
        (void)userdata;
        (void)ctx;
        job_free((struct clean_job *)work);
}

static void clean_free(struct xp_work *work)
{
        job_free((struct clean_job *)work);
}

static const struct xp_workers_ops clean_ops = {
    .run = clean_run, .done = clean_done, .free = clean_free};

int xp_agent_podclean_new(struct xp_runtime *runtime,
                          const char *data_dir,
                          struct xp_agent_podclean **ret,
                          struct xp_error *err)
{
        struct xp_agent_podclean *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return xp_errorf(err, -ENOMEM, "out of memory");
        c->runtime = runtime;
        c->data_dir = data_dir;
        r = xp_workers_new(
            &(struct xp_workers_options){.ops = &clean_ops, .userdata = c, .threads = 1},
            &c->pool,
            err);
        if (r < 0) {
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

void xp_agent_podclean_free(struct xp_agent_podclean *c)
{
        if (!c)
                return;
        xp_workers_free(c->pool);
        free(c);
}

void xp_agent_podclean_submit(struct xp_agent_podclean *c,
                              const char *pod_namespace,
                              const char *pod_name,
                              const char *pod_uid,
                              bool whole)
{
        struct clean_job *job = calloc(1, sizeof(*job));

        if (job) {
                job->namespace = strdup(pod_namespace);
                job->name = strdup(pod_name);
                job->uid = strdup(pod_uid);
                job->whole = whole;
        }
        if (!job || !job->namespace || !job->name || !job->uid) {
                if (job)
                        job_free(job);
                clean(c, pod_namespace, pod_name, pod_uid, whole);
                return;
        }
        xp_workers_submit(c->pool, &job->work);
}

/* One kind of leftover the sweep looks for: the directory that holds them, and the removal of
 * one entry of it (1 removed, 0 not a leftover, -errno). */
struct sweep_kind {
        const char *what;
        int (*remove)(const struct sweep_kind *k, const char *entry);
        struct xp_runtime *runtime;
        const char *data_dir;
        bool (*known)(const char *uid, void *userdata);
        void *userdata;
};

static int sweep_volumes_entry(const struct sweep_kind *k, const char *uid)
{
        int r;

        if (k->known(uid, k->userdata))
                return 0;
        r = xp_podconfig_volumes_remove(k->data_dir, uid);
        return r < 0 ? r : 1;
}

/* DATA/logs/<ns>_<name>_<uid>: namespaces and names are DNS labels, so the first and the last
 * '_' split it; anything else is no pod's directory and stays. */
static int sweep_logs_entry(const struct sweep_kind *k, const char *entry)
{
        char leaf[256];
        char *name, *uid;
        struct xp_error err = {0};
        int r;

        if (snprintf(leaf, sizeof(leaf), "%s", entry) >= (int)sizeof(leaf))
                return 0;
        name = strchr(leaf, '_');
        uid = strrchr(leaf, '_');
        if (!name || name == uid || name == leaf || !uid[1] || uid == name + 1)
                return 0;
        *name++ = '\0';
        *uid++ = '\0';
        if (k->known(uid, k->userdata))
                return 0;
        r = xp_runtime_remove_logs(k->runtime, leaf, name, uid, &err);
        xp_error_clear(&err);
        return r < 0 ? r : 1;
}

/* The runtime's .pods/<uid> (with it the pod's IPC pin): -EBUSY, a container of it still has
 * state, is a pod the runtime still has, and it stays. */
static int sweep_pods_entry(const struct sweep_kind *k, const char *uid)
{
        struct xp_error err = {0};
        int r;

        if (k->known(uid, k->userdata))
                return 0;
        r = xp_runtime_remove_pod(k->runtime, uid, &err);
        xp_error_clear(&err);
        if (r == -EBUSY)
                return 0;
        return r < 0 ? r : 1;
}

static int sweep_dir(const char *dir, const struct sweep_kind *k)
{
        struct dirent *e;
        DIR *d = opendir(dir);
        int removed = 0;

        if (!d)
                return 0;
        while ((e = readdir(d))) {
                int r;

                /* "." "..", and anything hidden, is no pod's: pods' entries are named by uid */
                if (e->d_name[0] == '.')
                        continue;
                r = k->remove(k, e->d_name);
                if (r < 0)
                        xp_log(LOG_WARNING,
                               "agent: removing %s/%s, the %s of no pod of this node: %s",
                               dir,
                               e->d_name,
                               k->what,
                               strerror(-r));
                else if (r > 0)
                        xp_log(LOG_INFO,
                               "agent: removed %s/%s, the %s of no pod of this node",
                               dir,
                               e->d_name,
                               k->what);
                removed += r > 0;
        }
        closedir(d);
        return removed;
}

int xp_agent_podclean_sweep(struct xp_runtime *runtime,
                            const char *data_dir,
                            const char *state_dir,
                            bool (*known)(const char *uid, void *userdata),
                            void *userdata)
{
        struct sweep_kind k = {
            .runtime = runtime, .data_dir = data_dir, .known = known, .userdata = userdata};
        char path[4096];
        int removed = 0;

        k.what = "volumes";
        k.remove = sweep_volumes_entry;
        snprintf(path, sizeof(path), "%s/volumes", data_dir);
        removed += sweep_dir(path, &k);
        k.what = "logs";
        k.remove = sweep_logs_entry;
        snprintf(path, sizeof(path), "%s/" XP_DATADIR_LOGS, data_dir);
        removed += sweep_dir(path, &k);
        k.what = "runtime's files";
        k.remove = sweep_pods_entry;
        snprintf(path, sizeof(path), "%s/.pods", state_dir);
        removed += sweep_dir(path, &k);
        return removed;
}
