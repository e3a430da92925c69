#!/usr/bin/env bash
# The simulator against the real server (docs/simulator.md, "The simulator and the server"): the
# 41-node slice of the Alibaba trace test_sim replays (tests/data/sim), exported by `xpool sim
# --export` (Nodes, Pods in arrival order, where each went), then created through the API in
# that order with `xpool server --placement-profile P`, whose scheduling loop binds them. The
# server must place every pod where the simulator did (same node, same devices, same milli) and
# leave Pending exactly the pods the simulator dropped, for the server's default profile and for
# a published one. Both measure fragmentation against the pods placed so far (`--live-mix`: the
# server knows no trace), the tie order comes from the same seed (0, the server's), and pods only
# arrive, so a pod that fit nowhere when it came fits nowhere later: no tolerance is needed.
source "$(dirname "$0")/lib.sh"
command -v /usr/bin/python3 >/dev/null || { echo "SKIP: /usr/bin/python3 is not installed"; exit 77; }
slice=${XPOOL_TEST_DATA:?}/sim
server_pid=

stop_server() {
  [[ -n "$server_pid" ]] && kill -TERM "$server_pid" 2>/dev/null || true
  [[ -n "$server_pid" ]] && wait "$server_pid" 2>/dev/null || true
  server_pid=
}
trap 'stop_server; release_tmp; rm -rf "$tmp"' EXIT

# The placements as the server has them, in placements.csv's form, sorted by pod.
server_placements() { # kubeconfig
  "$xpool" get pods -n sim -o json --kubeconfig "$1" | /usr/bin/python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    ann = json.loads(p["metadata"].get("annotations", {}).get("xpool.io/placement", "{}") or "{}")
    devs = ";".join("%d:%d" % (d["index"], d["milli"]) for d in ann.get("devices", []))
    print("%s,%s,%s" % (p["metadata"]["name"], p["spec"].get("nodeName", ""), devs))
' | sort
}

# How many pods the server has settled: bound, or said unschedulable.
settled() { # kubeconfig
  "$xpool" get pods -n sim -o json --kubeconfig "$1" | /usr/bin/python3 -c '
import json, sys
n = 0
for p in json.load(sys.stdin)["items"]:
    conds = p.get("status", {}).get("conditions", [])
    if p["spec"].get("nodeName") or any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conds):
        n += 1
print(n)'
}

replay() { # profile
  local profile=$1 dir=$tmp/$1 kc want
  mkdir -p "$dir"
  check "sim $profile" 0 "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" \
    --policy "$profile" --seed 0 --seeds 1 --live-mix --export "$dir"
  expect_in "sim $profile prints its row" "$tmp/out" "$profile"
  tail -n +2 "$dir/placements.csv" | sort >"$dir/want"
  want=$(wc -l <"$dir/want")
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$dir/data" --placement-profile "$profile" \
    >"$dir/server.log" 2>&1 &
  server_pid=$!
  diag_log "$dir/server.log"
  kc=$dir/data/admin.kubeconfig
  poll "$profile server up" 15 ok bash -c "'$xpool' get nodes --kubeconfig '$kc' >/dev/null 2>&1 && echo ok"
  check "$profile namespace" 0 kubectl create namespace sim --kubeconfig "$kc"
  check "$profile nodes" 0 "$xpool" apply -f "$dir/nodes.json" --kubeconfig "$kc"
  check "$profile pods" 0 "$xpool" apply -f "$dir/pods.json" --kubeconfig "$kc"
  poll "$profile: every pod settled" 15 "$want" settled "$kc"
  server_placements "$kc" >"$dir/got"
  if ! diff "$dir/want" "$dir/got" >"$dir/diff"; then
    echo "FAIL $profile: the server placed differently from xpool sim (< sim, > server):"
    head -20 "$dir/diff"
    failures=$((failures + 1))
  fi
  # the slice is tight: some pods fit nowhere in both, and most were placed
  [[ $(grep -c ',,$' "$dir/want") -gt 0 && $(grep -vc ',,$' "$dir/want") -gt 150 ]] ||
    { echo "FAIL $profile: the slice placed $(grep -vc ',,$' "$dir/want") of $want pods"; failures=$((failures + 1)); }
  stop_server
}

# Replays run in parallel processes (--jobs) give the figures of one process, row for row (the
# placements/s column aside).
seeds_jobs() { # jobs
  "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" --policy fgd,xpool,random \
    --seeds 3 --jobs "$1" --csv "$tmp/jobs$1.csv" >/dev/null && cut -d, -f1-8 "$tmp/jobs$1.csv"
}
check "sim --jobs 1" 0 seeds_jobs 1
check "sim --jobs 3" 0 seeds_jobs 3
check "sim --jobs 3 gives --jobs 1's figures" 0 diff <(seeds_jobs 1) <(seeds_jobs 3)
expect_in "sim --jobs: three policies" "$tmp/jobs3.csv" "pods,xpool,3,"
check "sim --jobs 0 is refused" 2 "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" --jobs 0

replay xpool
replay bestfit
finish sim-server
