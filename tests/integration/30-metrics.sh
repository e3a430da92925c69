#!/usr/bin/env bash
# Monitoring end to end (docs/monitoring.md): a real Prometheus (Debian's) scrapes two agents and
# the server on loopback. n1 has simulated GPUs and an NPU with scripted figures, n2 the fake
# NVML's two GPUs. PromQL then finds DCGM's series with the pod labels of the allocated GPU and
# the scripted values, Grafana dashboard 12239's panels return data, the xpool_device_*
# series cover every device, and the server's series count pods, requests and scheduling.
# promtool checks both expositions; kubectl top nodes|pods print their columns. Then the fake
# NVML hangs (every call sleeps 20 s): scrapes of n2 still answer at once, the sample's age
# grows, and a pod still starts on n2. Prometheus finds the agents through the server's HTTP
# service discovery (deploy/monitoring/prometheus-http-sd.yml). A pod's own GPU utilisation comes
# from the fake NVML's per-process figures matched to its cgroup's pids. A GPU that turns
# unhealthy (Xid 79) fails the Job pod on it with DeviceUnhealthy, the Job's podFailurePolicy
# ignores that failure, and the node stops offering the GPU. n2's /metrics wants a token the
# server accepts for nodes/metrics (Prometheus sends the reader token the shipped configuration
# names): no token or a wrong one is refused with 401, a role-less ServiceAccount's with 403; n1 serves it
# to anyone (--metrics-anonymous).
source "$(dirname "$0")/lib.sh"
data=$tmp/server
server_pid= a1_pid= a2_pid= prom_pid=
export KUBECONFIG=$data/admin.kubeconfig

prometheus=$(command -v prometheus || true)
promtool=$(command -v promtool || true)
if [[ -z "$prometheus" || -z "$promtool" ]]; then
  echo "SKIP: Debian's prometheus package is not installed (scripts/install-deps installs it)"
  exit 77
fi

cleanup() {
  rm -f "$tmp/hang"
  for pid in $prom_pid $a1_pid $a2_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $prom_pid $a1_pid $a2_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
"$xpool" token create --reader --subject prometheus --data-dir "$data" >"$tmp/prom.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --metrics-resolution 1s >"$tmp/server.log" 2>&1 &
server_pid=$!
url=
for _ in $(seq 600); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }

"$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
  --node-name n1 --data-dir "$tmp/a1" --node-description "$src/tests/data/nodes/monitoring.yaml" \
  --listen 127.0.0.1:0 --pod-network host --default-runtime process --metrics-interval 500ms \
  --metrics-anonymous >"$tmp/a1.log" 2>&1 &
a1_pid=$!
# n2's fake NVML: the shipped figures, with a process on each GPU whose pid is the one the test
# writes to $tmp/infer.pid (the pod's), and live Xid injection through this copy
/usr/bin/python3 - "$src/tests/data/nvml/monitoring.json" "$tmp/nvml.json" "@$tmp/infer.pid" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
for gpu in config["gpus"]:
    gpu["processes"] = [{"pid": sys.argv[3], "used_memory": 4294967296}]
    gpu["process_utilization"] = [{"pid": sys.argv[3], "sm": 37, "mem": 12}]
json.dump(config, open(sys.argv[2], "w"))
PY
check "an empty vendor library path" 2 "$xpool" agent --server "$url" --dcmi-library ""
expect_exact "an empty vendor library path: the message" "$tmp/err" "xpool agent: --dcmi-library: an empty path"
# the vendor libraries by flag (the NVML figures below need it); the CNDev and DCMI ones missing
# cost nothing where no MLU or NPU is (the warning for them is test_expo's vendor_library_missing)
FAKE_NVML_CONFIG=$tmp/nvml.json FAKE_NVML_SLEEP_FILE=$tmp/hang \
  "$xpool" agent --server "$url" --token-file "$tmp/n2.token" --ca-file "$data/pki/ca.crt" \
  --node-name n2 --data-dir "$tmp/a2" --listen 127.0.0.1:0 --pod-network host --default-runtime process \
  --nvml-library "$XPOOL_FAKE_NVML" --cndev-library "$tmp/none/libcndev.so" --dcmi-library "$tmp/none/libdcmi.so" \
  --metrics-interval 500ms --heartbeat 1s >"$tmp/a2.log" 2>&1 &
