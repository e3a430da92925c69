#!/usr/bin/env bash
# Gangs and why pending through the server and stock kubectl (docs/scheduler.md): three 8-GPU
# nodes in two zones. A 2 x 8-GPU gang (xpool.io/gang) is placed whole within one zone; a second
# one, with 8 GPUs left, places none and says why (kube-scheduler's message, the gang's count,
# the timeout); an incomplete gang waits for its members; `xpool why` prints each blocking cause
# (devices, taints, node selector, gang) word for word, as the FailedScheduling Event carries it.
source "$(dirname "$0")/lib.sh"
data=$tmp/server
server_pid=
export KUBECONFIG=$data/admin.kubeconfig

cleanup() {
  [[ -n "$server_pid" ]] && kill -TERM "$server_pid" 2>/dev/null || true
  [[ -n "$server_pid" ]] && wait "$server_pid" 2>/dev/null || true
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --gang-timeout 3s >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
poll "server up" 60 ok bash -c "kubectl get --raw /version >/dev/null 2>&1 && echo ok"

node() { # name, zone, taint: a Ready node with 8 whole GPUs, as an agent registers it
  local taint=
  [[ -n "${3:-}" ]] && taint="spec: {taints: [{key: dedicated, value: $3, effect: NoSchedule}]}"
  {
    cat <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels: {kubernetes.io/hostname: $1, topology.kubernetes.io/zone: $2}
$taint
status:
  capacity: {cpu: "32", memory: 64Gi, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "32", memory: 64Gi, pods: "110", nvidia.com/gpu: "8"}
  conditions: [{type: Ready, status: "True"}]
  xpool:
    devices:
YAML
    for i in 0 1 2 3 4 5 6 7; do
      echo "    - {id: GPU-$1-$i, kind: gpu, vendor: NVIDIA, resourceName: nvidia.com/gpu, index: $i, memoryBytes: 85899345920, health: Healthy}"
    done
  } >"$tmp/$1.yaml"
  check "create node $1" 0 kubectl create -f "$tmp/$1.yaml"
}

pod() { # name, gpus, gang, min [, extra spec [, annotations]]: a pending pod of a gang ("" for none)
  local labels="{}"
  [[ -n "$3" ]] && labels="{xpool.io/gang: $3, xpool.io/gang-min: \"$4\"}"
  cat >"$tmp/$1.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: $labels, annotations: {${6:-}}}
spec:
  ${5:-}
  containers:
  - {name: main, image: busybox, resources: {limits: {nvidia.com/gpu: $2}}}
YAML
  check "create pod $1" 0 kubectl create -f "$tmp/$1.yaml"
}

node_of() { kubectl get pod "$1" -o jsonpath='{.spec.nodeName}'; }
message_of() { kubectl get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'; }
# the message without the timeout's words: the server's --gang-timeout is 3 s, and on a loaded
# machine a gang's first attempt may come after that
message_untimed() { message_of "$1" | sed 's/; timed out after [0-9]*s//'; }

node a1 a
node a2 a
node b1 b

# ---- a gang that fits is placed whole, in one zone --------------------------------------------
pod fit-0 8 fit 2
pod fit-1 8 fit 2
poll "fit-0 bound" 60 yes bash -c "[[ -n \$(kubectl get pod fit-0 -o jsonpath='{.spec.nodeName}') ]] && echo yes"
poll "fit-1 bound" 60 yes bash -c "[[ -n \$(kubectl get pod fit-1 -o jsonpath='{.spec.nodeName}') ]] && echo yes"
zones="$(node_of fit-0) $(node_of fit-1)"
[[ "$zones" == "a1 a2" || "$zones" == "a2 a1" ]] ||
  { echo "FAIL the gang is not within zone a: $zones"; failures=$((failures + 1)); }

# ---- a gang that does not fit places none and says why -----------------------------------------
pod big-0 8 big 2
pod big-1 8 big 2
want='0/3 nodes are available: 3 Insufficient nvidia.com/gpu. Gang default/big: 1 of 2 members fit.'
# on a loaded machine the first look may come after the 3 s timeout, which only adds its words
message_before_timeout() { message_of "$1" | sed 's/; timed out after 3s\.$/./'; }
poll "big told why" 60 "$want" message_before_timeout big-1
check "big-0 not bound" 0 node_of big-0
[[ ! -s "$tmp/out" ]] || { echo "FAIL big-0 bound: $(cat "$tmp/out")"; failures=$((failures + 1)); }
check "b1 holds nothing" 0 kubectl get pods -o 'jsonpath={range .items[*]}{.spec.nodeName} {end}'
expect_count "no pod on b1" "$tmp/out" 0 "b1"
# the timeout (3 s here) is said in the condition and the Event
poll "big timed out" 60 "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. Gang default/big: 1 of 2 members fit; timed out after 3s." message_of big-0
check "xpool why big-0" 0 "$xpool" why big-0
cat >"$tmp/want" <<'TEXT'
pod default/big-0 is pending: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. Gang default/big: 1 of 2 members fit; timed out after 3s.
  gang default/big: 1 of 2 members fit together, so none is placed; timed out after 3s
  member big-1, with those before it placed:
  3 nodes (a1, a2, b1): Insufficient nvidia.com/gpu
  to unblock: needs 8 nvidia.com/gpu on one node; the most free on one node is 0, on 3 nodes
TEXT
# the Event carries the explanation and is updated 2 s, then 4, 8, 16 s after its last write
poll "xpool why big-0, word for word" 60 "$(cat "$tmp/want")" "$xpool" why big-0
check "kubectl describe shows the explanation" 0 kubectl describe pod big-0
expect_in "describe: the Event" "$tmp/out" "gang default/big: 1 of 2 members fit together, so none is placed"
check "delete the big gang" 0 kubectl delete pod big-0 big-1 --wait=false

# ---- an incomplete gang waits for its members --------------------------------------------------
pod wait-0 1 wait 3
# (on a loaded machine the 3 s timeout may pass first: it only adds its words)
poll "incomplete gang told" 60 "gang default/wait incomplete: 1 of 3 members present" message_untimed wait-0
cat >"$tmp/want" <<'TEXT'
pod default/wait-0 is pending: gang default/wait incomplete: 1 of 3 members present
  to unblock: 2 more members of gang default/wait (its minimum is 3)
TEXT
why_untimed() { "$xpool" why "$1" | sed 's/; timed out after [0-9]*s//'; }
poll "xpool why wait-0" 60 "$(cat "$tmp/want")" why_untimed wait-0

# ---- Volcano's PodGroup and Kubernetes' Workload, with stock kubectl ---------------------------
cat >"$tmp/pg.yaml" <<'YAML'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 2, minResources: {nvidia.com/gpu: "8"}}
YAML
check "create the PodGroup" 0 kubectl create -f "$tmp/pg.yaml"
pod pg-0 4 "" "" "" "scheduling.k8s.io/group-name: pg"
# Kubernetes' PodGroup serves the bare plural (discovery lists its group first, as
# kube-apiserver lists built-in groups before custom ones): Volcano's is named with its group
vpg=podgroups.scheduling.volcano.sh
poll "the PodGroup waits for its members" 60 "Pending" kubectl get $vpg pg -o jsonpath='{.status.phase}'
pod pg-1 4 "" "" "" "scheduling.k8s.io/group-name: pg"
poll "pg-0 on b1" 60 b1 node_of pg-0
poll "pg-1 on b1" 60 b1 node_of pg-1
poll "the PodGroup runs" 60 "Running" kubectl get $vpg pg -o jsonpath='{.status.phase}'
check "kubectl get podgroups.scheduling.volcano.sh" 0 kubectl get $vpg
expect_in "podgroups table" "$tmp/out" "NAME   STATUS    MINMEMBER   RUNNINGS   AGE"
expect_in "podgroups row" "$tmp/out" "pg     Running   2           0"
cat >"$tmp/wl.yaml" <<'YAML'
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata: {name: job}
spec:
  podGroups:
  - {name: workers, policy: {gang: {minCount: 2}}}
YAML
check "create the Workload" 0 kubectl create -f "$tmp/wl.yaml"
check "kubectl get workloads" 0 kubectl get workloads
expect_in "workloads table" "$tmp/out" "workers(gang 2)"
sed 's/minCount: 2/minCount: 0/; s/name: job/name: bad/' "$tmp/wl.yaml" >"$tmp/bad.yaml"
check "a minCount of 0 is refused" 1 kubectl create -f "$tmp/bad.yaml"
expect_in "the refusal says where" "$tmp/err" 'spec.podGroups[0].policy.gang.minCount: Invalid value: 0: must be between 1 and 10000'
for i in 0 1; do
  pod "wl-$i" 0 "" "" "workloadRef: {name: job, podGroup: workers}"
done
poll "wl-0 bound" 60 yes bash -c "[[ -n \$(kubectl get pod wl-0 -o jsonpath='{.spec.nodeName}') ]] && echo yes"
poll "wl-1 bound" 60 yes bash -c "[[ -n \$(kubectl get pod wl-1 -o jsonpath='{.spec.nodeName}') ]] && echo yes"

# ---- Kubernetes 1.36's PodGroup (scheduling.k8s.io/v1alpha2), with stock kubectl ---------------
check "discovery lists scheduling.k8s.io/v1alpha2 podgroups" 0 kubectl api-resources --api-group=scheduling.k8s.io
expect_in "api-resources: podgroups" "$tmp/out" "scheduling.k8s.io/v1alpha2"
cat >"$tmp/trio.yaml" <<'YAML'
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: trio}
spec:
  podGroupTemplateRef: {workload: {workloadName: job, podGroupTemplateName: workers}}
  schedulingPolicy: {gang: {minCount: 3}}
