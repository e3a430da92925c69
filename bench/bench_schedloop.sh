#!/usr/bin/env bash
# The server's scheduling loop under a burst: starts `xpool server --no-tls` on a free port with
# NODES CPU-only nodes (tests/data/scheduler/slot.yaml renamed), creates PODS small pods from
# CLIENTS concurrent connections (tests/tools/api_burst), and prints how long until every pod is
# bound: binds/s, and the server's CPU per bind (the figure that does not depend on what else the
# machine runs), with the load average at start and end.
#
# MODE (issue 21's goal 6 times binding apart from creating):
#  - binds (the default): the nodes are created once to measure what that costs the server, and
#    deleted; the pods are created while no node exists (each becomes unschedulable) and the
#    server is left to go idle; then the nodes are created again and every pod is bound. Binds/s
#    is timed from the first binding to the last (the backoff before the first is not binding);
#    the server CPU per bind is that phase's CPU less what creating the nodes cost alone.
#  - burst: nodes first, then the pods; creates and binds overlap (CPU per pod = create + bind +
#    Event).
#
#   bench/bench_schedloop.sh BUILD_DIR [NODES [PODS [CLIENTS [QUEUES [MODE]]]]]
#   (defaults 500 20000 16 on binds)
#
# QUEUES on (the default, as issue 19's goal asks): two Queues of equal weight, team-a (the
# namespace default's default queue, so every pod of the burst counts in it) and team-b, so that
# admission, accounting and the fair order run for every pod; off: no Queue at all.
#
# PROFILE (environment, default the server's own: xpool) is passed as --placement-profile, so the
# cost of a profile's scores can be compared: PROFILE=spread bench/bench_schedloop.sh build 5000.
#
# PERF (environment, a file name): the timed phase is recorded with `perf record -g` on the
# server into that file, for `perf report -i FILE` (perf's own cost lands in the CPU figure).
#
# Prints figures only; asserts nothing. Needs curl, jq and Debian's /usr/bin/python3 (the nodes
# are created over one keep-alive connection: thousands of curl processes would take minutes).
set -euo pipefail

build=${1:?usage: bench_schedloop.sh BUILD_DIR [NODES [PODS [CLIENTS]]]}
nodes=${2:-500}
pods=${3:-20000}
clients=${4:-16}
queues=${5:-on}
mode=${6:-binds}
[[ "$mode" == binds || "$mode" == burst ]] || { echo "bench_schedloop: MODE is binds or burst, not $mode" >&2; exit 1; }
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

