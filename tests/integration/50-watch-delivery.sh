#!/usr/bin/env bash
# Watch delivery through the stream hub: watches of one shape, which share their reads of the log,
# each get every event once and in order; and the connections' timeouts, with short test-set ones
# (--connection-idle-timeout 1s: libmicrohttpd's own timeout is 2 s; --watch-stall-timeout 1s): a
# watch longer than the daemon's timeout gets its events and its last chunk, and its connection
# serves the next request; a client that stops reading is dropped after the stall limit while
# another watch is served on.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid= token= base= port= stalled_pid= watch_pid=
trap 'for p in $stalled_pid $watch_pid $server_pid; do kill -KILL "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

api() { # curl arguments...: with the admin token
  curl -H "Authorization: Bearer $token" "$@"
}

log=$tmp/server.log
"$xpool" server --listen 127.0.0.1:0 --no-tls --no-scheduler --data-dir "$data" \
  --connection-idle-timeout 1s --watch-stall-timeout 1s >"$log" 2>&1 &
server_pid=$!
diag_log "$log"
deadline=$((SECONDS + 120))
until [[ -n "$base" ]] && curl -fsS -o /dev/null "$base/version" 2>/dev/null; do
  kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not answer within 120 s:"; cat "$log"; exit 1; }
  sleep 0.1
  port=$(sed -n 's|.*xpool server listening on http://127\.0\.0\.1:\([0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
  [[ -z "$port" ]] || base=http://127.0.0.1:$port
done
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*["'\'']\{0,1\}\([^"'\'' ]*\).*/\1/p' "$data/admin.kubeconfig" | head -1)

check "bad stall timeout" 2 "$xpool" server --watch-stall-timeout soon --data-dir "$tmp/unused"
expect_in "bad stall timeout says which flag" "$tmp/err" "--watch-stall-timeout"
check "idle timeout under 1s" 2 "$xpool" server --connection-idle-timeout 500ms --data-dir "$tmp/unused"
expect_in "idle timeout under 1s says so" "$tmp/err" "expected at least 1s"
check "idle timeout over a day" 2 "$xpool" server --connection-idle-timeout 25h --data-dir "$tmp/unused"
expect_in "idle timeout over a day says so" "$tmp/err" "--connection-idle-timeout: duration '25h': longer than"

pods=/api/v1/namespaces/default/pods
pod() { printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}' "$1"; }
watchers() { api -sS --max-time 10 "$base/metrics" | sed -n 's/^apiserver_registered_watchers \([0-9]*\).*/\1/p'; }

# Six watches of the default namespace and two of every namespace, from the same version, while
# 40 pods are created (and one in kube-system): each has every event once, in order, and its last chunk.
rv=$(api -sS --max-time 60 "$base$pods" | grep -o '"resourceVersion":"[0-9]*"' | head -1 | cut -d'"' -f4)
watch_pids=()
for i in 1 2 3 4 5 6 7 8; do
  path=$pods
  [[ $i -le 6 ]] || path=/api/v1/pods
  api -sS --raw --max-time 90 -o "$tmp/shared-$i" "$base$path?watch=true&resourceVersion=$rv&timeoutSeconds=25" &
  watch_pids+=($!)
done
poll "the eight watches are open" 60 8 watchers
# the 41 creates in one client on one kept-alive connection, one after the other: they must all
# be in before the watches' 25 s end, which 41 curl processes in a row (each a process start and
# a connection, a second apiece at load 30 under ASan) need not manage
creates=()
for i in $(seq 1 40); do
  pod "p$i" >"$tmp/p$i.json"
  creates+=(-sS -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" -H "Content-Type: application/json"
    --data-binary "@$tmp/p$i.json" "$base$pods" --next)
done
creates+=(-sS -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" -H "Content-Type: application/json"
  --data-binary "@$tmp/p40.json" "$base/api/v1/namespaces/kube-system/pods")
check "create p1 to p40, and p40 in kube-system" 0 curl "${creates[@]}"
expect_count "each create answered 201" "$tmp/out" 41 "201"
for p in "${watch_pids[@]}"; do wait "$p" || { echo "FAIL a shared watch: curl failed"; failures=$((failures + 1)); }; done
seq 1 40 | sed 's/^/p/' >"$tmp/want-default"
{ cat "$tmp/want-default"; echo p40; } >"$tmp/want-all"
for i in 1 2 3 4 5 6 7 8; do
  want=$tmp/want-default
  [[ $i -le 6 ]] || want=$tmp/want-all
  grep -o '{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"[^"]*"' "$tmp/shared-$i" |
    sed 's/.*"name":"//; s/"$//' >"$tmp/got-$i" || true
  cmp -s "$tmp/got-$i" "$want" ||
    { echo "FAIL shared watch $i: pods seen, against expected:"; diff "$tmp/got-$i" "$want" | head -20; failures=$((failures + 1)); }
  [[ "$(tail -c 5 "$tmp/shared-$i" | od -An -c | tr -d ' ')" == '0\r\n\r\n' ]] ||
    { echo "FAIL shared watch $i did not end with the last chunk"; failures=$((failures + 1)); }
done

