#!/usr/bin/env bash
# The server's cost of the agent's TokenRequest (issue 21: every pod's kube-api-access volume
# asks one): `xpool server --no-tls --no-scheduler`, one pod, then COUNT TokenRequests for the
# default ServiceAccount bound to that pod (name and uid, as src/agent/podconfig_token.c asks)
# one after another on one kept-alive connection. Prints the server's CPU (its /proc stat, all
# its threads) per TokenRequest, which does not depend on what else the machine runs as wall
# time does, the wall time, and the load average before and after. A TokenRequest writes
# nothing, so no fsync is in the figure.
#
#   bench/bench_token.sh BUILD_DIR [COUNT]    (default 3000)
#
# Prints figures only; asserts nothing (tests/integration/43-serviceaccounts.sh checks the tokens).
set -uo pipefail

build=${1:?usage: bench_token.sh BUILD_DIR [COUNT]}
count=${2:-3000}
source "$(dirname "$0")/bench_server_lib.sh"
bench_server_start bench_token "$build" "$count"

pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox","command":["true"]}],"restartPolicy":"Never"}}'
uid=$(curl -sS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  --data-binary "$pod" "$base" | sed -n 's/.*"uid":"\([^"]*\)".*/\1/p' | head -1)
[[ -n "$uid" ]] || { echo "bench_token: creating the pod gave no uid" >&2; exit 1; }

body='{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3607,"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p","uid":"'$uid'"}}}'
printf '%s' "$body" >"$tmp/body.json"
# one curl for all: a config block per request (`next` starts the next one on the same connection)
for i in $(seq 1 "$count"); do
  printf 'url = "%s"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata-binary = "@%s/body.json"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
    "http://127.0.0.1:$port/api/v1/namespaces/default/serviceaccounts/default/token" "$token" "$tmp" >>"$tmp/curl.conf"
  ((i < count)) && echo next >>"$tmp/curl.conf"
done

bench_server_time "$count" 201 TokenRequest TokenRequests
