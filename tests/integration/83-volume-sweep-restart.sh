#!/usr/bin/env bash
# An agent killed with pods' teardowns still queued (docs/agent.md, "Teardown"): four pods with a
# Secret volume (a tmpfs of its own on the node) are deleted, and the agent is SIGKILLed as soon
# as the API shows them gone, when its cleaner thread may not have removed their volumes yet. A
# volume directory is also planted, with a tmpfs holding a "secret", for a uid no pod has: what
# a teardown lost with an earlier agent leaves whatever the timing of the kill above. The next
# agent must remove every such directory and its tmpfs (60 s at most), and keep the volumes of
# the pod that still runs. The same for the pods' log directories (DATA/logs/<ns>_<name>_<uid>,
# what the containers printed) and the runtime's DATA/containers/.pods/<uid>: one of each is
# planted for the lost uid; the running pod's log directory stays.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (each Secret volume is a tmpfs mount)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
k=(kubectl --request-timeout=20s)
data=$tmp/server
agent_data=$tmp/agent
server_pid= agent_pid=
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"

cleanup() {
  for pid in $agent_pid $server_pid; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

start_agent() {
  "$xpool" agent --server "$base" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
    --node-name n1 --data-dir "$agent_data" --listen 127.0.0.1:0 --heartbeat 500ms \
    --pod-network host --default-runtime process >>"$tmp/agent.log" 2>&1 &
  agent_pid=$!
  diag_log "$tmp/agent.log"
}

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
start_server "$data"
start_agent
node_ready() { "$xpool" get node n1 -o yaml | grep 'reason: AgentReady' >/dev/null; }
wait_until "n1 registers Ready" 60 node_ready

check "create secret" 0 "${k[@]}" create secret generic s --from-literal=k=secret-value
: >"$tmp/pods.yaml"
for p in keep gone-0 gone-1 gone-2 gone-3; do
  mkdir -p "$tmp/mnt/$p/sec" # a process pod's mount point: below the shared scratch directory
  cat >>"$tmp/pods.yaml" <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: $p}
spec:
  nodeName: n1
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i + 1)); done"]
    volumeMounts:
    - {name: sec, mountPath: $tmp/mnt/$p/sec}
  volumes:
  - {name: sec, secret: {secretName: s}}
EOF
done
check "create the pods" 0 "${k[@]}" create -f "$tmp/pods.yaml"
phase_is() { [[ "$("$xpool" get pod "$1" -o yaml 2>/dev/null | sed -n 's/^  phase: //p')" == Running ]]; }
declare -A uid
for p in keep gone-0 gone-1 gone-2 gone-3; do
  wait_until "$p runs" 60 phase_is "$p"
  uid[$p]=$("$xpool" get pod "$p" -o yaml | sed -n 's/^  uid: //p' | head -1)
  [[ -d "$agent_data/volumes/${uid[$p]}" ]] || { echo "FAIL $p has no volume directory"; failures=$((failures + 1)); }
done
[[ $failures -eq 0 ]] || finish "volume sweep after an agent's SIGKILL"

check "delete the gone pods" 0 "${k[@]}" delete pod gone-0 gone-1 gone-2 gone-3 --wait=false
gone_left() { "${k[@]}" get pods -o name 2>/dev/null | grep -c '/gone-' || true; }
poll "the gone pods are gone from the API" 60 0 gone_left
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
agent_pid=
queued=0
for p in gone-0 gone-1 gone-2 gone-3; do [[ ! -d "$agent_data/volumes/${uid[$p]}" ]] || queued=$((queued + 1)); done
echo "$queued of 4 deleted pods' volumes were still there when the agent was killed"

# what a teardown lost with an earlier agent leaves: a Secret's tmpfs for a uid no pod has
lost=$agent_data/volumes/0badc0de-0000-4000-8000-000000000001
mkdir -p "$lost/sec"
mount -t tmpfs tmpfs "$lost/sec"
echo secret-value >"$lost/sec/k"
lost_logs=$agent_data/logs/default_lost_${lost##*/}
lost_pod=$agent_data/containers/.pods/${lost##*/}
mkdir -p "$lost_logs/c" "$lost_pod"
echo printed-secret >"$lost_logs/c/0.log"
echo x >"$lost_pod/hosts"

start_agent
leftovers() { # the lost uids' directories, and their tmpfs mounts, left
  local n=0 u
  for u in "${uid[gone-0]}" "${uid[gone-1]}" "${uid[gone-2]}" "${uid[gone-3]}" "${lost##*/}"; do
    [[ ! -e "$agent_data/volumes/$u" ]] || n=$((n + 1))
    n=$((n + $(awk -v t="$agent_data/volumes/$u/" 'index($5, t) == 1' /proc/self/mountinfo | wc -l)))
    n=$((n + $(compgen -G "$agent_data/logs/*_$u" | wc -l)))
    [[ ! -e "$agent_data/containers/.pods/$u" ]] || n=$((n + 1))
  done
  echo "$n"
}
poll "the next agent removed the lost volumes, tmpfs, logs and .pods" 60 0 leftovers
check "the running pod keeps its volume" 0 test -f "$agent_data/volumes/${uid[keep]}/sec/k"
check "the running pod keeps its logs" 0 test -d "$agent_data/logs/default_keep_${uid[keep]}"
wait_until "keep still runs" 60 phase_is keep
finish "volume sweep after an agent's SIGKILL"
