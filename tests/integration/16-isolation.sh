#!/usr/bin/env bash
# One server and three node agents on loopback with simulated, heterogeneous devices (a GPU-only
# node, an NPU-only node, a node with both): the seed's pod lands on the node with both; its
# container's cgroup (v1) holds its CPU quota, memory limit, cpuset and device list; from inside
# it its own GPU's device node opens and the other GPU's fails with EPERM; logs with --tail;
# restartPolicy OnFailure restarts with a (short) back-off; delete with a grace period delivers
# SIGTERM to a trap first; an agent killed with SIGKILL and restarted re-adopts its running
# container (same pid, not started twice). Needs root and cgroup v1 (else exit 77).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (device nodes, cgroups)"; exit 77; }
[[ -d /sys/fs/cgroup/cpu && -d /sys/fs/cgroup/memory && -d /sys/fs/cgroup/devices &&
   -d /sys/fs/cgroup/cpuset ]] ||
  { echo "SKIP: needs cgroup v1 with the cpu, memory, cpuset and devices controllers"; exit 77; }
probe=/sys/fs/cgroup/devices/xpool-probe-$$
mkdir "$probe" 2>/dev/null && rmdir "$probe" ||
  { echo "SKIP: cannot create cgroups under /sys/fs/cgroup/devices (read-only here)"; exit 77; }

data=$tmp/data
# node descriptions take device nodes below /dev only: a scratch directory there
dev=$(mktemp -d /dev/xpool-test.XXXXXX)
server_pid=
declare -A agent_pid=()

