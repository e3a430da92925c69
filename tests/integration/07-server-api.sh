#!/usr/bin/env bash
# xpool server, the API beyond plain CRUD, driven with curl: watch streams (resume, 410 Gone,
# timeoutSeconds, selectors that turn MODIFIED into ADDED/DELETED), PATCH in its three formats,
# the status subresource, pods/binding and pods/log, Namespaces (system ones, cascade), Events
# and Leases, label and field selectors, Tables, fieldValidation=Strict, dryRun=All, OpenAPI v3
# and group discovery.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid=
base=

trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

# Every request carries the admin token the server writes into its kubeconfig (plain HTTP here).
token=
curl() {
  if [[ -n "$token" ]]; then command curl -H "Authorization: Bearer $token" "$@"; else command curl "$@"; fi
}

start_server() { # log name: starts on a free port and waits (bounded) until /version answers
  local log=$tmp/$1.log deadline=$((SECONDS + 60)) port=
  : >"$log" # before the server starts: the wait below reads it at once
  # API semantics (versions, event sequences) without the scheduling loop's writes
  "$xpool" server --listen 127.0.0.1:0 --no-tls --no-scheduler --data-dir "$data" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    port=$(sed -n 's|.*xpool server listening on http://127\.0\.0\.1:\([0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$port" ]] && curl -fsS -o /dev/null "http://127.0.0.1:$port/version" 2>/dev/null; then
      base=http://127.0.0.1:$port
      token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 60 s:"; cat "$log"; exit 1
}

# req name, expected HTTP code, method, path [, body file [, content type [, accept]]]: the
# answer in $tmp/out, which must be JSON (Content-Type application/json), with the expected code.
req() {
  local name=$1 want=$2 method=$3 path=$4 body=${5:-} type=${6:-application/json} accept=${7:-} got
  local args=(-sS -X "$method" -o "$tmp/out" -D "$tmp/headers" -w '%{http_code}' --max-time 20)
  [[ -n "$body" ]] && args+=(-H "Content-Type: $type" --data-binary "@$body")
  [[ -n "$accept" ]] && args+=(-H "Accept: $accept")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
  grep -qi '^content-type: application/json' "$tmp/headers" ||
    { echo "FAIL $name: not application/json:"; cat "$tmp/headers"; failures=$((failures + 1)); }
}

# patch name, expected HTTP code, path, patch type (json, merge, strategic-merge), patch text
patch() {
  printf '%s' "$5" >"$tmp/patch.json"
  req "$1" "$2" PATCH "$3" "$tmp/patch.json" "application/$4-patch+json"
}

# body text: writes text to $tmp/body.json (for req)
body() { printf '%s' "$1" >"$tmp/body.json"; }

version_of() { # file: the first metadata.resourceVersion in it
  grep -o '"resourceVersion":"[0-9]*"' "$1" | awk 'NR == 1' | cut -d'"' -f4
}

not_in() { # name, file, text: text must not be in the file
  if grep -qF -- "$3" "$2"; then
    echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1))
  fi
}

# watch_types name, path, expected event types (space-separated, in order): a bounded watch
# (the path carries timeoutSeconds) whose event types must be exactly these; events in $tmp/events
watch_types() {
  local name=$1 path=$2 want=$3 got
  curl -sS -N --max-time 20 -o "$tmp/events" "$base$path" || true
  got=$({ grep -o '^{"type":"[A-Z]*"' "$tmp/events" || true; } | cut -d'"' -f4 | tr '\n' ' ' | sed 's/ $//')
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: events '$got', expected '$want':"; cat "$tmp/events"; failures=$((failures + 1))
  fi
}

pods=/api/v1/namespaces/default/pods
leases=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
table='application/json;as=Table;v=v1;g=meta.k8s.io,application/json'
check "convert the seed pod" 0 "$xpool" convert -o json -f "${XPOOL_TEST_DATA:?}/manifests/seed-pod.yaml"
tr -d '\n' <"$tmp/out" | sed 's/  */ /g; s/": /":/g; s/{ /{/g; s/ }/}/g; s/\[ /[/g; s/ \]/]/g; s/, /,/g' >"$tmp/pod.json"
check "convert the node" 0 "$xpool" convert -o json -f "${XPOOL_TEST_DATA:?}/manifests/gpu-node.yaml"
cp "$tmp/out" "$tmp/node.json"
pod_named() { sed "s/\"name\":\"ai-training\"/\"name\":\"$1\"/" "$tmp/pod.json"; }

start_server api

# ---- discovery, OpenAPI v3 ----------------------------------------------------------------------
req "apis" 200 GET /apis
expect_in "apis lists apps first, as Kubernetes orders them" "$tmp/out" '"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps",'
expect_in "then authentication" "$tmp/out" '"version":"v1"}},{"name":"authentication.k8s.io",'
expect_in "apis lists coordination" "$tmp/out" '{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}'
req "api group" 200 GET /apis/coordination.k8s.io
expect_in "api group document" "$tmp/out" '"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}]'
expect_in "api group kind" "$tmp/out" '"kind":"APIGroup"'
req "unknown api group" 404 GET /apis/widgets.example.com
expect_in "unknown api group reason" "$tmp/out" '"reason":"NotFound"'
req "group resources" 200 GET /apis/coordination.k8s.io/v1
expect_in "group resources leases" "$tmp/out" '"groupVersion":"coordination.k8s.io/v1","resources":[{"name":"leases","singularName":"lease","namespaced":true,"kind":"Lease","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]'
req "core resources" 200 GET /api/v1
for sub in pods/status pods/binding pods/log nodes/status namespaces/status; do
  expect_in "core resources list $sub" "$tmp/out" "\"name\":\"$sub\""
