#!/usr/bin/env bash
# The agent must not forget (docs/agent.md, "Writes that must land" and "Interrupted starts"):
# (a) a pod that exits with code 3 while the server is down for 12 s (SIGKILLed, then started
#     again on the same data directory and port) is Failed with exit code 3 a few seconds after
#     the server is back;
# (b) a pod deleted just before that outage, whose container stops during it, is gone after it;
#     a pod whose container fails during it is started again during it (its volumes, the token's
#     among them, keep their last version while the server cannot be asked);
# (c) an agent frozen (SIGSTOP) in the middle of starting two containers, then SIGKILLed and
#     started again: the start whose shim is still setting up is finished (the shim was held up
#     opening its log, a FIFO the test opens only after the new agent is up), the one whose shim
#     was killed with the agent is redone; neither pod is Failed with "the shim died", and each
#     container ran exactly once (it appends a line to a file);
# (d) a pod that exits (code 3) while the server is down again, and the agent too is killed and
#     started again during that outage: the next agent reports the exit, and does not run the
#     container again.
source "$(dirname "$0")/lib.sh"
data=$tmp/server
share=$tmp/share # what the pods and the test share; no xpool directory is below it
server_pid= agent_pid=
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"
mkdir -p "$share"

cleanup() {
  [[ -n "$agent_pid" ]] && kill -CONT "$agent_pid" 2>/dev/null
  for pid in $agent_pid $server_pid; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  # the shims and containers of this test: their state directories name our scratch directory
  pkill -KILL -f "$tmp/agent/containers" 2>/dev/null || true
  pkill -KILL -f "$share/" 2>/dev/null || true
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL $*"; failures=$((failures + 1)); }


start_server() { # listen address
  "$xpool" server --listen "$1" --data-dir "$data" >>"$tmp/server.log" 2>&1 &
  server_pid=$!
  diag_log "$tmp/server.log"
}
server_up() { "$xpool" get nodes >/dev/null 2>&1; }

start_agent() {
  "$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
    --node-name n1 --data-dir "$tmp/agent" --listen 127.0.0.1:0 --heartbeat 500ms \
    --pod-network host --default-runtime process >>"$tmp/agent.log" 2>&1 &
  agent_pid=$!
  diag_log "$tmp/agent.log"
}

phase() { "$xpool" get pod "$1" -o yaml 2>/dev/null | sed -n 's/^  phase: //p'; }
phase_is() { [[ "$(phase "$1")" == "$2" ]]; }
pod_gone() { ! "$xpool" get pod "$1" >/dev/null 2>&1; }
exists() { [[ -e "$1" ]]; }

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
start_server 127.0.0.1:0
deadline=$((SECONDS + 15)) url=
until [[ -n "$url" ]]; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
  sleep 0.1
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
done
port=${url##*:}
start_agent
node_ready() { "$xpool" get node n1 -o yaml | grep 'reason: AgentReady' >/dev/null; }
wait_until "n1 registers Ready" 20 node_ready
[[ $failures -eq 0 ]] || { tail -n 20 "$tmp/agent.log"; exit 1; }

# ---- (a) and (b): a 12 s outage -----------------------------------------------------------------
cat >"$tmp/outage.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: exit3}
spec:
  nodeName: n1
  restartPolicy: Never
  containers:
  - name: main
    image: none
    command: ["sh", "-c", "touch $share/exit3.up; until [ -e $share/go ]; do sleep 0.1; done; exit 3"]
---
apiVersion: v1
kind: Pod
metadata: {name: deleted}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 60
  containers:
  - name: main
    image: none
    command: ["sh", "-c", "trap 'touch $share/deleted.term; until [ -e $share/go ]; do sleep 0.1; done; exit 0' TERM; touch $share/deleted.up; while :; do sleep 0.1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: again}
spec:
  nodeName: n1
  containers:
  - name: main
    image: none
    command: ["sh", "-c", "if [ -e $share/again.1 ]; then touch $share/again.2; exec sleep 600; fi; touch $share/again.1; until [ -e $share/go ]; do sleep 0.1; done; exit 1"]
YAML
check "create the outage's pods" 0 "$xpool" apply -f "$tmp/outage.yaml"
wait_until "exit3 runs" 20 phase_is exit3 Running
wait_until "deleted runs" 20 phase_is deleted Running
wait_until "exit3's command is up" 10 exists "$share/exit3.up"
wait_until "deleted's command is up" 10 exists "$share/deleted.up"
wait_until "again's command is up" 10 exists "$share/again.1"
check "delete the pod just before the outage" 0 "$xpool" delete pod deleted
# the agent saw the deletion: the container got its SIGTERM and waits for the outage
wait_until "the deleted pod's container gets SIGTERM" 10 exists "$share/deleted.term"
phase_is deleted Running || fail "deleted is not Running before the outage: $(phase deleted)"

kill -KILL "$server_pid"; wait "$server_pid" 2>/dev/null || true
outage_start=$SECONDS
touch "$share/go" # both containers end now, while the server is down
sleep 12
# its token volume (every pod has one) keeps its last version: the restart needs no server
wait_until "again restarts (after its 10 s back-off) while the server is down" 20 exists "$share/again.2"
start_server "127.0.0.1:$port"
wait_until "the server comes back" 15 server_up
back=$SECONDS
wait_until "exit3 is Failed after the outage" 10 phase_is exit3 Failed
a_s=$((SECONDS - back))
wait_until "the pod deleted before the outage is gone after it" 10 pod_gone deleted
echo "outage $((back - outage_start)) s; after it: exit3 Failed within $a_s s, deleted gone within $((SECONDS - back)) s"
check "exit3's status" 0 "$xpool" get pod exit3 -o yaml
expect_in "exit3 exit code" "$tmp/out" "exitCode: 3"
expect_in "exit3 reason" "$tmp/out" "reason: Error"
grep -q "trying again in" "$tmp/agent.log" || fail "the agent did not say it retries its writes"
grep -q "volume kube-api-access-.* keeps its last version" "$tmp/agent.log" || fail "the agent did not say why again started without the server"
check "delete again" 0 "$xpool" delete pod again

# ---- (c): an agent frozen and killed in the middle of two starts ---------------------------------
# Each shim is held up opening its log (a FIFO made at the log's path before the agent sees the
# pod): the agent is then between writing the start's state and hearing from the shim.
cat >"$tmp/starts.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: finish}
spec:
  nodeName: n1
  restartPolicy: Never
  containers:
  - {name: main, image: none, command: ["sh", "-c", "echo ran >>$share/finish.ran; echo hello-finish"]}
---
apiVersion: v1
kind: Pod
metadata: {name: redo}
spec:
  nodeName: n1
  restartPolicy: Never
  containers:
  - {name: main, image: none, command: ["sh", "-c", "echo ran >>$share/redo.ran; echo hello-redo"]}
YAML
uid_of() { "$xpool" get pod "$1" -o yaml | sed -n 's/^  uid: //p'; }
kill -STOP "$agent_pid"
check "create the pods to start" 0 "$xpool" apply -f "$tmp/starts.yaml"
declare -A uid fifo
for p in finish redo; do
  uid[$p]=$(uid_of "$p")
  [[ -n "${uid[$p]}" ]] || fail "no uid for pod $p"
  dir=$tmp/agent/logs/default_${p}_${uid[$p]}/main
  mkdir -p "$dir"
  fifo[$p]=$dir/0.log
  mkfifo "${fifo[$p]}"
done
kill -CONT "$agent_pid"
shim_of() { # pod: the pid of its shim once detached (it leads its own session; the first
  # process of the shim, about to exit, does not)
  local pid
  for pid in $(pgrep -f "__shim $tmp/agent/containers/${uid[$1]}/main\$"); do
    [[ $(ps -o sid= -p "$pid" | tr -d ' ') == "$pid" ]] && echo "$pid"
  done
}
mid_start() { # pod: its spec written, its shim alive, nothing started yet
  local d=$tmp/agent/containers/${uid[$1]}/main
  [[ -e $d/spec.json && ! -e $d/running.json && ! -e $d/exit.json && -n $(shim_of "$1") ]]
}
wait_until "finish's start is under way" 10 mid_start finish
wait_until "redo's start is under way" 10 mid_start redo
shim_finish=$(shim_of finish)
shim_redo=$(shim_of redo)
kill -STOP "$agent_pid" # frozen in the middle of both starts
sleep 0.2
kill -KILL "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
# the agent's service killed as a whole takes redo's shim with it (it had not started anything)
[[ -n "$shim_redo" ]] && kill -KILL "$shim_redo"
rm -f "${fifo[redo]}"
start_agent
wait_until "redo runs once the agent is back" 20 phase_is redo Succeeded
# finish's shim still waits on its log: the new agent must wait for it, not fail the pod
sleep 1
[[ "$(phase finish)" != Failed ]] || fail "finish was failed while its shim was still starting it"
[[ -n "$shim_finish" ]] && kill -0 "$shim_finish" 2>/dev/null ||
  fail "finish's shim did not outlive the agent"
timeout 20 cat "${fifo[finish]}" >"$share/finish.out" &
reader=$!
wait_until "finish is Succeeded once its shim goes on" 20 phase_is finish Succeeded
wait "$reader" 2>/dev/null || true
expect_in "finish's output came through its log" "$share/finish.out" "stdout F hello-finish"
sleep 1 # a second run, if any, would have appended by now
for p in finish redo; do
  check "$p's status" 0 "$xpool" get pod "$p" -o yaml
  expect_in "$p exit code" "$tmp/out" "exitCode: 0"
  expect_count "$p is not failed for the agent's crash" "$tmp/out" 0 "the shim died"
  runs=$(wc -l <"$share/$p.ran" 2>/dev/null || echo 0)
  [[ $runs -eq 1 ]] || fail "$p ran $runs times, expected once"
done
check "redo's logs" 0 "$xpool" logs redo
expect_in "redo's output" "$tmp/out" "hello-redo"

# ---- (d): the agent itself restarted during an outage, after its pod exited ----------------------
# The exit's record stays on the node until the server holds it: the next agent reports it and
# does not run the container again.
cat >"$tmp/restart.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: exit3-restarted}
spec:
  nodeName: n1
  restartPolicy: Never
  containers:
  - name: main
    image: none
    command: ["sh", "-c", "echo ran >>$share/exit3-restarted.ran; until [ -e $share/go2 ]; do sleep 0.1; done; exit 3"]
YAML
check "create the pod of the second outage" 0 "$xpool" apply -f "$tmp/restart.yaml"
wait_until "exit3-restarted runs" 20 phase_is exit3-restarted Running
kill -KILL "$server_pid"; wait "$server_pid" 2>/dev/null || true
touch "$share/go2"
tried() { grep -q "writing the status of pod default/exit3-restarted failed" "$tmp/agent.log"; }
wait_until "the agent tries to write the exit during the second outage" 10 tried
kill -KILL "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
start_agent # it waits for the server
sleep 2
start_server "127.0.0.1:$port"
wait_until "the server comes back again" 15 server_up
back=$SECONDS
wait_until "exit3-restarted is Failed after the agent's restart" 15 phase_is exit3-restarted Failed
echo "second outage: exit3-restarted Failed within $((SECONDS - back)) s of the server's return"
check "exit3-restarted's status" 0 "$xpool" get pod exit3-restarted -o yaml
expect_in "exit3-restarted exit code" "$tmp/out" "exitCode: 3"
expect_in "exit3-restarted not restarted" "$tmp/out" "restartCount: 0"
runs=$(wc -l <"$share/exit3-restarted.ran" 2>/dev/null || echo 0)
[[ $runs -eq 1 ]] || fail "exit3-restarted ran $runs times, expected once"

finish agent-outage
