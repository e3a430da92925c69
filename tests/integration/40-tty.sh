#!/usr/bin/env bash
# Terminals and port-forward into image containers, with stock kubectl through the server to the
# agent: `kubectl exec -it` into a process pod and into an image (crun) pod through a
# pseudo-terminal (tty_drive.py): `tty` names /dev/pts/N, `stty size` follows a resize, Ctrl-C
# typed ends the foreground command by SIGINT, the exit code comes back in kubectl's words;
# `kubectl attach -it` to tty: true pods of both runtimes (the shim keeps the terminal, the log
# keeps its output); port-forward to a listener on 127.0.0.1 inside an image pod's own network
# namespace; bad input (an oversized resize frame, an unknown subprotocol) answered with a Status
# and no fd, thread or process left behind in the agent.
# Needs root, crun, overlayfs, kubectl and /usr/bin/python3 (else exit 77, saying which); without
# CNI's bridge plugin the image pod runs on the node's network (said as a SKIP line).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/images_lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (overlay mounts, namespaces)"; exit 77; }
img_need curl /usr/bin/python3
command -v crun >/dev/null || { echo "SKIP: no crun (scripts/install-deps installs it)"; exit 77; }
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || { echo "SKIP: this kernel has no overlayfs"; exit 77; }
/usr/bin/python3 -c 'import kubernetes.stream' 2>/dev/null ||
  { echo "SKIP: Debian's python3-kubernetes is not installed"; exit 77; }

mark=$((RANDOM % 900 + 100))$$
server_pid= agent_pid= br=
cleanup() {
  {
    kill -KILL $agent_pid $server_pid || true
    pkill -KILL -f "$tmp/node/containers" || true
    wait || true
  } 2>/dev/null
  umount -R -l "$tmp/netns" 2>/dev/null || true
  [[ -n "$br" ]] && ip link del "$br" 2>/dev/null
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- an image with busybox's terminal tools and httpd; the pod's own network when CNI is here ---
mkdir -p "$tmp/extra/bin"
for a in stty tty httpd mkdir; do ln -s busybox "$tmp/extra/bin/$a"; done
img_layout "$tmp/layout" "" "$tmp/extra"
tar -C "$tmp/layout" -cf "$tmp/tools.tar" .
check "import the image" 0 "$xpool" image import --data-dir "$tmp/node" --name localhost/ttytools "$tmp/tools.tar"
cni_bridge 249 xpy
[[ -n "$br" ]] ||
  echo "SKIP the image pod's own network namespace: no CNI bridge plugin or network namespaces here"

# ---- a server and an agent ------------------------------------------------------------------------
data=$tmp/server
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
url=
for _ in $(seq 150); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\).*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start"; cat "$tmp/server.log"; exit 1; }
"$xpool" token create --node t1 --data-dir "$data" >"$tmp/t1.token" 2>/dev/null
"$xpool" agent --server "$url" --token-file "$tmp/t1.token" --ca-file "$data/pki/ca.crt" \
  --node-name t1 --data-dir "$tmp/node" --listen 127.0.0.1:0 --heartbeat 500ms "${net_flags[@]}" \
  >"$tmp/agent.log" 2>&1 &
agent_pid=$!
diag_log "$tmp/agent.log" "$tmp/server.log"
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)

port=$((RANDOM % 20000 + 30000))
cat >"$tmp/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: proc}
spec:
  runtimeClassName: process
  containers:
  - {name: sh, image: busybox, command: [sh], tty: true, stdin: true}
---
apiVersion: v1
kind: Pod
metadata: {name: img}
spec:
  containers:
  - {name: sh, image: localhost/ttytools:latest, imagePullPolicy: Never, command: [sh], tty: true, stdin: true}
  - name: web
    image: localhost/ttytools:latest
    imagePullPolicy: Never
    command: [sh, -c, 'mkdir -p /tmp/www && echo served-$mark >/tmp/www/index.html && exec httpd -f -p 127.0.0.1:$port -h /tmp/www']
EOF
check "apply the pods" 0 "${kc[@]}" apply -f "$tmp/pods.yaml"
running() { [[ "$("${kc[@]}" get pod "$1" -o 'jsonpath={.status.phase}')" == Running ]]; }
wait_for "proc runs" 30 running proc
wait_for "img runs" 30 running img || { "${kc[@]}" describe pod img; tail -20 "$tmp/agent.log"; }

# ---- exec -it, both runtimes ---------------------------------------------------------------------
drive() { # name, mode, kubectl args...: the terminal session of tty_drive.py
  local name=$1 mode=$2
  shift 2
  check "$name" 0 /usr/bin/python3 "$src/tests/integration/tty_drive.py" "$mode" "$mark" "${kc[@]}" "$@"
  [[ $(cat "$tmp/out") != *FAIL* ]] || cat "$tmp/out"
  expect_in "$name: a terminal" "$tmp/out" "ok tty: ${terminal:-/dev/pts/}"
  expect_in "$name: its size" "$tmp/out" "ok size: 30 90"
  expect_in "$name: resized" "$tmp/out" "ok resize: 41 101"
  expect_in "$name: Ctrl-C is SIGINT to the foreground command" "$tmp/out" "ok interrupt: rc=130"
  if [[ $mode == exec ]]; then
    expect_in "$name: the exit code" "$tmp/out" "ok exit: kubectl exit code 7"
    expect_in "$name: kubectl's words" "$tmp/out" "ok words: command terminated with exit code 7"
  fi
}
drive "exec -it into a process pod" exec exec -it proc -c sh -- sh
drive "exec -it into an image pod" exec exec -it img -c sh -- sh

