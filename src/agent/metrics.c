/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's metrics threads (metrics.h). The device thread calls the drivers and then, under
 * the lock, swaps its new sample in; the render thread reads the pods, the cgroups and the node,
 * then under the lock renders the expositions from the last sample and swaps them in. The lock
 * is never held across a driver call or a file read, so a scrape, which only copies a rendering,
 * answers at once even while a driver call hangs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "metrics_internal.h"
#include "xpool/devsample.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define DEFAULT_INTERVAL_MS 10000

struct rendering {
        char *text;
        size_t len;
};

struct xp_agent_metrics {
        const struct xp_node_inventory *inventory;
        struct xp_agent_pods *pods;
        char *node_name, *hostname;
        char *cgroup_parent; /* of the pods' groups */
        int64_t interval_ms;
        struct xp_device_sampler *sampler;
        struct xp_cgroup_root *cgroups; /* NULL: no container figures */

        pthread_mutex_t lock; /* guards what follows; never held across I/O */
        pthread_cond_t wake;
        bool stopping;
        struct xp_device_samples samples; /* the last; n 0 until the first */
        bool have_samples;
        bool render_now;             /* a fresh sample came in */
        struct rendering metrics[2]; /* by enum xp_expo_format */
        struct rendering resource;

        void (*on_health)(void *userdata, const struct xp_agent_device_health *h, size_t n);
        void *on_health_userdata;
        bool health_new; /* a sample came in that on_health has not seen */
        pthread_t device_thread, render_thread;
        bool device_started, render_started;
};

/*
 * Waits up to ms, until stopping, or (flag not NULL) until *flag is set, which it clears: true
 * when stopping. Called with the lock held.
 */
static bool wait_locked(struct xp_agent_metrics *m, int64_t ms, bool *flag)
{
        struct timespec until = xp_monotonic_deadline(ms);

        while (!m->stopping && !(flag && *flag) &&
               pthread_cond_timedwait(&m->wake, &m->lock, &until) == 0)
                ;
        if (flag)
                *flag = false;
        return m->stopping;
}

static void *device_main(void *arg)
{
        struct xp_agent_metrics *m = arg;

        pthread_mutex_lock(&m->lock);
        while (!m->stopping) {
                struct xp_device_samples fresh = {0}, old;
                int64_t start = xp_monotonic_ms();
                int r;

                pthread_mutex_unlock(&m->lock);
                r = xp_device_sampler_read(m->sampler, start, &fresh); /* may hang */
                fresh.duration_ms = xp_monotonic_ms() - start;
                pthread_mutex_lock(&m->lock);
                if (r >= 0) {
                        old = m->samples;
                        m->samples = fresh;
                        m->have_samples = true;
                        m->render_now = true; /* show it without waiting a round */
                        m->health_new = true;
                        pthread_cond_broadcast(&m->wake);
                        pthread_mutex_unlock(&m->lock);
                        xp_device_samples_done(&old);
                        pthread_mutex_lock(&m->lock);
                }
                wait_locked(m, m->interval_ms, NULL);
        }
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

static int render(struct xp_expo *w,
                  enum xp_expo_format f,
                  const struct mrender *r,
                  bool resource,
                  struct rendering *ret)
{
        int rc = xp_expo_init(w, f);

        if (rc < 0)
                return rc;
        if (resource)
                mrender_resource(w, r);
        else
                mrender_metrics(w, r);
        return xp_expo_finish(w, &ret->text, &ret->len);
}

/* Renders the three expositions from view and the last sample, and swaps them in. */
static void render_round(struct xp_agent_metrics *m, const struct mview *view)
{
        struct rendering fresh[3] = {{0}}, old[3];
        struct xp_expo w;
        int r;

        pthread_mutex_lock(&m->lock);
        struct mrender mr = {
            .inventory = m->inventory,
            .samples = m->have_samples ? &m->samples : NULL,
            .view = view,
            .node_name = m->node_name,
            .hostname = m->hostname,
            .sample_age_s =
                m->have_samples ? (double)(xp_monotonic_ms() - m->samples.taken_ms) / 1000.0 : -1,
        };
        r = render(&w, XP_EXPO_TEXT, &mr, false, &fresh[0]);
        if (r >= 0)
                r = render(&w, XP_EXPO_OPENMETRICS, &mr, false, &fresh[1]);
        if (r >= 0)
                r = render(&w, XP_EXPO_TEXT, &mr, true, &fresh[2]);
        if (r >= 0) {
                old[0] = m->metrics[0];
                old[1] = m->metrics[1];
                old[2] = m->resource;
                m->metrics[0] = fresh[0];
                m->metrics[1] = fresh[1];
                m->resource = fresh[2];
        } else {
                memcpy(old, fresh, sizeof(old));
        }
        pthread_mutex_unlock(&m->lock);
        for (size_t i = 0; i < 3; i++)
                free(old[i].text);
}

/* The new sample's device health to on_health, copied under the lock and handed outside it. */
static void report_health(struct xp_agent_metrics *m)
{
        struct xp_agent_device_health *h = NULL;
        size_t n = 0;

        pthread_mutex_lock(&m->lock);
        if (m->on_health && m->health_new && m->samples.n > 0 &&
            (h = calloc(m->samples.n, sizeof(*h)))) {
                n = m->samples.n;
                for (size_t i = 0; i < n; i++) {
                        h[i].health = m->samples.items[i].health;
                        memcpy(h[i].reason, m->samples.items[i].health_reason, sizeof(h[i].reason));
                }
                m->health_new = false;
        }
        pthread_mutex_unlock(&m->lock);
        if (n > 0)
                m->on_health(m->on_health_userdata, h, n);
        free(h);
}

static void *render_main(void *arg)
{
        struct xp_agent_metrics *m = arg;

        for (;;) {
                struct mview view = {0};

                if (mview_read(m->pods, m->cgroups, m->cgroup_parent, &view) >= 0) {
                        render_round(m, &view);
                        mview_done(&view);
                }
                report_health(m);
                pthread_mutex_lock(&m->lock);
                if (wait_locked(m, m->interval_ms, &m->render_now)) {
                        pthread_mutex_unlock(&m->lock);
                        return NULL;
                }
                pthread_mutex_unlock(&m->lock);
        }
}

int xp_agent_metrics_scrape(struct xp_agent_metrics *m,
                            bool resource,
                            enum xp_expo_format format,
                            char **ret_text,
                            size_t *ret_len)
{
        const struct rendering *r;
        char *copy;
        size_t len;

        pthread_mutex_lock(&m->lock);
        r = resource ? &m->resource : &m->metrics[format == XP_EXPO_OPENMETRICS];
        len = r->text ? r->len : 0;
        copy = malloc(len + 1);
        if (copy) {
                if (len)
                        memcpy(copy, r->text, len);
                copy[len] = '\0';
        }
        pthread_mutex_unlock(&m->lock);
        if (!copy)
                return -ENOMEM;
        *ret_text = copy;
        *ret_len = len;
        return 0;
}

/* Joins the device thread, waiting at most 10 s for a hung driver call: false when it did not. */
static bool join_device_thread(struct xp_agent_metrics *m)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        if (pthread_timedjoin_np(m->device_thread, NULL, &until) == 0)
                return true;
        xp_log(LOG_WARNING, "agent: a device driver call still hangs; leaving it behind");
        pthread_detach(m->device_thread);
        return false;
}

