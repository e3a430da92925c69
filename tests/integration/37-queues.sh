#!/usr/bin/env bash
# Queues, priority and preemption end to end (docs/scheduler.md): a server and two simulated
# agents, each with 8 GPUs in two NVLink islands of 4. n1 is full of eight 1-GPU pods of priority
# 0, n2 holds one 8-GPU pod of priority 50; a 4-GPU training pod of priority 100 preempts on n1,
# where four victims free a whole NVLink island (not on n2, where one victim of higher priority
# would do), gets exactly those GPUs, was nominated there, and the victims were evicted as
# kube-scheduler does it (DisruptionTarget PreemptionByScheduler, graceful delete, Preempted
# Event). Then two queues with guarantees: team-a borrows idle GPUs, team-b submits and takes
# its guarantee back (reclaim); Queue and PriorityClass objects through stock kubectl.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/server
server_pid= a1_pid= a2_pid= watch_pid=
export KUBECONFIG=$data/admin.kubeconfig

cleanup() {
  for pid in $watch_pid $a1_pid $a2_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $watch_pid $a1_pid $a2_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
url=
for _ in $(seq 150); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log")
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
diag_cluster "$KUBECONFIG"
for n in n1 n2; do
  "$xpool" agent --server "$url" --token-file "$tmp/$n.token" --ca-file "$data/pki/ca.crt" \
    --node-name "$n" --data-dir "$tmp/agent-$n" --node-description "$src/tests/data/nodes/islands.yaml" \
    --listen 127.0.0.1:0 --pod-network host --default-runtime process --no-metrics >"$tmp/$n.log" 2>&1 &
  eval "a${n#n}_pid=$!"
  diag_log "$tmp/$n.log"
done
for n in n1 n2; do
  poll "$n is Ready" 20 True kubectl get node "$n" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
  check "label $n" 0 kubectl label node "$n" slot="$n"
done

pod() { # name gpus priority [node] [queue]: a pod that sleeps on its GPUs
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {app: q37${5:+, xpool.io/queue: $5}}
spec:
  priority: $3
  terminationGracePeriodSeconds: 5
  restartPolicy: Never
  ${4:+nodeSelector: {slot: $4\}}
  containers:
  - name: main
    image: busybox
    command: [sleep, "600"]
    resources: {limits: {nvidia.com/gpu: $2}, requests: {cpu: 10m, memory: 16Mi}}
---
YAML
}
# the GPU indices of a pod's placement, sorted, joined by ","
gpus_of() {
  kubectl get pod "$1" -o 'jsonpath={.metadata.annotations.xpool\.io/placement}' |
    /usr/bin/python3 -c 'import json,sys; print(",".join(str(d["index"]) for d in sorted(json.load(sys.stdin)["devices"], key=lambda d: d["index"])))'
}

# ---- preemption: the node whose eviction frees an NVLink island ------------------------------
{
  for i in 0 1 2 3 4 5 6 7; do pod "low-$i" 1 0 n1; done
  pod mid 8 50 n2
} >"$tmp/fill.yaml"
check "fill both nodes" 0 kubectl apply -f "$tmp/fill.yaml"
poll "all nine run" 30 9 bash -c "kubectl get pods -l app=q37 --field-selector=status.phase=Running -o name | wc -l"
declare -A before
for i in 0 1 2 3 4 5 6 7; do before[low-$i]=$(gpus_of "low-$i"); done
kubectl get pods -w -o json >"$tmp/watch.json" 2>/dev/null &
watch_pid=$!
pod train 4 100 | kubectl apply -f - >/dev/null
poll "train runs" 30 Running kubectl get pod train -o 'jsonpath={.status.phase}'
check "train's node" 0 kubectl get pod train -o 'jsonpath={.spec.nodeName} {.status.nominatedNodeName}'
expect_in "train was nominated on n1 and runs there" "$tmp/out" "n1 n1"
check "mid still runs" 0 kubectl get pod mid -o 'jsonpath={.status.phase}'
expect_in "the pod of priority 50 was spared" "$tmp/out" "Running"
gone=
for i in 0 1 2 3 4 5 6 7; do
  kubectl get pod "low-$i" >/dev/null 2>&1 || gone="$gone${gone:+,}${before[low-$i]}"
done
train_gpus=$(gpus_of train)
[[ "$gone" == "0,1,2,3" || "$gone" == "4,5,6,7" ]] ||
  { echo "FAIL the victims' GPUs are not one NVLink island: $gone"; failures=$((failures + 1)); }
[[ "$train_gpus" == "$gone" ]] ||
  { echo "FAIL train got $train_gpus, the victims freed $gone"; failures=$((failures + 1)); }
check "events" 0 kubectl get events -o 'jsonpath={range .items[?(@.reason=="Preempted")]}{.involvedObject.name} {.message}{"\n"}{end}'
expect_count "a Preempted Event per victim" "$tmp/out" 4 "Preempted by pod $(kubectl get pod train -o 'jsonpath={.metadata.uid}') on node n1"
kill -TERM "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
watch_pid=
expect_in "the victims' DisruptionTarget condition" "$tmp/watch.json" '"reason": "PreemptionByScheduler"'
expect_in "the condition's message" "$tmp/watch.json" 'preempting to accommodate a higher priority pod'
check "clean up" 0 kubectl delete pods -l app=q37 --grace-period 0 --wait=false
poll "no pods left" 30 0 bash -c "kubectl get pods -o name | wc -l"

finish "queues and preemption"
