#!/usr/bin/env bash
# Pod and node lifecycle on the server, with curl acting as a node's agent (its node token):
# graceful DELETE (deletionTimestamp, the pod stays, a later DELETE shortens the grace, the
# agent's final grace-0 DELETE with a uid precondition, 409 on a wrong one), immediate deletion
# of unbound pods and of grace 0, spec updates refused while terminating, kubectl delete, a
# namespace whose pods terminate, a terminating pod whose node does not exist removed after its
# grace, and the node lifecycle controller: a lease that stops ->
# Ready Unknown + unreachable taint, pods Ready=False, then Failed NodeLost after the eviction
# timeout (a pod tolerating the taint forever stays), and the node back once the lease is renewed
# and it reports Ready.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
diag_cluster "$data/admin.kubeconfig"
server_pid=
renewer_pid=
base=
token=

stop_renewer() {
  [[ -n "$renewer_pid" ]] || return 0
  kill "$renewer_pid" 2>/dev/null || true
  wait "$renewer_pid" 2>/dev/null || true
  renewer_pid=
}
trap 'stop_renewer; stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

curl() { # as the admin (or as whoever $as names: a token)
  command curl --cacert "$data/pki/ca.crt" -H "Authorization: Bearer ${as:-$token}" "$@"
}

start_server() { # log name, server options...
  local log=$tmp/$1.log deadline=$((SECONDS + 120)) url=
  shift
  : >"$log"
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" "$@" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$url" ]] && curl -fsS -o /dev/null "$url/version" 2>/dev/null; then
      base=$url
      token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 15 s:"; cat "$log"; exit 1
}

# req name, expected HTTP code, method, path [, body text [, content type]]: the answer in $tmp/out
req() {
  local name=$1 want=$2 method=$3 path=$4 body=${5:-} type=${6:-application/json} got
  local args=(-sS -X "$method" -o "$tmp/out" -w '%{http_code}' --max-time 20)
  [[ -n "$body" ]] && args+=(-H "Content-Type: $type" --data-binary "$body")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}

api_holds() { answer_holds "$tmp/out" "$2" "$base$1"; } # path, text: for wait_until

not_in() { # name, file, text
  if grep -qF -- "$3" "$2"; then
    echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1))
  fi
}

now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
micro() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }

node_json() { # name, heartbeat
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"},"status":{"capacity":{"cpu":"8","memory":"16Gi","pods":"110"},"allocatable":{"cpu":"8","memory":"16Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","reason":"AgentReady","lastHeartbeatTime":"%s","lastTransitionTime":"%s"}]}}' \
    "$1" "$2" "$2"
}

pod_json() { # name [, extra spec members]
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"terminationGracePeriodSeconds":20,"containers":[{"name":"main","image":"busybox","command":["sleep","3600"]}]%s}}' \
    "$1" "${2:-}"
}

bind() { # namespace, pod, node
  req "bind $2 to $3" 201 POST "/api/v1/namespaces/$1/pods/$2/binding" \
    "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"$2\"},\"target\":{\"kind\":\"Node\",\"name\":\"$3\"}}"
}

json_field() { # file, jq-less extraction of a string member: "key":"value"
  sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p" "$1" | head -1
}

pods=/api/v1/namespaces/default/pods
leases=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
# The node's grace is 6 s: the renewer below is a curl every 0.3 s, and under ASan at load one
# can take over 2 s; with 2 s the node was lost meanwhile and p1, past its short grace, removed by
# the node lifecycle before the agent's own final DELETE (seen at load 22).
start_server lifecycle --no-scheduler --node-monitor-grace-period 6s --pod-eviction-timeout 3s
check "node token" 0 "$xpool" token create --node n1 --data-dir "$data"
ntoken=$(cat "$tmp/out")
deadline=$((SECONDS + 60)) # the server reads the tokens file again at most every second
until as=$ntoken curl -fsS -o /dev/null "$base/api/v1/nodes" 2>/dev/null || [[ $SECONDS -ge $deadline ]]; do
  sleep 0.2
