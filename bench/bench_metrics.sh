#!/usr/bin/env bash
# The agent's /metrics on an 8-GPU node over HTTP, and what metrics cost the agent in memory
# (docs/monitoring.md, "Cost"). A server (--no-tls) and an agent on the fake NVML's eight H100s;
# 200 scrapes of /metrics timed by curl (the agent's answer, loopback included), then the agent's
# RSS after 10 s idle with metrics (sampling every 1 s) and again with --no-metrics. The scrapes
# carry the admin token, as Prometheus carries its reader token: the first is checked with the
# server, the others from the agent's memory of that answer (docs/monitoring.md).
#   bench/bench_metrics.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
xpool=$build/xpool
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

"$xpool" token create --node n1 --data-dir "$tmp/server" >"$tmp/n1.token" 2>/dev/null
"$xpool" server --no-tls --listen 127.0.0.1:0 --data-dir "$tmp/server" >"$tmp/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  url=$(sed -n 's|.*xpool server listening on \(http://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log")
  [[ -n "$url" ]] && break
  sleep 0.1
done

run_agent() { # extra flags...: starts the agent, prints its pid
  XPOOL_NVML_LIBRARY=$build/tests/fake/libnvidia-ml.so.1 \
    FAKE_NVML_CONFIG=$src/tests/data/nvml/h100-8x-nvswitch.json \
    "$xpool" agent --server "$url" --token-file "$tmp/n1.token" --node-name n1 \
    --data-dir "$tmp/agent" --listen 127.0.0.1:0 --pod-network host "$@" >>"$tmp/agent.log" 2>&1 &
  echo $!
}
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
port() {
  for _ in $(seq 100); do
    p=$(curl -s -H "Authorization: Bearer $(awk '/token:/ { print $2 }' "$tmp/server/admin.kubeconfig")" "$url/api/v1/nodes/n1" 2>/dev/null |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])' 2>/dev/null || true)
    [[ -n "$p" ]] && { echo "$p"; return; }
    sleep 0.1
  done
}

a=$(run_agent --metrics-interval 1s); pids+=("$a")
sleep 2
p=$(port)
bearer=(-H "Authorization: Bearer $(awk '/token:/ { print $2 }' "$tmp/server/admin.kubeconfig")")
for _ in $(seq 200); do curl -s "${bearer[@]}" -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$p/metrics"; done |
  sort -n | awk '{ t[NR] = $1 } END { printf "HTTP scrape of /metrics, 8 GPUs, 200 times: p50 %.2f ms, p99 %.2f ms\n", t[int(NR/2)] * 1000, t[int(NR*0.99)] * 1000 }'
echo "/metrics size: $(curl -s "${bearer[@]}" "http://127.0.0.1:$p/metrics" | wc -c) bytes, $(curl -s "${bearer[@]}" "http://127.0.0.1:$p/metrics" | grep -vc '^#') series"
sleep 8
with=$(rss "$a")
kill "$a"; wait "$a" 2>/dev/null || true
b=$(run_agent --no-metrics); pids+=("$b")
sleep 10
without=$(rss "$b")
echo "agent RSS after 10 s: with metrics ${with} KiB, without ${without} KiB, difference $((with - without)) KiB"
