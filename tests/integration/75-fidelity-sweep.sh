#!/usr/bin/env bash
# Issue 15's final sweep: what the other API fidelity tests (27, 28, 29, 38, 40, 64) leave out,
# compared word for word with kube-apiserver 1.32, on `xpool up` with the seed's simulated node
# (pods as processes of the node):
# - a running GPU pod that asks limits only: its requests defaulted from them, `kubectl describe
#   node` counts its GPU, its DevicesAllocated Event names the device, `kubectl events` lists the
#   kubelet's Events;
# - a patch body that is not the shape its type needs gets kube-apiserver's 400, in Go's words for
#   the fieldValidation directive (none means Warn: kubectl patch and the Python client send
#   none): a JSON patch that is a string, a number, an object or a list of numbers, an operation
#   whose path is a number, a merge patch that is a string or null, a strategic merge patch that
#   is a number; with fieldValidation=Ignore the JSON patch library's words; null as a JSON or
#   strategic merge patch changes nothing; a JSON patch whose test fails is the 422 kubectl prints
#   as "The request is invalid: ..."; none of them changes the pod;
# - managedFields times as metav1.Time writes them ("2026-12-05T19:40:00Z"), also when a client
#   sends "+00:00", another offset or a fraction (kubectl replace, a PUT through curl).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { echo "SKIP: python3-kubernetes is not installed"; exit 77; }
data=$tmp/data
node=sweep-node
up_pid=
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
diag_cluster "$KUBECONFIG"
start_up "$tmp/up.log" --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name "$node" \
  --pod-network host --default-runtime process
poll "the node is Ready" 60 True \
  "${k[@]}" get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
base=$(sed -n 's/^[[:space:]]*server:[[:space:]]*//p' "$KUBECONFIG" | head -1)
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)
P=/api/v1/namespaces/default/pods

# ---- a GPU pod that asks limits only ------------------------------------------------------------
cat >"$tmp/gpu.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: gpu}
spec:
  containers:
  - name: main
    image: ai-framework:latest
    command: [sleep, "3600"]
    resources:
      limits: {nvidia.com/gpu: 1}
YAML
check "apply the GPU pod" 0 "${k[@]}" apply -f "$tmp/gpu.yaml"
check "it runs" 0 "${k[@]}" wait --for=condition=Ready pod/gpu --timeout=120s
check "its requests" 0 "${k[@]}" get pod gpu -o 'jsonpath={.spec.containers[0].resources.requests}'
expect_exact "requests defaulted from limits" "$tmp/out" '{"nvidia.com/gpu":"1"}'
check "kubectl describe node" 0 "${k[@]}" describe node "$node"
grep -Eq '^  nvidia.com/gpu +1 +1$' "$tmp/out" ||
  { echo "FAIL describe node does not count the running pod's GPU:"; cat "$tmp/out"; failures=$((failures + 1)); }
expect_in "describe node lists the pod" "$tmp/out" "Non-terminated Pods:          (1 in total)"
poll "its DevicesAllocated Event names the device" 60 \
  "Container main got devices CUDA_VISIBLE_DEVICES=0 NVIDIA_VISIBLE_DEVICES=0 XPOOL_VISIBLE_DEVICES=sim-gpu-0" \
  "${k[@]}" get events --field-selector involvedObject.name=gpu,reason=DevicesAllocated -o 'jsonpath={.items[0].message}'
check "kubectl events --for" 0 "${k[@]}" events --for pod/gpu
grep -Eq '^[0-9a-z]+ +Normal +Started +Pod/gpu +Started container main$' "$tmp/out" ||
  { echo "FAIL kubectl events lacks the Started row:"; cat "$tmp/out"; failures=$((failures + 1)); }