done

# ---- the agent registers: Node and Lease, renewed in the background ------------------------------
as=$ntoken req "agent creates its Node" 201 POST /api/v1/nodes "$(node_json n1 "$(now)")"
as=$ntoken req "agent creates its Lease" 201 POST "$leases" \
  "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"n1\",\"namespace\":\"kube-node-lease\"},\"spec\":{\"holderIdentity\":\"n1\",\"leaseDurationSeconds\":40,\"renewTime\":\"$(micro)\"}}"
renew() {
  as=$ntoken command curl -sS -o /dev/null --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $ntoken" \
    -X PATCH -H 'Content-Type: application/merge-patch+json' \
    --data-binary "{\"spec\":{\"renewTime\":\"$(micro)\"}}" "$base$leases/n1"
}
(while :; do renew; sleep 0.3; done) &
renewer_pid=$!

# ---- graceful deletion -----------------------------------------------------------------------------
req "create p1" 201 POST "$pods" "$(pod_json p1)"
uid=$(json_field "$tmp/out" uid)
bind default p1 n1
req "a dry-run DELETE in DeleteOptions" 200 DELETE "$pods/p1" '{"propagationPolicy":"Background","dryRun":["All"]}'
expect_in "dry run answers as it would be" "$tmp/out" '"deletionGracePeriodSeconds":20'
req "a dry-run DELETE changes nothing" 200 GET "$pods/p1"
not_in "no deletionTimestamp after a dry run" "$tmp/out" 'deletionTimestamp'
req "an unknown dry-run mode" 400 DELETE "$pods/p1" '{"dryRun":["Some"]}'
req "DELETE a bound pod" 200 DELETE "$pods/p1"
expect_in "deletionTimestamp set" "$tmp/out" '"deletionTimestamp":"'
expect_in "grace from the spec" "$tmp/out" '"deletionGracePeriodSeconds":20'
req "the pod is still there" 200 GET "$pods/p1"
expect_in "still there, terminating" "$tmp/out" '"deletionTimestamp":"'
first=$(json_field "$tmp/out" deletionTimestamp)
curl -sS -o "$tmp/out" -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' "$base$pods/p1"
expect_in "Table STATUS Terminating" "$tmp/out" '"Terminating"'
req "a spec change of a terminating pod" 422 PATCH "$pods/p1" '{"spec":{"activeDeadlineSeconds":5}}' \
  application/merge-patch+json
expect_in "422 says why" "$tmp/out" 'the pod is terminating'
req "a label on a terminating pod" 200 PATCH "$pods/p1" '{"metadata":{"labels":{"a":"b"}}}' \
  application/merge-patch+json
expect_in "label kept the deletion" "$tmp/out" '"deletionGracePeriodSeconds":20'
req "a later DELETE shortens the grace" 200 DELETE "$pods/p1" '{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5}'
expect_in "grace shortened" "$tmp/out" '"deletionGracePeriodSeconds":5'
req "a longer grace does not lengthen it" 200 DELETE "$pods/p1?gracePeriodSeconds=60"
expect_in "grace stays short" "$tmp/out" '"deletionGracePeriodSeconds":5'
[[ "$(json_field "$tmp/out" deletionTimestamp)" < "$first" || "$(json_field "$tmp/out" deletionTimestamp)" == "$first" ]] ||
  { echo "FAIL the deadline moved later"; failures=$((failures + 1)); }
as=$ntoken req "the agent's DELETE with a wrong uid" 409 DELETE "$pods/p1" \
  '{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,"preconditions":{"uid":"not-the-uid"}}'
expect_in "409 says precondition" "$tmp/out" 'Precondition failed: UID in precondition: not-the-uid'
req "a wrong resourceVersion precondition" 409 DELETE "$pods/p1" '{"preconditions":{"resourceVersion":"1"}}'
expect_in "409 names the versions" "$tmp/out" 'ResourceVersion in precondition: 1'
as=$ntoken req "the agent's final DELETE" 200 DELETE "$pods/p1" \
  "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$uid\"}}"
req "the pod is gone" 404 GET "$pods/p1"

req "create an unbound pod" 201 POST "$pods" "$(pod_json p2)"
as=$ntoken req "a node may not delete a pod not bound to it" 403 DELETE "$pods/p2"
req "DELETE an unbound pod" 200 DELETE "$pods/p2"
req "an unbound pod goes at once" 404 GET "$pods/p2"

req "create p3" 201 POST "$pods" "$(pod_json p3)"
bind default p3 n1
req "DELETE ?gracePeriodSeconds=0" 200 DELETE "$pods/p3?gracePeriodSeconds=0"
req "grace 0 by the admin goes at once" 404 GET "$pods/p3"
req "a bad grace" 400 DELETE "$pods/p3?gracePeriodSeconds=soon"

# ---- kubectl -----------------------------------------------------------------------------------------
if command -v kubectl >/dev/null; then
  kc=(kubectl --kubeconfig "$data/admin.kubeconfig")
  req "create p4" 201 POST "$pods" "$(pod_json p4)"
  bind default p4 n1
  check "kubectl delete --dry-run=server" 0 "${kc[@]}" delete pod p4 --dry-run=server
  req "the dry run left p4 alone" 200 GET "$pods/p4"
  not_in "p4 not terminating after the dry run" "$tmp/out" 'deletionTimestamp'
  check "kubectl delete pod" 0 "${kc[@]}" delete pod p4 --wait=false
  expect_in "kubectl says deleted" "$tmp/out" 'pod "p4" deleted'
  check "kubectl get the terminating pod" 0 "${kc[@]}" get pod p4
  expect_in "kubectl shows Terminating" "$tmp/out" "Terminating"
  check "kubectl delete --grace-period=0 --force" 0 "${kc[@]}" delete pod p4 --grace-period=0 --force
  req "forced deletion removes it" 404 GET "$pods/p4"
else
  echo "kubectl is not installed: its checks skipped"
fi

# ---- a namespace whose pods terminate ---------------------------------------------------------------
req "create namespace cascade" 201 POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"cascade"}}'
req "create a pod in it" 201 POST /api/v1/namespaces/cascade/pods "$(pod_json c1)"
cuid=$(json_field "$tmp/out" uid)
bind cascade c1 n1
req "create an unbound pod in it" 201 POST /api/v1/namespaces/cascade/pods "$(pod_json c2)"
req "DELETE the namespace" 200 DELETE /api/v1/namespaces/cascade
expect_in "namespace Terminating" "$tmp/out" '"phase":"Terminating"'
req "its bound pod terminates" 200 GET /api/v1/namespaces/cascade/pods/c1
expect_in "its bound pod has a deletionTimestamp" "$tmp/out" '"deletionTimestamp":"'
req "its unbound pod is gone" 404 GET /api/v1/namespaces/cascade/pods/c2
as=$ntoken req "the agent's final DELETE in the namespace" 200 DELETE /api/v1/namespaces/cascade/pods/c1 \
  "{\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$cuid\"}}"
