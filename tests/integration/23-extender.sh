#!/usr/bin/env bash
# Kubernetes integration against xpool's own API server standing in for kube-apiserver (it is
# the same API): `xpool inventory` publishes a node's device labels and inventory annotation with
# a service-account-style token (token and ca.crt in a directory, KUBERNETES_SERVICE_HOST/PORT),
# merge-patching only its own; one beside another vendor's plugin leaves that plugin's resource.
# `xpool extender` list/watches Nodes and Pods and answers filter, prioritize and bind requests
# shaped as kube-scheduler 1.32 sends them (NodeNames and whole Nodes), over HTTPS with a client
# certificate; it follows the watch, rebuilds everything after a restart, and answers bad input
# clearly while it keeps serving.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
diag_cluster "$data/admin.kubeconfig"
pids=()
server_pid=
base=
token=

stop_all() {
  for p in "${pids[@]}" $server_pid; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}" $server_pid; do wait "$p" 2>/dev/null || true; done
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT

api() { # method path [body-file [content-type]]: the answer in $tmp/api
  local args=(-sS --max-time 10 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" -X "$1" -o "$tmp/api" -w '%{http_code}')
  [[ -n "${3:-}" ]] && args+=(-H "Content-Type: ${4:-application/json}" --data-binary "@$3")
  command curl "${args[@]}" "$base$2"
}

# ext name, expected code, verb, body file [curl options...]: the extender's answer in $tmp/out
ext() {
  local name=$1 want=$2 verb=$3 body=$4 got
  shift 4
  got=$(command curl -sS --max-time 10 --cacert "$data/pki/ca.crt" "$@" -X POST -H 'Content-Type: application/json' \
    --data-binary "@$body" -o "$tmp/out" -w '%{http_code}' "$ext_url/xpool/$verb") || got="curl failed"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}

json() { # python expression over the JSON in $tmp/out as `j`: prints it
  /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$tmp/out"
}

expect_eq() { # name, got, want
  [[ "$2" == "$3" ]] || { echo "FAIL $1: got '$2', expected '$3'"; failures=$((failures + 1)); }
}

wait_until() { # name, seconds, command...: retries the command until it succeeds (bounded)
  local name=$1 secs=$2 deadline=$((SECONDS + $2))
  shift 2
  while [[ $SECONDS -lt $deadline ]]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "FAIL $name: not within $secs s"; failures=$((failures + 1))
}

# ---- the API server, and two Nodes as their kubelets register them ----------------------------
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --no-scheduler >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
for _ in $(seq 1 600); do
  base=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$base" && -s "$data/admin.kubeconfig" ]] && break
  sleep 0.1
done
[[ -n "$base" ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
port=${base##*:}
for n in gpu-1 gpu-2; do
  /usr/bin/python3 - "$n" >"$tmp/$n.json" <<'EOF'
import json, sys
n = sys.argv[1]
res = {"cpu": "96", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
print(json.dumps({"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, "team": "ml"}},
    "status": {"capacity": res, "allocatable": res, "conditions": [{"type": "Ready", "status": "True"}]}}))
EOF
  wait_until "create node $n" 60 test "$(api POST /api/v1/nodes "$tmp/$n.json")" = 201
done

# ---- the inventory, with a service-account-style token ----------------------------------------
for n in gpu-1 gpu-2; do
  mkdir -p "$tmp/sa-$n"
  "$xpool" token create --node "$n" --data-dir "$data" >"$tmp/sa-$n/token" 2>/dev/null
  cp "$data/pki/ca.crt" "$tmp/sa-$n/ca.crt"
done
# gpu-1's kubelet serves pod-resources (the fake kubelet of 22, python3-grpcio): ml/train-0 holds
# gpu-4..gpu-7, the second NVLink island
podres=()
if /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null && command -v protoc >/dev/null; then
  echo '{"pods":[{"name":"train-0","namespace":"ml","containers":[{"name":"main","devices":[{"resource":"nvidia.com/gpu","ids":["gpu-4","gpu-5","gpu-6","gpu-7"],"numa":[1]}]}]}],"allocatable":[]}' >"$tmp/pods.json"
  /usr/bin/python3 "$src/tests/tools/fake_kubelet.py" --proto-dir "$src/src/kube/proto" \
    --podres-socket "$tmp/podres.sock" --podres-only "$tmp/pods.json" --ready "$tmp/podres.ready" >"$tmp/podres.log" 2>&1 &
  pids+=($!)
  diag_log "$tmp/podres.log"
  wait_until "the fake pod-resources server" 60 test -e "$tmp/podres.ready"
  podres=(--pod-resources "$tmp/podres.sock")
else
  echo "note: no python3-grpcio or protoc: the pod-resources path is left out"
fi
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$port "$xpool" inventory --node-name gpu-1 \
  --serviceaccount-dir "$tmp/sa-gpu-1" --node-description "$src/examples/nodes/dgx-h100.yaml" \
  --interval 1s --poll 200ms --resync 1s "${podres[@]}" >"$tmp/inv1.log" 2>&1 &
diag_log "$tmp/inv1.log"
inv1=$!
pids+=($inv1)
# gpu-2 runs NVIDIA's device plugin, which advertised nvidia.com/gpu before xpool came
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$port "$xpool" inventory --node-name gpu-2 \
  --serviceaccount-dir "$tmp/sa-gpu-2" --node-description "$src/examples/nodes/dgx-h100.yaml" \
  --no-device-plugin --interval 1s --poll 200ms >"$tmp/inv2.log" 2>&1 &
pids+=($!)
diag_log "$tmp/inv2.log"
labelled() { api GET "/api/v1/nodes/$1" >/dev/null; grep -qF "$2" "$tmp/api"; }
wait_until "gpu-1 labelled" 60 labelled gpu-1 '"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"'
api GET /api/v1/nodes/gpu-1 >/dev/null; cp "$tmp/api" "$tmp/out"
expect_eq "GFD-style labels" "$(json "[j['metadata']['labels'][k] for k in ('nvidia.com/gpu.count','nvidia.com/gpu.memory','nvidia.com/gpu.present','xpool.io/gpu.count','xpool.io/gpu.nvlink')]")" "['8', '81559', 'true', '8', 'true']"
expect_eq "others' labels untouched" "$(json "j['metadata']['labels']['team']")" "ml"
expect_eq "owned labels recorded" "$(json "'nvidia.com/gpu.count' in j['metadata']['annotations']['xpool.io/labels'].split(',')")" "True"
size=$(json "len(j['metadata']['annotations']['xpool.io/inventory'])")
[[ $size -gt 200 && $size -lt 2048 ]] || { echo "FAIL inventory annotation of 8 GPUs: $size bytes"; failures=$((failures + 1)); }
echo "# inventory annotation of 8 H100s: $size bytes"
if [[ ${#podres[@]} -gt 0 ]]; then
  # the allocation comes from the kubelet's pod-resources List, and follows it
  held() { # pod, count: the annotation names the pod on exactly count devices
    api GET /api/v1/nodes/gpu-1 >/dev/null
    /usr/bin/python3 -c 'import json,sys; a=json.loads(json.load(open(sys.argv[1]))["metadata"]["annotations"]["xpool.io/inventory"]); sys.exit(0 if sum(d.get("pod")==sys.argv[2] for d in a["devices"])==int(sys.argv[3]) else 1)' "$tmp/api" "$1" "$2"
  }
  wait_until "the annotation names ml/train-0 on its 4 GPUs (pod-resources List)" 60 held ml/train-0 4
  api GET /api/v1/nodes/gpu-1 >/dev/null
  expect_eq "exactly gpu-4..gpu-7 are ml/train-0's" "$(/usr/bin/python3 -c 'import json,sys; a=json.loads(json.load(open(sys.argv[1]))["metadata"]["annotations"]["xpool.io/inventory"]); print(",".join(d["id"] for d in a["devices"] if d.get("pod")=="ml/train-0"))' "$tmp/api")" "gpu-4,gpu-5,gpu-6,gpu-7"
  echo '{"pods":[{"name":"eval","namespace":"ml","containers":[{"name":"main","devices":[{"resource":"nvidia.com/gpu","ids":["gpu-0"],"numa":[0]}]}]}],"allocatable":[]}' >"$tmp/pods.json"
  wait_until "the pod that ended frees its GPUs in the annotation" 60 held ml/train-0 0
  wait_until "the new pod is named on its GPU" 60 held ml/eval 1
  # nothing held again, as the extender's checks below expect gpu-1
  echo '{"pods":[],"allocatable":[]}' >"$tmp/pods.json"
  wait_until "no pod: no device held" 60 held ml/eval 0
fi
wait_until "gpu-2 labelled" 60 labelled gpu-2 '"xpool.io/gpu.count":"8"'
api GET /api/v1/nodes/gpu-2 >/dev/null
not_labelled=$(grep -c '"nvidia.com/gpu.product"' "$tmp/api" || true)
expect_eq "NVIDIA's resource left to NVIDIA's plugin" "$not_labelled" "0"
expect_in "the conflict is said" "$tmp/inv2.log" "nvidia.com/gpu is advertised on node gpu-2 by another device plugin"
# a label it owned and no longer wants goes at the next resync; nobody else's does
echo '{"metadata":{"labels":{"xpool.io/fpga.count":"1"},"annotations":{"xpool.io/labels":"xpool.io/fpga.count,nvidia.com/gpu.count"}}}' >"$tmp/stale.json"
api PATCH /api/v1/nodes/gpu-1 "$tmp/stale.json" application/merge-patch+json >/dev/null
wait_until "a stale owned label removed" 60 bash -c "! grep -q fpga.count <(command curl -sS --cacert '$data/pki/ca.crt' -H 'Authorization: Bearer $token' '$base/api/v1/nodes/gpu-1')"

# ---- the extender: HTTPS, a client certificate, bind ------------------------------------------
have_openssl=false
if command -v openssl >/dev/null; then
  have_openssl=true
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=xpool-test-ca \
    -keyout "$tmp/client-ca.key" -out "$tmp/client-ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-scheduler \
    -keyout "$tmp/client.key" -out "$tmp/client.csr" 2>/dev/null
  openssl x509 -req -in "$tmp/client.csr" -CA "$tmp/client-ca.crt" -CAkey "$tmp/client-ca.key" \
    -CAcreateserial -days 1 -out "$tmp/client.crt" 2>/dev/null
fi
cert=()
$have_openssl && cert=(--cert "$tmp/client.crt" --key "$tmp/client.key")
start_extender() {
  "$xpool" extender --kubeconfig "$data/admin.kubeconfig" --listen 127.0.0.1:0 --bind \
    --tls-cert-file "$data/pki/server.crt" --tls-key-file "$data/pki/server.key" \
    ${have_openssl:+$($have_openssl && echo --client-ca-file "$tmp/client-ca.crt")} >"$tmp/ext.port" 2>"$tmp/ext.log" &
  ext_pid=$!
  pids+=($ext_pid)
  wait_until "the extender's port" 60 test -s "$tmp/ext.port"
  ext_url=https://127.0.0.1:$(head -1 "$tmp/ext.port")
  wait_until "the extender ready" 60 command curl -fsS --cacert "$data/pki/ca.crt" "${cert[@]}" "$ext_url/readyz"
}
start_extender
check "plain HTTP on a network address is refused" 2 "$xpool" extender --listen 0.0.0.0:0
expect_in "and says why" "$tmp/err" "give --tls-cert-file and --tls-key-file"

pod() { # name gpus: a pending Pod as the API server holds it and kube-scheduler sends it
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": sys.argv[1], "namespace": "default"},
  "spec": {"schedulerName": "default-scheduler", "restartPolicy": "Never",
    "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": sys.argv[2]}}}],
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}}))
EOF
}
args() { # pod-file, then node names: ExtenderArgs with NodeNames (nodeCacheCapable)
  /usr/bin/python3 - "$@" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p.pop("apiVersion"); p.pop("kind")
print(json.dumps({"Pod": p, "Nodes": None, "NodeNames": sys.argv[2:]}))
EOF
}
pod train 4 >"$tmp/train.json"
expect_eq "create pod train" "$(api POST /api/v1/namespaces/default/pods "$tmp/train.json")" 201
cp "$tmp/api" "$tmp/train.json"
args "$tmp/train.json" gpu-1 gpu-2 gpu-gone >"$tmp/filter.json"

if $have_openssl; then
  ext "no client certificate" 401 filter "$tmp/filter.json"
  expect_in "and says why" "$tmp/out" "a client certificate signed by the extender's client CA is required"
fi
ext "filter by NodeNames" 200 filter "$tmp/filter.json" "${cert[@]}"
expect_eq "passing NodeNames" "$(json "j['NodeNames']")" "['gpu-1', 'gpu-2']"
expect_eq "unknown node named" "$(json "j['FailedNodes']['gpu-gone']")" "node is unknown to the xpool extender (not in its watch of Nodes yet)"
expect_eq "no Nodes back" "$(json "j['Nodes']")" "None"
# whole Nodes, as kube-scheduler sends them without nodeCacheCapable
api GET /api/v1/nodes >/dev/null
/usr/bin/python3 - "$tmp/train.json" "$tmp/api" >"$tmp/filter-nodes.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p.pop("apiVersion"); p.pop("kind")
items = json.load(open(sys.argv[2]))["items"]
for n in items: n.pop("apiVersion", None); n.pop("kind", None)
print(json.dumps({"Pod": p, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}))
EOF
ext "filter by Nodes" 200 filter "$tmp/filter-nodes.json" "${cert[@]}"
expect_eq "the Nodes come back whole" "$(json "[n['metadata']['labels']['nvidia.com/gpu.count'] if 'nvidia.com/gpu.count' in n['metadata']['labels'] else n['metadata']['name'] for n in j['Nodes']['items']]")" "['8', 'gpu-2']"
expect_eq "no NodeNames back" "$(json "j['NodeNames']")" "None"
ext "prioritize" 200 prioritize "$tmp/filter.json" "${cert[@]}"
expect_eq "scores 0..10" "$(json "sorted(h['Score'] for h in j)")" "[0, 9, 10]"

# bind: the placement goes onto the pod through the Binding
echo '{"PodName":"train","PodNamespace":"default","PodUID":"","Node":"gpu-1"}' >"$tmp/bind.json"
ext "bind" 200 bind "$tmp/bind.json" "${cert[@]}"
expect_eq "bound" "$(json "j['Error']")" ""
api GET /api/v1/namespaces/default/pods/train >/dev/null
cp "$tmp/api" "$tmp/out"
expect_eq "the pod's node" "$(json "j['spec']['nodeName']")" "gpu-1"
expect_eq "four whole GPUs of one NUMA node" "$(json "[(d['milli'], d['resource']) for d in json.loads(j['metadata']['annotations']['xpool.io/placement'])['devices']]")" "[(1000, 'nvidia.com/gpu'), (1000, 'nvidia.com/gpu'), (1000, 'nvidia.com/gpu'), (1000, 'nvidia.com/gpu')]"
# the same bind again (a retry): it says the pod is bound already, and the pod keeps its GPUs in
# the extender's picture (a failed bind once made it forget them, and the next pod got them twice)
ext "bind it again" 200 bind "$tmp/bind.json" "${cert[@]}"
expect_in "says it is bound already, not that it does not fit" "$tmp/out" "pod default/train is already bound to node gpu-1"
pod big 5 >"$tmp/big.json"
args "$tmp/big.json" gpu-1 >"$tmp/big-filter.json"
ext "5 GPUs after 4 of 8 are taken" 200 filter "$tmp/big-filter.json" "${cert[@]}"
expect_eq "Insufficient, in kube-scheduler's words" "$(json "j['FailedNodes']['gpu-1']")" "Insufficient nvidia.com/gpu"

# stateless: a new extender rebuilds the same picture from list/watch
kill "$ext_pid"; wait "$ext_pid" 2>/dev/null || true
: >"$tmp/ext.port"
start_extender
ext "after a restart" 200 filter "$tmp/big-filter.json" "${cert[@]}"
expect_eq "still Insufficient" "$(json "j['FailedNodes']['gpu-1']")" "Insufficient nvidia.com/gpu"

# the watch: the pod finishes, its GPUs are free again
echo '{"status":{"phase":"Succeeded"}}' >"$tmp/done.json"
api PATCH /api/v1/namespaces/default/pods/train/status "$tmp/done.json" application/merge-patch+json >/dev/null
fits_again() { ext "5 GPUs once the pod is done" 200 filter "$tmp/big-filter.json" "${cert[@]}" && [[ "$(json "j['NodeNames']")" == "['gpu-1']" ]]; }
wait_until "the finished pod's GPUs freed" 60 fits_again

# bad input: clear errors, and serving goes on
printf '{"Pod":' >"$tmp/bad.json"
ext "malformed body" 400 filter "$tmp/bad.json" "${cert[@]}"
expect_in "says where" "$tmp/out" "the body is not JSON: line 1, column 8: expected a value"
# kube-scheduler shows only "failed filter with extender at URL ..., code 400": the reason is logged
expect_in "the refusal is in the extender's log" "$tmp/ext.log" "refused a filter request (HTTP 400): the body is not JSON: line 1, column 8"
echo '{"NodeNames":["gpu-1"]}' >"$tmp/nopod.json"
ext "no Pod" 400 prioritize "$tmp/nopod.json" "${cert[@]}"
expect_in "says what" "$tmp/out" "Pod: required"
ext "unknown verb" 404 preempt "$tmp/filter.json" "${cert[@]}"
expect_in "an unknown verb is logged (a preemptVerb the extender does not serve)" "$tmp/ext.log" "refused a POST request (HTTP 404): unknown verb"
# a right body with a Pod xpool refuses: kube-scheduler shows a 200's Error on the pod, a 400's code
echo '{"Pod":{"metadata":{"name":"odd"},"spec":{"containers":"no"}},"NodeNames":["gpu-1"]}' >"$tmp/oddpod.json"
ext "a pod xpool refuses" 200 filter "$tmp/oddpod.json" "${cert[@]}"
expect_in "the reason as the filter's Error" "$tmp/out" '"Error":"xpool cannot schedule this pod: Pod: spec.containers'
echo '{"PodName":"ghost","PodNamespace":"default","Node":"gpu-1"}' >"$tmp/ghost.json"
ext "bind of a pod that does not exist" 200 bind "$tmp/ghost.json" "${cert[@]}"
expect_in "bind error" "$tmp/out" "binding pod default/ghost to node gpu-1"
ext "still serving" 200 filter "$tmp/filter.json" "${cert[@]}"
expect_eq "the same answer" "$(json "j['NodeNames']")" "['gpu-1', 'gpu-2']"
kill -0 "$ext_pid" || { echo "FAIL the extender died"; failures=$((failures + 1)); }

# the manifests build offline as kubectl apply -k builds them (their fields: tests/unit/test_deploy.c)
if command -v kubectl >/dev/null; then
  check "kubectl kustomize deploy/kubernetes" 0 kubectl kustomize "$src/deploy/kubernetes"
  expect_count "the objects it applies" "$tmp/out" 11 "apiVersion:"
fi
# the KubeSchedulerConfiguration docs/kubernetes.md gives to paste is the shipped one
if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  check "docs/kubernetes.md's kube-scheduler configuration is the shipped file" 0 /usr/bin/python3 -c '
import re, sys, yaml
doc = open(sys.argv[1]).read()
at = doc.index("### kube-scheduler\x27s configuration")
block = re.search(r"```yaml\n(.*?)```", doc[at:], re.S).group(1)
shipped = open(sys.argv[2]).read().replace("XPOOL_EXTENDER_IP", "10.96.12.7")
sys.exit(0 if yaml.safe_load(block) == yaml.safe_load(shipped) else 1)
' "$src/docs/kubernetes.md" "$src/deploy/kubernetes/scheduler/kube-scheduler-config.yaml"
fi
check "install.sh parses" 0 bash -n "$src/deploy/kubernetes/install.sh"
check "uninstall.sh parses" 0 bash -n "$src/deploy/kubernetes/uninstall.sh"

finish extender
