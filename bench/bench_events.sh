#!/usr/bin/env bash
# The server's cost of the agent's Events (issue 21: a short pod has three, Created, Started and
# DevicesAllocated): `xpool server --no-tls --no-scheduler`, then COUNT Events as the agent
# creates them (src/agent/events.c: core/v1, source kubelet, a node's token), sent by CONNS
# kept-alive connections at once (curl --parallel): 1 is how the agent sent them before (one
# thread, one connection), 4 how its four event writers send them now. Prints the server's CPU
# (its /proc stat, all its threads) per Event, which does not depend on what else the machine
# runs as wall time does, the store's commits per Event (each commit one fsync: Events sent
# together share one), the wall time, and the load average before and after.
#
#   bench/bench_events.sh BUILD_DIR [COUNT] [CONNS]    (defaults 3000, 4)
#
# Prints figures only; asserts nothing (tests/integration/14-agent.sh checks the agent's Events).
set -uo pipefail

build=${1:?usage: bench_events.sh BUILD_DIR [COUNT] [CONNS]}
count=${2:-3000}
conns=${3:-4}
[[ "$conns" =~ ^[1-9][0-9]?$ ]] || { echo "bench_events: CONNS is 1 to 99" >&2; exit 1; }
source "$(dirname "$0")/bench_server_lib.sh"
bench_server_start bench_events "$build" "$count"

node_token=$("$build/xpool" token create --node n1 --data-dir "$tmp/data" 2>/dev/null)
[[ "$node_token" == xpn_* ]] || { echo "bench_events: xpool token create gave no node token" >&2; exit 1; }

commits() {
  curl -sS -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" |
    sed -n 's/^xpool_store_commits_total \([0-9]*\).*/\1/p'
}

# one curl for all: a config block per Event (`next` starts the next one)
for i in $(seq 1 "$count"); do
  printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"p%d.187e0c0ffee%04x","namespace":"default"},"involvedObject":{"kind":"Pod","apiVersion":"v1","namespace":"default","name":"p%d","uid":"5a6b7c8d-0000-4000-8000-%012d"},"type":"Normal","reason":"Started","message":"Started container main","source":{"component":"kubelet","host":"n1"},"firstTimestamp":"2026-12-05T20:00:00Z","lastTimestamp":"2026-12-05T20:00:00Z","count":1,"reportingComponent":"kubelet","reportingInstance":"n1"}' \
    "$i" "$((i % 65536))" "$i" "$i" >"$tmp/body$i.json"
  printf 'url = "http://127.0.0.1:%s/api/v1/namespaces/default/events"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata-binary = "@%s/body%d.json"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
    "$port" "$node_token" "$tmp" "$i" >>"$tmp/curl.conf"
  ((i < count)) && echo next >>"$tmp/curl.conf"
done

parallel=()
((conns > 1)) && parallel=(--parallel --parallel-max "$conns")
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
commits0=$(commits)
ticks0=$(awk '{print $14 + $15}' "/proc/$server_pid/stat") t0=$(date +%s%N)
curl -sS --no-progress-meter "${parallel[@]}" -K "$tmp/curl.conf" >"$tmp/codes"
ticks1=$(awk '{print $14 + $15}' "/proc/$server_pid/stat") t1=$(date +%s%N)
commits1=$(commits)
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
hz=$(getconf CLK_TCK)
echo "$(grep -c '^201$' "$tmp/codes") of $count Events created (201) by $conns connections in $(((t1 - t0) / 1000000)) ms"
echo "store commits per Event: $(awk -v a="$commits0" -v b="$commits1" -v n="$count" 'BEGIN{printf "%.2f", (b - a) / n}')"
echo "server CPU per Event: $(((ticks1 - ticks0) * 1000000 / hz / count)) us"