deadline=$((SECONDS + 60))
while [[ $SECONDS -lt $deadline ]]; do
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$base/api/v1/namespaces/cascade")
  [[ "$code" == 404 ]] && break
  sleep 0.1
done
[[ "$code" == 404 ]] || { echo "FAIL the namespace stayed after its last pod went: HTTP $code"; failures=$((failures + 1)); }

# ---- a pod bound to a node that does not exist: nobody stops it, so it goes after its grace ------
req "create p8" 201 POST "$pods" "$(pod_json p8)"
bind default p8 ghost
req "DELETE p8 with a short grace" 200 DELETE "$pods/p8" '{"gracePeriodSeconds":1}'
expect_in "p8 terminating" "$tmp/out" '"deletionGracePeriodSeconds":1'
deadline=$((SECONDS + 60))
while [[ $SECONDS -lt $deadline ]]; do
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$base$pods/p8")
  [[ "$code" == 404 ]] && break
  sleep 0.2
done
[[ "$code" == 404 ]] || { echo "FAIL p8 on a node that does not exist stayed: HTTP $code"; failures=$((failures + 1)); }

# ---- the node is lost: its lease stops -----------------------------------------------------------------
req "create p5" 201 POST "$pods" "$(pod_json p5)"
bind default p5 n1
as=$ntoken req "the agent reports p5 Running" 200 PATCH "$pods/p5/status" \
  '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' \
  application/strategic-merge-patch+json
