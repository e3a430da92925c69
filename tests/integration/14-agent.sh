#!/usr/bin/env bash
# xpool agent against a TLS server: two agents (different simulated devices and node tokens, one
# configured by flags with --ca-file, one by a node kubeconfig) register their Nodes and renew
# their Leases; a GPU pod that exits 3 ends Failed with exitCode 3 and saw its GPU in
# CUDA_VISIBLE_DEVICES; a `true` pod Succeeds; an agent killed with SIGKILL and restarted
# re-adopts its running container (same pid, not started again; its state kept in --state-dir,
# apart from the data directory); a deleted pod's process is
# stopped by SIGTERM within its grace, the pod removed and its logs too; SIGTERM stops an agent and leaves containers running.
# An agent started before its server waits for it and registers once it is up.
source "$(dirname "$0")/lib.sh"
# the sleeper's argument, unique to this run: other checkouts may run this test at the same time
sleeper_arg=1007.$$
data=$tmp/server
nodes=$src/examples/nodes
server_pid= a1_pid= a2_pid= a3_pid= server3_pid=
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"

cleanup() {
  for pid in $a1_pid $a2_pid $a3_pid $server_pid $server3_pid; do kill -KILL "$pid" 2>/dev/null || true; done
  pkill -KILL -f "sleep $sleeper_arg" 2>/dev/null || true
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT


"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
deadline=$((SECONDS + 15)) url=
until [[ -n "$url" ]]; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
  sleep 0.1
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
done
# n2's node kubeconfig: the admin one with n2's token
sed "s|^\([[:space:]]*token:\).*|\1 $(cat "$tmp/n2.token")|" "$data/admin.kubeconfig" >"$tmp/n2.kubeconfig"

start_a1() {
  "$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
    --node-name n1 --data-dir "$tmp/a1" --state-dir "$tmp/a1-state" --node-description "$nodes/dgx-h100.yaml" \
    --listen 127.0.0.1:0 --heartbeat 500ms --backoff 1s --pod-network host --default-runtime process >>"$tmp/a1.log" 2>&1 &
  a1_pid=$!
  diag_log "$tmp/a1.log"
}
start_a1
"$xpool" agent --kubeconfig "$tmp/n2.kubeconfig" --node-name n2 --data-dir "$tmp/a2" \
  --node-description "$nodes/ascend-8npu.yaml" --listen 127.0.0.1:0 --heartbeat 500ms \
  --pod-network host --default-runtime process >"$tmp/a2.log" 2>&1 &
a2_pid=$!
diag_log "$tmp/a2.log"

# ---- registration -------------------------------------------------------------------------------
node_ready() { "$xpool" get node "$1" -o yaml | grep -A1 'reason: AgentReady' >/dev/null; }
wait_until "n1 registers Ready" 20 node_ready n1
wait_until "n2 registers Ready" 20 node_ready n2
check "get node n1" 0 "$xpool" get node n1 -o yaml
expect_in "n1 GPUs" "$tmp/out" "nvidia.com/gpu: \"8\""
expect_in "n1 product label" "$tmp/out" "xpool.io/gpu.product: NVIDIA-H100-80GB-HBM3"
expect_in "n1 inventory" "$tmp/out" "simulated: true"
expect_in "n1 pods" "$tmp/out" "pods: \"110\""
expect_in "n1 log port" "$tmp/out" "kubeletEndpoint:"
expect_in "n1 InternalIP" "$tmp/out" "address: 127.0.0.1"
check "get node n2" 0 "$xpool" get node n2 -o yaml
expect_in "n2 NPUs" "$tmp/out" "xpool.io/npu.count: \"8\""

# ---- leases renew -------------------------------------------------------------------------------
renew_time() { "$xpool" get lease "$1" -n kube-node-lease -o yaml 2>&1 | sed -n 's/.*renewTime: //p'; }
t1=$(renew_time n1) t2=$(renew_time n2)
# the agents create their Leases before they report Ready
[[ -n "$t1" && -n "$t2" ]] || { echo "FAIL no leases: '$t1' '$t2'"; failures=$((failures + 1)); }
lease_moved() { [[ "$(renew_time "$1")" != "$2" ]]; }
wait_until "n1's lease renews" 5 lease_moved n1 "$t1"
wait_until "n2's lease renews" 5 lease_moved n2 "$t2"

# ---- pods run to their end ----------------------------------------------------------------------
cat >"$tmp/pods.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: exit3}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: none
    command: ["sh", "-c", "echo gpus=\$CUDA_VISIBLE_DEVICES; exit 3"]
    resources: {limits: {nvidia.com/gpu: "1"}}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: none, command: ["true"]}
---
apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 30
  containers:
  - {name: main, image: none, command: ["sleep", "$sleeper_arg"]}
