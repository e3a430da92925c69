/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's configMap, secret, projected and downwardAPI volume step before a container starts
 * (podconfig.h): each such volume the container mounts is read from the server (or the pod) and
 * written with the kubelet's atomic layout into DATA/volumes/<pod uid>/<volume>, a secret or
 * projected one on a tmpfs of its own (as the kubelet's: a Secret's values never reach the
 * node's disk); a missing object or key keeps the container ContainerCreating with the kubelet's
 * FailedMount Event, looked at again a second later.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent_internal.h"
#include "podconfig.h"
#include "podsync.h"
#include "pull.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/macro.h"

/* The kinds of volume whose files the agent writes. */
static bool files_volume(const json_t *v)
{
        return json_object_get(v, "configMap") || json_object_get(v, "secret") ||
               json_object_get(v, "projected") || json_object_get(v, "downwardAPI");
}

/* Those the kubelet keeps in memory (its emptyDir medium Memory wrapper). */
static bool memory_volume(const json_t *v)
{
        return json_object_get(v, "secret") || json_object_get(v, "projected");
}

static const json_t *find_volume(const json_t *pod, const char *name)
{
        const json_t *v;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
        {
                const char *n = json_string_value(json_object_get(v, "name"));

                if (n && name && strcmp(n, name) == 0)
                        return v;
        }
        return NULL;
}

/* The volumes of this kind that container mounts, as a new array (empty when none); not the
 * admission's token volume on a node that could not bind it (xp_podconfig_sa_volume_skipped). */
static json_t *
config_volumes(const json_t *pod, const char *container, bool init, unsigned isolation)
{
        const json_t *list = json_object_get(json_object_get(pod, "spec"),
                                             init ? "initContainers" : "containers"),
                     *c, *vm;
        json_t *out = json_array();
        size_t i, j;

        json_array_foreach(list, i, c)
        {
                const char *name = json_string_value(json_object_get(c, "name"));

                if (!out || !name || strcmp(name, container) != 0)
                        continue;
                json_array_foreach(json_object_get(c, "volumeMounts"), j, vm)
                {
                        const json_t *v =
                            find_volume(pod, json_string_value(json_object_get(vm, "name")));

                        if (v && files_volume(v) &&
                            !xp_podconfig_sa_volume_skipped(isolation, v, vm))
                                json_array_append(out, (json_t *)v);
                }
        }
        return out;
}

/* One volume: 1 written, 0 wait (*wait), -errno with err. */
static int one(struct xp_agent *agent,
               const struct xp_agent_pull_pod *pod,
               const json_t *vol,
               struct xp_podconfig_reader *reader,
               char **wait,
               struct xp_error *err)
{
        struct xp_podconfig_files files = {0};
        _cleanup_free_ char *dir = NULL;
        int r;

        r = xp_podconfig_volume_files(vol, reader, &files, wait, err);
        if (r > 0 && asprintf(&dir,
                              "%s/volumes/%s/%s",
                              agent->data_dir,
                              pod->uid,
                              json_string_value(json_object_get(vol, "name"))) < 0)
                r = xp_errorf(err, -ENOMEM, "out of memory");
        if (r > 0 && memory_volume(vol) && (r = xp_podconfig_tmpfs(dir, err)) >= 0)
                r = 1;
        if (r > 0 && (r = xp_podconfig_write_atomic(dir, &files, err)) >= 0)
                r = 1;
        xp_podconfig_files_clear(&files);
        return r;
}

/* The reader of the server's objects and the pod (decoded for downwardAPI files; NULL when it
 * cannot be, which only such a volume minds). Clear with reader_done. */
static void reader_init(struct xp_podconfig_reader *r,
                        struct xp_agent *agent,
                        const struct xp_agent_pull_pod *pod,
                        struct xp_agent_token_source *tokens)
{
        struct xp_pod *decoded = NULL;
        struct xp_error err = {0};

        *r = (struct xp_podconfig_reader){.get = xp_agent_config_get,
                                          .userdata = tokens->client,
                                          .ns = pod->namespace,
                                          .token = xp_agent_token_get,
                                          .token_userdata = tokens,
                                          .pod_json = pod->json};
        /* the loop's decoding of the same json: a decoding per start was 1 % of the agent */
        if (pod->decoded)
                r->pod = pod->decoded;
        else if (xp_pod_from_json(pod->json, NULL, 0, &decoded, &err) >= 0)
                r->pod = decoded;
        r->node = agent->node;
}

static void reader_done(struct xp_podconfig_reader *r, const struct xp_agent_pull_pod *pod)
{
        json_decref(r->seen);
        if (r->pod != pod->decoded)
                xp_pod_free((struct xp_pod *)r->pod);
}

/* Whether an earlier start wrote vol's files (its "..data" link): a restart may use them. */
static bool written(struct xp_agent *agent, const struct xp_agent_pull_pod *pod, const json_t *vol)
{
        _cleanup_free_ char *link = NULL;
        struct stat st;

        if (asprintf(&link,
                     "%s/volumes/%s/%s/..data",
                     agent->data_dir,
                     pod->uid,
                     json_string_value(json_object_get(vol, "name"))) < 0)
                return false;
        return lstat(link, &st) == 0;
}

/* One volume before a start: 1 ready, 0 wait, -errno. A volume an earlier start wrote keeps its
 * last version when the server cannot be asked (an outage), as the kubelet's mounted volumes
 * stay: every pod has its token volume, and a container restarting in an outage must not wait
 * for the server. An object that is gone (0) still holds it, as before. */
static int ready(struct xp_agent *agent,
                 const struct xp_agent_pull_pod *pod,
                 const json_t *vol,
                 struct xp_podconfig_reader *reader,
                 char **wait,
                 struct xp_error *err)
{
        int r = one(agent, pod, vol, reader, wait, err);

        if (r >= 0 || r == -ENOMEM || !written(agent, pod, vol))
                return r;
        xp_log(LOG_WARNING,
               "agent: pod %s/%s: volume %s keeps its last version: %s",
               pod->namespace,
               pod->name,
               json_string_value(json_object_get(vol, "name")),
               xp_error_message(err));
        xp_error_clear(err);
        return 1;
}

int xp_agent_volume_gate(struct xp_agent *agent,
                         const struct xp_agent_pull_pod *pod,
                         const char *container,
                         bool init,
                         struct xp_podsync_memory *m)
{
        struct xp_apiclient *client = NULL;
        _cleanup_free_ char *wait = NULL;
        json_t *vols = config_volumes(pod->json, container, init, agent->isolation.have), *vol;
        struct xp_agent_token_source tokens = {0};
        struct xp_podconfig_reader reader = {0};
        struct xp_error err = {0};
        size_t i;
        int r = 1;

        if (!vols)
                return -ENOMEM;
        if (json_array_size(vols) > 0) {
                r = xp_agent_config_client_take(agent, &client, &err);
                tokens = (struct xp_agent_token_source){.agent = agent, .client = client};
                reader_init(&reader, agent, pod, &tokens);
        }
        json_array_foreach(vols, i, vol)
        {
                if (r < 0 || (r = ready(agent, pod, vol, &reader, &wait, &err)) <= 0)
                        break;
        }
        reader_done(&reader, pod);
        xp_agent_config_client_give(agent, client);
        json_decref(vols);
        if (r > 0 || r == -ENOMEM)
                return r;
        /* the server unreachable, a path refused: the kubelet's SetUp fails the same way */
        if (r < 0) {
                free(wait);
                wait = NULL;
                if (asprintf(&wait, "MountVolume.SetUp failed: %s", xp_error_message(&err)) < 0)
                        return -ENOMEM;
        }
        r = xp_agent_podconfig_hold(agent,
                                    pod,
                                    container,
                                    init,
                                    m,
                                    &(struct xp_podconfig_hold){.reason = XP_PODCONFIG_MOUNT_REASON,
                                                                .event = "FailedMount",
                                                                .text = wait});
        return r < 0 ? r : 0;
}

void xp_agent_volume_refresh(struct xp_agent *agent, const struct xp_agent_pull_pod *pod)
{
        struct xp_apiclient *client = NULL;
        struct xp_agent_token_source tokens = {0};
        struct xp_podconfig_reader reader = {0};
        const json_t *vol;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(pod->json, "spec"), "volumes"), i, vol)
        {
                _cleanup_free_ char *dir = NULL, *wait = NULL;
                struct xp_error err = {0};
                struct stat st;

                if (!files_volume(vol))
                        continue;
                if (asprintf(&dir,
                             "%s/volumes/%s/%s",
                             agent->data_dir,
                             pod->uid,
                             json_string_value(json_object_get(vol, "name"))) < 0)
                        break;
                if (stat(dir, &st) < 0) /* no start has set it up */
                        continue;
                if (!client && xp_agent_config_client_take(agent, &client, &err) < 0)
                        break;
                if (!reader.get) {
                        tokens = (struct xp_agent_token_source){.agent = agent, .client = client};
                        reader_init(&reader, agent, pod, &tokens);
                }
                (void)one(agent, pod, vol, &reader, &wait, &err);
        }
        reader_done(&reader, pod);
        xp_agent_config_client_give(agent, client);
}
