/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool run: one command as a pod, in the foreground, like docker run or srun: creates the pod,
 * waits for it to be placed and started (saying why while it is Pending), streams its output and
 * exits with the container's exit code, deleting the pod afterwards.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "xpool/macro.h"

static const char usage[] =
    "Usage: xpool run [OPTIONS] -- COMMAND [ARGS...]\n"
    "       xpool run --image IMAGE [OPTIONS] [-- [COMMAND] [ARGS...]]\n\n"
    "Runs COMMAND as a pod on the node the scheduler picks, with the devices asked for, prints\n"
    "its output as it comes and exits with its exit code (128+N when signal N killed it, 127 or\n"
    "126 when it could not start). While the pod waits for room, the scheduler's reason is\n"
    "printed. Ctrl-C deletes the pod. The pod is deleted at the end unless --keep.\n"
    "Without --image COMMAND runs as a process of the node, on its files (runtime class process,\n"
    "like srun); with --image it runs in a container from IMAGE under the node's OCI runtime,\n"
    "with the devices injected (like docker run --gpus): the words after -- replace the image's\n"
    "Cmd (its Entrypoint stays), or with --command its Entrypoint too; none: the image's own.\n\n"
    "      --image IMAGE        run in a container from IMAGE (docs/containers.md)\n"
    "      --command            with --image: COMMAND replaces the image's Entrypoint\n"
    "      --pull POLICY        with --image: Always, IfNotPresent or Never (default: Always for\n"
    "                           :latest or no tag, else IfNotPresent)\n"
    "      --runtime-class NAME the pod's runtimeClassName (default: process without --image,\n"
    "                           the node's default with it)\n"
    "      --name NAME          the pod's name (default: generated from COMMAND's name)\n"
    "      --gpu N              N GPUs (nvidia.com/gpu)\n"
    "      --npu N              N NPUs (the --npu-resource resource)\n"
    "      --npu-resource NAME  the NPUs' resource name (default vendor.com/npu)\n"
    "      --accelerator N      N accelerators of any kind (xpool.io/accelerator)\n"
    "      --resource NAME=QTY  QTY of any resource, e.g. amd.com/gpu=2; repeatable\n"
    "      --cpu QTY            CPU limit and request, e.g. 2 or 500m\n"
    "      --memory QTY         memory limit and request, e.g. 4Gi\n"
    "  -e, --env NAME=VALUE     an environment variable of the command; repeatable\n"
    "      --restart POLICY     Never (default) or OnFailure\n"
    "      --node NODE          run on that node (node affinity on its name)\n"
    "      --host-network       on the node's network (hostNetwork: true), as srun runs MPI or\n"
    "                           NCCL jobs; without it the pod has a network of its own\n"
    "      --rm                 delete the pod once it is done (the default)\n"
    "      --keep               keep the pod once it is done (to look at it with get/describe)\n"
    "  -d, --detach             create the pod, print its name and return (implies --keep)\n" XP_CLIENT_USAGE;

#define RESOURCES_MAX 32
#define ENV_MAX       256

enum {
        OPT_NAME = 0x200,
        OPT_GPU,
        OPT_NPU,
        OPT_NPU_RESOURCE,
        OPT_ACCELERATOR,
        OPT_RESOURCE,
        OPT_CPU,
        OPT_MEMORY,
        OPT_RESTART,
        OPT_NODE,
        OPT_RM,
        OPT_KEEP,
        OPT_IMAGE,
        OPT_COMMAND,
        OPT_PULL,
        OPT_RUNTIME_CLASS,
        OPT_HOST_NETWORK,
};

struct run_args {
        const char *name, *gpu, *npu, *npu_resource, *accelerator, *cpu, *memory, *restart, *node;
        const char *image, *pull, *runtime_class;
        bool command; /* --command: the words replace the image's Entrypoint */
        const char *resources[RESOURCES_MAX]; /* NAME=QTY, borrowed from argv */
        size_t n_resources;
        const char *env[ENV_MAX];
        size_t n_env;
        bool keep, detach, host_network;
};