YAML
check "create pods" 0 "$xpool" apply -f "$tmp/pods.yaml"
# grep, not grep -q, in these pipes: under pipefail a grep that stops at the first match makes
# xpool's next write fail (SIGPIPE) once the YAML outgrows one stdio buffer, as a pod with its
# kube-api-access volume does; the check then fails although the phase is there.
phase_is() { "$xpool" get pod "$1" -o yaml | grep "^  phase: $2\$" >/dev/null; }
wait_until "exit3 fails" 20 phase_is exit3 Failed
wait_until "done succeeds" 20 phase_is done Succeeded
wait_until "sleeper runs" 20 phase_is sleeper Running
# the Running status replaces the ContainerCreating one whole: nothing of it lingers
check "sleeper running status" 0 "$xpool" get pod sleeper -o json
expect_in "sleeper ready" "$tmp/out" '"type": "Ready"'
expect_count "no condition keeps a not-ready reason" "$tmp/out" 0 'ContainersNotReady'
expect_count "no waiting state beside the running one" "$tmp/out" 0 '"waiting"'
check "exit3 status" 0 "$xpool" get pod exit3 -o yaml
expect_in "exit3 exit code" "$tmp/out" "exitCode: 3"
expect_in "exit3 reason" "$tmp/out" "reason: Error"
expect_in "exit3 container id" "$tmp/out" "containerID: xpool://"
expect_in "exit3 on n1" "$tmp/out" "nodeName: n1"
# n1's runtime state is in its --state-dir, none in its data directory
sleeper_uid=$("$xpool" get pod sleeper -o yaml | sed -n 's/^  uid: //p')
[[ -n "$sleeper_uid" && -d "$tmp/a1-state/$sleeper_uid" && ! -e "$tmp/a1/containers" ]] ||
  { echo "FAIL the sleeper's state is not (only) in --state-dir: uid '$sleeper_uid'"; ls -A "$tmp/a1-state" "$tmp/a1"; failures=$((failures + 1)); }
grep -qE 'stdout F gpus=[0-9]' "$tmp"/a1/logs/default_exit3_*/main/0.log ||
  { echo "FAIL exit3 did not see its GPU:"; cat "$tmp"/a1/logs/default_exit3_*/main/0.log; failures=$((failures + 1)); }
check "exit3 logs through the server" 0 "$xpool" logs exit3
expect_in "exit3 logs" "$tmp/out" "gpus="
check "done status" 0 "$xpool" get pod done -o yaml
expect_in "done exit code" "$tmp/out" "exitCode: 0"
expect_in "done reason" "$tmp/out" "reason: Completed"
# a `true` ends within the status's coalescing wait: one write may carry its start and its end,
# and it still holds every time and Event
expect_in "done started at" "$tmp/out" "startedAt: "
expect_in "done finished at" "$tmp/out" "finishedAt: "
expect_in "done start time" "$tmp/out" "startTime: "
# PodReadyToStartContainers, Initialized, Ready, ContainersReady and PodScheduled, each with its time
expect_count "done conditions with their times" "$tmp/out" 5 "lastTransitionTime: "
done_events() {
  "$xpool" get events --field-selector involvedObject.name=done -o yaml >"$tmp/events" 2>&1 &&
    grep -q "Started container main" "$tmp/events" && grep -q "reason: Created" "$tmp/events"
}
wait_until "done's Created and Started events" 10 done_events

# ---- re-adoption after SIGKILL ------------------------------------------------------------------
pid=$(pgrep -f "sleep $sleeper_arg" || true)
[[ $(wc -w <<<"$pid") -eq 1 ]] || { echo "FAIL one sleeper expected: '$pid'"; failures=$((failures + 1)); }
kill -KILL "$a1_pid"; wait "$a1_pid" 2>/dev/null || true
start_a1
wait_until "n1 comes back" 20 grep -q "node n1 registered" "$tmp/a1.log"
sleep 2
now=$(pgrep -f "sleep $sleeper_arg" || true)
[[ -n "$pid" && "$now" == "$pid" ]] ||
  { echo "FAIL the sleeper was not re-adopted: '$pid' then '$now'"; failures=$((failures + 1)); }
[[ ! -e $(echo "$tmp"/a1/logs/default_sleeper_*/main)/1.log ]] ||
  { echo "FAIL the sleeper was started a second time"; failures=$((failures + 1)); }
# the finished pods are not run again by the new agent
check "exit3 after the restart" 0 "$xpool" get pod exit3 -o yaml
expect_in "exit3 still failed" "$tmp/out" "phase: Failed"
expect_in "exit3 not restarted" "$tmp/out" "restartCount: 0"
[[ $(ls "$tmp"/a1/logs/default_exit3_*/main/ | wc -l) -le 2 && ! -e $(echo "$tmp"/a1/logs/default_exit3_*/main)/1.log ]] ||
  { echo "FAIL exit3 ran again:"; ls "$tmp"/a1/logs/default_exit3_*/main/; failures=$((failures + 1)); }
