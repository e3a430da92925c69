#!/usr/bin/env bash
# API fidelity with stock clients (issue 15), compared word for word with what Kubernetes 1.32
# answers:
#   - defaults: requests from limits, the pod defaults, status.qosClass; pod updates limited to
#     what ValidatePodUpdate allows, with its Forbidden message (kubectl apply);
#   - query and paths: the Python client's ?watch=True stream, /version/ /api/ /apis/ with a
#     slash, limit/continue paging (limit=2 over five pods: kubectl --chunk-size and the Python
#     client), a token of another list, a bad token, an expired one (410 with a fresh token),
#     resourceVersionMatch's rules, sendInitialEvents with the initial-events-end bookmark; a
#     get, list and watch from a future resourceVersion (504 after 3 s, or the write it waited for);
#   - node identity: an agent whose node name is not the host's name labels its Node
#     kubernetes.io/hostname=NAME, so a pod pinned by that label runs there, and reports the
#     server's release as its kubeletVersion; a pod without an image on a node that runs images
#     is told what to do; a pod's Events from kubelet (source.host the node) and
#     default-scheduler, its conditions in the kubelet's order;
#   - protobuf DeleteOptions, a 3 s grace honoured in full; kubectl drain through the
#     pods/eviction subresource (policy/v1 Eviction), and an Eviction's own checks.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { echo "SKIP: python3-kubernetes is not installed"; exit 77; }
data=$tmp/data
ca=$data/pki/ca.crt
kc=$data/admin.kubeconfig
server_pid= agent_pid= base=
trap 'for p in $agent_pid $server_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

node=fidelity-node-$$
"$xpool" token create --node "$node" --data-dir "$data" >"$tmp/node.token" 2>/dev/null
# a short event history, so that a continue token can be made to expire within the test
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --event-history 40 >"$tmp/server.log" 2>&1 &
server_pid=$!
deadline=$((SECONDS + 60))
until [[ -n "$base" ]] && curl -fsS --cacert "$ca" -o /dev/null "$base/healthz" 2>/dev/null; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
  sleep 0.1
  base=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
done
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$kc" | head -1)
k=(kubectl --kubeconfig "$kc")
P=/api/v1/namespaces/default/pods

