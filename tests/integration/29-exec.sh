#!/usr/bin/env bash
# exec, attach, cp and port-forward with stock kubectl and the Python client, through the server
# to the agent (xpool up --simulate): output, stderr and exit codes; stdin; -it through a
# pseudo-terminal (script) with its size; the command in the container's namespaces and cgroup
# with its environment; kubectl cp both ways; kubectl run --rm -i; port-forward to a pod's port;
# pods/exec refused to a reader; bad input (no command, no upgrade, unknown protocols over
# WebSocket and SPDY, a huge resize message) answered with a Status, leaving no thread or process
# behind (/proc); a client that goes away takes its command with it.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v script >/dev/null || { echo "SKIP: script (util-linux) is not installed"; exit 77; }
/usr/bin/python3 -c 'import kubernetes.stream' 2>/dev/null ||
  { echo "SKIP: Debian's python3-kubernetes is not installed"; exit 77; }
data=$tmp/data
up_pid=
bg_pids=()
stop_all() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [[ -z "$up_pid" ]] || { kill -KILL "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; }
  # the containers outlive their agent by design: this run's own end here (the sleeper carries
  # the run's mark, the web server works in $tmp), and their shims with them
  for p in /proc/[0-9]*; do
    if [[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" == *"sleep 3600.$mark"* ||
          "$(readlink "$p/cwd" 2>/dev/null)" == "$tmp"/* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
# a marker only this run's commands carry, so that the process checks see no one else's
mark=$((RANDOM % 900 + 100))$$

# XPOOL_DEBUG=stream: the server logs how each stream's tunnel ended (a finished exec, below)
XPOOL_DEBUG=stream "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name exec-node --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc" \
  --backoff-initial 200ms >"$tmp/up.log" 2>&1 &
up_pid=$!
deadline=$((SECONDS + 60))
until grep -q "^xpool is up" "$tmp/up.log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$tmp/up.log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up:"; cat "$tmp/up.log"; exit 1; }
  sleep 0.1
done
base=$(sed -n 's|.*listening on \(https://127\.0\.0\.1:[0-9]*\),.*|\1|p' "$tmp/up.log")
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)

running() { [[ "$("${kc[@]}" get pod "$1" -o 'jsonpath={.status.phase}')" == Running ]]; }

cat >"$tmp/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo main; exec sleep 3600.$mark"]
    env: [{name: GREETING, value: hello-from-env}]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  runtimeClassName: process
  containers:
  - name: http
    image: python
    command: ["sh", "-c", "cd \$0 && exec python3 -u -m http.server 0 --bind 127.0.0.1", "$tmp/www"]
---
apiVersion: v1
kind: Pod
metadata: {name: crashy}
spec:
  runtimeClassName: process
  containers:
  - name: fails
    image: busybox
    command: ["sh", "-c", "exit 1"]
EOF
mkdir -p "$tmp/www"
echo "served-$mark" >"$tmp/www/index.html"
check "apply the pods" 0 "${kc[@]}" apply -f "$tmp/pods.yaml"
wait_for "box runs" 60 running box
wait_for "web runs" 60 running web

# ---- exec ------------------------------------------------------------------------------------
check "exec: exit code 3" 3 "${kc[@]}" exec box -- sh -c 'echo out; echo err >&2; echo "$GREETING"; exit 3'
printf 'out\nhello-from-env\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL exec stdout:"; cat "$tmp/out"; failures=$((failures + 1)); }
expect_in "exec: stderr" "$tmp/err" "err"
expect_in "exec: kubectl's words" "$tmp/err" "command terminated with exit code 3"
check "exec: success" 0 "${kc[@]}" exec box -- true
check "exec: a missing command" 1 "${kc[@]}" exec box -- no-such-command
expect_in "exec: why it did not run" "$tmp/err" \
  'error: Internal error occurred: error executing command in container: exec "no-such-command"'
check "exec -i: stdin" 0 sh -c "printf 'line one\nline two\n' | ${kc[*]} exec -i box -- sh -c 'cat; echo end'"
printf 'line one\nline two\nend\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL exec -i:"; cat "$tmp/out"; failures=$((failures + 1)); }
# the SPDY path kubectl falls back to (and takes when told to)
spdy=(env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false "${kc[@]}")
check "exec over SPDY: exit code 3" 3 "${spdy[@]}" exec box -- sh -c 'echo out; echo err >&2; exit 3'
expect_in "exec over SPDY: stdout" "$tmp/out" "out"
expect_in "exec over SPDY: stderr" "$tmp/err" "err"
expect_in "exec over SPDY: kubectl's words" "$tmp/err" "command terminated with exit code 3"
check "exec -i over SPDY: stdin" 0 sh -c "printf 'over spdy\n' | ${spdy[*]} exec -i box -- sh -c 'cat; echo end'"
printf 'over spdy\nend\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL exec -i over SPDY:"; cat "$tmp/out"; failures=$((failures + 1)); }
# -it through a pseudo-terminal of 40x100 (stdin held open until script ends: script's EOF
# would be typed in, and a hold of 3 s could end before kubectl set its terminal up at load)
cat >"$tmp/tty.sh" <<EOF
stty rows 40 cols 100
${kc[*]} exec -it box -- sh -c 'tty; stty size; echo \$TERM'
EOF
check "exec -it" 0 bash -c "exec 3< <(sleep 300); hold=\$!; rc=0; script -qec 'sh $tmp/tty.sh' /dev/null <&3 || rc=\$?; kill \$hold; exit \$rc"
expect_in "exec -it: a terminal" "$tmp/out" "/dev/pts/"
expect_in "exec -it: its size" "$tmp/out" "40 100"
expect_in "exec -it: TERM" "$tmp/out" "xterm"
# in the container's pid namespace (its process is pid 1) and cgroup, with its environment
check "exec: the container's pid namespace" 0 "${kc[@]}" exec box -- \
  sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " <"$f"; echo; done'
expect_in "exec: sees the container's process" "$tmp/out" "sleep 3600.$mark"
if grep -q "xpool up" "$tmp/out"; then
  echo "FAIL exec: sees the host's processes"; failures=$((failures + 1))
fi
"${kc[@]}" exec box -- sleep "700.$mark" >/dev/null 2>&1 &
bg_pids+=($!)
wait_for "the exec'd command runs" 60 pgrep -f "^sleep 700.$mark\$"
cmd_pid=$(pgrep -f "^sleep 700.$mark\$" | head -1)
main_pid=$(pgrep -f "^sleep 3600.$mark\$" | head -1)
if [[ -n "$cmd_pid" && -n "$main_pid" ]]; then
  diff <(cat "/proc/$cmd_pid/cgroup") <(cat "/proc/$main_pid/cgroup") >"$tmp/cg.diff" ||
    { echo "FAIL exec: not in the container's cgroups:"; cat "$tmp/cg.diff"; failures=$((failures + 1)); }
  [[ "$(readlink "/proc/$cmd_pid/ns/mnt")" == "$(readlink "/proc/$main_pid/ns/mnt")" ]] ||
    { echo "FAIL exec: not in the container's mount namespace"; failures=$((failures + 1)); }
else
  echo "FAIL could not find the exec'd command ($cmd_pid) or the container ($main_pid)"; failures=$((failures + 1))
fi
# the client goes away: its command goes with it
kill "${bg_pids[-1]}" 2>/dev/null || true
wait_for "a command whose client went away ends" 60 sh -c "! pgrep -f '^sleep 700.$mark\$'"

# ---- cp both ways ----------------------------------------------------------------------------
head -c 300000 /dev/urandom >"$tmp/blob"
check "cp to the pod" 0 "${kc[@]}" cp "$tmp/blob" "box:/tmp/blob-$mark"
check "cp from the pod" 0 "${kc[@]}" cp "box:/tmp/blob-$mark" "$tmp/blob.back"
cmp -s "$tmp/blob" "$tmp/blob.back" || { echo "FAIL cp: the file came back different"; failures=$((failures + 1)); }
rm -f "/tmp/blob-$mark"

# ---- run --rm -i, attach ---------------------------------------------------------------------
check "run --rm -i" 0 "${kc[@]}" run "counter" --rm -i --restart=Never --image=busybox \
  --overrides='{"apiVersion":"v1","spec":{"runtimeClassName":"process"}}' --command -- \
  sh -c 'for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.5; done'
expect_in "run --rm -i: the output of the running command" "$tmp/out" "tick 6"
expect_in "run --rm -i: the pod is deleted" "$tmp/out" 'pod "counter" deleted'

# ---- port-forward ----------------------------------------------------------------------------
web_port=
deadline=$((SECONDS + 60))
while [[ -z "$web_port" && $SECONDS -lt $deadline ]]; do
  web_port=$("${kc[@]}" logs web 2>/dev/null | sed -n 's/.*port \([0-9]*\).*/\1/p' | head -1)
  [[ -n "$web_port" ]] || sleep 0.2
done
[[ -n "$web_port" ]] || { echo "FAIL web did not say its port"; "${kc[@]}" logs web; failures=$((failures + 1)); }
"${kc[@]}" port-forward pod/web ":$web_port" >"$tmp/pf.out" 2>"$tmp/pf.err" &
bg_pids+=($!)
wait_for "port-forward listens" 60 grep -q "Forwarding from 127.0.0.1:" "$tmp/pf.out"
local_port=$(sed -n 's/Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$tmp/pf.out" | head -1)
check "port-forward: a request" 0 curl -sS -m 10 "http://127.0.0.1:$local_port/"
expect_in "port-forward: the pod's answer" "$tmp/out" "served-$mark"
check "port-forward: a second request" 0 curl -sS -m 10 "http://127.0.0.1:$local_port/"
expect_in "port-forward: again" "$tmp/out" "served-$mark"
kill "${bg_pids[-1]}" 2>/dev/null || true
# and over SPDY
env KUBECTL_PORT_FORWARD_WEBSOCKETS=false "${kc[@]}" port-forward pod/web ":$web_port" >"$tmp/pf2.out" 2>"$tmp/pf2.err" &
bg_pids+=($!)
wait_for "port-forward over SPDY listens" 60 grep -q "Forwarding from 127.0.0.1:" "$tmp/pf2.out"
local_port=$(sed -n 's/Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$tmp/pf2.out" | head -1)
check "port-forward over SPDY: a request" 0 curl -sS -m 10 "http://127.0.0.1:$local_port/"
expect_in "port-forward over SPDY: the pod's answer" "$tmp/out" "served-$mark"
kill "${bg_pids[-1]}" 2>/dev/null || true

# ---- the Python client ------------------------------------------------------------------------
cat >"$tmp/client.py" <<'EOF'
import sys, time
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config()
v1 = client.CoreV1Api()
out = stream(v1.connect_get_namespaced_pod_exec, "box", "default",
             command=["sh", "-c", "echo py $GREETING"], stderr=True, stdin=False, stdout=True, tty=False)
print("exec:" + out.strip())
ws = stream(v1.connect_get_namespaced_pod_exec, "box", "default", command=["cat"],
            stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
ws.write_stdin("from python\n")
got, deadline = "", time.time() + 10
while "from python" not in got and time.time() < deadline:
    ws.update(timeout=1)
    got += ws.read_stdout()
ws.close()
print("stdin:" + got.strip())
# a resize message far over the limit: a Status, and the command is gone
ws = stream(v1.connect_get_namespaced_pod_exec, "box", "default", command=["sleep", sys.argv[1]],
            stderr=True, stdin=True, stdout=True, tty=True, _preload_content=False)
ws.write_channel(4, '{"Width":80,"Height":' + " " * 100000 + '24}')
err, deadline = "", time.time() + 10
while ws.is_open() and time.time() < deadline:
    ws.update(timeout=1)
    err += ws.read_channel(3)
print("resize:" + err)
EOF
check "the Python client" 0 /usr/bin/python3 "$tmp/client.py" "710.$mark"
expect_in "python: exec" "$tmp/out" "exec:py hello-from-env"
expect_in "python: stdin" "$tmp/out" "stdin:from python"
expect_in "python: huge resize" "$tmp/out" \
  '"status":"Failure","message":"Internal error occurred: invalid resize message: terminal size message longer than 256 bytes"'
wait_for "the command of the bad resize ends" 60 sh -c "! pgrep -f '^sleep 710.$mark\$'"

# ---- a finished exec ends at once, its output whole -------------------------------------------
# The agent closes its side once the command ended and its output and status went (over WebSocket
# the closing handshake done); the server's tunnel then ends as soon as the client took every byte
# or closed (docs/server.md, "exec, attach, port-forward"), where it waited 5 s for the client to
# close first (a client that waits for the server's close: 60-stream-stress). The server's log
# says how the tunnel ended, and after how long (shown): never after the half-closed wait.
ended='stream: pods/exec default/box ended after'
ends() { grep -c "$ended" "$tmp/up.log" || true; }
ends_before=$(ends)
cat >"$tmp/long.py" <<'EOF'
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config()
out = stream(client.CoreV1Api().connect_get_namespaced_pod_exec, "box", "default",
             command=["sh", "-c", "seq 1 50000; echo end"], stderr=True, stdin=False, stdout=True,
             tty=False)
lines = [line for line in out.split("\n") if line]
print("lines:", len(lines), "last:", lines[-1])
EOF
check "the Python client: a long output" 0 /usr/bin/python3 "$tmp/long.py"
expect_in "... to its last line" "$tmp/out" "lines: 50001 last: end"
wait_for "the server logged the tunnel's end" 60 sh -c "[ \$(grep -c '$ended' '$tmp/up.log') -gt $ends_before ]"
grep "$ended" "$tmp/up.log" | tail -n 1 >"$tmp/end"
sed 's/^/  /' "$tmp/end"
check "its tunnel ended at the end of the stream, not after the half-closed wait" 0 \
  grep -Eq "ended after [0-9]+ ms: (the agent closed and the client took all it sent|the client went away)$" "$tmp/end"

# ---- authorisation: pods/exec is not read access ----------------------------------------------
check "reader token" 0 "$xpool" token create --reader --data-dir "$data"
reader=$(cat "$tmp/out")
wait_for "the reader token works" 60 "${kc[@]}" --token="$reader" get pod box
check "a reader may not exec" 1 "${kc[@]}" --token="$reader" exec box -- true
expect_in "exec: Forbidden" "$tmp/err" \
  'Error from server (Forbidden): pods "box" is forbidden: User "system:reader:reader" cannot create resource "pods/exec" in API group "" in the namespace "default"'
check "a reader may not port-forward" 1 "${kc[@]}" --token="$reader" port-forward pod/web ":$web_port"
expect_in "port-forward: Forbidden" "$tmp/err" 'cannot create resource "pods/portforward"'

# ---- container lifecycle Events, aggregated ----------------------------------------------------
check "describe box" 0 "${kc[@]}" describe pod box
expect_in "event Created" "$tmp/out" "Created    "
expect_in "event Created: message" "$tmp/out" "Created container main"
expect_in "event Started" "$tmp/out" "Started container main"
describe_backoff() {
  "${kc[@]}" describe pod crashy >"$tmp/crashy" 2>&1
  grep -q "BackOff .*(x[0-9]* over .*Back-off restarting failed container fails in pod crashy_default(" "$tmp/crashy" &&
    grep -q "Started .*(x[0-9]* over .*Started container fails" "$tmp/crashy"
}
wait_for "BackOff and Started counted on one Event each" 60 describe_backoff || cat "$tmp/crashy"
check "delete web" 0 "${kc[@]}" delete pod web --wait=false
wait_for "event Killing" 60 sh -c "${kc[*]} get events | grep -q 'Killing .*pod/web .*Stopping container http'"

# ---- bad input ---------------------------------------------------------------------------------
ws=(-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13'
  -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==')
bad() { # name, want code, want message, curl args...
  local name=$1 code=$2 msg=$3
  shift 3
  check "$name" 0 curl -sS -m 10 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $admin" \
    -o "$tmp/body" -w '%{http_code}' "$@"
  [[ "$(cat "$tmp/out")" == "$code" ]] || { echo "FAIL $name: HTTP $(cat "$tmp/out")"; cat "$tmp/body"; failures=$((failures + 1)); }
  expect_in "$name: Status" "$tmp/body" "\"kind\":\"Status\""
  expect_in "$name: message" "$tmp/body" "$msg"
}
exec_url="$base/api/v1/namespaces/default/pods/box/exec"
# what the server and agent hold now: their threads, and the processes under them
threads() { ls "/proc/$up_pid/task" | wc -l; }
children() { pgrep -c -P "$up_pid" || true; }
threads_before=$(threads) children_before=$(children)
bad "exec without a command" 400 '"message":"you must specify at least one command for the container"' \
  "${ws[@]}" -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' "$exec_url?stdout=1"
bad "exec without stdio" 400 '"message":"you must specify at least 1 of stdin, stdout, stderr"' \
  "${ws[@]}" -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' "$exec_url?command=true"
bad "an unknown stream protocol" 400 \
  '"message":"unable to upgrade: requested protocol(s) are not supported: [v9.channel.k8s.io]; supports [v5.channel.k8s.io v4.channel.k8s.io]"' \
  "${ws[@]}" -H 'Sec-WebSocket-Protocol: v9.channel.k8s.io' "$exec_url?command=true&stdout=1"
bad "no upgrade" 400 '"message":"unable to upgrade: missing upgrade headers in request' "$exec_url?command=true&stdout=1"
bad "a bad WebSocket key" 400 '"message":"unable to upgrade: Sec-WebSocket-Key is not the base64 of 16 bytes"' \
  -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: x' \
  -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' "$exec_url?command=true&stdout=1"
bad "an unknown container" 400 '"message":"container nope is not valid for pod box"' \
  "${ws[@]}" -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' "$exec_url?command=true&stdout=1&container=nope"
bad "an unknown SPDY stream protocol" 400 \
  '"message":"unable to upgrade: requested protocol(s) are not supported: [v9.channel.k8s.io]' \
  -H 'Connection: Upgrade' -H 'Upgrade: SPDY/3.1' -H 'X-Stream-Protocol-Version: v9.channel.k8s.io' \
  "$exec_url?command=true&stdout=1"
bad "an unknown pod" 404 '"message":"pods \"nope\" not found"' \
  "${ws[@]}" "$base/api/v1/namespaces/default/pods/nope/exec?command=true&stdout=1"

# nothing left behind: no command of this run, the agent's streams all ended
wait_for "no command is left" 60 sh -c "! pgrep -f '^sleep 7[01]0.$mark\$'"
wait_for "no thread is left by the bad requests ($threads_before before)" 60 \
  sh -c "[ \$(ls /proc/$up_pid/task | wc -l) -le $threads_before ]" || ls "/proc/$up_pid/task" | wc -l
wait_for "no process is left by the bad requests ($children_before before)" 60 \
  sh -c "[ \$(pgrep -c -P $up_pid || true) -le $children_before ]" || pgrep -a -P "$up_pid"
finish "exec"