done
expect_in "core resources events" "$tmp/out" '"name":"events","singularName":"event","namespaced":true,"kind":"Event"'
expect_in "core resources namespaces" "$tmp/out" '"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace"'
req "openapi index" 200 GET /openapi/v3
expect_in "openapi index core" "$tmp/out" '"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash='
expect_in "openapi index group" "$tmp/out" '"apis/coordination.k8s.io/v1":{"serverRelativeURL":"/openapi/v3/apis/coordination.k8s.io/v1?hash='
req "openapi core" 200 GET /openapi/v3/api/v1
expect_in "openapi core version" "$tmp/out" '"openapi":"3.0.0"'
expect_in "openapi core pods path" "$tmp/out" '"/api/v1/namespaces/{namespace}/pods":{'
expect_in "openapi core gvk" "$tmp/out" '"x-kubernetes-group-version-kind":{"group":"","kind":"Pod","version":"v1"}'
expect_in "openapi advertises fieldValidation" "$tmp/out" '"in":"query","name":"fieldValidation"'
req "openapi group" 200 GET /openapi/v3/apis/coordination.k8s.io/v1
expect_in "openapi group leases path" "$tmp/out" '"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases":{'
not_in "openapi group has no pods" "$tmp/out" '"/api/v1/namespaces/{namespace}/pods"'
req "openapi unknown group" 404 GET /openapi/v3/apis/widgets.example.com/v1

# ---- namespaces: the system ones, creates into missing ones, cascade ----------------------------
req "list namespaces" 200 GET /api/v1/namespaces
expect_in "namespace list kind" "$tmp/out" '"kind":"NamespaceList"'
grep -o '"name":"[a-z-]*"' "$tmp/out" >"$tmp/namespaces"
expect_count "four namespaces at first" "$tmp/namespaces" 4 '"name":"'
for ns in default kube-system kube-public kube-node-lease; do
  expect_count "system namespace $ns" "$tmp/namespaces" 1 "\"name\":\"$ns\""
  req "get namespace $ns" 200 GET "/api/v1/namespaces/$ns"
  expect_in "namespace $ns is Active" "$tmp/out" '"status":{"phase":"Active"}'
  expect_in "namespace $ns label" "$tmp/out" "\"labels\":{\"kubernetes.io/metadata.name\":\"$ns\"}"
  req "delete system namespace $ns" 403 DELETE "/api/v1/namespaces/$ns"
  expect_in "delete $ns forbidden" "$tmp/out" "\"message\":\"namespaces \\\"$ns\\\" is forbidden: this namespace may not be deleted\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"$ns\",\"kind\":\"namespaces\"},\"code\":403"
done
req "dry-run delete of a system namespace" 403 DELETE "/api/v1/namespaces/kube-system?dryRun=All"
req "create in a missing namespace" 404 POST /api/v1/namespaces/team/pods "$tmp/pod.json"
expect_in "missing namespace status" "$tmp/out" '"message":"namespaces \"team\" not found","reason":"NotFound","details":{"name":"team","kind":"namespaces"},"code":404'
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team","labels":{"tier":"gold"}}}' >"$tmp/team.json"
req "create namespace" 201 POST /api/v1/namespaces "$tmp/team.json"
expect_in "new namespace is Active" "$tmp/out" '"status":{"phase":"Active"}'
expect_in "new namespace finalizer" "$tmp/out" '"spec":{"finalizers":["kubernetes"]}'
req "create namespace again" 409 POST /api/v1/namespaces "$tmp/team.json"
expect_in "namespace already exists" "$tmp/out" '"message":"namespaces \"team\" already exists","reason":"AlreadyExists"'
req "create a pod in the new namespace" 201 POST /api/v1/namespaces/team/pods "$tmp/pod.json"
expect_in "pod in the new namespace" "$tmp/out" '"namespace":"team"'
pod_named helper >"$tmp/helper.json"
req "second pod in the new namespace" 201 POST /api/v1/namespaces/team/pods "$tmp/helper.json"
body '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"},"spec":{"holderIdentity":"a"}}'
req "a lease in the new namespace" 201 POST /apis/coordination.k8s.io/v1/namespaces/team/leases "$tmp/body.json"
req "namespace status subresource" 200 GET /api/v1/namespaces/team/status
expect_in "namespace status get" "$tmp/out" '"name":"team"'
req "delete the namespace" 200 DELETE /api/v1/namespaces/team
expect_in "deleted namespace returned" "$tmp/out" '"name":"team"'
req "the namespace is gone" 404 GET /api/v1/namespaces/team
req "its pods are gone" 200 GET /api/v1/namespaces/team/pods
expect_in "its pods list empty" "$tmp/out" '"items":[]'
req "its pod is gone" 404 GET /api/v1/namespaces/team/pods/ai-training
req "its leases are gone" 200 GET /apis/coordination.k8s.io/v1/namespaces/team/leases
expect_in "its leases list empty" "$tmp/out" '"items":[]'
req "create into the deleted namespace" 404 POST /api/v1/namespaces/team/pods "$tmp/pod.json"
expect_in "deleted namespace not found" "$tmp/out" '"message":"namespaces \"team\" not found"'
req "delete a missing namespace" 404 DELETE /api/v1/namespaces/team
expect_in "missing namespace on delete" "$tmp/out" '"message":"namespaces \"team\" not found","reason":"NotFound"'
req "namespace created again after deletion" 201 POST /api/v1/namespaces "$tmp/team.json"
req "the recreated namespace is empty" 200 GET /api/v1/namespaces/team/pods
expect_in "recreated namespace empty" "$tmp/out" '"items":[]'

# ---- pod creates: status reset to Pending ----------------------------------------------------
sed 's/}}$/},"status":{"phase":"Running","podIP":"10.1.2.3"}}/' "$tmp/pod.json" >"$tmp/running.json"
grep -q '"phase":"Running"' "$tmp/running.json" || { echo "FAIL test setup: running.json"; exit 1; }
req "create with a status" 201 POST "$pods" "$tmp/running.json"
expect_in "create resets status" "$tmp/out" '"status":{"phase":"Pending","qosClass":"BestEffort"}'
not_in "create drops the podIP" "$tmp/out" '10.1.2.3'
rv_created=$(version_of "$tmp/out")
req "get after create" 200 GET "$pods/ai-training"
expect_in "stored status is Pending" "$tmp/out" '"status":{"phase":"Pending","qosClass":"BestEffort"}'
cp "$tmp/out" "$tmp/stored.json"