req "create p6 tolerating unreachable forever" 201 POST "$pods" \
  "$(pod_json p6 ',"tolerations":[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"}]')"
bind default p6 n1
req "create p7 terminating" 201 POST "$pods" "$(pod_json p7)"
bind default p7 n1
req "DELETE p7 with a short grace" 200 DELETE "$pods/p7" '{"gracePeriodSeconds":1}'
stop_renewer
wait_until "the node goes Unknown" 60 api_holds /api/v1/nodes/n1 '"reason":"NodeStatusUnknown"'
expect_in "Ready Unknown" "$tmp/out" '"type":"Ready","status":"Unknown"'
expect_in "the message" "$tmp/out" 'xpool agent stopped renewing its lease'
expect_in "unreachable taint" "$tmp/out" '"key":"node.kubernetes.io/unreachable","effect":"NoExecute"'
wait_until "p5 not ready" 60 api_holds "$pods/p5" '"type":"Ready","status":"False"'
curl -sS -o "$tmp/out" -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' "$base/api/v1/nodes/n1"
expect_in "the Table says NotReady" "$tmp/out" '"NotReady"'
wait_until "NodeNotReady event" 60 api_holds /api/v1/namespaces/default/events '"reason":"NodeNotReady"'
p7_gone() { curl -sS -o "$tmp/out" "$base$pods" && grep -qF '"resourceVersion"' "$tmp/out" && ! grep -qF '"name":"p7"' "$tmp/out"; }
wait_until "p7 removed after its grace" 60 p7_gone
not_in "p7 gone" "$tmp/out" '"name":"p7"'
wait_until "p5 Failed" 60 api_holds "$pods/p5" '"phase":"Failed"'
expect_in "p5 reason NodeLost" "$tmp/out" '"reason":"NodeLost","message":"Node n1 which was running'
expect_in "p5's message names the node" "$tmp/out" 'Node n1 which was running pod p5 is unresponsive since'
req "p6 still there" 200 GET "$pods/p6"
not_in "p6 not Failed" "$tmp/out" '"phase":"Failed"'
wait_until "NodeLost event" 60 api_holds /api/v1/namespaces/default/events '"reason":"NodeLost"'

# ---- the agent comes back --------------------------------------------------------------------------
renew
req "the agent reports Ready" 200 PATCH /api/v1/nodes/n1/status \
  "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"AgentReady\",\"lastHeartbeatTime\":\"$(now)\"}]}}" \
  application/strategic-merge-patch+json
(while :; do renew; sleep 0.3; done) &
renewer_pid=$!
deadline=$((SECONDS + 60))
while [[ $SECONDS -lt $deadline ]]; do
  curl -sS -o "$tmp/out" "$base/api/v1/nodes/n1"
  grep -qF 'node.kubernetes.io/unreachable' "$tmp/out" || break
  sleep 0.1
done
not_in "taint removed" "$tmp/out" 'node.kubernetes.io/unreachable'
expect_in "Ready again" "$tmp/out" '"type":"Ready","status":"True"'
stop_renewer

finish "lifecycle"
