#!/usr/bin/env bash
# Two agents on one machine, neither given --netns-dir nor --ipc-dir (docs/networking.md, "Several
# agents on one machine"):
#   - each pins its pods' namespaces in a directory of its own, /run/xpool/agent-<key>/netns and
#     .../ipc, which it logs, and the same one again when restarted on its data directory;
#   - n1 is SIGKILLed; pins no process is in are left in n1's directories (pods it had), in n2's
#     (pods n2 is setting up: no process in them yet) and in the directories every agent shared
#     before (/run/xpool/netns and /run/xpool/ipc). n1 started again removes its own and touches
#     neither n2's nor the shared ones.
# And the Node's own Events (docs/agent.md, "Events"): each start of an agent records Starting and
# NodeReady about its Node, from component kubelet, with the node's name as uid; a heartbeat none.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (the agents mount namespaces)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: needs unshare"; exit 77; }
unshare -n -i true 2>/dev/null || { echo "SKIP: cannot make network and IPC namespaces here"; exit 77; }
data=$tmp/server
mark=xpool-test-$$
server_pid= a1_pid= a2_pid=
own_dirs=() legacy_pins=() legacy_made=()
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"

cleanup() {
  for pid in $a1_pid $a2_pid $server_pid; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  release_tmp # first: the pods' shims and processes go whatever fails below
  for pin in "${legacy_pins[@]}"; do umount -l "$pin" 2>/dev/null || true; rm -f "$pin"; done
  for dir in "${legacy_made[@]}"; do rmdir "$dir" 2>/dev/null || true; done
  for dir in "${own_dirs[@]}"; do # the agents' own: their netns and ipc, with what is in them
    for pin in "$dir"/*/*; do umount -l "$pin" 2>/dev/null || true; done
    for sub in "$dir"/*; do umount -l "$sub" 2>/dev/null || true; done
    rm -rf "$dir" || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# a network that cannot give pods one (no plugin): the agents still pin and reclaim network
# namespaces, and this test's pods are on the node's network
mkdir -p "$tmp/cni" "$tmp/noplugins"
echo '{"cniVersion":"1.0.0","name":"none","plugins":[{"type":"absent"}]}' >"$tmp/cni/10-none.conflist"

start_agent() { # node: its log in $tmp/NODE.log
  "$xpool" agent --server "$base" --token-file "$tmp/$1.token" --ca-file "$data/pki/ca.crt" \
    --node-name "$1" --data-dir "$tmp/$1" --listen 127.0.0.1:0 --heartbeat 500ms \
    --cni-conf-dir "$tmp/cni" --cni-bin-dir "$tmp/noplugins" --default-runtime process >>"$tmp/$1.log" 2>&1 &
  diag_log "$tmp/$1.log"
}
# "network" or "IPC": the directory the agent's last start logged
dir_of() { agent_pin_dirs "$tmp/$1.log" | tail -1 | cut -d' ' -f"$([[ $2 == IPC ]] && echo 2 || echo 1)"; }
started() { [[ -n "$(dir_of "$1" IPC)" ]] && echo started || echo no; }
ready() { "$xpool" get node "$1" -o yaml 2>/dev/null | grep 'reason: AgentReady' >/dev/null && echo Ready || echo no; }
pinned() { [[ "$(stat -f -c %T "$1" 2>/dev/null)" == nsfs ]] && echo pinned || echo gone; }
pin() { # kind (net, ipc), path: a namespace no process is in, bound at path
  touch "$2"
  unshare "-${1:0:1}" mount --bind "/proc/self/ns/$1" "$2"
}
# the node's Starting and NodeReady Events from the kubelet: how many
node_events() {
  "$xpool" get events -n default --field-selector "involvedObject.kind=Node,involvedObject.name=$1" -o yaml 2>/dev/null |
    awk -v n="$1" '/^- /{ if (ok == 4) c++; ok = 0 } /^  reason: (Starting|NodeReady)$/{ ok++ }
      /^    component: kubelet$/{ ok++ } $0 == "    uid: " n { ok++ } /^    kind: Node$/{ ok++ } END { if (ok == 4) c++; print c + 0 }'
}
phase() { "$xpool" get pod "$1" -o yaml 2>/dev/null | sed -n 's/^  phase: //p'; }

for n in n1 n2; do "$xpool" token create --node "$n" --data-dir "$data" >"$tmp/$n.token" 2>/dev/null; done
start_server "$data"
start_agent n1; a1_pid=$!
start_agent n2; a2_pid=$!
poll "n1 says its directories" 60 started started n1
poll "n2 says its directories" 60 started started n2
poll "n1 registers Ready" 60 Ready ready n1
poll "n2 registers Ready" 60 Ready ready n2
net1=$(dir_of n1 network) ipc1=$(dir_of n1 IPC) net2=$(dir_of n2 network) ipc2=$(dir_of n2 IPC)
for d in "$net1" "$ipc1" "$net2" "$ipc2"; do own_dirs+=("$(dirname "$d")"); done
poll "n1's Starting and NodeReady Events" 60 2 node_events n1
poll "n2's" 60 2 node_events n2
[[ $failures -eq 0 ]] || exit 1
for d in "$net1" "$ipc1" "$net2" "$ipc2"; do
  [[ "$d" =~ ^/run/xpool/agent-[0-9a-f]{16}/(netns|ipc)$ ]] || { echo "FAIL $d is no agent's own directory"; failures=$((failures + 1)); }
done
[[ "$(dirname "$net1")" == "$(dirname "$ipc1")" ]] || { echo "FAIL n1's directories $net1 and $ipc1 are under two keys"; failures=$((failures + 1)); }
[[ "$(dirname "$net1")" != "$(dirname "$net2")" ]] || { echo "FAIL both agents use $net1"; failures=$((failures + 1)); }

# a pod on each node, on the node's network
pod() { printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  nodeName: %s\n  hostNetwork: true\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: none, command: ["sleep", "3600"]}\n' "$1" "$2"; }
{ pod p1 n1; echo ---; pod p2 n2; } >"$tmp/pods.yaml"
check "create the pods" 0 "$xpool" apply -f "$tmp/pods.yaml"
poll "p1 runs" 60 Running phase p1
poll "p2 runs" 60 Running phase p2

# ---- n1 killed; pins in every directory ---------------------------------------------------------
kill -KILL "$a1_pid"; wait "$a1_pid" 2>/dev/null || true; a1_pid=
mkdir -p "$net1" "$ipc1" "$net2" "$ipc2"
pin net "$net1/$mark-gone"; pin ipc "$ipc1/$mark-gone"
pin net "$net2/$mark-setup"; pin ipc "$ipc2/$mark-setup"
for d in /run/xpool/netns /run/xpool/ipc; do
  [[ -d "$d" ]] || { mkdir -p "$d"; legacy_made=("$d" "${legacy_made[@]}"); }
done
legacy_pins=(/run/xpool/netns/$mark-old /run/xpool/ipc/$mark-old)
pin net "${legacy_pins[0]}"; pin ipc "${legacy_pins[1]}"

# n1's Node stays Ready while it is away (the grace period is longer): its restart is there once
# its log says its directories again, or those checked below would be the first start's
said_before=$(agent_pin_dirs "$tmp/n1.log" | wc -l)
said_again() { [[ $(agent_pin_dirs "$tmp/n1.log" | wc -l) -gt $said_before ]]; }
start_agent n1; a1_pid=$!
wait_for "n1's restart says its directories" 60 said_again
poll "n1 is Ready again" 60 Ready ready n1
check "n1's network directory after its restart" 0 dir_of n1 network
expect_exact "n1 keeps its network directory" "$tmp/out" "$net1"
check "n1's IPC directory after its restart" 0 dir_of n1 IPC
expect_exact "n1 keeps its IPC directory" "$tmp/out" "$ipc1"
poll "n1 removes its own network pin" 60 gone pinned "$net1/$mark-gone"
poll "n1 removes its own IPC pin" 60 gone pinned "$ipc1/$mark-gone"
# (said after the unmount and the unlink the polls above see: waited for)
wait_for "n1 says so" 60 grep -qF -- "removed $net1/$mark-gone, the network namespace" "$tmp/n1.log"
poll "n2's network pin stays" 60 pinned pinned "$net2/$mark-setup"
poll "n2's IPC pin stays" 60 pinned pinned "$ipc2/$mark-setup"
poll "the shared directory's network pin stays" 60 pinned pinned "${legacy_pins[0]}"
poll "the shared directory's IPC pin stays" 60 pinned pinned "${legacy_pins[1]}"
check "n2 says nothing of the pins" 1 grep -F "$mark" "$tmp/n2.log"
poll "p2 runs on" 60 Running phase p2
poll "p1 runs on" 60 Running phase p1
poll "n1's start after its restart: two more Events" 60 4 node_events n1
check "n2's Events after many heartbeats" 0 node_events n2
expect_exact "none from a heartbeat" "$tmp/out" 2

finish "namespace directories"
