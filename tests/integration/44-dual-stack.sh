#!/usr/bin/env bash
# Dual-stack Services as kube-apiserver 1.32 gives them (issue 15), with stock kubectl, on a
# server started with --service-cluster-ip-range IPV6,IPV4 (IPv6 the primary family):
#   - the kubernetes Service and a Service that names no policy are single-stack in the primary
#     family; PreferDualStack and RequireDualStack get both families and one cluster IP of each;
#     the families follow the cluster IPs asked for; an address of the other family than its
#     index's is refused in kube's words;
#   - a replace (PUT) that leaves the cluster IPs, the policy and the families out keeps them; a
#     policy change that leaves the families as they are drops the secondary family's address
#     (SingleStack) or adds one (RequireDualStack);
#   - ranges the server refuses: two of one family, three, an IPv6 one wider than /108.
# The single-stack cluster's answers are in 38-disruption.sh.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
kc=$data/admin.kubeconfig
server_pid= base=
trap 'for p in $server_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

# ---- ranges the server refuses ---------------------------------------------------------------
bad_range() { # name, range, message
  check "$1" 1 timeout 20 "$xpool" server --listen 127.0.0.1:0 --data-dir "$tmp/bad" --service-cluster-ip-range "$2"
  expect_in "$1: message" "$tmp/err" "$3"
}
bad_range "two IPv4 ranges" 10.96.0.0/16,10.97.0.0/16 \
  "--service-cluster-ip-range '10.96.0.0/16,10.97.0.0/16': two ranges must be of different IP families (an IPv4 and an IPv6 one)"
bad_range "three ranges" 10.96.0.0/16,fd00::/108,10.97.0.0/16 \
  "--service-cluster-ip-range '10.96.0.0/16,fd00::/108,10.97.0.0/16': at most two ranges, an IPv4 and an IPv6 one"
bad_range "a wide IPv6 range" 10.96.0.0/16,fd00::/64 \
  "--service-cluster-ip-range '10.96.0.0/16,fd00::/64': 'fd00::/64' is not a range: expected an IPv4 one with a prefix between /8 and /30 (10.96.0.0/12) or an IPv6 one between /108 and /126 (fd00:10:96::/108)"

start_server "$data" --service-cluster-ip-range fd00:10:96::/108,10.96.0.0/16
k=(kubectl --kubeconfig "$kc")
fields='{.spec.ipFamilyPolicy} {.spec.ipFamilies} {.spec.clusterIPs}'

check "the kubernetes Service" 0 "${k[@]}" get svc kubernetes -o "jsonpath=$fields"
expect_exact "the kubernetes Service: the primary family's first address" "$tmp/out" 'SingleStack ["IPv6"] ["fd00:10:96::1"]'

service() { # name, spec members (YAML flow): applies the Service
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: %s}\nspec: {selector: {app: x}, ports: [{port: 80}]%s}\n' \
    "$1" "${2:+, $2}" >"$tmp/$1.yaml"
  check "create $1" 0 "${k[@]}" create -f "$tmp/$1.yaml"
}
in_v6='^fd00:10:96::[0-9a-f:]+$'
in_v4='^10\.96\.[0-9]+\.[0-9]+$'
ips_match() { # name, jsonpath of one IP, regex
  local ip
  ip=$("${k[@]}" get svc "$1" -o "jsonpath=$2")
  [[ "$ip" =~ $3 ]] || { echo "FAIL $1: $2 is '$ip', expected $3"; failures=$((failures + 1)); }
}

service plain
check "plain: single-stack, primary family" 0 "${k[@]}" get svc plain -o 'jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}'
expect_exact "plain: fields" "$tmp/out" 'SingleStack ["IPv6"]'
ips_match plain '{.spec.clusterIP}' "$in_v6"

service prefer 'ipFamilyPolicy: PreferDualStack'
check "prefer: both families" 0 "${k[@]}" get svc prefer -o 'jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}'
expect_exact "prefer: fields" "$tmp/out" 'PreferDualStack ["IPv6","IPv4"]'
ips_match prefer '{.spec.clusterIPs[0]}' "$in_v6"
ips_match prefer '{.spec.clusterIPs[1]}' "$in_v4"
ips_match prefer '{.spec.clusterIP}' "$in_v6"

