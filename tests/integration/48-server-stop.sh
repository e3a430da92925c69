#!/usr/bin/env bash
# xpool server stopped with SIGTERM while it is busy (docs/reliability.md): 3,000 pending
# pods that no node fits (the scheduler has a failure to write for each), watches open (from now,
# from resourceVersion 0 with their ADDED seed, label-selected), and a burst of creates from 16
# keep-alive clients in flight (api_burst prints each pod only once its 201 arrived). The server
# must exit on its own, with status 0 (a hang check: 10 s at most, no figure asserted), end the
# watches' connections and refuse the burst's; restarted on the same data directory, it lists
# every pod that was answered 201. Then once more right after a restart, while the controllers
# still read the thousands of pods (no burst: its names are taken). Before the stop order of
# docs/reliability.md, that second stop took more than 10 s (the scheduler wrote 3,000 failures).
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
burst=${XPOOL_API_BURST:?the api_burst helper (tests/tools/api_burst.c)}
data=$tmp/data
base_pods=${SERVER_STOP_PODS:-3000}
server_pid= burst_pid= base= token=
watch_pids=()

stop_all() {
  kill -KILL $burst_pid $server_pid "${watch_pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT

curl_api() { # curl arguments...: with the bearer token of admin.kubeconfig
  curl -H "Authorization: Bearer $token" "$@"
}

start_plain() { # log name: the server on a free port, plain HTTP (api_burst speaks no TLS); a start
  # over thousands of pending pods under ASan beside the fuzzers took more than 15 s in CI
  local log=$tmp/$1.log deadline=$((SECONDS + 60)) port=
  : >"$log"
  "$xpool" server --listen 127.0.0.1:0 --no-tls --data-dir "$data" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    port=$(sed -n 's|.*xpool server listening on http://127\.0\.0\.1:\([0-9]*\), state in .*|\1|p' "$log")
    if [[ -n "$port" ]]; then
      token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*["'\'']\{0,1\}\([^"'\'' ]*\).*/\1/p' "$data/admin.kubeconfig" | head -1)
      if curl_api -fsS -o /dev/null "http://127.0.0.1:$port/version" 2>/dev/null; then
        base=http://127.0.0.1:$port
        return 0
      fi
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 60 s:"; cat "$log"; exit 1
}

pods=/api/v1/namespaces/default/pods
open_watches() { # round: four watches of the pods, each into $tmp/watch-ROUND-N
  local q
  watch_pids=()
  for q in "watch=true" "watch=true&resourceVersion=0" "watch=true&labelSelector=app%3Dnone" \
    "watch=true&resourceVersion=0&allowWatchBookmarks=true"; do
    curl_api -sSN --max-time 120 "$base$pods?$q" >"$tmp/watch-$1-${#watch_pids[@]}" 2>/dev/null &
    watch_pids+=($!)
  done
}