a2_pid=$!
port_of() { kubectl get node "$1" -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null; }
poll "n1 registered" 60 yes bash -c "[[ -n \$(kubectl get node n1 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null) ]] && echo yes"
poll "n2 registered" 60 yes bash -c "[[ -n \$(kubectl get node n2 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null) ]] && echo yes"
p1=$(port_of n1) p2=$(port_of n2)

# ---- a pod on one simulated GPU of n1 ------------------------------------------------------------
check "label n1" 0 kubectl label node n1 monitoring=sim
check "label n2" 0 kubectl label node n2 monitoring=nvml
cat >"$tmp/train.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  nodeSelector: {monitoring: sim}
  containers:
  - name: trainer
    image: busybox
    command: [sh, -c, "sleep 600"]
    resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 100m, memory: 64Mi}}
YAML
check "create the GPU pod" 0 kubectl apply -f "$tmp/train.yaml"
sed -e 's/name: train/name: infer/; s/monitoring: sim/monitoring: nvml/' "$tmp/train.yaml" >"$tmp/infer.yaml"
check "create a GPU pod on n2" 0 kubectl apply -f "$tmp/infer.yaml"
sed -e 's/name: train/name: too-big/; s/nvidia.com\/gpu: 1/nvidia.com\/gpu: 99/' "$tmp/train.yaml" >"$tmp/big.yaml"
check "create a pod that cannot be placed" 0 kubectl apply -f "$tmp/big.yaml"
poll "the GPU pod runs" 60 Running kubectl get pod train -o jsonpath='{.status.phase}'
poll "the GPU pod on n2 runs" 60 Running kubectl get pod infer -o jsonpath='{.status.phase}'
infer_uid=$(kubectl get pod infer -o jsonpath='{.metadata.uid}')
# the sed made the container inferer; find fails when other tests' cgroups vanish under it
infer_procs=$(find /sys/fs/cgroup -path "*/xpool/agent-*/$infer_uid/inferer/cgroup.procs" 2>/dev/null | head -1 || true)
head -1 "${infer_procs:-/dev/null}" >"$tmp/infer.pid"
check "the n2 pod's processes are in its cgroup" 0 grep -q '^[0-9]' "$tmp/infer.pid"
gpu=$(kubectl get pod train -o jsonpath='{.metadata.annotations.xpool\.io/placement}' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')

# ---- who may scrape an agent ----------------------------------------------------------------------
reader=(-H "Authorization: Bearer $(cat "$tmp/prom.token")")
code_of() { curl -s --cacert "$data/pki/kubelet-ca.crt" -o "$tmp/answer" -w '%{http_code}' "$@"; }
check "n2: an anonymous scrape is refused" 0 test "$(code_of "https://127.0.0.1:$p2/metrics")" = 401
expect_in "n2: it says a token is needed" "$tmp/answer" "Unauthorized: a bearer token is needed"
check "n2: a token the server does not know is refused" 0 \
  test "$(code_of -H 'Authorization: Bearer xpr_000000000000.not-a-secret' "https://127.0.0.1:$p2/metrics")" = 401
expect_in "n2: it says the server does not accept it" "$tmp/answer" "the xpool server does not accept the token"
check "n2: a wrong token once more (the refusal remembered)" 0 \
  test "$(code_of -H 'Authorization: Bearer xpr_000000000000.not-a-secret' "https://127.0.0.1:$p2/metrics")" = 401
poll "the default ServiceAccount" 60 default kubectl get serviceaccount default -o jsonpath='{.metadata.name}'
check "a token of a ServiceAccount without a role" 0 kubectl create token default
cp "$tmp/out" "$tmp/sa.token"
check "n2: a token without the right to get nodes/metrics may not read it" 0 \
  test "$(code_of -H "Authorization: Bearer $(cat "$tmp/sa.token")" "https://127.0.0.1:$p2/metrics")" = 403
expect_in "n2: the refusal names the node" "$tmp/answer" "Forbidden: the token may not get nodes/metrics of node n2"
check "n2: the reader token may" 0 test "$(code_of "${reader[@]}" "https://127.0.0.1:$p2/metrics")" = 200
check "n2: the admin token may" 0 test "$(code_of -H "Authorization: Bearer $(sed -n 's/^ *token: *//p' "$KUBECONFIG")" "https://127.0.0.1:$p2/metrics")" = 200
check "n1 (--metrics-anonymous): an anonymous scrape is served" 0 test "$(code_of "https://127.0.0.1:$p1/metrics")" = 200

# ---- the expositions pass promtool and our own checker's rules -----------------------------------
curl -s --cacert "$data/pki/kubelet-ca.crt" "https://127.0.0.1:$p1/metrics" >"$tmp/n1.prom"
curl -s --cacert "$data/pki/kubelet-ca.crt" "${reader[@]}" "https://127.0.0.1:$p2/metrics" >"$tmp/n2.prom"
curl -s --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $(cat "$tmp/prom.token")" "$url/metrics" >"$tmp/server.prom"
# promtool's exit 3 is its lint: DCGM's names (camelCase labels, counters without _total) and
# mlu-exporter's mlu_memory_total (a gauge) are what dashboards expect, so only complaints about
# other series count
promcheck() {
  local rc=0
  "$promtool" check metrics <"$1" >"$tmp/promtool.out" 2>&1 || rc=$?
  [[ $rc -eq 0 || ($rc -eq 3 && -z $(grep -v -e '^DCGM_FI_' -e '^mlu_memory_total ' "$tmp/promtool.out")) ]] || { cat "$tmp/promtool.out"; return 1; }
}
for f in n1 n2 server; do
  check "promtool check metrics ($f)" 0 promcheck "$tmp/$f.prom"
done
for f in "$src"/tests/data/expected/metrics-*.prom; do # the unit tests' golden expositions
  check "promtool check metrics ($(basename "$f"))" 0 promcheck "$f"
done
check "OpenMetrics when asked" 0 curl -sf --cacert "$data/pki/kubelet-ca.crt" -H 'Accept: application/openmetrics-text; version=1.0.0' "https://127.0.0.1:$p1/metrics" -o "$tmp/n1.om"
expect_in "OpenMetrics ends with # EOF" "$tmp/n1.om" "# EOF"
check "the server's /metrics needs a token" 0 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert '$data/pki/ca.crt' '$url/metrics') == 401 ]]"
check "the agent's resource metrics need the server's signature" 0 bash -c "[[ \$(curl -s --cacert '$data/pki/kubelet-ca.crt' -o /dev/null -w '%{http_code}' https://127.0.0.1:$p1/metrics/resource) == 401 ]]"
check "a reader's token is not the server's signature" 0 test "$(code_of "${reader[@]}" "https://127.0.0.1:$p2/metrics/resource")" = 401