static bool is_count(const char *s)
{
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

/* --resource NAME=QUANTITY and --env NAME=VALUE, each repeatable. */
static int add_repeated(struct run_args *a, int c, const char *arg)
{
        if (c == OPT_RESOURCE) {
                if (!strchr(arg, '=') || arg[0] == '=' || !strchr(arg, '=')[1]) {
                        fprintf(
                            stderr, "xpool run: --resource takes NAME=QUANTITY, not '%s'\n", arg);
                        return XP_EXIT_USAGE;
                }
                if (a->n_resources == RESOURCES_MAX) {
                        fprintf(stderr, "xpool run: at most %d --resource\n", RESOURCES_MAX);
                        return XP_EXIT_USAGE;
                }
                a->resources[a->n_resources++] = arg;
                return 0;
        }
        if (!strchr(arg, '=') || arg[0] == '=') {
                fprintf(stderr, "xpool run: --env takes NAME=VALUE, not '%s'\n", arg);
                return XP_EXIT_USAGE;
        }
        if (a->n_env == ENV_MAX) {
                fprintf(stderr, "xpool run: at most %d --env\n", ENV_MAX);
                return XP_EXIT_USAGE;
        }
        a->env[a->n_env++] = arg;
        return 0;
}

static int run_option(int c, const char *arg, void *userdata)
{
        struct run_args *a = userdata;

        switch (c) {
        case OPT_NAME:
                a->name = arg;
                break;
        case OPT_GPU:
        case OPT_NPU:
        case OPT_ACCELERATOR:
                if (!is_count(arg)) {
                        fprintf(stderr,
                                "xpool run: --%s takes a number of devices, not '%s'\n",
                                c == OPT_GPU   ? "gpu"
                                : c == OPT_NPU ? "npu"
                                               : "accelerator",
                                arg);
                        return XP_EXIT_USAGE;
                }
                *(c == OPT_GPU ? &a->gpu : c == OPT_NPU ? &a->npu : &a->accelerator) = arg;
                break;
        case OPT_NPU_RESOURCE:
                a->npu_resource = arg;
                break;
        case OPT_RESOURCE:
        case 'e':
                return add_repeated(a, c, arg);
        case OPT_CPU:
                a->cpu = arg;
                break;
        case OPT_MEMORY:
                a->memory = arg;
                break;
        case OPT_RESTART:
                if (strcmp(arg, "Never") != 0 && strcmp(arg, "OnFailure") != 0) {
                        fprintf(
                            stderr,
                            "xpool run: --restart is Never or OnFailure, not '%s' (a command that always restarts never ends)\n",
                            arg);
                        return XP_EXIT_USAGE;
                }
                a->restart = arg;
                break;
        case OPT_NODE:
                a->node = arg;
                break;
        case OPT_RM:
                a->keep = false;
                break;
        case OPT_KEEP:
                a->keep = true;
                break;
        case OPT_HOST_NETWORK:
                a->host_network = true;
                break;
        case 'd':
                a->detach = true;
                break;
        case OPT_IMAGE:
                a->image = arg;
                break;
        case OPT_COMMAND:
                a->command = true;
                break;
        case OPT_PULL:
                if (strcmp(arg, "Always") != 0 && strcmp(arg, "IfNotPresent") != 0 &&
                    strcmp(arg, "Never") != 0) {
                        fprintf(stderr,
                                "xpool run: --pull is Always, IfNotPresent or Never, not '%s'\n",
                                arg);
                        return XP_EXIT_USAGE;
                }
                a->pull = arg;
                break;
        case OPT_RUNTIME_CLASS:
                a->runtime_class = arg;
                break;
        }
        return 0;
}

/* A DNS label from the command's base name: "python3.11" -> "python3-11"; "run" when nothing
 * of it is usable. */
static void name_from_command(const char *command, char *buf, size_t size)
{
        const char *base = strrchr(command, '/');
        size_t n = 0;

        base = base ? base + 1 : command;
        for (; *base && n + 1 < size && n < 40; base++) {
                char ch = *base;

                if (ch >= 'A' && ch <= 'Z')
                        ch = (char)(ch - 'A' + 'a');
                if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
                        ch = '-';
                if (ch == '-' && (n == 0 || buf[n - 1] == '-'))
                        continue;
                buf[n++] = ch;
        }
        while (n > 0 && buf[n - 1] == '-')
                n--;
        buf[n] = '\0';
        if (n == 0)
                snprintf(buf, size, "run");
}

/*
 * value as Kubernetes' $(VAR) expansion of command, args and env leaves it: every '$' doubled,
 * so that the command runs as typed (sh -c 'kill $$'), as docker run would run it.
 */
static json_t *literal(const char *value)
{
        _cleanup_free_ char *escaped = NULL;
        size_t n = 0;

        for (const char *p = value; *p; p++)
                n += *p == '$' ? 2 : 1;
        escaped = malloc(n + 1);
        if (!escaped)
                return NULL;
        n = 0;
        for (const char *p = value; *p; p++) {
                if (*p == '$')
                        escaped[n++] = '$';
                escaped[n++] = *p;
        }
        escaped[n] = '\0';
        return json_string(escaped);
}

static int set_string(json_t *object, const char *key, const char *value)
{
        return json_object_set_new(object, key, json_string(value)) < 0 ? -ENOMEM : 0;
}

/*
 * What the container runs: without --image, COMMAND as a process of the node (runtime class
 * process); with it, the image, the words as its args (Cmd replaced) or with --command as
 * command and args, none: its own. Kubernetes' table, as kubectl run makes them.
 */
static int what_to_run(const struct run_args *a, char **words, json_t *spec, json_t *container)
{
        json_t *args = json_object_get(container, "args");
        bool command = !a->image || a->command;
        int r = 0;

        if (a->image) {
                r |= set_string(container, "image", a->image);
                if (a->pull)
                        r |= set_string(container, "imagePullPolicy", a->pull);
        }
        if (a->runtime_class || !a->image)
                r |= set_string(
                    spec, "runtimeClassName", a->runtime_class ? a->runtime_class : "process");
        if (command && words[0])
                r |= json_object_set_new(container, "command", json_pack("[o]", literal(words[0])));
        for (size_t i = command ? 1 : 0; words[0] && words[i]; i++)
                r |= json_array_append_new(args, literal(words[i]));
        return r;
}

/* The pod's base name: COMMAND's, else the image's repository's last component. */
static void base_name(const struct run_args *a, char **words, char *buf, size_t size)
{
        char repo[256];

        if (words[0] || !a->image) {
                name_from_command(words[0] ? words[0] : "run", buf, size);
                return;
        }
        snprintf(repo, sizeof(repo), "%s", a->image);
        repo[strcspn(repo, "@")] = '\0';
        if (strrchr(repo, ':') &&
            strrchr(repo, ':') > (strrchr(repo, '/') ? strrchr(repo, '/') : repo))
                *strrchr(repo, ':') = '\0';
        name_from_command(repo, buf, size);
}

/* The pod to create. NULL on -ENOMEM. */
static json_t *build_pod(const struct run_args *a, const char *ns, char **command)
{
        json_auto_t *pod = NULL;
        json_t *limits, *requests, *container, *env;
        char base[64], key[256];
        int r = 0;

        base_name(a, command, base, sizeof(base));
        pod = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:[], "
                        "s:{s:{}, s:{}}}]}}",
                        "apiVersion",
                        "v1",
                        "kind",
                        "Pod",
                        "metadata",
                        "namespace",
                        ns,
                        "labels",
                        "xpool.io/run",
                        base,
                        "spec",
                        "restartPolicy",
                        a->restart ? a->restart : "Never",
                        "containers",
                        "name",
                        base,
                        "args",
                        "resources",
                        "limits",
                        "requests");
        if (!pod)
                return NULL;
        snprintf(key, sizeof(key), "%s-", base);
        r |= set_string(json_object_get(pod, "metadata"),
                        a->name ? "name" : "generateName",
                        a->name ? a->name : key);
        container = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
        r |= what_to_run(a, command, json_object_get(pod, "spec"), container);
        limits = json_object_get(json_object_get(container, "resources"), "limits");
        requests = json_object_get(json_object_get(container, "resources"), "requests");
        if (a->gpu)
                r |= set_string(limits, "nvidia.com/gpu", a->gpu);
        if (a->npu)
                r |= set_string(
                    limits, a->npu_resource ? a->npu_resource : "vendor.com/npu", a->npu);
        if (a->accelerator)
                r |= set_string(limits, "xpool.io/accelerator", a->accelerator);
        for (size_t i = 0; i < a->n_resources; i++) {
                const char *eq = strchr(a->resources[i], '=');

                snprintf(key, sizeof(key), "%.*s", (int)(eq - a->resources[i]), a->resources[i]);
                r |= set_string(limits, key, eq + 1);
        }
        /* requests default to limits for devices; CPU and memory are given as both so that the
         * scheduler reserves what the cgroup allows */
        if (a->cpu)
                r |= set_string(limits, "cpu", a->cpu) | set_string(requests, "cpu", a->cpu);
        if (a->memory)
                r |= set_string(limits, "memory", a->memory) |
                     set_string(requests, "memory", a->memory);
        if (a->n_env > 0) {
                env = json_array();
                r |= json_object_set_new(container, "env", env);
                for (size_t i = 0; env && i < a->n_env; i++) {
                        const char *eq = strchr(a->env[i], '=');

                        r |= json_array_append_new(env,
                                                   json_pack("{s:s%, s:o}",
                                                             "name",
                                                             a->env[i],
                                                             (size_t)(eq - a->env[i]),
                                                             "value",
                                                             literal(eq + 1)));
                }
        }
        if (a->host_network)
                r |= json_object_set_new(json_object_get(pod, "spec"), "hostNetwork", json_true());
        /* the Node's name, which is not always its kubernetes.io/hostname label */
        if (a->node)
                r |= json_object_set_new(json_object_get(pod, "spec"),
                                         "affinity",
                                         json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}",
                                                   "nodeAffinity",
                                                   "requiredDuringSchedulingIgnoredDuringExecution",
                                                   "nodeSelectorTerms",
                                                   "matchFields",
                                                   "key",
                                                   "metadata.name",
                                                   "operator",
                                                   "In",
                                                   "values",
                                                   a->node));
        return r != 0 ? NULL : TAKE_PTR(pod);
}