stop_all() {
  local n
  for n in "${!agent_pid[@]}"; do kill -KILL "${agent_pid[$n]}" 2>/dev/null || true; done
  [[ -n "$server_pid" ]] && kill -KILL "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap 'stop_all; release_tmp; rm -rf "$tmp" "$dev"' EXIT

# the simulated devices' nodes: real character devices, so the devices cgroup can tell them apart
# (opened for writing: reading kmsg needs CAP_SYSLOG, which pods do not hold)
mknod "$dev/gpu-a" c 1 11    # the GPU the seed's pod gets on node "both"
mknod "$dev/gpu-b" c 10 200  # the other GPU of node "both"
mknod "$dev/npu" c 1 3

cat >"$tmp/gpu-only.yaml" <<EOF
devices:
- {id: sim-gpu-9, kind: gpu, vendor: NVIDIA, model: NVIDIA H100 80GB HBM3, resourceName: nvidia.com/gpu, memoryBytes: 85520809984, numaNode: 0}
EOF
cat >"$tmp/npu-only.yaml" <<EOF
devices:
- {kind: npu, count: 2, vendor: Example, model: Example NPU, resourceName: vendor.com/npu, memoryBytes: 34359738368, numaNode: [0, 0]}
EOF
cat >"$tmp/both.yaml" <<EOF
devices:
- {id: sim-gpu-a, kind: gpu, vendor: NVIDIA, model: NVIDIA H100 80GB HBM3, resourceName: nvidia.com/gpu, memoryBytes: 85520809984, numaNode: 0, deviceNodes: [$dev/gpu-a]}
- {id: sim-gpu-b, kind: gpu, vendor: NVIDIA, model: NVIDIA H100 80GB HBM3, resourceName: nvidia.com/gpu, memoryBytes: 85520809984, numaNode: 0, deviceNodes: [$dev/gpu-b]}
- {kind: npu, count: 2, vendor: Example, model: Example NPU, resourceName: vendor.com/npu, memoryBytes: 34359738368, numaNode: [0, 0], deviceNodes: [$dev/npu]}
links:
- {devices: [sim-npu-0, sim-npu-1], level: NVLink, nvlinks: 1, bandwidthGBps: 56}
EOF

# the node tokens, before the server starts (it reads new ones within a second)
mkdir -p "$data"
chmod 700 "$data"
for n in gpu-only npu-only both; do
  "$xpool" token create --node "$n" --data-dir "$data" >"$tmp/$n.token" 2>/dev/null
done

# the server
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
url=
for _ in $(seq 600); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not come up:"; cat "$tmp/server.log"; exit 1; }
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"

start_agent() { # node: starts (or restarts) the agent of node with its own token
  local n=$1
  "$xpool" agent --server "$url" --token "$(cat "$tmp/$n.token")" --ca-file "$data/pki/ca.crt" \
    --node-name "$n" --data-dir "$tmp/agent-$n" --node-description "$tmp/$n.yaml" \
    --listen 127.0.0.1:0 --backoff 300ms --pod-network host --default-runtime process >>"$tmp/agent-$n.log" 2>&1 &
  agent_pid[$n]=$!
  diag_log "$tmp/agent-$n.log"
}

ready() { kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'; }
phase() { kubectl get pod "$1" -o 'jsonpath={.status.phase}'; }

for n in gpu-only npu-only both; do start_agent "$n"; done
for n in gpu-only npu-only both; do poll "node $n Ready" 60 True ready "$n"; done
[[ $failures -eq 0 ]] || { for n in gpu-only npu-only both; do echo "== agent $n:"; cat "$tmp/agent-$n.log"; done; exit 1; }

# the seed's pod, with limits to see in its cgroup and a command that tries both GPUs' nodes, then
# says so on the same stream as the tries (the test reads its log once "tried both" is in it: a
# look after the first "opened" could come before the second try's error), and runs on until the
# test deletes it (with 30 s it could end before the checks of a running pod at load)
cat >"$tmp/seed.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: seed}
spec:
  restartPolicy: Never
  containers:
  - name: trainer
    command: [sh, -c, 'env | grep VISIBLE_DEVICES= | sort; for d in $dev/gpu-a $dev/gpu-b; do true >>\$d && echo "opened \$d"; done 2>&1; echo tried both; exec sleep 600']
    resources:
      limits: {nvidia.com/gpu: 1, vendor.com/npu: 2, cpu: 1500m, memory: 256Mi}
EOF
check "apply the seed's pod" 0 kubectl apply -f "$tmp/seed.yaml"
poll "the seed's pod runs" 60 Running phase seed
check "where it landed" 0 kubectl get pod seed -o 'jsonpath={.spec.nodeName}'
expect_in "on the node with both" "$tmp/out" both
poll "its output" 60 yes sh -c "kubectl logs seed | grep -q 'tried both' && echo yes"
check "its logs" 0 kubectl logs seed
cp "$tmp/out" "$tmp/seed.out"
gpu=$(grep '^XPOOL_VISIBLE_DEVICES=' "$tmp/seed.out" | grep -o 'sim-gpu-[ab]' || true)
[[ -n "$gpu" ]] || { echo "FAIL no GPU in XPOOL_VISIBLE_DEVICES:"; cat "$tmp/seed.out"; failures=$((failures + 1)); }
own=$dev/gpu-${gpu#sim-gpu-}
other=$dev/gpu-a; [[ "$own" == "$dev/gpu-a" ]] && other=$dev/gpu-b
expect_in "its own GPU's node opens" "$tmp/seed.out" "opened $own"
not_in() { if grep -qF -- "$3" "$2"; then echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1)); fi; }
not_in "the other GPU's node does not" "$tmp/seed.out" "opened $other"
expect_in "... with EPERM" "$tmp/seed.out" "$other"
expect_in "... Operation not permitted" "$tmp/seed.out" "Operation not permitted"

# its cgroup (v1): xpool/agent-<key>/<uid>/<container> in each controller
uid=$(kubectl get pod seed -o 'jsonpath={.metadata.uid}')
cg=$(cd /sys/fs/cgroup/cpu && echo xpool/agent-*/"$uid"/trainer)
[[ -d /sys/fs/cgroup/cpu/$cg ]] || { echo "FAIL no cgroup /sys/fs/cgroup/cpu/$cg"; failures=$((failures + 1)); }
check "cpu quota" 0 cat "/sys/fs/cgroup/cpu/$cg/cpu.cfs_quota_us"
expect_in "1500m of a 100 ms period" "$tmp/out" 150000
check "memory limit" 0 cat "/sys/fs/cgroup/memory/$cg/memory.limit_in_bytes"
expect_in "256Mi" "$tmp/out" 268435456
# a cpuset group only where the placement pins CPUs: an unpinned container stays in its
# parent's cpuset, and starts without making one (docs/agent.md, "Cgroups")
check "placement" 0 kubectl get pod seed -o 'jsonpath={.metadata.annotations.xpool\.io/placement}'
if grep -q '"cpus":"[0-9]' "$tmp/out"; then
  check "cpuset" 0 cat "/sys/fs/cgroup/cpuset/$cg/cpuset.cpus"
  [[ -s "$tmp/out" ]] || { echo "FAIL empty cpuset.cpus"; failures=$((failures + 1)); }
elif [[ -e /sys/fs/cgroup/cpuset/$cg ]]; then
  echo "FAIL an unpinned container has the cpuset group /sys/fs/cgroup/cpuset/$cg"; failures=$((failures + 1))
fi
check "devices.list" 0 cat "/sys/fs/cgroup/devices/$cg/devices.list"
cp "$tmp/out" "$tmp/devices.list"
expect_in "its GPU's node" "$tmp/devices.list" "c $([[ $own == $dev/gpu-a ]] && echo 1:11 || echo 10:200) rwm"
not_in "not the other GPU's" "$tmp/devices.list" "c $([[ $own == $dev/gpu-a ]] && echo 10:200 || echo 1:11) rwm"
expect_in "the NPUs' node" "$tmp/devices.list" "c 1:3 rwm"
not_in "not everything" "$tmp/devices.list" "a *:* rwm"
expect_in "pseudo terminals, any minor" "$tmp/devices.list" "c 136:* rwm"

# agent SIGKILL + restart: the running container is adopted, not started again
procs_before=$(sort "/sys/fs/cgroup/cpu/$cg/cgroup.procs" | tr '\n' ' ')
cid_before=$(kubectl get pod seed -o 'jsonpath={.status.containerStatuses[0].containerID}')
kill -KILL "${agent_pid[both]}"; wait "${agent_pid[both]}" 2>/dev/null || true
sleep 1
start_agent both
sleep 3
check "still running after the agent's restart" 0 kubectl get pod seed -o 'jsonpath={.status.phase} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].containerID}'
expect_in "same container, no restart" "$tmp/out" "Running 0 $cid_before"
procs_after=$(sort "/sys/fs/cgroup/cpu/$cg/cgroup.procs" | tr '\n' ' ')
[[ -n "$procs_before" && "$procs_after" == "$procs_before" ]] ||
  { echo "FAIL the container's processes changed: '$procs_before' -> '$procs_after'"; failures=$((failures + 1)); }
check "kubectl logs after the restart" 0 kubectl logs seed
expect_count "the output once: not started twice" "$tmp/out" 1 "XPOOL_VISIBLE_DEVICES="

# logs --tail
cat >"$tmp/lines.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: lines}
spec:
  restartPolicy: Never
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [gpu-only]}]}]}}}
  containers:
  - {name: c, command: [sh, -c, 'for i in 1 2 3 4 5 6; do echo line\$i; done']}