# ---- Prometheus finds the agents through the server and scrapes them and the server ---------------
check "HTTP service discovery lists both agents" 0 curl -sf --cacert "$data/pki/ca.crt" \
  -H "Authorization: Bearer $(cat "$tmp/prom.token")" "$url/apis/metrics.xpool.io/v1alpha1/http_sd" -o "$tmp/sd.json"
check "each with its address, node name and labels" 0 /usr/bin/python3 -c 'import json,sys
groups = {g["labels"]["__meta_xpool_node_name"]: g for g in json.load(open(sys.argv[1]))}
assert groups["n1"]["targets"] == ["127.0.0.1:" + sys.argv[2]], groups
assert groups["n2"]["targets"] == ["127.0.0.1:" + sys.argv[3]], groups
assert groups["n2"]["labels"]["__meta_xpool_node_label_monitoring"] == "nvml", groups
assert groups["n1"]["labels"]["node"] == "n1" and groups["n1"]["labels"]["__meta_xpool_node_ready"] == "true"' "$tmp/sd.json" "$p1" "$p2"
# the shipped configurations, pointed at this pool: static targets, discovery through the
# server (the one the test runs), and Kubernetes discovery. Debian's promtool has no Kubernetes
# discovery: that file's kubernetes_sd_configs is swapped for a file of the targets the node role
# would find (each Node's InternalIP and agent port, its __meta_kubernetes_node_* labels), so
# promtool checks the rest as shipped and runs its relabelling.
pport=$(free_port)
rewrite() {
  sed -e "s|/etc/prometheus/xpool.token|$tmp/prom.token|; s|/etc/prometheus/xpool-ca.crt|$data/pki/ca.crt|" \
    -e "s|/etc/prometheus/xpool-kubelet-ca.crt|$data/pki/kubelet-ca.crt|" \
    -e "s|xpool.example:6443|${url#https://}|; s|'gpu-01.example:10250', 'gpu-02.example:10250'|'127.0.0.1:$p1', '127.0.0.1:$p2'|" \
    -e "s|interval: 15s|interval: 1s|; s|refresh_interval: 30s|refresh_interval: 1s|" "$1"
}
rewrite "$src/deploy/monitoring/prometheus.yml" >"$tmp/prometheus-static.yml"
check "promtool check config (static)" 0 "$promtool" check config "$tmp/prometheus-static.yml"
rewrite "$src/deploy/monitoring/prometheus-http-sd.yml" >"$tmp/prometheus.yml"
check "promtool check config (HTTP SD)" 0 "$promtool" check config "$tmp/prometheus.yml"
cat >"$tmp/k8s-nodes.json" <<JSON
[{"targets": ["127.0.0.1:$p1"], "labels": {"__meta_kubernetes_node_name": "n1",
  "__meta_kubernetes_node_address_InternalIP": "127.0.0.1", "__meta_kubernetes_node_label_monitoring": "sim"}}]