/* ---- what the pod is doing ---- */

enum pod_stage {
        STAGE_PENDING,    /* not started yet */
        STAGE_STARTED,    /* the container runs, or ran: its output can be read */
        STAGE_TERMINATED, /* the container (last attempt) ended and will not restart */
        STAGE_GONE,       /* deleted, or failed without the container ever running */
};

struct pod_view {
        enum pod_stage stage;
        int exit_code;     /* STAGE_TERMINATED: what to exit with */
        int64_t restarts;  /* the container's restartCount: the attempt running or last run */
        char reason[64];   /* the terminated state's reason */
        char message[512]; /* why it could not start, why it is gone */
        char unschedulable[512];
};

static const char *str_at(const json_t *object, const char *a, const char *b)
{
        const json_t *v = json_object_get(object, a);

        return json_string_value(b ? json_object_get(v, b) : v);
}

static void view_pod(const json_t *pod, struct pod_view *ret)
{
        const json_t *status = json_object_get(pod, "status");
        const char *phase = str_at(status, "phase", NULL);
        const json_t *cs = json_array_get(json_object_get(status, "containerStatuses"), 0);
        const json_t *state = json_object_get(cs, "state");
        const json_t *terminated = json_object_get(state, "terminated");
        const json_t *condition;
        size_t i;

        ret->stage = STAGE_PENDING;
        ret->unschedulable[0] = '\0';
        ret->restarts = json_integer_value(json_object_get(cs, "restartCount"));
        json_array_foreach(json_object_get(status, "conditions"), i, condition)
        {
                const char *type = str_at(condition, "type", NULL);
                const char *st = str_at(condition, "status", NULL);

                if (type && st && strcmp(type, "PodScheduled") == 0 && strcmp(st, "False") == 0)
                        snprintf(ret->unschedulable,
                                 sizeof(ret->unschedulable),
                                 "%s",
                                 str_at(condition, "message", NULL)
                                     ? str_at(condition, "message", NULL)
                                     : "(no message)");
        }
        if (terminated && phase &&
            (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
                const char *reason = str_at(terminated, "reason", NULL);
                const char *message = str_at(terminated, "message", NULL);

                ret->stage = STAGE_TERMINATED;
                ret->exit_code = (int)json_integer_value(json_object_get(terminated, "exitCode"));
                snprintf(ret->reason, sizeof(ret->reason), "%s", reason ? reason : "");
                snprintf(ret->message, sizeof(ret->message), "%s", message ? message : "");
                return;
        }
        if (phase && strcmp(phase, "Failed") == 0) {
                const char *reason = str_at(status, "reason", NULL);
                const char *message = str_at(status, "message", NULL);

                ret->stage = STAGE_GONE;
                snprintf(ret->message,
                         sizeof(ret->message),
                         "the pod failed%s%s%s%s",
                         reason ? " (" : "",
                         reason ? reason : "",
                         reason ? ")" : "",
                         message ? ": " : "");
                if (message)
                        snprintf(ret->message + strlen(ret->message),
                                 sizeof(ret->message) - strlen(ret->message),
                                 "%s",
                                 message);
                return;
        }
        if (json_object_get(state, "running") || terminated ||
            json_object_size(json_object_get(cs, "lastState")) > 0)
                ret->stage = STAGE_STARTED;
        if (phase && strcmp(phase, "Succeeded") == 0)
                ret->stage = STAGE_TERMINATED;
}

struct run {
        struct xp_client *client;
        const char *ns;
        char name[256];
        char pod_path[1024];
        struct pod_view view;
        char printed[512];   /* the last Pending reason printed */
        int64_t streamed;    /* attempts whose output was streamed */
        const char *restart; /* the pod's restartPolicy */
        char *line;          /* the watch line so far */
        size_t len;
        /* The output is read with timestamps (fixed width, so they compare as strings), which
         * are cut off: a line at or before `floor` (the last one shown by an earlier read) was
         * shown already, as when the newest attempt changed between a look at the status and
         * the read of its log. */
        char floor[40], last[40];
        char stamp[40]; /* the timestamp of the line being read so far */
        size_t n_stamp;
        enum {
                LINE_START,
                LINE_SHOW,
                LINE_SKIP
        } line_state;
};

/* Says why the pod is Pending, once per distinct reason. */
static void report_pending(struct run *run)
{
        if (run->view.stage != STAGE_PENDING || !run->view.unschedulable[0] ||
            strcmp(run->view.unschedulable, run->printed) == 0)
                return;
        snprintf(run->printed, sizeof(run->printed), "%s", run->view.unschedulable);
        fprintf(stderr, "xpool run: pod %s is Pending: %s\n", run->name, run->printed);
}

/* Whether the pod is where the caller waits for it: a STAGE_STARTED wait is for an attempt
 * whose output was not streamed yet (restartPolicy OnFailure starts several). */
static bool reached(const struct run *run, enum pod_stage want)
{
        if (run->view.stage == STAGE_STARTED && want == STAGE_STARTED)
                return run->view.restarts >= run->streamed;
        return run->view.stage >= want;
}

/* Stops the watch once the stage is at least want; -ECANCELED is that stop. */
struct wait_ctx {
        struct run *run;
        enum pod_stage want;
        char version[64];
        int result;
};

static int wait_event(struct wait_ctx *w, const char *text, size_t len)
{
        json_auto_t *event = json_loadb(text, len, 0, NULL);
        const char *type = str_at(event, "type", NULL);
        json_t *object = json_object_get(event, "object");
        const char *version;

        if (!type || !json_is_object(object))
                return -EBADMSG;
        if (strcmp(type, "ERROR") == 0) {
                /* an expired resourceVersion: the caller lists again */
                w->version[0] = '\0';
                return -EAGAIN;
        }
        version = str_at(json_object_get(object, "metadata"), "resourceVersion", NULL);
        if (version)
                snprintf(w->version, sizeof(w->version), "%s", version);
        if (strcmp(type, "BOOKMARK") == 0)
                return 0;
        if (strcmp(type, "DELETED") == 0) {
                w->run->view.stage = STAGE_GONE;
                snprintf(w->run->view.message, sizeof(w->run->view.message), "the pod was deleted");
                return -ECANCELED;
        }
        view_pod(object, &w->run->view);
        report_pending(w->run);
        return reached(w->run, w->want) ? -ECANCELED : 0;
}

static int on_wait_data(const char *data, size_t len, void *userdata)
{
        struct wait_ctx *w = userdata;
        struct run *run = w->run;

        for (size_t i = 0; i < len; i++) {
                if (data[i] != '\n') {
                        char *line;

                        if (run->len >= 16 * 1024 * 1024)
                                return w->result = -E2BIG;
                        line = realloc(run->line, run->len + 2);
                        if (!line)
                                return w->result = -ENOMEM;
                        run->line = line;
                        run->line[run->len++] = data[i];
                        continue;
                }
                if (run->len > 0) {
                        int r = wait_event(w, run->line, run->len);

                        run->len = 0;
                        if (r < 0)
                                return w->result = r;
                }
        }
        return 0;
}

/* Waits until the pod reaches want (or is gone): a GET, then a watch from its version, again
 * when the watch ends. 0, or -errno with err. */
static int wait_for(struct run *run, enum pod_stage want, struct xp_error *err)
{
        for (;;) {
                json_auto_t *pod = NULL;
                struct wait_ctx w = {.run = run, .want = want};
                char path[2048];
                int r;

                r = xp_client_json(run->client, "GET", run->pod_path, NULL, NULL, NULL, &pod, err);
                if (r == -ENOENT) {
                        run->view.stage = STAGE_GONE;
                        snprintf(
                            run->view.message, sizeof(run->view.message), "the pod was deleted");
                        return 0;
                }
                if (r < 0)
                        return r;
                view_pod(pod, &run->view);
                report_pending(run);
                if (reached(run, want))
                        return 0;
                snprintf(w.version,
                         sizeof(w.version),
                         "%s",
                         str_at(json_object_get(pod, "metadata"), "resourceVersion", NULL)
                             ? str_at(json_object_get(pod, "metadata"), "resourceVersion", NULL)
                             : "");
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", run->ns);
                r = xp_client_add_query(path, sizeof(path), "watch", "1");
                if (r >= 0) {
                        char selector[300];

                        snprintf(selector, sizeof(selector), "metadata.name=%s", run->name);
                        r = xp_client_add_query(path, sizeof(path), "fieldSelector", selector);
                }
                if (r >= 0 && w.version[0])
                        r = xp_client_add_query(path, sizeof(path), "resourceVersion", w.version);
                if (r < 0)
                        return xp_errorf(err, r, "the pod's watch path is too long");
                run->len = 0;
                r = xp_client_stream(run->client, path, "application/json", on_wait_data, &w, err);
                if (r == -ECANCELED && w.result == -ECANCELED)
                        return 0;
                if (r < 0 && r != w.result)
                        return r;
                if (r < 0 && r != -EAGAIN)
                        return xp_errorf(
                            err, r, "the watch of pod %s broke: %s", run->name, strerror(-r));
                /* the server ended the watch (its timeout) or the version expired: again */
        }
}

static int on_log_data(const char *data, size_t len, void *userdata)
{
        struct run *run = userdata;

        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                size_t n = nl ? (size_t)(nl - data) + 1 : len;

                if (run->line_state == LINE_START) {
                        const char *sp = memchr(data, ' ', n);
                        size_t take = sp ? (size_t)(sp - data) : n;

                        if (run->n_stamp + take >= sizeof(run->stamp) || (nl && !sp)) {
                                /* no timestamp: shown as it is */
                                if (fwrite(run->stamp, 1, run->n_stamp, stdout) != run->n_stamp)
                                        return -EIO;
                                run->n_stamp = 0;
                                run->line_state = LINE_SHOW;
                                continue;
                        }
                        memcpy(run->stamp + run->n_stamp, data, take);
                        run->n_stamp += take;
                        data += take;
                        len -= take;
                        if (!sp)
                                continue;
                        data++; /* the space after it */
                        len--;
                        run->stamp[run->n_stamp] = '\0';
                        run->n_stamp = 0;
                        if (run->floor[0] && strcmp(run->stamp, run->floor) <= 0) {
                                run->line_state = LINE_SKIP;
                        } else {
                                memcpy(run->last, run->stamp, sizeof(run->last));
                                run->line_state = LINE_SHOW;
                        }
                        continue;
                }
                if (run->line_state == LINE_SHOW && fwrite(data, 1, n, stdout) != n)
                        return -EIO;
                if (nl)
                        run->line_state = LINE_START;
                data += n;
                len -= n;
        }
        fflush(stdout);
        return 0;
}

