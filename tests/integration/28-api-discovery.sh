#!/usr/bin/env bash
# Discovery, OpenAPI and the self reviews as stock kubectl 1.32 and Debian's python3-kubernetes
# use them: kubectl explain (from the OpenAPI v3 documents the schema tables generate),
# api-resources with short names, verbs and categories, get all, auth whoami and auth can-i
# (--list too) for the admin, reader and node roles (--as refused: impersonation is not
# served), the reviews' bad input, and server-side apply (managedFields, conflicts,
# --force-conflicts, fields given up; the Update managers of label, annotate, edit, client-side
# apply and a plain patch, and apply's conflicts with them).
# The expected texts are what kubectl 1.32 prints against kube-apiserver 1.32 for the same rules.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
server_pid=

trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

base=
: >"$tmp/server.log" # the background job opens it later: it must exist for the first look
"$xpool" server --listen 127.0.0.1:0 --no-scheduler --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
deadline=$((SECONDS + 60))
while [[ -z "$base" && $SECONDS -lt $deadline ]]; do
  kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$tmp/server.log"; exit 1; }
  base=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$base" ]] || sleep 0.1
done
[[ -n "$base" ]] || { echo "FAIL the server did not start within 60 s"; cat "$tmp/server.log"; exit 1; }

export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=10s)
reader=$("$xpool" token create --reader --subject ci --data-dir "$data" 2>/dev/null)
node=$("$xpool" token create --node n1 --data-dir "$data" 2>/dev/null)
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)

same() { # name, file with the expected text: $tmp/out must hold exactly that text
  if ! diff -u "$2" "$tmp/out" >"$tmp/diff"; then
    echo "FAIL $1: the output differs from what Kubernetes prints:"; cat "$tmp/diff"; failures=$((failures + 1))
  fi
}

# ---- kubectl explain: the schema tables' types with apidoc.txt's descriptions --------------------
check "explain pod.spec.containers.resources" 0 "${kc[@]}" explain pod.spec.containers.resources
printf '%s\n' 'KIND:       Pod' 'VERSION:    v1' '' 'FIELD: resources <ResourceRequirements>' '' '' \
  'DESCRIPTION:' \
  '    The compute resources (CPU, memory, devices) the container asks for, and the' \
  '    most it may use. Cannot be updated.' \
  '    The resources a container requests and the most it may use.' '    ' 'FIELDS:' \
  $'  claims\t<[]ResourceClaim>' \
  '    Names of entries of spec.resourceClaims that this container uses. Alpha:' \
  '    needs the DynamicResourceAllocation feature. Immutable; only for containers.' '' \
  $'  limits\t<map[string]Quantity>' \
  '    The most of each resource the container may use, such as {"cpu": "2",' \
  '    "memory": "1Gi"}.' '' \
  $'  requests\t<map[string]Quantity>' \
  '    The amount of each resource the container needs; the scheduler places the' \
  '    pod where it fits. Defaults to the limits when only those are given. A' \
  '    request may not exceed its limit.' '' '' \
  >"$tmp/want"
same "explain pod.spec.containers.resources" "$tmp/want"
check "explain a required field" 0 "${kc[@]}" explain pod.spec.containers.name
expect_in "explain: required" "$tmp/out" "FIELD: name <string>"
expect_in "explain: required" "$tmp/out" "The container's name: a DNS label (lower-case letters, digits and '-', at"
check "explain nodes --recursive" 0 "${kc[@]}" explain nodes.status --recursive
expect_in "explain nodes: nested" "$tmp/out" $'  nodeInfo\t<NodeSystemInfo>'
expect_in "explain nodes: nested fields" "$tmp/out" $'    kubeletVersion\t<string> -required-'
check "explain leases (a named group)" 0 "${kc[@]}" explain leases.spec.holderIdentity
expect_in "explain leases" "$tmp/out" "VERSION:    v1"
expect_in "explain leases group" "$tmp/out" "GROUP:      coordination.k8s.io"
check "explain an unknown field" 1 "${kc[@]}" explain pod.spec.nope
expect_in "explain unknown field" "$tmp/err" 'error: field "nope" does not exist'
check "the OpenAPI v2 document (JSON)" 0 "${kc[@]}" get --raw /openapi/v2
expect_in "v2: swagger" "$tmp/out" '"swagger":"2.0"'
expect_in "v2: the Pod's definition" "$tmp/out" '"io.k8s.api.core.v1.Pod":{"description":"A group of one or more containers that run together'

