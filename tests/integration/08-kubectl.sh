#!/usr/bin/env bash
# The real kubectl against xpool server: get (wide, yaml), apply (create, configure, unchanged),
# label, patch in its three types, describe with events, get -w, events, namespaces, leases,
# delete -f, and the server's field validation reaching the user.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
server_pid=
base=

trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

# curl speaks to the server as kubectl does: over TLS, trusting the server's CA, with the
# admin token of the kubeconfig it writes.
token=
curl() {
  command curl --cacert "$data/pki/ca.crt" ${token:+-H "Authorization: Bearer $token"} "$@"
}

start_server() { # log name: starts on a free port and waits (bounded) until /version answers
  local log=$tmp/$1.log deadline=$((SECONDS + 60)) url=
  : >"$log" # before the server starts: the wait below reads it at once
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$url" ]] && curl -fsS -o /dev/null "$url/version" 2>/dev/null; then
      base=$url
      token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 60 s:"; cat "$log"; exit 1
}

start_server kubectl
# The kubeconfig the server writes, as a user would take it: no other flag.
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=10s)
manifests=${XPOOL_TEST_DATA:?}/manifests

# ---- create and read -------------------------------------------------------------------------
check "apply a node" 0 "${kc[@]}" apply -f "$manifests/gpu-node.yaml"
expect_in "apply a node: created" "$tmp/out" "node/dgx-01 created"
check "get nodes" 0 "${kc[@]}" get nodes
expect_in "get nodes header" "$tmp/out" "NAME"
expect_in "get nodes row" "$tmp/out" "dgx-01"
check "apply the example" 0 "${kc[@]}" apply -f "$src/examples/ai-training.yaml"
expect_in "apply: created" "$tmp/out" "pod/ai-training created"
check "get pods -o wide" 0 "${kc[@]}" get pods -o wide
expect_in "wide header" "$tmp/out" "NOMINATED NODE"
expect_in "wide row" "$tmp/out" "ai-training"
expect_in "wide status" "$tmp/out" "Pending"
check "get pod -o yaml" 0 "${kc[@]}" get pod ai-training -o yaml
expect_in "yaml kind" "$tmp/out" "kind: Pod"
expect_in "yaml limits" "$tmp/out" "nvidia.com/gpu: \"1\""
expect_in "yaml last-applied" "$tmp/out" "kubectl.kubernetes.io/last-applied-configuration"
expect_in "yaml phase" "$tmp/out" "phase: Pending"

# ---- apply: configured, unchanged ------------------------------------------------------------
# Quantities quoted as the server stores them, so that an unchanged apply computes an empty patch.
sed 's/^  name: ai-training$/  name: ai-training\n  labels: {stage: one}/; s/: \([0-9]\)$/: "\1"/' \
  "$src/examples/ai-training.yaml" >"$tmp/edited.yaml"
grep -q 'stage: one' "$tmp/edited.yaml" || { echo "FAIL test setup: edited.yaml"; exit 1; }
check "apply an edit" 0 "${kc[@]}" apply -f "$tmp/edited.yaml"
expect_in "apply an edit: configured" "$tmp/out" "pod/ai-training configured"
check "the edit landed" 0 "${kc[@]}" get pod ai-training -o "jsonpath={.metadata.labels.stage}"
expect_in "the edit landed: label" "$tmp/out" "one"
check "apply unchanged" 0 "${kc[@]}" apply -f "$tmp/edited.yaml"
expect_in "apply unchanged" "$tmp/out" "pod/ai-training unchanged"
check "apply a multi-document file" 0 "${kc[@]}" apply -f "$manifests/all-kinds.yaml"
expect_in "multi: namespace" "$tmp/out" "namespace/ml created"
expect_in "multi: pod" "$tmp/out" "pod/trainer created"
expect_in "multi: lease" "$tmp/out" "lease.coordination.k8s.io/gpu-node-1 created"