# ---- patch bodies of the wrong shape: kube-apiserver's Status, the pod unchanged ---------------
check "the pod's version" 0 "${k[@]}" get pod gpu -o 'jsonpath={.metadata.resourceVersion}'
rv=$(cat "$tmp/out")
status() { # name, content type, body, query, exact Status expected (HTTP code in it)
  local code
  code=$(curl -sS --max-time 10 --cacert "$data/pki/ca.crt" -o "$tmp/status" -w '%{http_code}' \
    -H "Authorization: Bearer $token" -X PATCH -H "Content-Type: application/$2" \
    --data-binary "$3" "$base$P/gpu$4") || code="curl failed"
  expect_exact "$1" "$tmp/status" "$5"
  [[ "$5" == *"\"code\":$code}" ]] || { echo "FAIL $1: HTTP $code"; failures=$((failures + 1)); }
}
bad() { # message: kube-apiserver's errors.NewBadRequest, as it answers it
  printf '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"%s","reason":"BadRequest","code":400}' "$1"
}
decoding="error decoding patch: json: cannot unmarshal"
status "a string as a JSON patch" json-patch+json '"x"' "" \
  "$(bad "$decoding string into Go value of type []handlers.jsonPatchOp")"
status "a number as a JSON patch" json-patch+json 5 "?fieldValidation=Strict" \
  "$(bad "$decoding number into Go value of type []handlers.jsonPatchOp")"
status "a list of numbers as a JSON patch" json-patch+json '[5]' "" \
  "$(bad "$decoding number into Go value of type handlers.jsonPatchOp")"
status "an operation whose path is a number" json-patch+json '[{"op":"remove","path":5}]' "?fieldValidation=Warn" \
  "$(bad "$decoding number into Go struct field jsonPatchOp.path of type string")"
status "a string as a JSON patch, Ignore" json-patch+json '"x"' "?fieldValidation=Ignore" \
  "$(bad "json: cannot unmarshal string into Go value of type jsonpatch.Patch")"
status "a string as a merge patch" merge-patch+json '"x"' "" \
  "$(bad "$decoding string into Go value of type map[string]interface {}")"
status "a string as a merge patch, Ignore" merge-patch+json '"x"' "?fieldValidation=Ignore" "$(bad "Invalid JSON Patch")"
status "null as a merge patch" merge-patch+json null "" "$(bad "Invalid JSON Patch")"
status "a number as a strategic merge patch" strategic-merge-patch+json 5 "" \
  "$(bad "json: cannot unmarshal number into Go value of type map[string]interface {}")"
status "a failing test" json-patch+json '[{"op":"test","path":"/metadata/name","value":"x"}]' "" \
  '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{},"code":422}'
# kubectl's lines: it sends the -p value as JSON (a YAML scalar too) without fieldValidation
check "kubectl: a string as a JSON patch" 1 "${k[@]}" patch pod gpu --type=json -p '"x"'
expect_exact "kubectl's line" "$tmp/err" "Error from server (BadRequest): $decoding string into Go value of type []handlers.jsonPatchOp"
check "kubectl: a number as a merge patch" 1 "${k[@]}" patch pod gpu --type=merge -p 5
expect_exact "kubectl's line" "$tmp/err" "Error from server (BadRequest): $decoding number into Go value of type map[string]interface {}"
check "kubectl: a string as a strategic merge patch" 1 "${k[@]}" patch pod gpu -p '"x"'
expect_exact "kubectl's line" "$tmp/err" "Error from server (BadRequest): json: cannot unmarshal string into Go value of type map[string]interface {}"
check "kubectl: a path that is not there" 1 "${k[@]}" patch pod gpu --type=json -p '[{"op":"replace","path":"/spec/nope","value":1}]'
expect_in "kubectl's line" "$tmp/err" "The request is invalid: the server rejected our request due to an error in our request"
# null changes nothing, as an empty patch
check "null as a JSON patch" 0 "${k[@]}" patch pod gpu --type=json -p null
expect_exact "kubectl: no change" "$tmp/out" "pod/gpu patched (no change)"
check "null as a strategic merge patch" 0 "${k[@]}" patch pod gpu -p null
expect_exact "kubectl: no change" "$tmp/out" "pod/gpu patched (no change)"
check "the pod is as it was" 0 "${k[@]}" get pod gpu -o 'jsonpath={.metadata.resourceVersion}'
expect_exact "no write" "$tmp/out" "$rv"
# the Python client's view of a failed JSON patch
check "python: a failing test" 0 /usr/bin/python3 -c 'import sys, json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
try:
    client.CoreV1Api().patch_namespaced_pod("gpu", "default", [{"op": "test", "path": "/metadata/name", "value": "x"}])
    print("patched")
