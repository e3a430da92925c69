#!/usr/bin/env bash
# The server's cost of a Deployment's pod creates in a namespace with a ResourceQuota (issue 18,
# issue 21): `xpool server --no-tls --no-scheduler`, a ResourceQuota in `default` (unless the
# third argument is `none`) with room for every pod, then a Deployment of REPLICAS pods, each
# create checked against the quota by the ReplicaSet controller's writes. Prints the wall time
# until the Deployment reports every pod created, the server's CPU over that span (its /proc
# stat, all its threads: the controllers, the admission, the store, the quota status
# controller), per pod, and the load average before and after.
#
#   bench/bench_quota_deploy.sh BUILD_DIR [REPLICAS [quota|none]]   (defaults 500 quota)
#
# Prints figures only; asserts nothing (tests/unit/test_quota_ledger.c and
# tests/integration/33-config.sh check the quota).
set -uo pipefail

build=${1:?usage: bench_quota_deploy.sh BUILD_DIR [REPLICAS [quota|none]]}
replicas=${2:-500}
with=${3:-quota}
source "$(dirname "$0")/bench_server_lib.sh"
bench_server_start bench_quota_deploy "$build" "$replicas"
api=http://127.0.0.1:$port

post() { # url, JSON: fails the bench unless 201
  local code
  code=$(curl -sS -o "$tmp/reply" -w '%{http_code}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data-binary "$2" "$1")
  [[ "$code" == 201 ]] || { echo "bench_quota_deploy: POST $1: HTTP $code" >&2; cat "$tmp/reply" >&2; exit 1; }
}

if [[ "$with" == quota ]]; then
  post "$api/api/v1/namespaces/default/resourcequotas" \
    '{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"room"},"spec":{"hard":{"pods":"100000","requests.cpu":"1000","requests.memory":"1Ti","requests.nvidia.com/gpu":"100000"}}}'
fi
deploy=$(printf '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bench"},"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"bench"}},"template":{"metadata":{"labels":{"app":"bench"}},"spec":{"containers":[{"name":"c","image":"bench:1","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}' "$replicas")

echo "replicas: $replicas, quota: $with"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
ticks0=$(awk '{print $14 + $15}' "/proc/$server_pid/stat") t0=$(date +%s%N)
post "$api/apis/apps/v1/namespaces/default/deployments" "$deploy"
created=0
for _ in $(seq 1 1200); do # 600 s at most
  created=$(curl -sS -H "Authorization: Bearer $token" \
    "$api/apis/apps/v1/namespaces/default/deployments/bench" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("status",{}).get("replicas",0))')
  [[ "$created" == "$replicas" ]] && break
  sleep 0.5
done
ticks1=$(awk '{print $14 + $15}' "/proc/$server_pid/stat") t1=$(date +%s%N)
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
hz=$(getconf CLK_TCK)
echo "$created of $replicas pods created in $(((t1 - t0) / 1000000)) ms"
echo "server CPU: $(((ticks1 - ticks0) * 1000 / hz)) ms, per pod: $(((ticks1 - ticks0) * 1000000 / hz / replicas)) us"