YAML
check "create the v1alpha2 PodGroup" 0 kubectl create -f "$tmp/trio.yaml"
for i in 0 1; do
  pod "trio-$i" 0 "" "" "schedulingGroup: {podGroupName: trio}"
done
for i in 0 1; do
  poll "trio-$i waits with the gang's reason" 60 "gang default/trio incomplete: 2 of 3 members present" message_untimed "trio-$i"
  check "trio-$i is not bound" 0 node_of "trio-$i"
  [[ ! -s "$tmp/out" ]] || { echo "FAIL trio-$i bound before its gang is complete"; failures=$((failures + 1)); }
done
pod trio-2 0 "" "" "schedulingGroup: {podGroupName: trio}"
for i in 0 1 2; do
  poll "trio-$i bound" 60 yes bash -c "[[ -n \$(kubectl get pod trio-$i -o jsonpath='{.spec.nodeName}') ]] && echo yes"
done
poll "the PodGroup says Scheduled" 60 "True Scheduled" kubectl get podgroup trio \
  -o jsonpath='{.status.conditions[?(@.type=="PodGroupScheduled")].status} {.status.conditions[?(@.type=="PodGroupScheduled")].reason}'
check "kubectl get podgroups" 0 kubectl get podgroups -o wide
expect_in "podgroups table" "$tmp/out" "NAME   POLICY   MIN COUNT   SCHEDULED          AGE"
expect_in "podgroups row" "$tmp/out" "trio   Gang     3           True (Scheduled)"
expect_in "podgroups row: its template" "$tmp/out" "job/workers"
sed 's/minCount: 3/minCount: 0/; s/name: trio/name: bad/' "$tmp/trio.yaml" >"$tmp/bad.yaml"
check "a minCount of 0 is refused" 1 kubectl create -f "$tmp/bad.yaml"
expect_in "the refusal says what and where" "$tmp/err" 'The PodGroup "bad" is invalid: spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1'
sed 's/{gang: {minCount: 3}}/{basic: {}, gang: {minCount: 3}}/; s/name: trio/name: bad/' "$tmp/trio.yaml" >"$tmp/bad.yaml"
check "two policies are refused" 1 kubectl create -f "$tmp/bad.yaml"
expect_in "the refusal names the union" "$tmp/err" 'spec.schedulingPolicy: Invalid value: "": must specify exactly one of: `basic`, `gang`'
sed 's/workloadName: job/workloadName: Job_1/; s/name: trio/name: bad/' "$tmp/trio.yaml" >"$tmp/bad.yaml"
check "a bad Workload name is refused" 1 kubectl create -f "$tmp/bad.yaml"
expect_in "the refusal names the field" "$tmp/err" 'spec.podGroupTemplateRef.workload.workloadName: Invalid value: "Job_1"'
check "the policy is immutable" 1 kubectl patch podgroup trio --type=merge -p '{"spec":{"schedulingPolicy":{"gang":{"minCount":4}}}}'
expect_in "the refusal says immutable" "$tmp/err" 'spec.schedulingPolicy: Forbidden: field is immutable'
check "no bad PodGroup was stored" 1 kubectl get podgroup bad
expect_in "not found, by its group" "$tmp/err" 'podgroups.scheduling.k8s.io "bad" not found'
poll "the refused patch changed nothing" 60 3 kubectl get podgroup trio -o jsonpath='{.spec.schedulingPolicy.gang.minCount}'

# ---- taints and node selectors, and a pod that is scheduled ------------------------------------
node t1 c gpu-infer
check "label t1" 0 kubectl label node t1 pool=nowhere
pod sel 1 "" "" "nodeSelector: {pool: nowhere}"
cat >"$tmp/want" <<'TEXT'
pod default/sel is pending: 0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu-infer}, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.
  3 nodes (a1, a2, b1): node(s) didn't match Pod's node affinity/selector
  1 node (t1): node(s) had untolerated taint {dedicated: gpu-infer}
  to unblock: a node that matches the pod's nodeSelector and node affinity
  to unblock: a toleration of {dedicated: gpu-infer}, or the taint off 1 node
TEXT
poll "xpool why sel, word for word" 60 "$(cat "$tmp/want")" "$xpool" why sel
poll "xpool why fit-0" 60 "pod default/fit-0 is scheduled: on node $(node_of fit-0)" "$xpool" why fit-0
check "xpool why: no such pod" 1 "$xpool" why nothere
expect_in "xpool why: not found" "$tmp/err" 'pods "nothere" not found'

finish "gang"