except ApiException as e:
    b = json.loads(e.body)
    print(e.status, b["reason"], b["message"])' "$KUBECONFIG"
expect_exact "python: 422 Invalid" "$tmp/out" "422 Invalid the server rejected our request due to an error in our request"

# ---- managedFields times: RFC 3339 in UTC with Z, whatever the client sent ----------------------
check "the pod with its managedFields" 0 "${k[@]}" get pod gpu -o json --show-managed-fields
/usr/bin/python3 -c 'import json, sys
pod = json.load(open(sys.argv[1]))
for e in pod["metadata"]["managedFields"]:
    e["time"] = "2026-12-05T21:40:00.5+02:00"
pod["metadata"]["labels"] = {"swept": "yes"}
json.dump(pod, open(sys.argv[2], "w"))' "$tmp/out" "$tmp/replace.json"
check "kubectl replace with offset times" 0 "${k[@]}" replace -f "$tmp/replace.json"
check "the times now" 0 "${k[@]}" get pod gpu --show-managed-fields \
  -o 'jsonpath={range .metadata.managedFields[*]}{.manager}={.time}{"\n"}{end}'
expect_in "the earlier entry in UTC, whole seconds" "$tmp/out" "kubectl-client-side-apply=2026-12-05T19:40:00Z"
expect_in "kubectl replace's own entry" "$tmp/out" "kubectl-replace="
if grep -v '=[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z$' "$tmp/out"; then
  echo "FAIL a managedFields time is not RFC 3339 with Z"; failures=$((failures + 1))
fi
check "the pod again" 0 "${k[@]}" get pod gpu -o json --show-managed-fields
/usr/bin/python3 -c 'import json, sys
pod = json.load(open(sys.argv[1]))
for e in pod["metadata"]["managedFields"]:
    e["time"] = "2026-12-05T19:41:00+00:00"
pod["metadata"]["labels"]["swept"] = "twice"
json.dump(pod, open(sys.argv[2], "w"))' "$tmp/out" "$tmp/put.json"
check "a PUT with +00:00" 0 curl -sS --max-time 10 --cacert "$data/pki/ca.crt" -X PUT \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H 'User-Agent: sweeper/1.0' \
  --data-binary "@$tmp/put.json" "$base$P/gpu"
/usr/bin/python3 -c 'import json, sys
for e in json.load(open(sys.argv[1]))["metadata"]["managedFields"]:
    print(e["manager"] + "=" + e["time"])' "$tmp/out" >"$tmp/times"
expect_in "the answer: the client's entries in UTC with Z" "$tmp/times" "kubectl-client-side-apply=2026-12-05T19:41:00Z"
expect_in "the answer: the writer's entry" "$tmp/times" "sweeper="
if grep -q '+00:00' "$tmp/out"; then echo "FAIL the PUT's answer keeps +00:00"; failures=$((failures + 1)); fi
check "read back" 0 "${k[@]}" get pod gpu -o json --show-managed-fields
if grep -q '+00:00' "$tmp/out"; then echo "FAIL the stored pod keeps +00:00"; failures=$((failures + 1)); fi
expect_in "stored in Z" "$tmp/out" '"time": "2026-12-05T19:41:00Z"'

finish "fidelity sweep"