# ---- api-resources: short names, verbs, categories; get all --------------------------------------
known_only() { # want: drops the lines of $tmp/out about resources want does not name, so that the
  # kinds of other tests (ConfigMap, Deployment, ...) leave these lists alone; lines without a
  # resource (non-resource URLs) stay
  awk 'NR == FNR { if ($1 != "" && substr($0, 1, 1) != " ") names[$1] = 1; next }
       substr($0, 1, 1) == " " || ($1 in names)' "$1" "$tmp/out" >"$tmp/known"
  cp "$tmp/known" "$tmp/out"
}
check "api-resources -o wide" 0 "${kc[@]}" api-resources -o wide
sed 's/ *$//; s/  */ /g' "$tmp/out" >"$tmp/squeezed"
cat >"$tmp/want" <<'EOF'
NAME SHORTNAMES APIVERSION NAMESPACED KIND VERBS CATEGORIES
events ev v1 true Event create,delete,deletecollection,get,list,patch,update,watch
namespaces ns v1 false Namespace create,delete,get,list,patch,update,watch
nodes no v1 false Node create,delete,deletecollection,get,list,patch,update,watch
pods po v1 true Pod create,delete,deletecollection,get,list,patch,update,watch all
selfsubjectreviews authentication.k8s.io/v1 false SelfSubjectReview create
selfsubjectaccessreviews authorization.k8s.io/v1 false SelfSubjectAccessReview create
selfsubjectrulesreviews authorization.k8s.io/v1 false SelfSubjectRulesReview create
leases coordination.k8s.io/v1 true Lease create,delete,deletecollection,get,list,patch,update,watch
nodes metrics.k8s.io/v1beta1 false NodeMetrics get,list
pods metrics.k8s.io/v1beta1 true PodMetrics get,list
EOF
cp "$tmp/squeezed" "$tmp/out"
known_only "$tmp/want"
same "api-resources -o wide (columns squeezed)" "$tmp/want"
check "api-resources --categories=all" 0 "${kc[@]}" api-resources --categories=all --no-headers
expect_count "category all: pods only" "$tmp/out" 1 "pods"
check "get all (the category)" 0 "${kc[@]}" get all
expect_in "get all: the kubernetes Service, as on a new cluster" "$tmp/out" "service/kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP"
check "get po (a short name)" 0 "${kc[@]}" get po -A
check "api-resources --verbs=create --namespaced=false" 0 "${kc[@]}" api-resources --verbs=create --namespaced=false -o name
expect_in "reviews by verb" "$tmp/out" "selfsubjectrulesreviews.authorization.k8s.io"

# ---- auth whoami ----------------------------------------------------------------------------------
whoami() { # token, user, groups
  check "whoami $2" 0 "${kc[@]}" --token="$1" auth whoami
  printf '%s\n' 'ATTRIBUTE   VALUE' "Username    $2" "Groups      [$3]" >"$tmp/want"
  same "whoami $2" "$tmp/want"
}
whoami "$admin" system:admin:admin "system:masters system:authenticated"
whoami "$reader" system:reader:ci "xpool:readers system:authenticated"
whoami "$node" system:node:n1 "system:nodes system:authenticated"
check "whoami -o json" 0 "${kc[@]}" auth whoami -o json
expect_in "whoami json kind" "$tmp/out" '"kind": "SelfSubjectReview"'
check "whoami with a bad token" 1 "${kc[@]}" --token=xpa_000000000000.bad auth whoami
expect_in "whoami with a bad token: Unauthorized" "$tmp/err" "error: You must be logged in to the server"