"$xpool" server --no-tls --listen 127.0.0.1:0 --data-dir "$tmp/data" \
  ${PROFILE:+--placement-profile "$PROFILE"} >"$tmp/server.log" 2>&1 &
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
# nodes create|delete: node-1 ... node-NODES over one keep-alive connection
nodes() {
  /usr/bin/python3 - "$base" "$token" "$nodes" "$tmp/node.json" "$1" <<'PY'
import http.client, sys, urllib.parse
base, token, nodes, template, verb = sys.argv[1], sys.argv[2], int(sys.argv[3]), open(sys.argv[4]).read(), sys.argv[5]
url = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
for i in range(1, nodes + 1):
    if verb == "create":
        conn.request("POST", "/api/v1/nodes", template.replace('"slot"', '"node-%d"' % i), headers)
    else:
        conn.request("DELETE", "/api/v1/nodes/node-%d" % i, None, headers)
    answer = conn.getresponse()
    answer.read()
    if answer.status not in (200, 201):
        sys.exit("bench_schedloop: %s node-%d: HTTP %d" % (verb, i, answer.status))
PY
}
load() { printf 'load average (%s) %s\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
# the server's CPU time so far (utime + stime, in clock ticks)
cpu_ticks() { local stat; read -r -a stat <"/proc/$server_pid/stat"; echo $((stat[13] + stat[14])); }
# waits (at most 300 s) until the server spent under 100 ms of CPU in two seconds (its periodic
# work goes on)
settle() {
  local before after
  for _ in $(seq 150); do
    before=$(cpu_ticks); sleep 2; after=$(cpu_ticks)
    (( (after - before) * 1000 / $(getconf CLK_TCK) < 100 )) && return 0
  done
  echo "bench_schedloop: the server did not go idle within 300 s" >&2
  exit 1
}
node_ticks=0
if [[ "$mode" == binds ]]; then
  settle
  t0=$(cpu_ticks)
  nodes create
  settle
  node_ticks=$(($(cpu_ticks) - t0))
  nodes delete
  settle
else
  nodes create
fi

if [[ "$queues" == on ]]; then
  for q in team-a team-b; do
    curl -sSf "${auth[@]}" -H 'Content-Type: application/json' -o /dev/null \
      -d '{"apiVersion":"scheduling.xpool.io/v1alpha1","kind":"Queue","metadata":{"name":"'"$q"'"},"spec":{"weight":1}}' \
      "$base/apis/scheduling.xpool.io/v1alpha1/queues"
  done
  curl -sSf "${auth[@]}" -X PATCH -H 'Content-Type: application/merge-patch+json' -o /dev/null \
    -d '{"metadata":{"labels":{"xpool.io/default-queue":"team-a"}}}' "$base/api/v1/namespaces/default"
fi

if [[ "$mode" == binds ]]; then
  "$burst" "$base" "$pods" "$clients" "$token" >/dev/null 2>"$tmp/burst.err"
  settle
fi

# One watch counts the bindings as they land (polling a list of every pod would cost the server
# more than the binding it measures); it prints the time each of PODS was bound.
rv=$(curl -sS "${auth[@]}" "$base/api/v1/namespaces/default/pods?limit=1" | jq -r .metadata.resourceVersion)
curl -sSN --max-time 600 "${auth[@]}" \
  "$base/api/v1/namespaces/default/pods?watch=true&resourceVersion=$rv" 2>/dev/null |
  /usr/bin/python3 -c '
import json, sys, time
want, bound = int(sys.argv[1]), set()
for line in sys.stdin:
    event = json.loads(line) if line.strip() else {}
    obj = event.get("object", {})
    if obj.get("spec", {}).get("nodeName") and obj["metadata"]["name"] not in bound:
        bound.add(obj["metadata"]["name"])
        print("%.6f" % time.time())
        if len(bound) == want:
            break
' "$pods" >"$tmp/bound_at" &
watcher_pid=$!

perf_pid=
if [[ -n "${PERF:-}" ]]; then
  perf record -q -g -o "$PERF" -p "$server_pid" >/dev/null 2>&1 &
  perf_pid=$!
  sleep 1
fi
load start
cpu0=$(cpu_ticks)
start=$(date +%s.%N)
if [[ "$mode" == binds ]]; then
  nodes create
else
  "$burst" "$base" "$pods" "$clients" "$token" >/dev/null 2>"$tmp/burst.err"
fi
created=$(date +%s.%N)
wait "$watcher_pid" || true
first_at=$(sed -n 1p "$tmp/bound_at")
done_at=$(sed -n "${pods}p" "$tmp/bound_at")
[[ -n "$done_at" ]] || { echo "bench_schedloop: not every pod was bound within 600 s" >&2; exit 1; }
cpu=$(echo "($(cpu_ticks) - $cpu0) / $(getconf CLK_TCK)" | bc -l)
if [[ -n "$perf_pid" ]]; then
  kill -INT "$perf_pid" 2>/dev/null || true
  wait "$perf_pid" 2>/dev/null || true
fi
bound=$(curl -sS "${auth[@]}" "$base/api/v1/namespaces/default/pods" |
  jq '[.items[] | select(.spec.nodeName != null and .spec.nodeName != "")] | length')
if [[ "$mode" == binds ]]; then
  node_cpu=$(echo "$node_ticks / $(getconf CLK_TCK)" | bc -l)
  # the server's CPU time less the nodes' creation: what scheduling and binding cost besides disk
  printf 'queues %s; nodes %d, pods %d pending before any node: nodes created in %.2f s, bound from %.2f s to %.2f s (%d bound); server CPU %.2f s, of which %.2f s the node creates\n' \
    "$queues" "$nodes" "$pods" "$(echo "$created - $start" | bc)" "$(echo "$first_at - $start" | bc)" \
    "$(echo "$done_at - $start" | bc)" "$bound" "$cpu" "$node_cpu"
  # the first bindings wait for nodes to be created; once every node exists nothing paces them
  after=$(awk -v t="$created" '$1 > t' "$tmp/bound_at" | wc -l)
  if ((after > 0)); then
    paced=$(printf '%.0f once every node existed (%d binds)' "$(echo "$after / ($done_at - $created)" | bc -l)" "$after")
  else
    paced='every binding landed while nodes were still being created'
  fi
  printf 'binds/s %.0f (bound / time from first to last binding, binds alone), %s; server CPU per bind (bind + Event) %.0f us\n' \
    "$(echo "$bound / ($done_at - $first_at)" | bc -l)" "$paced" "$(echo "($cpu - $node_cpu) * 1000000 / $bound" | bc -l)"
  load end
  exit 0
fi
# the server's CPU time (cpu): what creating, scheduling and binding cost besides waiting on disk
printf 'queues %s; nodes %d, pods %d from %d clients: created in %.2f s, all bound after %.2f s (%d bound); server CPU %.2f s\n' \
  "$queues" "$nodes" "$pods" "$clients" "$(echo "$created - $start" | bc)" "$(echo "$done_at - $start" | bc)" \
  "$bound" "$cpu"
printf 'binds/s %.0f (bound / time until all bound, creates overlapping); server CPU per pod (create + bind + Event) %.0f us\n' \
  "$(echo "$bound / ($done_at - $start)" | bc -l)" "$(echo "$cpu * 1000000 / $pods" | bc -l)"
load end
