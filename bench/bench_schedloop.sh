#!/usr/bin/env bash
# The server's scheduling loop under a burst: starts `xpool server --no-tls` on a free port with
# NODES CPU-only nodes (tests/data/scheduler/slot.yaml renamed), creates PODS small pods from
# CLIENTS concurrent connections (tests/tools/api_burst), and prints how long until every pod is
# bound: binds/s, and the server's CPU per bind (the figure that does not depend on what else the
# machine runs), with the load average at start and end.
#
# MODE (issue 21's goal 6 times binding apart from creating):
#  - binds (the default): every object exists before the scheduler runs. A first server, started
#    with --no-scheduler, takes the Queues, the PODS pods and the NODES nodes and is stopped; a
#    second one, with the scheduler, opens the same store and binds every pod while nothing else
#    is written, so binds do not follow the node creates. The server's scheduling loop starts
#    last, once the server listens (docs/scheduler.md, "In the server"), so the wall time runs
#    from its "listening" line (seen within 20 ms; the store open, every controller started) to
#    the first /metrics answer that sees no pod unbound: binds/s and the server's CPU per bind
#    over that window, every pod counted. Also printed: the second server's
#    CPU until every pod is bound less what a start without the scheduler costs on a copy of
#    the store (its open and every controller's first read), the figure by which earlier builds
#    (whose scheduler bound before the server listened) were compared.
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
# SCORE_PERCENT (environment, default the server's own: adaptive) is passed as
# --percentage-of-nodes-to-score: 100 ranks every pod on every node, as before sampling.
#
# PERF (environment, a file name): the timed phase (binds: from the second server's start) is
# recorded with `perf record -g` on the server into that file, for `perf report -i FILE` (perf's
# own cost lands in the CPU figure). PERF_FLAGS replaces -g (--call-graph dwarf: the release
# build keeps no frame pointers).
#
# STORE (environment, binds only, a directory): the first run keeps the stored pods, nodes and
# Queues there, later runs bind a copy of them (the same NODES, PODS and QUEUES), so that two
# builds are compared on one input and the creates are not paid again.
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