check "sleeper status" 0 "$xpool" get pod sleeper -o yaml
expect_in "sleeper still running" "$tmp/out" "phase: Running"
expect_in "sleeper not restarted" "$tmp/out" "restartCount: 0"

# ---- a burst of short pods: each exit is seen, even one that comes before its start is back ----
for i in $(seq 1 20); do
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: short-%d}\nspec:\n  nodeName: n1\n  restartPolicy: Never\n  containers:\n  - {name: main, image: none, command: ["true"]}\n' "$i"
done >"$tmp/short.yaml"
check "create 20 short pods" 0 "$xpool" apply -f "$tmp/short.yaml"
all_succeeded() { [[ $("$xpool" get pods | grep -c '^short-.* Completed ') -eq 20 ]]; }
wait_until "20 short pods all succeed" 20 all_succeeded
check "delete the short pods" 0 "$xpool" delete -f "$tmp/short.yaml"

# ---- deletion -----------------------------------------------------------------------------------
check "delete sleeper" 0 "$xpool" delete pod sleeper
gone() { ! "$xpool" get pod sleeper >/dev/null 2>&1 && ! pgrep -f "sleep $sleeper_arg"; }
# the grace is 30 s: gone well before means SIGTERM stopped it
wait_until "the deleted pod's process stops on SIGTERM and the pod goes" 15 gone
logs_gone() { ! compgen -G "$tmp/a1/logs/default_sleeper_*" >/dev/null; }
wait_until "the deleted pod's logs go" 5 logs_gone

# ---- SIGTERM stops an agent ---------------------------------------------------------------------
kill -TERM "$a2_pid" 2>/dev/null || true
deadline=$((SECONDS + 10))
while kill -0 "$a2_pid" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do sleep 0.1; done
if kill -0 "$a2_pid" 2>/dev/null; then
  echo "FAIL the agent did not stop on SIGTERM"; failures=$((failures + 1))
else
  wait "$a2_pid" || { echo "FAIL the agent exited $? on SIGTERM:"; cat "$tmp/a2.log"; failures=$((failures + 1)); }
fi
a2_pid=

# ---- an agent started before its server waits for it ------------------------------------------
data3=$tmp/server3
"$xpool" token create --node n3 --data-dir "$data3" >"$tmp/n3.token" 2>/dev/null
port3=$(port_before_listener)
"$xpool" agent --server "http://127.0.0.1:$port3" --token-file "$tmp/n3.token" --node-name n3 \
  --data-dir "$tmp/a3" --listen 127.0.0.1:0 --heartbeat 500ms --pod-network host --default-runtime process >"$tmp/a3.log" 2>&1 &
a3_pid=$!
diag_log "$tmp/a3.log"
waiting() { grep -q "cannot reach the xpool server.*trying again in" "$tmp/a3.log"; }
wait_until "the early agent says it waits for the server" 10 waiting
kill -0 "$a3_pid" 2>/dev/null || { echo "FAIL the early agent gave up:"; cat "$tmp/a3.log"; failures=$((failures + 1)); }
"$xpool" server --listen "127.0.0.1:$port3" --no-tls --data-dir "$data3" >"$tmp/server3.log" 2>&1 &
server3_pid=$!
diag_log "$tmp/server3.log"
n3_ready() { KUBECONFIG=$data3/admin.kubeconfig "$xpool" get node n3 -o yaml | grep 'reason: AgentReady' >/dev/null; }
wait_until "the early agent registers once the server is up" 20 n3_ready
kill -TERM "$a3_pid" 2>/dev/null; wait "$a3_pid" 2>/dev/null || true
a3_pid=
# and one stopped while it waits exits at once, and cleanly
"$xpool" agent --server "http://127.0.0.1:1" --token-file "$tmp/n3.token" --node-name n4 \
  --data-dir "$tmp/a4" --listen 127.0.0.1:0 --pod-network host --default-runtime process >"$tmp/a4.log" 2>&1 &
a3_pid=$!
diag_log "$tmp/a4.log"
waiting4() { grep -q "trying again in" "$tmp/a4.log"; }
wait_until "the agent without a server waits" 10 waiting4
kill -TERM "$a3_pid"
status=0; wait "$a3_pid" || status=$?
a3_pid=
[[ $status -eq 0 ]] || { echo "FAIL SIGTERM while waiting: exit $status"; cat "$tmp/a4.log"; failures=$((failures + 1)); }
expect_in "says it stopped before registering" "$tmp/a4.log" "stopped before the Node was registered"

finish agent
