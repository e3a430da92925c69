#!/usr/bin/env bash
# The namespace pins an agent killed before it tore its pods down leaves behind (docs/agent.md,
# "Namespaces left behind"): `xpool up` with two process pods (each in an IPC namespace of its
# own, pinned by a bind mount in the agent's own directory /run/xpool/agent-<key>/ipc) is
# SIGKILLed; one pod ends while nothing supervises it, and a pin no pod has is left beside them.
# Started again on the same data directory, the agent unmounts and removes the pin of the pod that
# ended (Succeeded) and the one of no pod, keeps the running pod's (adopted: exec still reaches it
# in the same IPC namespace), removes that one too once the pod is deleted, and stops cleanly with
# no pin of its pods left mounted. Only this test's own directories are looked at or unmounted.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: IPC namespace pins need root"; exit 77; }
data=$tmp/data
up_pid=
ipc_dir= netns_dir=
# a marker only this run's pods carry, so that the process checks see no one else's
mark=$((RANDOM % 900 + 100))$$
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
diag_cluster "$KUBECONFIG"

marked_pids() { # the processes of this run's pods (their command lines carry the mark)
  local p
  for p in /proc/[0-9]*; do
    [[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" == *".$mark"* ]] && echo "${p#/proc/}"
  done
  return 0
}
# the mounts below this agent's own pin directories (none of another agent's), deepest first
own_pins() {
  [[ -n "$ipc_dir" ]] || return 0
  awk -v i="$ipc_dir/" -v n="${netns_dir:-/nonexistent}/" \
    'index($5, i) == 1 || index($5, n) == 1 { print length($5) " " $5 }' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2-
}
cleanup() {
  local m
  [[ -z "$up_pid" ]] || { kill -KILL "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; }
  # the pods outlive their agent by design: this run's end here
  marked_pids | xargs -r kill -KILL 2>/dev/null || true
  own_pins | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  [[ -z "$ipc_dir" ]] || { rm -rf "$ipc_dir"; rmdir "${ipc_dir%/ipc}" 2>/dev/null || true; }
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

start() { # log file
  start_up "$1" --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name pin-node \
    --pod-network host --backoff-initial 200ms
}
phase() { "${kc[@]}" get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
phase_is() { [[ "$(phase "$1")" == "$2" ]]; }
mounted() { grep -qF " $1 " /proc/self/mountinfo; }
not_mounted() { ! mounted "$1"; }
ended() { # the short pod wrote its mark and no process of it is left
  local p
  [[ -e "$tmp/short-ended" ]] || return 1
  for p in /proc/[0-9]*; do
    [[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" == *"short.$mark"* ]] && return 1
  done
  return 0
}

start "$tmp/up.log"
ipc_dir=$(agent_pin_dirs "$tmp/up.log" | sed -n '1s/.* //p')
[[ "$ipc_dir" == /run/xpool/agent-*/ipc ]] ||
  { echo "FAIL the agent's own IPC pin directory, not '$ipc_dir':"; cat "$tmp/up.log"; exit 1; }

cat >"$tmp/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: runner}
spec:
  runtimeClassName: process
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3600.$mark"]
---
apiVersion: v1
kind: Pod
metadata: {name: short}
spec:
  runtimeClassName: process
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "i=0; while [ ! -e $tmp/go ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i+1)); done; touch $tmp/short-ended", "short.$mark"]
EOF
check "create the pods" 0 "${kc[@]}" apply -f "$tmp/pods.yaml"
wait_for "runner Running" 60 phase_is runner Running
wait_for "short Running" 60 phase_is short Running
runner_uid=$("${kc[@]}" get pod runner -o 'jsonpath={.metadata.uid}')
short_uid=$("${kc[@]}" get pod short -o 'jsonpath={.metadata.uid}')
[[ -n "$runner_uid" && -n "$short_uid" ]] || { echo "FAIL the pods' uids"; exit 1; }
runner_pin=$ipc_dir/$runner_uid short_pin=$ipc_dir/$short_uid orphan_pin=$ipc_dir/orphan-$mark
wait_for "the running pods' IPC namespaces are pinned" 60 mounted "$runner_pin"
check "... both" 0 mounted "$short_pin"

# ---- the agent (and its server) SIGKILLed: nothing tears the pods down ---------------------------
kill -KILL "$up_pid"
wait "$up_pid" 2>/dev/null || true
up_pid=
check "the killed agent's pins stay mounted" 0 mounted "$runner_pin"
check "... the short pod's too" 0 mounted "$short_pin"
touch "$tmp/go"
wait_for "the short pod ends while its agent is away" 120 ended
check "its pin is still mounted, its namespace kept alive by nothing else" 0 mounted "$short_pin"
# a pin of no pod at all: an agent killed between making a pod's namespace and its first record
touch "$orphan_pin"
check "a pin of no pod" 0 unshare -i mount --bind /proc/self/ns/ipc "$orphan_pin"

absent() { ! test -e "$1"; }

# ---- started again on the same data directory ----------------------------------------------------
start "$tmp/up2.log"
wait_for "the restarted agent unmounts the pin of the pod that ended" 120 not_mounted "$short_pin"
wait_for "... and removes it (after the unmount)" 60 absent "$short_pin"
wait_for "the pod that ended is Succeeded" 120 phase_is short Succeeded
wait_for "the restarted agent unmounts the pin of no pod" 120 not_mounted "$orphan_pin"
wait_for "... and removes it (after the unmount)" 60 absent "$orphan_pin"
# (said after the unlink waited for above: waited for too)
wait_for "one line says the removal" 60 grep -qF -- "removed $orphan_pin, the IPC namespace of no pod" "$tmp/up2.log"
check "the adopted pod's pin is kept" 0 mounted "$runner_pin"
check "the adopted pod is Running" 0 phase_is runner Running
check "exec reaches the adopted pod" 0 "${kc[@]}" exec runner -- readlink /proc/self/ns/ipc
expect_in "... in the IPC namespace its pin holds" "$tmp/out" "ipc:[$(stat -L -c %i "$runner_pin")]"

# ---- the adopted pod deleted, then a clean stop: no pin left ---------------------------------------
check "delete the adopted pod" 0 "${kc[@]}" delete pod runner --grace-period=1 --wait=true --timeout=60s
wait_for "its pin goes with it" 120 not_mounted "$runner_pin"
wait_for "... and removes it (after the unmount)" 60 absent "$runner_pin"
diag_state
stop_up
check "after a clean stop no pin of this agent's pods is mounted" 0 test -z "$(own_pins)"
finish "stale-pins"