/* One attempt's output: the newest (followed until it ends) or the one before it. The log may
 * not be there the moment the container starts (the agent's endpoint, the proxy): a few
 * retries. */
static int stream_attempt(struct run *run, bool previous, struct xp_error *err)
{
        char path[2048];
        int r;

        snprintf(path, sizeof(path), "%s/log", run->pod_path);
        r = xp_client_add_query(path, sizeof(path), previous ? "previous" : "follow", "true");
        if (r >= 0)
                r = xp_client_add_query(path, sizeof(path), "timestamps", "true");
        if (r < 0)
                return xp_errorf(err, r, "the pod's log path is too long");
        memcpy(run->floor, run->last, sizeof(run->floor));
        run->line_state = LINE_START;
        run->n_stamp = 0;
        for (int i = 0;; i++) {
                r = xp_client_stream(run->client, path, "text/plain, */*", on_log_data, run, err);
                if (r != -ENOENT || previous || i == 50)
                        return r;
                nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
        }
}

/*
 * The output of the attempts not shown yet, up to the newest (restartCount), which is followed.
 * The API serves the newest attempt and the one before it, which is read first whenever there
 * may be one: the newest may have changed since the status was read (a first restart is
 * immediate), and what was shown already is skipped by its timestamp. An attempt that ended
 * and was followed by two more before this looked is not there any more; a note says so.
 */
