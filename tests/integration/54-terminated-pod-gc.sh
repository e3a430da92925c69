#!/usr/bin/env bash
# The pod garbage collector (docs/server.md, "Terminated pods"), with stock kubectl: a server with
# --terminated-pod-gc-threshold 3, a node no agent runs, pods whose status is written by hand.
#   - five terminated pods (Succeeded and Failed, one owned by a Job), created a second apart, and
#     names against their age: the two oldest are deleted, the three newest stay;
#   - running and pending pods, older than all of them, stay;
#   - a bad threshold is refused with a clear message, by `xpool server` and `xpool up`.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
kc=$data/admin.kubeconfig
server_pid= base=
trap 'for p in $server_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

check "a threshold that is not a number is refused" 2 "$xpool" server --data-dir "$tmp/bad" --terminated-pod-gc-threshold -1
expect_in "with the reason" "$tmp/err" "xpool server: --terminated-pod-gc-threshold '-1': expected a number of pods from 0 (no collection) to 2147483647"
check "xpool up takes the flag and refuses the same" 2 "$xpool" up --data-dir "$tmp/badup" --terminated-pod-gc-threshold 1x
expect_in "in its own name" "$tmp/err" "xpool up: --terminated-pod-gc-threshold '1x': expected a number of pods from 0 (no collection) to 2147483647"

# the node stays Ready long enough that none of its pods is marked lost meanwhile
start_server "$data" --terminated-pod-gc-threshold 3 --node-monitor-grace-period 1h
k=(kubectl --kubeconfig "$kc")
diag_cluster "$kc"
printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n' | "${k[@]}" create -f - >/dev/null

pod() { # name, phase, [owner]: a pod on n1 with that phase
  local owner=
  [[ -z "${3:-}" ]] || owner=", ownerReferences: [{apiVersion: batch/v1, kind: Job, name: $3, uid: 0b8d4b43-5f65-4a38-9c7a-3bd1e1c0f1a1, controller: true}]"
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s%s}\nspec:\n  nodeName: n1\n  restartPolicy: Never\n  containers:\n  - {name: main, image: busybox:1.36}\n' "$1" "$owner" |
    "${k[@]}" create -f - >/dev/null || { echo "FAIL create pod $1"; failures=$((failures + 1)); }
  "${k[@]}" patch pod "$1" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"$2\"}}" >/dev/null ||
    { echo "FAIL set pod $1 $2"; failures=$((failures + 1)); }
}
pod old-running Running
pod old-pending Pending
# creationTimestamp has whole seconds: a second apart, the age is the time's, not the name's
for p in "e-first Succeeded job1" "d-second Failed" "c-third Succeeded" "b-fourth Failed"; do
  # shellcheck disable=SC2086
  pod $p
  sleep 1.1
done
pod a-fifth Succeeded
names() { "${k[@]}" get pods -o 'jsonpath={.items[*].metadata.name}'; }
poll "the two oldest terminated pods deleted, the rest kept" 120 "a-fifth b-fourth c-third old-pending old-running" names
# 4 or 5 terminated pods when it went: the collector runs as they finish, or finds several at once
check "the server says why" 0 grep -E "pod garbage collector: deleted pod default/e-first: [45] terminated pods, over the threshold of 3$" "$tmp/server.log"

# one more terminated: the oldest left goes; a running one turning Succeeded counts as its age
"${k[@]}" patch pod old-running --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
poll "the oldest terminated pod goes, at its age" 120 "a-fifth b-fourth c-third old-pending" names

finish "terminated-pod-gc"
