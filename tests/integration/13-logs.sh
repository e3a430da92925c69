#!/usr/bin/env bash
# kubectl logs through the server: the server proxies pods/log to the log endpoint of the pod's
# node (here tests/tools/logserver_tool.c on a fixture log directory, the agent's module alone),
# signed with the node's token. --tail, --timestamps, -c, --previous, -f until the log's end,
# the container choice, the endpoint's 401 for forged and expired signatures, the endpoint under
# 300 idle and 300 slow connections, and 503s when the node has no endpoint or its agent cannot
# be reached.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 77; }
tool=${XPOOL_LOGSERVER_TOOL:?}
data=$tmp/data
logs=$tmp/logs
server_pid=
tool_pid=
stop_all() {
  [[ -z "$tool_pid" ]] || { kill "$tool_pid" 2>/dev/null || true; wait "$tool_pid" 2>/dev/null || true; }
  [[ -z "$server_pid" ]] || { kill -KILL "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT
mkdir -p "$data" "$logs"

log=$tmp/server.log
: >"$log"
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --no-scheduler >"$log" 2>&1 &
server_pid=$!
diag_log "$log"
base=
deadline=$((SECONDS + 60))
while [[ $SECONDS -lt $deadline && -z "$base" ]]; do
  kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
  base=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
  sleep 0.1
done
[[ -n "$base" ]] || { echo "FAIL the server did not start:"; cat "$log"; exit 1; }
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=10s)
api() { # method path [body]: the answer in $tmp/out, the code in $tmp/code
  curl -sS --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $admin" -X "$1" \
    -H 'Content-Type: application/json' ${3:+--data-binary "$3"} -o "$tmp/out" -w '%{http_code}' \
    "$base$2" >"$tmp/code"
}
expect_code() { # name, code
  if [[ "$(cat "$tmp/code")" != "$2" ]]; then
    echo "FAIL $1: HTTP $(cat "$tmp/code"), expected $2:"; cat "$tmp/out"; failures=$((failures + 1))
  fi
}

# ---- the node's token and its log endpoint -----------------------------------------------------
check "node token" 0 "$xpool" token create --node n1 --data-dir "$data"
token=$(cat "$tmp/out")
# The server reads the tokens file again at most once a second: wait until the token works.
deadline=$((SECONDS + 60))
until [[ "$(curl -sS --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" -o /dev/null -w '%{http_code}' "$base/api/v1/nodes")" == 200 ]]; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the node token does not work"; exit 1; }
  sleep 0.2
done
# The endpoint's serving certificate, signed by the server's kubelet-serving CA for node n1 at 127.0.0.1 as the
# server signs an agent's (docs/agent.md, "HTTPS"); the server refuses any other.
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/n1.key" \
  -subj "/O=system:nodes/CN=system:node:n1" -out "$tmp/n1.csr" 2>/dev/null
printf 'subjectAltName=DNS:n1,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tmp/n1.ext"
openssl x509 -req -in "$tmp/n1.csr" -CA "$data/pki/kubelet-ca.crt" -CAkey "$data/pki/kubelet-ca.key" \
  -CAcreateserial -days 2 -extfile "$tmp/n1.ext" -out "$tmp/n1.crt" 2>/dev/null
"$tool" "$logs" "$token" 127.0.0.1 "$tmp/n1.crt" "$tmp/n1.key" >"$tmp/tool.out" 2>"$tmp/tool.err" &
tool_pid=$!
deadline=$((SECONDS + 60))
until [[ -s "$tmp/tool.out" || $SECONDS -ge $deadline ]]; do sleep 0.1; done
port=$(head -1 "$tmp/tool.out")
[[ "$port" =~ ^[0-9]+$ ]] || { echo "FAIL logserver_tool did not start:"; cat "$tmp/tool.err"; exit 1; }

node() { # name, status addresses/endpoint JSON fragment
  api POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"},\"status\":{$2}}"
  expect_code "create node $1" 201
  api PATCH "/api/v1/nodes/$1/status" "{\"status\":{$2}}"
}
node n1 "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n1\"},{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$port}}"
node n2 "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}]"
# A port nothing listens on: one the kernel gave and took back.
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
node n3 "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$closed}}"

pod() { # name, node, containers JSON
  api POST /api/v1/namespaces/default/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"containers\":$3}}"
  expect_code "create pod $1" 201
  api POST "/api/v1/namespaces/default/pods/$1/binding" "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"$1\"},\"target\":{\"kind\":\"Node\",\"name\":\"$2\"}}"
  expect_code "bind pod $1" 201
}
pod web n1 '[{"name":"app","image":"x"},{"name":"side","image":"x"}]'
pod lonely n2 '[{"name":"app","image":"x"}]'
pod gone n3 '[{"name":"app","image":"x"}]'
uid=$("${kc[@]}" get pod web -o 'jsonpath={.metadata.uid}')
[[ -n "$uid" ]] || { echo "FAIL no uid"; exit 1; }

# Fixture logs of web as the runtime writes them: app restarted once (attempt 0 complete, attempt
# 1 rotated once and live), side with a split line and a line that is not CRI.
dir=$logs/default_web_$uid
mkdir -p "$dir/app" "$dir/side"
printf '2026-12-02T22:00:00.000000001Z stdout F first run\n2026-12-02T22:00:01Z stderr F crashed\n' >"$dir/app/0.log"
: >"$dir/app/0.end"
printf '2026-12-02T22:01:00.5Z stdout F one\n2026-12-02T22:01:01Z stdout F two\n' >"$dir/app/1.log.1"
printf '2026-12-02T22:01:02.120000000Z stdout F three\n2026-12-02T22:01:03Z stdout F four\n' >"$dir/app/1.log"
printf '2026-12-02T22:02:00Z stdout P hel\n2026-12-02T22:02:00Z stdout F lo\nplain text\n' >"$dir/side/0.log"

# ---- kubectl logs ----------------------------------------------------------------------------
check "logs -c app" 0 "${kc[@]}" logs web -c app
printf 'one\ntwo\nthree\nfour\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs -c app:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "logs --tail=2" 0 "${kc[@]}" logs web -c app --tail=2
printf 'three\nfour\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs --tail=2:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "logs --timestamps" 0 "${kc[@]}" logs web -c app --tail=2 --timestamps
printf '2026-12-02T22:01:02.12Z three\n2026-12-02T22:01:03Z four\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs --timestamps:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "logs --previous" 0 "${kc[@]}" logs web -c app --previous
printf 'first run\ncrashed\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs --previous:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "logs -c side" 0 "${kc[@]}" logs web -c side
printf 'hello\nplain text\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs -c side:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "logs --previous without one" 1 "${kc[@]}" logs web -c side --previous
expect_in "no previous: message" "$tmp/err" 'previous terminated container "side" in pod "web" not found'
check "logs --limit-bytes" 0 "${kc[@]}" logs web -c app --limit-bytes=6
printf 'one\ntw' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs --limit-bytes:"; cat "$tmp/out"; failures=$((failures + 1)); }
check "logs of an unknown container" 1 "${kc[@]}" logs web -c nope
expect_in "unknown container: message" "$tmp/err" "container nope is not valid for pod web"
# xpool logs of a pod whose node has no log of it: the node's answer once, and a container that
# waits to start (not started yet: no log) the server's 400 with its reason, as the kubelet says it
pod fresh n1 '[{"name":"app","image":"x"}]'
check "xpool logs: no log on the node" 1 "$xpool" logs fresh
expect_in "no log on the node: which node" "$tmp/err" 'error: pod "fresh" has no logs on node n1: '
expect_in "no log on the node: the node's answer" "$tmp/err" 'error: pod "fresh" has no logs on node n1: Error from server (NotFound): pod default/fresh (uid '
said=$(grep -o 'has no logs on node' "$tmp/err" | wc -l || true)
[[ $said -eq 1 ]] || { echo "FAIL no log on the node: said $said times:"; cat "$tmp/err"; failures=$((failures + 1)); }
check "fresh's container waits" 0 "${kc[@]}" patch pod fresh --subresource=status --type=merge -p \
  '{"status":{"containerStatuses":[{"name":"app","image":"x","imageID":"","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image \"x\""}}}]}}'
check "xpool logs: a waiting container" 1 "$xpool" logs fresh
expect_in "a waiting container: why, in the kubelet's words" "$tmp/err" 'container "app" in pod "fresh" is waiting to start: trying and failing to pull image'
api GET /api/v1/namespaces/default/pods/fresh/log
expect_code "a waiting container: the kubelet's 400" 400
expect_in "a waiting container: the answer" "$tmp/out" 'container \"app\" in pod \"fresh\" is waiting to start: trying and failing to pull image'
api GET /api/v1/namespaces/default/pods/web/log
expect_code "no container of two" 400
expect_in "no container: message" "$tmp/out" 'a container name must be specified for pod web, choose one of: [app side]'
api GET '/api/v1/namespaces/default/pods/web/log?container=app&tailLines=-1'
expect_code "negative tailLines" 400
expect_in "negative tailLines: message" "$tmp/out" 'tailLines: Invalid value'

# -f: what is there, then what is appended, through a rotation, until the .end appears. The
# writes wait until the follower has shown the tail, so a slow start cannot take "five" as it.
timeout 120 "${kc[@]}" logs web -c app -f --tail=1 --request-timeout=0 >"$tmp/out" 2>"$tmp/err" &
follower=$!
poll "logs -f shows the tail first" 60 four head -n 1 "$tmp/out"
printf '2026-12-02T22:01:04Z stdout F five\n' >>"$dir/app/1.log"
sleep 0.5
mv "$dir/app/1.log" "$dir/app/1.log.1"
printf '2026-12-02T22:01:05Z stdout F six\n' >"$dir/app/1.log"
sleep 0.5
chmod 0440 "$dir/app/1.log" # complete, as the agent marks it (0.end above: an older agent's mark)
wait "$follower" || { echo "FAIL logs -f exited $?"; failures=$((failures + 1)); }
printf 'four\nfive\nsix\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs -f:"; cat "$tmp/out" "$tmp/err"; failures=$((failures + 1)); }

# A follow whose client goes away ends everywhere: the server notices kubectl's hang-up and drops
# its connection to the endpoint, whose reader thread then ends (side's log has no .end).
threads() { sed -n 's/^Threads:[[:space:]]*//p' "/proc/$tool_pid/status"; }
before=$(threads)
"${kc[@]}" logs web -c side -f --request-timeout=0 >"$tmp/follow.out" 2>&1 &
follower=$!
deadline=$((SECONDS + 60))
until [[ $(threads) -gt $before || $SECONDS -ge $deadline ]]; do sleep 0.1; done
[[ $(threads) -gt $before ]] || { echo "FAIL the follow did not reach the endpoint"; failures=$((failures + 1)); }
# the lines so far reach kubectl after the endpoint's thread started (0.5 s was a guess at load)
wait_for "follow without end: the lines so far" 60 grep -qF "plain text" "$tmp/follow.out" ||
  cat "$tmp/follow.out"
kill "$follower"; wait "$follower" 2>/dev/null || true
deadline=$((SECONDS + 60))
until [[ $(threads) -le $before || $SECONDS -ge $deadline ]]; do sleep 0.1; done
[[ $(threads) -le $before ]] || { echo "FAIL the endpoint still streams after kubectl went away ($(threads) threads, $before before)"; failures=$((failures + 1)); }

# ---- the endpoint itself: only the server's signature opens it ------------------------------
id=${token:4:12}
key=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
path="/containerLogs/default/web/app?podUID=$uid"
sign() { # path expiry: the header value, computed as docs/agent.md says, independently of C
  local mac
  mac=$(printf 'GET\n%s\n%s' "$1" "$2" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" | sed 's/.*= //')
  echo "$id:$2:$mac"
}
direct() { # signature header value or "": code in $tmp/code, body in $tmp/out
  curl -sS --cacert "$data/pki/kubelet-ca.crt" ${1:+-H "X-Xpool-Signature: $1"} -o "$tmp/out" -w '%{http_code}' "https://127.0.0.1:$port$path" >"$tmp/code"
}
direct "$(sign "$path" $(($(date +%s) + 30)))"
expect_code "a signature made by the contract" 200
expect_in "signed: the log" "$tmp/out" "six"
direct ""
expect_code "no signature" 401
expect_in "no signature: message" "$tmp/out" "no X-Xpool-Signature header"
direct "$(sign "$path" $(($(date +%s) - 5)))"
expect_code "expired signature" 401
expect_in "expired: message" "$tmp/out" "the signature expired"
direct "$(sign "$path&tailLines=1" $(($(date +%s) + 30)))"
expect_code "signature of another path" 401
expect_in "forged: message" "$tmp/out" "the signature does not match the request"
direct "$id:$(($(date +%s) + 30)):$(printf '0%.0s' {1..64})"
expect_code "forged MAC" 401
path="/containerLogs/default/web/side?tailLines=1"
direct "$(sign "$path" $(($(date +%s) + 30)))"
expect_code "without podUID: the pod's newest directory" 200
expect_in "without podUID: the log" "$tmp/out" "plain text"
path="/containerLogs/default/web/side?tailLines=x"
direct "$(sign "$path" $(($(date +%s) + 30)))"
expect_code "bad tailLines at the endpoint" 400
expect_in "bad tailLines: message" "$tmp/out" "tailLines: want a number >= 0"
path="/containerLogs/default/web/nope?podUID=$uid"
direct "$(sign "$path" $(($(date +%s) + 30)))"
expect_code "unknown container at the endpoint" 404
path=/containerLogs/default/nope/app
direct "$(sign "$path" $(($(date +%s) + 30)))"
expect_code "unknown pod" 404

# ---- the endpoint under floods (issue 16) -------------------------------------------------------
# 300 idle connections (more than its old limit of 256) must not stop `kubectl logs`, nor 300
# that trickle their heads; its own refusals (here a NUL in the path) come as plain text. The
# endpoint is HTTPS: idle connections wait in the door (all 300 held), while trickling ones have
# begun TLS and go to the daemon, which keeps the newest 64 of one client not yet authenticated
# (the agent's preauth_per_client) and closes the oldest to make room, so a flood from the
# server's own address cannot keep the server out.
flood=${XPOOL_FLOOD:?}
declare -A held_least=([idle]=300 [slowloris]=64)
for kind in idle slowloris; do
  "$flood" "https://127.0.0.1:$port" $kind 300 6 --probes 0 >"$tmp/flood.out" 2>&1 &
  flooder=$!
  sleep 2 # its connections are open
  check "logs under 300 $kind connections" 0 timeout 10 "${kc[@]}" logs web -c app --tail=1
  printf 'six\n' >"$tmp/want"
  cmp -s "$tmp/out" "$tmp/want" || { echo "FAIL logs under 300 $kind connections:"; cat "$tmp/out" "$tmp/err"; failures=$((failures + 1)); }
  wait "$flooder" || true
  held=$(sed -n 's/.* held \([0-9]*\) at the end.*/\1/p' "$tmp/flood.out")
  check "$kind flood: at least ${held_least[$kind]} of its connections held (${held:-none})" 0 \
    test "${held:-0}" -ge "${held_least[$kind]}"
done
path="/containerLogs/default/web%00x/app"
direct "$(sign "$path" $(($(date +%s) + 30)))"
expect_code "NUL in the endpoint's path" 400
expect_in "NUL: message" "$tmp/out" "%00 encodes a control character"

# ---- nodes without a reachable agent ---------------------------------------------------------
check "logs: node without endpoint" 1 "${kc[@]}" logs lonely
expect_in "no endpoint: message" "$tmp/err" 'the node reports no log endpoint (status.daemonEndpoints.kubeletEndpoint.Port): is its agent running?'
api GET /api/v1/namespaces/default/pods/lonely/log
expect_code "no endpoint: 503" 503
check "logs: node without a token" 1 "${kc[@]}" logs gone
expect_in "no token: message" "$tmp/err" 'the server has no node token for node "n3" to sign the log request to its agent with: create one with `xpool token create --node n3`'
check "token for n3" 0 "$xpool" token create --node n3 --data-dir "$data"
# the server looks at the tokens file at most once a second: until it has (a sleep of 1.5 s was a
# guess at load), the answer is still the one about the missing token
# (the answer read whole first: under pipefail a failing kubectl piped to grep made any answer pass)
n3_token_read() { local said; said=$("${kc[@]}" logs gone 2>&1 || true); [[ "$said" != *'has no node token for node "n3"'* ]]; }
wait_for "the server reads n3's new token" 60 n3_token_read || true
check "logs: agent unreachable" 1 "${kc[@]}" logs gone
expect_in "unreachable: message" "$tmp/err" "cannot reach the xpool agent of node \"n3\" at 127.0.0.1:$closed"
api GET /api/v1/namespaces/default/pods/gone/log
expect_code "unreachable: 503" 503

# The endpoint stops cleanly (under ASan: without leaks).
kill -TERM "$tool_pid"
rc=0; wait "$tool_pid" || rc=$?
tool_pid=
[[ $rc -eq 0 ]] || { echo "FAIL logserver_tool exited $rc:"; cat "$tmp/tool.err"; failures=$((failures + 1)); }
finish logs
