#!/usr/bin/env bash
# xpool up with the seed's simulated node (pods as processes of the node: --default-runtime
# process): the node registers Ready with its devices; the seed's pod with a command applied with
# kubectl runs to Succeeded and its environment names exactly its devices;
# xpool run streams the output and exits with the command's exit code (and 127 for a missing
# command), deleting its pod; kubectl logs; a restart of xpool up reuses its node token.
# The Node's InternalIP (and so hostIP, and podIP on the host's network) is the address of the
# default route's interface as the kubelet's, not 127.0.0.1, while logs still come through the
# agent's loopback endpoint.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
node=up-node
up_pid=

stop_up() { # signal: stops xpool up, if it runs
  [[ -n "$up_pid" ]] || return 0
  kill "-$1" "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up KILL; release_tmp; rm -rf "$tmp"' EXIT

start_up() { # log name: starts xpool up on a free port, waits (bounded) for its one line
  local log=$tmp/$1.log deadline=$((SECONDS + 60))
  : >"$log"
  "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name "$node" \
    --backoff-initial 200ms --pod-network host --default-runtime process >"$log" 2>&1 &
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
start_up first
expect_in "the line says how to use it" "$tmp/first.log" "export KUBECONFIG=$KUBECONFIG"
poll "the node is Ready" 60 True \
  kubectl get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
check "the node's devices" 0 kubectl get node "$node" -o json
expect_in "the node offers the GPU" "$tmp/out" '"nvidia.com/gpu": "1"'
expect_in "the node offers the NPUs" "$tmp/out" '"vendor.com/npu": "2"'
# the machine's own address as kubelet reports it: the default route's interface's (IPv4 first)
host_address() {
  local family dev
  for family in -4 -6; do
    dev=$(ip "$family" route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
    [[ -n "$dev" ]] || continue
    ip "$family" -o addr show dev "$dev" scope global 2>/dev/null | awk '!done {split($4, a, "/"); print a[1]; done = 1}'
    return 0
  done
  echo 127.0.0.1 # no default route: xpool up says so and keeps the loopback address
}
want_ip=$(host_address)
check "kubectl get nodes -o wide" 0 kubectl get nodes -o wide
# the INTERNAL-IP column of the node's row, found by the header
got_ip=$(awk -v n="$node" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "INTERNAL-IP") c = i } $1 == n && c { print $c }' "$tmp/out")
[[ "$got_ip" == "$want_ip" ]] || {
  echo "FAIL INTERNAL-IP '$got_ip', expected the machine's address '$want_ip':"; cat "$tmp/out"; failures=$((failures + 1)); }

# the seed's pod as processes of the node (with a command: 26-containers runs it from its image):
# placed, run, Succeeded, with exactly its three devices in its environment
cat >"$tmp/ai-training.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: ai-training
spec:
  restartPolicy: Never
  containers:
  - name: trainer
    image: ai-framework:latest
    command: [sh, -c, 'echo "training on the devices xpool gave me:"; env | grep _VISIBLE_DEVICES= | sort']
    resources:
      limits:
        nvidia.com/gpu: 1
        vendor.com/npu: 2
EOF
check "apply the seed's pod" 0 kubectl apply -f "$tmp/ai-training.yaml"
poll "the seed's pod Succeeded" 60 Succeeded \
  kubectl get pod ai-training -o 'jsonpath={.status.phase}'
poll "its exit code" 60 0 \
  kubectl get pod ai-training -o 'jsonpath={.status.containerStatuses[0].state.terminated.exitCode}'
check "its hostIP and podIP (the host's network)" 0 kubectl get pod ai-training -o 'jsonpath={.status.hostIP} {.status.podIP}'
[[ "$(cat "$tmp/out")" == "$want_ip $want_ip" ]] || {
  echo "FAIL hostIP and podIP '$(cat "$tmp/out")', expected the node's address twice ($want_ip)"; failures=$((failures + 1)); }
check "kubectl logs" 0 kubectl logs ai-training
cp "$tmp/out" "$tmp/seed.log"
expect_in "its output" "$tmp/seed.log" "training on the devices xpool gave me:"
expect_count "the GPU for CUDA" "$tmp/seed.log" 1 "CUDA_VISIBLE_DEVICES=0"
expect_count "the GPU for the NVIDIA runtime" "$tmp/seed.log" 1 "NVIDIA_VISIBLE_DEVICES="
expect_in "all three devices, by id" "$tmp/seed.log" "XPOOL_VISIBLE_DEVICES=sim-gpu-0,sim-npu-0,sim-npu-1"
# CUDA's list holds one device: no comma in it
if grep -E '^(CUDA|NVIDIA)_VISIBLE_DEVICES=.*,' "$tmp/seed.log"; then
  echo "FAIL the pod sees more than its one GPU"; failures=$((failures + 1))
fi
check "kubectl logs --tail" 0 kubectl logs ai-training --tail 1
expect_count "--tail 1 is one line" "$tmp/out" 1 "="
check "xpool logs" 0 "$xpool" logs ai-training
expect_in "xpool logs shows the same" "$tmp/out" "XPOOL_VISIBLE_DEVICES=sim-gpu-0,sim-npu-0,sim-npu-1"

# xpool run: the exit code, the output as it comes, the pod deleted afterwards
check "xpool run exits with the command's code" 7 "$xpool" run --gpu 1 -- sh -c 'echo about to fail; exit 7'
expect_in "xpool run streams the output" "$tmp/out" "about to fail"
check "xpool run output of a GPU pod" 0 "$xpool" run --gpu 1 -- sh -c 'echo "gpu=$NVIDIA_VISIBLE_DEVICES xpool=$XPOOL_VISIBLE_DEVICES"'
expect_in "the GPU is named" "$tmp/out" "xpool=sim-gpu-0"
check "xpool run with --env and args" 0 "$xpool" run --env GREETING=hello -- sh -c 'echo "$GREETING $0"' world
expect_in "env and args reach the command" "$tmp/out" "hello world"
check "xpool run of a missing command" 127 "$xpool" run -- /nonexistent/command
expect_in "says why it did not start" "$tmp/err" "could not start"
check "xpool run killed by a signal, dollars as typed" 137 "$xpool" run -- sh -c 'kill -9 $$'
check "xpool run --node by the Node's name" 0 "$xpool" run --node "$node" -- sh -c 'echo on $XPOOL_NODE_NAME'
expect_in "ran there" "$tmp/out" "on $node"
# each attempt ends once xpool run has shown its line (in $tmp/out, where check puts its
# output; 60 s at most): the API serves the newest attempt's log and the one before, and with
# the first restart at once and a 200 ms back-off, three attempts of a command that exits at once
# can be over before xpool run first looks (under the sanitizers), taking attempt 0 (an attempt
# of a second each was a guess at load)
check "xpool run --restart OnFailure" 0 "$xpool" run --restart OnFailure -- sh -c "n=\$(cat $tmp/count 2>/dev/null || echo 0); echo \$((n+1)) >$tmp/count; echo attempt \$n; i=0; until grep -q \"^attempt \$n\$\" $tmp/out || [ \$i -ge 600 ]; do sleep 0.1; i=\$((i+1)); done; [ \$n -ge 2 ]"
expect_in "the first attempt's output" "$tmp/out" "attempt 0"
expect_in "the last attempt's output" "$tmp/out" "attempt 2"
check "xpool run --keep keeps the pod" 0 "$xpool" run --keep --name kept -- true
check "the kept pod" 0 kubectl get pod kept -o 'jsonpath={.status.phase}'
expect_in "the kept pod Succeeded" "$tmp/out" "Succeeded"
check "pods left" 0 kubectl get pods -o name
expect_count "xpool run deleted its other pods" "$tmp/out" 2 "pod/"

# more than the node has: Pending with the scheduler's reason, Ctrl-C deletes the pod
"$xpool" run --name too-big --gpu 2 -- true >"$tmp/big.out" 2>"$tmp/big.err" &
run_pid=$!
poll "the pod waits" 60 Pending kubectl get pod too-big -o 'jsonpath={.status.phase}'
# Ctrl-C once xpool run has printed why the pod waits (the scheduler's reason comes after the
# Pending phase; a sleep of 1 s was a guess at load)
wait_for "xpool run says why the pod waits" 60 grep -qF "is Pending: " "$tmp/big.err" || true
kill -INT "$run_pid"
rc=0; wait "$run_pid" || rc=$?
[[ $rc -eq 130 ]] || { echo "FAIL xpool run after Ctrl-C: exit $rc, expected 130"; failures=$((failures + 1)); }
expect_in "the Pending reason is printed" "$tmp/big.err" "is Pending: "
expect_in "it names the GPUs" "$tmp/big.err" "nvidia.com/gpu"
poll "Ctrl-C deleted the pod" 60 "" kubectl get pod too-big -o name --ignore-not-found

# a restart keeps the node token and the pods' history
token_before=$(cat "$data/agent/node.token")
stop_up TERM
start_up second
[[ "$(cat "$data/agent/node.token")" == "$token_before" ]] || {
  echo "FAIL the node token changed across a restart"; failures=$((failures + 1)); }
check "tokens" 0 "$xpool" token list --data-dir "$data"
expect_count "one node token" "$tmp/out" 1 "$node"
poll "the node is Ready again" 60 True \
  kubectl get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
check "the seed's pod is still Succeeded" 0 kubectl get pod ai-training -o 'jsonpath={.status.phase}'
expect_in "still Succeeded" "$tmp/out" "Succeeded"
check "run after the restart" 3 "$xpool" run -- sh -c 'exit 3'

# the sanitizer builds report into the daemon's output; a clean stop lets LeakSanitizer speak
stop_up TERM
for log in first second; do
  if grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$tmp/$log.log"; then
    echo "FAIL sanitizer report from xpool up ($log)"; failures=$((failures + 1))
  fi
done
finish "xpool up"