# ---- attach -it to tty: true containers; the log keeps the terminal's output ------------------------
# a process container's terminal is opened on the node's devpts, whose terminals it must not
# see: it has a devpts of its own and its terminal on /dev/console, as runc binds it
terminal=/dev/console drive "attach -it to a process pod" attach attach -it proc -c sh
drive "attach -it to an image pod" attach attach -it img -c sh
check "logs of a tty container" 0 "${kc[@]}" logs img -c sh
expect_in "logs: what the terminal showed" "$tmp/out" "T-42"
check "the containers still run" 0 "${kc[@]}" get pods proc img -o 'jsonpath={.items[*].status.containerStatuses[*].restartCount}'
[[ "$(cat "$tmp/out")" == "0 0 0" ]] || { echo "FAIL restarted: $(cat "$tmp/out")"; failures=$((failures + 1)); }

# ---- port-forward into the image pod's network namespace -------------------------------------------
if [[ -n "$br" ]]; then
  check "the listener is not on the node's loopback" 7 curl -sS -m 5 "http://127.0.0.1:$port/"
fi
"${kc[@]}" port-forward pod/img ":$port" >"$tmp/pf.out" 2>"$tmp/pf.err" &
pf_pid=$!
wait_for "port-forward listens" 15 grep -q "Forwarding from 127.0.0.1:" "$tmp/pf.out"
local_port=$(sed -n 's/Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$tmp/pf.out" | head -1)
check "port-forward into the image pod" 0 curl -sS -m 10 "http://127.0.0.1:$local_port/"
expect_in "port-forward: the pod's answer" "$tmp/out" "served-$mark"
check "port-forward: a second connection" 0 curl -sS -m 10 "http://127.0.0.1:$local_port/index.html"
expect_in "port-forward: again" "$tmp/out" "served-$mark"
kill "$pf_pid" 2>/dev/null || true
wait "$pf_pid" 2>/dev/null || true

# ---- bad input: a Status each, nothing left behind -------------------------------------------------
fds() { ls "/proc/$agent_pid/fd" | wc -l; }
threads() { ls "/proc/$agent_pid/task" | wc -l; }
children() { pgrep -c -P "$agent_pid" || true; }
sleep 0.5 # the port-forward's stream ends on the agent
fds_before=$(fds) threads_before=$(threads) children_before=$(children)
cat >"$tmp/resize.py" <<'EOF'
import sys, time
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config()
ws = stream(client.CoreV1Api().connect_get_namespaced_pod_exec, "img", "default", container="sh",
            command=["sleep", sys.argv[1]], stderr=True, stdin=True, stdout=True, tty=True,
            _preload_content=False)
ws.write_channel(4, '{"Width":80,"Height":24}')
ws.write_channel(4, '{"Width":80,"Height":' + " " * 200000 + '24}')
err, deadline = "", time.time() + 10
while ws.is_open() and time.time() < deadline:
    ws.update(timeout=1)
    err += ws.read_channel(3)
print("resize:" + err)
EOF
check "an oversized resize frame" 0 /usr/bin/python3 "$tmp/resize.py" "72.$mark"
expect_in "oversized resize: a Status" "$tmp/out" \
  '"status":"Failure","message":"Internal error occurred: invalid resize message: terminal size message longer than 256 bytes"'
check "an unknown subprotocol" 0 curl -sS -m 10 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $admin" \
  -o "$tmp/body" -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
  -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
  -H 'Sec-WebSocket-Protocol: v9.channel.k8s.io' \
  "$url/api/v1/namespaces/default/pods/img/exec?container=sh&command=tty&stdin=1&stdout=1&tty=1"
[[ "$(cat "$tmp/out")" == 400 ]] || { echo "FAIL unknown subprotocol: HTTP $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect_in "unknown subprotocol: the Status" "$tmp/body" \
  '"message":"unable to upgrade: requested protocol(s) are not supported: [v9.channel.k8s.io]; supports [v5.channel.k8s.io v4.channel.k8s.io]"'
wait_for "the command of the bad resize ends" 10 sh -c "! pgrep -f '^sleep 72.$mark\$'"
wait_for "no fd is left in the agent ($fds_before before)" 10 sh -c "[ \$(ls /proc/$agent_pid/fd | wc -l) -le $fds_before ]" ||
  ls -l "/proc/$agent_pid/fd"
wait_for "no thread is left in the agent ($threads_before before)" 10 sh -c "[ \$(ls /proc/$agent_pid/task | wc -l) -le $threads_before ]"
wait_for "no process is left under the agent ($children_before before)" 10 sh -c "[ \$(pgrep -c -P $agent_pid || true) -le $children_before ]"
finish "tty"
