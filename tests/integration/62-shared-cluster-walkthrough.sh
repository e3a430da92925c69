#!/usr/bin/env bash
# A shared cluster as its users drive it, with stock kubectl only (docs/scheduler.md, "Gangs",
# "Queues", "Priority", "Preemption"): a server and two simulated agents of 8 GPUs each (two
# NVLink islands of 4). The admin makes two team Queues, a namespace whose default queue is
# team-a, and PriorityClasses. team-a's low-priority Deployment fills all 16 GPUs (it borrows
# team-b's idle 8: `kubectl get queues` says so); team-a's gang Job that its limit cannot hold
# waits, and `kubectl describe pod` says why; team-b's high-priority gang Job (a Volcano
# PodGroup naming team-b and minResources) evicts what it needs, whole; the sweep's replacements
# wait with kube-scheduler's "preemption: ..." tail; a pod that may not preempt says so. Each
# waiting pod's `xpool why` is compared word for word (queue over its limit, minResources, no
# victims, not eligible).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/server
server_pid= a1_pid= a2_pid=
export KUBECONFIG=$data/admin.kubeconfig

cleanup() {
  for pid in $a1_pid $a2_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $a1_pid $a2_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
start_server "$data"
diag_cluster "$KUBECONFIG"
for n in n1 n2; do
  "$xpool" agent --server "$base" --token-file "$tmp/$n.token" --ca-file "$data/pki/ca.crt" \
    --node-name "$n" --data-dir "$tmp/agent-$n" --node-description "$src/tests/data/nodes/islands.yaml" \
    --listen 127.0.0.1:0 --pod-network host --default-runtime process --no-metrics >"$tmp/$n.log" 2>&1 &
  eval "a${n#n}_pid=$!"
  diag_log "$tmp/$n.log"
done
for n in n1 n2; do
  poll "$n is Ready" 60 True kubectl get node "$n" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
done
running() { # namespace selector: how many of its pods run
  kubectl -n "$1" get pods -l "$2" --field-selector=status.phase=Running -o name | wc -l
}
# prints text when `kubectl describe pod` shows it as a FailedScheduling message, up to xpool's
# explanation (its lines follow, joined by " | "); Events of one second list in no set order
describes() { # namespace pod text
  kubectl -n "$1" describe pod "$2" | sed -n 's/.*FailedScheduling .*default-scheduler  //p' |
    sed 's/ | .*//' | grep -xF -- "$3" | sed -n 1p
}

# ---- the admin: queues, a team namespace, priority classes -------------------------------------
cat >"$tmp/admin.yaml" <<'YAML'
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
  resources:
    nvidia.com/gpu: {guaranteed: "8"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: research
  labels: {xpool.io/default-queue: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: vision}
YAML
check "kubectl apply the queues and namespaces" 0 kubectl apply -f "$tmp/admin.yaml"
check "kubectl create priorityclass sweep" 0 kubectl create priorityclass sweep --value=10
check "kubectl create priorityclass training" 0 kubectl create priorityclass training --value=1000
check "kubectl create priorityclass polite" 0 kubectl create priorityclass polite --value=5000 --preemption-policy=Never
check "kubectl get queues" 0 kubectl get queues
expect_in "the queues' table" "$tmp/out" "team-a   <none>   1        nvidia.com/gpu=8"

# ---- team-a's sweep fills the cluster: it borrows team-b's idle guarantee ------------------------
cat >"$tmp/sweep.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: sweep, namespace: research}
spec:
  replicas: 16
  selector: {matchLabels: {app: sweep}}
  template:
    metadata: {labels: {app: sweep}}
    spec:
      priorityClassName: sweep
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: busybox
        command: [sleep, "600"]
        resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 10m, memory: 16Mi}}
YAML
check "team-a's sweep" 0 kubectl apply -f "$tmp/sweep.yaml"
poll "all 16 sweep pods run" 60 16 running research app=sweep
poll "team-a borrows 8" 60 "16 8" kubectl get queue team-a -o 'jsonpath={.status.allocated.nvidia\.com/gpu} {.status.borrowed.nvidia\.com/gpu}'
check "kubectl get queues" 0 kubectl get queues
expect_in "team-a's row" "$tmp/out" "team-a   <none>   1        nvidia.com/gpu=8   nvidia.com/gpu=16   nvidia.com/gpu=8   <none>"

# ---- team-a's gang Job over its limit waits, and says why ----------------------------------------
job() { # namespace name parallelism gpus class [group]: a Job whose pods form one gang
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $2, namespace: $1}
spec:
  parallelism: $3
  completions: $3
  backoffLimit: 0
  template:
    metadata:
      labels: {app: $2${6:+, xpool.io/queue: $6}}
      annotations: {scheduling.k8s.io/group-name: $2}
    spec:
      priorityClassName: $5
      restartPolicy: Never
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: busybox
        command: [sleep, "600"]
        resources: {limits: {nvidia.com/gpu: $4}, requests: {cpu: 10m, memory: 16Mi}}
