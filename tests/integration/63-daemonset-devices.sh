#!/usr/bin/env bash
# DaemonSets on a node that gains a device kind (docs/workloads.md, "DaemonSet"): node n1 starts
# with NPUs only; three DaemonSets wait for GPUs: one by required node affinity (Exists on the
# agent's xpool.io/gpu.count label), one by nodeSelector (xpool.io/gpu.product), one by asking
# for nvidia.com/gpu. None runs a pod there. The agent restarts with a node description that
# adds two GPUs: the node's labels and allocatable change, and each DaemonSet places its pod on
# n1, which runs. The agent restarts once more without the GPUs: the agent's device labels go
# (the node no longer says it has a GPU) and the two DaemonSets that select on them take their
# pods off the node, as Kubernetes' DaemonSet controller does for a node that stops matching.
# While the node has its GPUs: kubectl describe of the DaemonSet, a Job deleted
# ttlSecondsAfterFinished after it completes, a Recreate Deployment (old pods down before new
# ones up, as describe's Events say) and a background cascade (issue 18's workloads end to end),
# and a pod killed by the OOM killer with the agent's OOMKilled Event.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/server
server_pid= agent_pid=
export KUBECONFIG=$data/admin.kubeconfig
mark=$$

stop_agent() {
  [[ -n "$agent_pid" ]] || return 0
  kill -TERM "$agent_pid" 2>/dev/null || true
  wait "$agent_pid" 2>/dev/null || true
  agent_pid=
}
cleanup() {
  local p
  stop_agent
  [[ -z "$server_pid" ]] || { kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
  # the pods' processes outlive the agent by design: this run's end here (each sleeps 600.MARK)
  for p in /proc/[0-9]*; do
    if [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"sleep 600.$mark"* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/npu.yaml" <<'YAML'
devices:
- {kind: npu, count: 1, vendor: Example, model: Example NPU, resourceName: vendor.com/npu}
YAML
cat >"$tmp/npu-gpu.yaml" <<'YAML'
devices:
- {kind: npu, count: 1, vendor: Example, model: Example NPU, resourceName: vendor.com/npu}
- {kind: gpu, count: 2, vendor: NVIDIA, model: NVIDIA H100 80GB HBM3, resourceName: nvidia.com/gpu,
   memoryBytes: 85520809984}
YAML

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
start_server "$data"
url=$base

start_agent() { # node description, log name
  "$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
    --node-name n1 --data-dir "$tmp/agent" --node-description "$1" \
    --listen 127.0.0.1:0 --pod-network host --default-runtime process --heartbeat 1s \
    >"$tmp/$2.log" 2>&1 &
  agent_pid=$!
  diag_log "$tmp/$2.log"
}
start_agent "$tmp/npu.yaml" agent1
poll "n1 is Ready" 60 True \
  kubectl get node n1 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
check "n1's device labels" 0 kubectl get node n1 -o 'jsonpath={.metadata.labels}'
expect_in "it has an NPU" "$tmp/out" '"xpool.io/npu.count":"1"'
if grep -q 'xpool.io/gpu' "$tmp/out"; then
  echo "FAIL n1 has a GPU label before it has a GPU"
  failures=$((failures + 1))
fi

daemonset() { # name, pod spec lines (indented 6)
  cat <<YAML
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $1}
spec:
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
$2
      containers:
      - {name: main, image: busybox, command: [sleep, "600.$mark"]}
---
YAML
}
{
  daemonset by-affinity "      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: xpool.io/gpu.count, operator: Exists}"
  daemonset by-selector "      nodeSelector: {xpool.io/gpu.product: NVIDIA-H100-80GB-HBM3}"
  cat <<YAML
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: by-request}
spec:
  selector: {matchLabels: {app: by-request}}
  template:
    metadata: {labels: {app: by-request}}
    spec:
      containers:
      - name: main
        image: busybox
        command: [sleep, "600.$mark"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
} >"$tmp/ds.yaml"
check "create the DaemonSets" 0 kubectl create -f "$tmp/ds.yaml"
expect_in "by-selector created" "$tmp/out" "daemonset.apps/by-selector created"

# the controller has looked at each once it has written its status (observedGeneration 1)
for ds in by-affinity by-selector by-request; do
  poll "$ds observed" 60 "1 0" kubectl get ds "$ds" -o 'jsonpath={.status.observedGeneration} {.status.desiredNumberScheduled}'
done
check "no daemon pod without a GPU" 0 kubectl get pods -o name
expect_exact "no pods" "$tmp/out" ""

# the node gains two GPUs: the agent restarts with the new description
stop_agent
start_agent "$tmp/npu-gpu.yaml" agent2
poll "n1 has 2 GPUs allocatable" 60 2 kubectl get node n1 -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}'
poll "n1's GPU label" 60 2 kubectl get node n1 -o 'jsonpath={.metadata.labels.xpool\.io/gpu\.count}'
for ds in by-affinity by-selector by-request; do
  poll "$ds places its pod on n1" 120 "n1 Running" \
    kubectl get pods -l "app=$ds" -o 'jsonpath={.items[*].spec.nodeName} {.items[*].status.phase}'
  poll "$ds is ready" 60 "1 1 1" kubectl get ds "$ds" -o 'jsonpath={.status.desiredNumberScheduled} {.status.currentNumberScheduled} {.status.numberReady}'
done
check "get ds" 0 kubectl get ds by-request
expect_in "kubectl's columns" "$tmp/out" "by-request   1         1         1       1            1           <none>"
check "the GPU pod got a GPU" 0 kubectl get pods -l app=by-request -o 'jsonpath={.items[0].metadata.annotations}'
expect_in "its device annotation" "$tmp/out" "nvidia.com/gpu"

check "describe ds" 0 kubectl describe ds by-request
grep -Eq '^Desired Number of Nodes Scheduled: +1$' "$tmp/out" || { echo "FAIL describe ds: not 1 node:"; cat "$tmp/out"; failures=$((failures + 1)); }
expect_in "its event" "$tmp/out" "SuccessfulCreate  "
expect_in "the pod it created" "$tmp/out" "Created pod: by-request-"

# issue 18's other workloads on the node, end to end: a Job gone ttlSecondsAfterFinished after it
# completes; a Recreate Deployment whose old pods go before the new come; a background cascade
cat >"$tmp/job.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: brief}
spec:
  ttlSecondsAfterFinished: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: ["true"]}