EOF
check "apply lines" 0 kubectl apply -f "$tmp/lines.yaml"
poll "lines Succeeded" 60 Succeeded phase lines
check "logs --tail 2" 0 kubectl logs lines --tail 2
[[ "$(cat "$tmp/out")" == $'line5\nline6' ]] || { echo "FAIL --tail 2:"; cat "$tmp/out"; failures=$((failures + 1)); }
# a finished pod kept (not deleted) keeps no cgroup: its container's group went at the exit, its
# pod's level once its exited container was forgotten
lines_uid=$(kubectl get pod lines -o 'jsonpath={.metadata.uid}')
for c in cpu memory cpuset devices; do
  for _ in $(seq 600); do compgen -G "/sys/fs/cgroup/$c/xpool/agent-*/$lines_uid" >/dev/null || break; sleep 0.1; done
  [[ -n "$lines_uid" ]] && ! compgen -G "/sys/fs/cgroup/$c/xpool/agent-*/$lines_uid" >/dev/null ||
    { echo "FAIL /sys/fs/cgroup/$c/xpool/agent-*/$lines_uid is left after the pod finished"; failures=$((failures + 1)); }
done

# restartPolicy OnFailure: fails twice, then succeeds; the agent's back-off is 300 ms here
cat >"$tmp/flaky.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: flaky}
spec:
  restartPolicy: OnFailure
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [npu-only]}]}]}}}
  containers:
  - name: c
    command: [sh, -c, 'date +%s%N >>$tmp/flaky-times; n=\$(cat $tmp/flaky-count 2>/dev/null || echo 0); echo \$((n+1)) >$tmp/flaky-count; echo attempt \$n; [ \$n -ge 2 ]']