# ---- label and patch -------------------------------------------------------------------------
check "label" 0 "${kc[@]}" label pod ai-training team=ml
expect_in "label: labeled" "$tmp/out" "pod/ai-training labeled"
check "label again without --overwrite" 1 "${kc[@]}" label pod ai-training team=ops
expect_in "label conflict message" "$tmp/err" "'team' already has a value (ml)"
check "label --overwrite" 0 "${kc[@]}" label --overwrite pod ai-training team=ops
check "label remove" 0 "${kc[@]}" label pod ai-training stage-
check "labels now" 0 "${kc[@]}" get pod ai-training -o "jsonpath={.metadata.labels}"
expect_in "labels now: team" "$tmp/out" '"team":"ops"'
if grep -q stage "$tmp/out"; then echo "FAIL label remove: stage still there"; failures=$((failures + 1)); fi
check "patch --type merge" 0 "${kc[@]}" patch pod ai-training --type merge -p '{"metadata":{"annotations":{"a":"1"}}}'
expect_in "patch merge: patched" "$tmp/out" "pod/ai-training patched"
check "patch --type json" 0 "${kc[@]}" patch pod ai-training --type json -p '[{"op":"replace","path":"/spec/containers/0/image","value":"ai-framework:v2"}]'
check "patched by json" 0 "${kc[@]}" get pod ai-training -o json
expect_in "patch json landed" "$tmp/out" '"image": "ai-framework:v2"'
check "patch strategic" 0 "${kc[@]}" patch pod ai-training -p '{"spec":{"containers":[{"name":"trainer","image":"ai-framework:v3"}]}}'
check "patched pod" 0 "${kc[@]}" get pod ai-training -o json
expect_in "patch merge landed" "$tmp/out" '"a": "1"'
expect_in "patch strategic landed" "$tmp/out" '"image": "ai-framework:v3"'
expect_in "patch strategic kept the gpu" "$tmp/out" '"nvidia.com/gpu": "1"'
check "patch nothing changes" 0 "${kc[@]}" patch pod ai-training --type merge -p '{"metadata":{"annotations":{"a":"1"}}}'
expect_in "patch no change" "$tmp/out" "pod/ai-training patched (no change)"
check "patch a missing pod" 1 "${kc[@]}" patch pod nope --type merge -p '{}'
expect_in "patch a missing pod message" "$tmp/err" 'pods "nope" not found'
check "patch the status subresource" 0 "${kc[@]}" patch pod ai-training --subresource=status --type merge -p '{"status":{"podIP":"10.0.0.9"}}'
check "patched status" 0 "${kc[@]}" get pod ai-training -o "jsonpath={.status.podIP}"
expect_in "patched status landed" "$tmp/out" "10.0.0.9"

# ---- describe with an event ------------------------------------------------------------------
check "the pod's uid" 0 "${kc[@]}" get pod ai-training -o "jsonpath={.metadata.uid}"
uid=$(cat "$tmp/out")
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"ai-training.test1","namespace":"default"},"involvedObject":{"apiVersion":"v1","kind":"Pod","namespace":"default","name":"ai-training","uid":"%s"},"reason":"DevicesAllocated","message":"allocated gpu0 to trainer","type":"Normal","count":1,"firstTimestamp":"%s","lastTimestamp":"%s","source":{"component":"xpool-test"}}' \
  "$uid" "$now" "$now" >"$tmp/event.json"
check "post an event" 0 curl -fsS -X POST -H 'Content-Type: application/json' --data-binary "@$tmp/event.json" \
  "$base/api/v1/namespaces/default/events"
check "describe pod" 0 "${kc[@]}" describe pod ai-training
expect_in "describe name" "$tmp/out" "ai-training"
expect_in "describe image" "$tmp/out" "ai-framework:v3"
expect_in "describe limits" "$tmp/out" "nvidia.com/gpu:"
expect_in "describe event reason" "$tmp/out" "DevicesAllocated"
expect_in "describe event message" "$tmp/out" "allocated gpu0 to trainer"
expect_in "describe event source" "$tmp/out" "xpool-test"
check "get events" 0 "${kc[@]}" get events
expect_in "get events row" "$tmp/out" "DevicesAllocated"
expect_in "get events object" "$tmp/out" "pod/ai-training"

# ---- get -w ----------------------------------------------------------------------------------
# kubectl lists, then watches from the list's version: once the list is printed, every change
# after it reaches the watch, however late its request (a sleep of 2 s before the writes, and 8 s
# for all of it, were guesses about a loaded machine). The watch ends once it showed them.
timeout 120 "${kc[@]}" get pods -w >"$tmp/watch.out" 2>"$tmp/watch.err" &
watcher=$!
wait_for "the watch lists the existing pod" 60 grep -q '^ai-training ' "$tmp/watch.out" || true
sed 's/^  name: ai-training$/  name: watched/' "$src/examples/ai-training.yaml" >"$tmp/watched.yaml"
check "create while watching" 0 "${kc[@]}" apply -f "$tmp/watched.yaml"
check "bind while watching" 0 curl -fsS -X POST -H 'Content-Type: application/json' \
  --data-binary '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"watched"},"target":{"kind":"Node","name":"dgx-01"}}' \
  "$base/api/v1/namespaces/default/pods/watched/binding"
# bound, with no agent to stop it: only a forced deletion removes it at once
check "delete while watching" 0 "${kc[@]}" delete pod watched --grace-period=0 --force --wait=false
wait_for "the watch shows the watched pod's three changes" 60 \
  sh -c "[ \$(grep -c '^watched ' '$tmp/watch.out') -ge 3 ]" || true
