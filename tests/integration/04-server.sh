#!/usr/bin/env bash
# xpool server on loopback, driven with curl (and kubectl when installed): create, get, list,
# update with optimistic concurrency, delete, the Status objects of the error paths, and state
# that survives kill -9 of the server.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid=
base=

trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

token=
read_token() { # the admin token from the kubeconfig the server writes at start
  token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
}

start_server() { # log name: starts on a free port and waits (bounded) until /version answers
  local log=$tmp/$1.log deadline=$((SECONDS + 60)) port=
  : >"$log" # the background job opens it later: it must exist for the first look
  # API semantics (versions, event sequences) without the scheduling loop's writes
  "$xpool" server --listen 127.0.0.1:0 --no-tls --no-scheduler --data-dir "$data" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    port=$(sed -n 's|.*xpool server listening on http://127\.0\.0\.1:\([0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$port" ]] && curl -fsS -o /dev/null "http://127.0.0.1:$port/version" 2>/dev/null; then
      base=http://127.0.0.1:$port
      read_token
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 60 s:"; cat "$log"; exit 1
}

# req name, expected HTTP code, method, path [, body file]: the answer in $tmp/out, which must
# be JSON (Content-Type application/json), with the expected code.
req() {
  local name=$1 want=$2 method=$3 path=$4 body=${5:-} got
  local args=(-sS -X "$method" -o "$tmp/out" -D "$tmp/headers" -w '%{http_code}')
  [[ -n "$token" ]] && args+=(-H "Authorization: Bearer $token")
  [[ -n "$body" ]] && args+=(-H 'Content-Type: application/json' --data-binary "@$body")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
  grep -qi '^content-type: application/json' "$tmp/headers" ||
    { echo "FAIL $name: not application/json:"; cat "$tmp/headers"; failures=$((failures + 1)); }
}

version_of() { # file: the first metadata.resourceVersion in it
  grep -o '"resourceVersion":"[0-9]*"' "$1" | head -1 | cut -d'"' -f4
}

pods=/api/v1/namespaces/default/pods
check "convert the seed pod" 0 "$xpool" convert -o json -f "$src/examples/ai-training.yaml"
cp "$tmp/out" "$tmp/pod.json"
sed 's/"name": "ai-training"/"name": "keeper"/' "$tmp/pod.json" >"$tmp/keeper.json"
check "convert the node" 0 "$xpool" convert -o json -f "${XPOOL_TEST_DATA:?}/manifests/gpu-node.yaml"
cp "$tmp/out" "$tmp/node.json"

start_server first
expect_in "listening line" "$tmp/first.log" "xpool server listening on $base, state in $data"

# Discovery.
req "version" 200 GET /version
expect_in "version gitVersion" "$tmp/out" '"gitVersion":"v1.32.0-xpool.'
expect_in "version platform" "$tmp/out" '"platform":"linux/'
req "api" 200 GET /api
expect_in "api versions" "$tmp/out" '"versions":["v1"]'
req "api/v1" 200 GET /api/v1
expect_in "api/v1 pods" "$tmp/out" '"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"]'
expect_in "api/v1 nodes" "$tmp/out" '"name":"nodes","singularName":"node","namespaced":false,"kind":"Node"'
req "apis" 200 GET /apis
expect_in "apis: coordination" "$tmp/out" '{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}]'

# Create, get, list.
req "create the seed pod" 201 POST "$pods" "$tmp/pod.json"
expect_in "create namespace from the path" "$tmp/out" '"namespace":"default"'
expect_in "create sets status.phase" "$tmp/out" '"status":{"phase":"Pending","qosClass":"BestEffort"}'
expect_in "create sets creationTimestamp" "$tmp/out" '"creationTimestamp":"20'
grep -qE '"uid":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"' "$tmp/out" ||
  { echo "FAIL create: no UUID v4 uid"; cat "$tmp/out"; failures=$((failures + 1)); }
rv1=$(version_of "$tmp/out")
req "get the pod" 200 GET "$pods/ai-training"
expect_in "get the pod limits" "$tmp/out" '"limits":{"nvidia.com/gpu":"1","vendor.com/npu":"2"}'
cp "$tmp/out" "$tmp/stored.json"
req "list in the namespace" 200 GET "$pods"
expect_in "list kind" "$tmp/out" '"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"'"$rv1"'"}'
expect_in "list item" "$tmp/out" '"name":"ai-training"'
req "list across namespaces" 200 GET /api/v1/pods
expect_in "list all item" "$tmp/out" '"name":"ai-training"'
req "list another namespace" 200 GET /api/v1/namespaces/other/pods
expect_in "list another namespace is empty" "$tmp/out" '"items":[]'

# Error paths: each a Status with its reason and code.
req "create again" 409 POST "$pods" "$tmp/pod.json"
expect_in "already exists" "$tmp/out" '"status":"Failure","message":"pods \"ai-training\" already exists","reason":"AlreadyExists","details":{"name":"ai-training","kind":"pods"},"code":409'
sed 's|"nvidia.com/gpu": "1"|"nvidia.com/gpu": "1.5x"|' "$tmp/pod.json" >"$tmp/bad.json"
req "invalid body" 422 POST "$pods" "$tmp/bad.json"
expect_in "invalid names the field" "$tmp/out" '"message":"Pod \"ai-training\" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: \"1.5x\" is not a valid quantity","reason":"Invalid"'
expect_in "invalid code" "$tmp/out" '"code":422'
printf '{"apiVersion": "v1", "kind": "Pod", ' >"$tmp/broken.json"
req "malformed JSON" 400 POST "$pods" "$tmp/broken.json"
expect_in "malformed JSON reason" "$tmp/out" '"reason":"BadRequest"'
req "wrong kind" 400 POST "$pods" "$tmp/node.json"
expect_in "wrong kind message" "$tmp/out" 'does not match the resource: expected Pod'
req "namespace mismatch" 400 POST /api/v1/namespaces/other/pods "$tmp/stored.json"
expect_in "namespace mismatch message" "$tmp/out" 'does not match the namespace sent on the request'
head -c $((4 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$tmp/big.json"
req "body too large" 413 POST "$pods" "$tmp/big.json"
expect_in "too large reason" "$tmp/out" '"reason":"RequestEntityTooLarge"'
req "get missing" 404 GET "$pods/nope"
expect_in "not found" "$tmp/out" '"message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404'
req "unknown path" 404 GET /api/v1/widgets
expect_in "unknown path reason" "$tmp/out" '"reason":"NotFound"'
req "unsupported method" 405 POST "$pods/ai-training"
expect_in "method not allowed" "$tmp/out" '"reason":"MethodNotAllowed","details":{},"code":405'

# Update: based on the stored version, then a stale one, then none.
sed 's/"metadata":{/"metadata":{"labels":{"team":"ml"},/' "$tmp/stored.json" >"$tmp/update.json"
req "update" 200 PUT "$pods/ai-training" "$tmp/update.json"
expect_in "update label" "$tmp/out" '"labels":{"team":"ml"}'
rv2=$(version_of "$tmp/out")
[[ "$rv2" -gt "$rv1" ]] || { echo "FAIL update: version $rv2 not above $rv1"; failures=$((failures + 1)); }
grep -q "$(grep -o '"uid":"[^"]*"' "$tmp/stored.json")" "$tmp/out" ||
  { echo "FAIL update changed the uid"; failures=$((failures + 1)); }
req "stale update" 409 PUT "$pods/ai-training" "$tmp/update.json"
expect_in "conflict" "$tmp/out" '"message":"Operation cannot be fulfilled on pods \"ai-training\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict"'
sed 's/"resourceVersion":"[0-9]*"/"resourceVersion":""/' "$tmp/update.json" >"$tmp/norv.json"
req "update without resourceVersion" 422 PUT "$pods/ai-training" "$tmp/norv.json"
expect_in "update needs resourceVersion" "$tmp/out" 'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update'
req "update missing" 404 PUT "$pods/keeper" "$tmp/keeper.json"

# A second pod that stays, then delete the first.
req "create keeper" 201 POST "$pods" "$tmp/keeper.json"
keeper_rv=$(version_of "$tmp/out")
req "delete" 200 DELETE "$pods/ai-training"
expect_in "delete returns the object" "$tmp/out" '"name":"ai-training"'
req "get deleted" 404 GET "$pods/ai-training"
req "delete again" 404 DELETE "$pods/ai-training"

# Nodes: cluster-scoped.
req "create node" 201 POST /api/v1/nodes "$tmp/node.json"
expect_in "node has no namespace" "$tmp/out" '"metadata":{"name":"dgx-01","uid":"'
req "get node" 200 GET /api/v1/nodes/dgx-01
expect_in "node inventory kept" "$tmp/out" '"resourceName":"nvidia.com/gpu"'
req "list nodes" 200 GET /api/v1/nodes
expect_in "list nodes item" "$tmp/out" '"kind":"NodeList"'
req "nodes are not namespaced" 404 GET /api/v1/namespaces/default/nodes/dgx-01

# kill -9 and restart on the same data directory: acknowledged state is all there.
req "list before the crash" 200 GET /api/v1/pods
before=$(version_of "$tmp/out")
stop_server KILL
start_server second
req "keeper survives kill -9" 200 GET "$pods/keeper"
expect_in "keeper keeps its version" "$tmp/out" '"resourceVersion":"'"$keeper_rv"'"'
req "deleted pod stays deleted" 404 GET "$pods/ai-training"
req "node survives kill -9" 200 GET /api/v1/nodes/dgx-01
req "create after restart" 201 POST "$pods" "$tmp/pod.json"
after=$(version_of "$tmp/out")
[[ "$after" -gt "$before" ]] || { echo "FAIL version $after after restart not above $before"; failures=$((failures + 1)); }

# kubectl sends no token over plain HTTP: 08-kubectl.sh drives it over TLS.

# SIGTERM: a graceful stop that closes the store and exits 0.
kill -TERM "$server_pid"
rc=0
wait "$server_pid" || rc=$?
server_pid=
[[ $rc -eq 0 ]] || { echo "FAIL the server exited $rc on SIGTERM:"; cat "$tmp/second.log"; failures=$((failures + 1)); }
expect_in "stop logged" "$tmp/second.log" "stopping"
finish "server"
