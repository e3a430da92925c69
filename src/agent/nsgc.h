/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods' namespace pins an earlier agent left behind (nsgc.c): at its start the agent removes
 * the entries of its netns and IPC directories that belong to no pod it knows and that no
 * process is in, as the kubelet collects the sandboxes of pods it does not know.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The namespaces processes are in: (device, inode) of each /proc/PID/task/TID/ns/{net,ipc}. */
struct xp_nsgc_inuse {
        struct xp_nsgc_id {
                dev_t dev;
                ino_t ino;
        } * ids;
        size_t n, cap;
};

/* Reads them below proc ("/proc"). 0, or -ENOMEM (a process that ends meanwhile is skipped). */
int xp_nsgc_inuse_scan(const char *proc, struct xp_nsgc_inuse *set);
bool xp_nsgc_inuse_has(const struct xp_nsgc_inuse *set, dev_t dev, ino_t ino);
void xp_nsgc_inuse_done(struct xp_nsgc_inuse *set);

enum xp_nsgc_verdict {
        XP_NSGC_KEEP,   /* a pod of this agent, or not a pod's entry */
        XP_NSGC_IN_USE, /* no pod of this agent, but a process is in it (another agent's pod) */
        XP_NSGC_REMOVE,
};

/* What becomes of the entry NAME of a namespace directory. */
enum xp_nsgc_verdict xp_nsgc_judge(const char *name, bool known, bool in_use);

/*
 * Judges each entry of dir (what: "network" or "IPC", for the log): unmounts (MNT_DETACH) and
 * unlinks those to remove, logging one line each, and logs those left because a process is in
 * them. known(uid, userdata): whether the agent has a pod of that uid. The number removed, or
 * -errno when dir cannot be read (a missing dir: 0).
 */
int xp_nsgc_sweep(const char *dir,
                  const char *what,
                  const struct xp_nsgc_inuse *inuse,
                  bool (*known)(const char *uid, void *userdata),
                  void *userdata);

struct xp_agent;
/* Sweeps the agent's netns and IPC directories (nsgc_agent.c); known(): the reconcile loop's
 * pods. Once, after re-adoption: nothing fails, what cannot be removed is logged. */
void xp_agent_collect_namespaces(struct xp_agent *a,
                                 bool (*known)(const char *uid, void *userdata),
                                 void *userdata);
