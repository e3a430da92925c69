#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A fake kubelet for tests/integration/22-device-plugin.sh, in another gRPC implementation
than xpool's (Debian's python3-grpcio), written against the same .proto files
(src/kube/proto), from which protoc generates the Python messages at the start.

It serves Registration on DIR/kubelet.sock and the pod-resources API on its own socket, connects
to every plugin that registers (GetDevicePluginOptions, then ListAndWatch in a thread), and runs
the scenario of the test: registrations, device lists with NUMA nodes, a health change injected
through the fake NVML and streamed both ways, preferred allocations on two NVLink islands,
allocations, bad input, a kubelet restart, and the pod-resources client reading what it serves.
With --podres-only it serves only the pod-resources API, with the pods of a JSON file read again
at every call, for `xpool inventory` in 23-extender.

Each check prints "ok NAME" or "FAIL NAME: why"; the exit status is the number of failures.
Every wait is bounded (WAIT seconds).
"""
import argparse
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

# a limit for what the plugin streams or registers, not an expectation (15 s was one: the plugin
# starts under the sanitizers on a loaded CI machine)
WAIT = 60.0
failures = 0


def check(name, ok, why=""):
    global failures
    if ok:
        print("ok", name, flush=True)
    else:
        failures += 1
        print("FAIL %s: %s" % (name, why), flush=True)


def load_messages(proto_dir):
    out = tempfile.mkdtemp(prefix="fake-kubelet-")
    subprocess.run(["protoc", "-I" + proto_dir, "--python_out=" + out,
                    "deviceplugin.proto", "podresources.proto"], check=True)
    sys.path.insert(0, out)
    import deviceplugin_pb2
    import podresources_pb2
    return deviceplugin_pb2, podresources_pb2


class Endpoint:
    """One registered plugin: its channel, options and the lists ListAndWatch streamed."""

    def __init__(self, dp, socket, request):
        self.dp = dp
        self.request = request
        self.socket = socket
        self.received = 0  # lists streamed on this endpoint's one ListAndWatch
        self.channel = grpc.insecure_channel("unix:" + socket)
        self.lists = queue.Queue()
        self.latest = None
        self.options = self.unary("GetDevicePluginOptions", dp.Empty(), dp.DevicePluginOptions)
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def unary(self, method, request, reply, timeout=30):
        call = self.channel.unary_unary("/v1beta1.DevicePlugin/" + method,
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=reply.FromString)
        return call(request, timeout=timeout)

    def raw(self, method, data, timeout=30):
        call = self.channel.unary_unary("/v1beta1.DevicePlugin/" + method,
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
        return call(data, timeout=timeout)

    def watch(self):
        stream = self.channel.unary_stream(
            "/v1beta1.DevicePlugin/ListAndWatch",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.dp.ListAndWatchResponse.FromString)
        try:
            for msg in stream(self.dp.Empty()):
                self.received += 1
                self.lists.put(msg)
        except grpc.RpcError:
            pass  # the plugin's server went (a restart): the stream ends

    def wait_list(self, predicate, timeout=WAIT):
        """The first streamed list (the latest one first) that satisfies predicate, or None."""
        deadline = time.monotonic() + timeout
        if self.latest is not None and predicate(self.latest):
            return self.latest
        while time.monotonic() < deadline:
            try:
                self.latest = self.lists.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if predicate(self.latest):
                return self.latest
        return None


class Kubelet:
    def __init__(self, dp, pr, directory, podres_socket, pods):
        self.dp, self.pr = dp, pr
        self.dir = directory
        self.podres_socket = podres_socket
        self.pods = pods
        self.registrations = queue.Queue()
        self.endpoints = {}
        self.lock = threading.Lock()
        self.server = None
        self.podres_server = None

    # ---- Registration ----
    def register(self, request, context):
        if request.version != "v1beta1":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unsupported version " + request.version)
        socket = os.path.join(self.dir, request.endpoint)
        if not os.path.exists(socket):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no socket " + socket)
        # the kubelet connects back on its own, after answering
        threading.Thread(target=self.connect, args=(request, socket), daemon=True).start()
        return self.dp.Empty()

    def connect(self, request, socket):
        try:
            ep = Endpoint(self.dp, socket, request)
        except grpc.RpcError as e:
            print("kubelet: cannot reach %s: %s" % (socket, e), flush=True)
            return
        with self.lock:
            self.endpoints[request.resource_name] = ep
        self.registrations.put(request)

    def start(self):
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handler = grpc.method_handlers_generic_handler("v1beta1.Registration", {
            "Register": grpc.unary_unary_rpc_method_handler(
                self.register, request_deserializer=self.dp.RegisterRequest.FromString,
                response_serializer=lambda m: m.SerializeToString()),
        })
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port("unix:" + os.path.join(self.dir, "kubelet.sock"))
        self.server.start()

    def stop(self):
        self.server.stop(0).wait(5)

    def restart(self):
        """As a kubelet that starts: every socket in the directory goes, then kubelet.sock."""
        self.stop()
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            if name.endswith(".sock") and os.path.exists(path):
                os.unlink(path)
        with self.lock:
            self.endpoints = {}
        while not self.registrations.empty():
            self.registrations.get()
        self.start()

    def wait_registered(self, names, timeout=WAIT):
        deadline = time.monotonic() + timeout
        seen = {}
        while set(seen) != set(names) and time.monotonic() < deadline:
            try:
                r = self.registrations.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen[r.resource_name] = r
        return seen

    # ---- pod resources ----
    def podres_start(self):
        pr = self.pr

        def devices(entries):
            return [pr.ContainerDevices(resource_name=d["resource"], device_ids=d["ids"],
                                        topology=pr.TopologyInfo(nodes=[pr.NUMANode(ID=n) for n in d["numa"]]))
                    for d in entries]

        def pod(p):
            return pr.PodResources(name=p["name"], namespace=p["namespace"], containers=[
                pr.ContainerResources(name=c["name"], devices=devices(c["devices"]), cpu_ids=c.get("cpus", []))
                for c in p["containers"]])

        def list_(request, context):
            return pr.ListPodResourcesResponse(pod_resources=[pod(p) for p in self.pods["pods"]])

        def allocatable(request, context):
            return pr.AllocatableResourcesResponse(devices=devices(self.pods["allocatable"]), cpu_ids=[0, 1, 2, 3])

        def get(request, context):
            for p in self.pods["pods"]:
                if p["name"] == request.pod_name and p["namespace"] == request.pod_namespace:
                    return pr.GetPodResourcesResponse(pod_resources=pod(p))
            context.abort(grpc.StatusCode.NOT_FOUND, "pod %s/%s not found" % (request.pod_namespace, request.pod_name))

        def h(fn, req):
            return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString,
                                                       response_serializer=lambda m: m.SerializeToString())
        self.podres_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.podres_server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": h(list_, pr.ListPodResourcesRequest),
            "GetAllocatableResources": h(allocatable, pr.AllocatableResourcesRequest),
            "Get": h(get, pr.GetPodResourcesRequest),
        }),))
        self.podres_server.add_insecure_port("unix:" + self.podres_socket)
        self.podres_server.start()


# ---- the scenario ------------------------------------------------------------------------------

def health_of(msg):
    return {d.ID: d.health for d in msg.devices}


def numa_of(msg):
    return {d.ID: [n.ID for n in d.topology.nodes] for d in msg.devices}


def rewrite_nvml(path, gpu, xid=None, recovery=None):
    """The fake NVML re-reads its file when it changes: a new Xid, a new recovery action."""
    with open(path) as f:
        config = json.load(f)
    g = config["gpus"][gpu]
    if xid is not None:
        g.setdefault("xids", []).append(xid)
    if recovery is not None:
        g["recovery_action"] = recovery
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(config, f)
    os.rename(tmp, path)


def scenario_registration(k, resources):
    seen = k.wait_registered(resources)
    check("every resource registered", set(seen) == set(resources),
          "registered %s, expected %s" % (sorted(seen), sorted(resources)))
    for name, r in seen.items():
        check(name + " registered with its options",
              r.options.get_preferred_allocation_available and not r.options.pre_start_required,
              str(r.options))
        ep = k.endpoints.get(name)
        check(name + " GetDevicePluginOptions", ep is not None and ep.options.get_preferred_allocation_available,
              str(ep and ep.options))


def scenario_lists(k, gpus, extras):
    ep = k.endpoints["nvidia.com/gpu"]
    msg = ep.wait_list(lambda m: len(m.devices) == 8)
    check("ListAndWatch lists the 8 GPUs", msg is not None, "no list of 8 devices")
    if msg:
        numa = numa_of(msg)
        want = {g: [0] if i < 4 else [1] for i, g in enumerate(gpus)}
        check("every GPU with its NUMA node", numa == want, "got %s" % numa)
        check("every GPU Healthy", set(health_of(msg).values()) == {"Healthy"}, str(health_of(msg)))
    for name, count in extras.items():
        msg = k.endpoints[name].wait_list(lambda m: len(m.devices) == count)
        check("ListAndWatch lists %s" % name, msg is not None and all(d.topology.nodes for d in msg.devices),
              "no list of %d devices with NUMA nodes" % count)


def scenario_health(k, gpus, nvml):
    ep = k.endpoints["nvidia.com/gpu"]
    rewrite_nvml(nvml, 2, xid=79, recovery=1)
    msg = ep.wait_list(lambda m: health_of(m).get(gpus[2]) == "Unhealthy")
    check("an Xid 79 streams the GPU Unhealthy", msg is not None, "no list with %s Unhealthy" % gpus[2])
    if msg:
        others = {g: h for g, h in health_of(msg).items() if g != gpus[2]}
        check("only that GPU is Unhealthy", set(others.values()) == {"Healthy"}, str(others))
    # an application's Xid (13) changes nothing
    rewrite_nvml(nvml, 3, xid=13)
    time.sleep(1.0)
    check("an application Xid leaves the GPU Healthy",
          health_of(ep.latest).get(gpus[3]) == "Healthy" if ep.latest else False, str(ep.latest and health_of(ep.latest)))
    rewrite_nvml(nvml, 2, recovery=0)
    msg = ep.wait_list(lambda m: health_of(m).get(gpus[2]) == "Healthy")
    check("the GPU streams Healthy again once the driver reports no recovery pending", msg is not None,
          "still %s" % (ep.latest and health_of(ep.latest).get(gpus[2])))
    check("one ListAndWatch stream stays open across the health changes",
          ep.thread.is_alive() and ep.received >= 3, "stream open %s, %d list(s) on it" % (ep.thread.is_alive(), ep.received))


def prefer(ep, dp, available, must, size):
    req = dp.PreferredAllocationRequest(container_requests=[dp.ContainerPreferredAllocationRequest(
        available_deviceIDs=available, must_include_deviceIDs=must, allocation_size=size)])
    resp = ep.unary("GetPreferredAllocation", req, dp.PreferredAllocationResponse)
    return list(resp.container_responses[0].deviceIDs)


def scenario_prefer(k, dp, gpus):
    ep = k.endpoints["nvidia.com/gpu"]
    a, b = set(gpus[:4]), set(gpus[4:])
    got = set(prefer(ep, dp, gpus, [], 4))
    check("4 GPUs of 8: one whole NVLink island", got in (a, b), "got %s" % sorted(got))
    got = set(prefer(ep, dp, gpus, [gpus[5]], 4))
    check("4 GPUs with GPU 5 a must: GPU 5's island", got == b, "got %s" % sorted(got))
    got = prefer(ep, dp, gpus, [gpus[0]], 2)
    check("2 GPUs with GPU 0 a must: GPU 0 and one of its island", len(got) == 2 and gpus[0] in got and set(got) <= a,
          "got %s" % got)
    # island A half taken: the 2 asked come from what is left of it, island B stays whole
    got = set(prefer(ep, dp, gpus[2:], [], 2))
    check("2 GPUs with GPUs 0-1 held: the rest of their island", got == {gpus[2], gpus[3]}, "got %s" % sorted(got))


def scenario_allocate(k, dp, gpus):
    ep = k.endpoints["nvidia.com/gpu"]
    ids = gpus[4:]
    resp = ep.unary("Allocate", dp.AllocateRequest(container_requests=[dp.ContainerAllocateRequest(devices_ids=ids)]),
                    dp.AllocateResponse)
    c = resp.container_responses[0]
    envs = dict(c.envs)
    check("Allocate: NVIDIA_VISIBLE_DEVICES names exactly the chosen GPUs",
          envs.get("NVIDIA_VISIBLE_DEVICES") == ",".join(ids), str(envs))
    check("Allocate: CUDA_VISIBLE_DEVICES too", envs.get("CUDA_VISIBLE_DEVICES") == ",".join(ids), str(envs))
    check("Allocate: XPOOL_VISIBLE_DEVICES too", envs.get("XPOOL_VISIBLE_DEVICES") == ",".join(ids), str(envs))
    nodes = sorted(d.host_path for d in c.devices)
    want = sorted(["/dev/nvidia4", "/dev/nvidia5", "/dev/nvidia6", "/dev/nvidia7", "/dev/nvidiactl",
                   "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"])
    check("Allocate: the chosen GPUs' device nodes and no other", nodes == want, "got %s" % nodes)
    check("Allocate: device nodes rw at the same path",
          all(d.container_path == d.host_path and d.permissions == "rw" for d in c.devices), str(c.devices))
    cdi = sorted(d.name for d in c.cdi_devices)
    check("Allocate: CDI names of exactly the chosen GPUs", cdi == sorted("xpool.io/gpu=" + i for i in ids), "got %s" % cdi)
    asc = k.endpoints["huawei.com/Ascend910"]
    resp = asc.unary("Allocate", dp.AllocateRequest(container_requests=[dp.ContainerAllocateRequest(devices_ids=["ascend-1"])]),
                     dp.AllocateResponse)
    c = resp.container_responses[0]
    envs = dict(c.envs)
    check("Allocate Ascend: ASCEND_VISIBLE_DEVICES is its index", envs.get("ASCEND_VISIBLE_DEVICES") == "1", str(envs))
    check("Allocate Ascend: the configured mount",
          [(m.host_path, m.container_path, m.read_only) for m in c.mounts] == [("/usr/local/Ascend/driver", "/usr/local/Ascend/driver", True)],
          str(c.mounts))
    check("Allocate Ascend: CDI name", [d.name for d in c.cdi_devices] == ["xpool.io/npu=ascend-1"], str(c.cdi_devices))
    return resp_key(ep, dp, ids)


def resp_key(ep, dp, ids):
    resp = ep.unary("Allocate", dp.AllocateRequest(container_requests=[dp.ContainerAllocateRequest(devices_ids=ids)]),
                    dp.AllocateResponse)
    return resp.SerializeToString(deterministic=True)


def expect_error(name, fn, code, text):
    try:
        fn()
    except grpc.RpcError as e:
        check(name, e.code() == code and text in (e.details() or ""), "%s: %s" % (e.code(), e.details()))
        return
    check(name, False, "no error")


def scenario_bad_input(k, dp, gpus):
    ep = k.endpoints["nvidia.com/gpu"]
    expect_error("garbage protobuf on Allocate: INVALID_ARGUMENT saying so",
                 lambda: ep.raw("Allocate", b"\xff\xff\xff\xff\x0f garbage"),
                 grpc.StatusCode.INVALID_ARGUMENT, "not a protobuf v1beta1.AllocateRequest")
    expect_error("garbage protobuf on GetPreferredAllocation",
                 lambda: ep.raw("GetPreferredAllocation", b"\x0a\x05\x0a"),
                 grpc.StatusCode.INVALID_ARGUMENT, "not a protobuf")
    expect_error("Allocate of a device the node lacks",
                 lambda: ep.unary("Allocate", dp.AllocateRequest(container_requests=[dp.ContainerAllocateRequest(devices_ids=["GPU-nope"])]), dp.AllocateResponse),
                 grpc.StatusCode.INVALID_ARGUMENT, "GPU-nope is no nvidia.com/gpu device")
    expect_error("an unknown method: UNIMPLEMENTED",
                 lambda: ep.channel.unary_unary("/v1beta1.DevicePlugin/Nope")(b"", timeout=5),
                 grpc.StatusCode.UNIMPLEMENTED, "no such method")
    expect_error("a preferred allocation larger than what is available",
                 lambda: prefer(ep, dp, gpus[:2], [], 3), grpc.StatusCode.INVALID_ARGUMENT, "allocation_size 3")
    # below gRPC: bytes that are no HTTP/2, a preface then a broken frame, a request cut off
    for junk in (b"GET / HTTP/1.1\r\n\r\n" + b"\xff" * 4096,
                 b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x04\x09\x00\x00\x00\x00\x01junk",
                 b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x40"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            raw.settimeout(5)
            raw.connect(ep.socket)
            raw.sendall(junk)
            try:
                raw.recv(4096)
            except OSError:
                pass
    opts = ep.unary("GetDevicePluginOptions", dp.Empty(), dp.DevicePluginOptions)
    check("the plugin keeps serving after bad input", opts.get_preferred_allocation_available, str(opts))
    check("the ListAndWatch stream outlives the bad input", ep.thread.is_alive(), "the stream ended")


def scenario_restart(k, dp, resources, gpus, before):
    k.restart()
    seen = k.wait_registered(resources)
    check("after a kubelet restart every plugin registers again", set(seen) == set(resources),
          "registered %s, expected %s" % (sorted(seen), sorted(resources)))
    ep = k.endpoints.get("nvidia.com/gpu")
    msg = ep and ep.wait_list(lambda m: len(m.devices) == 8)
    check("after the restart the 8 GPUs are listed, all Healthy",
          msg is not None and set(health_of(msg).values()) == {"Healthy"}, str(msg and health_of(msg)))
    if ep:
        check("after the restart Allocate answers as before", resp_key(ep, dp, gpus[4:]) == before, "a different answer")


def scenario_podres(tool, socket):
    out = subprocess.run([tool, "podres", socket, "default/train"], capture_output=True, text=True, timeout=30)
    check("the pod-resources client reads List, GetAllocatableResources and Get", out.returncode == 0, out.stderr)
    if out.returncode != 0:
        return
    data = json.loads(out.stdout)
    pods = data["pods"]
    check("pod-resources: the pod and its GPUs with their NUMA node",
          pods and pods[0]["name"] == "train" and pods[0]["containers"][0]["devices"][0]["numa"] == [1]
          and len(pods[0]["containers"][0]["devices"][0]["ids"]) == 4, json.dumps(pods))
    check("pod-resources: allocatable lists the 8 GPUs",
          sum(len(d["ids"]) for d in data["allocatable"] if d["resource"] == "nvidia.com/gpu") == 8, json.dumps(data["allocatable"]))
    check("pod-resources: Get finds the pod", data.get("get", {}).get("name") == "train", json.dumps(data.get("get")))
    check("pod-resources: the holder of a device", data.get("owner") == "train", str(data.get("owner")))
    out = subprocess.run([tool, "podres", socket, "default/missing"], capture_output=True, text=True, timeout=30)
    check("pod-resources: Get of a missing pod fails clearly", out.returncode != 0 and "NOT_FOUND" in out.stderr, out.stderr)


class PodsFile:
    """The pods and allocatable devices of a JSON file, read again at every call (a test edits it)."""

    def __init__(self, path):
        self.path = path

    def __getitem__(self, key):
        with open(self.path) as f:
            return json.load(f)[key]


def serve_podres(pr, socket_path, pods_path, ready):
    """Only the pod-resources API, from pods_path, until SIGTERM (23-extender's inventory)."""
    k = Kubelet(None, pr, None, socket_path, PodsFile(pods_path))
    k.podres_start()
    open(ready, "w").close()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait(600)  # bounded: a test that forgets us does not leave us forever
    k.podres_server.stop(0).wait(5)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--dir", help="the device plugin directory")
    ap.add_argument("--podres-socket", required=True)
    ap.add_argument("--podres-only", metavar="PODS.json",
                    help="serve only the pod-resources API, with the pods of this file")
    ap.add_argument("--nvml-config")
    ap.add_argument("--tool")
    ap.add_argument("--ready", required=True, help="a file to create once kubelet.sock serves")
    ap.add_argument("--go", help="a file to wait for (the plugin was started)")
    args = ap.parse_args()

    dp, pr = load_messages(args.proto_dir)
    if args.podres_only:
        return serve_podres(pr, args.podres_socket, args.podres_only, args.ready)
    with open(args.nvml_config) as f:
        gpus = [g["uuid"] for g in json.load(f)["gpus"]]
    pods = {
        "pods": [{"name": "train", "namespace": "default", "containers": [
            {"name": "main", "devices": [{"resource": "nvidia.com/gpu", "ids": gpus[4:], "numa": [1]}], "cpus": [2, 3]}]}],
        "allocatable": [{"resource": "nvidia.com/gpu", "ids": gpus, "numa": [0]}],
    }
    k = Kubelet(dp, pr, args.dir, args.podres_socket, pods)
    k.start()
    k.podres_start()
    open(args.ready, "w").close()
    deadline = time.monotonic() + WAIT
    while not os.path.exists(args.go) and time.monotonic() < deadline:
        time.sleep(0.05)

    resources = ["nvidia.com/gpu", "huawei.com/Ascend910", "amd.com/gpu", "xilinx.com/fpga"]
    scenario_registration(k, resources)
    if set(k.endpoints) == set(resources):
        scenario_lists(k, gpus, {"huawei.com/Ascend910": 2, "amd.com/gpu": 1, "xilinx.com/fpga": 1})
        scenario_health(k, gpus, args.nvml_config)
        scenario_prefer(k, dp, gpus)
        before = scenario_allocate(k, dp, gpus)
        scenario_bad_input(k, dp, gpus)
        scenario_restart(k, dp, resources, gpus, before)
    scenario_podres(args.tool, args.podres_socket)
    k.stop()
    k.podres_server.stop(0).wait(5)
    print("%d failure(s)" % failures, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
