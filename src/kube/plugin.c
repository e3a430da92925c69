/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device plugin's life (include/kube/xpool/kubeplugin.h): discovery, CDI specs, one endpoint
 * per resource, and one loop that serves gRPC, polls the health watch and watches the plugin
 * directory.
 *
 * The kubelet removes every socket in its directory when it starts and then creates
 * kubelet.sock. inotify on the directory tells of both; each endpoint whose socket is gone is
 * served again on a new socket, and each endpoint not registered with the kubelet that now owns
 * kubelet.sock (its inode) registers. The same check runs every few seconds anyway, in case an
 * event was lost (inotify's queue overflows, or the directory itself was replaced). Devices and
 * their health live in the plugin, allocations in the kubelet's checkpoint: a restart loses
 * neither.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_internal.h"
#include "xpool/cdi.h"
#include "xpool/log.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define LOOP_TICK_MS      200  /* the longest a health change or an inotify event waits */
#define CHECK_INTERVAL_MS 5000 /* socket checks without an event */

/* ---- endpoints ------------------------------------------------------------------------------- */

static int endpoint_serve(struct kube_endpoint *ep, struct xp_error *err)
{
        struct xp_kube_plugin *p = ep->plugin;
        struct kube_server_config config = {
            .methods = kube_plugin_methods,
            .n_methods = kube_plugin_n_methods,
            .userdata = ep,
            .on_close = kube_plugin_on_close,
        };
        char *name = NULL, *path = NULL;
        int r;

        r = kube_socket_name(ep->res->name, ep->generation, &name);
        if (r < 0 || asprintf(&path, "%s/%s", p->plugin_dir, name) < 0) {
                free(name);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        config.socket_path = path;
        r = kube_server_start(&config, p->loop, &ep->server, err);
        if (r < 0) {
                free(name);
                free(path);
                return xp_error_prefix(err, r, "%s", ep->res->name);
        }
        free(ep->socket_name);
        free(ep->socket_path);
        ep->socket_name = name;
        ep->socket_path = path;
        xp_log(LOG_INFO, "%s: serving %zu device(s) on %s", ep->res->name, ep->res->n, path);
        return 0;
}

/* The socket is gone (the kubelet restarted): stop that server, serve on a fresh socket. */
static void endpoint_restart(struct kube_endpoint *ep)
{
        struct xp_error err = {0};

        kube_register_cancel(ep);
        kube_server_stop(ep->server);
        ep->server = NULL;
        ep->n_watchers = 0; /* their calls end with the server */
        ep->reg = KUBE_REG_IDLE;
        ep->reg_backoff_ms = 0;
        ep->reg_retry_at_ms = 0;
        ep->generation++;
        if (endpoint_serve(ep, &err) < 0)
                xp_log(LOG_ERR, "cannot serve again: %s", xp_error_message(&err));
}

static ino_t socket_ino(const char *path)
{
        struct stat st;

        return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

static void check_sockets(struct xp_kube_plugin *p, int64_t now)
{
        ino_t kubelet = socket_ino(p->kubelet_socket);

        for (size_t i = 0; i < p->n_resources; i++) {
                struct kube_endpoint *ep = &p->endpoints[i];

                if (!ep->server || socket_ino(ep->socket_path) == 0) {
                        xp_log(LOG_INFO,
                               "%s: socket %s is gone; serving again",
                               ep->res->name,
                               ep->socket_path ? ep->socket_path : "(none)");
                        endpoint_restart(ep);
                }
                if (ep->server && kubelet == 0 && ep->reg == KUBE_REG_IDLE) {
                        /* no kubelet to retry against: its socket's creation (inotify) or the
                         * periodic check starts the next try, not every tick */
                        ep->reg_retry_at_ms = 0;
                        continue;
                }
                if (!ep->server || kubelet == 0 || ep->reg == KUBE_REG_PENDING)
                        continue;
                if (ep->reg == KUBE_REG_DONE && ep->reg_kubelet_ino == kubelet)
                        continue;
                if (ep->reg == KUBE_REG_IDLE && now < ep->reg_retry_at_ms)
                        continue;
                kube_register_start(ep, kubelet, now);
        }
}

/* ---- the directory watch ------------------------------------------------------------------- */

static void watch_dir(struct xp_kube_plugin *p)
{
        if (p->inotify_fd < 0)
                return;
        if (inotify_add_watch(p->inotify_fd,
                              p->plugin_dir,
                              IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                                  IN_MOVE_SELF | IN_ONLYDIR) < 0)
                xp_debug("kube", "inotify on %s: %m", p->plugin_dir);
}

/* Drains the directory's events; any of them means "look at the sockets again". */
static void read_events(struct xp_kube_plugin *p)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool any = false;
        ssize_t n;

        for (unsigned k = 0; k < 64 && (n = read(p->inotify_fd, buf, sizeof(buf))) > 0; k++)
                for (char *e = buf; e < buf + n;
                     e += sizeof(struct inotify_event) + ((struct inotify_event *)e)->len) {
                        const struct inotify_event *ev = (const void *)e;

                        any = true;
                        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))
                                p->next_check_ms =
                                    0; /* the directory went: look for it again soon */
                }
        if (any)
                p->check_sockets = true;
}

