/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/launch.h"
#include "xpool/agent.h"
#include "xpool/codec.h"

/* JSON text with ' for " (and ` for ' inside strings) so fixtures stay readable. */
static char *dq(const char *text)
{
        char *s = strdup(text);

        assert_non_null(s);
        for (char *p = s; *p; p++)
                if (*p == '\'')
                        *p = '"';
                else if (*p == '`')
                        *p = '\'';
        return s;
}

static struct xp_node *node_new(void)
{
        char *text = dq(
            "{'apiVersion':'v1','kind':'Node','metadata':{'name':'n1'},'status':{"
            "'allocatable':{'cpu':'16','memory':'64Gi'},"
            "'addresses':[{'type':'Hostname','address':'n1'},{'type':'InternalIP','address':'10.0.0.5'}],"
            "'xpool':{'devices':["
            "{'id':'GPU-a','kind':'gpu','vendor':'NVIDIA','model':'H100','resourceName':'nvidia.com/gpu',"
            "'index':0,'deviceNodes':['/dev/nvidia0','/dev/nvidiactl','/dev/nvidia-uvm']},"
            "{'id':'GPU-b','kind':'gpu','vendor':'NVIDIA','model':'H100','resourceName':'nvidia.com/gpu',"
            "'index':1,'deviceNodes':['/dev/nvidia1','/dev/nvidiactl','/dev/nvidia-uvm']},"
            "{'id':'NPU-0','kind':'npu','vendor':'Huawei','model':'Ascend 910B',"
            "'resourceName':'huawei.com/Ascend910','index':3,'deviceNodes':['/dev/davinci3']}]}}}");
        struct xp_error err = {0};
        struct xp_node *node = NULL;

        if (xp_node_from_json_text(text, strlen(text), "node", XP_DECODE_TRUSTED, &node, &err) < 0)
                fail_msg("node: %s", err.msg);
        free(text);
        return node;
}

#define PLACEMENT                                                                                          \
        "{\\`node\\`:\\`n1\\`,\\`devices\\`:[{\\`resource\\`:\\`nvidia.com/gpu\\`,\\`id\\`:\\`GPU-a\\`,"   \
        "\\`index\\`:0,\\`milli\\`:1000},{\\`resource\\`:\\`huawei.com/Ascend910\\`,\\`id\\`:\\`NPU-0\\`," \
        "\\`index\\`:3,\\`milli\\`:1000}],\\`cpus\\`:\\`2-5\\`,\\`numaNode\\`:0}"

static struct xp_pod *pod_new(const char *annotations, const char *spec)
{
        char buf[8192];
        char *text;
        struct xp_error err = {0};
        struct xp_pod *pod = NULL;

        snprintf(buf,
                 sizeof(buf),
                 "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'train','namespace':'ml',"
                 "'uid':'uid-7','labels':{'app':'train'},'annotations':%s},'spec':%s}",
                 annotations,
                 spec);
        text = dq(buf);
        /* \` in the macros above stands for an escaped quote inside a JSON string */
        for (char *p = text; *p; p++)
                if (p[0] == '\\' && p[1] == '\'')
                        p[1] = '"';
        if (xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0)
                fail_msg("pod: %s\n%s", err.msg, text);
        free(text);
        return pod;
}

struct fake_dev {
        const char *path;
        unsigned major, minor;
};

static const struct fake_dev fake_devs[] = {
    {"/dev/nvidia0", 195, 0},
    {"/dev/nvidia1", 195, 1},
    {"/dev/nvidiactl", 195, 255},
    {"/dev/nvidia-uvm", 510, 0},
    {"/dev/nvidia-uvm-tools", 510, 1},
    {"/dev/davinci3", 236, 3},
    {"/dev/davinci_manager", 237, 0},
    {"/dev/devmm_svm", 238, 0},
    {"/dev/hisi_hdc", 239, 0},
    /* /dev/nvidia-modeset is absent on this node */
};

static int fake_lookup(const char *path, struct xp_cgroup_device *ret, void *userdata)
{
        int *calls = userdata;

        (*calls)++;
        if (strcmp(path, "/dev/davinci_manager") == 0 && *calls > 100)
                return -EACCES;
        for (size_t i = 0; i < XP_ELEMENTSOF(fake_devs); i++)
                if (strcmp(fake_devs[i].path, path) == 0) {
                        *ret = (struct xp_cgroup_device){
                            .type = 'c', .major = fake_devs[i].major, .minor = fake_devs[i].minor};
                        return 0;
                }
        return -ENOENT;
}

static void assert_strv(char *const *got, const char *const *want)
{
        size_t i = 0;

        for (; want[i]; i++) {
                if (!got[i])
                        fail_msg("missing [%zu] %s", i, want[i]);
                if (strcmp(got[i], want[i]) != 0)
                        fail_msg("[%zu]: got \"%s\", want \"%s\"", i, got[i], want[i]);
        }
        if (got[i])
                fail_msg("extra [%zu] %s", i, got[i]);
}

static const char *devices_text(const struct xp_launch *l, char *buf, size_t size)
{
        size_t len = 0;

        buf[0] = 0;
        for (size_t i = 0; i < l->limits.n_devices; i++) {
                const struct xp_cgroup_device *d = &l->limits.devices[i];
                char minor[16] = "*";

                if (d->minor != XP_CGROUP_DEVICE_ANY)
                        snprintf(minor, sizeof(minor), "%u", d->minor);
                len += snprintf(buf + len,
                                size - len,
                                "%s%c %u:%s %s",
                                i ? "," : "",
                                d->type,
                                d->major,
                                minor,
                                d->access);
        }
        return buf;
}