# ---- fieldValidation=Strict, dryRun=All --------------------------------------------------------
pod_named strict | sed 's/"image":/"imagePullPolicyX":"Always","image":/' >"$tmp/unknown.json"
req "unknown field, no validation asked" 201 POST "$pods?dryRun=All" "$tmp/unknown.json"
req "unknown field, Strict" 400 POST "$pods?fieldValidation=Strict" "$tmp/unknown.json"
expect_in "strict names the field" "$tmp/out" '"message":"Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].imagePullPolicyX\"","reason":"BadRequest"'
expect_in "strict names the object" "$tmp/out" '"details":{"name":"strict","kind":"pods"}'
req "strict created nothing" 404 GET "$pods/strict"
req "unknown field, Warn" 201 POST "$pods?fieldValidation=Warn&dryRun=All" "$tmp/unknown.json"
req "bad fieldValidation" 400 POST "$pods?fieldValidation=Loud" "$tmp/unknown.json"
expect_in "bad fieldValidation message" "$tmp/out" '"message":"fieldValidation: Invalid value: \"Loud\": expected Ignore, Warn or Strict","reason":"BadRequest"'
sed 's/"metadata":{/"metadata":{"bogus":1,/' "$tmp/stored.json" >"$tmp/strict-put.json"
req "strict update" 400 PUT "$pods/ai-training?fieldValidation=Strict" "$tmp/strict-put.json"
expect_in "strict update names the field" "$tmp/out" 'strict decoding error: unknown field \"metadata.bogus\"'
patch "strict patch" 400 "$pods/ai-training?fieldValidation=Strict" merge '{"spec":{"bogus":true}}'
expect_in "strict patch names the field" "$tmp/out" 'strict decoding error: unknown field \"spec.bogus\"'

pod_named dry >"$tmp/dry.json"
req "dry-run create" 201 POST "$pods?dryRun=All" "$tmp/dry.json"
expect_in "dry-run create answers the object" "$tmp/out" '"name":"dry","namespace":"default","uid":"'
req "dry-run create stored nothing" 404 GET "$pods/dry"
req "bad dryRun" 400 POST "$pods?dryRun=Yes" "$tmp/dry.json"
expect_in "bad dryRun message" "$tmp/out" '"message":"dryRun: Invalid value: \"Yes\": the only dry-run mode is All","reason":"BadRequest"'
sed 's/"metadata":{/"metadata":{"labels":{"dry":"run"},/' "$tmp/stored.json" >"$tmp/dry-put.json"
req "dry-run update" 200 PUT "$pods/ai-training?dryRun=All" "$tmp/dry-put.json"
expect_in "dry-run update answers the change" "$tmp/out" '"labels":{"dry":"run"}'
patch "dry-run patch" 200 "$pods/ai-training?dryRun=All" merge '{"metadata":{"labels":{"dry":"patch"}}}'
expect_in "dry-run patch answers the change" "$tmp/out" '"labels":{"dry":"patch"}'
req "dry-run delete" 200 DELETE "$pods/ai-training?dryRun=All"
req "after the dry runs" 200 GET "$pods/ai-training"
not_in "dry runs changed nothing" "$tmp/out" '"dry"'
expect_in "dry runs kept the version" "$tmp/out" "\"resourceVersion\":\"$rv_created\""

# ---- PATCH -----------------------------------------------------------------------------------
patch "merge patch" 200 "$pods/ai-training" merge '{"metadata":{"labels":{"team":"ml","tier":"a"}}}'
expect_in "merge patch applied" "$tmp/out" '"labels":{"team":"ml","tier":"a"}'
rv=$(version_of "$tmp/out")
patch "a patch that changes nothing" 200 "$pods/ai-training" merge '{"metadata":{"labels":{"team":"ml"}}}'
expect_in "a no-op patch writes nothing" "$tmp/out" "\"resourceVersion\":\"$rv\""
patch "merge patch removes with null" 200 "$pods/ai-training" merge '{"metadata":{"labels":{"tier":null}}}'
expect_in "merge patch null removes" "$tmp/out" '"labels":{"team":"ml"}'
patch "json patch" 200 "$pods/ai-training" json '[{"op":"add","path":"/metadata/annotations","value":{"note":"x"}},{"op":"replace","path":"/spec/containers/0/image","value":"ai-framework:v2"}]'
expect_in "json patch annotation" "$tmp/out" '"annotations":{"note":"x"}'
expect_in "json patch image" "$tmp/out" '"image":"ai-framework:v2"'
patch "json patch failed test" 422 "$pods/ai-training" json '[{"op":"test","path":"/spec/containers/0/image","value":"other"}]'
expect_in "json patch test failure reason" "$tmp/out" '"reason":"Invalid"'
expect_in "json patch test failure message" "$tmp/out" '"message":"the server rejected our request due to an error in our request"'
patch "json patch bad path" 422 "$pods/ai-training" json '[{"op":"remove","path":"/spec/nothing/here"}]'
patch "json patch not an array" 400 "$pods/ai-training" json '{"op":"add"}'
expect_in "json patch not an array: Go's words, as kube-apiserver" "$tmp/out" '"reason":"BadRequest"'
patch "strategic patch merges containers by name" 200 "$pods/ai-training" strategic-merge '{"spec":{"containers":[{"name":"trainer","image":"ai-framework:v3"}]}}'
expect_in "strategic patch changed the image" "$tmp/out" '{"name":"trainer","image":"ai-framework:v3",'
expect_in "strategic patch kept the limits" "$tmp/out" '"limits":{"nvidia.com/gpu":"1","vendor.com/npu":"2"}'
# Kubernetes' pod-update rules: a container is neither added nor removed, by any patch.
patch "strategic patch adding a container" 422 "$pods/ai-training" strategic-merge '{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}'
expect_in "adding a container is forbidden" "$tmp/out" '"message":"Pod \"ai-training\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"'
patch "strategic delete directive" 422 "$pods/ai-training" strategic-merge '{"spec":{"containers":[{"name":"trainer","$patch":"delete"}]}}'
expect_in "the delete directive removed the container" "$tmp/out" 'spec.containers: Required value'
patch "merge patch replaces lists" 422 "$pods/ai-training" merge '{"spec":{"containers":[{"name":"trainer","image":"ai-framework:v4"}]}}'
expect_in "merge patch list replaced" "$tmp/out" 'spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`'
expect_in "the diff names the dropped resources" "$tmp/out" 'Resources: '
patch "strategic patch of the image" 200 "$pods/ai-training" strategic-merge '{"spec":{"containers":[{"name":"trainer","image":"ai-framework:v4"}]}}'
printf '{}' >"$tmp/patch.json"
req "patch as application/json" 415 PATCH "$pods/ai-training" "$tmp/patch.json" application/json
expect_in "415 message" "$tmp/out" '"message":"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json","reason":"UnsupportedMediaType"'
expect_in "415 code" "$tmp/out" '"code":415'
req "patch as text" 415 PATCH "$pods/ai-training" "$tmp/patch.json" text/plain
patch "patch malformed JSON" 400 "$pods/ai-training" merge '{"metadata":'
expect_in "patch malformed JSON reason" "$tmp/out" '"reason":"BadRequest"'
patch "patch missing" 404 "$pods/nope" merge '{}'
expect_in "patch missing message" "$tmp/out" '"message":"pods \"nope\" not found"'
patch "patch invalid result" 422 "$pods/ai-training" merge '{"spec":{"containers":[{"name":"trainer","image":"x","resources":{"limits":{"cpu":"lots"}}}]}}'
expect_in "patch invalid names the field" "$tmp/out" 'spec.containers[0].resources.limits[cpu]: \"lots\" is not a valid quantity'
patch "patch renames" 400 "$pods/ai-training" merge '{"metadata":{"name":"other"}}'
expect_in "patch rename message" "$tmp/out" 'does not match the name on the URL'
req "current" 200 GET "$pods/ai-training"
rv=$(version_of "$tmp/out")
patch "patch with a stale version" 409 "$pods/ai-training" merge "{\"metadata\":{\"resourceVersion\":\"$rv_created\",\"labels\":{\"late\":\"1\"}}}"
expect_in "stale patch conflict" "$tmp/out" '"message":"Operation cannot be fulfilled on pods \"ai-training\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict"'
patch "patch with the current version" 200 "$pods/ai-training" merge "{\"metadata\":{\"resourceVersion\":\"$rv\",\"labels\":{\"late\":\"1\"}}}"
expect_in "pinned patch applied" "$tmp/out" '"late":"1"'
patch "strategic patch with a stale version" 409 "$pods/ai-training" strategic-merge "{\"metadata\":{\"resourceVersion\":\"$rv\"}}"
# Concurrent patches without a version: each retries on conflict, none is lost.
patchers=()
for i in $(seq 1 12); do
  printf '{"metadata":{"labels":{"c%d":"v"}}}' "$i" >"$tmp/cpatch$i.json"
  curl -sS -o /dev/null -w '%{http_code}\n' -X PATCH -H 'Content-Type: application/merge-patch+json' \
    --data-binary "@$tmp/cpatch$i.json" "$base$pods/ai-training" >"$tmp/cpatch$i.code" &
  patchers+=($!)