kill "$watcher" 2>/dev/null || true
wait "$watcher" || true
expect_in "watch header" "$tmp/watch.out" "NAME"
expect_in "watch lists the existing pod" "$tmp/watch.out" "ai-training"
watched_rows=$(grep -c '^watched ' "$tmp/watch.out" || true)
[[ $watched_rows -ge 3 ]] ||
  { echo "FAIL watch: $watched_rows rows for the watched pod, expected 3 (added, bound, deleted):"; cat "$tmp/watch.out" "$tmp/watch.err"; failures=$((failures + 1)); }
if grep -qi 'error' "$tmp/watch.err"; then echo "FAIL watch errors:"; cat "$tmp/watch.err"; failures=$((failures + 1)); fi

# ---- namespaces and leases -------------------------------------------------------------------
check "get ns" 0 "${kc[@]}" get ns
for ns in default kube-system kube-public kube-node-lease ml; do expect_in "get ns $ns" "$tmp/out" "$ns"; done
expect_in "get ns status" "$tmp/out" "Active"
check "create namespace" 0 "${kc[@]}" create namespace scratch
expect_in "create namespace: created" "$tmp/out" "namespace/scratch created"
check "create namespace again" 1 "${kc[@]}" create namespace scratch
expect_in "namespace exists message" "$tmp/err" 'namespaces "scratch" already exists'
check "a pod in the new namespace" 0 "${kc[@]}" apply -n scratch -f "$tmp/watched.yaml"
check "delete namespace" 0 "${kc[@]}" delete namespace scratch
expect_in "delete namespace: deleted" "$tmp/out" 'namespace "scratch" deleted'
check "the namespace is gone" 1 "${kc[@]}" get ns scratch
expect_in "namespace gone message" "$tmp/err" 'namespaces "scratch" not found'
check "its pod is gone" 0 "${kc[@]}" get pods -n scratch
expect_in "its pod is gone: none" "$tmp/err" "No resources found in scratch namespace."
check "delete a system namespace" 1 "${kc[@]}" delete namespace kube-system
expect_in "system namespace forbidden" "$tmp/err" "forbidden"
printf 'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: dgx-01\n  namespace: kube-node-lease\nspec:\n  holderIdentity: dgx-01\n  leaseDurationSeconds: 40\n' >"$tmp/lease.yaml"
check "create a lease" 0 "${kc[@]}" apply -f "$tmp/lease.yaml"
expect_in "lease created" "$tmp/out" "lease.coordination.k8s.io/dgx-01 created"
check "get leases" 0 "${kc[@]}" get leases -n kube-node-lease
expect_in "get leases row" "$tmp/out" "dgx-01"
expect_in "get leases second row" "$tmp/out" "gpu-node-1"
expect_in "get leases holder column" "$tmp/out" "HOLDER"

# ---- a bad manifest: the server's field validation -------------------------------------------
sed 's/^    image: ai-framework:latest$/    image: ai-framework:latest\n    imagePullPolicyy: Always/; s/^  name: ai-training$/  name: badfield/' \
  "$src/examples/ai-training.yaml" >"$tmp/bad.yaml"
check "apply an unknown field" 1 "${kc[@]}" apply -f "$tmp/bad.yaml"
expect_in "unknown field reported" "$tmp/err" 'imagePullPolicyy'
expect_in "unknown field says unknown" "$tmp/err" 'unknown field'
check "the bad pod was not created" 1 "${kc[@]}" get pod badfield
sed 's/^        nvidia.com\/gpu: 1$/        nvidia.com\/gpu: 1.5x/; s/^  name: ai-training$/  name: badquantity/' \
  "$src/examples/ai-training.yaml" >"$tmp/badquantity.yaml"
check "apply an invalid quantity" 1 "${kc[@]}" apply -f "$tmp/badquantity.yaml"
expect_in "invalid quantity names the field" "$tmp/err" 'spec.containers[0].resources.limits[nvidia.com/gpu]'
check "create an unknown field" 1 "${kc[@]}" create -f "$tmp/bad.yaml"
expect_in "create unknown field reported" "$tmp/err" 'imagePullPolicyy'
check "apply it with --validate=false" 0 "${kc[@]}" apply --validate=false -f "$tmp/bad.yaml"
check "delete it" 0 "${kc[@]}" delete pod badfield --wait=false

# ---- delete -f -------------------------------------------------------------------------------
check "delete -f" 0 "${kc[@]}" delete -f "$tmp/edited.yaml" --wait=false
expect_in "delete -f: deleted" "$tmp/out" 'pod "ai-training" deleted'
check "deleted pod" 1 "${kc[@]}" get pod ai-training
expect_in "deleted pod message" "$tmp/err" 'pods "ai-training" not found'
check "delete -f the node" 0 "${kc[@]}" delete -f "$manifests/gpu-node.yaml"
expect_in "node deleted" "$tmp/out" 'node "dgx-01" deleted'
check "get pods, none left" 0 "${kc[@]}" get pods
expect_in "no pods left" "$tmp/err" "No resources found in default namespace."
finish "kubectl"