call() { # name, expected HTTP code, method, path, [body]: the answer in $tmp/out
  local name=$1 want=$2 method=$3 path=$4 body=${5:-} got type=application/json
  local args=(-sS --cacert "$ca" -X "$method" -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $admin")
  [[ $method == PATCH ]] && type=application/merge-patch+json
  [[ -n "$body" ]] && args+=(-H "Content-Type: $type" --data-binary "$body")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}

expect_message() { # name, message: $tmp/out is a Status with exactly that message
  local msg
  msg=$(printf '%s' "$2" | sed 's/\\/\\\\/g; s/"/\\"/g')
  expect_in "$1" "$tmp/out" '"message":"'"$msg"'"'
}

expect_exact() { # name, file, exact expected content
  if [[ "$(cat "$2")" != "$3" ]]; then
    echo "FAIL $1: expected:"; echo "$3"; echo "got:"; cat "$2"; failures=$((failures + 1))
  fi
}

py() { /usr/bin/python3 -c "$1" "$kc" "${@:2}"; }

# ---- 1. defaults and pod updates -------------------------------------------------------------
cat >"$tmp/web.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: [sleep, "3600"]
    resources:
      limits: {cpu: 500m, memory: 64Mi, nvidia.com/gpu: "1"}
YAML
check "kubectl apply creates" 0 "${k[@]}" apply -f "$tmp/web.yaml"
expect_exact "apply: created" "$tmp/out" "pod/web created"
check "the defaults" 0 "${k[@]}" get pod web -o jsonpath='{.spec.containers[0].resources.requests}|{.status.qosClass}|{.spec.containers[0].imagePullPolicy}|{.spec.restartPolicy}|{.spec.dnsPolicy}|{.spec.schedulerName}|{.spec.terminationGracePeriodSeconds}|{.spec.serviceAccountName}|{.spec.enableServiceLinks}|{.spec.tolerations[0].tolerationSeconds}|{.spec.containers[0].terminationMessagePath}'
expect_exact "defaults as kube-apiserver's" "$tmp/out" '{"cpu":"500m","memory":"64Mi","nvidia.com/gpu":"1"}|Guaranteed|IfNotPresent|Always|ClusterFirst|default-scheduler|30|default|true|300|/dev/termination-log'
check "apply again" 0 "${k[@]}" apply -f "$tmp/web.yaml"
expect_exact "apply again: unchanged" "$tmp/out" "pod/web unchanged"
sed 's/image: busybox:1.36/image: busybox:1.37/' "$tmp/web.yaml" >"$tmp/web2.yaml"
check "apply a new image" 0 "${k[@]}" apply -f "$tmp/web2.yaml"
expect_exact "apply image: configured" "$tmp/out" "pod/web configured"
sed 's/"3600"/"60"/' "$tmp/web2.yaml" >"$tmp/web3.yaml"
check "apply a new command" 1 "${k[@]}" apply -f "$tmp/web3.yaml"
expect_in "command change: kubectl's words" "$tmp/err" 'The Pod "web" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)'
check "the command stayed" 0 "${k[@]}" get pod web -o jsonpath='{.spec.containers[0].command}'
expect_exact "command as it was" "$tmp/out" '["sleep","3600"]'
call "set activeDeadlineSeconds" 200 PATCH "$P/web" '{"spec":{"activeDeadlineSeconds":3600}}'
call "raise activeDeadlineSeconds" 422 PATCH "$P/web" '{"spec":{"activeDeadlineSeconds":7200}}'
expect_message "raise: message" 'Pod "web" is invalid: spec.activeDeadlineSeconds: Invalid value: 7200: must be less than or equal to previous value'
call "a bad restartPolicy" 422 POST "$P" '{"metadata":{"name":"bad"},"spec":{"restartPolicy":"Sometimes","containers":[{"name":"c","image":"x"}]}}'
expect_message "Unsupported value wording" 'Pod "bad" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
expect_in "details.kind is the kind" "$tmp/out" '"details":{"name":"bad","kind":"Pod","causes":[{"reason":"FieldValueNotSupported","message":"Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"","field":"spec.restartPolicy"}]}'

# ---- 2. query and paths ----------------------------------------------------------------------
for path in /version/ /api/ /apis/; do call "GET $path" 200 GET "$path"; done
call "a pod path with a slash is no pod" 404 GET "$P/web/"
for i in 1 2 3 4; do
  call "create p$i" 201 POST "$P" '{"metadata":{"name":"p'"$i"'"},"spec":{"containers":[{"name":"c","image":"x"}]}}'
done
check "python: watch=True streams" 0 py 'import sys
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
names = [e["object"].metadata.name for e in watch.Watch().stream(client.CoreV1Api().list_namespaced_pod, "default", timeout_seconds=1)]
print(" ".join(sorted(names)))'
expect_exact "python: the stream's pods" "$tmp/out" "p1 p2 p3 p4 web"
check "python: limit=2 pages" 0 py 'import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1, token, pages = client.CoreV1Api(), None, []
while True:
    l = v1.list_namespaced_pod("default", limit=2, _continue=token)
    pages.append(",".join(p.metadata.name for p in l.items) + "/" + str(l.metadata.remaining_item_count))
    token = l.metadata._continue
    if not token:
        break
print(" ".join(pages))'
expect_exact "python: three pages" "$tmp/out" "p1,p2/3 p3,p4/1 web/None"
check "kubectl --chunk-size=2" 0 "${k[@]}" get pods --chunk-size=2 -o name
expect_exact "kubectl: every pod" "$tmp/out" "$(printf 'pod/p1\npod/p2\npod/p3\npod/p4\npod/web')"
call "first page" 200 GET "$P?limit=2"
token=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["continue"])' "$tmp/out")
rv=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["resourceVersion"])' "$tmp/out")
call "delete p3 between pages" 200 DELETE "$P/p3?gracePeriodSeconds=0"
call "next page: the snapshot" 200 GET "$P?limit=2&continue=$token"
expect_in "p3 still in the snapshot" "$tmp/out" '"name":"p3"'
expect_in "the snapshot's version" "$tmp/out" "\"resourceVersion\":\"$rv\""
call "a token of another list" 400 GET "/api/v1/namespaces/kube-system/pods?limit=2&continue=$token"
expect_message "another list: message" 'invalid continue token: continue key is not valid: the token continues another list'
call "a token that is not base64" 400 GET "$P?limit=2&continue=%25%25"
expect_in "bad token: message" "$tmp/out" '"message":"invalid continue token: continue key is not valid: '
call "continue with a resourceVersion" 400 GET "$P?limit=2&continue=$token&resourceVersion=$rv"
expect_message "continue and resourceVersion" 'specifying resource version is not allowed when using continue'
# 60 more writes age the token's version out of the event log (40, trimmed 16 past that)
for i in $(seq 1 30); do
  call "churn $i" 201 POST /api/v1/namespaces/default/events '{"metadata":{"name":"e'"$i"'"},"involvedObject":{"kind":"Pod","name":"web","namespace":"default"},"reason":"Churn"}' >/dev/null
  call "churn del $i" 200 DELETE "/api/v1/namespaces/default/events/e$i" >/dev/null