EOF
check "apply flaky" 0 kubectl apply -f "$tmp/flaky.yaml"
poll "flaky Succeeded after restarts" 60 Succeeded phase flaky
check "its restarts" 0 kubectl get pod flaky -o 'jsonpath={.status.containerStatuses[0].restartCount}'
expect_in "restarted twice" "$tmp/out" 2
# as kubelet: the first restart at once, the next after the back-off (300 ms here)
mapfile -t starts <"$tmp/flaky-times"
if [[ ${#starts[@]} -ne 3 ]] || (( starts[2] - starts[1] < 300000000 )); then
  echo "FAIL the second restart did not wait for the 300 ms back-off: start times ${starts[*]}"; failures=$((failures + 1))
fi
check "the last attempt's log" 0 kubectl logs flaky
expect_in "attempt 2" "$tmp/out" "attempt 2"
check "the previous attempt's log" 0 kubectl logs flaky --previous
expect_in "attempt 1" "$tmp/out" "attempt 1"

# delete with a grace period: SIGTERM reaches the trap, which writes a line
cat >"$tmp/graceful.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 10
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [gpu-only]}]}]}}}
  containers:
  - name: c
    command: [sh, -c, 'trap "echo got SIGTERM >>$tmp/graceful.out; exit 0" TERM; echo started; while :; do sleep 0.1; done']
EOF
check "apply graceful" 0 kubectl apply -f "$tmp/graceful.yaml"
poll "graceful runs" 60 Running phase graceful
poll "graceful started" 60 started kubectl logs graceful
check "delete with a grace period" 0 kubectl delete pod graceful --grace-period 5 --wait=false
poll "the pod is gone once it stopped" 60 "" kubectl get pod graceful -o name --ignore-not-found
check "the trap ran" 0 cat "$tmp/graceful.out"
expect_in "SIGTERM first" "$tmp/out" "got SIGTERM"

check "delete the seed's pod" 0 kubectl delete pod seed --grace-period 1 --wait=false
poll "the seed's pod is gone" 60 "" kubectl get pod seed -o name --ignore-not-found
[[ $failures -eq 0 ]] || { kubectl get nodes --show-labels; kubectl get pods -o wide; kubectl describe pod flaky | tail -5; diag_state; }

# the sanitizer builds report into the daemons' output; a clean stop lets LeakSanitizer speak
for n in "${!agent_pid[@]}"; do kill -TERM "${agent_pid[$n]}" 2>/dev/null || true; done
kill -TERM "$server_pid" 2>/dev/null || true
wait 2>/dev/null || true
agent_pid=()
server_pid=
for log in "$tmp"/agent-*.log "$tmp/server.log"; do
  if grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$log"; then
    echo "FAIL sanitizer report in $(basename "$log")"; failures=$((failures + 1))
  fi
done
finish "isolation"
