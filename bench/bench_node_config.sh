#!/usr/bin/env bash
# The server's cost of a node's read of a ConfigMap its pods mount (issue 18: with TLS, every
# pod's kube-api-access volume has the agent read kube-root-ca.crt before the pod starts). A node
# may read a ConfigMap only when a pod bound to it references it (the node authorizer), so the
# figure may depend on how many pods the namespace holds: `xpool server --no-tls --no-scheduler`,
# a ConfigMap bench-config, PODS pods bound to node bench-node in namespace default, each
# mounting it, then COUNT GETs of it with the node's token, one after another on one kept-alive
# connection. Prints the server's CPU (its /proc
# stat, all its threads) per GET, the wall time, and the load average before and after.
#
#   bench/bench_node_config.sh BUILD_DIR [COUNT] [PODS]    (default 1000 and 1000)
#
# Prints figures only; asserts nothing (tests/integration checks the node authorizer).
set -uo pipefail

build=${1:?usage: bench_node_config.sh BUILD_DIR [COUNT] [PODS]}
count=${2:-1000}
pods=${3:-1000}
[[ "$pods" =~ ^[0-9]{1,6}$ ]] || { echo "bench_node_config: PODS is 0 to 999999" >&2; exit 1; }
source "$(dirname "$0")/bench_server_lib.sh"
bench_server_start bench_node_config "$build" "$count"

node_token=$("$build/xpool" token create --node bench-node --data-dir "$tmp/data" 2>/dev/null)
[[ "$node_token" == xpn_* ]] || { echo "bench_node_config: no node token" >&2; exit 1; }
cms=http://127.0.0.1:$port/api/v1/namespaces/default/configmaps
cm=$cms/bench-config
curl -fsS -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-config"},"data":{"k":"v"}}' \
  "$cms" || { echo "bench_node_config: creating the ConfigMap failed" >&2; exit 1; }

: >"$tmp/pods.conf"
for i in $(seq 1 "$pods"); do
  printf 'url = "%s"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
    "$base" "$token" \
    "{\\\"apiVersion\\\":\\\"v1\\\",\\\"kind\\\":\\\"Pod\\\",\\\"metadata\\\":{\\\"name\\\":\\\"p$i\\\"},\\\"spec\\\":{\\\"nodeName\\\":\\\"bench-node\\\",\\\"containers\\\":[{\\\"name\\\":\\\"c\\\",\\\"image\\\":\\\"busybox\\\",\\\"command\\\":[\\\"true\\\"]}],\\\"volumes\\\":[{\\\"name\\\":\\\"v\\\",\\\"configMap\\\":{\\\"name\\\":\\\"bench-config\\\"}}],\\\"restartPolicy\\\":\\\"Never\\\"}}" \
    >>"$tmp/pods.conf"
  ((i < pods)) && echo next >>"$tmp/pods.conf"
done
((pods == 0)) || made=$(curl -sS -K "$tmp/pods.conf" | grep -c '^201$')
for _ in $(seq 1 50); do # the server sees a new node token within a second or two; 5 s at most
  curl -fsS -o /dev/null -H "Authorization: Bearer $node_token" "$cm" 2>/dev/null && break
  sleep 0.1
done
echo "$pods pods bound to bench-node in namespace default (${made:-0} created)"

for i in $(seq 1 "$count"); do
  printf 'url = "%s"\nheader = "Authorization: Bearer %s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
    "$cm" "$node_token" >>"$tmp/curl.conf"
  ((i < count)) && echo next >>"$tmp/curl.conf"
done

bench_server_time "$count" 200 "ConfigMap GET" "ConfigMap GETs"