# ---- auth can-i, and --list for each role (kubectl sorts and compacts the rules) ------------------
canlist() { # name, token, namespace, expected lines...
  local name=$1 token=$2 ns=$3
  shift 3
  check "can-i --list $name" 0 "${kc[@]}" --token="$token" auth can-i --list -n "$ns"
  printf '%s\n' "$@" >"$tmp/want"
  known_only "$tmp/want"
  same "can-i --list $name" "$tmp/want"
}
hdr='Resources                                       Non-Resource URLs   Resource Names   Verbs'
ssr='selfsubjectreviews.authentication.k8s.io        []                  []               [create]'
ssar='selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]'
ssrr='selfsubjectrulesreviews.authorization.k8s.io    []                  []               [create]'
canlist admin "$admin" default "$hdr" \
  '*.*                                             []                  []               [*]' \
  '                                                [*]                 []               [*]' \
  "$ssr" "$ssar" "$ssrr"
canlist reader "$reader" default "$hdr" "$ssr" "$ssar" "$ssrr" \
  '*.*                                             []                  []               [get list watch]' \
  '                                                [*]                 []               [get]'
canlist node "$node" kube-node-lease "$hdr" \
  'leases.coordination.k8s.io                      []                  [n1]             [create delete get patch update]' \
  'nodes/status                                    []                  [n1]             [create patch update]' \
  'nodes                                           []                  [n1]             [create patch update]' \
  "$ssr" "$ssar" "$ssrr" \
  'events                                          []                  []               [get list watch create patch update]' \
  'namespaces/status                               []                  []               [get list watch]' \
  'namespaces                                      []                  []               [get list watch]' \
  'nodes/status                                    []                  []               [get list watch]' \
  'nodes                                           []                  []               [get list watch]' \
  'pods/status                                     []                  []               [get list watch]' \
  'pods                                            []                  []               [get list watch]' \
  'leases.coordination.k8s.io                      []                  []               [get list watch]' \
  '                                                [*]                 []               [get]'
expect_in "node list: incomplete, as the node authorizer's" "$tmp/err" \
  'the pods bound to node "n1" may also be deleted'
can() { # name, expected exit (0 yes, 1 no), expected word, kubectl auth can-i arguments...
  local name=$1 want=$2 word=$3
  shift 3
  check "can-i $name" "$want" "${kc[@]}" auth can-i "$@"
  expect_in "can-i $name: $word" "$tmp/out" "$word"
}
can "admin create pods" 0 yes create pods
can "reader create pods" 1 no --token="$reader" create pods
can "reader list pods" 0 yes --token="$reader" list pods -A
can "reader get /version" 0 yes --token="$reader" get /version
can "reader delete /version" 1 no --token="$reader" delete /version
can "node patch its node" 0 yes --token="$node" patch nodes/n1
can "node patch another node" 1 no --token="$node" patch nodes/n2
can "node its lease" 0 yes --token="$node" update leases.coordination.k8s.io/n1 -n kube-node-lease
can "node create pods" 1 no --token="$node" create pods
can "unknown resource" 0 yes create widgets.example.com
expect_in "can-i: unknown resource warning" "$tmp/err" "Warning: the server doesn't have a resource type 'widgets'"
# kubectl --as: impersonation is not served, and is refused rather than answered as the caller
# (the admin's yes would be wrong for the service account asked about)
check "can-i --as a service account" 1 "${kc[@]}" auth can-i get pods --as=system:serviceaccount:default:default
expect_in "can-i --as: refused" "$tmp/err" \
  'impersonation is not served: Impersonate-User "system:serviceaccount:default:default" asks to act as someone else'
! grep -q yes "$tmp/out" || { echo "FAIL can-i --as answered yes"; failures=$((failures + 1)); }
check "get pods --as" 1 "${kc[@]}" get pods --as=alice --as-group=devs
expect_in "get --as: refused" "$tmp/err" 'impersonation is not served: Impersonate-User "alice"'

