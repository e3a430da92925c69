#!/usr/bin/env bash
# Queues, priority and preemption end to end (docs/scheduler.md): a server and two simulated
# agents, each with 8 GPUs in two NVLink islands of 4. n1 is full of eight 1-GPU pods of priority
# 0, n2 holds one 8-GPU pod of priority 50; a 4-GPU training pod of priority 100 preempts on n1,
# where four victims free a whole NVLink island (not on n2, where one victim of higher priority
# would do), gets exactly those GPUs, was nominated there, and the victims were evicted as
# kube-scheduler does it (DisruptionTarget PreemptionByScheduler, graceful delete, Preempted
# Event). A disruption budget steers the victims: a guarded pod of priority 0 stays, one of
# priority 50 that no budget guards goes. Then two queues with guarantees: team-a borrows idle GPUs, team-b submits and takes
# its guarantee back (reclaim); a queue that may not borrow holds back a pod beyond its guarantee
# and says what would unblock it (the condition, the Event, `xpool why`); Queue and PriorityClass
# objects through stock kubectl.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/server
server_pid= a1_pid= a2_pid= watch_pid=
export KUBECONFIG=$data/admin.kubeconfig

cleanup() {
  for pid in $watch_pid $a1_pid $a2_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $watch_pid $a1_pid $a2_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
url=
for _ in $(seq 600); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
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
  poll "$n is Ready" 60 True kubectl get node "$n" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
  check "label $n" 0 kubectl label node "$n" slot="$n"
done

pod() { # name gpus priority|class [node] [queue]: a pod that sleeps on its GPUs
  local prio="priority: $3"
  [[ "$3" =~ ^[0-9]+$ ]] || prio="priorityClassName: $3"
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {app: q37${5:+, xpool.io/queue: $5}}
spec:
  $prio
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

# ---- PriorityClasses with stock kubectl (its typed create sends protobuf) -----------------------
check "kubectl create priorityclass" 0 kubectl create priorityclass training --value=1000 --description="training jobs"
cat >"$tmp/pc.yaml" <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 10
preemptionPolicy: Never
description: batch work that waits rather than evicts
YAML
check "kubectl apply a PriorityClass" 0 kubectl apply -f "$tmp/pc.yaml"
check "kubectl get priorityclasses" 0 kubectl get priorityclasses
expect_in "the table's columns" "$tmp/out" "NAME                      VALUE        GLOBAL-DEFAULT   AGE"
expect_in "ours" "$tmp/out" "training                  1000         false"
# the built-in classes, as kube-apiserver creates them at start; they cannot be deleted
expect_in "system-node-critical" "$tmp/out" "system-node-critical      2000001000   false"
expect_in "system-cluster-critical" "$tmp/out" "system-cluster-critical   2000000000   false"
check "a built-in class cannot be deleted" 1 kubectl delete pc system-node-critical
expect_in "Kubernetes' words" "$tmp/err" 'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted'
check "kubectl get pc batch" 0 kubectl get pc batch -o 'jsonpath={.value} {.preemptionPolicy}'
expect_in "read back" "$tmp/out" "10 Never"
pod nope 1 no-such-class >"$tmp/nope.yaml"
check "a pod of a class that does not exist" 1 kubectl apply -f "$tmp/nope.yaml"
expect_in "Kubernetes' refusal" "$tmp/err" 'pods "nope" is forbidden: no PriorityClass with name no-such-class was found'

# ---- preemption: the node whose eviction frees an NVLink island ------------------------------
{
  for i in 0 1 2 3 4 5 6 7; do pod "low-$i" 1 0 n1; done
  pod mid 8 50 n2
} >"$tmp/fill.yaml"
check "fill both nodes" 0 kubectl apply -f "$tmp/fill.yaml"
poll "all nine run" 60 9 bash -c "kubectl get pods -l app=q37 --field-selector=status.phase=Running -o name | wc -l"
declare -A before
for i in 0 1 2 3 4 5 6 7; do before[low-$i]=$(gpus_of "low-$i"); done
kubectl get pods -w -o json >"$tmp/watch.json" 2>/dev/null &
watch_pid=$!
# the watch must have listed the pods before train comes, or it may start after the victims' updates
poll "the watch listed the pods" 60 yes bash -c "grep -q '\"name\": \"mid\"' '$tmp/watch.json' && echo yes"
pod train 4 training | kubectl apply -f - >/dev/null
poll "train runs" 60 Running kubectl get pod train -o 'jsonpath={.status.phase}'
check "train's node" 0 kubectl get pod train -o 'jsonpath={.spec.nodeName} {.status.nominatedNodeName} {.spec.priority}'
expect_in "train was nominated on n1 and runs there, at its class's priority" "$tmp/out" "n1 n1 1000"
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
poll "no pods left" 60 0 bash -c "kubectl get pods -o name | wc -l"

# ---- preemption steered by a disruption budget: the guarded pod of priority 0 stays -----------
{
  pod guarded 8 0 n1 | sed 's/{app: q37/{app: q37, guard: "yes"/'
  pod spare 8 50 n2
} >"$tmp/fill.yaml"
check "fill both nodes" 0 kubectl apply -f "$tmp/fill.yaml"
check "its budget" 0 kubectl create pdb guard --selector=guard=yes --max-unavailable=0
poll "both run" 60 2 bash -c "kubectl get pods -l app=q37 --field-selector=status.phase=Running -o name | wc -l"
poll "the budget allows no disruption" 60 "1 0" kubectl get pdb guard -o 'jsonpath={.status.currentHealthy} {.status.disruptionsAllowed}'
pod big 8 training | kubectl apply -f - >/dev/null
poll "big runs" 60 Running kubectl get pod big -o 'jsonpath={.status.phase}'
check "big's node" 0 kubectl get pod big -o 'jsonpath={.spec.nodeName}'
expect_in "big took n2, whose pod no budget guards" "$tmp/out" "n2"
check "the guarded pod" 0 kubectl get pod guarded -o 'jsonpath={.status.phase}'
expect_in "the guarded pod of priority 0 still runs" "$tmp/out" "Running"
check "clean up" 0 kubectl delete pods -l app=q37 --grace-period 0 --wait=false
check "the budget goes" 0 kubectl delete pdb guard
poll "no pods left" 60 0 bash -c "kubectl get pods -o name | wc -l"

# ---- queues: team-a borrows what team-b leaves idle, team-b takes its guarantee back ------------
cat >"$tmp/queues.yaml" <<'YAML'
apiVersion: scheduling.xpool.io/v1alpha1
kind: Queue
metadata: {name: team-a}
spec:
  resources:
    nvidia.com/gpu: {guaranteed: "8", limit: "16"}
---
apiVersion: scheduling.xpool.io/v1alpha1
kind: Queue
metadata: {name: team-b}
spec:
  weight: 2
  resources:
    nvidia.com/gpu: {guaranteed: "8"}
YAML
check "kubectl apply two Queues" 0 kubectl apply -f "$tmp/queues.yaml"
check "a Queue's defaults" 0 kubectl get queue team-a -o 'jsonpath={.spec.weight} {.spec.reclaimable}'
expect_in "weight 1, reclaimable" "$tmp/out" "1 true"
check "a Queue with a limit below its guarantee" 1 kubectl apply -f - <<'YAML'
apiVersion: scheduling.xpool.io/v1alpha1
kind: Queue
metadata: {name: bad}
spec:
  resources:
    nvidia.com/gpu: {guaranteed: "8", limit: "4"}
YAML
expect_in "says what and where" "$tmp/err" 'spec.resources[nvidia.com/gpu].limit: Invalid value: must be greater than or equal to the guaranteed quota'
for i in $(seq 0 15); do pod "a-$i" 1 0 "" team-a; done >"$tmp/team-a.yaml"
check "team-a submits 16 one-GPU pods" 0 kubectl apply -f "$tmp/team-a.yaml"
poll "all 16 run: team-a borrows team-b's idle 8" 60 16 bash -c "kubectl get pods -l xpool.io/queue=team-a --field-selector=status.phase=Running -o name | wc -l"
poll "team-a's status" 60 "16 8" kubectl get queue team-a -o 'jsonpath={.status.allocated.nvidia\.com/gpu} {.status.borrowed.nvidia\.com/gpu}'
check "kubectl get queues" 0 kubectl get queues
expect_in "the table's columns" "$tmp/out" "NAME     PARENT   WEIGHT   GUARANTEED         ALLOCATED           BORROWED           PENDING   AGE"
expect_in "team-a's row" "$tmp/out" "team-a   <none>   1        nvidia.com/gpu=8   nvidia.com/gpu=16   nvidia.com/gpu=8   <none>"
expect_in "team-b's row" "$tmp/out" "team-b   <none>   2        nvidia.com/gpu=8   <none>              <none>             <none>"
for i in 0 1 2 3; do pod "b-$i" 1 0 "" team-b; done >"$tmp/team-b.yaml"
check "team-b submits 4" 0 kubectl apply -f "$tmp/team-b.yaml"
poll "team-b's 4 run: reclaimed from team-a" 60 4 bash -c "kubectl get pods -l xpool.io/queue=team-b --field-selector=status.phase=Running -o name | wc -l"
poll "team-a keeps its fair share of 12" 60 12 bash -c "kubectl get pods -l xpool.io/queue=team-a -o name | wc -l"
poll "team-a's status after the reclaim" 60 "12 4" kubectl get queue team-a -o 'jsonpath={.status.allocated.nvidia\.com/gpu} {.status.borrowed.nvidia\.com/gpu}'
poll "team-b's status" 60 "4 0" kubectl get queue team-b -o 'jsonpath={.status.allocated.nvidia\.com/gpu} {.status.borrowed.nvidia\.com/gpu}'

# ---- a queue that may not borrow: its guarantee holds the pod back, and says what unblocks it ----
cat >"$tmp/steady.yaml" <<'YAML'
apiVersion: scheduling.xpool.io/v1alpha1
kind: Queue
metadata: {name: steady}
spec:
  reclaimable: false
  resources:
    nvidia.com/gpu: {guaranteed: "1"}
YAML
check "kubectl apply a Queue that may not borrow" 0 kubectl apply -f "$tmp/steady.yaml"
pod steady-0 2 0 "" steady >"$tmp/steady-0.yaml"
check "a pod asking more than steady's guarantee" 0 kubectl apply -f "$tmp/steady-0.yaml"
want='queue "steady" is not reclaimable and would exceed its guaranteed nvidia.com/gpu: 0 allocated + 2 requested > 1'
# steady holds nothing: nothing it could free would make room (issue 19: it said "1 freed")
unblock='to unblock: queue "steady" has nothing allocated to free: its guaranteed nvidia.com/gpu raised to 2, or the queue made reclaimable'
poll "steady-0's PodScheduled message" 60 "$want" kubectl get pod steady-0 -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'
# the FailedScheduling Event: the message, then xpool's lines joined by " | "
event_says() { # pod text (not poll's own variables: it runs this)
  kubectl get events -o "jsonpath={range .items[?(@.involvedObject.name==\"$1\")]}{.reason}: {.message}{\"\\n\"}{end}" |
    grep -m1 -cxF -- "FailedScheduling: $2"
}
poll "its FailedScheduling Event says what would unblock it" 60 1 event_says steady-0 "$want | $unblock"
check "xpool why steady-0" 0 "$xpool" why steady-0
expect_exact "xpool why steady-0, word for word" "$tmp/out" "pod default/steady-0 is pending: $want
  $unblock"

finish "queues and preemption"