YAML
check "create a Job with a ttl" 0 kubectl create -f "$tmp/job.yaml"
poll "it is deleted after its ttl" 120 "" bash -c "kubectl get job brief -o name 2>/dev/null"
poll "its pod with it" 120 "" kubectl get pods -l job-name=brief -o name
# the Job completed first: its Events outlive it
check "its events" 0 kubectl get events --field-selector involvedObject.name=brief,involvedObject.kind=Job -o 'jsonpath={.items[*].reason}'
expect_in "it completed" "$tmp/out" "Completed"

cat >"$tmp/recreate.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: rec}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: rec}}
  template:
    metadata: {labels: {app: rec}}
    spec:
      containers:
      - {name: main, image: busybox, command: [sleep, "600.$mark"]}
YAML
check "create a Recreate Deployment" 0 kubectl create -f "$tmp/recreate.yaml"
poll "both run" 120 "2" kubectl get deploy rec -o 'jsonpath={.status.readyReplicas}'
first_rs=$(kubectl get rs -l app=rec -o 'jsonpath={.items[0].metadata.name}')
check "change its template" 0 kubectl set env deployment/rec STEP=2
poll "the new ones run" 120 "2 2" kubectl get deploy rec -o 'jsonpath={.status.updatedReplicas} {.status.readyReplicas}'
check "rollout status" 0 kubectl rollout status deployment/rec --timeout=120s
check "describe deployment" 0 kubectl describe deploy rec
grep -Eq '^StrategyType: +Recreate$' "$tmp/out" || { echo "FAIL describe: no Recreate strategy:"; cat "$tmp/out"; failures=$((failures + 1)); }
# the order of the Deployment's Events by their resourceVersion (the store's write order): describe
# sorts by timestamps of whole seconds, where the two land in the same second
kubectl get events --field-selector involvedObject.kind=Deployment,involvedObject.name=rec \
  -o 'jsonpath={range .items[*]}{.metadata.resourceVersion} {.message}{"\n"}{end}' >"$tmp/rec-events" 2>&1
down=$(grep "Scaled down replica set $first_rs from 2 to 0" "$tmp/rec-events" | head -1 | cut -d' ' -f1)
up=$(grep "Scaled up replica set rec-.* from 0 to 2" "$tmp/rec-events" | grep -v "set $first_rs " | head -1 | cut -d' ' -f1)
if [[ -z "$down" || -z "$up" || "$down" -ge "$up" ]]; then
  echo "FAIL Recreate: the old replica set is not scaled down before the new one is up:"
  cat "$tmp/rec-events" "$tmp/out"
  failures=$((failures + 1))
fi
check "describe rs" 0 kubectl describe rs "$first_rs"
grep -Eq '^Replicas: +0 current / 0 desired$' "$tmp/out" || { echo "FAIL describe rs: not empty:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "delete with a background cascade" 0 kubectl delete deploy rec --cascade=background
expect_in "deleted" "$tmp/out" 'deployment.apps "rec" deleted'
poll "its replica sets go" 120 "" kubectl get rs -l app=rec -o name
poll "and their pods" 120 "" kubectl get pods -l app=rec -o name

# a container killed by the OOM killer (issue 15's OOM Events): its reason and the agent's Event
cat >"$tmp/hog.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "head -c 1000000000 /dev/zero | tail"]
    resources: {limits: {memory: 32Mi}}
YAML
check "a pod that outgrows its memory" 0 kubectl create -f "$tmp/hog.yaml"
poll "it is OOMKilled" 60 "Failed OOMKilled" kubectl get pod hog -o 'jsonpath={.status.phase} {.status.containerStatuses[0].state.terminated.reason}'
poll "the agent's OOMKilled Event" 60 "OOMKilled" bash -c "kubectl get events --field-selector involvedObject.name=hog,reason=OOMKilled -o jsonpath='{.items[0].reason}'"
check "describe says why" 0 kubectl describe pod hog
expect_in "the Event's message" "$tmp/out" "Container main was killed by the OOM killer at "

# the node loses its GPUs: the labels that said so go, and the pods that selected on them
stop_agent
start_agent "$tmp/npu.yaml" agent3
poll "n1 has no GPU allocatable" 60 "" kubectl get node n1 -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}'
poll "n1's GPU labels are gone" 60 "" kubectl get node n1 -o 'jsonpath={.metadata.labels.xpool\.io/gpu\.count}{.metadata.labels.xpool\.io/gpu\.product}'
check "its NPU label stays" 0 kubectl get node n1 -o 'jsonpath={.metadata.labels.xpool\.io/npu\.count}'
expect_exact "npu count" "$tmp/out" "1"
for ds in by-affinity by-selector; do
  poll "$ds takes its pod off n1" 120 "" kubectl get pods -l "app=$ds" -o name
  poll "$ds wants none" 60 "0 0" kubectl get ds "$ds" -o 'jsonpath={.status.desiredNumberScheduled} {.status.currentNumberScheduled}'
done

finish "daemonset device"
