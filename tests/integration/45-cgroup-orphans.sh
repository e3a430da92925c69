#!/usr/bin/env bash
# The pods' cgroups do not outlive their pods (docs/agent.md, "Cgroups"), with two agents on one
# machine, as the tests run them:
#   - each agent's pods' groups are below its own parent, /xpool/agent-<key>, which it logs;
#   - a pod that ends and is deleted leaves no group (its container's nor its own);
#   - agent n1 is SIGKILLed with a pod running, then that pod's shim and container are killed too
#     and the pod is deleted while n1 is away; a group no start of n1 is making, with a process in
#     it (what a shim killed in the middle of a start leaves), is below n1's parent. n1 started
#     again on its data directory removes both (killing the process), while n2's running pod's
#     group and an idle group below n2's parent stay: an agent reclaims only below its own parent.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (the agents make cgroups)"; exit 77; }
data=$tmp/server
mark=$$
server_pid= base= a1_pid= a2_pid= stray_pid=
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"

cleanup() {
  for pid in $a1_pid $a2_pid $server_pid $stray_pid; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

start_agent() { # node: its log in $tmp/NODE.log
  "$xpool" agent --server "$base" --token-file "$tmp/$1.token" --ca-file "$data/pki/ca.crt" \
    --node-name "$1" --data-dir "$tmp/$1" --listen 127.0.0.1:0 --heartbeat 500ms \
    --pod-network host --default-runtime process >>"$tmp/$1.log" 2>&1 &
  diag_log "$tmp/$1.log"
}

# A group's directory in the memory hierarchy (cgroup v1) or the unified one (v2).
group_dir() {
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then echo "/sys/fs/cgroup/$1"; else echo "/sys/fs/cgroup/memory/$1"; fi
}
group() { [[ -d "$(group_dir "$1")" ]] && echo there || echo gone; } # group path
parent_of() { sed -n "s|.*pods' cgroups below /\(xpool/agent-[0-9a-f]*\)\$|\1|p" "$tmp/$1.log" | tail -1; }
uid_of() { "$xpool" get pod "$1" -o yaml | sed -n 's/^  uid: //p'; }
phase() { "$xpool" get pod "$1" -o yaml 2>/dev/null | sed -n 's/^  phase: //p'; }
pod_there() { "$xpool" get pod "$1" >/dev/null 2>&1 && echo there || echo gone; }
ready() { "$xpool" get node "$1" -o yaml 2>/dev/null | grep 'reason: AgentReady' >/dev/null && echo Ready || echo no; }
# (a zombie is dead: the test's shell reaps its child only when cleaning up)
alive() { [[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" =~ ^[RSDT]$ ]] && echo alive || echo dead; }

for n in n1 n2; do "$xpool" token create --node "$n" --data-dir "$data" >"$tmp/$n.token" 2>/dev/null; done
start_server "$data"
start_agent n1; a1_pid=$!
start_agent n2; a2_pid=$!
poll "n1 registers Ready" 60 Ready ready n1
poll "n2 registers Ready" 60 Ready ready n2
[[ $failures -eq 0 ]] || exit 1
p1=$(parent_of n1) p2=$(parent_of n2)
if [[ -z "$p1" || -z "$p2" ]]; then
  echo "SKIP: the agents run containers without cgroups here:"; grep -h "cgroups" "$tmp/n1.log" || true; exit 77
fi
[[ "$p1" != "$p2" ]] || { echo "FAIL both agents have the parent $p1"; failures=$((failures + 1)); }

pod() { # name, node, command
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  nodeName: %s\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: none, command: ["sh", "-c", "%s"]}\n' "$1" "$2" "$3"
}
{ pod ends n1 "exit 0"; echo ---; pod kept n1 "exec sleep 3600.$mark"; echo ---; pod other n2 "exec sleep 3600.$mark"; } >"$tmp/pods.yaml"
check "create the pods" 0 "$xpool" apply -f "$tmp/pods.yaml"
poll "kept runs" 60 Running phase kept
poll "other runs" 60 Running phase other
poll "ends succeeds" 60 Succeeded phase ends
ends=$(uid_of ends) kept=$(uid_of kept) other=$(uid_of other)
poll "kept's group is below n1's parent" 60 there group "$p1/$kept/main"
poll "other's group is below n2's parent" 60 there group "$p2/$other/main"

# ---- a pod that ends, then is deleted ----------------------------------------------------------
poll "an ended pod's container group is gone" 60 gone group "$p1/$ends/main"
check "delete the ended pod" 0 "$xpool" delete pod ends
poll "the ended pod is gone" 60 gone pod_there ends
poll "the ended pod's own group is gone" 60 gone group "$p1/$ends"

# ---- n1 killed; what it leaves ---------------------------------------------------------------
kill -KILL "$a1_pid"; wait "$a1_pid" 2>/dev/null || true; a1_pid=
# its pod's shim, then its container, killed while n1 is away (the shim first: it would remove
# its container's group on the container's exit): nothing removes their groups then
for shim in $(pgrep -f -- "__shim $tmp/n1/" || true); do
  children=$(pgrep -P "$shim" || true)
  kill -KILL "$shim" 2>/dev/null || true
  for child in $children; do kill -KILL "$child" 2>/dev/null || true; done
done
check "delete kept while n1 is away" 0 "$xpool" delete pod kept
# a group no start of n1's makes, with a process in it; and an idle one below n2's parent
mkdir -p "$(group_dir "$p1/orphan-$mark/main")" "$(group_dir "$p2/idle-$mark")"
sleep "3601.$mark" &
stray_pid=$!
echo "$stray_pid" >"$(group_dir "$p1/orphan-$mark/main")/cgroup.procs"
poll "kept's group outlives its killed shim" 60 there group "$p1/$kept/main"

# n1's Node stays Ready while it is away (the grace period is longer): its restart is there once
# its log says the parent again, or the parent checked below would be the first start's
parent_lines() { grep -c "pods' cgroups below /xpool/agent-[0-9a-f]*\$" "$tmp/n1.log" || true; }
said_before=$(parent_lines)
said_again() { [[ $(parent_lines) -gt $said_before ]]; }
start_agent n1; a1_pid=$!
wait_for "n1's restart says its parent" 60 said_again
poll "n1 is Ready again" 60 Ready ready n1
check "n1's parent after its restart" 0 parent_of n1
expect_exact "n1 keeps its parent" "$tmp/out" "$p1"
poll "the orphan group is gone" 120 gone group "$p1/orphan-$mark"
poll "its process is killed" 60 dead alive "$stray_pid"
poll "kept is gone" 120 gone pod_there kept
poll "kept's groups are gone" 120 gone group "$p1/$kept"
poll "n2's running pod keeps its group" 60 there group "$p2/$other/main"
poll "the idle group below n2's parent stays" 60 there group "$p2/idle-$mark"
poll "n2's pod runs on" 60 Running phase other
# (said once the groups are removed: waited for, as the removal checked above comes first)
wait_for "n1 says what it removed" 60 grep -qF -- "pods' cgroups below $p1 that no pod of this node needs" "$tmp/n1.log"
rmdir "$(group_dir "$p2/idle-$mark")"

finish "cgroup orphans"