done
wait "${patchers[@]}" || true
cat "$tmp"/cpatch*.code >"$tmp/codes"
expect_count "concurrent patches all 200" "$tmp/codes" 12 200
req "after concurrent patches" 200 GET "$pods/ai-training"
for i in $(seq 1 12); do expect_in "concurrent patch $i kept" "$tmp/out" "\"c$i\":\"v\""; done

# ---- the status subresource -----------------------------------------------------------------
patch "patch the main resource with a status" 200 "$pods/ai-training" merge '{"metadata":{"labels":{"s":"1"}},"status":{"phase":"Failed"}}'
expect_in "main patch keeps the stored status" "$tmp/out" '"status":{"phase":"Pending","qosClass":"BestEffort"}'
expect_in "main patch changed the labels" "$tmp/out" '"s":"1"'
patch "patch status" 200 "$pods/ai-training/status" merge '{"metadata":{"labels":{"s":"2"}},"status":{"phase":"Running","podIP":"10.0.0.7"}}'
expect_in "status patch changed podIP" "$tmp/out" '"podIP":"10.0.0.7"'
expect_in "status patch changed the phase" "$tmp/out" '"phase":"Running"'
expect_in "status patch kept the labels" "$tmp/out" '"s":"1"'
not_in "status patch ignored the labels" "$tmp/out" '"s":"2"'
# The agent's status write (the whole status, replacing): the status alone changes, the rest of
# the pod (ownership too: a status is no field of it) stays as stored, to the byte.
req "before the agent's status write" 200 GET "$pods/ai-training"
cp "$tmp/out" "$tmp/before-status.json"
patch "the agent's status write" 200 "$pods/ai-training/status" strategic-merge '{"status":{"$patch":"replace","phase":"Running","podIP":"10.0.0.7","conditions":[{"type":"Ready","status":"True"}]}}'
python3 - "$tmp/before-status.json" "$tmp/out" <<'EOF' || { echo "FAIL a status write changed more than the status"; failures=$((failures + 1)); }
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
for o in (before, after):
    o["metadata"].pop("resourceVersion")
