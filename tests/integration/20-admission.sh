#!/usr/bin/env bash
# Admission on the secured server, with curl and kubectl and node and admin tokens:
#   - NodeRestriction: a node's token registers its Node only with labels a kubelet may set,
#     cannot remove the admin's NoSchedule taint nor add, change or remove node-restriction.
#     kubernetes.io/ and node-role.kubernetes.io/ labels (403 in kube-apiserver's words, nothing
#     changed), may change its own allowed labels, and cannot touch another node; the real agent
#     re-registers and heartbeats with the taint and those labels in place;
#   - a bound pod's spec.nodeName is immutable (PATCH of every kind and PUT: 422), binding works;
#   - wrong types in fields xpool does not model (422 with the field path, through curl and
#     kubectl), a real-world pod full of them passes and kubectl decodes it;
#   - 150 levels of nesting are refused at create, update and every kind of patch.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
diag_cluster "$data/admin.kubeconfig"
ca=$data/pki/ca.crt
manifests=$src/tests/data/manifests
server_pid= agent_pid= base=
trap 'for p in $agent_pid $server_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
n1=$(cat "$tmp/n1.token") n2=$(cat "$tmp/n2.token")
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
deadline=$((SECONDS + 60))
until [[ -n "$base" ]] && curl -fsS --cacert "$ca" -o /dev/null "$base/healthz" 2>/dev/null; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
  sleep 0.1
  base=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
done
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)