# ---- the reviews' bad input: a clear Status, nothing stored ---------------------------------------
post() { # name, expected code, path, body
  printf '%s' "$4" >"$tmp/body.json"
  got=$(curl -sS --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -o "$tmp/out" -w '%{http_code}' --max-time 10 --data-binary "@$tmp/body.json" "$base$3") || got="curl failed"
  [[ "$got" == "$2" ]] || { echo "FAIL $1: HTTP $got, expected $2"; cat "$tmp/out"; failures=$((failures + 1)); }
}
sar=/apis/authorization.k8s.io/v1/selfsubjectaccessreviews
post "an access review without attributes" 422 $sar '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}'
expect_in "no attributes: Kubernetes' message" "$tmp/out" '"message":"SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"'
post "an access review that is not JSON" 400 $sar 'nojson'
expect_in "not JSON: BadRequest" "$tmp/out" '"reason":"BadRequest"'
post "a rules review posted as an access review" 400 $sar '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}'
post "a review in the wrong group" 404 /apis/coordination.k8s.io/v1/selfsubjectaccessreviews '{}'

# ---- server-side apply: managedFields, conflicts, --force-conflicts, fields given up ---------------
printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata:' '  name: web' '  labels: {app: web, tier: a}' \
  'spec:' '  containers:' '  - name: c' '    image: busybox:1' '    command: [sleep, "3600"]' \
  '    ports:' '    - containerPort: 80' >"$tmp/web.yaml"
sed 's/busybox:1/busybox:2/; s/tier: a/tier: b/' "$tmp/web.yaml" >"$tmp/web2.yaml"
sed 's/, tier: b//' "$tmp/web2.yaml" >"$tmp/web3.yaml"
ssa=("${kc[@]}" apply --server-side)
check "apply --server-side creates" 0 "${ssa[@]}" -f "$tmp/web.yaml"
printf 'pod/web serverside-applied\n' >"$tmp/want"
same "apply --server-side creates" "$tmp/want"
check "apply --server-side again" 0 "${ssa[@]}" -f "$tmp/web.yaml"
same "apply --server-side again" "$tmp/want"
check "managedFields" 0 "${kc[@]}" get pod web -o \
  'jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.apiVersion} {.fieldsType}{"\n"}{end}'
printf 'kubectl Apply v1 FieldsV1\n' >"$tmp/want"
same "managedFields: kubectl's Apply entry" "$tmp/want"
check "the owned fields" 0 "${kc[@]}" get pod web -o 'jsonpath={.metadata.managedFields[0].fieldsV1}'
expect_in "fieldsV1: the container by its key" "$tmp/out" \
  '"k:{\"name\":\"c\"}":{".":{},"f:command":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}'
expect_in "fieldsV1: labels one by one" "$tmp/out" '"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}}'
check "another manager's change conflicts" 1 "${ssa[@]}" --field-manager=other -f "$tmp/web2.yaml"
head -3 "$tmp/err" >"$tmp/out"
printf '%s\n' 'error: Apply failed with 2 conflicts: conflicts with "kubectl":' '- .metadata.labels.tier' \
  '- .spec.containers[name="c"].image' >"$tmp/want"
same "the conflicts, as kubectl prints Kubernetes' message" "$tmp/want"
expect_in "kubectl's advice follows" "$tmp/err" 'command with the `--force-conflicts` flag.'
check "the conflict changed nothing" 0 "${kc[@]}" get pod web -o 'jsonpath={.spec.containers[0].image} {.metadata.labels.tier}'
expect_in "nothing changed" "$tmp/out" "busybox:1 a"
check "--force-conflicts takes the fields" 0 "${ssa[@]}" --field-manager=other --force-conflicts -f "$tmp/web2.yaml"
check "the forced values" 0 "${kc[@]}" get pod web -o \
  'jsonpath={.spec.containers[0].image} {.metadata.labels.tier} {range .metadata.managedFields[*]}{.manager},{end}'
