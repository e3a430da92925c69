#!/usr/bin/env bash
# The API server under floods and malformed requests (issue 16), on loopback:
# - every error of the HTTP layer is a Kubernetes Status object: 431, 414, 505 and 400 whether the
#   server's own checks or libmicrohttpd's found them, over TLS and plain HTTP, on a first request
#   and on a kept-alive one;
# - two Content-Length headers, or one with Transfer-Encoding, are 400; a NUL or another control
#   character in a path segment (%00) is 400 before any lookup;
# - with 2,000 idle TCP connections, 1,024 slowloris connections or 1,024 watches of one token, a
#   normal request (a new TLS connection, GET pods with that token) is still answered, none of
#   them waiting for the flood to end (tests/tools/flood.c measures; the figures, 100 ms at p90,
#   go to docs/reliability.md); the watches over the
#   user's limit are 429 with Retry-After; a head that trickles is closed at its deadline;
# - the agent's log endpoint listens on the Node's address only, unless --listen says otherwise.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 77; }
flood=${XPOOL_FLOOD:?}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

start_server() { # name, flags...: starts a server on a free port; sets $base
  local name=$1 deadline=$((SECONDS + 60))
  shift
  : >"$tmp/$name.log"
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$tmp/$name" --no-scheduler "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  diag_log "$tmp/$name.log"
  base=
  while [[ -z "$base" ]]; do
    [[ $SECONDS -lt $deadline ]] || { echo "FAIL server $name did not start:"; cat "$tmp/$name.log"; exit 1; }
    sleep 0.1
    base=$(sed -n 's|.*xpool server listening on \(https\{0,1\}://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/$name.log" 2>/dev/null || true)
  done
}

start_server tls
tls=$base tls_port=${base##*:} tls_pid=${pids[-1]}
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$tmp/tls/admin.kubeconfig" | head -1)
start_server plain --no-tls
plain=$base plain_port=${base##*:}

# A head that trickles is closed at its deadline (10 s), whatever it sends: 20 connections
# sending a header line every 2 s, in the background while the rest runs.
"$flood" "$plain" slowloris 20 13 --trickle 2 --probes 0 >"$tmp/deadline.out" 2>&1 &
deadline_pid=$!
pids+=($deadline_pid)

# ---- errors of the HTTP layer are Status objects ----------------------------------------------
# send name, tls|plain, request file: the raw answer in $tmp/out. It reads while it writes: a
# server that answers early and closes (431, 414 while the client still writes 200 KB) resets
# the connection, and a client that read only once its writes were done (cat, then cat; or
# openssl s_client, which stops at a failed write) lost the answer already received (CI, at load).
# (60 s without a byte ends it: a limit.)
send() {
  local port=$plain_port
  [[ $2 == tls ]] && port=$tls_port
  /usr/bin/python3 - "$2" "$port" "$3" >"$tmp/out" 2>/dev/null <<'PY' || true
import select, socket, ssl, sys
mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=60)
if mode == "tls":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    s = ctx.wrap_socket(s)
s.setblocking(False)
data, out = open(path, "rb").read(), sys.stdout.buffer
while True:
    pending = mode == "tls" and s.pending() > 0
    readable, writable, _ = select.select([s], [s] if data else [], [], 0 if pending else 60)
    if not (readable or writable or pending):
        break
    if writable:
        try:
            data = data[s.send(data[:16384]):]
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except OSError:
            data = b""  # closed by the server: its answer is read below
    if readable or pending:
        try:
            got = s.recv(65536)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            continue
        except OSError:
            break  # reset after what was read
        if not got:
            break
        out.write(got)
        out.flush()
PY
}
# expect_status name, code, message part: the last answer in $tmp/out is that code with a Status
expect_status() {
  local last
  last=$(grep -ao 'HTTP/1.1 [0-9][0-9][0-9] ' "$tmp/out" | tail -1 || true) # the last answer's status line
  [[ "$last" == "HTTP/1.1 $2 " ]] || { echo "FAIL $1: answer '$last', expected $2:"; head -c 600 "$tmp/out"; echo; failures=$((failures + 1)); return; }
  expect_in "$1: application/json" "$tmp/out" "Content-Type: application/json"
  expect_in "$1: a Status" "$tmp/out" '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure"'
  expect_in "$1: its code" "$tmp/out" "\"code\":$2}"
  expect_in "$1: message" "$tmp/out" "$3"
  if grep -aqi '<html>' "$tmp/out"; then echo "FAIL $1: an HTML page"; failures=$((failures + 1)); fi
}
req() { printf "$@" >"$tmp/req"; } # the request to send, printf-style
big() { head -c "$1" /dev/zero | tr '\0' a; }
ok='GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' # a first request, to test a kept-alive second one

for mode in tls plain; do
  req 'GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n'
  send "505" $mode "$tmp/req"
  expect_status "$mode: HTTP/2.0" 505 "is not supported: use HTTP/1.1 or HTTP/1.0"
  req "${ok}GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n"
  send "505 kept alive" $mode "$tmp/req"
  expect_status "$mode: HTTP/0.9 kept alive" 505 "is not supported: use HTTP/1.1 or HTTP/1.0"
  req 'GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n'
  send "400" $mode "$tmp/req"
  expect_status "$mode: header line without a colon" 400 "malformed"
  req "${ok}GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n"
  send "400 kept alive" $mode "$tmp/req"
  expect_status "$mode: Content-Length 1x kept alive" 400 "malformed request"
  { printf 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: '; big 20000; printf '\r\n\r\n'; } >"$tmp/req"
  send "431" $mode "$tmp/req"
  expect_status "$mode: 20 KB of headers" 431 "larger than the limit of 16384 bytes"
  { printf "${ok}GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "; big 200000; printf '\r\n\r\n'; } >"$tmp/req"
  send "431 kept alive" $mode "$tmp/req"
  expect_status "$mode: 200 KB of headers kept alive" 431 "headers are too large"
  { printf 'GET /'; big 10000; printf ' HTTP/1.1\r\nHost: x\r\n\r\n'; } >"$tmp/req"
  send "414" $mode "$tmp/req"
  expect_status "$mode: a 10 KB URI" 414 "the request"
  { printf "${ok}GET /"; big 200000; printf ' HTTP/1.1\r\nHost: x\r\n\r\n'; } >"$tmp/req"
  send "414 kept alive" $mode "$tmp/req"
  expect_status "$mode: a 200 KB URI kept alive" 414 "the request URI is too long"
  # request smuggling: the body's framing must be unambiguous
  req 'POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 30\r\n\r\nhello'
  send "two Content-Lengths" $mode "$tmp/req"
  expect_status "$mode: two Content-Length headers" 400 "the request has more than one Content-Length header"
  req 'POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
  send "CL and TE" $mode "$tmp/req"
  expect_status "$mode: Content-Length and Transfer-Encoding" 400 "the request has both Content-Length and Transfer-Encoding"
  req "${ok}GET /api/v1/namespaces/default/pods/sentinel%%00extra HTTP/1.1\r\nHost: x\r\n\r\n"
  send "NUL kept alive" $mode "$tmp/req"
  expect_status "$mode: %00 in a path segment kept alive" 400 "%00 encodes a control character, which no path segment may hold"
done
# plain: a request line that is not one (over TLS libmicrohttpd closes without an answer)
req 'GARBAGE\r\n\r\n'
send "garbage" plain "$tmp/req"
expect_status "plain: no request line" 400 "malformed request line"

# %00 and friends, with a token, on a pod that exists: refused before any lookup.
api() { # method path [body]: code in $tmp/code, body in $tmp/out
  curl -sS --cacert "$tmp/tls/pki/ca.crt" -H "Authorization: Bearer $admin" -X "$1" \
    -H 'Content-Type: application/json' ${3:+--data-binary "$3"} -o "$tmp/out" -w '%{http_code}' \
    --path-as-is "$tls$2" >"$tmp/code" || true
}
expect_code() { [[ "$(cat "$tmp/code")" == "$2" ]] || { echo "FAIL $1: HTTP $(cat "$tmp/code"), expected $2:"; cat "$tmp/out"; failures=$((failures + 1)); }; }
api POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sentinel"},"spec":{"containers":[{"name":"c","image":"x"}]}}'
expect_code "create sentinel" 201
api GET /api/v1/namespaces/default/pods/sentinel
expect_code "get sentinel" 200
for bad in 'sentinel%00extra' 'sentinel%0a' 'sentinel%2fstatus' 'sentinel%zz' '%2e%2e' 'sentinel?x=%00'; do
  api GET "/api/v1/namespaces/default/pods/$bad"
  expect_code "GET pods/$bad" 400
  expect_in "GET pods/$bad: a Status" "$tmp/out" '"reason":"BadRequest"'
  if grep -q '"kind":"Pod"' "$tmp/out"; then echo "FAIL GET pods/$bad returned a pod"; failures=$((failures + 1)); fi
done

# ---- floods: a normal request is still served --------------------------------------------------
# run_flood name, flood args...: the figures in $tmp/NAME.out; every probe must be answered 200,
# and none may wait as long as the flood lasts (7 s): a server that serves the flood's connections
# before a new one answers it only when they go. The 3 s is a limit, not the figure: the issue's
# figure (a normal request within 100 ms) is measured and kept in docs/reliability.md, since a
# timed assertion on a shared 2-core machine would fail with the machine, not with the server.
run_flood() {
  local name=$1 sent ok max
  shift
  "$flood" "$tls" "$@" --token "$admin" >"$tmp/$name.out" 2>&1 || true
  cat "$tmp/$name.out"
  read -r sent ok max < <(sed -n 's/^probes: \([0-9]*\) sent, \([0-9]*\) answered 200, .*, max \([0-9]*\)\.[0-9]* ms$/\1 \2 \3/p' "$tmp/$name.out") || true
  if [[ -z "$sent" || "$sent" -eq 0 || "$ok" -ne "$sent" || "$max" -ge 3000 ]]; then
    echo "FAIL $name: a normal request was not answered 200 while the flood lasted (sent ${sent:-?}, answered ${ok:-?}, slowest ${max:-?} ms); the server's log ends:"
    tail -20 "$tmp/tls.log"; failures=$((failures + 1))
  fi
}
run_flood idle idle 2000 7 --probes 20
# one address may keep 1,024 connections waiting: the flood's oldest made room for its newest
if ! grep -q 'closed by the server [1-9]' "$tmp/idle.out"; then echo "FAIL idle: no connection was closed to make room"; failures=$((failures + 1)); fi
run_flood slowloris slowloris 1024 7 --probes 20
run_flood watch watch 1024 7 --probes 20
expect_in "watch: the user's streams" "$tmp/watch.out" "answered 200: 256, 429: 768 (without Retry-After: 0)"

wait "$deadline_pid" || true
cat "$tmp/deadline.out"
read -r closed lo hi < <(sed -n 's/.*closed by the server \([0-9]*\) (after \([0-9.]*\) to \([0-9.]*\) s).*/\1 \2 \3/p' "$tmp/deadline.out") || true
if [[ -z "$closed" ]] || (( closed < 20 )) || ! awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(lo >= 9.5 && hi <= 11.5) }'; then
  echo "FAIL trickling heads were not closed at their 10 s deadline"; failures=$((failures + 1))
fi

# ---- the agent's log endpoint listens on the Node's address only ------------------------------
"$xpool" token create --node n1 --data-dir "$tmp/tls" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$tmp/tls" >"$tmp/n2.token" 2>/dev/null
for n in n1 n2; do
  listen=()
  [[ $n == n2 ]] && listen=(--listen 0.0.0.0:0)
  "$xpool" agent --server "$tls" --token-file "$tmp/$n.token" --ca-file "$tmp/tls/pki/ca.crt" \
    --node-name $n --data-dir "$tmp/agent-$n" --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc" --node-description "$src/examples/nodes/dgx-h100.yaml" \
    "${listen[@]}" >"$tmp/agent-$n.log" 2>&1 &
  pids+=($!)
  diag_log "$tmp/agent-$n.log"
done
log_port() { # node: its log endpoint's port, once registered
  local deadline=$((SECONDS + 60)) p=
  while [[ -z "$p" && $SECONDS -lt $deadline ]]; do
    api GET "/api/v1/nodes/$1"
    p=$(sed -n 's/.*"kubeletEndpoint":{"Port":\([0-9]*\)}.*/\1/p' "$tmp/out")
    [[ -n "$p" ]] || sleep 0.2
  done
  echo "$p"
}
p1=$(log_port n1) p2=$(log_port n2)
[[ -n "$p1" && -n "$p2" ]] || { echo "FAIL the agents did not register:"; cat "$tmp"/agent-*.log; exit 1; }
# HTTPS (docs/agent.md): where each endpoint listens, not its certificate (n2's names 127.0.0.1,
# its address, not 127.0.0.2), is what is checked here, hence curl's --insecure
code() { curl -sS --insecure -o /dev/null -w '%{http_code}' "https://$1/containerLogs/default/x/c" 2>/dev/null || true; }
[[ "$(code "127.0.0.1:$p1")" == 401 ]] || { echo "FAIL n1's endpoint does not answer on its address 127.0.0.1"; failures=$((failures + 1)); }
[[ "$(code "127.0.0.2:$p1")" == 000 ]] || { echo "FAIL n1's endpoint answers on 127.0.0.2, not its address"; failures=$((failures + 1)); }
[[ "$(code "127.0.0.2:$p2")" == 401 ]] || { echo "FAIL n2's endpoint (--listen 0.0.0.0:0) does not answer on 127.0.0.2"; failures=$((failures + 1)); }

# The server stops cleanly after all that (under ASan: without leaks).
kill -TERM "$tls_pid"
rc=0; wait "$tls_pid" || rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL the server exited $rc:"; tail -30 "$tmp/tls.log"; failures=$((failures + 1)); }

finish floods