status = after.pop("status")
before.pop("status")
assert json.dumps(before) == json.dumps(after), (before, after)
assert status["phase"] == "Running" and status["qosClass"] == "BestEffort", status
assert [c["type"] for c in status["conditions"]] == ["Ready"] and "hostIP" not in status, status
EOF
# A status write that moves the phase alone is a write (the server sees so without decoding the
# stored pod again); the same write again is none.
rv=$(version_of "$tmp/out")
patch "a status write of the phase alone" 200 "$pods/ai-training/status" merge '{"status":{"phase":"Pending"}}'
expect_in "the phase moved" "$tmp/out" '"phase":"Pending"'
not_in "the phase write is a new version" "$tmp/out" "\"resourceVersion\":\"$rv\""
rv=$(version_of "$tmp/out")
patch "the same phase again" 200 "$pods/ai-training/status" merge '{"status":{"phase":"Pending"}}'
expect_in "the same phase again writes nothing" "$tmp/out" "\"resourceVersion\":\"$rv\""
patch "the phase back" 200 "$pods/ai-training/status" merge '{"status":{"phase":"Running"}}'
not_in "the phase back is a new version" "$tmp/out" "\"resourceVersion\":\"$rv\""
req "get status" 200 GET "$pods/ai-training/status"
expect_in "status stored" "$tmp/out" '"phase":"Running"'
cp "$tmp/out" "$tmp/status.json"
sed 's/"podIP":"10.0.0.7"/"podIP":"10.0.0.8"/; s/"image":"ai-framework:v4"/"image":"changed"/' "$tmp/status.json" >"$tmp/status-put.json"
req "put status" 200 PUT "$pods/ai-training/status" "$tmp/status-put.json"
expect_in "put status changed podIP" "$tmp/out" '"podIP":"10.0.0.8"'
expect_in "put status kept the spec" "$tmp/out" '"image":"ai-framework:v4"'
cp "$tmp/out" "$tmp/status.json"
sed 's/"podIP":"10.0.0.8"/"podIP":"10.9.9.9"/; s/"image":"ai-framework:v4"/"image":"ai-framework:v5"/' "$tmp/status.json" >"$tmp/main-put.json"
req "put main resource" 200 PUT "$pods/ai-training" "$tmp/main-put.json"
expect_in "put main changed the spec" "$tmp/out" '"image":"ai-framework:v5"'
expect_in "put main kept the status" "$tmp/out" '"podIP":"10.0.0.8"'
expect_in "put main kept the phase" "$tmp/out" '"phase":"Running"'
req "status of a missing pod" 404 GET "$pods/nope/status"
req "put status stale" 409 PUT "$pods/ai-training/status" "$tmp/status-put.json"
req "create node" 201 POST /api/v1/nodes "$tmp/node.json"
patch "node status patch" 200 /api/v1/nodes/dgx-01/status merge '{"spec":{"unschedulable":true},"status":{"capacity":{"cpu":"8"}}}'
expect_in "node status patched" "$tmp/out" '"cpu":"8"'
not_in "node status patch ignored the spec" "$tmp/out" '"unschedulable":true'
patch "node main patch" 200 /api/v1/nodes/dgx-01 merge '{"spec":{"unschedulable":true},"status":{"capacity":{"cpu":"99"}}}'
expect_in "node main patch changed the spec" "$tmp/out" '"unschedulable":true'
not_in "node main patch kept the status" "$tmp/out" '"cpu":"99"'
patch "namespace main patch keeps its status" 200 /api/v1/namespaces/team merge '{"metadata":{"labels":{"x":"y"}},"status":{"phase":"Terminating"}}'
expect_in "namespace status kept" "$tmp/out" '"status":{"phase":"Active"}'
patch "events have no status subresource" 404 /api/v1/namespaces/default/events/e1/status merge '{}'

# ---- binding and log -------------------------------------------------------------------------
pod_named unbound >"$tmp/unbound.json"
req "create unbound pod" 201 POST "$pods" "$tmp/unbound.json"
req "log of an unscheduled pod" 400 GET "$pods/unbound/log"
expect_in "log unscheduled message" "$tmp/out" '"message":"pod \"unbound\" has no node yet: its logs exist once it is scheduled and started","reason":"BadRequest"'
req "log of a missing pod" 404 GET "$pods/nope/log"
body '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"unbound","annotations":{"xpool.io/devices":"gpu0"}},"target":{"apiVersion":"v1","kind":"Node","name":"dgx-01"}}'
req "bind" 201 POST "$pods/unbound/binding" "$tmp/body.json"
expect_in "bind answers Success" "$tmp/out" '"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201'
req "bound pod" 200 GET "$pods/unbound"
expect_in "binding set nodeName" "$tmp/out" '"nodeName":"dgx-01"'
expect_in "binding copied the annotations" "$tmp/out" '"annotations":{"xpool.io/devices":"gpu0"}'
expect_in "binding set PodScheduled" "$tmp/out" '"type":"PodScheduled","status":"True"'
expect_in "binding kept the phase" "$tmp/out" '"phase":"Pending"'
req "bind again" 409 POST "$pods/unbound/binding" "$tmp/body.json"
expect_in "bind again message" "$tmp/out" '"message":"Operation cannot be fulfilled on pods/binding \"unbound\": pod unbound is already assigned to node \"dgx-01\"","reason":"Conflict"'
body '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"nope"},"target":{"kind":"Node","name":"dgx-01"}}'
req "bind a missing pod" 404 POST "$pods/nope/binding" "$tmp/body.json"
body '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"ai-training"},"target":{"kind":"Node"}}'
req "bind without a node" 422 POST "$pods/ai-training/binding" "$tmp/body.json"
expect_in "bind without a node reason" "$tmp/out" '"reason":"Invalid"'
body '[1]'
req "bind with a non-object" 400 POST "$pods/ai-training/binding" "$tmp/body.json"
req "log of a bound pod, no agent" 503 GET "$pods/unbound/log"
expect_in "log no agent message" "$tmp/out" '"message":"the server has no node token for node \"dgx-01\" to sign the log request to its agent with: create one with `xpool token create --node dgx-01`","reason":"ServiceUnavailable"'
pod_named prebound | sed 's/"spec":{/"spec":{"nodeName":"dgx-01",/' >"$tmp/prebound.json"
req "create a pod with nodeName" 201 POST "$pods" "$tmp/prebound.json"
body '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"prebound"},"target":{"kind":"Node","name":"dgx-01"}}'
req "bind a pod created with nodeName" 409 POST "$pods/prebound/binding" "$tmp/body.json"

# ---- label and field selectors ----------------------------------------------------------------
req "label selector =" 200 GET "$pods?labelSelector=team%3Dml"
expect_count "label selector = matches one" "$tmp/out" 1 '"name":"ai-training"'
not_in "label selector = drops unbound" "$tmp/out" '"name":"unbound"'
req "label selector !=" 200 GET "$pods?labelSelector=team!%3Dml"
expect_in "label selector != keeps unbound" "$tmp/out" '"name":"unbound"'
not_in "label selector != drops ai-training" "$tmp/out" '"name":"ai-training"'
req "label selector in" 200 GET "$pods?labelSelector=team%20in%20(ml,ops)"
expect_in "label selector in" "$tmp/out" '"name":"ai-training"'
req "label selector exists" 200 GET "$pods?labelSelector=!team"
not_in "label selector !exists" "$tmp/out" '"name":"ai-training"'
req "label selector bad" 400 GET "$pods?labelSelector=team%3D%3D%3Dml"
expect_in "label selector bad message" "$tmp/out" '"message":"labelSelector: \"team===ml\": expected a value after \"==\" but found \"=\" at position 6","reason":"BadRequest"'
req "field selector nodeName" 200 GET "$pods?fieldSelector=spec.nodeName%3Ddgx-01"
expect_in "field selector nodeName keeps unbound" "$tmp/out" '"name":"unbound"'
not_in "field selector nodeName drops ai-training" "$tmp/out" '"name":"ai-training"'
req "field selector name" 200 GET "$pods?fieldSelector=metadata.name%3Dai-training"
expect_count "field selector name" "$tmp/out" 1 '"uid"'
req "field selector phase" 200 GET "$pods?fieldSelector=status.phase%3DRunning"
expect_in "field selector phase" "$tmp/out" '"name":"ai-training"'
not_in "field selector phase drops Pending" "$tmp/out" '"name":"unbound"'
req "field selector unsupported" 400 GET "$pods?fieldSelector=spec.bogus%3Dx"
expect_in "field selector unsupported message" "$tmp/out" '"message":"field label not supported: spec.bogus","reason":"BadRequest"'
req "both selectors" 200 GET "/api/v1/pods?labelSelector=team%3Dml&fieldSelector=metadata.namespace%3Ddefault"
expect_in "both selectors across namespaces" "$tmp/out" '"name":"ai-training"'