# call name, expected HTTP code, token, method, path, content type, body (inline JSON, or @file):
# the answer in $tmp/out
call() {
  local name=$1 want=$2 tok=$3 method=$4 path=$5 type=${6:-} body=${7:-} got
  local args=(-sS --cacert "$ca" -X "$method" -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $tok")
  [[ -n "$body" ]] && args+=(-H "Content-Type: $type" --data-binary "$body")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}
merge=application/merge-patch+json json=application/json
jpatch=application/json-patch+json smp=application/strategic-merge-patch+json

expect_message() { # name, message: $tmp/out is a Status with exactly that message
  local msg
  msg=$(printf '%s' "$2" | sed 's/\\/\\\\/g; s/"/\\"/g')
  expect_in "$1: message" "$tmp/out" '"message":"'"$msg"'"'
}

field() { # path, jq-less extraction: python reads a JSON member path like spec.taints
  /usr/bin/python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else (v[int(k)] if isinstance(v, list) and k.isdigit() else None)
print(json.dumps(v, sort_keys=True))' "$tmp/out" "$1"
}

N=/api/v1/nodes
# ---- a node registers itself, only with labels a kubelet may set ------------------------------
call "n2 registers with a node-role label" 403 "$n2" POST $N $json \
  '{"metadata":{"name":"n2","labels":{"node-role.kubernetes.io/gpu":"","kubernetes.io/os":"linux"}}}'
expect_message "n2 registers with a node-role label" \
  'nodes "n2" is forbidden: node "n2" is not allowed to set the following labels: node-role.kubernetes.io/gpu'
expect_in "403 reason" "$tmp/out" '"reason":"Forbidden"'
call "nothing registered" 404 "$admin" GET $N/n2
call "n2 registers with a configSource" 403 "$n2" POST $N $json \
  '{"metadata":{"name":"n2"},"spec":{"configSource":{"configMap":{"name":"c","namespace":"kube-system","kubeletConfigKey":"k"}}}}'
call "n2 registers with the kubelet's labels" 201 "$n2" POST $N $json \
  '{"metadata":{"name":"n2","labels":{"kubernetes.io/hostname":"h2","kubernetes.io/os":"linux","topology.kubernetes.io/zone":"z1","node.kubernetes.io/instance-type":"big","example.com/rack":"r2"}}}'
call "n1 registers" 201 "$n1" POST $N $json \
  '{"metadata":{"name":"n1","labels":{"kubernetes.io/hostname":"h1","kubernetes.io/arch":"amd64"}}}'
call "n1 cannot register n3" 403 "$n1" POST $N $json '{"metadata":{"name":"n3"}}'

# ---- the admin taints and labels n1 --------------------------------------------------------------
call "admin taints and labels n1" 200 "$admin" PATCH $N/n1 $merge \
  '{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"secure","node-role.kubernetes.io/gpu":""}},"spec":{"taints":[{"key":"dedicated","value":"secure","effect":"NoSchedule"}]}}'
call "n1 as the admin left it" 200 "$admin" GET $N/n1
field metadata.labels >"$tmp/labels.before"
field spec.taints >"$tmp/taints.before"
unchanged() { # name: n1's labels and taints are as the admin left them
  call "$1: read n1" 200 "$admin" GET $N/n1
  field metadata.labels | cmp -s - "$tmp/labels.before" || { echo "FAIL $1: n1's labels changed: $(field metadata.labels)"; failures=$((failures + 1)); }
  field spec.taints | cmp -s - "$tmp/taints.before" || { echo "FAIL $1: n1's taints changed: $(field spec.taints)"; failures=$((failures + 1)); }
}

# ---- n1's token: no taint changes, no restricted labels ------------------------------------------
call "n1 removes its taint (merge patch)" 403 "$n1" PATCH $N/n1 $merge '{"spec":{"taints":null}}'
expect_message "taint removal" 'nodes "n1" is forbidden: node "n1" is not allowed to modify taints'
call "n1 removes its taint (JSON patch)" 403 "$n1" PATCH $N/n1 $jpatch '[{"op":"remove","path":"/spec/taints/0"}]'
call "n1 softens its taint (strategic merge)" 403 "$n1" PATCH $N/n1 $smp \
  '{"spec":{"taints":[{"key":"dedicated","value":"secure","effect":"PreferNoSchedule"}]}}'
call "n1 adds a taint" 403 "$n1" PATCH $N/n1 $jpatch \
  '[{"op":"add","path":"/spec/taints/-","value":{"key":"x","effect":"NoExecute"}}]'
call "n1 as stored" 200 "$n1" GET $N/n1
/usr/bin/python3 -c 'import json,sys
n=json.load(open(sys.argv[1])); n["spec"].pop("taints", None)
json.dump(n, open(sys.argv[2], "w"))' "$tmp/out" "$tmp/untainted.json"
call "n1 removes its taint (PUT)" 403 "$n1" PUT $N/n1 $json "@$tmp/untainted.json"
for change in '"node-restriction.kubernetes.io/pool":null' '"node-restriction.kubernetes.io/pool":"open"' \
  '"node-restriction.kubernetes.io/other":"x"' '"node-role.kubernetes.io/gpu":null' \
  '"node-role.kubernetes.io/master":""' '"kubernetes.io/role":"x"' '"k8s.io/anything":"x"' \
  '"team.node-restriction.kubernetes.io/a":"b"'; do
  call "n1 label change {$change}" 403 "$n1" PATCH $N/n1 $merge '{"metadata":{"labels":{'"$change"'}}}'
done
expect_message "restricted label" 'nodes "n1" is forbidden: is not allowed to modify labels: team.node-restriction.kubernetes.io/a'
call "n1 changes two restricted labels" 403 "$n1" PATCH $N/n1 $merge \
  '{"metadata":{"labels":{"node-role.kubernetes.io/gpu":null,"node-restriction.kubernetes.io/pool":null}}}'
expect_message "two restricted labels" \
  'nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/gpu'
unchanged "after the refused writes"

# ---- what a node may do ---------------------------------------------------------------------------
call "n1 changes its allowed labels" 200 "$n1" PATCH $N/n1 $merge \
  '{"metadata":{"labels":{"kubernetes.io/hostname":"h1b","topology.kubernetes.io/zone":"z2","node.kubernetes.io/exclude-from-external-load-balancers":"","xpool.io/agent":"true","kubernetes.io/arch":null}}}'
expect_in "allowed label set" "$tmp/out" '"topology.kubernetes.io/zone":"z2"'
expect_in "restricted label kept" "$tmp/out" '"node-restriction.kubernetes.io/pool":"secure"'
call "n1 status patch" 200 "$n1" PATCH $N/n1/status $merge \
  '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Test","lastHeartbeatTime":"2026-12-02T15:04:05Z"}]}}'
call "n1 patches n2" 403 "$n1" PATCH $N/n2 $merge '{"metadata":{"labels":{"a":"b"}}}'
expect_message "another node" \
  'nodes "n2" is forbidden: User "system:node:n1" cannot patch resource "nodes" in API group "" at the cluster scope'
call "n1 removes n2's status" 403 "$n1" PATCH $N/n2/status $merge '{"status":null}'
call "the admin still may" 200 "$admin" PATCH $N/n2 $merge '{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}'

if command -v kubectl >/dev/null; then
  kn1=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=10s --server "$base" --certificate-authority "$ca" --token "$n1")
  check "kubectl taint by the node" 1 "${kn1[@]}" taint node n1 dedicated-
  expect_in "kubectl taint Forbidden" "$tmp/err" 'Error from server (Forbidden): nodes "n1" is forbidden: node "n1" is not allowed to modify taints'
  check "kubectl label by the node" 1 "${kn1[@]}" label node n1 node-role.kubernetes.io/worker=
  expect_in "kubectl label Forbidden" "$tmp/err" 'nodes "n1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/worker'
  check "kubectl allowed label by the node" 0 "${kn1[@]}" label node n1 example.com/rack=r9