done
call "an expired token" 410 GET "$P?limit=2&continue=$token"
expect_in "expired: Kubernetes' message" "$tmp/out" '"message":"The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.","reason":"Expired"'
fresh=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["continue"])' "$tmp/out")
call "the inconsistent token goes on" 200 GET "$P?limit=2&continue=$fresh"
expect_in "the rest, as it is now" "$tmp/out" '"items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p4"'
not_there() { if grep -qF -- "$3" "$2"; then echo "FAIL $1: '$3' in output"; failures=$((failures + 1)); fi; }
not_there "p3 is gone now" "$tmp/out" '"name":"p3"'

# resourceVersionMatch, as ValidateListOptions words it
call "match without a version" 422 GET "$P?resourceVersionMatch=Exact"
expect_message "match without a version: message" 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'
expect_in "ListOptions details" "$tmp/out" '"details":{"name":"","group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden"'
call "an unknown match" 422 GET "$P?resourceVersion=1&resourceVersionMatch=Newest"
expect_message "unknown match: message" 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'
call "Exact for 0" 422 GET "$P?resourceVersion=0&resourceVersionMatch=Exact"
expect_message "Exact 0: message" 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
call "sendInitialEvents on a list" 422 GET "$P?sendInitialEvents=true"
expect_message "sendInitialEvents list: message" 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'
call "NotOlderThan" 200 GET "$P?resourceVersion=1&resourceVersionMatch=NotOlderThan"
expect_in "NotOlderThan: the current list" "$tmp/out" '"name":"web"'
call "watch: sendInitialEvents without the match" 422 GET "$P?watch=1&sendInitialEvents=true"
expect_message "watch sendInitialEvents: message" 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'
call "watch: a match without sendInitialEvents" 422 GET "$P?watch=1&resourceVersionMatch=NotOlderThan"
expect_message "watch match: message" 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'
call "watch: sendInitialEvents" 200 GET "$P?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=$rv&timeoutSeconds=1"
expect_count "initial events: the pods" "$tmp/out" 4 '{"type":"ADDED"'
expect_count "initial events: one end bookmark" "$tmp/out" 1 '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"'
expect_in "the bookmark says the initial events ended" "$tmp/out" '"annotations":{"k8s.io/initial-events-end":"true"}'
call "watch: no initial events" 200 GET "$P?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
expect_count "sendInitialEvents=false sends nothing" "$tmp/out" 0 '"type"'

# a version newer than the store's: kube-apiserver waits up to 3 s for it, then 504 Timeout. The
# get (kubectl --raw), the watch (curl) and the list (the Python client) wait side by side.
call "the current version" 200 GET "$P"
cur=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["resourceVersion"])' "$tmp/out")
future=$((cur + 1000))
start=$(date +%s%N)
"${k[@]}" get --raw "$P/web?resourceVersion=$future" >"$tmp/get.out" 2>"$tmp/get.err" &
get_pid=$!
curl -sS -m 60 --cacert "$ca" -o "$tmp/watch.out" -w '%{http_code}' -H "Authorization: Bearer $admin" \
  "$base$P?watch=1&resourceVersion=$future" >"$tmp/watch.code" 2>&1 &
watch_pid=$!
check "python: a list from a future version" 0 py 'import sys, json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
try:
    client.CoreV1Api().list_namespaced_pod("default", resource_version=sys.argv[2])
    print("listed")
except ApiException as e:
    b = json.loads(e.body)
    print(e.status, e.reason, b["reason"], b["message"], b["details"]["causes"], b["details"]["retryAfterSeconds"])' "$future"