# start_server [ARG...]: a server on a free port over $tmp/data (waits at most 300 s: a start
# reads the whole store); sets server_pid, base, token, auth, and listened_at and listened_ticks
# (the time and the server's CPU when its "listening" line was seen, within 20 ms)
start_server() {
  : >"$tmp/server.log"
  "$xpool" server --no-tls --listen 127.0.0.1:0 --data-dir "$tmp/data" \
    ${PROFILE:+--placement-profile "$PROFILE"} \
    ${SCORE_PERCENT:+--percentage-of-nodes-to-score "$SCORE_PERCENT"} "$@" >"$tmp/server.log" 2>&1 &
  server_pid=$!
  base=
  for _ in $(seq 15000); do
    base=$(sed -n 's|.*xpool server listening on \(http://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' \
      "$tmp/server.log")
    [[ -n "$base" ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.02
  done
  listened_at=$(date +%s.%N)
  listened_ticks=$(cpu_ticks 2>/dev/null || echo 0)
  [[ -n "$base" ]] || { echo "bench_schedloop: the server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
  token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$tmp/data/admin.kubeconfig" | head -1)
  auth=(-H "Authorization: Bearer $token")
}
stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || { echo "bench_schedloop: the server's stop failed:" >&2; tail "$tmp/server.log" >&2; exit 1; }
  server_pid=
}

# node-1 ... node-NODES, created over one keep-alive connection
create_nodes() {
  /usr/bin/python3 - "$base" "$token" "$nodes" "$tmp/node.json" <<'PY'
import http.client, sys, urllib.parse
base, token, nodes, template = sys.argv[1], sys.argv[2], int(sys.argv[3]), open(sys.argv[4]).read()
url = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
for i in range(1, nodes + 1):
    conn.request("POST", "/api/v1/nodes", template.replace('"slot"', '"node-%d"' % i), headers)
    answer = conn.getresponse()
    answer.read()
    if answer.status != 201:
        sys.exit("bench_schedloop: create node-%d: HTTP %d" % (i, answer.status))
PY
}
queues_on() {
  [[ "$queues" == on ]] || return 0
  for q in team-a team-b; do
    curl -sSf "${auth[@]}" -H 'Content-Type: application/json' -o /dev/null \
      -d '{"apiVersion":"scheduling.xpool.io/v1alpha1","kind":"Queue","metadata":{"name":"'"$q"'"},"spec":{"weight":1}}' \
      "$base/apis/scheduling.xpool.io/v1alpha1/queues"
  done
  curl -sSf "${auth[@]}" -X PATCH -H 'Content-Type: application/merge-patch+json' -o /dev/null \
    -d '{"metadata":{"labels":{"xpool.io/default-queue":"team-a"}}}' "$base/api/v1/namespaces/default"
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
bound_count() {
  curl -sS "${auth[@]}" "$base/api/v1/namespaces/default/pods" |
    jq '[.items[] | select(.spec.nodeName != null and .spec.nodeName != "")] | length'
}

"$xpool" convert -o json -f "$fixture" >"$tmp/node.json"

if [[ "$mode" == binds ]]; then
  if [[ -n "${STORE:-}" && -d "$STORE" ]]; then
    cp -a "$STORE" "$tmp/data"
  else
    start_server --no-scheduler
    queues_on
    "$burst" "$base" "$pods" "$clients" "$token" >/dev/null 2>"$tmp/burst.err"
    create_nodes
    stop_server
    [[ -z "${STORE:-}" ]] || cp -a "$tmp/data" "$STORE"
  fi
  # what a start costs without the scheduler (the store's open, every controller's first read),
  # on a copy of the store: the bound phase's server CPU less this is what binding cost
  cp -a "$tmp/data" "$tmp/stored"
  start_server --no-scheduler
  settle
  start_ticks=$(cpu_ticks)
  stop_server
  rm -rf "$tmp/data"
  mv "$tmp/stored" "$tmp/data"
  load start
  started=$(date +%s.%N)
  start_server
  perf_pid=
  if [[ -n "${PERF:-}" ]]; then
    perf record -q ${PERF_FLAGS:--g} -o "$PERF" -p "$server_pid" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  # Samples /metrics ten times a second over one connection: the scheduler's placements since
  # its start, the pods not yet bound (the store's, through the pool's counts) and the server's
  # CPU. The timed phase ends at the first sample that saw no pod unbound; the first sample's
  # placements show whether any binding came before it.
  /usr/bin/python3 - "$base" "$token" "$server_pid" "$pods" <<'PY' >"$tmp/phase"
import http.client, os, re, sys, time, urllib.parse
base, token, pid, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
url = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
tick = os.sysconf("SC_CLK_TCK")
placed_re = re.compile(r'^scheduler_schedule_attempts_total\{result="scheduled"[^}]*\} (\S+)$', re.M)
unbound_re = re.compile(r'^scheduler_pending_pods\{queue="unbound"\} (\S+)$', re.M)
def cpu():
    fields = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick
first = None
deadline = time.time() + 600
while time.time() < deadline:
    conn.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    text = conn.getresponse().read().decode()
    now, used = time.time(), cpu()
    placed = int(float(placed_re.search(text).group(1)))
    unbound = int(float(unbound_re.search(text).group(1)))
    if first is None:
        first = (now, used, placed)
    if unbound == 0:
        print(first[0], first[1], first[2], now, used)
        sys.exit(0)
    time.sleep(0.1)
sys.exit("bench_schedloop: not every pod was bound within 600 s")
PY
  if [[ -n "$perf_pid" ]]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
  fi
  read -r first_at first_cpu first_placed done_at done_cpu <"$tmp/phase"
  bound=$(bound_count)
  hz=$(getconf CLK_TCK)
  printf 'queues %s; %d pods and %d nodes stored before the scheduler started: it listened after %.2f s (%.2f s of server CPU), answered first after %.2f s (%d pods placed by then), all %d bound after %.2f s\n' \
    "$queues" "$pods" "$nodes" "$(echo "$listened_at - $started" | bc)" "$(echo "$listened_ticks / $hz" | bc -l)" \
    "$(echo "$first_at - $started" | bc)" "$first_placed" "$bound" "$(echo "$done_at - $started" | bc)"
  start_cpu=$(echo "$start_ticks / $hz" | bc -l)
  printf 'wall: %.0f binds/s (%d binds in %.2f s from the listening line), %.0f us of server CPU per bind over it\n' \
    "$(echo "$pods / ($done_at - $listened_at)" | bc -l)" "$pods" "$(echo "$done_at - $listened_at" | bc -l)" \
    "$(echo "($done_cpu - $listened_ticks / $hz) * 1000000 / $pods" | bc -l)"
  echo '      (a build whose scheduler binds before it listens counts its start binds in this window too)'
  printf 'server CPU per bind (bind + Event) %.0f us (all %d: the CPU less %.2f s, a start without the scheduler)\n' \
    "$(echo "($done_cpu - $start_cpu) * 1000000 / $pods" | bc -l)" "$pods" "$start_cpu"
  load end
  exit 0
fi

start_server
create_nodes
queues_on

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
  perf record -q ${PERF_FLAGS:--g} -o "$PERF" -p "$server_pid" >/dev/null 2>&1 &
  perf_pid=$!
  sleep 1
fi
load start
cpu0=$(cpu_ticks)
start=$(date +%s.%N)
"$burst" "$base" "$pods" "$clients" "$token" >/dev/null 2>"$tmp/burst.err"
created=$(date +%s.%N)
wait "$watcher_pid" || true
done_at=$(sed -n "${pods}p" "$tmp/bound_at")
[[ -n "$done_at" ]] || { echo "bench_schedloop: not every pod was bound within 600 s" >&2; exit 1; }
cpu=$(echo "($(cpu_ticks) - $cpu0) / $(getconf CLK_TCK)" | bc -l)
if [[ -n "$perf_pid" ]]; then
  kill -INT "$perf_pid" 2>/dev/null || true
  wait "$perf_pid" 2>/dev/null || true
fi
bound=$(bound_count)
# the server's CPU time (cpu): what creating, scheduling and binding cost besides waiting on disk
printf 'queues %s; nodes %d, pods %d from %d clients: created in %.2f s, all bound after %.2f s (%d bound); server CPU %.2f s\n' \
  "$queues" "$nodes" "$pods" "$clients" "$(echo "$created - $start" | bc)" "$(echo "$done_at - $start" | bc)" \
  "$bound" "$cpu"
printf 'binds/s %.0f (bound / time until all bound, creates overlapping); server CPU per pod (create + bind + Event) %.0f us\n' \
  "$(echo "$bound / ($done_at - $start)" | bc -l)" "$(echo "$cpu * 1000000 / $pods" | bc -l)"
load end