JSON
rewrite "$src/deploy/monitoring/prometheus-kubernetes-sd.yml" >"$tmp/prometheus-k8s-as-shipped.yml"
check "the Kubernetes SD configuration has the server and agents jobs, one Kubernetes discovery" 0 \
  /usr/bin/python3 -c 'import sys, yaml
config = yaml.safe_load(open(sys.argv[1]))
jobs = [j["job_name"] for j in config["scrape_configs"]]
assert jobs == ["xpool-server", "xpool-agents-sd"], jobs
agents = config["scrape_configs"][1]
[sd] = agents.pop("kubernetes_sd_configs")
assert sd["role"] == "node" and sd["api_server"].startswith("https://"), sd
agents["file_sd_configs"] = [{"files": [sys.argv[3]]}]
yaml.safe_dump(config, open(sys.argv[2], "w"))' "$tmp/prometheus-k8s-as-shipped.yml" "$tmp/prometheus-k8s.yml" "$tmp/k8s-nodes.json"
check "promtool check config (Kubernetes SD, its discovery swapped)" 0 "$promtool" check config "$tmp/prometheus-k8s.yml"
check "promtool runs the Kubernetes SD job's relabelling" 0 bash -c "'$promtool' check service-discovery '$tmp/prometheus-k8s.yml' xpool-agents-sd >'$tmp/k8s-targets.json' 2>/dev/null"
# the dashboards group and filter by node (xpool_device_*, the pool dashboard) and match the
# agents' job; the relabelled target must carry the Node's name as node, its agent as instance
check "the Kubernetes SD target is labelled as the dashboards expect" 0 /usr/bin/python3 -c 'import json, sys
[target] = json.load(open(sys.argv[1]))
labels = target["labels"]
assert labels["node"] == "n1", labels
assert labels["instance"] == "127.0.0.1:" + sys.argv[2], labels
assert labels["job"] == "xpool-agents-sd" and labels["__metrics_path__"] == "/metrics", labels
assert not [k for k in labels if k.startswith("__meta_")], labels' "$tmp/k8s-targets.json" "$p1"
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom" \
  --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