# A watch of 15 s, quiet for longer than the daemon's 2 s timeout: the pod created after that
# timeout is in it, it ends with the last chunk, and its connection serves the next request.
# (Its 15 s hold the wait for it to open, the 3 s quiet and the create: at load 30 a watch of
# 5 s could end before the create came.)
api -sS --raw --max-time 60 -o "$tmp/long" "$base$pods?watch=true&timeoutSeconds=15" \
  -o "$tmp/after" "$base/version" -w '%{num_connects} ' >"$tmp/connects" 2>"$tmp/long.err" &
watch_pid=$!
poll "the long watch is open" 60 1 watchers
sleep 3 # past the daemon's timeout, with no byte on the connection
pod late >"$tmp/late.json"
check "create a pod during the long watch" 0 api -fsS -o /dev/null -H "Content-Type: application/json" \
  --data-binary "@$tmp/late.json" "$base$pods"
wait "$watch_pid" || { echo "FAIL the long watch: curl failed:"; cat "$tmp/long.err"; failures=$((failures + 1)); }
watch_pid=
expect_in "the long watch has the late pod" "$tmp/long" '{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod"'
expect_in "the long watch names it" "$tmp/long" '"name":"late"'
[[ "$(tail -c 5 "$tmp/long" | od -An -c | tr -d ' ')" == '0\r\n\r\n' ]] ||
  { echo "FAIL the long watch did not end with the last chunk:"; tail -c 200 "$tmp/long" | od -c | tail -5; failures=$((failures + 1)); }
expect_in "the next request on its connection" "$tmp/after" '"gitVersion"'
expect_exact "one connection for both" "$tmp/connects" "1 0 "

# A client that stops reading a watch whose initial state is more than the sockets hold (24
# ConfigMaps of 200 KB): dropped after the stall limit, while another watch goes on.
blob=$(head -c 200000 /dev/zero | tr '\0' a)
for i in $(seq 1 24); do
  printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-%s"},"data":{"blob":"%s"}}' "$i" "$blob" >"$tmp/cm.json"
  check "create ConfigMap big-$i" 0 api -fsS -o /dev/null -H "Content-Type: application/json" \
    --data-binary "@$tmp/cm.json" "$base/api/v1/namespaces/default/configmaps"
done
# (its 40 s hold the stalled client's start, its drop and the create after it, at load 30 too)
api -sS --raw --max-time 90 -o "$tmp/other" "$base$pods?watch=true&timeoutSeconds=40&resourceVersion=0" 2>"$tmp/other.err" &
watch_pid=$!
poll "the other watch is open" 60 1 watchers
# its receive buffer small, it reads the answer's head and then nothing until told (bounded)
python3 - "$port" "$token" "$tmp/stalled-head" "$tmp/go" >"$tmp/stalled" 2>&1 <<'EOF' &
import os, socket, sys, time
port, token, head_file, go_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.sendall(("GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n"
           "Authorization: Bearer %s\r\n\r\n" % token).encode())
s.settimeout(20)
first = s.recv(4096)
open(head_file, "w").write(first.split(b"\r\n")[0].decode())
deadline = time.monotonic() + 60
while not os.path.exists(go_file) and time.monotonic() < deadline:
    time.sleep(0.1)
got, ended = len(first), False
deadline = time.monotonic() + 30
last = first[-5:]
try:
    while time.monotonic() < deadline:
        b = s.recv(1 << 20)
        if not b:
            ended = True
            break
        got += len(b)
        last = (last + b)[-5:]
except ConnectionResetError:
    ended = True
except socket.timeout:
    pass
print("closed" if ended else "open", "whole" if last == b"0\r\n\r\n" else "cut", got)
EOF
stalled_pid=$!
poll "the stalled client has its answer's head" 60 "HTTP/1.1 200 OK" cat "$tmp/stalled-head"
poll "the stalled client is dropped" 120 1 watchers
pod after-stall >"$tmp/after-stall.json"
check "create a pod after the drop" 0 api -fsS -o /dev/null -H "Content-Type: application/json" \
  --data-binary "@$tmp/after-stall.json" "$base$pods"
touch "$tmp/go"
wait "$stalled_pid" || true
stalled_pid=
read -r state whole bytes <"$tmp/stalled" || true
[[ "$state $whole" == "closed cut" ]] ||
  { echo "FAIL the stalled client: '$state $whole' after $bytes bytes, expected a cut stream, closed:"; cat "$tmp/stalled"; failures=$((failures + 1)); }
[[ "${bytes:-0}" -lt 4800000 ]] ||
  { echo "FAIL the stalled client got all $bytes bytes"; failures=$((failures + 1)); }
wait "$watch_pid" || { echo "FAIL the other watch: curl failed:"; cat "$tmp/other.err"; failures=$((failures + 1)); }
watch_pid=
expect_in "the other watch has the pod created after the drop" "$tmp/other" '"name":"after-stall"'
[[ "$(tail -c 5 "$tmp/other" | od -An -c | tr -d ' ')" == '0\r\n\r\n' ]] ||
  { echo "FAIL the other watch did not end with the last chunk:"; tail -c 200 "$tmp/other" | od -c | tail -5; failures=$((failures + 1)); }

kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=
finish "watch delivery"