stop_busy() { # round, creates answered before the stop (0: no burst): SIGTERM, then checks
  local round=$1 want=$2 deadline rc=0 n alive=0 pid
  : >"$tmp/acked-$round"
  : >"$tmp/burst-err-$round"
  if [[ $want -gt 0 ]]; then
    API_BURST_FIRST=$base_pods "$burst" "$base" 1000000 16 "$token" >"$tmp/acked-$round" 2>"$tmp/burst-err-$round" &
    burst_pid=$!
  fi
  deadline=$((SECONDS + 60))
  while [[ $(wc -l <"$tmp/acked-$round") -lt $want && $SECONDS -lt $deadline ]] && kill -0 "$burst_pid" 2>/dev/null; do
    sleep 0.05
  done
  n=$(wc -l <"$tmp/acked-$round")
  [[ $n -ge $want ]] || { echo "FAIL $round: only $n creates answered before the stop, want $want"; failures=$((failures + 1)); }
  kill -TERM "$server_pid"
  # a hang check, not a timing: a stop waits for nothing unbounded
  deadline=$((SECONDS + 10))
  while kill -0 "$server_pid" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do sleep 0.05; done
  if kill -0 "$server_pid" 2>/dev/null; then
    echo "FAIL $round: the server still runs 10 s after SIGTERM"; failures=$((failures + 1))
    diag_state
    kill -KILL "$server_pid"
  fi
  wait "$server_pid" || rc=$?
  server_pid=
  [[ $rc -eq 0 ]] || { echo "FAIL $round: the server exited with status $rc after SIGTERM"; failures=$((failures + 1)); }
  expect_in "$round: the server says why it stops" "$tmp/$round.log" "Terminated, stopping"
  grep -h ' stop: ' "$tmp/$round.log" || true # each step's time, with XPOOL_DEBUG=stop
  # the server gone, every client sees its connection end: bounded waits
  deadline=$((SECONDS + 60))
  if [[ -n "$burst_pid" ]]; then
    while kill -0 "$burst_pid" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do sleep 0.05; done
    kill -0 "$burst_pid" 2>/dev/null && { echo "FAIL $round: api_burst still runs after the stop"; failures=$((failures + 1)); }
    kill -KILL "$burst_pid" 2>/dev/null || true
    wait "$burst_pid" 2>/dev/null || true
    burst_pid=
  fi
  while [[ $SECONDS -lt $deadline ]]; do
    alive=0
    for pid in "${watch_pids[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then alive=$((alive + 1)); fi
    done
    [[ $alive -gt 0 ]] || break
    sleep 0.05
  done
  [[ $alive -eq 0 ]] || { echo "FAIL $round: $alive watch connections still open after the stop"; failures=$((failures + 1)); }
  kill -KILL "${watch_pids[@]}" 2>/dev/null || true
  wait "${watch_pids[@]}" 2>/dev/null || true
  watch_pids=()
  if grep -q 'HTTP' "$tmp/burst-err-$round"; then
    echo "FAIL $round: answers other than 201 before the stop:"; cat "$tmp/burst-err-$round"; failures=$((failures + 1))
  fi
  echo "$round: stopped after $n creates answered; api_burst: $(tail -1 "$tmp/burst-err-$round")"
}

check_acked() { # round: every pod answered 201 (any round so far) is listed after the restart
  local acked stored lost
  curl_api -sS -o "$tmp/list" "$base$pods"
  cat "$tmp"/acked-* | grep -x 'burst-[0-9]*' | sort -u >"$tmp/acked-names" || true
  grep -o '"name":"burst-[0-9]*"' "$tmp/list" | cut -d'"' -f4 | sort -u >"$tmp/stored-names" || true
  acked=$(wc -l <"$tmp/acked-names")
  stored=$(wc -l <"$tmp/stored-names")
  lost=$(comm -23 "$tmp/acked-names" "$tmp/stored-names" | wc -l)
  echo "$1: answered 201: $acked, stored: $stored, lost: $lost"
  if [[ $lost -ne 0 || $acked -lt $base_pods ]]; then
    echo "FAIL $1: $lost pods answered 201 are gone ($acked answered):"
    comm -23 "$tmp/acked-names" "$tmp/stored-names" | head
    failures=$((failures + 1))
  fi
}

start_plain first
# the pending pods first (no node: each is a failure the scheduler writes), then the watches
"$burst" "$base" "$base_pods" 16 "$token" >"$tmp/acked-base" 2>"$tmp/burst-err-base" ||
  { echo "FAIL creating $base_pods pods:"; cat "$tmp/burst-err-base"; failures=$((failures + 1)); }
open_watches first
# the watches with a seed are open once their ADDED events came (bounded wait)
deadline=$((SECONDS + 60))
while [[ $(grep -c '"type":"ADDED"' "$tmp/watch-first-1") -lt $base_pods && $SECONDS -lt $deadline ]]; do
  sleep 0.1
done
stop_busy first 300
start_plain second
check_acked "after the first stop"
open_watches second
stop_busy second 0
start_plain third
check_acked "after the second stop"
finish "server stop"