query() { # PromQL -> "value" of a one-series answer, or the series count with n:
  curl -s --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(len(r) if len(sys.argv)>1 else (r[0]["value"][1] if len(r)==1 else "%d series" % len(r)))' ${2:+n}
}
poll "Prometheus scrapes all three targets" 60 3 query 'sum(up)'
[[ $(query 'sum(up)') == 3 ]] || tail -20 "$tmp/prometheus.log"
poll "DCGM util of the pod's GPU, with its pod labels" 60 42 query "DCGM_FI_DEV_GPU_UTIL{pod=\"train\",namespace=\"default\",container=\"trainer\",UUID=\"$gpu\",Hostname!=\"\"}"
[[ "$gpu" == gpu-0 ]] || echo "note: the pod got $gpu"
at_least() { # name, minimum, PromQL, [n]: the value (or with n the series count) is at least
  # minimum, once Prometheus has the scrapes it needs (a series of a later sample, a rate() of
  # two scrapes): a look right after the first scrapes saw some not yet (60 s at most)
  local got deadline=$((SECONDS + 60))
  until got=$(query "$3" ${4:-}); awk -v g="$got" -v m="$2" 'BEGIN { exit !(g + 0 >= m + 0 && g ~ /^[0-9.e+-]+$/) }'; do
    [[ $SECONDS -lt $deadline ]] || { echo "FAIL $1: '$got', expected at least $2"; failures=$((failures + 1)); return 0; }
    sleep 0.5
  done
}
# Grafana dashboard 12239 (NVIDIA's, as dcgm-exporter ships it): its variables as Grafana fills
# them, $Hostname from label_values(DCGM_FI_DEV_FB_FREE, Hostname) and $gpu from
# label_values(DCGM_FI_DEV_FB_FREE{Hostname=~"$Hostname"}, gpu), "All" being the values joined as
# a regex: a GPU without FB_FREE would vanish from every panel. Then each panel's query
label_values() { # label, series selector: Grafana's "All" of the values, as (a|b)
  curl -s --get "http://127.0.0.1:$pport/api/v1/label/$1/values" --data-urlencode "match[]=$2" |
    /usr/bin/python3 -c 'import json,sys; v=json.load(sys.stdin)["data"]; print("(" + "|".join(v) + ")" if v else "")'
}
poll "12239: \$Hostname lists both nodes" 60 "(n1|n2)" label_values Hostname DCGM_FI_DEV_FB_FREE
hostnames=$(label_values Hostname DCGM_FI_DEV_FB_FREE)
poll "12239: \$gpu lists the GPU indexes" 60 "(0|1)" label_values gpu "DCGM_FI_DEV_FB_FREE{Hostname=~\"$hostnames\"}"
gpus=$(label_values gpu "DCGM_FI_DEV_FB_FREE{Hostname=~\"$hostnames\"}")
sel="Hostname=~\"$hostnames\", gpu=~\"$gpus\""
at_least "12239: GPU Temperature" 4 "max(DCGM_FI_DEV_GPU_TEMP{$sel}) by (Hostname, gpu, uuid)" n
at_least "12239: GPU Avg. Temp" 30 "avg(DCGM_FI_DEV_GPU_TEMP{$sel})"
at_least "12239: GPU Power Usage" 4 "max(DCGM_FI_DEV_POWER_USAGE{$sel}) by (Hostname, gpu, uuid)" n
at_least "12239: GPU Power Total" 70 "sum(max(DCGM_FI_DEV_POWER_USAGE{$sel}) by (gpu))"
at_least "12239: GPU SM Clocks" 4 "max(DCGM_FI_DEV_SM_CLOCK{$sel} * 1000000) by (Hostname, UUID, gpu)" n
# GPM's figures: n2's first GPU has them (the fake NVML's Hopper with GPM), n1's gpu-0 from its
# script; the GPUs without either have none
at_least "12239: GPU Utilization (engine activity)" 2 "max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{$sel}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)" n
at_least "12239: Tensor Core Utilization" 2 "max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{$sel}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)" n
poll "engine activity of n2's GPM GPU" 60 0.81 query "max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=\"n2\"})"
poll "tensor activity of n2's GPM GPU" 60 0.63 query "max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname=\"n2\"})"
poll "tensor activity of n1's scripted GPU" 60 0.25 query "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname=\"n1\"}"
at_least "12239: GPU Framebuffer Mem Used" 3 "max(DCGM_FI_DEV_FB_USED{$sel}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)" n
# its earlier revisions' utilisation panel
at_least "12239: GPU utilization (DCGM_FI_DEV_GPU_UTIL)" 4 "max(DCGM_FI_DEV_GPU_UTIL{$sel}) by (Hostname, gpu)" n
# its first revision's panels, by the target's instance ($instance and $gpu set to all): both
# GPUs of n2 (the fake NVML) and at least n1's gpu-0, whose script has every figure (gpu-1's
# leaves memory and copy utilisation out, so they are not reported)
for series in GPU_TEMP POWER_USAGE SM_CLOCK MEM_CLOCK GPU_UTIL MEM_COPY_UTIL FB_USED FB_FREE; do
  at_least "12239 (instance): DCGM_FI_DEV_$series per GPU" 3 "max(DCGM_FI_DEV_$series{instance=~\".*\", gpu=~\".*\"}) by (instance, gpu)" n
