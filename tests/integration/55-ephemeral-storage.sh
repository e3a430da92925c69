#!/usr/bin/env bash
# Local ephemeral storage (docs/agent.md, "Local ephemeral storage"), with stock kubectl against
# `xpool up --housekeeping-interval 1s` running process pods:
#   - a pod writing 2 MiB into an emptyDir of sizeLimit 1Mi is evicted as the kubelet does it:
#     phase Failed, reason Evicted, the kubelet's message, an Evicted Event, its process killed;
#     a pod writing 1 MiB into an emptyDir of sizeLimit 4Mi keeps running;
#   - a container writing 2 MiB of log past its ephemeral-storage limit of 1Mi (its pod's total
#     within the sum of its containers' limits): evicted with the container's message;
#   - one container over the pod's total (its only limit): the pod's message;
#   - a Memory emptyDir of sizeLimit 1Mi is a tmpfs of that size: a 2 MiB write fails;
#   - node pressure, on a data directory on a tmpfs of 192 MiB the test mounts, with
#     --eviction-hard nodefs.available<96Mi: a pod writing 16 MiB past the threshold is the one
#     evicted (the kubelet's message), its emptyDir emptied, the pressure gone, the quiet pod kept;
#     a file of the test's keeping the pressure: DiskPressure=True (KubeletHasDiskPressure), the
#     disk-pressure NoSchedule taint (the server's node lifecycle controller), the quiet pod
#     evicted in turn; the file removed: the condition False and the taint gone;
#   - the Node's capacity and allocatable ephemeral-storage: the file system's size, less the
#     threshold for allocatable.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: process pods' volumes need root"; exit 77; }
fs=$tmp/fs
mkdir -p "$fs"
mount -t tmpfs -o size=192m tmpfs "$fs" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
data=$fs/data
up_pid=
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -TERM "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT

log=$tmp/up.log
"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --node-name disk-node --pod-network host \
  --default-runtime process --housekeeping-interval 1s --heartbeat 1s \
  --eviction-hard 'nodefs.available<96Mi' >"$log" 2>&1 &
up_pid=$!
deadline=$((SECONDS + 120))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 120 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
diag_log "$log"
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
diag_cluster "$KUBECONFIG"

m=$tmp/mnt
mkdir -p "$m"
# each pod's process sleeps for a number of its own, so that the test sees it end; the run's
# mark in it, so that no other run's process (one left by an earlier run, one beside it) is seen
mark=$$
cat >"$tmp/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: edfull}
spec:
  restartPolicy: Never
  containers:
  - name: w
    image: busybox
    command: ["sh", "-c", "dd if=/dev/zero of=$m/full/f bs=64k count=32 2>/dev/null; exec sleep 3701.$mark"]
    volumeMounts: [{name: scratch, mountPath: $m/full}]
  volumes: [{name: scratch, emptyDir: {sizeLimit: 1Mi}}]
---
apiVersion: v1
kind: Pod
metadata: {name: edok}
spec:
  restartPolicy: Never
  containers:
  - name: w
    image: busybox
    command: ["sh", "-c", "dd if=/dev/zero of=$m/ok/f bs=64k count=16 2>/dev/null; exec sleep 3702.$mark"]
    volumeMounts: [{name: scratch, mountPath: $m/ok}]
  volumes: [{name: scratch, emptyDir: {sizeLimit: 4Mi}}]