# ---- Tables ----------------------------------------------------------------------------------
req "table list" 200 GET "$pods" "" "" "$table"
expect_in "table kind" "$tmp/out" '"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"'
expect_in "table columns" "$tmp/out" '"columnDefinitions":[{"name":"Name","type":"string","format":"name"'
expect_in "table row" "$tmp/out" '"cells":["ai-training","0/1","Running","0",'
expect_in "table metadata object" "$tmp/out" '"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"ai-training"'
req "table includeObject=None" 200 GET "$pods?includeObject=None" "" "" "$table"
not_in "table None has no object" "$tmp/out" '"object"'
req "table includeObject=Object" 200 GET "$pods?includeObject=Object" "" "" "$table"
expect_in "table Object carries the pod" "$tmp/out" '"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ai-training"'
req "table includeObject bad" 400 GET "$pods?includeObject=All" "" "" "$table"
expect_in "table includeObject bad message" "$tmp/out" '"message":"includeObject: Invalid value: \"All\": expected None, Metadata or Object","reason":"BadRequest"'
req "table get" 200 GET "$pods/unbound" "" "" "$table"
expect_count "table get one row" "$tmp/out" 1 '"cells":["unbound",'
req "table with a selector" 200 GET "$pods?labelSelector=team%3Dml" "" "" "$table"
not_in "table selector drops unbound" "$tmp/out" '"cells":["unbound"'
req "table of nodes" 200 GET /api/v1/nodes "" "" "$table"
expect_in "table node row" "$tmp/out" '"cells":["dgx-01",'
req "plain JSON without the table accept" 200 GET "$pods" "" "" "application/json"
expect_in "plain list" "$tmp/out" '"kind":"PodList"'

# ---- Events and Leases -----------------------------------------------------------------------
req "uid of ai-training" 200 GET "$pods/ai-training"
uid=$(grep -o '"uid":"[^"]*"' "$tmp/out" | head -1 | cut -d'"' -f4)
body "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"ai-training.1\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"default\",\"name\":\"ai-training\",\"uid\":\"$uid\"},\"reason\":\"Scheduled\",\"message\":\"assigned\",\"type\":\"Normal\",\"count\":1,\"source\":{\"component\":\"test\"}}"
req "create event" 201 POST /api/v1/namespaces/default/events "$tmp/body.json"
expect_in "event stored" "$tmp/out" '"reason":"Scheduled"'
req "get event" 200 GET /api/v1/namespaces/default/events/ai-training.1
expect_in "event involvedObject" "$tmp/out" "\"uid\":\"$uid\""
req "list events" 200 GET /api/v1/namespaces/default/events
expect_in "event list kind" "$tmp/out" '"kind":"EventList"'
req "events by involved object" 200 GET "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dai-training,involvedObject.kind%3DPod"
expect_in "events by involved object found" "$tmp/out" '"name":"ai-training.1"'
req "events by another object" 200 GET "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dunbound"
expect_in "events by another object empty" "$tmp/out" '"items":[]'
req "events across namespaces" 200 GET /api/v1/events
expect_in "events across namespaces" "$tmp/out" '"name":"ai-training.1"'
req "event in a missing namespace" 404 POST /api/v1/namespaces/nowhere/events "$tmp/body.json"
req "delete event" 200 DELETE /api/v1/namespaces/default/events/ai-training.1

body '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"dgx-01"},"spec":{"holderIdentity":"dgx-01","leaseDurationSeconds":40}}'
req "create lease" 201 POST "$leases" "$tmp/body.json"
expect_in "lease apiVersion" "$tmp/out" '"apiVersion":"coordination.k8s.io/v1","kind":"Lease"'
expect_in "lease namespace" "$tmp/out" '"namespace":"kube-node-lease"'
cp "$tmp/out" "$tmp/lease.json"
req "get lease" 200 GET "$leases/dgx-01"
expect_in "lease spec" "$tmp/out" '"holderIdentity":"dgx-01","leaseDurationSeconds":40'
sed 's/"leaseDurationSeconds":40/"leaseDurationSeconds":41/' "$tmp/lease.json" >"$tmp/lease-put.json"
req "renew lease" 200 PUT "$leases/dgx-01" "$tmp/lease-put.json"
expect_in "lease renewed" "$tmp/out" '"leaseDurationSeconds":41'
patch "patch lease" 200 "$leases/dgx-01" merge '{"spec":{"renewTime":"2026-12-02T19:20:31.123456Z"}}'
expect_in "lease patched" "$tmp/out" '"renewTime":"2026-12-02T19:20:31.123456Z"'
req "list leases" 200 GET "$leases"
expect_in "lease list kind" "$tmp/out" '"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1"'
req "lease under the core group" 404 GET /api/v1/namespaces/kube-node-lease/leases
req "lease with the core apiVersion" 400 POST "$leases" "$tmp/pod.json"
req "lease has no status subresource" 404 GET "$leases/dgx-01/status"

