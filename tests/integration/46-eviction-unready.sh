#!/usr/bin/env bash
# A PodDisruptionBudget's unhealthyPodEvictionPolicy on the eviction of a pod that runs but is
# not Ready, as kube-apiserver 1.32's eviction subresource decides (issue 15), with stock kubectl
# and curl. The pods' status is written by hand (Running, Ready or not) on a node no agent runs:
#   - IfHealthyBudget (the default) and the budget met (2 healthy of 2 desired, 0 disruptions
#     allowed): the unready pod goes (201) without spending the budget (disruptedPods stays
#     empty), a Ready one is refused (429, the DisruptionBudget cause);
#   - IfHealthyBudget and the budget not met (2 healthy of 3 desired): the unready pod is refused
#     too, with the same words as a Ready one;
#   - AlwaysAllow: the unready pod goes though the budget is not met; a Ready one is still
#     refused.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
kc=$data/admin.kubeconfig
server_pid= base=
trap 'for p in $server_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data"
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$kc" | head -1)
k=(kubectl --kubeconfig "$kc")
diag_cluster "$kc"

evict() { # what, pod, expected HTTP code: POSTs the pod's Eviction, its Status in $tmp/evict
  local code
  code=$(curl -sS --cacert "$data/pki/ca.crt" -o "$tmp/evict" -w '%{http_code}' -H "Authorization: Bearer $admin" \
    -H 'Content-Type: application/json' -X POST "$base/api/v1/namespaces/default/pods/$2/eviction" \
    -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$2\"}}") || true
  [[ "$code" == "$3" ]] || { echo "FAIL $1: HTTP $code, expected $3"; cat "$tmp/evict"; failures=$((failures + 1)); }
}
refusal() { # the Status of a refusal, in one line
  /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["code"], s["reason"], "|", s["message"], "|", s["details"]["causes"][0]["reason"], "|", s["details"]["causes"][0]["message"])' \
    "$tmp/evict" 2>&1
}
evicted() { # pod: marked for deletion (no agent confirms it) or gone
  "${k[@]}" get pod "$1" -o 'jsonpath={.metadata.deletionTimestamp}' 2>/dev/null | grep -q . ||
    ! "${k[@]}" get pod "$1" >/dev/null 2>&1
}
pod() { # name, ready (True/False): a Running pod of app=web on n1
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, labels: {app: web}}\nspec:\n  nodeName: n1\n  containers:\n  - {name: main, image: busybox:1.36}\n' "$1" |
    "${k[@]}" create -f - >/dev/null
  "${k[@]}" patch pod "$1" --subresource=status --type=merge \
    -p "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\"}]}}" >/dev/null
}
budget() { "${k[@]}" get pdb web -o 'jsonpath={.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed} {.status.observedGeneration}'; }

printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n' | "${k[@]}" create -f - >/dev/null
pod ready1 True
pod ready2 True
pod unready1 False
pod unready2 False
check "a budget of 2" 0 "${k[@]}" create pdb web --selector=app=web --min-available=2
poll "the budget: 2 healthy of 2, none allowed" 120 "2 2 0 1" budget

# ---- IfHealthyBudget, met ------------------------------------------------------------------
evict "a Ready pod with the budget at its floor" ready1 429
refusal >"$tmp/status"
expect_exact "the refusal" "$tmp/status" "429 TooManyRequests | Cannot evict pod as it would violate the pod's disruption budget. | DisruptionBudget | The disruption budget web needs 2 healthy pods and has 2 currently"
evict "an unready pod, budget met" unready1 201
evicted unready1 || { echo "FAIL unready1 was not deleted"; failures=$((failures + 1)); }
check "the budget was not spent" 0 "${k[@]}" get pdb web -o 'jsonpath={.status.disruptionsAllowed}|{.status.disruptedPods}'
expect_exact "the budget was not spent: allowed 0, no disrupted pod" "$tmp/out" "0|"

# ---- IfHealthyBudget, not met --------------------------------------------------------------
check "a budget of 3" 0 "${k[@]}" patch pdb web --type=merge -p '{"spec":{"minAvailable":3}}'
poll "the budget: 2 healthy of 3, none allowed" 120 "2 3 0 2" budget
evict "an unready pod, budget not met" unready2 429
refusal >"$tmp/status"
expect_exact "the refusal of the unready pod" "$tmp/status" "429 TooManyRequests | Cannot evict pod as it would violate the pod's disruption budget. | DisruptionBudget | The disruption budget web needs 3 healthy pods and has 2 currently"
check "unready2 is still there" 0 "${k[@]}" get pod unready2 -o 'jsonpath={.metadata.deletionTimestamp}'
expect_exact "unready2 is not marked" "$tmp/out" ""

# ---- AlwaysAllow ---------------------------------------------------------------------------
check "AlwaysAllow" 0 "${k[@]}" patch pdb web --type=merge -p '{"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}}'
poll "the budget's new generation is seen" 120 "2 3 0 3" budget
evict "a Ready pod under AlwaysAllow" ready2 429
evict "an unready pod under AlwaysAllow" unready2 201
evicted unready2 || { echo "FAIL unready2 was not deleted"; failures=$((failures + 1)); }
check "the Ready pods stay" 0 "${k[@]}" get pod ready1 ready2 -o 'jsonpath={range .items[*]}{.metadata.name}:{.metadata.deletionTimestamp} {end}'
expect_exact "the Ready pods stay: not marked" "$tmp/out" "ready1: ready2: "

finish "eviction of unready pods"
