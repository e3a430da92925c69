#!/usr/bin/env bash
# Workloads on `xpool up` with a simulated 2-GPU node (pods as processes of the node): a
# Deployment of 3 GPU pods (2 run, 1 Pending with the scheduler's reason), scaled down to 2, a
# rolling update of its command watched by kubectl rollout status, rollout undo back to the first
# revision's ReplicaSet, history;
# a DaemonSet; kubectl delete --cascade=orphan leaving the pods; and xpool up killed (SIGKILL)
# in the middle of a rolling update, which completes after the restart with no extra replicas
# and no lost pods.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
node=apps-node
up_pid=

stop_up() { # signal: stops xpool up, if it runs
  [[ -n "$up_pid" ]] || return 0
  kill "-$1" "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
mark=$$
cleanup() {
  local p
  stop_up TERM
  # the pods' processes outlive xpool up by design: this run's end here (each sleeps 3600.MARK...)
  for p in /proc/[0-9]*; do
    if [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"sleep 3600.$mark"* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/node.yaml" <<'EOF'
devices:
- kind: gpu
  count: 2
  vendor: NVIDIA
  model: NVIDIA H100 80GB HBM3
  resourceName: nvidia.com/gpu
  memoryBytes: 85520809984
  numaNode: [0, 0]
  deviceNodes: ["/dev/nvidia{index}"]
EOF

start_up() { # log name: starts xpool up on a free port, waits (bounded) for its one line
  local log=$tmp/$1.log deadline=$((SECONDS + 60))
  : >"$log"
  "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --node-description "$tmp/node.yaml" \
    --node-name "$node" --backoff-initial 200ms --pod-network host --default-runtime process \
    --heartbeat 1s >"$log" 2>&1 &
  up_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
    grep -q "^xpool is up" "$log" && return 0
    sleep 0.1
  done
  echo "FAIL xpool up did not come up within 60 s:"; cat "$log"; exit 1
}

export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"
diag_run "timeout 20 kubectl get deploy,rs,ds -o yaml"
start_up first
poll "the node is Ready" 60 True \
  kubectl get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'

# A pod that sleeps as a process of the node: `sleep 3600.MARKV` (V a digit: the version), so
# that the cleanup finds this run's and a test tells the versions apart.
sleeper() { echo "[sleep, \"3600.$mark$1\"]"; }
# how many pods of label $1 run version $2
version_count() {
  kubectl get pods -l "$1" -o jsonpath='{range .items[*]}{.spec.containers[0].command[1]}{"\n"}{end}' | grep -c "^3600\.$mark$2\$" || true
}

cat >"$tmp/gpu.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu
spec:
  replicas: 3
  selector:
    matchLabels: {app: gpu}
  strategy:
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: gpu}
    spec:
      terminationGracePeriodSeconds: 2
      initContainers: # without resources: undo sends them as {} (one ReplicaSet, as Kubernetes)
      - name: prep
        image: trainer:1
        command: ["true"]
      containers:
      - name: main
        image: trainer:1
        command: $(sleeper 1)
        resources:
          limits: {nvidia.com/gpu: 1}
EOF
check "create the GPU Deployment" 0 kubectl apply -f "$tmp/gpu.yaml"
poll "2 of 3 run" 60 2 sh -c "kubectl get pods -l app=gpu --field-selector=status.phase=Running -o name | wc -l"
poll "1 is Pending" 60 1 sh -c "kubectl get pods -l app=gpu --field-selector=status.phase=Pending -o name | wc -l"
pending=$(kubectl get pods -l app=gpu --field-selector=status.phase=Pending -o name)
check "the Pending pod's reason" 0 kubectl get "$pending" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'
expect_in "it lacks a GPU" "$tmp/out" "Insufficient nvidia.com/gpu"
check "kubectl get deployment" 0 kubectl get deployment gpu
expect_in "READY 2/3" "$tmp/out" "2/3"
check "kubectl get rs" 0 kubectl get rs -l app=gpu
expect_in "rs columns" "$tmp/out" "DESIRED   CURRENT   READY"
check "kubectl describe deployment" 0 kubectl describe deployment gpu
expect_in "describe: the scaling event" "$tmp/out" "ScalingReplicaSet"

# scale down: the Pending pod goes first
check "scale to 2" 0 kubectl scale deployment gpu --replicas=2
poll "2 pods left" 60 2 sh -c "kubectl get pods -l app=gpu -o name | wc -l"
poll "both Running" 60 2 sh -c "kubectl get pods -l app=gpu --field-selector=status.phase=Running -o name | wc -l"

# roll a change of the command, then undo it
check "set the v2 command" 0 kubectl patch deployment gpu --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/command/1\",\"value\":\"3600.${mark}2\"}]"
check "rollout status (v2)" 0 kubectl rollout status deployment/gpu --timeout=120s
expect_in "rolled out" "$tmp/out" "successfully rolled out"
poll "2 v2 pods" 60 2 version_count app=gpu 2
check "rollout history" 0 kubectl rollout history deployment/gpu
expect_in "revision 2" "$tmp/out" "2 "
check "rollout undo" 0 kubectl rollout undo deployment/gpu
check "rollout status (undo)" 0 kubectl rollout status deployment/gpu --timeout=120s
poll "back on v1" 60 2 version_count app=gpu 1
check "the revision after undo" 0 kubectl get deployment gpu -o 'jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}'
expect_in "revision 3" "$tmp/out" "3"
check "the ReplicaSets after undo" 0 kubectl get rs -l app=gpu -o name
expect_count "undo takes back revision 1's ReplicaSet" "$tmp/out" 2 "replicaset.apps/gpu-"

# a DaemonSet: one pod on the node
cat >"$tmp/ds.yaml" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: agent:1
        command: $(sleeper 5)
EOF
check "create the DaemonSet" 0 kubectl create -f "$tmp/ds.yaml" -o json
# the zero status kube-apiserver writes for a new object, before its controller's: clients
# (the Python client's create_namespaced_daemon_set(...).status) read it at once
expect_in "its answer has a status" "$tmp/out" '"status": {}'
poll "its pod runs on the node" 60 "$node Running" \
  kubectl get pods -l app=agent -o 'jsonpath={.items[0].spec.nodeName} {.items[0].status.phase}'
poll "the DaemonSet is ready" 60 "1 1" kubectl get ds agent -o 'jsonpath={.status.desiredNumberScheduled} {.status.numberReady}'
# its history: a ControllerRevision per template, read and applied by kubectl rollout
poll "revision 1 recorded" 60 "1" kubectl get controllerrevisions -l app=agent -o 'jsonpath={.items[*].revision}'
check "get controllerrevisions" 0 kubectl get controllerrevisions
expect_in "its controller and revision" "$tmp/out" "daemonset.apps/agent   1"
check "set image on the DaemonSet" 0 kubectl set image daemonset/agent main=agent:2
poll "revision 2 recorded" 60 "1 2" kubectl get controllerrevisions -l app=agent --sort-by=.revision -o 'jsonpath={.items[*].revision}'
check "rollout history daemonset" 0 kubectl rollout history daemonset/agent
expect_in "both revisions" "$tmp/out" "$(printf 'REVISION  CHANGE-CAUSE\n1         <none>\n2         <none>')"
check "rollout history --revision=1" 0 kubectl rollout history daemonset/agent --revision=1
expect_in "revision 1's template" "$tmp/out" "agent:1"
check "rollout undo daemonset" 0 kubectl rollout undo daemonset/agent
expect_in "rolled back" "$tmp/out" "daemonset.apps/agent rolled back"
poll "its template is agent:1 again" 60 "agent:1" kubectl get ds agent -o 'jsonpath={.spec.template.spec.containers[0].image}'
poll "revision 1 renumbered 3" 60 "2 3" kubectl get controllerrevisions -l app=agent --sort-by=.revision -o 'jsonpath={.items[*].revision}'
check "undo --to-revision=2" 0 kubectl rollout undo daemonset/agent --to-revision=2
poll "agent:2 again" 60 "agent:2" kubectl get ds agent -o 'jsonpath={.spec.template.spec.containers[0].image}'
check "undo to a revision that is not there" 1 kubectl rollout undo daemonset/agent --to-revision=9
expect_in "kubectl's words" "$tmp/err" "unable to find specified revision 9 in history"

# kubectl's own generators and rollout commands (create deployment sends protobuf)
check "kubectl create deployment" 0 kubectl create deployment hello --image=hello:1 -- sleep "3600.${mark}8"
check "its rollout" 0 kubectl rollout status deployment/hello --timeout=120s
check "kubectl get all" 0 kubectl get all
expect_in "get all: the Deployment" "$tmp/out" "deployment.apps/hello"
expect_in "get all: its ReplicaSet" "$tmp/out" "replicaset.apps/hello-"
expect_in "get all: the DaemonSet" "$tmp/out" "daemonset.apps/agent"
check "kubectl set image" 0 kubectl set image deployment/hello hello=hello:2
check "rollout status after set image" 0 kubectl rollout status deployment/hello --timeout=120s
check "the new image runs" 0 kubectl get pods -l app=hello -o 'jsonpath={.items[*].spec.containers[0].image}'
expect_in "hello:2" "$tmp/out" "hello:2"
check "rollout pause" 0 kubectl rollout pause deployment/hello
poll "Progressing says paused" 60 DeploymentPaused \
  kubectl get deployment hello -o 'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}'
check "rollout resume" 0 kubectl rollout resume deployment/hello
check "refused with Kubernetes' message" 1 kubectl create deployment bad --image=x --replicas=-1
expect_in "the message" "$tmp/err" 'spec.replicas: Invalid value: -1: must be greater than or equal to 0'
check "delete --cascade=foreground" 0 kubectl delete deployment hello --cascade=foreground --timeout=120s
check "its pods went first" 0 kubectl get pods -l app=hello -o name
expect_count "no pod left" "$tmp/out" 0 "pod/"

# delete with --cascade=orphan: the Deployment goes, its ReplicaSets and pods stay
check "delete --cascade=orphan" 0 kubectl delete deployment gpu --cascade=orphan --wait=true --timeout=120s
poll "the Deployment is gone" 60 "" kubectl get deployment gpu -o name --ignore-not-found
check "its pods stay" 0 kubectl get pods -l app=gpu -o name
expect_count "two pods" "$tmp/out" 2 "pod/"
check "its ReplicaSets stay, orphaned" 0 kubectl get rs -l app=gpu -o 'jsonpath={range .items[*]}{.metadata.ownerReferences}{"\n"}{end}'
if grep -q Deployment "$tmp/out"; then echo "FAIL a ReplicaSet still names the Deployment"; failures=$((failures + 1)); fi
check "delete the rest" 0 kubectl delete rs -l app=gpu
poll "background cascade: their pods go" 60 0 sh -c "kubectl get pods -l app=gpu -o name | wc -l"
check "delete the DaemonSet" 0 kubectl delete ds agent

# SIGKILL in the middle of a rolling update: 4 replicas, one at a time (minReadySeconds slows
# each step), killed once the new ReplicaSet has pods and the old one still has some
cat >"$tmp/web.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 4
  minReadySeconds: 1
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: web:1
        command: $(sleeper 6)
EOF
check "create web" 0 kubectl apply -f "$tmp/web.yaml"
check "web rolled out" 0 kubectl rollout status deployment/web --timeout=120s
sed -i "s/3600\.${mark}6/3600.${mark}7/" "$tmp/web.yaml"
check "roll web" 0 kubectl apply -f "$tmp/web.yaml"
under_way() { [[ $(version_count app=web 6) -gt 0 && $(version_count app=web 7) -gt 0 ]] && echo yes; }
poll "the rollout is under way" 60 yes under_way
stop_up KILL
start_up second
poll "the node is Ready again" 60 True \
  kubectl get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
max=0
deadline=$((SECONDS + 60))
while [[ $SECONDS -lt $deadline ]]; do
  # pods not terminating: a terminating one no longer counts against maxSurge, as in Kubernetes
  n=$(kubectl get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null | awk 'NF == 1' | wc -l)
  [[ $n -gt $max ]] && max=$n
  [[ "$(kubectl get deploy web -o 'jsonpath={.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas}' 2>/dev/null)" == 4/4/4 ]] && break
  sleep 0.3
done
check "web completes after the restart" 0 kubectl rollout status deployment/web --timeout=120s
web_pods() { echo "$(kubectl get pods -l app=web -o name | wc -l) $(version_count app=web 7)"; }
poll "4 pods, all new" 60 "4 4" web_pods
[[ $max -le 5 ]] || { echo "FAIL $max web pods at once: more than replicas + maxSurge (5)"; failures=$((failures + 1)); }
check "the ReplicaSets ask for 4 in all" 0 kubectl get rs -l app=web -o 'jsonpath={range .items[*]}{.spec.replicas}{"\n"}{end}'
[[ "$(awk '{s+=$1} END {print s}' "$tmp/out")" == 4 ]] || { echo "FAIL ReplicaSets ask for more than 4:"; cat "$tmp/out"; failures=$((failures + 1)); }

stop_up TERM
for log in first second; do
  if grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$tmp/$log.log"; then
    echo "FAIL sanitizer report from xpool up ($log)"; failures=$((failures + 1))
  fi
done
finish "deployments"