static int stream_logs(struct run *run, struct xp_error *err)
{
        int64_t newest = run->view.restarts;
        struct xp_error previous_err = {0};

        if (newest - 1 > run->streamed)
                fprintf(stderr,
                        "xpool run: the output of attempts %" PRId64 " to %" PRId64
                        " is gone (restarted since)\n",
                        run->streamed,
                        newest - 2);
        /* none before the first attempt: the server says so, which is no error here */
        if (run->streamed > 0 || newest > 0 || strcmp(run->restart, "Never") != 0)
                (void)stream_attempt(run, true, &previous_err);
        run->streamed = newest + 1;
        return stream_attempt(run, false, err);
}

/* ---- Ctrl-C ---- */

static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static char stop_pod_path[1024]; /* the pod to delete on a stop signal; empty: none yet */
static const struct xp_client_options *stop_copts;

/* Waits for SIGINT/SIGTERM/SIGHUP: deletes the pod (its containers get their grace period)
 * and exits 128+signal, as a shell does for a command killed by it. */
static void *stop_thread(void *userdata)
{
        sigset_t *mask = userdata;
        int sig = 0;

        while (sigwait(mask, &sig) == EINTR)
                ;
        pthread_mutex_lock(&stop_lock);
        if (stop_pod_path[0]) {
                _cleanup_(xp_client_freep) struct xp_client *client = NULL;
                json_auto_t *answer = NULL;
                struct xp_error err = {0};

                if (xp_client_new(stop_copts, &client, &err) >= 0 &&
                    xp_client_json(
                        client, "DELETE", stop_pod_path, NULL, NULL, NULL, &answer, &err) >= 0)
                        fprintf(stderr, "\nxpool run: %s: deleted the pod\n", strsignal(sig));
                else
                        fprintf(stderr,
                                "\nxpool run: %s: could not delete the pod: %s\n",
                                strsignal(sig),
                                xp_error_message(&err));
        }
        fflush(stdout);
        _exit(128 + sig);
        return NULL;
}

