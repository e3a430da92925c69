#!/usr/bin/env bash
# The server's cost of the agent's status write (issue 21): `xpool server --no-tls
# --no-scheduler`, one pod (a GPU training pod as bench_api sends it), then COUNT status PATCHes
# one after another on one kept-alive connection, each the strategic merge patch the agent sends
# (the whole status with `$patch: replace`, src/agent/status.c), each with another podIP so that
# every one is a write. Prints the server's CPU (its /proc stat, all its threads) per PATCH,
# which does not depend on what else the machine runs as wall time does, the wall time, and the
# load average before and after. Each PATCH is its own durable commit (no other writer shares
# it), so the figure includes the store's fsync.
#
#   bench/bench_status.sh BUILD_DIR [COUNT]    (default 3000)
#
# Prints figures only; asserts nothing (tests/integration/07-server-api.sh checks the write).
set -uo pipefail

build=${1:?usage: bench_status.sh BUILD_DIR [COUNT]}
count=${2:-3000}
source "$(dirname "$0")/bench_server_lib.sh"
bench_server_start bench_status "$build" "$count"

pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"trainer","job":"llm"}},"spec":{"containers":[{"name":"trainer","image":"ai-framework:latest","command":["python","train.py","--epochs","3"],"env":[{"name":"NCCL_DEBUG","value":"INFO"},{"name":"OMP_NUM_THREADS","value":"8"}],"resources":{"limits":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":"4"},"requests":{"cpu":"4","memory":"32Gi","nvidia.com/gpu":"4"}},"ports":[{"containerPort":29500}]}],"restartPolicy":"Never"}}'
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/json' --data-binary "$pod" "$base")
[[ "$code" == 201 ]] || { echo "bench_status: creating the pod: HTTP $code" >&2; exit 1; }

# one curl for all: a config block per PATCH (`next` starts the next one on the same connection)
for i in $(seq 1 "$count"); do
  printf '{"status":{"$patch":"replace","phase":"Running","podIP":"10.%d.%d.%d","hostIP":"10.255.0.1","startTime":"2026-12-04T10:00:00Z","conditions":[{"type":"Initialized","status":"True","lastTransitionTime":"2026-12-04T10:00:00Z"},{"type":"Ready","status":"True","lastTransitionTime":"2026-12-04T10:00:01Z"}],"containerStatuses":[{"name":"trainer","ready":true,"restartCount":0,"image":"ai-framework:latest","imageID":"","started":true,"state":{"running":{"startedAt":"2026-12-04T10:00:01Z"}}}]}}' \
    $((i / 65536)) $((i / 256 % 256)) $((i % 256)) >"$tmp/body$i.json"
  printf 'url = "%s/p/status"\nrequest = "PATCH"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/strategic-merge-patch+json"\ndata-binary = "@%s/body%d.json"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
    "$base" "$token" "$tmp" "$i" >>"$tmp/curl.conf"
  ((i < count)) && echo next >>"$tmp/curl.conf"
done

bench_server_time "$count" 200 "status PATCH" "status PATCHes"
