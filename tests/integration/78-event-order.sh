#!/usr/bin/env bash
# The order of a pod's Events (docs/agent.md, "Container lifecycle Events"): the scheduler's
# Scheduled and the agent's Created, Started and DevicesAllocated are named as Kubernetes names
# them, `<pod>.<hex of the time in nanoseconds>` (the agent's with a serial after it), so that
# name order is the order they happened in. `kubectl describe pod` sorts by timestamp, whose
# ties (one second holds them all) keep the list's order, the name's: Scheduled comes before
# Created, Created before Started. The agent writes Events on four connections at once (src/agent/
# events.c); each pod still gets each Event once, from kubelet on its node.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
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

started_events() { # pod: how many Started Events it has
  "${kc[@]}" get events --field-selector "involvedObject.name=$1" -o 'jsonpath={.items[*].reason}' 2>/dev/null |
    tr ' ' '\n' | grep -c '^Started$'
}
line_of() { # file, text: the number of the first line holding text (0: none)
  local n
  n=$(grep -n -m1 -- "$2" "$1" | cut -d: -f1)
  echo "${n:-0}"
}

start_up "$tmp/up.log" --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name order-node \
  --pod-network host

pods=(order-a order-b order-c)
for pod in "${pods[@]}"; do
  cat >>"$tmp/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $pod}
spec:
  runtimeClassName: process
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 1}}
---
EOF
done
check "create the pods" 0 "${kc[@]}" apply -f "$tmp/pods.yaml"
for pod in "${pods[@]}"; do
  poll "$pod Succeeded" 60 Succeeded "${kc[@]}" get pod "$pod" -o 'jsonpath={.status.phase}'
  poll "$pod's Started Event" 120 1 started_events "$pod"
done

for pod in "${pods[@]}"; do
  check "$pod's Events by name" 0 "${kc[@]}" get events --field-selector "involvedObject.name=$pod" \
    -o 'jsonpath={range .items[*]}{.metadata.name} {.reason} {.source.component} {.count}{"\n"}{end}'
  cp "$tmp/out" "$tmp/$pod.events"
  for reason in Created Started DevicesAllocated; do
    got=$(awk -v r="$reason" '$2 == r && $3 == "kubelet" && $4 == 1' "$tmp/$pod.events" | wc -l)
    [[ $got -eq 1 ]] || { echo "FAIL $pod: one $reason from kubelet, counted once, not $got:"; cat "$tmp/$pod.events"; failures=$((failures + 1)); }
  done
  got=$(awk '$2 == "Scheduled" && $3 == "default-scheduler"' "$tmp/$pod.events" | wc -l)
  [[ $got -eq 1 ]] || { echo "FAIL $pod: one Scheduled, not $got"; failures=$((failures + 1)); }
  # Kubernetes' shape: the pod's name, a dot, the time's hex (the agent's: and a serial)
  names=$(grep -cE "^$pod\.[0-9a-f]{16}([0-9a-f]{4})? " "$tmp/$pod.events" || true)
  [[ $names -ge 4 && $names -eq $(wc -l <"$tmp/$pod.events") ]] ||
    { echo "FAIL $pod: every name is the pod's and a time:"; cat "$tmp/$pod.events"; failures=$((failures + 1)); }
  scheduled=$(line_of "$tmp/$pod.events" " Scheduled ")
  created=$(line_of "$tmp/$pod.events" " Created ")
  started=$(line_of "$tmp/$pod.events" " Started ")
  [[ $scheduled -gt 0 && $created -gt $scheduled && $started -gt $created ]] ||
    { echo "FAIL $pod: listed Scheduled, Created, Started, in that order:"; cat "$tmp/$pod.events"; failures=$((failures + 1)); }

  check "describe $pod" 0 "${kc[@]}" describe pod "$pod"
  sed -n '/^Events:/,$p' "$tmp/out" >"$tmp/$pod.describe"
  scheduled=$(line_of "$tmp/$pod.describe" " Scheduled ")
  created=$(line_of "$tmp/$pod.describe" " Created ")
  started=$(line_of "$tmp/$pod.describe" " Started ")
  [[ $scheduled -gt 0 && $created -gt $scheduled && $started -gt $created ]] ||
    { echo "FAIL describe $pod: Scheduled, Created, Started, in that order:"; cat "$tmp/$pod.describe"; failures=$((failures + 1)); }
done

stop_up
finish "event order"