expect_in "python: 504 Timeout as kube-apiserver" "$tmp/out" "504 Gateway Timeout Timeout Timeout: Too large resource version: $future, current: "
expect_in "python: the cause" "$tmp/out" "[{'reason': 'ResourceVersionTooLarge', 'message': 'Too large resource version'}] 1"
wait "$get_pid" && { echo "FAIL kubectl get --raw from a future version succeeded"; failures=$((failures + 1)); }
expect_in "kubectl get: kubectl's words" "$tmp/get.err" "Error from server (Timeout): Timeout: Too large resource version: $future, current: "
wait "$watch_pid" || true
expect_in "watch from a future version: 504" "$tmp/watch.code" 504
expect_in "watch: the Status" "$tmp/watch.out" '"reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504'
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[[ $elapsed_ms -ge 2900 ]] || { echo "FAIL a future version was refused after $elapsed_ms ms, not 3 s"; failures=$((failures + 1)); }
# a version that a write reaches within the 3 s: the list waits for it and answers it
next=$((cur + 1))
(sleep 1; curl -sS --cacert "$ca" -o /dev/null -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  --data-binary '{"metadata":{"name":"fresh"},"involvedObject":{"kind":"Pod","name":"web","namespace":"default"},"reason":"Fresh"}' \
  "$base/api/v1/namespaces/default/events") &
writer_pid=$!
call "a list waits for the next write" 200 GET "/api/v1/namespaces/default/events?resourceVersion=$next"
wait "$writer_pid"
expect_in "the list holds the write it waited for" "$tmp/out" '"name":"fresh"'

# ---- 3. node identity -------------------------------------------------------------------------
"$xpool" agent --server "$base" --token-file "$tmp/node.token" --ca-file "$ca" --node-name "$node" \
  --data-dir "$tmp/agent" --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc" --listen 127.0.0.1:0 --heartbeat 500ms --backoff 1s >"$tmp/agent.log" 2>&1 &
agent_pid=$!
deadline=$((SECONDS + 60))
until "${k[@]}" get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; do
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the agent did not register:"; cat "$tmp/agent.log"; failures=$((failures + 1)); break; }
  sleep 0.2
done
check "the node's hostname label" 0 "${k[@]}" get node "$node" -o jsonpath='{.metadata.labels.kubernetes\.io/hostname} {.status.addresses[?(@.type=="Hostname")].address}'
expect_exact "hostname label and address are the node's name" "$tmp/out" "$node $node"
# a kubelet reports the release it speaks, as the server does; tools compare the two
check "the server's version" 0 "${k[@]}" version -o json
server_version=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])' <"$tmp/out")
check "the node's kubeletVersion" 0 "${k[@]}" get node "$node" -o jsonpath='{.status.nodeInfo.kubeletVersion}'
expect_exact "kubeletVersion is the server's Kubernetes release" "$tmp/out" "$server_version"
expect_in "the server speaks Kubernetes 1.32" "$tmp/out" "v1.32."
cat >"$tmp/pinned.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  nodeSelector: {kubernetes.io/hostname: $node}
  terminationGracePeriodSeconds: 3
  runtimeClassName: process
  containers:
  - name: c
    command: [sh, -c, 'trap "" TERM; while :; do sleep 0.05; done']
YAML
check "create a pod pinned by hostname" 0 "${k[@]}" apply -f "$tmp/pinned.yaml"
check "it runs on the node" 0 "${k[@]}" wait --for=jsonpath='{.status.phase}'=Running pod/pinned --timeout=120s
check "its node" 0 "${k[@]}" get pod pinned -o jsonpath='{.spec.nodeName}'
expect_exact "pinned to the node" "$tmp/out" "$node"
# its Events come from whom a cluster names: kube-scheduler's default profile, and the kubelet of
# the node (source.host and reportingInstance its name), so source=kubelet selects them
poll "the pod's Started Event comes from the node's kubelet" 60 "kubelet $node kubelet $node" \
  "${k[@]}" get events --field-selector source=kubelet,involvedObject.name=pinned,reason=Started \
  -o 'jsonpath={.items[0].source.component} {.items[0].source.host} {.items[0].reportingComponent} {.items[0].reportingInstance}'
check "the pod's Scheduled Event" 0 "${k[@]}" get events --field-selector source=default-scheduler,involvedObject.name=pinned,reason=Scheduled \
  -o 'jsonpath={.items[0].source.component} {.items[0].reportingComponent} {.items[0].reportingInstance}'