fi
call "n1 after kubectl" 200 "$admin" GET $N/n1
expect_in "taint kept" "$tmp/out" '"taints":[{"key":"dedicated","value":"secure","effect":"NoSchedule"}]'

# ---- the real agent re-registers n1 and heartbeats, with the taint and labels in place ----------
"$xpool" agent --server "$base" --token-file "$tmp/n1.token" --ca-file "$ca" --node-name n1 \
  --data-dir "$tmp/a1" --node-description "$src/examples/nodes/dgx-h100.yaml" \
  --listen 127.0.0.1:0 --heartbeat 500ms --backoff 1s --pod-network host --default-runtime process >"$tmp/a1.log" 2>&1 &
agent_pid=$!
diag_log "$tmp/a1.log"
deadline=$((SECONDS + 60)) ready=
while [[ $SECONDS -lt $deadline ]]; do
  call "n1 read while the agent registers" 200 "$admin" GET $N/n1
  grep -q '"reason":"AgentReady"' "$tmp/out" && grep -q '"xpool.io/agent":"true"' "$tmp/out" && { ready=1; break; }
  sleep 0.2
done
[[ -n "$ready" ]] || { echo "FAIL the agent did not register n1 Ready:"; cat "$tmp/out" "$tmp/a1.log"; failures=$((failures + 1)); }
expect_in "agent: taint kept" "$tmp/out" '"taints":[{"key":"dedicated","value":"secure","effect":"NoSchedule"}]'
expect_in "agent: restricted label kept" "$tmp/out" '"node-restriction.kubernetes.io/pool":"secure"'
expect_in "agent: node-role label kept" "$tmp/out" '"node-role.kubernetes.io/gpu":""'
sleep 1.2 # two more heartbeats
kill -TERM "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null || true; agent_pid=
if grep -qiwE 'forbidden|403' "$tmp/a1.log"; then
  echo "FAIL the agent was refused a write:"; cat "$tmp/a1.log"; failures=$((failures + 1))
fi

# ---- a bound pod keeps its node -------------------------------------------------------------------
P=/api/v1/namespaces/default/pods
call "create an unbound pod" 201 "$admin" POST $P $json \
  '{"metadata":{"name":"p1"},"spec":{"schedulerName":"manual","containers":[{"name":"c","image":"busybox","command":["sleep","1"]}]}}'
call "bind it to n2" 201 "$admin" POST $P/p1/binding $json \
  '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"kind":"Node","name":"n2"}}'
