#!/usr/bin/env bash
# A server stopped with SIGTERM and started again shortly after leaves its nodes as they were
# (docs/reliability.md, "The server's stop"): no NodeNotReady Event, no Ready condition flipped, no
# unreachable taint, a pod bound there still Ready. A fake agent renews node n1's Lease every
# 0.2 s with curl; the grace period is 6 s (30 missed renewals: a loaded or ASan run still keeps
# up), and the server stays down 7 s, longer than it: the
# node lifecycle judges no node from before HTTP stops (no heartbeat can arrive after that), and
# starts only once HTTP serves again, with a full grace period for every node. Then the fake agent stops,
# and the same checks must see the node lost: they can tell.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid= beat_pid= base=
trap 'kill -KILL $beat_pid $server_pid 2>/dev/null || true; wait 2>/dev/null || true; release_tmp; rm -rf "$tmp"' EXIT

leases=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
api() { # method, path, content type, body (may be empty): with the admin token, the answer on stdout
  local body=()
  [[ -z "${4:-}" ]] || body=(-d "$4")
  curl -fsS --max-time 10 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" \
    -X "$1" -H "Content-Type: $3" "$(cat "$tmp/base")$2" "${body[@]}"
}
now() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }

start() {
  start_server "$data" --node-monitor-grace-period 6s
  echo "$base" >"$tmp/base"
  token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
}

beat() { # the fake agent: renews the Lease every 0.2 s, through restarts (at most 600 s: the
  # checks it beats through may take minutes at load 30; it is stopped once they are done)
  local deadline=$((SECONDS + 600))
  while [[ -e "$tmp/beating" && $SECONDS -lt $deadline ]]; do
    api PATCH "$leases/n1" application/merge-patch+json "{\"spec\":{\"renewTime\":\"$(now)\"}}" >/dev/null 2>&1 || true
    sleep 0.2
  done
}

# What the checks compare: Events NodeNotReady, n1's Ready and its last transition, its
# taints, and pod p's Ready.
state() {
  local node pod events
  node=$(api GET /api/v1/nodes/n1 application/json '' 2>/dev/null) || true
  pod=$(api GET /api/v1/namespaces/default/pods/p application/json '' 2>/dev/null) || true
  events=$(api GET /api/v1/events application/json '' 2>/dev/null) || true
  /usr/bin/python3 - "$node" "$pod" "$events" <<'EOF'
import json, sys
node, pod, events = (json.loads(a or "{}") for a in sys.argv[1:4])
ready = [c for c in node.get("status", {}).get("conditions", []) if c.get("type") == "Ready"]
pod_ready = [c["status"] for c in pod.get("status", {}).get("conditions", []) if c.get("type") == "Ready"]
lost = [e for e in events.get("items", []) if e.get("reason") == "NodeNotReady"]
taints = [t["key"] for t in node.get("spec", {}).get("taints", [])]
print("node Ready=%s since %s; taints %s; pod Ready=%s; %s" % (
    ready[0]["status"] if ready else "-", ready[0].get("lastTransitionTime") if ready else "-",
    ",".join(taints) or "none", ",".join(pod_ready) or "-",
    "NodeNotReady events" if lost else "no NodeNotReady event"))
EOF
}

start
stamp=$(now)
check "node n1" 0 api POST /api/v1/nodes application/json '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}'
check "n1 Ready" 0 api PATCH /api/v1/nodes/n1/status application/merge-patch+json \
  "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"lastHeartbeatTime\":\"$stamp\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}"
check "n1's Lease" 0 api POST "$leases" application/json \
  "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"n1\"},\"spec\":{\"holderIdentity\":\"n1\",\"leaseDurationSeconds\":6,\"renewTime\":\"$stamp\"}}"
check "pod p on n1" 0 api POST /api/v1/namespaces/default/pods application/json \
  '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox:1.36"}]}}'
check "p Running and Ready" 0 api PATCH /api/v1/namespaces/default/pods/p/status application/merge-patch+json \
  '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}'
touch "$tmp/beating"
beat &
beat_pid=$!
steady="node Ready=True since 2026-01-01T00:00:00Z; taints none; pod Ready=True; no NodeNotReady event"
sleep 7 # more than a grace period of heartbeats
poll "steady before the stop" 60 "$steady" state

kill -TERM "$server_pid"
stop_deadline=$((SECONDS + 30)) # bounded: a server that hangs on SIGTERM fails, not the whole run
while kill -0 "$server_pid" 2>/dev/null && [[ $SECONDS -lt $stop_deadline ]]; do sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL the server did not exit within 30 s of SIGTERM"; failures=$((failures + 1))
  kill -KILL "$server_pid"
fi
wait "$server_pid" || { echo "FAIL the server exited with $? on SIGTERM"; failures=$((failures + 1)); }
server_pid=
sleep 7 # down longer than the grace period
start
sleep 7 # more than a grace period of heartbeats after the start
state >"$tmp/after"
expect_exact "nothing changed by the stop and the start" "$tmp/after" "$steady"

# The checks see a lost node: without heartbeats, the same state shows it.
rm -f "$tmp/beating"
wait "$beat_pid" || true
beat_pid=
lost_state() { state | sed 's/since [^;]*;/since then;/'; }
poll "n1 lost once its agent stops" 120 \
  "node Ready=Unknown since then; taints node.kubernetes.io/unreachable; pod Ready=False; NodeNotReady events" \
  lost_state
finish "server stop and node lease"