void xp_agent_metrics_free(struct xp_agent_metrics *m)
{
        bool joined = true;

        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->stopping = true;
        pthread_cond_broadcast(&m->wake);
        pthread_mutex_unlock(&m->lock);
        if (m->render_started)
                pthread_join(m->render_thread, NULL);
        if (m->device_started)
                joined = join_device_thread(m);
        if (!joined)
                return; /* the thread still uses the sampler: leave it all to the exit */
        xp_device_sampler_free(m->sampler);
        xp_device_samples_done(&m->samples);
        xp_cgroup_root_free(m->cgroups);
        for (size_t i = 0; i < 2; i++)
                free(m->metrics[i].text);
        free(m->resource.text);
        free(m->node_name);
        free(m->cgroup_parent);
        free(m->hostname);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

static int metrics_alloc(const struct xp_agent_metrics_config *c, struct xp_agent_metrics **ret)
{
        struct xp_agent_metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        xp_cond_init_monotonic(&m->wake);
        m->inventory = c->inventory;
        m->on_health = c->on_health;
        m->on_health_userdata = c->on_health_userdata;
        m->pods = c->pods;
        m->interval_ms = c->interval_ms > 0 ? c->interval_ms : DEFAULT_INTERVAL_MS;
        m->node_name = strdup(c->node_name ? c->node_name : "");
        m->hostname = strdup(c->hostname ? c->hostname : (c->node_name ? c->node_name : ""));
        m->cgroup_parent = strdup(c->cgroup_parent ? c->cgroup_parent : XP_CGROUP_PARENT_LEGACY);
        *ret = m;
        return m->node_name && m->hostname && m->cgroup_parent ? 0 : -ENOMEM;
}

int xp_agent_metrics_new(const struct xp_agent_metrics_config *c,
                         struct xp_agent_metrics **ret,
                         struct xp_error *err)
{
        _cleanup_(xp_agent_metrics_freep) struct xp_agent_metrics *m = NULL;
        int r;

        r = metrics_alloc(c, &m);
        if (r < 0)
                return xp_errorf(err, r, "out of memory");
        r = xp_device_sampler_new(c->discovery, c->inventory, &m->sampler, err);
        if (r < 0)
                return xp_error_prefix(err, r, "device metrics");
        if (xp_cgroup_root_open(c->cgroup_root ? c->cgroup_root : "/", &m->cgroups, NULL) < 0)
                m->cgroups = NULL;
        r = -pthread_create(&m->device_thread, NULL, device_main, m);
        if (r < 0)
                return xp_errorf(err, r, "cannot start the device sampler: %s", strerror(-r));
        m->device_started = true;
        r = -pthread_create(&m->render_thread, NULL, render_main, m);
        if (r < 0)
                return xp_errorf(err, r, "cannot start the metrics thread: %s", strerror(-r));
        m->render_started = true;
        *ret = TAKE_PTR(m);
        return 0;
}