done
at_least "12239 (instance): power by instance" 2 'sum(DCGM_FI_DEV_POWER_USAGE{instance=~".*", gpu=~".*"}) by (instance)' n
at_least "12239 (instance): average memory copy utilisation" 1 'avg(DCGM_FI_DEV_MEM_COPY_UTIL{instance=~".*", gpu=~".*"})'
poll "NVML figures of n2's first GPU" 60 87 query 'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20"}'
poll "NVML's PCIe replays" 60 3 query 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{UUID="GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20"}'
poll "FB used in MiB" 60 8192 query 'DCGM_FI_DEV_FB_USED{UUID="GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20"}'
poll "xpool_device_* for every device" 60 5 query 'count(xpool_device_info)'
poll "the n2 pod's own GPU utilisation (its process's)" 60 37 query 'xpool_pod_device_utilization_percent{pod="infer",namespace="default",container="inferer"}'
poll "the n2 pod's own GPU memory" 60 4294967296 query 'xpool_pod_device_memory_used_bytes{pod="infer"}'
poll "the simulated GPU pod's utilisation: its device's" 60 42 query 'xpool_pod_device_utilization_percent{pod="train"}'
poll "GPM: SM active on the first GPU" 60 0.72 query 'max(DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20"})'
poll "volatile double-bit ECC errors" 60 1 query 'max(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{UUID="GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e20"})'
check "no profiling series for the GPU without GPM" 0 test "$(query 'DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e21"}')" = "0 series"
poll "the pod's allocation" 60 1000 query 'xpool_device_allocated_milli{pod="train"}'
poll "the scripted NPU is healthy" 60 1 query 'xpool_device_healthy{kind="npu"}'
poll "server: the running pods" 60 2 query 'xpool_pods{phase="Running"}'
poll "server: the pod that waits, by its reason" 60 1 query 'xpool_pending_pods{reason="Unschedulable"}'
poll "server: two GPUs of four requested" 60 0.5 query 'xpool_resource_allocation_ratio{resource="nvidia.com/gpu",kind="gpu"}'
at_least "server: API requests counted" 1 'apiserver_request_total{verb="POST",resource="pods",code="201"}'
at_least "server: a scheduling attempt" 1 'scheduler_schedule_attempts_total{result="scheduled"}'
at_least "server: process metrics" 1000000 'process_resident_memory_bytes{job="xpool-server"}'
at_least "server: store commits" 1 'xpool_store_commit_duration_seconds_count'
# every query of the shipped Grafana dashboard returns data
/usr/bin/python3 -c 'import json,sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]: print(t["expr"])' "$src/deploy/monitoring/grafana-dashboard.json" >"$tmp/dashboard.queries"
# rate() over [5m] wants two scrapes of each counter: at_least waits for them
while IFS= read -r q; do
  at_least "dashboard query: $q" 1 "$q" n
