/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's namespace collection (nsgc.h), run once by the reconcile loop after re-adoption:
 * a pod is this agent's when the watch's list or the runtime's records have it (the loop's
 * known()), the network table has it (a teardown in flight), or the runtime keeps a directory
 * for it in the containers' state directory (DATA/containers unless --state-dir).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_internal.h"
#include "network.h"
#include "nsgc.h"
#include "xpool/datadir.h"
#include "xpool/log.h"

struct owner {
        struct xp_agent *agent;
        const char *containers; /* the containers' state (--state-dir; DATA/containers) */
        bool (*known)(const char *uid, void *userdata);
        void *userdata;
};

static bool owned(const char *uid, void *userdata)
{
        struct owner *o = userdata;
        char path[4096];

        if (o->known(uid, o->userdata) || xp_agent_network_has(o->agent->network, uid))
                return true;
        /* the runtime's pod (OCI_PODS_DIR, ".pods") and container directories */
        snprintf(path, sizeof(path), "%s/.pods/%s", o->containers, uid);
        if (access(path, F_OK) == 0)
                return true;
        snprintf(path, sizeof(path), "%s/%s", o->containers, uid);
        return access(path, F_OK) == 0;
}

void xp_agent_collect_namespaces(struct xp_agent *a,
                                 bool (*known)(const char *uid, void *userdata),
                                 void *userdata)
{
        struct owner o = {
            .agent = a, .containers = a->state_dir, .known = known, .userdata = userdata};
        struct xp_nsgc_inuse inuse = {0};
        int r = xp_nsgc_inuse_scan("/proc", &inuse);

        /* without the full picture of what processes use, nothing is removed */
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "agent: left the namespaces of earlier pods: reading /proc: %s",
                       strerror(-r));
        } else {
                if (!a->host_network_only)
                        (void)xp_nsgc_sweep(a->netns_dir, "network", &inuse, owned, &o);
                (void)xp_nsgc_sweep(a->ipc_dir, "IPC", &inuse, owned, &o);
        }
        xp_nsgc_inuse_done(&inuse);
}