expect_in "forced: values and managers" "$tmp/out" "busybox:2 b kubectl,other,"
check "kubectl gave up image and tier" 0 "${kc[@]}" get pod web -o 'jsonpath={.metadata.managedFields[0].fieldsV1}'
if grep -q 'f:image\|f:tier' "$tmp/out"; then
  echo "FAIL kubectl still owns image or tier:"; cat "$tmp/out"; failures=$((failures + 1))
fi
check "kubectl now conflicts with other" 1 "${ssa[@]}" -f "$tmp/web.yaml"
expect_in "conflict with other" "$tmp/err" 'error: Apply failed with 2 conflicts: conflicts with "other":'
check "a field its only manager no longer applies is removed" 0 "${ssa[@]}" --field-manager=other -f "$tmp/web3.yaml"
check "tier gone, app kept (kubectl co-owns it)" 0 "${kc[@]}" get pod web -o 'jsonpath={.metadata.labels}'
printf '{"app":"web"}' >"$tmp/want"
same "labels after other gave up tier" "$tmp/want"
check "apply --server-side --dry-run=server" 0 "${ssa[@]}" --field-manager=other --dry-run=server -f "$tmp/web2.yaml"
expect_in "dry run" "$tmp/out" "pod/web serverside-applied (server dry run)"
check "the dry run wrote nothing" 0 "${kc[@]}" get pod web -o 'jsonpath={.metadata.labels}'
same "labels after the dry run" "$tmp/want"
apply_patch() { # name, expected code, query, body
  printf '%s' "$4" >"$tmp/body.json"
  got=$(curl -sS --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $admin" -X PATCH \
    -H 'Content-Type: application/apply-patch+yaml' -o "$tmp/out" -w '%{http_code}' --max-time 10 \
    --data-binary "@$tmp/body.json" "$base/api/v1/namespaces/default/pods/web$3") || got="curl failed"
  [[ "$got" == "$2" ]] || { echo "FAIL $1: HTTP $got, expected $2"; cat "$tmp/out"; failures=$((failures + 1)); }
}
apply_patch "apply without a field manager" 422 "" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}'
expect_in "no field manager: Kubernetes' message" "$tmp/out" \
  '"message":"PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"'
apply_patch "apply as YAML" 200 "?fieldManager=yaml" $'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {from: yaml}\n'
expect_in "YAML applied" "$tmp/out" '"from":"yaml"'
apply_patch "apply two documents" 400 "?fieldManager=yaml" $'a: 1\n---\nb: 2\n'
expect_in "two documents: why" "$tmp/out" "an apply patch is one document"
apply_patch "apply a list" 400 "?fieldManager=yaml" '[1]'
apply_patch "a conflict's causes" 409 "?fieldManager=third" \
  '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"x"}}}'
expect_in "409 causes" "$tmp/out" \
  '"reason":"Conflict","details":{"name":"web","kind":"pods","causes":[{"reason":"FieldManagerConflict","message":"conflict with \"kubectl\"","field":".metadata.labels.app"}'

# the other writes record Update managers (kubectl names them with ?fieldManager=, curl by its
# User-Agent), and an apply that changes their fields conflicts with them
printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata:' '  name: upd' '  labels: {app: upd}' 'spec:' \
  '  containers:' '  - name: c' '    image: busybox:1' '    command: [sleep, "3600"]' >"$tmp/upd.yaml"
check "client-side apply creates" 0 "${kc[@]}" apply -f "$tmp/upd.yaml"
check "kubectl label" 0 "${kc[@]}" label pod upd tier=front
check "kubectl annotate" 0 "${kc[@]}" annotate pod upd note=hi
check "kubectl edit" 0 env KUBE_EDITOR="sed -i s/busybox:1/busybox:3/" "${kc[@]}" edit pod upd
check "a merge patch by curl" 0 curl -sS --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $admin" -X PATCH \
  -H 'Content-Type: application/merge-patch+json' -A 'curl/8.0' --max-time 10 \
  --data-binary '{"metadata":{"labels":{"by":"curl"}}}' "$base/api/v1/namespaces/default/pods/upd"