#define DEFAULT_DEVS                                                                               \
        "c 1:3 rwm,c 1:5 rwm,c 1:7 rwm,c 1:8 rwm,c 1:9 rwm,c 5:0 rwm,c 5:1 rwm,c 5:2 rwm,c 136:* rwm"

static void gpu_npu_placement(void **state)
{
        struct xp_node *node = node_new();
        struct xp_pod *pod = pod_new(
            "{'xpool.io/placement':'" PLACEMENT "'}",
            "{'nodeName':'n1','securityContext':{'runAsUser':1000},"
            "'containers':[{'name':'main','image':'pytorch','command':['python3','train.py'],"
            "'args':['--gpus','$(N)'],'workingDir':'/work',"
            "'env':[{'name':'N','value':'2'},{'name':'PATH','value':'/opt/bin:/usr/bin'}],"
            "'securityContext':{'runAsGroup':100},"
            "'resources':{'limits':{'cpu':'1500m','memory':'1Gi','nvidia.com/gpu':'1',"
            "'huawei.com/Ascend910':'1'}}}]}");
        struct xp_launch *l = NULL;
        struct xp_error err = {0};
        char buf[2048];
        int calls = 0;

        (void)state;
        if (xp_launch_build(
                pod, "main", false, 3, node, fake_lookup, &calls, 4096, NULL, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(l->launch.pod_uid, "uid-7");
        assert_string_equal(l->launch.pod_namespace, "ml");
        assert_string_equal(l->launch.pod_name, "train");
        assert_string_equal(l->launch.container, "main");
        assert_int_equal(l->launch.attempt, 3);
        assert_string_equal(l->launch.working_dir, "/work");
        assert_true(l->launch.set_user);
        assert_int_equal(l->launch.uid, 1000);
        assert_int_equal(l->launch.gid, 100);
        assert_strv(l->launch.argv, (const char *[]){"python3", "train.py", "--gpus", "2", NULL});
        assert_strv(
            l->launch.env,
            (const char *[]){
                "PATH=/opt/bin:/usr/bin",
                "HOME=/",
                "XPOOL_POD_NAME=train",
                "XPOOL_POD_NAMESPACE=ml",
                "XPOOL_POD_UID=uid-7",
                "XPOOL_NODE_NAME=n1",
                "ASCEND_RT_VISIBLE_DEVICES=3",
                "ASCEND_VISIBLE_DEVICES=3",
                "CUDA_VISIBLE_DEVICES=GPU-a",
                "NVIDIA_VISIBLE_DEVICES=GPU-a",
                "XPOOL_DEVICES=[{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-a\",\"index\":0,"
                "\"milli\":1000,\"kind\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"H100\"},"
                "{\"resource\":\"huawei.com/Ascend910\",\"id\":\"NPU-0\",\"index\":3,"
                "\"milli\":1000,\"kind\":\"npu\",\"vendor\":\"Huawei\",\"model\":\"Ascend 910B\"}]",
                "XPOOL_VISIBLE_DEVICES=GPU-a,NPU-0",
                "N=2",
                NULL});
        assert_ptr_equal(l->launch.limits, &l->limits);
        assert_int_equal(l->limits.cpu_millis, 1500);
        assert_int_equal(l->limits.memory_bytes, 1073741824);
        assert_int_equal(l->limits.pids_max, 4096);
        assert_string_equal(l->limits.cpuset_cpus, "2-5");
        assert_true(l->limits.restrict_devices);
        /* GPU-b's /dev/nvidia1 is not there; nvidia-modeset is absent on the node */
        assert_string_equal(devices_text(l, buf, sizeof(buf)),
                            DEFAULT_DEVS ",c 195:0 rwm,c 195:255 rwm,c 510:0 rwm,c 510:1 rwm,"
                                         "c 236:3 rwm,c 237:0 rwm,c 238:0 rwm,c 239:0 rwm");
        xp_launch_free(l);

        /* a lookup failing otherwise than ENOENT fails the build, naming the node */
        calls = 1000;
        assert_int_equal(
            xp_launch_build(pod, "main", false, 0, node, fake_lookup, &calls, 0, NULL, &l, &err),
            -EACCES);
        assert_string_equal(err.msg, "device node /dev/davinci_manager: Permission denied");
        xp_pod_free(pod);
        xp_node_free(node);
}

/* Pinned when the placement names CPUs; without one, or with one that does not parse, not (the
 * start reports a bad annotation) */
static void pinned(void **state)
{
        static const char *const spec = "{'nodeName':'n1','containers':[{'name':'main'}]}";
        struct xp_pod *pod = pod_new("{'xpool.io/placement':'" PLACEMENT "'}", spec);

        (void)state;
        assert_true(xp_launch_pinned(pod));
        xp_pod_free(pod);
        pod = pod_new("{'xpool.io/placement':'{\\`node\\`:\\`n1\\`}'}", spec);
        assert_false(xp_launch_pinned(pod));
        xp_pod_free(pod);
        pod = pod_new("{'xpool.io/placement':'{\\`node\\`:\\`n1\\`,\\`cpus\\`:\\`\\`}'}", spec);
        assert_false(xp_launch_pinned(pod));
        xp_pod_free(pod);
        pod = pod_new("{'xpool.io/placement':'{\\`devices\\`:7}'}", spec);
        assert_false(xp_launch_pinned(pod));
        xp_pod_free(pod);
        pod = pod_new("{}", spec);
        assert_false(xp_launch_pinned(pod));
        xp_pod_free(pod);
}

static void no_devices_container(void **state)
{
        struct xp_node *node = node_new();
        struct xp_pod *pod =
            pod_new("{'xpool.io/placement':'" PLACEMENT "'}",
                    "{'nodeName':'n1','initContainers':[{'name':'fetch','command':['curl']}],"
                    "'containers':[{'name':'main','command':['x'],"
                    "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}");
        struct xp_launch *l = NULL;
        struct xp_error err = {0};
        char buf[2048];
        int calls = 0;

        (void)state;
        if (xp_launch_build(pod, "fetch", true, 0, node, fake_lookup, &calls, 0, NULL, &l, &err) <
            0)
                fail_msg("%s", err.msg);
        assert_strv(l->launch.argv, (const char *[]){"curl", NULL});
        assert_strv(
            l->launch.env,
            (const char *[]){"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                             "HOME=/root",
                             "XPOOL_POD_NAME=train",
                             "XPOOL_POD_NAMESPACE=ml",
                             "XPOOL_POD_UID=uid-7",
                             "XPOOL_NODE_NAME=n1",
                             NULL});
        assert_false(l->launch.set_user);
        assert_null(l->launch.working_dir);
        assert_int_equal(l->limits.cpu_millis, 0);
        assert_int_equal(l->limits.memory_bytes, 0);
        assert_string_equal(l->limits.cpuset_cpus, "2-5");
        assert_string_equal(devices_text(l, buf, sizeof(buf)), DEFAULT_DEVS);
        assert_int_equal(calls, 0);
        xp_launch_free(l);

        /* "main" as an init container does not exist */
        assert_int_equal(
            xp_launch_build(pod, "main", true, 0, node, fake_lookup, &calls, 0, NULL, &l, &err),
            -ENOENT);
        assert_string_equal(err.msg, "pod ml/train has no init container main");
        xp_pod_free(pod);
        xp_node_free(node);
}

static void expansion(void **state)
{
        struct xp_pod *pod = pod_new(
            "{}",
            "{'nodeName':'n1','containers':[{'name':'c','args':['sh','-c',"
            "'echo $(A) $$(A) $$$(A) $(NOPE) $(A $( $ $(B)x'],"
            "'env':[{'name':'A','value':'one'},{'name':'B','value':'$(A)-$(C)'},"
            "{'name':'C','value':'three'},{'name':'D','value':'$(XPOOL_POD_NAME)$$(A)'}]}]}");
        struct xp_launch *l = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_launch_build(pod, "c", false, 0, NULL, NULL, NULL, 0, NULL, &l, &err) < 0)
                fail_msg("%s", err.msg);
        /* an empty command runs args alone */
        assert_strv(
            l->launch.argv,
            (const char *[]){"sh", "-c", "echo one $(A) $one $(NOPE) $(A $( $ $(B)x", NULL});
        /* as Kubernetes reads it, the name runs to the first ')': "A $( $ $(B" is unknown */
        assert_string_equal(l->launch.env[6], "A=one");
        assert_string_equal(l->launch.env[7], "B=one-$(C)"); /* C is defined after B */
        assert_string_equal(l->launch.env[8], "C=three");
        assert_string_equal(l->launch.env[9], "D=train$(A)");
        assert_null(l->launch.env[10]);
        /* no node, no placement: only the default devices */
        assert_int_equal(l->limits.n_devices, 9);
        assert_null(l->limits.cpuset_cpus);
        xp_launch_free(l);
        xp_pod_free(pod);
}

static void value_from(void **state)
{
        struct xp_node *node = node_new();
        struct xp_pod *pod = pod_new(
            "{'team':'vision'}",
            "{'nodeName':'n1','containers':[{'name':'c','command':['env'],'env':["
            "{'name':'NAME','valueFrom':{'fieldRef':{'fieldPath':'metadata.name'}}},"
            "{'name':'NS','valueFrom':{'fieldRef':{'fieldPath':'metadata.namespace'}}},"
            "{'name':'UID','valueFrom':{'fieldRef':{'fieldPath':'metadata.uid'}}},"
            "{'name':'NODE','valueFrom':{'fieldRef':{'fieldPath':'spec.nodeName'}}},"
            "{'name':'HOSTIP','valueFrom':{'fieldRef':{'fieldPath':'status.hostIP'}}},"
            "{'name':'APP','valueFrom':{'fieldRef':{'fieldPath':'metadata.labels[`app`]'}}},"
            "{'name':'TEAM','valueFrom':{'fieldRef':{'fieldPath':'metadata.annotations[`team`]'}}},"
            "{'name':'NOLABEL','valueFrom':{'fieldRef':{'fieldPath':'metadata.labels[`x`]'}}},"
            "{'name':'CPU','valueFrom':{'resourceFieldRef':{'resource':'limits.cpu'}}},"
            "{'name':'CPU_M','valueFrom':{'resourceFieldRef':{'resource':'limits.cpu','divisor':'1m'}}},"
            "{'name':'MEM_MI','valueFrom':{'resourceFieldRef':{'resource':'limits.memory','divisor':'1Mi'}}},"
            "{'name':'REQ_CPU','valueFrom':{'resourceFieldRef':{'resource':'requests.cpu','divisor':'1m'}}},"
            "{'name':'REQ_MEM','valueFrom':{'resourceFieldRef':{'resource':'requests.memory'}}},"
            "{'name':'SIDE_MEM','valueFrom':{'resourceFieldRef':{'containerName':'side',"
            "'resource':'limits.memory','divisor':'1Gi'}}}],"
            "'resources':{'limits':{'cpu':'2500m','memory':'100Mi'},'requests':{'cpu':'500m'}}},"
            "{'name':'side','command':['s'],'resources':{'limits':{'memory':'3Gi'}}}]}");
        struct xp_launch *l = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_launch_build(pod, "c", false, 0, node, fake_lookup, NULL, 0, NULL, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_strv(l->launch.env + 6,
                    (const char *[]){"NAME=train",
                                     "NS=ml",
                                     "UID=uid-7",
                                     "NODE=n1",
                                     "HOSTIP=10.0.0.5",
                                     "APP=train",
                                     "TEAM=vision",
                                     "NOLABEL=",
                                     "CPU=3",
                                     "CPU_M=2500",
                                     "MEM_MI=100",
                                     "REQ_CPU=500",
                                     "REQ_MEM=104857600",
                                     "SIDE_MEM=3",
                                     NULL});
        xp_launch_free(l);
        xp_pod_free(pod);

        /* no limit: the node's allocatable, as the kubelet does */
        pod = pod_new(
            "{}",
            "{'containers':[{'name':'c','command':['env'],'env':["
            "{'name':'CPU','valueFrom':{'resourceFieldRef':{'resource':'limits.cpu'}}}]}]}");
        if (xp_launch_build(pod, "c", false, 0, node, NULL, NULL, 0, NULL, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(l->launch.env[6], "CPU=16");
        xp_launch_free(l);
        xp_pod_free(pod);
        xp_node_free(node);
}

static void expect_error(const char *annotations, const char *spec, int code, const char *msg)
{
        struct xp_node *node = node_new();
        struct xp_pod *pod = pod_new(annotations, spec);
        struct xp_launch *l = (struct xp_launch *)0x1;
        struct xp_error err = {0};
        int calls = 0;

        assert_int_equal(
            xp_launch_build(pod, "c", false, 0, node, fake_lookup, &calls, 0, NULL, &l, &err),
            code);
        assert_string_equal(err.msg, msg);
        assert_ptr_equal(l, (struct xp_launch *)0x1);
        xp_pod_free(pod);
        xp_node_free(node);
}

static void errors(void **state)
{
        (void)state;
        expect_error(
            "{}",
            "{'containers':[{'name':'c','image':'busybox'}]}",
            -EINVAL,
            "spec.containers[0]: container c has no command: runtime class process runs processes of the node, not images (image \"busybox\" is not pulled; give command or args, or run the pod under an OCI runtime class)");
        expect_error(
            "{}",
            "{'containers':[{'name':'c','command':['x'],'env':[{'name':'P',"
            "'valueFrom':{'secretKeyRef':{'name':'s','key':'k'}}}]}]}",
            -EINVAL,
            "spec.containers[0].env[0].valueFrom.secretKeyRef: not read: the agent reads ConfigMaps and Secrets before the launch (src/agent/podconfig.c)");
        expect_error(
            "{}",
            "{'containers':[{'name':'o','command':['y']},{'name':'c','command':['x'],"
            "'env':[{'name':'A','value':'a'},{'name':'P',"
            "'valueFrom':{'configMapKeyRef':{'name':'s','key':'k'}}}]}]}",
            -EINVAL,
            "spec.containers[1].env[1].valueFrom.configMapKeyRef: not read: the agent reads ConfigMaps and Secrets before the launch (src/agent/podconfig.c)");
        expect_error(
            "{}",
            "{'containers':[{'name':'c','command':['x'],'env':[{'name':'P',"
            "'valueFrom':{'fieldRef':{'fieldPath':'status.phase'}}}]}]}",
            -EINVAL,
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: \"status.phase\" is not supported (metadata.name, metadata.namespace, metadata.uid, metadata.labels['KEY'], metadata.annotations['KEY'], spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP, status.podIPs)");
        expect_error(
            "{}",
            "{'containers':[{'name':'c','command':['x'],'env':[{'name':'P',"
            "'valueFrom':{'resourceFieldRef':{'resource':'limits.nvidia.com/gpu'}}}]}]}",
            -EINVAL,
            "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: \"limits.nvidia.com/gpu\" is not supported (limits.cpu, limits.memory, limits.ephemeral-storage, requests.*)");
        expect_error(
            "{}",
            "{'containers':[{'name':'c','command':['x'],"
            "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}",
            -EINVAL,
            "pod ml/train: annotation xpool.io/placement is missing, yet spec.containers[0] requests nvidia.com/gpu (the scheduler writes it when it binds the pod)");
        expect_error("{'xpool.io/placement':'{\\`node\\`:\\`n1\\`,\\`devices\\`:7}'}",
                     "{'containers':[{'name':'c','command':['x']}]}",
                     -EINVAL,
                     "pod ml/train: xpool.io/placement: devices: must be an array");
        expect_error(
            "{'xpool.io/placement':'{\\`node\\`:\\`n1\\`,\\`devices\\`:[{\\`resource\\`:"
            "\\`nvidia.com/gpu\\`,\\`id\\`:\\`GPU-z\\`,\\`index\\`:5,\\`milli\\`:1000}]}'}",
            "{'containers':[{'name':'c','command':['x'],"
            "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}",
            -EINVAL,
            "annotation xpool.io/placement: device \"GPU-z\" is not in the inventory of node n1");
        expect_error(
            "{}",
            "{'securityContext':{'runAsNonRoot':true},"
            "'containers':[{'name':'c','command':['x']}]}",
            -EPERM,
            "container has runAsNonRoot and image will run as root (pod: \"train_ml(uid-7)\", container: c)");
        expect_error(
            "{}",
            "{'securityContext':{'runAsNonRoot':true,'runAsUser':7},"
            "'containers':[{'name':'c','command':['x'],'securityContext':{'runAsUser':0}}]}",
            -EPERM,
            "container's runAsUser breaks non-root policy (pod: \"train_ml(uid-7)\", container: c)");
        expect_error(
            "{}",
            "{'containers':[{'name':'c','command':['x'],'securityContext':{'runAsGroup':5}}]}",
            -EINVAL,
            "spec.containers[0].securityContext.runAsGroup: needs runAsUser (xpool has no image to take the user from)");
}

/* The containment a container gets from its (and its pod's) securityContext. */
static int contain_of(const char *spec,
                      const struct xp_launch_policy *policy,
                      struct xp_contain *ret,
                      bool *restrict_devices,
                      struct xp_error *err)
{
        struct xp_node *node = node_new();
        struct xp_pod *pod = pod_new("{}", spec);
        struct xp_launch *l = NULL;
        int calls = 0;
        int r = xp_launch_build(pod, "c", false, 0, node, fake_lookup, &calls, 0, policy, &l, err);

        if (r >= 0) {
                *ret = l->contain;
                assert_ptr_equal(l->launch.contain, &l->contain);
                if (restrict_devices)
                        *restrict_devices = l->limits.restrict_devices;
        }
        xp_launch_free(l);
        xp_pod_free(pod);
        xp_node_free(node);
        return r;
}

#define SC(pod_sc, c_sc)                                                                           \
        "{'securityContext':" pod_sc ",'containers':[{'name':'c','command':['x'],"                 \
        "'securityContext':" c_sc "}]}"

static void security_contexts(void **state)
{
        struct xp_launch_policy allow = {.allow_privileged = true, .node_name = "n1"};
        struct xp_contain c;
        struct xp_error err = {0};
        bool restricted = false;

        (void)state;
        /* nothing asked: Docker's capabilities, no_new_privs, the filter */
        assert_int_equal(contain_of(SC("{}", "{}"), NULL, &c, &restricted, &err), 0);
        assert_false(c.privileged);
        assert_true(c.caps.effective == XP_CAP_DEFAULT && c.caps.bounding == XP_CAP_DEFAULT);
        assert_true(c.no_new_privs && c.seccomp && !c.read_only_root && restricted);
        /* drop ALL, add one back; read-only root */
        assert_int_equal(
            contain_of(SC("{}",
                          "{'capabilities':{'drop':['ALL'],'add':['NET_BIND_SERVICE']},"
                          "'readOnlyRootFilesystem':true}"),
                       NULL,
                       &c,
                       NULL,
                       &err),
            0);
        assert_true(c.caps.effective == XP_CAP_BIT(10) && c.read_only_root);
        /* escalation only when asked for */
        assert_int_equal(
            contain_of(SC("{}", "{'allowPrivilegeEscalation':true}"), NULL, &c, NULL, &err), 0);
        assert_false(c.no_new_privs);
        assert_int_equal(
            contain_of(SC("{}", "{'allowPrivilegeEscalation':false}"), NULL, &c, NULL, &err), 0);
        assert_true(c.no_new_privs);
        /* the pod's seccompProfile is the default, the container's overrides it */
        assert_int_equal(
            contain_of(SC("{'seccompProfile':{'type':'Unconfined'}}", "{}"), NULL, &c, NULL, &err),
            0);
        assert_false(c.seccomp);
        assert_int_equal(contain_of(SC("{'seccompProfile':{'type':'Unconfined'}}",
                                       "{'seccompProfile':{'type':'RuntimeDefault'}}"),
                                    NULL,
                                    &c,
                                    NULL,
                                    &err),
                         0);
        assert_true(c.seccomp);
        /* privileged: only where the node allows it; then every capability and device */
        assert_int_equal(contain_of(SC("{}", "{'privileged':true}"), NULL, &c, NULL, &err), -EPERM);
        assert_string_equal(
            err.msg,
            "spec.containers[0].securityContext.privileged: node  does not allow privileged containers (its agent runs without --allow-privileged)");
        assert_int_equal(contain_of(SC("{}", "{'privileged':true,'capabilities':{'drop':['ALL']}}"),
                                    &allow,
                                    &c,
                                    &restricted,
                                    &err),
                         0);
        assert_true(c.privileged && c.caps.effective == XP_CAP_ALL && !c.no_new_privs &&
                    !c.seccomp && !restricted);
}

static void security_context_refusals(void **state)
{
        struct xp_launch_policy allow = {.allow_privileged = true, .default_uid = 1000};
        struct xp_contain c;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            contain_of(SC("{}", "{'capabilities':{'add':['FLY']}}"), NULL, &c, NULL, &err), -EPERM);
        assert_string_equal(
            err.msg,
            "spec.containers[0].securityContext.capabilities: add[0]: unknown capability \"FLY\" (names as CAP_NET_ADMIN without CAP_, or ALL)");
        assert_int_equal(contain_of(SC("{}",
                                       "{'seccompProfile':{'type':'Localhost',"
                                       "'localhostProfile':'p.json'}}"),
                                    NULL,
                                    &c,
                                    NULL,
                                    &err),
                         -EPERM);
        assert_string_equal(
            err.msg,
            "spec.containers[0].securityContext.seccompProfile: type Localhost (\"p.json\") is not supported by xpool's process runtime: use RuntimeDefault or Unconfined");
        assert_int_equal(
            contain_of(SC("{}", "{'privileged':true,'allowPrivilegeEscalation':false}"),
                       &allow,
                       &c,
                       NULL,
                       &err),
            -EPERM);
        assert_string_equal(
            err.msg,
            "spec.containers[0].securityContext.allowPrivilegeEscalation: Invalid value: false: cannot set `allowPrivilegeEscalation` to false and `privileged` to true");
        assert_int_equal(contain_of(SC("{}",
                                       "{'allowPrivilegeEscalation':false,"
                                       "'capabilities':{'add':['SYS_ADMIN']}}"),
                                    NULL,
                                    &c,
                                    NULL,
                                    &err),
                         -EPERM);
        assert_non_null(strstr(err.msg, "CAP_SYS_ADMIN"));
        /* runAsNonRoot without runAsUser: fine where the agent is not root */
        assert_int_equal(contain_of(SC("{'runAsNonRoot':true}", "{}"), &allow, &c, NULL, &err), 0);
}

static int admit(const char *spec,
                 const struct xp_launch_policy *policy,
                 const char **reason,
                 struct xp_error *err)
{
        struct xp_pod *pod = pod_new("{}", spec);
        int r = xp_launch_admit(pod, policy, reason, err);

        xp_pod_free(pod);
        return r;
}

static void admission(void **state)
{
        const char *privileged = "{'initContainers':[{'name':'i','command':['x'],"
                                 "'securityContext':{'privileged':true}}],"
                                 "'containers':[{'name':'c','command':['x']}]}";
        const char *limited = "{'containers':[{'name':'c','command':['x'],"
                              "'resources':{'limits':{'memory':'1Gi'}}}]}";
        const char *gpu = "{'containers':[{'name':'c','command':['x'],"
                          "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}";
        const char *plain = "{'containers':[{'name':'c','command':['x']}]}";
        struct xp_launch_policy full = {.isolation = XP_ISOLATION_ALL, .node_name = "n1"};
        struct xp_launch_policy nocg = {.isolation = XP_ISOLATION_ALL &
                                                     ~(XP_ISOLATION_CGROUPS | XP_ISOLATION_DEVICES),
                                        .node_name = "n2"};
        struct xp_launch_policy nodev = {.isolation = XP_ISOLATION_ALL & ~XP_ISOLATION_DEVICES,
                                         .node_name = "n3"};
        struct xp_error err = {0};
        const char *reason = NULL;

        (void)state;
        assert_int_equal(admit(plain, &full, &reason, &err), 0);
        assert_int_equal(admit(privileged, &full, &reason, &err), -EPERM);
        assert_string_equal(reason, "PrivilegedNotAllowed");
        assert_string_equal(
            err.msg,
            "container i (spec.initContainers[0]) asks for privileged: true, which node n1 does not allow: its agent runs without --allow-privileged");
        full.allow_privileged = true;
        assert_int_equal(admit(privileged, &full, &reason, &err), 0);
        /* a degraded node: limits need cgroups, devices a device filter too */
        assert_int_equal(admit(plain, &nocg, &reason, &err), 0);
        assert_int_equal(admit(limited, &nocg, &reason, &err), -EPERM);
        assert_string_equal(reason, "IsolationDegraded");
        assert_string_equal(
            err.msg,
            "node n2 cannot isolate this pod: it cannot create cgroups, so the limits of container c (spec.containers[0]) would not be enforced; start its agent with --allow-degraded-isolation to run such pods anyway");
        assert_int_equal(admit(limited, &nodev, &reason, &err), 0);
        assert_int_equal(admit(gpu, &nodev, &reason, &err), -EPERM);
        assert_non_null(strstr(
            err.msg,
            "it has no device filter, so the devices of container c (spec.containers[0], nvidia.com/gpu)"));
        nocg.allow_degraded_isolation = nodev.allow_degraded_isolation = true;
        assert_int_equal(admit(limited, &nocg, &reason, &err), 0);
        assert_int_equal(admit(gpu, &nodev, &reason, &err), 0);
}

/* A pod without hostNetwork on a node that cannot give it a network of its own. */
static void network_admission(void **state)
{
        const char *plain = "{'containers':[{'name':'c','command':['x']}]}";
        const char *host = "{'hostNetwork':true,'containers':[{'name':'c','command':['x']}]}";
        struct xp_launch_policy nonet = {
            .isolation = XP_ISOLATION_ALL,
            .node_name = "n4",
            .network_unavailable = "network \"xpool\": no CNI plugin \"bridge\" in /usr/lib/cni"};
        struct xp_error err = {0};
        const char *reason = NULL;

        (void)state;
        assert_int_equal(admit(plain, &nonet, &reason, &err), -EPERM);
        assert_string_equal(reason, "NetworkUnavailable");
        assert_string_equal(
            err.msg,
            "node n4 cannot give the pod a network of its own (network \"xpool\": no CNI plugin \"bridge\" in /usr/lib/cni); set hostNetwork: true to run it on the node's network, or start the agent with --allow-degraded-isolation to run such pods there anyway");
        assert_int_equal(admit(host, &nonet, &reason, &err), 0);
        nonet.allow_degraded_isolation = true;
        assert_int_equal(admit(plain, &nonet, &reason, &err), 0);
        nonet.network_unavailable = NULL;
        nonet.allow_degraded_isolation = false;
        assert_int_equal(admit(plain, &nonet, &reason, &err), 0);
}

/* status.podIP: the pod's own address once its network is set up, else the node's. */
/* A process pod's volumes of every kind, as its runtime is handed them; what the node refuses. */
static int process_volumes_of(const char *volumes, const char *mounts, struct xp_error *err)
{
        static const char *const allowed[] = {"/srv/data", NULL};
        struct xp_launch_policy policy = {
            .node_name = "n1", .allowed_host_paths = allowed, .data_dir = "/var/lib/xpool-agent"};
        char spec[2048];
        struct xp_node *node = node_new();
        struct xp_pod *pod;
        struct xp_launch *l = NULL;
        int calls = 0, r;

        snprintf(spec,
                 sizeof(spec),
                 "{'volumes':%s,'containers':[{'name':'c','command':['x'],'volumeMounts':%s}]}",
                 volumes,
                 mounts);
        pod = pod_new("{}", spec);
        r = xp_launch_build(pod, "c", false, 0, node, fake_lookup, &calls, 0, &policy, &l, err);
        if (r >= 0) {
                const struct xp_container_mount *m = l->launch.mounts;

                assert_int_equal(l->launch.n_mounts, 4);
                assert_int_equal(m[0].kind, XP_VOLUME_EMPTY_DIR);
                assert_string_equal(m[0].volume, "scratch");
                assert_false(m[0].read_only);
                assert_int_equal(m[1].kind, XP_VOLUME_EMPTY_DIR_MEMORY);
                assert_int_equal(m[1].size_bytes, 64 * 1024 * 1024);
                assert_int_equal(m[2].kind, XP_VOLUME_HOST_PATH);
                assert_string_equal(m[2].source, "/srv/data/in");
                assert_string_equal(m[2].allowed, "/srv/data");
                assert_string_equal(m[2].host_type, "DirectoryOrCreate");
                assert_true(m[2].read_only);
                assert_string_equal(m[2].destination, "/in");
                /* the agent's files, read-only whatever readOnly says */
                assert_int_equal(m[3].kind, XP_VOLUME_FILES);
                assert_string_equal(m[3].source, "/var/lib/xpool-agent/volumes/uid-7/conf");
                assert_true(m[3].read_only);
        }
        xp_launch_free(l);
        xp_pod_free(pod);
        xp_node_free(node);
        return r;
}

#define VOLUMES(host, mem)                                                                         \
        "[{'name':'scratch','emptyDir':{}},"                                                       \
        "{'name':'shm','emptyDir':{'medium':'Memory','sizeLimit':'" mem "'}},"                     \
        "{'name':'in','hostPath':{'path':'" host "','type':'DirectoryOrCreate'}},"                 \
        "{'name':'conf','configMap':{'name':'app'}}]"
#define MOUNTS                                                                                     \
        "[{'name':'scratch','mountPath':'/scratch'},{'name':'shm','mountPath':'/dev/shm'},"        \
        "{'name':'in','mountPath':'/in','readOnly':true},{'name':'conf','mountPath':'/etc/app'}]"

static void process_volumes(void **state)
{
        struct xp_error err = {0};

        (void)state;
        if (process_volumes_of(VOLUMES("/srv/data/in", "64Mi"), MOUNTS, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(process_volumes_of(VOLUMES("/srv/database", "64Mi"), MOUNTS, &err),
                         -EPERM);
        assert_string_equal(
            err.msg,
            "volume in: hostPath /srv/database is not allowed on node n1: the node's admin allows hostPath volumes below the paths given to xpool agent --allow-host-path");
        assert_int_equal(process_volumes_of(VOLUMES("/srv/data/../etc", "64Mi"), MOUNTS, &err),
                         -EPERM);
        assert_string_equal(
            err.msg,
            "volume in.hostPath.path: \"/srv/data/../etc\" is not an absolute, normalized path");
        assert_int_equal(process_volumes_of(VOLUMES("/srv/data/in", "lots"), MOUNTS, &err), -EPERM);
        assert_string_equal(err.msg, "volume shm.emptyDir.sizeLimit: \"lots\" is not a size");
        assert_int_equal(process_volumes_of(VOLUMES("/srv/data/in", "64Mi"),
                                            "[{'name':'gone','mountPath':'/g'}]",
                                            &err),
                         -EPERM);
        assert_string_equal(
            err.msg, "spec.containers[0].volumeMounts[0].name: the pod has no volume \"gone\"");
        assert_int_equal(
            process_volumes_of(VOLUMES("/srv/data/in", "64Mi"),
                               "[{'name':'scratch','mountPath':'/s','subPath':'../x'}]",
                               &err),
            -EPERM);
        assert_string_equal(
            err.msg,
            "spec.containers[0].volumeMounts[0].subPath: \"../x\" is not a relative path inside the volume");
}

static void pod_ip(void **state)
{
        struct xp_node *node = node_new();
        struct xp_pod *pod = pod_new(
            "{}",
            "{'containers':[{'name':'c','command':['env'],'env':["
            "{'name':'POD_IP','valueFrom':{'fieldRef':{'fieldPath':'status.podIP'}}},"
            "{'name':'HOST_IP','valueFrom':{'fieldRef':{'fieldPath':'status.hostIP'}}}]}]}");
        struct xp_launch *l = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_launch_build(pod, "c", false, 0, node, NULL, NULL, 0, NULL, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(l->launch.env[6], "POD_IP=10.0.0.5");
        assert_string_equal(l->launch.env[7], "HOST_IP=10.0.0.5");
        xp_launch_free(l);
        pod->status.pod_ip = strdup("10.87.0.9");
        if (xp_launch_build(pod, "c", false, 0, node, NULL, NULL, 0, NULL, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(l->launch.env[6], "POD_IP=10.87.0.9");
        assert_string_equal(l->launch.env[7], "HOST_IP=10.0.0.5");
        xp_launch_free(l);
        xp_pod_free(pod);
        xp_node_free(node);
}

/* the `kubernetes` Service's variables the kubelet sets, for the agent's server address (its URL
 * split once at the agent's start): the spec's env overrides them in place and may name them */
static void service_env(void **state)
{
        struct xp_pod *pod = pod_new(
            "{}",
            "{'containers':[{'name':'c','command':['env'],'env':["
            "{'name':'KUBERNETES_SERVICE_PORT','value':'9999'},"
            "{'name':'URL','value':'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_PORT_6443_TCP_PORT)'}]}]}");
        struct xp_launch_policy policy = {.api_host = "10.1.2.3", .api_port = 6443};
        struct xp_launch *l = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_launch_build(pod, "c", false, 0, NULL, NULL, NULL, 0, &policy, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_strv(l->launch.env + 6,
                    (const char *[]){"KUBERNETES_SERVICE_HOST=10.1.2.3",
                                     "KUBERNETES_SERVICE_PORT=9999",
                                     "KUBERNETES_SERVICE_PORT_HTTPS=6443",
                                     "KUBERNETES_PORT=tcp://10.1.2.3:6443",
                                     "KUBERNETES_PORT_6443_TCP=tcp://10.1.2.3:6443",
                                     "KUBERNETES_PORT_6443_TCP_PROTO=tcp",
                                     "KUBERNETES_PORT_6443_TCP_PORT=6443",
                                     "KUBERNETES_PORT_6443_TCP_ADDR=10.1.2.3",
                                     "URL=https://10.1.2.3:6443",
                                     NULL});
        xp_launch_free(l);

        /* IPv6: the bare address in HOST and ADDR, in brackets in the tcp:// links */
        policy.api_host = "fd00::1";
        policy.api_port = 443;
        if (xp_launch_build(pod, "c", false, 0, NULL, NULL, NULL, 0, &policy, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(l->launch.env[6], "KUBERNETES_SERVICE_HOST=fd00::1");
        assert_string_equal(l->launch.env[8], "KUBERNETES_SERVICE_PORT_HTTPS=443");
        assert_string_equal(l->launch.env[9], "KUBERNETES_PORT=tcp://[fd00::1]:443");
        assert_string_equal(l->launch.env[13], "KUBERNETES_PORT_443_TCP_ADDR=fd00::1");
        xp_launch_free(l);

        /* a name */
        policy.api_host = "api.example";
        policy.api_port = 8080;
        if (xp_launch_build(pod, "c", false, 0, NULL, NULL, NULL, 0, &policy, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(l->launch.env[6], "KUBERNETES_SERVICE_HOST=api.example");
        assert_string_equal(l->launch.env[10], "KUBERNETES_PORT_8080_TCP=tcp://api.example:8080");
        xp_launch_free(l);

        /* no server address: none of them */
        policy.api_host = NULL;
        if (xp_launch_build(pod, "c", false, 0, NULL, NULL, NULL, 0, &policy, &l, &err) < 0)
                fail_msg("%s", err.msg);
        assert_strv(l->launch.env + 6,
                    (const char *[]){
                        "KUBERNETES_SERVICE_PORT=9999",
                        "URL=https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_PORT_6443_TCP_PORT)",
                        NULL});
        xp_launch_free(l);

        xp_pod_free(pod);
}

/* the agent splits its server's URL at its start: one that is not a URL stops it there, saying
 * which, before it touches the node */
static void agent_server_url_refused(void **state)
{
        const char *bad[] = {"10.1.2.3:6443",
                             "https://",
                             "https://h:0",
                             "https://h:99999",
                             "https://h:12x",
                             "ftp://h",
                             "https://[::1",
                             "https://:443",
                             "https://user@h:443"};

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct xp_agent_options options = {.server_url = bad[i], .token = "t"};
                struct xp_error err = {0};
                struct xp_agent *agent = NULL;

                assert_int_equal(xp_agent_new(&options, &agent, &err), -EINVAL);
                assert_null(agent);
                assert_non_null(strstr(err.msg, bad[i]));
                assert_non_null(strstr(err.msg, "not scheme://host[:port]"));
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(gpu_npu_placement),
            cmocka_unit_test(pinned),
            cmocka_unit_test(security_contexts),
            cmocka_unit_test(security_context_refusals),
            cmocka_unit_test(admission),
            cmocka_unit_test(network_admission),
            cmocka_unit_test(pod_ip),
            cmocka_unit_test(process_volumes),
            cmocka_unit_test(no_devices_container),
            cmocka_unit_test(expansion),
            cmocka_unit_test(service_env),
            cmocka_unit_test(agent_server_url_refused),
            cmocka_unit_test(value_from),
            cmocka_unit_test(errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