# ---- watch -----------------------------------------------------------------------------------
req "list before the changes" 200 GET "$pods"
rv_list=$(version_of "$tmp/out")
pod_named w1 >"$tmp/w1.json"
req "watched create" 201 POST "$pods" "$tmp/w1.json"
patch "watched patch" 200 "$pods/w1" merge '{"metadata":{"labels":{"watch":"yes"}}}'
patch "watched second patch" 200 "$pods/w1" merge '{"metadata":{"labels":{"other":"1"}}}'
patch "watched leave" 200 "$pods/w1" merge '{"metadata":{"labels":{"watch":"no"}}}'
patch "watched enter" 200 "$pods/w1" merge '{"metadata":{"labels":{"watch":"yes"}}}'
req "watched delete" 200 DELETE "$pods/w1"
watch_types "resume from a list" "$pods?watch=true&resourceVersion=$rv_list&timeoutSeconds=1" \
  "ADDED MODIFIED MODIFIED MODIFIED MODIFIED DELETED"
expect_count "resume: every event is w1" "$tmp/events" 6 '"name":"w1"'
watch_types "resume with a label selector" \
  "$pods?watch=true&resourceVersion=$rv_list&timeoutSeconds=1&labelSelector=watch%3Dyes" \
  "ADDED MODIFIED DELETED ADDED DELETED"
watch_types "resume with the other label" \
  "$pods?watch=true&resourceVersion=$rv_list&timeoutSeconds=1&labelSelector=watch%3Dno" \
  "ADDED DELETED"
watch_types "resume with a field selector" \
  "$pods?watch=true&resourceVersion=$rv_list&timeoutSeconds=1&fieldSelector=metadata.name%3Dw1" \
  "ADDED MODIFIED MODIFIED MODIFIED MODIFIED DELETED"
watch_types "resume in another namespace" \
  "/api/v1/namespaces/team/pods?watch=true&resourceVersion=$rv_list&timeoutSeconds=1" ""
watch_types "resume across namespaces" "/api/v1/pods?watch=true&resourceVersion=$rv_list&timeoutSeconds=1" \
  "ADDED MODIFIED MODIFIED MODIFIED MODIFIED DELETED"
# Resumed with a selector, what matches is judged as of the version resumed from, not as of now.
pod_named w2 >"$tmp/w2.json"
req "create w2" 201 POST "$pods" "$tmp/w2.json"
rv_w2=$(version_of "$tmp/out")
patch "w2 enters" 200 "$pods/w2" merge '{"metadata":{"labels":{"watch":"yes"}}}'
watch_types "resume: an object entering the selection is ADDED" \
  "$pods?watch=true&resourceVersion=$rv_w2&timeoutSeconds=1&labelSelector=watch%3Dyes" "ADDED"
watch_types "resume: an object leaving the selection is DELETED" \
  "$pods?watch=true&resourceVersion=$rv_w2&timeoutSeconds=1&labelSelector=watch!%3Dyes" "DELETED"
req "delete w2" 200 DELETE "$pods/w2"
watch_types "no version: the current state" "$pods?watch=true&timeoutSeconds=1&labelSelector=team%3Dml" "ADDED"
expect_in "current state is ai-training" "$tmp/events" '"name":"ai-training"'
watch_types "version 0: the current state" "$pods?watch=true&resourceVersion=0&timeoutSeconds=1&fieldSelector=metadata.name%3Dunbound" "ADDED"
# HTTP/1.1 streams in chunks and ends with the last one, so the connection serves the next
# request; HTTP/1.0 has no chunks: its stream is the event lines themselves, to the close.
unbound_watch="$pods?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dunbound"
curl -sS --raw --max-time 20 -o "$tmp/raw11" "$base$unbound_watch" -o "$tmp/after11" "$base/version" -w '%{num_connects} ' >"$tmp/connects" || true
[[ $(head -1 "$tmp/raw11" | tr -d '\r') =~ ^[0-9a-fA-F]+$ ]] || { echo "FAIL an HTTP/1.1 watch: not chunked:"; cat "$tmp/raw11"; failures=$((failures + 1)); }
expect_in "the request after a watch on its connection" "$tmp/after11" '"major"'
[[ $(cat "$tmp/connects") == "1 0 " ]] || { echo "FAIL the watch's connection was not kept: connects $(cat "$tmp/connects")"; failures=$((failures + 1)); }
curl -sS --http1.0 --max-time 20 -o "$tmp/raw10" "$base$unbound_watch" || true
[[ $(head -c 9 "$tmp/raw10") == '{"type":"' ]] || { echo "FAIL an HTTP/1.0 watch: not the event lines:"; cat "$tmp/raw10"; failures=$((failures + 1)); }
# A live watch: events while it runs, with a selector. It watches from a list's version, so what
# it shows does not depend on when its request arrives (with no version and a sleep before the
# writes, a request still on its way at load missed the object entering the selection), and it
# runs until its last event arrived.
req "list before the live watch" 200 GET "$pods"
rv_live=$(version_of "$tmp/out")
curl -sS -N --max-time 120 -o "$tmp/live" "$base$pods?watch=true&resourceVersion=$rv_live&labelSelector=live%3Dyes" &
live=$!
pod_named live >"$tmp/live.json"
req "live create" 201 POST "$pods" "$tmp/live.json"
patch "live enter" 200 "$pods/live" merge '{"metadata":{"labels":{"live":"yes"}}}'
patch "live leave" 200 "$pods/live" merge '{"metadata":{"labels":{"live":"no"}}}'
wait_for "live watch: the object leaving the selection arrives" 60 grep -q '^{"type":"DELETED"' "$tmp/live" || true
kill "$live" 2>/dev/null || true
wait "$live" 2>/dev/null || true
got=$({ grep -o '^{"type":"[A-Z]*"' "$tmp/live" || true; } | cut -d'"' -f4 | tr '\n' ' ')
[[ "$got" == "ADDED DELETED " ]] || { echo "FAIL live watch: '$got', expected 'ADDED DELETED'"; cat "$tmp/live"; failures=$((failures + 1)); }
# timeoutSeconds ends a watch: the server closes it (curl's exit 0, well before its own
# --max-time), and not before the 3 s asked for (whole seconds of $SECONDS: at least 2).
start=$SECONDS
rc=0
curl -sS -N --max-time 120 -o "$tmp/timed" "$base$pods?watch=true&timeoutSeconds=3&labelSelector=live%3Dyes" || rc=$?
elapsed=$((SECONDS - start))
[[ $rc -eq 0 && $elapsed -ge 2 ]] || { echo "FAIL timeoutSeconds=3: curl exit $rc after $elapsed s"; failures=$((failures + 1)); }
# A burst from 4 writers at once, watched by 40 (more than the 32 that make a watch gather its
# commits into one send): every watcher sees every create, once, in the log's order
# (resourceVersions rising). The watches stay open until each has its 40 creates or 60 s have
# passed since the last write: on a loaded machine (CI beside other builds) the 40 creates alone
# took over 10 s, and a watch that ended before the last of them is no missed event.
req "list before the burst" 200 GET "$pods"
rv_burst=$(version_of "$tmp/out")
burst_watches=()
for k in $(seq 1 40); do
  curl -sS -N --max-time 300 -o "$tmp/burst.$k" "$base$pods?watch=true&resourceVersion=$rv_burst&timeoutSeconds=240" &
  burst_watches+=($!)