done <"$tmp/dashboard.queries"

# ---- kubectl top -----------------------------------------------------------------------------------
poll "kubectl top nodes lists both" 60 2 bash -c "kubectl top nodes --no-headers 2>/dev/null | wc -l"
check "kubectl top nodes" 0 kubectl top nodes
expect_in "top nodes columns" "$tmp/out" "CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)"
poll "kubectl top pods" 60 0 bash -c "kubectl top pods >/dev/null 2>&1; echo \$?"
check "kubectl top pods" 0 kubectl top pods
expect_in "top pods columns" "$tmp/out" "CPU(cores)   MEMORY(bytes)"
expect_in "top pods lists the pod" "$tmp/out" "train"
check "xpool top" 0 "$xpool" top -A
expect_in "xpool top: node columns" "$tmp/out" "NODE                 CPU(cores)  CPU%   MEMORY(bytes)  MEMORY%"
expect_in "xpool top: the pod" "$tmp/out" "train"
check "xpool top devices" 0 "$xpool" top devices
expect_in "xpool top devices: the pod's GPU, allocated and used" "$tmp/out" "$gpu"
cp "$tmp/out" "$tmp/top.out"
check "the allocated GPU's line" 0 grep -E "^n1 +$gpu +gpu +1 +train +42% +2048Mi" "$tmp/top.out"
check "the kinds of n1: GPUs" 0 grep -E '^n1 +gpu +2 +1 ' "$tmp/top.out"
check "the kinds of n1: NPUs" 0 grep -E '^n1 +npu +1 +0 ' "$tmp/top.out"

# ---- a GPU turns unhealthy under a Job's pod ---------------------------------------------------------
cat >"$tmp/job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: gpu-job}
spec:
  backoffLimit: 0
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions: [{type: xpool.io/DeviceUnhealthy}]
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {monitoring: nvml}
      containers:
      - {name: main, image: busybox, command: [sh, -c, "sleep 600"], resources: {limits: {nvidia.com/gpu: 1}}}