/* ---- health ------------------------------------------------------------------------------------
 */

static void log_transitions(const struct xp_kube_plugin *p, const struct kube_resource *res)
{
        for (size_t i = 0; i < res->n; i++) {
                const struct xp_device *d = &p->inventory->devices.items[res->slots[i]];

                if (strcmp(kube_health_word(d->health), kube_health_word(res->sent[i])) == 0)
                        continue;
                if (d->health == XP_DEVICE_UNHEALTHY)
                        xp_log(LOG_WARNING,
                               "%s %s: Unhealthy (%s)",
                               res->name,
                               d->id,
                               d->health_reason ? d->health_reason : "no reason given");
                else
                        xp_log(LOG_NOTICE,
                               "%s %s: Healthy again, the driver reports no recovery pending",
                               res->name,
                               d->id);
        }
}

static void poll_health(struct xp_kube_plugin *p, int64_t now)
{
        int r = xp_device_health_poll(p->watch, p->inventory, now);

        if (r < 0)
                xp_log(LOG_ERR, "health watch: out of memory");
        if (r <= 0)
                return;
        for (size_t i = 0; i < p->n_resources; i++) {
                log_transitions(p, &p->resources[i]);
                if (kube_resource_health_changed(p->inventory, &p->resources[i]))
                        kube_endpoint_broadcast(&p->endpoints[i]);
        }
}

/* ---- life ------------------------------------------------------------------------------------ */

int xp_kube_plugin_run(struct xp_kube_plugin *p, const volatile sig_atomic_t *stop)
{
        while (!*stop) {
                int64_t now;

                kube_loop_run_once(p->loop, LOOP_TICK_MS);
                /* the sockets first, as long as they have something; the rest at most once a
                 * tick (bounded: a busy kubelet must not starve the health watch) */
                for (unsigned k = 0; k < 64 && kube_loop_run_once(p->loop, 0) > 0 && !*stop; k++)
                        ;
                now = xp_monotonic_ms();
                if (p->inotify_fd >= 0)
                        read_events(p);
                if (now >= p->next_check_ms) {
                        watch_dir(p);
                        p->check_sockets = true;
                        p->next_check_ms = now + CHECK_INTERVAL_MS;
                }
                /* a refused registration is tried again when its back-off ends, not at the
                 * next periodic check */
                for (size_t i = 0; i < p->n_resources && !p->check_sockets; i++)
                        p->check_sockets = kube_register_due(&p->endpoints[i], now);
                if (p->check_sockets) {
                        p->check_sockets = false;
                        check_sockets(p, now);
                }
                poll_health(p, now);
        }
        return 0;
}

size_t xp_kube_plugin_resources(const struct xp_kube_plugin *p, const char *const **ret)
{
        *ret = p->names;
        return p->n_resources;
}

void xp_kube_plugin_free(struct xp_kube_plugin *p)
{
        if (!p)
                return;
        for (size_t i = 0; p->endpoints && i < p->n_resources; i++) {
                kube_register_cancel(&p->endpoints[i]);
                kube_server_stop(p->endpoints[i].server);
        }
        kube_loop_free(p->loop);
        for (size_t i = 0; p->endpoints && i < p->n_resources; i++) {
                free(p->endpoints[i].socket_name);
                free(p->endpoints[i].socket_path);
                free(p->endpoints[i].watchers);
        }
        free(p->endpoints);
        kube_resources_free(p->resources, p->n_resources);
        free(p->names);
        xp_device_health_watch_free(p->watch);
        xp_node_inventory_free(p->inventory);
        if (p->inotify_fd >= 0)
                close(p->inotify_fd);
        free(p->plugin_dir);
        free(p->kubelet_socket);
        free(p->cdi_dir);
        free(p);
}

/* Sockets an earlier xpool plugin left (it was killed): nobody serves them any more. */
static void remove_stale_sockets(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *e;

        if (!d)
                return;
        while ((e = readdir(d))) {
                size_t len = strlen(e->d_name);
                struct stat st;

                if (strncmp(e->d_name, "xpool-", 6) != 0 || len < 11 ||
                    strcmp(e->d_name + len - 5, ".sock") != 0)
                        continue;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISSOCK(st.st_mode))
                        unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
}

