#!/usr/bin/env bash
# The agent across a server outage (docs/reliability.md, "Nothing lost"): a TLS server and one
# agent on loopback; EXITS pods waiting for a file and DELETED pods deleted with a 60 s grace
# (their containers trap SIGTERM and wait for the same file) all run; the server is SIGKILLed,
# the file made (every container ends while the server is down), and after OUTAGE seconds the
# server is started again on its data directory and port. Prints how long after the server
# answers again every exit is written (all EXITS pods Failed) and every deleted pod is gone,
# how many writes the agent retried, and its RSS.
#
#   bench/bench_outage.sh BUILD_DIR [EXITS [DELETED [OUTAGE]]]    (defaults 50 10 12)
#
# Prints figures only; asserts nothing (tests/integration/21-agent-outage.sh checks).
set -uo pipefail

build=${1:?usage: bench_outage.sh BUILD_DIR [EXITS [DELETED [OUTAGE]]]}
exits=${2:-50}
deleted=${3:-10}
outage=${4:-12}
xpool=$build/xpool
[[ -x "$xpool" ]] || { echo "bench_outage: no $xpool" >&2; exit 1; }

tmp=$(mktemp -d)
data=$tmp/server share=$tmp/share
server_pid= agent_pid=
mkdir -p "$share"
export KUBECONFIG=$data/admin.kubeconfig
stop() {
  for pid in $agent_pid $server_pid; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null; done
  pkill -KILL -f "$tmp/" 2>/dev/null # the shims and containers of this run
  rm -rf "$tmp"
}
trap stop EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >>"$tmp/server.log" 2>&1 &
server_pid=$!
url=
for _ in $(seq 150); do
  url=$(sed -n 's|.*listening on \(https://127\.0\.0\.1:[0-9]*\), state.*|\1|p' "$tmp/server.log")
  [[ -n $url ]] && break
  sleep 0.1
done
[[ -n $url ]] || { echo "bench_outage: the server did not start" >&2; exit 1; }
"$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
  --node-name n1 --data-dir "$tmp/agent" --listen 127.0.0.1:0 --heartbeat 500ms \
  --default-runtime process >>"$tmp/agent.log" 2>&1 &
agent_pid=$!

for i in $(seq "$exits"); do
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: x-%d}\nspec:\n  nodeName: n1\n  restartPolicy: Never\n  containers:\n  - {name: main, image: none, command: ["sh", "-c", "until [ -e %s/go ]; do sleep 0.2; done; exit 3"]}\n' "$i" "$share"
done >"$tmp/exits.yaml"
for i in $(seq "$deleted"); do
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: d-%d}\nspec:\n  nodeName: n1\n  terminationGracePeriodSeconds: 60\n  containers:\n  - {name: main, image: none, command: ["sh", "-c", "trap \\"until [ -e %s/go ]; do sleep 0.2; done; exit 0\\" TERM; while :; do sleep 0.2; done"]}\n' "$i" "$share"
done >"$tmp/deleted.yaml"
for _ in $(seq 100); do "$xpool" get node n1 >/dev/null 2>&1 && break; sleep 0.2; done
"$xpool" apply -f "$tmp/exits.yaml" >/dev/null
"$xpool" apply -f "$tmp/deleted.yaml" >/dev/null
for _ in $(seq 300); do
  [[ $("$xpool" get pods 2>/dev/null | grep -c ' Running ') -eq $((exits + deleted)) ]] && break
  sleep 0.5
done
"$xpool" delete -f "$tmp/deleted.yaml" >/dev/null
sleep 2 # the agent sees the deletions and sends SIGTERM

kill -KILL "$server_pid"; wait "$server_pid" 2>/dev/null
touch "$share/go"
sleep "$outage"
"$xpool" server --listen "127.0.0.1:${url##*:}" --data-dir "$data" >>"$tmp/server.log" 2>&1 &
server_pid=$!
until "$xpool" get nodes >/dev/null 2>&1; do sleep 0.05; done
back=$(now) written= gone=
for _ in $(seq 1200); do
  pods=$("$xpool" get pods 2>/dev/null)
  [[ -z $written && $(grep -c '^x-.* Error ' <<<"$pods") -eq $exits ]] && written=$(since "$back")
  [[ -z $gone && $(grep -c '^d-' <<<"$pods") -eq 0 ]] && gone=$(since "$back")
  [[ -n $written && -n $gone ]] && break
  sleep 0.1
done
echo "outage ${outage} s: ${exits} exits written ${written:-never (2 min)} s and ${deleted} deleted pods gone ${gone:-never (2 min)} s after the server answered again"
echo "writes retried: $(grep -c 'went through after' "$tmp/agent.log"); agent RSS: $(($(ps -o rss= -p "$agent_pid") / 1024)) MiB"