YAML
}
podgroup() { # namespace name minMember [spec members]
  printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: %s, namespace: %s}\nspec: {minMember: %s%s}\n' \
    "$2" "$1" "$3" "${4:+, $4}"
}
{ podgroup research giant 2; echo ---; job research giant 2 8 training; } >"$tmp/giant.yaml"
check "team-a's gang Job" 0 kubectl apply -f "$tmp/giant.yaml"
poll "giant's 2 pods exist" 120 2 bash -c "kubectl -n research get pods -l app=giant -o name | wc -l"
giant=$(kubectl -n research get pods -l app=giant -o name | sed -n 1p | cut -d/ -f2)
want='queue "team-a" is over its limit of nvidia.com/gpu: 16 allocated + 16 requested > 16'
poll "describe: giant is over team-a's limit" 120 "$want" describes research "$giant" "$want"
check "xpool why giant" 0 "$xpool" why "$giant" -n research
expect_exact "xpool why giant, word for word" "$tmp/out" "pod research/$giant is pending: $want
  to unblock: 16 nvidia.com/gpu freed in queue \"team-a\" (its pods done or deleted), or its limit of nvidia.com/gpu raised to 32"
check "giant's podgroup" 0 kubectl -n research get podgroups.scheduling.volcano.sh giant -o 'jsonpath={.status.phase}'
expect_in "still Pending" "$tmp/out" "Pending"
check "giant goes" 0 kubectl -n research delete job giant --wait=false

# ---- team-b's gang Job of high priority: its PodGroup names team-b; minResources first -----------
{ podgroup vision train 2 'queue: team-b, minResources: {nvidia.com/gpu: "40"}'; echo ---; job vision train 2 4 training; } >"$tmp/train.yaml"
check "team-b's gang Job, asking more than the cluster has" 0 kubectl apply -f "$tmp/train.yaml"
poll "train's 2 pods exist" 120 2 bash -c "kubectl -n vision get pods -l app=train -o name | wc -l"
train=$(kubectl -n vision get pods -l app=train -o name | sed -n 1p | cut -d/ -f2)
want='gang vision/train: its minResources do not fit: 40 nvidia.com/gpu wanted, 16 in the cluster'
poll "describe: minResources do not fit" 120 "$want" describes vision "$train" "$want"
check "xpool why train" 0 "$xpool" why "$train" -n vision
expect_exact "xpool why train, word for word" "$tmp/out" "pod vision/$train is pending: $want"
poll "the sweep is untouched" 60 16 running research app=sweep
podgroup vision train 2 'queue: team-b, minResources: {nvidia.com/gpu: "8"}' >"$tmp/pg.yaml"
check "minResources fixed" 0 kubectl apply -f "$tmp/pg.yaml"
poll "train's 2 members run" 120 2 running vision app=train
check "both were nominated where they run" 0 kubectl -n vision get pods -l app=train -o 'jsonpath={range .items[*]}{.status.nominatedNodeName}={.spec.nodeName}{"\n"}{end}'
[[ $(grep -cxE 'n1=n1|n2=n2' "$tmp/out") -eq 2 ]] || { echo "FAIL the members' nominations:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "Preempted events" 0 kubectl -n research get events -o 'jsonpath={range .items[?(@.reason=="Preempted")]}{.involvedObject.name}{"\n"}{end}'
# At least the 8 the gang needs. Exactly 8 is the goal; 12, 14 and 16 were seen before the fixes of
# issue 19 at load 40 (docs/scheduler.md, "Preemption"): the count is printed for runs in a loop.
victims=$(grep -c "sweep-" "$tmp/out")
echo "62: $victims sweep pods evicted for the gang (8 needed)"
check "at least 8 victims evicted ($victims)" 0 test "$victims" -ge 8
poll "team-b's figures" 60 "8 0" kubectl get queue team-b -o 'jsonpath={.status.allocated.nvidia\.com/gpu} {.status.borrowed.nvidia\.com/gpu}'
poll "the PodGroup runs" 60 Running kubectl -n vision get podgroups.scheduling.volcano.sh train -o 'jsonpath={.status.phase}'
check "kubectl get queues" 0 kubectl get queues
expect_in "team-b's row" "$tmp/out" "team-b   <none>   1        nvidia.com/gpu=8   nvidia.com/gpu=8 "

# ---- the sweep's replacements wait: kube-scheduler's preemption tail -----------------------------
poll "8 of the sweep run" 120 8 running research app=sweep
waiting=$(kubectl -n research get pods -l app=sweep --field-selector=status.phase=Pending -o name | sed -n 1p | cut -d/ -f2)
want='0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.'
poll "describe: no victims for a sweep pod" 120 "$want" describes research "$waiting" "$want"
unblock='  2 nodes (n1, n2): Insufficient nvidia.com/gpu
  to unblock: needs 1 nvidia.com/gpu on one node; the most free on one node is 0, on 2 nodes'
check "xpool why a sweep pod" 0 "$xpool" why "$waiting" -n research
expect_exact "xpool why a sweep pod, word for word" "$tmp/out" "pod research/$waiting is pending: $want
$unblock"

# ---- a pod whose class may not preempt says so ---------------------------------------------------
cat >"$tmp/polite.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: polite, namespace: vision}
spec:
  priorityClassName: polite
  containers:
  - name: main
    image: busybox
    command: [sleep, "600"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
check "a polite pod" 0 kubectl apply -f "$tmp/polite.yaml"
check "its priority and policy" 0 kubectl -n vision get pod polite -o 'jsonpath={.spec.priority} {.spec.preemptionPolicy}'
expect_in "from its class" "$tmp/out" "5000 Never"
want='0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never.'
poll "describe: not eligible" 120 "$want" describes vision polite "$want"
check "xpool why polite" 0 "$xpool" why polite -n vision
expect_exact "xpool why polite, word for word" "$tmp/out" "pod vision/polite is pending: $want
$unblock"
poll "the sweep still has 8" 60 8 running research app=sweep

finish "shared cluster walk-through"
