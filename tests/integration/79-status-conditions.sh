#!/usr/bin/env bash
# A pod's conditions that its node does not own survive the node's status writes
# (docs/kubernetes.md, "Pod conditions"): the agent builds a whole status from its own copy of the
# pod, which may predate a condition another writer added since, and its write replaces the
# stored status; the server keeps, on a node's write, the stored conditions of types the node does
# not own (all but PodReadyToStartContainers, Initialized, Ready and ContainersReady) that the
# write lacks, as the kubelet's status manager does on its side.
#   - a status write of the node's, as the agent makes them, from a copy of the pod older than a
#     condition a controller added (example.com/ready): the condition stays, the node's own are as
#     it wrote them, and an admin's same write replaces the status whole, as in Kubernetes;
#   - an eviction (policy/v1 Eviction) marks the pod DisruptionTarget; the agent's later writes
#     (the container stopped, the pod ended) all keep it, to the pod's last version.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
mark=$$
server_pid= agent_pid= watch_pid=
cleanup() {
  local pid
  for pid in $watch_pid $agent_pid $server_pid; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
start_server "$data"
"$xpool" agent --server "$base" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
  --node-name n1 --data-dir "$tmp/n1" --listen 127.0.0.1:0 --heartbeat 500ms \
  --pod-network host --default-runtime process >"$tmp/n1.log" 2>&1 &
agent_pid=$!
diag_log "$tmp/n1.log"
ready() { "$xpool" get node n1 -o yaml 2>/dev/null | grep -q 'reason: AgentReady' && echo Ready || echo no; }
poll "n1 registers Ready" 60 Ready ready
phase() { kubectl get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
# the condition of type $2 of pod $1: "status reason", or "none"
condition() {
  local got
  got=$(kubectl get pod "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason}" 2>/dev/null)
  [[ $got == " " || -z $got ]] && echo none || echo "$got"
}
# PATCH of pod $1's status as the agent writes it (a strategic merge patch whose $patch: replace
# replaces the whole status), with the token in file $2 and the conditions ($3) of others its copy
# held; the code printed, the answer in $tmp/patch
status_write() {
  curl -sS --cacert "$data/pki/ca.crt" -o "$tmp/patch" -w '%{http_code}' -X PATCH \
    -H "Authorization: Bearer $(cat "$2")" -H 'Content-Type: application/strategic-merge-patch+json' \
    "$base/api/v1/namespaces/default/pods/$1/status" \
    -d '{"status": {"$patch": "replace", "phase": "Running", "conditions": [
          {"type": "Ready", "status": "False", "reason": "StaleCopy", "lastTransitionTime": "2026-01-01T00:00:00Z"}'"${3:-}"']}}'
}
kubectl config view --raw -o 'jsonpath={.users[0].user.token}' >"$tmp/admin.token"

for pod in stale plain; do
  cat >"$tmp/$pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $pod}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 30
  containers:
  - {name: main, image: none, command: [sh, -c, 'exec sleep 3600.$mark']}
EOF
  check "create $pod" 0 kubectl apply -f "$tmp/$pod.yaml"
  poll "$pod runs" 120 Running phase "$pod"
  # a condition of a controller's (a readiness gate's), added after the agent's copy was taken
  check "$pod: a controller's condition" 0 kubectl patch pod "$pod" --subresource=status --type=strategic \
    -p '{"status": {"conditions": [{"type": "example.com/ready", "status": "True", "reason": "Checked"}]}}'
  poll "$pod: it is there" 60 "True Checked" condition "$pod" example.com/ready
done

# ---- a node's write from an older copy keeps it; an admin's replaces the status whole ------------
# its copy holds an older value of the controller's condition, which must not come back
check "the node's stale write" 0 status_write stale "$tmp/n1.token" \
  ', {"type": "example.com/ready", "status": "False", "reason": "OlderValue"}'

expect_in "the node's stale write: 200" "$tmp/out" "200"
# the pod as that write stored it (the agent may write its own conditions again right after)
cp "$tmp/patch" "$tmp/out"
/usr/bin/python3 -c '
import json, sys
c = {x["type"]: x for x in json.load(open(sys.argv[1]))["status"].get("conditions", [])}
for t in ("example.com/ready", "Ready"):
    print(t, c[t]["status"], c[t].get("reason", "")) if t in c else print(t, "gone")
' "$tmp/out" >"$tmp/conds" 2>&1 || true
expect_in "a node's write keeps the controller's condition, not its copy's older value" "$tmp/conds" \
  "example.com/ready True Checked"
expect_in "... and its own condition is as it wrote it" "$tmp/conds" "Ready False StaleCopy"
check "an admin's same write" 0 status_write plain "$tmp/admin.token"
expect_in "an admin's same write: 200" "$tmp/out" "200"
poll "an admin's write replaces the status whole, as in Kubernetes" 60 none condition plain example.com/ready

# ---- an eviction's DisruptionTarget through the agent's later writes ------------------------------
timeout 300 kubectl get pod stale -w -o json --output-watch-events >"$tmp/watch.json" 2>"$tmp/watch.err" &
watch_pid=$!
poll "the watch has the pod" 60 yes bash -c "grep -q '\"ADDED\"' '$tmp/watch.json' && echo yes || echo no"
token=$(cat "$tmp/admin.token")
check "evict stale" 0 curl -sS --cacert "$data/pki/ca.crt" -o "$tmp/evict" -w '%{http_code}' -X POST \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  "$base/api/v1/namespaces/default/pods/stale/eviction" \
  -d '{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "stale"}}'
expect_in "the eviction: 201" "$tmp/out" "201"
gone() { kubectl get pod stale -o name >/dev/null 2>&1 && echo there || echo gone; }
poll "the evicted pod stops and goes" 60 gone gone
poll "the watch saw it go" 60 yes bash -c "grep -q '\"DELETED\"' '$tmp/watch.json' && echo yes || echo no"
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
watch_pid=
# every version from the first with DisruptionTarget on: its condition and the controller's, and
# whether the agent wrote any of them (the container's end: a terminated state, a terminal phase)
/usr/bin/python3 -c '
import json, sys
text, dec, at, seen, after, lost = open(sys.argv[1]).read(), json.JSONDecoder(), 0, False, 0, []
while True:
    while at < len(text) and text[at].isspace():
        at += 1
    if at >= len(text):
        break
    event, at = dec.raw_decode(text, at)
    pod = event["object"]
    conds = {c["type"]: c for c in pod.get("status", {}).get("conditions", [])}
    rv = pod["metadata"]["resourceVersion"]
    if not seen and "DisruptionTarget" in conds:
        seen = True
        continue
    if not seen:
        continue
    for t in ("DisruptionTarget", "example.com/ready"):
        if t not in conds:
            lost.append(t + "@" + rv)
    states = [c.get("state", {}) for c in pod["status"].get("containerStatuses", [])]
    if any("terminated" in s for s in states) or pod["status"].get("phase") in ("Succeeded", "Failed"):
        after += 1
print("DisruptionTarget:", "seen" if seen else "never")
print("versions the agent wrote after it:", "some" if after else "none")
print("lost:", " ".join(lost) if lost else "none")
' "$tmp/watch.json" >"$tmp/versions" 2>&1 || true
expect_in "the eviction's DisruptionTarget" "$tmp/versions" "DisruptionTarget: seen"
expect_in "the agent wrote the pod's status after it" "$tmp/versions" "versions the agent wrote after it: some"
expect_in "no version after it lost a condition" "$tmp/versions" "lost: none"
finish "status-conditions"