expect_exact "Scheduled comes from default-scheduler" "$tmp/out" "default-scheduler default-scheduler default-scheduler-$(hostname)"
# the pod's conditions in the kubelet's order, its sandbox up while it runs
check "the pod's conditions" 0 "${k[@]}" get pod pinned -o 'jsonpath={.status.conditions[*].type} {.status.conditions[0].status}'
expect_exact "conditions in the kubelet's order" "$tmp/out" "PodReadyToStartContainers Initialized Ready ContainersReady PodScheduled True"
check "describe the pinned pod" 0 "${k[@]}" describe pod pinned
cp "$tmp/out" "$tmp/describe"
check "describe: Scheduled from default-scheduler" 0 grep -Eq 'Normal +Scheduled +[^ ]+ +default-scheduler +Successfully assigned default/pinned' "$tmp/describe"
check "describe: Started from kubelet" 0 grep -Eq 'Normal +Started +[^ ]+ +kubelet +Started container c' "$tmp/describe"
# a pod without an image on a node whose default runtime runs images: Kubernetes refuses it at
# create (the image is required there); here the node says what to do
check "create a pod without an image" 0 "${k[@]}" run noimage --restart=Never --image=x \
  --overrides='{"spec":{"nodeName":"'"$node"'","containers":[{"name":"c","image":"","command":["true"]}]}}'
poll "the node says what a pod without an image needs" 60 \
  "container c has no image: runtime class crun runs containers from images (name an image, or set runtimeClassName: process to run its command on the node)" \
  "${k[@]}" get pod noimage -o 'jsonpath={.status.containerStatuses[0].lastState.terminated.message}{.status.containerStatuses[0].state.terminated.message}'
check "delete the pod without an image" 0 "${k[@]}" delete pod noimage --grace-period=0 --force

# ---- 6. kubectl delete: protobuf DeleteOptions, the grace in full ------------------------------
# the container ignores SIGTERM: it goes when the grace is over, not before (test_podsync checks
# the deadline itself: the grace counted from the SIGTERM, not to deletionTimestamp's second)
start=$(date +%s%N)
check "kubectl delete, a 3 s grace" 0 "${k[@]}" delete pod pinned --timeout=120s
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
expect_in "kubectl: deleted" "$tmp/out" 'pod "pinned" deleted'
[[ $elapsed_ms -ge 3000 ]] ||
  { echo "FAIL a 3 s grace ended after $elapsed_ms ms:"; cat "$tmp/agent.log"; failures=$((failures + 1)); }

# DeleteOptions as client-go's typed clients send them: protobuf in a runtime.Unknown envelope
/usr/bin/python3 -c 'import sys
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out
def field(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data
meta = field(1, b"meta.k8s.io/v1") + field(2, b"DeleteOptions")
raw = bytes([0x08]) + varint(0) + field(4, b"Background")
sys.stdout.buffer.write(b"k8s\0" + field(1, meta) + field(2, raw))' >"$tmp/delete.pb"
got=$(curl -sS --cacert "$ca" -X DELETE -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $admin" \
  -H 'Content-Type: application/vnd.kubernetes.protobuf' --data-binary "@$tmp/delete.pb" "$base$P/p4")
[[ $got == 200 ]] || { echo "FAIL protobuf DeleteOptions: HTTP $got"; cat "$tmp/out"; failures=$((failures + 1)); }
call "p4 is gone at once (gracePeriodSeconds 0)" 404 GET "$P/p4"

# kubectl drain: cordon, then evict what runs there through pods/eviction
for i in 5 6; do
  call "create e$i" 201 POST "$P" '{"metadata":{"name":"e'"$i"'"},"spec":{"nodeName":"'"$node"'","runtimeClassName":"process","containers":[{"name":"c","command":["sleep","600"]}]}}'
done
check "kubectl drain" 0 "${k[@]}" drain "$node" --force --ignore-daemonsets --grace-period=1 --timeout=120s
expect_in "drain: cordoned" "$tmp/out" "node/$node cordoned"
expect_in "drain: evicted e5" "$tmp/out" "pod/e5 evicted"
expect_in "drain: evicted e6" "$tmp/out" "pod/e6 evicted"
expect_in "drain: drained" "$tmp/out" "node/$node drained"
expect_in "drain: evicting, not deleting" "$tmp/out" "evicting pod default/e5"
check "the node is cordoned" 0 "${k[@]}" get node "$node" -o jsonpath='{.spec.unschedulable}'
expect_exact "unschedulable" "$tmp/out" "true"
call "evict a missing pod" 404 POST "$P/nope/eviction" '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"nope"}}'
expect_message "evict missing: message" 'pods "nope" not found'
call "evict under another name" 400 POST "$P/web/eviction" '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}'
expect_message "evict other name: message" 'name in URL does not match name in Eviction object'
call "evict web" 201 POST "$P/web/eviction" '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web"},"deleteOptions":{"gracePeriodSeconds":0}}'
expect_in "evict: Success" "$tmp/out" '"status":"Success"'
call "web evicted" 404 GET "$P/web"

finish "API fidelity"