done
sleep 1
writers=()
for w in 0 1 2 3; do
  (for i in 0 1 2 3 4 5 6 7 8 9; do
    pod_named "burst-$w-$i" | curl -sS -o /dev/null --max-time 20 -H 'Content-Type: application/json' --data-binary @- "$base$pods"
  done) &
  writers+=($!)
done
wait "${writers[@]}" || true
burst_all_seen() {
  local k
  for k in $(seq 1 40); do
    [[ $(grep -c '^{"type":"ADDED"' "$tmp/burst.$k" 2>/dev/null) -ge 40 ]] || return 1
  done
}
deadline=$((SECONDS + 60))
until burst_all_seen || [[ $SECONDS -ge $deadline ]]; do sleep 0.2; done
for k in "${burst_watches[@]}"; do
  kill -0 "$k" 2>/dev/null || { echo "FAIL burst watch: a watch ended early"; failures=$((failures + 1)); }
done
kill "${burst_watches[@]}" 2>/dev/null || true
wait "${burst_watches[@]}" 2>/dev/null || true
for k in $(seq 1 40); do
  burst_names=$({ grep '^{"type":"ADDED"' "$tmp/burst.$k" || true; } | grep -o '"name":"burst-[0-9]-[0-9]"' | sort -u | wc -l)
  burst_rvs=$({ grep '^{"type":"' "$tmp/burst.$k" || true; } | grep -o '"resourceVersion":"[0-9]*"' | cut -d'"' -f4)
  [[ $burst_names -eq 40 && $(grep -c '^{"type":"ADDED"' "$tmp/burst.$k") -eq 40 ]] ||
    { echo "FAIL burst watch $k: $burst_names of 40 creates seen:"; cat "$tmp/burst.$k"; failures=$((failures + 1)); }
  [[ -n "$burst_rvs" && "$burst_rvs" == "$(sort -n <<<"$burst_rvs" | uniq)" ]] ||
    { echo "FAIL burst watch $k: versions out of order: $burst_rvs"; failures=$((failures + 1)); }
done
watch_types "table watch" "$pods?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dlive" "ADDED"
curl -sS -N --max-time 20 -H "Accept: $table" -o "$tmp/events" "$base$pods?watch=true&timeoutSeconds=1&labelSelector=team%3Dml"
expect_in "table watch rows" "$tmp/events" '{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1"'
expect_in "table watch cells" "$tmp/events" '"cells":["ai-training",'
req "watch bad version" 400 GET "$pods?watch=true&resourceVersion=abc"
expect_in "watch bad version message" "$tmp/out" '"message":"resourceVersion: Invalid value: \"abc\": expected a resource version this server wrote","reason":"BadRequest"'
req "watch bad timeout" 400 GET "$pods?watch=true&timeoutSeconds=soon"
expect_in "watch bad timeout message" "$tmp/out" '"message":"timeoutSeconds: Invalid value: \"soon\": expected a number of seconds","reason":"BadRequest"'
req "watch bad selector" 400 GET "$pods?watch=true&labelSelector=a%20in"
expect_in "watch bad selector reason" "$tmp/out" '"reason":"BadRequest"'
req "watch bad field selector" 400 GET "$pods?watch=true&fieldSelector=spec.bogus%3D1"
expect_in "watch bad field selector message" "$tmp/out" '"message":"field label not supported: spec.bogus"'
req "watch in a missing namespace" 200 GET "/api/v1/namespaces/nowhere/pods?watch=true&timeoutSeconds=1"

# 410 Gone: push the oldest kept version past rv_list (the store keeps 10000 events, trimmed once 1250 past that).
printf '{"apiVersion":"v1","kind":"Event","metadata":{"generateName":"burst-"},"involvedObject":{"kind":"Pod","namespace":"kube-public","name":"w1"},"reason":"Burst","message":"m","type":"Normal"}' >"$tmp/burst.json"
for i in $(seq 11400); do echo "url = \"$base/api/v1/namespaces/kube-public/events\""; done >"$tmp/burst.cfg"
# in parallel (8 at a time): one at a time it took 30 s of the test
curl -sS -Z --parallel-max 8 -X POST -H 'Content-Type: application/json' --data-binary "@$tmp/burst.json" -K "$tmp/burst.cfg" >/dev/null
req "the burst landed" 200 GET /api/v1/namespaces/kube-public/events
grep -o '"reason":"Burst"' "$tmp/out" >"$tmp/burst.out" || true
expect_count "the burst landed all (generateName retries a taken name)" "$tmp/burst.out" 11400 'Burst'
rv_recent=$(version_of "$tmp/out")
req "watch an expired version" 410 GET "$pods?watch=true&timeoutSeconds=2&resourceVersion=$rv_list"
expect_in "expired reason" "$tmp/out" '"reason":"Expired"'
expect_in "expired code" "$tmp/out" '"code":410'
expect_in "expired says what" "$tmp/out" "events after version $rv_list are no longer kept"
watch_types "resume from a recent list" "/api/v1/namespaces?watch=true&timeoutSeconds=1&resourceVersion=$rv_recent" ""

# SIGTERM ends the open watches and the server.
curl -sS -N --max-time 20 -o /dev/null "$base$pods?watch=true" &
live=$!
sleep 0.3
kill -TERM "$server_pid"
rc=0
wait "$server_pid" || rc=$?
server_pid=
[[ $rc -eq 0 ]] || { echo "FAIL the server exited $rc on SIGTERM:"; cat "$tmp/api.log"; failures=$((failures + 1)); }
wait "$live" || true
finish "server API"