YAML
job_start=$SECONDS
check "create a Job on n2's other GPU" 0 kubectl apply -f "$tmp/job.yaml"
job_pod() { kubectl get pods -l job-name=gpu-job -o jsonpath="{.items[?(@.status.phase==\"$1\")].metadata.name}" 2>/dev/null; }
poll "the Job's pod runs" 60 yes bash -c "[[ -n \$(kubectl get pods -l job-name=gpu-job -o jsonpath='{.items[?(@.status.phase==\"Running\")].metadata.name}') ]] && echo yes"
victim=$(job_pod Running)
broken=$(kubectl get pod "$victim" -o jsonpath='{.metadata.annotations.xpool\.io/placement}' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
# Xid 79 on its GPU, as the driver would report it (the fake reads the changed file live)
/usr/bin/python3 - "$tmp/nvml.json" "$broken" <<'PY'
import json, os, sys
config = json.load(open(sys.argv[1]))
for gpu in config["gpus"]:
    if gpu["uuid"] == sys.argv[2]:
        gpu["xids"] = gpu.get("xids", []) + [79]
json.dump(config, open(sys.argv[1] + ".new", "w"))
os.rename(sys.argv[1] + ".new", sys.argv[1])
PY
poll "the pod on the broken GPU fails: DeviceUnhealthy" 60 Failed/DeviceUnhealthy kubectl get pod "$victim" -o jsonpath='{.status.phase}/{.status.reason}'
check "its conditions" 0 kubectl get pod "$victim" -o jsonpath='{range .status.conditions[?(@.reason=="DeviceUnhealthy")]}{.type}={.status} {end}'
expect_in "DisruptionTarget" "$tmp/out" "DisruptionTarget=True"
expect_in "xpool.io/DeviceUnhealthy" "$tmp/out" "xpool.io/DeviceUnhealthy=True"
check "its message names the device and the Xid" 0 kubectl get pod "$victim" -o jsonpath='{.status.message}'
expect_in "the message" "$tmp/out" "device $broken (nvidia.com/gpu) is unhealthy: Xid 79"
poll "a Warning Event says so" 60 yes bash -c "kubectl get events -o jsonpath='{range .items[*]}{.reason}/{.involvedObject.name} {end}' | grep -q 'DeviceUnhealthy/$victim' && echo yes"
poll "n2 offers one GPU now" 60 1 kubectl get node n2 -o jsonpath='{.status.allocatable.nvidia\.com/gpu}'
poll "the Job replaces the pod (the failure ignored)" 60 2 bash -c "kubectl get pods -l job-name=gpu-job --no-headers 2>/dev/null | wc -l"
check "the Job counts no failure and has not failed" 0 bash -c "[[ \$(kubectl get job gpu-job -o jsonpath='{.status.failed}/{.status.conditions[?(@.type==\"Failed\")].status}') =~ ^0?/\$ ]]"
poll "the device reports unhealthy with its reason" 60 0 query "xpool_device_healthy{device=\"$broken\",reason=\"Xid 79: GPU has fallen off the bus\"}"
kubectl delete job gpu-job --wait=false >/dev/null 2>&1 || true
echo "the device failure took $((SECONDS - job_start)) s"

# ---- a hung driver: scrapes still answer at once -------------------------------------------------
echo 20000 >"$tmp/hang"
sleep 1.5 # the sampler is inside a hung call now
# 20 scrapes while every NVML call sleeps 20 s: a scrape that waited for the driver would wait
# for the rest of such a call, 18 s or more. Each must answer (200) within curl's --max-time of
# 10 s: its speed on a quiet machine is milliseconds, but a bound of 50 ms on the median (as
# before) was a timing figure that a loaded CI machine under ASan can miss; the figures are
# printed. Timed from the end of the TLS handshake (curl's time_appconnect) to the answer's end.
times=() answered=0
for _ in $(seq 20); do
  got=$(curl -s --cacert "$data/pki/kubelet-ca.crt" --max-time 10 "${reader[@]}" -o /dev/null -w '%{http_code} %{time_appconnect} %{time_total}' "https://127.0.0.1:$p2/metrics") || true
  [[ $got == "200 "* ]] && answered=$((answered + 1))
  times+=("$(awk '{ printf "%.6f", $3 - $2 }' <<<"$got")")
done
echo 3000 >"$tmp/hang" # the calls after the one in progress hang 3 s, as before
printf '%s\n' "${times[@]}" | sort -n >"$tmp/scrapes"
median=$(sed -n 10p "$tmp/scrapes") worst=$(tail -1 "$tmp/scrapes")
echo "scrapes while NVML hangs: median $median s, slowest $worst s"
check "all 20 scrapes answer while NVML hangs ($answered)" 0 test "$answered" -eq 20
poll "the sample's age grows while NVML hangs" 60 yes bash -c "curl -s --cacert '$data/pki/kubelet-ca.crt' -H 'Authorization: Bearer $(cat "$tmp/prom.token")' https://127.0.0.1:$p2/metrics | awk '/^xpool_device_sample_age_seconds/ { print (\$2 >= 2 ? \"yes\" : \"no\") }'"
cat >"$tmp/cpu.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: cpu-on-n2}
spec:
  nodeSelector: {monitoring: nvml}
  containers: [{name: c, image: busybox, command: [sh, -c, "sleep 600"]}]
YAML
check "create a pod on n2" 0 kubectl apply -f "$tmp/cpu.yaml"
poll "a pod starts on n2 while NVML hangs" 60 Running kubectl get pod cpu-on-n2 -o jsonpath='{.status.phase}'
rm -f "$tmp/hang"
kubectl delete pod train infer too-big cpu-on-n2 --grace-period=0 --wait=false >/dev/null 2>&1 || true
finish "metrics"