service require 'ipFamilyPolicy: RequireDualStack, ipFamilies: [IPv4]'
check "require: IPv4 first" 0 "${k[@]}" get svc require -o 'jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}'
expect_exact "require: fields" "$tmp/out" 'RequireDualStack ["IPv4","IPv6"]'
ips_match require '{.spec.clusterIPs[0]}' "$in_v4"
ips_match require '{.spec.clusterIPs[1]}' "$in_v6"

service asked 'ipFamilyPolicy: PreferDualStack, clusterIPs: [10.96.7.7]'
check "asked: families from the address" 0 "${k[@]}" get svc asked -o "jsonpath={.spec.ipFamilies} {.spec.clusterIPs[0]}"
expect_exact "asked: fields" "$tmp/out" '["IPv4","IPv6"] 10.96.7.7'
ips_match asked '{.spec.clusterIPs[1]}' "$in_v6"

printf 'apiVersion: v1\nkind: Service\nmetadata: {name: wrong}\nspec: {selector: {app: x}, ports: [{port: 80}], ipFamilies: [IPv6], clusterIP: 10.96.0.9}\n' >"$tmp/wrong.yaml"
check "an address of the other family" 1 "${k[@]}" create -f "$tmp/wrong.yaml"
expect_exact "the other family: message" "$tmp/err" 'The Service "wrong" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.9": expected an IPv6 value as indicated by `ipFamilies[0]`'
printf 'apiVersion: v1\nkind: Service\nmetadata: {name: taken}\nspec: {selector: {app: x}, ports: [{port: 80}], clusterIPs: [10.96.7.7]}\n' >"$tmp/taken.yaml"
check "a taken address" 1 "${k[@]}" create -f "$tmp/taken.yaml"
expect_exact "taken: message" "$tmp/err" 'The Service "taken" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.7.7"}: failed to allocate IP 10.96.7.7: provided IP is already allocated'

# ---- a replace that leaves the allocated fields out keeps them -------------------------------
before=$("${k[@]}" get svc prefer -o "jsonpath=$fields")
"${k[@]}" get svc prefer -o json | /usr/bin/python3 -c 'import json, sys
s = json.load(sys.stdin)
for key in ("clusterIP", "clusterIPs", "ipFamilyPolicy", "ipFamilies"):
    del s["spec"][key]
s["metadata"]["labels"] = {"x": "y"}
json.dump(s, sys.stdout)' >"$tmp/replace.yaml"
check "replace without them" 0 "${k[@]}" replace -f "$tmp/replace.yaml"
expect_exact "replace: output" "$tmp/out" 'service/prefer replaced'
check "replace kept them" 0 "${k[@]}" get svc prefer -o "jsonpath=$fields {.metadata.labels.x}"
expect_exact "replace kept them: fields" "$tmp/out" "$before y"

# ---- a policy change that leaves the families as they are drops or adds the secondary ---------
first=$("${k[@]}" get svc prefer -o 'jsonpath={.spec.clusterIPs[0]}')
check "down to SingleStack" 0 "${k[@]}" patch svc prefer -p '{"spec":{"ipFamilyPolicy":"SingleStack"}}'
check "down: the primary only" 0 "${k[@]}" get svc prefer -o "jsonpath=$fields"
expect_exact "down: fields" "$tmp/out" "SingleStack [\"IPv6\"] [\"$first\"]"
first=$("${k[@]}" get svc plain -o 'jsonpath={.spec.clusterIPs[0]}')
check "up to RequireDualStack" 0 "${k[@]}" patch svc plain -p '{"spec":{"ipFamilyPolicy":"RequireDualStack"}}'
check "up: both families" 0 "${k[@]}" get svc plain -o 'jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies} {.spec.clusterIPs[0]}'
expect_exact "up: fields" "$tmp/out" "RequireDualStack [\"IPv6\",\"IPv4\"] $first"
ips_match plain '{.spec.clusterIPs[1]}' "$in_v4"

finish "dual-stack"