/* Exit status for a container that could not start: 127 when the command is not there, as a
 * shell says, 126 otherwise. */
static int start_failure_status(const struct pod_view *v)
{
        return strstr(v->message, "No such file") || strstr(v->message, "not found") ? 127 : 126;
}

static int delete_pod(struct run *run)
{
        json_auto_t *answer = NULL;
        struct xp_error err = {0};
        int r;

        r = xp_client_json(run->client, "DELETE", run->pod_path, NULL, NULL, NULL, &answer, &err);
        if (r < 0 && r != -ENOENT) {
                fprintf(stderr, "xpool run: could not delete pod %s: ", run->name);
                xp_client_report(&err);
                return r;
        }
        return 0;
}

/* Creates the pod, its path known to the stop thread as soon as it exists: 0, or an exit status
 * after saying why. */
static int create_pod(struct run *run, json_t *pod)
{
        json_auto_t *created = NULL;
        struct xp_error err = {0};
        const char *name;
        int r;

        snprintf(run->pod_path, sizeof(run->pod_path), "/api/v1/namespaces/%s/pods", run->ns);
        /* the pod path must be known to the stop thread as soon as the pod exists */
        pthread_mutex_lock(&stop_lock);
        r = xp_client_json(run->client, "POST", run->pod_path, NULL, pod, NULL, &created, &err);
        name = r >= 0 ? str_at(json_object_get(created, "metadata"), "name", NULL) : NULL;
        if (name) {
                snprintf(run->name, sizeof(run->name), "%s", name);
                snprintf(run->pod_path,
                         sizeof(run->pod_path),
                         "/api/v1/namespaces/%s/pods/%s",
                         run->ns,
                         run->name);
                snprintf(stop_pod_path, sizeof(stop_pod_path), "%s", run->pod_path);
        }
        pthread_mutex_unlock(&stop_lock);
        if (r < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        if (!name) {
                fprintf(stderr, "xpool run: the server created a pod without a name\n");
                return XP_EXIT_FAILURE;
        }
        return 0;
}

/* Streams each attempt's output in turn until the container ends for good. */
static int follow(struct run *run, struct xp_error *err)
{
        int r;

        do {
                r = wait_for(run, STAGE_STARTED, err);
                if (r < 0 || run->view.stage != STAGE_STARTED)
                        break;
                r = stream_logs(run, err);
                if (r >= 0)
                        r = wait_for(run, STAGE_STARTED, err);
        } while (r >= 0 && run->view.stage == STAGE_STARTED);
        /* a short command may be over before the pod was seen running: its output still shows */
        if (r >= 0 && run->view.stage == STAGE_TERMINATED && run->view.restarts >= run->streamed &&
            strcmp(run->view.reason, "StartError") != 0 &&
            strcmp(run->view.reason, "ContainerCannotRun") != 0)
                r = stream_logs(run, err);
        return r;
}

/* The exit status for how the container ended, saying what went wrong. */
static int final_status(const struct run *run, const char *what)
{
        int status;

        switch (run->view.stage) {
        case STAGE_TERMINATED:
                status = run->view.exit_code;
                if (strcmp(run->view.reason, "StartError") == 0 ||
                    strcmp(run->view.reason, "ContainerCannotRun") == 0) {
                        status = start_failure_status(&run->view);
                        fprintf(stderr,
                                "xpool run: %s could not start: %s\n",
                                what,
                                run->view.message[0] ? run->view.message : run->view.reason);
                } else if (strcmp(run->view.reason, "OOMKilled") == 0) {
                        fprintf(stderr, "xpool run: the command ran out of memory (OOMKilled)\n");
                }
                break;
        default:
                fprintf(stderr, "xpool run: pod %s: %s\n", run->name, run->view.message);
                status = XP_EXIT_FAILURE;
                break;
        }
        return status;
}

int xp_cmd_run(int argc, char **argv)
{
        static const struct option options[] = {
            {"name", required_argument, NULL, OPT_NAME},
            {"gpu", required_argument, NULL, OPT_GPU},
            {"npu", required_argument, NULL, OPT_NPU},
            {"npu-resource", required_argument, NULL, OPT_NPU_RESOURCE},
            {"accelerator", required_argument, NULL, OPT_ACCELERATOR},
            {"resource", required_argument, NULL, OPT_RESOURCE},
            {"cpu", required_argument, NULL, OPT_CPU},
            {"memory", required_argument, NULL, OPT_MEMORY},
            {"env", required_argument, NULL, 'e'},
            {"restart", required_argument, NULL, OPT_RESTART},
            {"node", required_argument, NULL, OPT_NODE},
            {"rm", no_argument, NULL, OPT_RM},
            {"keep", no_argument, NULL, OPT_KEEP},
            {"host-network", no_argument, NULL, OPT_HOST_NETWORK},
            {"detach", no_argument, NULL, 'd'},
            {"image", required_argument, NULL, OPT_IMAGE},
            {"command", no_argument, NULL, OPT_COMMAND},
            {"pull", required_argument, NULL, OPT_PULL},
            {"runtime-class", required_argument, NULL, OPT_RUNTIME_CLASS},
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        struct xp_client_options copts = {0};
        json_auto_t *pod = NULL;
        struct xp_error err = {0};
        struct run_args a = {0};
        struct run run = {0};
        pthread_t thread;
        sigset_t mask;
        int r, status;

        /* "+": options end at COMMAND even without "--" */
        r = xp_client_getopt(argc, argv, "+e:dn:h", options, usage, &copts, run_option, &a);
        if (r != 0)
                return r < 0 ? 0 : r;
        if (optind >= argc && !a.image) {
                fprintf(stderr,
                        "xpool run: name the command: xpool run [OPTIONS] -- COMMAND, or an "
                        "image: xpool run --image IMAGE\n\n%s",
                        usage);
                return XP_EXIT_USAGE;
        }
        if ((a.command || a.pull) && !a.image) {
                fprintf(stderr, "xpool run: --command and --pull go with --image\n");
                return XP_EXIT_USAGE;
        }
        if (xp_client_new(&copts, &client, &err) < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        run.client = client;
        run.restart = a.restart ? a.restart : "Never";
        run.ns = xp_client_namespace(client);
        pod = build_pod(&a, run.ns, argv + optind);
        if (!pod) {
                fprintf(stderr, "xpool run: out of memory\n");
                return XP_EXIT_FAILURE;
        }

        /* Stop signals go to one thread, which deletes the pod; curl's waits are not disturbed. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        stop_copts = &copts;
        if (!a.detach && pthread_create(&thread, NULL, stop_thread, &mask) == 0)
                pthread_detach(thread);

        status = create_pod(&run, pod);
        if (status != 0)
                return status;
        if (a.detach) {
                printf("pod/%s created\n", run.name);
                return 0;
        }

        r = follow(&run, &err);
        free(run.line);
        /* From here on this thread reports and deletes; a stop signal that came first is being
         * handled by the stop thread, which holds the lock until it exits. */
        pthread_mutex_lock(&stop_lock);
        stop_pod_path[0] = '\0';
        pthread_mutex_unlock(&stop_lock);
        if (r < 0) {
                xp_client_report(&err);
                fprintf(stderr, "xpool run: pod %s is left as it is\n", run.name);
                return XP_EXIT_FAILURE;
        }
        status = final_status(&run, optind < argc ? argv[optind] : a.image);
        if (!a.keep && run.view.stage != STAGE_GONE)
                delete_pod(&run);
        return status;
}