check "the Update managers" 0 "${kc[@]}" get pod upd -o \
  'jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.apiVersion} {.fieldsType}{"\n"}{end}'
printf '%s\n' 'kubectl-client-side-apply Update v1 FieldsV1' 'kubectl-label Update v1 FieldsV1' \
  'kubectl-annotate Update v1 FieldsV1' 'kubectl-edit Update v1 FieldsV1' 'curl Update v1 FieldsV1' >"$tmp/want"
same "one Update entry per manager, in the order they wrote" "$tmp/want"
check "what kubectl label owns" 0 "${kc[@]}" get pod upd -o 'jsonpath={.metadata.managedFields[1].fieldsV1}'
printf '%s' '{"f:metadata":{"f:labels":{"f:tier":{}}}}' >"$tmp/want"
same "kubectl-label owns the label it set" "$tmp/want"
check "kubectl edit took the image" 0 "${kc[@]}" get pod upd -o 'jsonpath={.metadata.managedFields[3].fieldsV1}'
# kubectl edit rewrites the last-applied annotation of an object that has one
printf '%s' '{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}},' >"$tmp/want"
printf '%s' '"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:image":{}}}}}' >>"$tmp/want"
same "kubectl-edit owns the image" "$tmp/want"
sed 's/app: upd}/app: upd, tier: back}/' "$tmp/upd.yaml" >"$tmp/upd2.yaml"
check "apply --server-side conflicts with edit and label" 1 "${ssa[@]}" -f "$tmp/upd2.yaml"
head -5 "$tmp/err" >"$tmp/out"
printf '%s\n' 'error: Apply failed with 2 conflicts: conflicts with "kubectl-edit" using v1:' \
  '- .spec.containers[name="c"].image' 'conflicts with "kubectl-label" using v1:' '- .metadata.labels.tier' \
  'Please review the fields above--they currently have other managers. Here' >"$tmp/want"
same "the Update managers' conflicts, word for word" "$tmp/want"
check "--force-conflicts takes them" 0 "${ssa[@]}" --force-conflicts -f "$tmp/upd2.yaml"
check "edit and label gave them up" 0 "${kc[@]}" get pod upd -o \
  'jsonpath={.spec.containers[0].image} {.metadata.labels.tier} {range .metadata.managedFields[*]}{.manager},{end}'
expect_in "forced over Update managers" "$tmp/out" "busybox:1 back kubectl-client-side-apply,kubectl-annotate,curl,"

# ---- Debian's python3-kubernetes: its typed review calls and a raw whoami -------------------------
if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then
  check "the Python client's reviews" 0 /usr/bin/python3 - "$reader" <<'EOF'
import sys
from kubernetes import client, config
config.load_kube_config()
authz = client.AuthorizationV1Api()
r = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
    spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
        verb="delete", resource="pods", namespace="default"))))
assert r.status.allowed is True, r.status
rules = authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(
    spec=client.V1SelfSubjectRulesReviewSpec(namespace="default")))
assert any(rule.resources == ["*"] and rule.verbs == ["*"] for rule in rules.status.resource_rules), rules
# SelfSubjectReview is newer than this client: the raw call, as a script would make it
api = client.ApiClient()
body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
data = api.call_api("/apis/authentication.k8s.io/v1/selfsubjectreviews", "POST", body=body,
                    auth_settings=["BearerToken"], response_type="object", _return_http_data_only=True)
print(data["status"]["userInfo"]["username"])
EOF
  expect_in "python: whoami" "$tmp/out" "system:admin:admin"
else
  echo "note: /usr/bin/python3 lacks python3-kubernetes (scripts/install-deps): its checks skipped"
fi

finish "api discovery"
