#!/usr/bin/env bash
# The ends of exec streams under stress, through the server to the agent (xpool up --simulate):
# many kubectl cp and exec round trips with outputs of known checksum over WebSocket and SPDY,
# and a raw WebSocket client (ws_stream.py) that reads slowly and pings every few milliseconds,
# so that its bytes are still arriving while the agent and the server end the stream. The stream
# must end whole every time: every frame complete, the output's SHA-256 as expected, the Status
# and the close frame. (A side that closed its socket with the client's bytes unread answered
# them with a reset, which lost the output its kernel still held: kubectl cp failed with "read
# message" under the ASan build.) Bounded: XPOOL_STREAM_ROUNDS rounds of kubectl (default 3)
# and of the slow client (default 2), each with its own deadline.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ -x /usr/bin/python3 ]] || { echo "SKIP: /usr/bin/python3 is not installed"; exit 77; }
rounds=${XPOOL_STREAM_ROUNDS:-3}
slow_rounds=${XPOOL_STREAM_ROUNDS:-2}
data=$tmp/data
up_pid=
stop_all() {
  local p
  [[ -z "$up_pid" ]] || { kill -KILL "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; }
  for p in /proc/[0-9]*; do
    if [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"sleep 3600.$mark"* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=60s)
mark=$((RANDOM % 900 + 100))$$

# XPOOL_DEBUG=stream: the server logs how each stream's tunnel ended (the client that waits, below)
XPOOL_DEBUG=stream "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name stress-node \
  --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc" >"$tmp/up.log" 2>&1 &
up_pid=$!
deadline=$((SECONDS + 120))
until grep -q "^xpool is up" "$tmp/up.log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$tmp/up.log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up:"; cat "$tmp/up.log"; exit 1; }
  sleep 0.1
done
base=$(sed -n 's|.*listening on \(https://127\.0\.0\.1:[0-9]*\),.*|\1|p' "$tmp/up.log")
sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1 >"$tmp/token"
sed -n 's/^[[:space:]]*certificate-authority-data:[[:space:]]*//p' "$KUBECONFIG" | head -1 |
  base64 -d >"$tmp/ca.pem"

cat >"$tmp/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3600.$mark"]
EOF
check "apply the pod" 0 "${kc[@]}" apply -f "$tmp/pod.yaml"
deadline=$((SECONDS + 120))
until [[ "$("${kc[@]}" get pod box -o 'jsonpath={.status.phase}' 2>/dev/null)" == Running ]]; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL box does not run"; exit 1; }
  sleep 0.2
done

# ---- kubectl: cp and exec with large outputs, over WebSocket and SPDY --------------------------
head -c 300000 /dev/urandom >"$tmp/blob"
check "cp to the pod" 0 "${kc[@]}" cp "$tmp/blob" "box:/tmp/blob-$mark"
seq 1 200000 >"$tmp/seq.want"
spdy=(env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false "${kc[@]}")
for i in $(seq "$rounds"); do
  rm -f "$tmp/blob.back"
  check "round $i: cp from the pod" 0 "${kc[@]}" cp "box:/tmp/blob-$mark" "$tmp/blob.back"
  cmp -s "$tmp/blob" "$tmp/blob.back" || { echo "FAIL round $i: cp: the file came back different"; failures=$((failures + 1)); }
  check "round $i: exec seq" 0 "${kc[@]}" exec box -- seq 1 200000
  cmp -s "$tmp/out" "$tmp/seq.want" || { echo "FAIL round $i: exec: the output differs"; failures=$((failures + 1)); }
  check "round $i: exec seq over SPDY" 0 "${spdy[@]}" exec box -- seq 1 200000
  cmp -s "$tmp/out" "$tmp/seq.want" || { echo "FAIL round $i: exec over SPDY: the output differs"; failures=$((failures + 1)); }
  [[ $failures -eq 0 ]] || break
done

# ---- a slow reader that pings all the time -----------------------------------------------------
# (a smaller output: this client is slow on purpose)
want=$(seq 1 60000 | sha256sum | cut -d' ' -f1)
check "the slow pinging client" 0 /usr/bin/python3 "$src/tests/integration/ws_stream.py" "$base" \
  "$tmp/token" "$tmp/ca.pem" \
  "/api/v1/namespaces/default/pods/box/exec?command=seq&command=1&command=60000&stdout=true&stderr=true" \
  "$want" "$slow_rounds"
expect_count "the slow pinging client: every round whole" "$tmp/out" "$slow_rounds" "ok "

# ---- a client that waits for the server to close (RFC 6455, 7.1.1) ------------------------------
# Under TLS the agent's FIN cannot pass libmicrohttpd's relay: once the closing handshake is over
# the agent closes, or such a client would wait out the agent's 30 s linger (bounded at 20 s here).
# The server's FIN cannot pass it either: once the agent closed and the client took every byte of
# it, the server's tunnel ends, where it waited 5 s for the client to close first (each round
# took 6.4 s, now 1.5 s). The server's log says so for each round: its tunnel ended with the
# agent's close, never after the half-closed wait.
ended='stream: pods/exec default/box ended after'
ends_before=$(grep -c "$ended" "$tmp/up.log" || true)
check "a client that waits for the close" 0 /usr/bin/python3 "$src/tests/integration/ws_stream.py" "$base" \
  "$tmp/token" "$tmp/ca.pem" \
  "/api/v1/namespaces/default/pods/box/exec?command=seq&command=1&command=1000&stdout=true&stderr=true" \
  "$(seq 1 1000 | sha256sum | cut -d' ' -f1)" 2 await-close
expect_count "a client that waits for the close: every round closed by the server" "$tmp/out" 2 "ok "
poll "the server logged both rounds' ends" 60 yes sh -c \
  "[ \$(grep -c '$ended' '$tmp/up.log') -ge $((ends_before + 2)) ] && echo yes || echo no"
grep "$ended" "$tmp/up.log" | tail -n +$((ends_before + 1)) >"$tmp/ends"
sed 's/^/  /' "$tmp/ends"
expect_count "each round's tunnel ended with the agent's close, every byte taken" "$tmp/ends" 2 \
  "the agent closed and the client took all it sent"

# nothing of the streams is left behind in the agent (their seq counts only: 81-stream-tail's
# pods, which may run beside this test, run seq 1 100000)
poll "no stream left" 60 "" sh -c "pgrep -f '^seq 1 (200000|60000)\$' || true"
kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up died:"; tail -20 "$tmp/up.log"; failures=$((failures + 1)); }
finish "stream-stress"
