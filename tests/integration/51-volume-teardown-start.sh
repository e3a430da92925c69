#!/usr/bin/env bash
# Pods deleted while their containers start (docs/reliability.md, "Volumes and starts"): with
# `xpool up --simulate` and the process runtime, 12 pods each mount a Secret (a tmpfs of its own
# on the node) and a ConfigMap (files on the node's disk); their deletions come 8 i^2 ms after
# the create for pod i (0, 8, 32, ..., 800 ms), so that some land before the start, some while it
# is in flight (the agent's starter threads) and some after it; the last pod's comes once its
# container started, so that one deletion after a start is there however slow the starts are
# (a start at load 30 under ASan can take longer than the last fixed delay). Each container checks its two files every 50 ms until its
# SIGTERM and writes to a marker when one is missing: the agent must not tear a volume down
# under a process that still runs. Once every pod is gone, nothing of them is mounted below the
# agent's volumes directory, nor left in it. At least one container must have started, and one
# pod's deletion must have come after its container's start, or the checks prove nothing.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (each Secret volume is a tmpfs mount)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v findmnt >/dev/null || { echo "SKIP: findmnt is not installed"; exit 77; }
data=$tmp/data
marks=$tmp/marks
pods=12
up_pid=
delete_pids=()
stop_up() {
  kill -KILL "${delete_pids[@]}" 2>/dev/null || true
  [[ -n "$up_pid" ]] || return 0
  kill -TERM "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT

log=$tmp/up.log
"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name teardown-node \
  --pod-network host --default-runtime process >"$log" 2>&1 &
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
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)
server=$(sed -n 's/^[[:space:]]*server:[[:space:]]*//p' "$KUBECONFIG" | head -1)

check "create secret" 0 "${k[@]}" create secret generic s --from-literal=k=secret-value
check "create configmap" 0 "${k[@]}" create configmap cm --from-literal=k=config-value
mkdir -p "$marks"
: >"$marks/lost"
# $1: the pod's mount points; checks the files until SIGTERM (60 s at most: bounded)
cat >"$tmp/watch.sh" <<'EOF'
m=$1 marks=$2
trap 'exit 0' TERM
: >"$marks/$NAME.started"
i=0
while [ $i -lt 1200 ]; do
  [ -f "$m/sec/k" ] && [ -f "$m/cfg/k" ] || { echo "$NAME: a volume's file went at check $i" >>"$marks/lost"; exit 1; }
  i=$((i + 1))
  sleep 0.05
done
EOF
: >"$tmp/pods.yaml"
for i in $(seq 0 $((pods - 1))); do
  mkdir -p "$tmp/mnt/p$i/sec" "$tmp/mnt/p$i/cfg"
  cat >>"$tmp/pods.yaml" <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: p$i}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: busybox
    command: ["sh", "$tmp/watch.sh", "$tmp/mnt/p$i", "$marks"]
    env:
    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumeMounts:
    - {name: sec, mountPath: $tmp/mnt/p$i/sec}
    - {name: cfg, mountPath: $tmp/mnt/p$i/cfg}
  volumes:
  - {name: sec, secret: {secretName: s}}
  - {name: cfg, configMap: {name: cm}}
EOF
done

check "create the pods" 0 "${k[@]}" create -f "$tmp/pods.yaml"
for i in $(seq 0 $((pods - 1))); do
  (
    if [[ $i -lt $((pods - 1)) ]]; then
      sleep "$(printf '0.%03d' $((8 * i * i)))"
    else # the last once its container started (bounded), however long the starts take at load
      for ((t = 0; t < 1200; t++)); do
        [[ ! -e "$marks/p$i.started" ]] || break
        sleep 0.1
      done
    fi
    [[ ! -e "$marks/p$i.started" ]] || : >"$marks/p$i.deleted-after-start"
    curl -fsS -o /dev/null --max-time 20 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" \
      -X DELETE "$server/api/v1/namespaces/default/pods/p$i"
  ) &
  delete_pids+=($!)
done
for pid in "${delete_pids[@]}"; do wait "$pid" || { echo "FAIL a deletion failed"; failures=$((failures + 1)); }; done
delete_pids=()

left() { "${k[@]}" get pods -o name | wc -l; }
poll "every pod gone" 60 0 left
volumes_left() { find "$data/agent/volumes" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
poll "no pod's volume directory left" 60 0 volumes_left
check "nothing mounted below the agent's volumes" 0 sh -c "findmnt -rn -o TARGET | grep -c '^$data/agent/volumes/' || true"
expect_exact "no volume mount" "$tmp/out" "0"
check "no container saw its volume go" 0 cat "$marks/lost"
expect_exact "no marker" "$tmp/out" ""
started=$(find "$marks" -name '*.started' | wc -l)
echo "$started of $pods containers ran (the others' deletions came before their start)"
[[ $started -ge 1 ]] || { echo "FAIL no container started: the checks above saw nothing"; failures=$((failures + 1)); }
deleted_running=$(find "$marks" -name '*.deleted-after-start' | wc -l)
echo "$deleted_running pods were deleted after their container started"
[[ $deleted_running -ge 1 ]] || { echo "FAIL no pod was deleted after its container started"; failures=$((failures + 1)); }
finish "volume teardown during starts"
