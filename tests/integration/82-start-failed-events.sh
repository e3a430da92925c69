#!/usr/bin/env bash
# A container that did not start has the kubelet's Events (docs/agent.md, "Container lifecycle
# Events"): a Warning Failed "Error: <why>", and no Started. Its exec failed (a command not in the
# image: Created, then Failed), or the agent refused it before the runtime (no image on a node
# whose default runtime runs images: Failed alone). And `xpool image import` without --data-dir
# says where it put the image when it made a new store there; `xpool top nodes` shows what
# `kubectl top nodes` does, truncated as it.
# Needs root, crun and overlayfs (else exit 77, saying which).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (overlay mounts, namespaces)"; exit 77; }
command -v crun >/dev/null || { echo "SKIP: no crun (scripts/install-deps installs it)"; exit 77; }
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || { echo "SKIP: this kernel has no overlayfs"; exit 77; }
data=$tmp/data
up_pid=
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
diag_cluster "$KUBECONFIG"

cleanup() {
  stop_up
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- the image import's note: once, when it made the store; the exit code unchanged ------------
"$src/scripts/seed-image" "$tmp/ai-framework.tar"
store=$tmp/state/xpool/agent/images
rc=0
XDG_STATE_HOME=$tmp/state "$xpool" image import "$tmp/ai-framework.tar" >"$tmp/import.out" 2>"$tmp/import.err" || rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL the import without --data-dir exited $rc:"; cat "$tmp/import.err"; failures=$((failures + 1)); }
notes=$(grep -c "new image store in $store .*--data-dir" "$tmp/import.err" || true)
[[ $notes -eq 1 && $(wc -l <"$tmp/import.err") -eq 1 ]] ||
  { echo "FAIL the import names the new store and --data-dir, in one line:"; cat "$tmp/import.err"; failures=$((failures + 1)); }
[[ -d $store ]] || { echo "FAIL no store in $store"; failures=$((failures + 1)); }
rc=0
XDG_STATE_HOME=$tmp/state "$xpool" image import "$tmp/ai-framework.tar" >"$tmp/import.out" 2>"$tmp/import.err" || rc=$?
[[ $rc -eq 0 && ! -s $tmp/import.err ]] ||
  { echo "FAIL a second import into the same store exits 0 and says nothing ($rc):"; cat "$tmp/import.err"; failures=$((failures + 1)); }
rc=0
"$xpool" image import --data-dir "$data/agent" "$tmp/ai-framework.tar" >"$tmp/import.out" 2>"$tmp/import.err" || rc=$?
[[ $rc -eq 0 && ! -s $tmp/import.err ]] ||
  { echo "FAIL an import with --data-dir exits 0 and says nothing ($rc):"; cat "$tmp/import.err"; failures=$((failures + 1)); }

start_up "$tmp/up.log" --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name failed-node \
  --pod-network host

reasons() { # pod: its Events' reasons, one a line
  "${kc[@]}" get events --field-selector "involvedObject.name=$1" -o 'jsonpath={range .items[*]}{.reason}{"\n"}{end}' 2>/dev/null
}
has_failed() { reasons "$1" | grep -c '^Failed$'; }
failed_events() { # pod, what Created is (1: there, 0: not), text of the message
  local pod=$1 created=$2 text=$3
  poll "$pod StartError" 60 StartError "${kc[@]}" get pod "$pod" \
    -o 'jsonpath={.status.containerStatuses[0].state.terminated.reason}'
  poll "$pod's Failed Event" 60 1 has_failed "$pod"
  check "$pod's Events" 0 "${kc[@]}" get events --field-selector "involvedObject.name=$pod" \
    -o 'jsonpath={range .items[*]}{.type}|{.reason}|{.source.component}|{.message}{"\n"}{end}'
  cp "$tmp/out" "$tmp/$pod.events"
  grep -q '|Started|' "$tmp/$pod.events" &&
    { echo "FAIL $pod: a Started Event for a container that did not start:"; cat "$tmp/$pod.events"; failures=$((failures + 1)); }
  [[ $(grep -c '|Created|' "$tmp/$pod.events") -eq $created ]] ||
    { echo "FAIL $pod: Created $created times:"; cat "$tmp/$pod.events"; failures=$((failures + 1)); }
  grep -qF "Warning|Failed|kubelet|Error: " "$tmp/$pod.events" && grep -qF -- "$text" "$tmp/$pod.events" ||
    { echo "FAIL $pod: a Warning Failed \"Error: ...$text...\" from kubelet:"; cat "$tmp/$pod.events"; failures=$((failures + 1)); }
  check "describe $pod" 0 "${kc[@]}" describe pod "$pod"
  expect_in "$pod's describe shows the Warning" "$tmp/out" "Warning  Failed"
}

# ---- 1: a command not in the image: Created, then Failed with the runtime's words --------------
check "run badcmd" 0 "${kc[@]}" run badcmd --image=ai-framework:latest --image-pull-policy=IfNotPresent \
  --restart=Never --command -- pythn
failed_events badcmd 1 'executable file `pythn` not found in $PATH'

# ---- 1, a process pod: the same ---------------------------------------------------------------
cat >"$tmp/badproc.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: badproc}
spec:
  runtimeClassName: process
  restartPolicy: Never
  containers:
  - {name: c, command: [/nonexistent/pythn]}
EOF
check "create badproc" 0 "${kc[@]}" apply -f "$tmp/badproc.yaml"
failed_events badproc 1 "pythn"

# ---- 2: no image, on a node whose default runtime runs images: Failed alone --------------------
cat >"$tmp/noimage.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec:
  restartPolicy: Never
  containers:
  - {name: c, command: [pythn]}
EOF
check "create noimage" 0 "${kc[@]}" apply -f "$tmp/noimage.yaml"
failed_events noimage 0 "container c has no image: runtime class crun runs containers from images"

# ---- xpool top nodes: kubectl top's figures, truncated as its (916Mi of 23.5Gi: 3%, not 4%) ---
# compared while the node's metrics stay the same reading (before and after both commands)
raw() { "${kc[@]}" get --raw /apis/metrics.k8s.io/v1beta1/nodes/failed-node 2>/dev/null; }
poll "the node's metrics" 120 0 bash -c "${kc[*]} top nodes >/dev/null 2>&1; echo \$?"
same=0
for _ in $(seq 10); do
  before=$(raw)
  "${kc[@]}" top nodes --no-headers >"$tmp/ktop" 2>&1 || true
  "$xpool" top nodes --kubeconfig "$KUBECONFIG" >"$tmp/xtop" 2>&1 || true
  [[ -n $before && $before == "$(raw)" ]] && { same=1; break; }
done
if [[ $same -eq 1 ]]; then
  read -r _ kcpu kcpup kmem kmemp <"$tmp/ktop"
  want="${kcpu%m} ${kcpup%\%} ${kmem%Mi} ${kmemp%\%}"
  got=$(awk '$1 == "failed-node" {print $2, $3, $4, $5}' "$tmp/xtop")
  [[ "$got" == "$want" ]] ||
    { echo "FAIL xpool top nodes shows kubectl top's figures ($want), not $got:"; cat "$tmp/ktop" "$tmp/xtop"; failures=$((failures + 1)); }
else
  echo "FAIL the node's metrics changed during each of 10 tries"; failures=$((failures + 1))
fi

finish "start-failed Events"