forbidden_move='Pod "p1" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)'
call "move it by merge patch" 422 "$admin" PATCH $P/p1 $merge '{"spec":{"nodeName":"n1"}}'
expect_in "move: Invalid" "$tmp/out" '"reason":"Invalid"'
expect_in "move: message" "$tmp/out" "\"message\":\"${forbidden_move//\"/\\\"}"
expect_in "move: the diff" "$tmp/out" '- \tNodeName: \"n2\",\n+ \tNodeName: \"n1\",'
expect_in "move: cause" "$tmp/out" '"reason":"FieldValueForbidden"'
call "move it by JSON patch" 422 "$admin" PATCH $P/p1 $jpatch '[{"op":"replace","path":"/spec/nodeName","value":"n1"}]'
call "unbind it by JSON patch" 422 "$admin" PATCH $P/p1 $jpatch '[{"op":"remove","path":"/spec/nodeName"}]'
call "move it by strategic merge" 422 "$admin" PATCH $P/p1 $smp '{"spec":{"nodeName":"n1"}}'
call "p1 as stored" 200 "$admin" GET $P/p1
sed 's/"nodeName":"n2"/"nodeName":"n1"/' "$tmp/out" >"$tmp/moved.json"
call "move it by PUT" 422 "$admin" PUT $P/p1 $json "@$tmp/moved.json"
call "bind it again" 409 "$admin" POST $P/p1/binding $json \
  '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"kind":"Node","name":"n1"}}'
call "label the bound pod" 200 "$admin" PATCH $P/p1 $merge '{"metadata":{"labels":{"a":"b"}}}'
expect_in "still on n2" "$tmp/out" '"nodeName":"n2"'
if command -v kubectl >/dev/null; then
  kad=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=10s --kubeconfig "$data/admin.kubeconfig")
  check "kubectl patch nodeName" 1 "${kad[@]}" patch pod p1 -p '{"spec":{"nodeName":"n1"}}'
  expect_in "kubectl says Invalid" "$tmp/err" 'The Pod "p1" is invalid: spec: Forbidden: pod updates may not change fields other than'
fi

# ---- wrong types in fields xpool keeps without modelling them ------------------------------------
bad_pod() { # name, container JSON members
  printf '{"metadata":{"name":"%s"},"spec":{"schedulerName":"manual","containers":[{"name":"c","image":"busybox",%s}]}}' "$1" "$2"
}
call "containerPort 99999999999" 422 "$admin" POST $P $json "$(bad_pod t1 '"ports":[{"containerPort":99999999999}]')"
expect_message "containerPort" 'Pod "t1" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 99999999999: must be a 32-bit integer (between -2147483648 and 2147483647)'
expect_in "containerPort cause" "$tmp/out" '"field":"spec.containers[0].ports[0].containerPort"'
call "ports \"80\"" 422 "$admin" POST $P $json "$(bad_pod t2 '"ports":"80"')"
expect_message "ports" 'Pod "t2" is invalid: spec.containers[0].ports: expected a list, got a string'
call "periodSeconds often" 422 "$admin" POST $P $json "$(bad_pod t3 '"livenessProbe":{"periodSeconds":"often"}')"
expect_message "periodSeconds" 'Pod "t3" is invalid: spec.containers[0].livenessProbe.periodSeconds: expected an integer, got a string'
for t in t1 t2 t3; do call "$t not stored" 404 "$admin" GET $P/$t; done
call "a bad type by patch" 422 "$admin" PATCH $P/p1 $merge '{"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":"http"}]}]}}'
expect_in "patch: path" "$tmp/out" 'spec.containers[0].ports[0].containerPort: expected an integer, got a string'
call "a bad type in a node's status" 422 "$n2" PATCH $N/n2/status $merge '{"status":{"images":[{"names":["a"],"sizeBytes":"big"}]}}'
expect_in "node status: path" "$tmp/out" 'status.images[0].sizeBytes: expected an integer, got a string'
# the real-world pod runs as the service account web, which must exist (ServiceAccount admission)
call "the real-world pod's service account" 201 "$admin" POST /api/v1/namespaces/default/serviceaccounts $json '{"metadata":{"name":"web"}}'
if command -v kubectl >/dev/null; then
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: t4}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    ports: [{containerPort: 99999999999}]\n' >"$tmp/t4.yaml"
  check "kubectl create with a bad port" 1 "${kad[@]}" create --validate=false -f "$tmp/t4.yaml"
  expect_in "kubectl names the field" "$tmp/err" 'spec.containers[0].ports[0].containerPort: Invalid value: 99999999999'
  check "kubectl create a real-world pod" 0 "${kad[@]}" create -f "$manifests/real-world-pod.yaml"
  check "kubectl describes it (typed decoding)" 0 "${kad[@]}" describe pod web-7d9f8
  expect_in "describe: liveness" "$tmp/out" 'Liveness:'
  expect_in "describe: volumes" "$tmp/out" 'web-config'
  check "kubectl get -o yaml" 0 "${kad[@]}" get pod web-7d9f8 -o yaml
  expect_in "probes kept" "$tmp/out" 'port: http'