---
apiVersion: v1
kind: Pod
metadata: {name: logfull}
spec:
  restartPolicy: Never
  containers:
  - name: chatty
    image: busybox
    command: ["sh", "-c", "head -c 2097152 /dev/zero | tr '\\\\0' x | fold -w 1000; exec sleep 3703.$mark"]
    resources: {limits: {ephemeral-storage: 1Mi}}
  - name: quiet
    image: busybox
    command: ["sleep", "3704.$mark"]
    resources: {limits: {ephemeral-storage: 10Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: podfull}
spec:
  restartPolicy: Never
  containers:
  - name: chatty
    image: busybox
    command: ["sh", "-c", "head -c 2097152 /dev/zero | tr '\\\\0' y | fold -w 1000; exec sleep 3705.$mark"]
    resources: {limits: {ephemeral-storage: 1Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: ram}
spec:
  restartPolicy: Never
  containers:
  - name: w
    image: busybox
    command: ["sh", "-c", "dd if=/dev/zero of=$m/ram/f bs=64k count=32 || echo write refused; exec sleep 3706.$mark"]
    volumeMounts: [{name: ram, mountPath: $m/ram}]
  volumes: [{name: ram, emptyDir: {medium: Memory, sizeLimit: 1Mi}}]
EOF
check "the Node's ephemeral-storage" 0 "${k[@]}" get node disk-node -o jsonpath='{.status.capacity.ephemeral-storage} {.status.allocatable.ephemeral-storage}'
expect_exact "192 MiB, 96 MiB of them allocatable" "$tmp/out" "201326592 100663296"
check "create the pods" 0 "${k[@]}" apply -f "$tmp/pods.yaml"

why() { "${k[@]}" get pod "$1" -o jsonpath='{.status.phase} {.status.reason} {.status.message}'; }
poll "the pod over its emptyDir's sizeLimit is evicted" 60 \
  'Failed Evicted Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ' why edfull
poll "the container over its own limit" 60 \
  'Failed Evicted Container chatty exceeded its local ephemeral storage limit "1Mi". ' why logfull
poll "the pod over its containers' total" 60 \
  'Failed Evicted Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ' why podfull
running() { "${k[@]}" get pod "$1" -o jsonpath='{.status.phase}'; }
check "the pod within its sizeLimit keeps running" 0 test "$(running edok)" = Running
check "so does the one whose tmpfs refused the write" 0 test "$(running ram)" = Running
ramlog() { "${k[@]}" logs ram | grep -c "write refused"; }
poll "the Memory emptyDir is a tmpfs of its sizeLimit" 60 1 ramlog
gone() { pgrep -f "^sleep $1\.$mark\$" >/dev/null && echo running || echo gone; }
poll "the evicted pod's process is killed" 120 gone gone 3701
poll "so are the other evicted pods' processes" 120 gone gone 3703
poll "... all of them" 120 gone gone 3704
poll "... and the last" 120 gone gone 3705
check "the kept pod's process runs" 0 pgrep -f "^sleep 3702\.$mark$"
check "the events" 0 "${k[@]}" get events --field-selector reason=Evicted -o jsonpath='{range .items[*]}{.involvedObject.name} {.type} {.message}{"\n"}{end}'
expect_in "an Evicted Warning for the emptyDir" "$tmp/out" 'edfull Warning Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". '
expect_in "one for the container" "$tmp/out" 'logfull Warning Container chatty exceeded'
expect_in "one for the pod" "$tmp/out" 'podfull Warning Pod ephemeral local storage usage exceeds'
expect_count "none for the pods within their limits" "$tmp/out" 0 "edok"
check "the DisruptionTarget condition" 0 "${k[@]}" get pod edfull -o jsonpath='{.status.conditions[?(@.type=="DisruptionTarget")].reason}'
expect_exact "the kubelet's reason" "$tmp/out" "TerminationByKubelet"
check "a bad interval is refused" 2 "$xpool" agent --housekeeping-interval soon
expect_in "saying which flag" "$tmp/err" "housekeeping-interval"

check "delete the pods" 0 "${k[@]}" delete -f "$tmp/pods.yaml" --grace-period=0 --force

# ---- node pressure -------------------------------------------------------------------------------
avail() { df -B1 --output=avail "$fs" | tail -1; }
mib=$((1024 * 1024))
# the file system left 8 MiB above the threshold
fill=$(($(avail) / mib - 96 - 8))
check "fill the node's file system to 8 MiB above the threshold" 0 dd if=/dev/zero of="$fs/filler" bs=1M count="$fill"
cat >"$tmp/calm.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: calm}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: ["sleep", "3711.$mark"]}
EOF
cat >"$tmp/hog.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  restartPolicy: Never
  containers:
  - name: w
    image: busybox
    command: ["sh", "-c", "sleep 1; dd if=/dev/zero of=$m/hog/f bs=1M count=16 2>/dev/null; exec sleep 3712.$mark"]
    volumeMounts: [{name: scratch, mountPath: $m/hog}]
  volumes: [{name: scratch, emptyDir: {}}]
EOF
{ cat "$tmp/calm.yaml"; echo ---; cat "$tmp/hog.yaml"; } >"$tmp/pressure.yaml"
# the quiet pod runs before the hog writes: "not evicted" below is then its state, not a start
# still under way at load 30
check "create the quiet pod" 0 "${k[@]}" apply -f "$tmp/calm.yaml"
poll "the quiet pod runs" 60 Running running calm
check "create the pod that writes" 0 "${k[@]}" apply -f "$tmp/hog.yaml"
first() { why hog | sed 's/available: .*/available: .../'; }
poll "the pod using the most beyond its request is evicted first, in the kubelet's words" 60 \
  'Failed Evicted The node was low on resource: ephemeral-storage. Threshold quantity: 96Mi, available: ...' first
given() { sed -n 's|.*evicted pod default/hog: its emptyDir volumes emptied, \([0-9]*\) bytes given back|\1|p' "$log" | awk '{ print ($1 >= 16777216) }'; }
poll "its emptyDir's 16 MiB are given back at once" 120 1 given
hogfiles() { find "$data/agent/containers/.pods/$("${k[@]}" get pod hog -o jsonpath='{.metadata.uid}')" -type f | wc -l; }
check "none of its files is left" 0 test "$(hogfiles)" = 0
relieved() { grep -c "no disk pressure any more" "$log"; }
poll "the pressure is gone" 120 1 relieved
check "the quiet pod was not evicted" 0 test "$(running calm)" = Running
poll "the evicted pod's process is killed" 120 gone gone 3712

check "a file of the node's keeps the pressure" 0 dd if=/dev/zero of="$fs/filler2" bs=1M count=16
cond() { "${k[@]}" get node disk-node -o jsonpath='{.status.conditions[?(@.type=="DiskPressure")].status} {.status.conditions[?(@.type=="DiskPressure")].reason} {.status.conditions[?(@.type=="DiskPressure")].message}'; }
poll "the Node says DiskPressure" 120 "True KubeletHasDiskPressure kubelet has disk pressure" cond
taint() { "${k[@]}" get node disk-node -o jsonpath='{range .spec.taints[*]}{.key}:{.effect} {end}'; }
poll "the node lifecycle controller taints it, as Kubernetes' TaintNodesByCondition" 120 "node.kubernetes.io/disk-pressure:NoSchedule " taint
poll "the quiet pod is evicted in turn" 60 Failed running calm
check "rm the file" 0 rm "$fs/filler2"
poll "the Node's DiskPressure is False again" 120 "False KubeletHasNoDiskPressure kubelet has no disk pressure" cond
poll "the taint is gone" 120 "" taint
check "a bad threshold is refused" 1 "$xpool" agent --eviction-hard 'memory.available<1Gi' --server http://127.0.0.1:1 --token x --data-dir "$tmp/badagent"
expect_in "saying which signal" "$tmp/err" 'memory.available'
check "delete the pressure pods" 0 "${k[@]}" delete -f "$tmp/pressure.yaml" --grace-period=0 --force
stop_up
finish "ephemeral storage"