/* The resource names the node's devices have, comma-separated into buf ("none" without). */
static const char *node_resources(const struct xp_node_inventory *inv, char *buf, size_t size)
{
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < inv->devices.n && len < size; i++) {
                const char *name = inv->devices.items[i].resource_name;
                bool seen = !name;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = xp_streq0(inv->devices.items[k].resource_name, name);
                if (!seen)
                        len +=
                            (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", name);
        }
        return buf[0] ? buf : "none";
}

/* A --resources name the node has no device of is said, not silently left out. */
static void warn_unserved(const struct xp_kube_plugin *p, const struct xp_kube_plugin_options *o)
{
        for (size_t i = 0; o->resources && o->resources[i]; i++) {
                bool served = false;
                for (size_t k = 0; k < p->n_resources && !served; k++)
                        served = strcmp(p->resources[k].name, o->resources[i]) == 0;
                if (!served)
                        xp_log(
                            LOG_WARNING,
                            "--resources %s: no device of this node has that resource; not served",
                            o->resources[i]);
        }
}

static int
setup(struct xp_kube_plugin *p, const struct xp_kube_plugin_options *o, struct xp_error *err)
{
        char names[512];
        int r;

        r = xp_device_discover(o->discovery, &p->inventory, err);
        if (r < 0)
                return xp_error_prefix(err, r, "device discovery");
        r = kube_resources_build(
            p->inventory, o->resources, o->skip_resources, &p->resources, &p->n_resources);
        if (r < 0)
                return xp_errorf(err, r, "out of memory");
        warn_unserved(p, o);
        if (p->n_resources == 0)
                return xp_errorf(
                    err,
                    -ENODEV,
                    "no device resource to serve on this node (its devices' resources: %s%s)",
                    node_resources(p->inventory, names, sizeof(names)),
                    o->resources || o->skip_resources
                        ? "; --resources and --skip-resources leave none"
                        : "");
        p->names = calloc(p->n_resources, sizeof(*p->names));
        p->endpoints = calloc(p->n_resources, sizeof(*p->endpoints));
        if (!p->names || !p->endpoints)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n_resources; i++) {
                p->names[i] = p->resources[i].name;
                p->endpoints[i] = (struct kube_endpoint){.plugin = p, .res = &p->resources[i]};
        }
        r = xp_device_health_watch_new(
            o->discovery, p->inventory, o->health_interval_ms, &p->watch, err);
        if (r < 0)
                return r;
        if (p->cdi_dir) {
                r = xp_cdi_write(p->inventory, p->cdi_dir, err);
                if (r < 0)
                        return r;
        }
        if (mkdir(p->plugin_dir, 0755) < 0 && errno != EEXIST)
                return xp_errorf(
                    err,
                    -errno,
                    "--plugin-dir %s: %m (the kubelet's device plugin directory, where kubelet.sock is: /var/lib/kubelet/device-plugins unless the kubelet's --root-dir moved it)",
                    p->plugin_dir);
        remove_stale_sockets(p->plugin_dir);
        p->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        watch_dir(p);
        if (kube_loop_new(&p->loop) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n_resources; i++) {
                r = endpoint_serve(&p->endpoints[i], err);
                if (r < 0)
                        return r;
        }
        p->check_sockets = true;
        p->next_check_ms = xp_monotonic_ms() + CHECK_INTERVAL_MS;
        return 0;
}

int xp_kube_plugin_new(const struct xp_kube_plugin_options *o,
                       struct xp_kube_plugin **ret,
                       struct xp_error *err)
{
        _cleanup_(xp_kube_plugin_freep) struct xp_kube_plugin *p = calloc(1, sizeof(*p));
        const char *dir = o->plugin_dir ? o->plugin_dir : XP_KUBE_PLUGIN_DIR;
        const char *cdi = o->cdi_dir ? o->cdi_dir : XP_CDI_DIR;
        int r;

        if (!p)
                return xp_errorf(err, -ENOMEM, "out of memory");
        p->inotify_fd = -1;
        p->plugin_dir = strdup(dir);
        if (!p->plugin_dir ||
            asprintf(&p->kubelet_socket, "%s/%s", dir, XP_KUBE_KUBELET_SOCKET) < 0 ||
            (*cdi && !(p->cdi_dir = strdup(cdi))))
                return xp_errorf(err, -ENOMEM, "out of memory");
        p->alloc = (struct kube_alloc_config){
            .mounts = o->mounts, .n_mounts = o->n_mounts, .cdi = *cdi != '\0'};
        r = setup(p, o, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}