else
  call "create a real-world pod" 201 "$admin" POST $P $json "$("$xpool" convert -f "$manifests/real-world-pod.yaml")"
fi
if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then
  check "the Python client decodes it" 0 /usr/bin/python3 -c 'import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
p = client.CoreV1Api().read_namespaced_pod("web-7d9f8", "default")
assert p.spec.containers[0].ports[0].container_port == 8080
assert p.spec.containers[0].liveness_probe.period_seconds == 10
print(p.spec.volumes[2].projected.sources[0].service_account_token.expiration_seconds)' "$data/admin.kubeconfig"
  expect_in "python: projected token" "$tmp/out" 3600
fi

# ---- nesting -------------------------------------------------------------------------------------
deep=$(/usr/bin/python3 -c 'print("{\"a\":" * 150 + "1" + "}" * 150)')
limit='nested too deeply: an object may nest at most 100 levels of mappings and lists'
call "create 150 levels deep" 422 "$admin" POST $P $json \
  '{"metadata":{"name":"deep"},"spec":{"schedulerName":"manual","containers":[{"name":"c","image":"busybox"}],"x":'"$deep"'}}'
expect_in "create: the limit" "$tmp/out" "Pod \\\"deep\\\" is invalid: spec.x: Invalid value: $limit"
call "not created" 404 "$admin" GET $P/deep
call "merge patch 150 levels deep" 422 "$admin" PATCH $P/p1 $merge '{"metadata":{"annotations":null},"x":'"$deep"'}'
expect_in "merge patch: the limit" "$tmp/out" 'nesting deeper than 100 levels'
call "strategic merge 150 levels deep" 422 "$admin" PATCH $P/p1 $smp '{"spec":{"x":'"$deep"'}}'
call "JSON patch 150 levels deep" 422 "$admin" PATCH $P/p1 $jpatch '[{"op":"add","path":"/spec/x","value":'"$deep"'}]'
# a JSON patch within the bound whose result is not: 90 levels added 20 levels down
call "nest 20 levels" 200 "$admin" PATCH $P/p1/status $merge \
  '{"status":{"y":'"$(/usr/bin/python3 -c 'print("{\"a\":" * 20 + "1" + "}" * 20)')"'}}'
deep90=$(/usr/bin/python3 -c 'print("{\"a\":" * 90 + "1" + "}" * 90)')
call "a JSON patch whose result is too deep" 422 "$admin" PATCH $P/p1/status $jpatch \
  '[{"op":"add","path":"/status/y'"$(printf '/a%.0s' {1..19})"'","value":'"$deep90"'}]'
expect_in "result: the limit" "$tmp/out" 'the result would nest deeper than 100 levels'
call "status patch 150 levels deep" 422 "$admin" PATCH $P/p1/status $merge '{"status":{"x":'"$deep"'}}'
call "p1 as stored (nothing deep)" 200 "$admin" GET $P/p1
sed 's/"spec":{/"spec":{"x":'"$deep"',/' "$tmp/out" >"$tmp/deep.json"
call "PUT 150 levels deep" 422 "$admin" PUT $P/p1 $json "@$tmp/deep.json"
call "p1 untouched" 200 "$admin" GET $P/p1
expect_count "p1 has no x" "$tmp/out" 0 '"x":'
expect_count "p1's y as it was" "$tmp/out" 1 '"y":{"a":{"a":'
call "p1 still patchable" 200 "$admin" PATCH $P/p1/status $merge '{"status":{"message":"fine"}}'

finish "admission"
