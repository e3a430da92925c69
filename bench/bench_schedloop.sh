#!/usr/bin/env bash
# The server's scheduling loop under a burst: starts `xpool server --no-tls` on a free port with
# NODES CPU-only nodes (tests/data/scheduler/slot.yaml renamed), creates PODS small pods from
# CLIENTS concurrent connections (tests/tools/api_burst), and prints how long until every pod is
# bound (pods listed with fieldSelector=spec.nodeName= until none is left).
#
#   bench/bench_schedloop.sh BUILD_DIR [NODES [PODS [CLIENTS]]]    (defaults 500 20000 16)
#
# Prints figures only; asserts nothing. Needs curl and jq.
set -euo pipefail

build=${1:?usage: bench_schedloop.sh BUILD_DIR [NODES [PODS [CLIENTS]]]}
nodes=${2:-500}
pods=${3:-20000}
clients=${4:-16}
xpool=$build/xpool
burst=$build/tests/api_burst
fixture=$(dirname "$0")/../tests/data/scheduler/slot.yaml
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "bench_schedloop: $tool is not installed" >&2; exit 1; }
done
[[ -x "$xpool" && -x "$burst" ]] || { echo "bench_schedloop: no $xpool or $burst" >&2; exit 1; }

tmp=$(mktemp -d)
server_pid=
trap '[[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

"$xpool" server --no-tls --listen 127.0.0.1:0 --data-dir "$tmp/data" >"$tmp/server.log" 2>&1 &
server_pid=$!
base=
for _ in $(seq 150); do
  base=$(sed -n 's|.*xpool server listening on \(http://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' \
    "$tmp/server.log")
  [[ -n "$base" ]] && break
  sleep 0.1
done
[[ -n "$base" ]] || { echo "bench_schedloop: the server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$tmp/data/admin.kubeconfig" | head -1)
auth=(-H "Authorization: Bearer $token")

"$xpool" convert -o json -f "$fixture" >"$tmp/node.json"
for i in $(seq "$nodes"); do
  sed "s/\"slot\"/\"node-$i\"/g" "$tmp/node.json" >"$tmp/node-$i.json"
  code=$(curl -sS -o /dev/null -w '%{http_code}' "${auth[@]}" -H 'Content-Type: application/json' \
    --data-binary "@$tmp/node-$i.json" "$base/api/v1/nodes")
  [[ "$code" == 201 ]] || { echo "bench_schedloop: node-$i: HTTP $code" >&2; exit 1; }
done

pending() {
  curl -sS --max-time 60 "${auth[@]}" "$base/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3D" |
    jq '.items | length'
}

start=$(date +%s.%N)
"$burst" "$base" "$pods" "$clients" "$token" >/dev/null 2>"$tmp/burst.err"
created=$(date +%s.%N)
while :; do
  left=$(pending)
  [[ "$left" == 0 ]] && break
  sleep 0.2
done
done_at=$(date +%s.%N)
bound=$(curl -sS "${auth[@]}" "$base/api/v1/namespaces/default/pods" |
  jq '[.items[] | select(.spec.nodeName != null and .spec.nodeName != "")] | length')
# the server's CPU time (utime + stime, in clock ticks): what the loop costs besides waiting on disk
read -r -a stat <"/proc/$server_pid/stat"
ticks=$(getconf CLK_TCK)
printf 'nodes %d, pods %d from %d clients: created in %.2f s, all bound after %.2f s (%d bound); server CPU %.2f s\n' \
  "$nodes" "$pods" "$clients" "$(echo "$created - $start" | bc)" "$(echo "$done_at - $start" | bc)" \
  "$bound" "$(echo "(${stat[13]} + ${stat[14]}) / $ticks" | bc -l)"
