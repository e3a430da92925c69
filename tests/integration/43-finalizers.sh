#!/usr/bin/env bash
# Finalizers and deletecollection as kube-apiserver 1.32 has them (issue 15), with stock kubectl
# and the Python client:
#   - a DELETE of an object with metadata.finalizers marks it (deletionTimestamp,
#     deletionGracePeriodSeconds 0) and keeps it; no new finalizer may be added then (kube's
#     Forbidden message); the patch that removes the last one removes the object, and a watch
#     sees MODIFIED then DELETED; the same for a pod, and for a namespace, whose deletion waits
#     for its held contents;
#   - DELETE on a collection path (the Python client's delete_collection_namespaced_pod, curl
#     on ConfigMaps) deletes what the selector matches and answers the list of them; namespaces
#     refuse it (405), and discovery lists the verb;
#   - kubectl api-resources shows the verbs of Kubernetes 1.32 for ConfigMaps, Services,
#     EndpointSlices and Namespaces, and the OpenAPI documents (v3 and v2) have the collection's
#     DELETE (x-kubernetes-action deletecollection) wherever it is served;
#   - an EndpointSlice held by a finalizer is marked, not removed, by a user's DELETE and by the
#     endpoints controller's delete of the slice of a Service that went.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { echo "SKIP: python3-kubernetes is not installed"; exit 77; }
data=$tmp/data
ca=$data/pki/ca.crt
kc=$data/admin.kubeconfig
server_pid= base=
trap 'for p in $server_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data"
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$kc" | head -1)
k=(kubectl --kubeconfig "$kc")

call() { # name, expected HTTP code, method, path: the answer in $tmp/out
  local got
  got=$(curl -sS --cacert "$ca" -X "$3" -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $admin" "$base$4") ||
    got="curl failed ($?)"
  if [[ "$got" != "$2" ]]; then
    echo "FAIL $1: HTTP $got, expected $2"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}

events_since() { # path, resourceVersion: the watch's event types and names from then, one a line
  call "watch $1" 200 GET "$1?watch=1&resourceVersion=$2&timeoutSeconds=1"
  /usr/bin/python3 -c 'import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] != "BOOKMARK":
        meta = e["object"]["metadata"]
        print(e["type"], meta["name"], "marked" if "deletionTimestamp" in meta else "live")' "$tmp/out" >"$tmp/events"
}

py() { /usr/bin/python3 -c "$1" "$kc" "${@:2}"; }

# ---- 1. a ConfigMap held by its finalizer ---------------------------------------------------
cat >"$tmp/held.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: [example.com/hold]
data: {a: "1"}
YAML
check "create held" 0 "${k[@]}" create -f "$tmp/held.yaml"
rv=$("${k[@]}" get configmap held -o jsonpath='{.metadata.resourceVersion}')
check "delete held" 0 "${k[@]}" delete configmap held --wait=false
expect_exact "delete held: output" "$tmp/out" 'configmap "held" deleted'
check "held is kept" 0 "${k[@]}" get configmap held -o jsonpath='{.metadata.finalizers}|{.metadata.deletionGracePeriodSeconds}|{.data.a}'
expect_exact "held is kept: marked" "$tmp/out" '["example.com/hold"]|0|1'
check "held has a deletionTimestamp" 0 "${k[@]}" get configmap held -o jsonpath='{.metadata.deletionTimestamp}'
[[ "$(cat "$tmp/out")" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] ||
  { echo "FAIL deletionTimestamp: '$(cat "$tmp/out")'"; failures=$((failures + 1)); }
check "a second delete keeps it" 0 "${k[@]}" delete configmap held --wait=false
check "held still there" 0 "${k[@]}" get configmap held -o name
expect_exact "held still there: name" "$tmp/out" 'configmap/held'
check "no new finalizer once deleting" 1 "${k[@]}" patch configmap held --type=merge \
  -p '{"metadata":{"finalizers":["example.com/hold","example.com/b","example.com/a"]}}'
expect_exact "no new finalizer: message" "$tmp/err" 'The ConfigMap "held" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/a", "example.com/b"}'
check "data may still change" 0 "${k[@]}" patch configmap held --type=merge -p '{"data":{"a":"2"}}'
expect_exact "data may still change: output" "$tmp/out" 'configmap/held patched'
check "the last finalizer goes" 0 "${k[@]}" patch configmap held --type=json \
  -p '[{"op":"remove","path":"/metadata/finalizers"}]'
expect_exact "the last finalizer goes: output" "$tmp/out" 'configmap/held patched'
check "held is gone" 1 "${k[@]}" get configmap held
expect_exact "held is gone: message" "$tmp/err" 'Error from server (NotFound): configmaps "held" not found'
events_since /api/v1/namespaces/default/configmaps "$rv"
expect_exact "watch: MODIFIED (mark, data) then DELETED" "$tmp/events" 'MODIFIED held marked
MODIFIED held marked
DELETED held marked'

# ---- 2. a pod held by its finalizer ---------------------------------------------------------
cat >"$tmp/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: kept
  finalizers: [example.com/hold]
spec:
  containers:
  - {name: c, image: busybox:1.36, command: [sleep, "3600"]}
YAML
check "create kept pod" 0 "${k[@]}" create -f "$tmp/pod.yaml"
rv=$("${k[@]}" get pod kept -o jsonpath='{.metadata.resourceVersion}')
check "delete kept pod" 0 "${k[@]}" delete pod kept --wait=false
expect_exact "delete kept pod: output" "$tmp/out" 'pod "kept" deleted'
check "kept pod is marked" 0 "${k[@]}" get pod kept -o jsonpath='{.metadata.finalizers}|{.metadata.deletionGracePeriodSeconds}'
expect_exact "kept pod is marked: fields" "$tmp/out" '["example.com/hold"]|0'
check "kept pod's finalizer goes" 0 "${k[@]}" patch pod kept --type=json \
  -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'
expect_exact "kept pod's finalizer goes: output" "$tmp/out" 'pod/kept patched'
check "kept pod is gone" 1 "${k[@]}" get pod kept
events_since /api/v1/namespaces/default/pods "$rv"
# (the scheduler may write the unschedulable pod's condition meanwhile)
expect_in "pod watch: MODIFIED, marked" "$tmp/events" 'MODIFIED kept marked'
tail -1 "$tmp/events" >"$tmp/last"
expect_exact "pod watch: DELETED last" "$tmp/last" 'DELETED kept marked'

# ---- 3. a namespace waits for its held contents ---------------------------------------------
check "create ns" 0 "${k[@]}" create namespace fin
check "create held in ns" 0 "${k[@]}" create -n fin -f "$tmp/held.yaml"
check "delete ns" 0 "${k[@]}" delete namespace fin --wait=false
check "ns is Terminating" 0 "${k[@]}" get namespace fin -o jsonpath='{.status.phase}'
expect_exact "ns is Terminating: phase" "$tmp/out" 'Terminating'
check "held in ns is marked" 0 "${k[@]}" get configmap -n fin held -o jsonpath='{.metadata.deletionGracePeriodSeconds}'
expect_exact "held in ns is marked: grace" "$tmp/out" '0'
check "held in ns lets go" 0 "${k[@]}" patch configmap -n fin held --type=json \
  -p '[{"op":"remove","path":"/metadata/finalizers"}]'
poll "ns goes once its contents have" 60 'gone' \
  bash -c '"$@" get namespace fin -o name >/dev/null 2>&1 && echo there || echo gone' _ "${k[@]}"

# ---- 4. deletecollection --------------------------------------------------------------------
for n in a1 a2 a3 b1; do
  check "create pod $n" 0 "${k[@]}" run "$n" --image=busybox:1.36 --labels="app=${n:0:1}" --command -- sleep 3600
done
check "python: delete_collection_namespaced_pod" 0 py 'import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
answer = v1.delete_collection_namespaced_pod("default", label_selector="app=a")
print(answer.kind)
print(" ".join(sorted(p.metadata.name for p in v1.list_namespaced_pod("default").items)))'
expect_exact "python: deleted what matched" "$tmp/out" 'PodList
b1'
for n in c1 c2 d1; do
  check "create configmap $n" 0 "${k[@]}" create configmap "$n" --from-literal=x=1
  check "label configmap $n" 0 "${k[@]}" label configmap "$n" "set=${n:0:1}"
done
call "deletecollection configmaps" 200 DELETE "/api/v1/namespaces/default/configmaps?labelSelector=set%3Dc"
/usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["kind"], d["apiVersion"], " ".join(sorted(i["metadata"]["name"] for i in d["items"])))' "$tmp/out" >"$tmp/list"
expect_exact "deletecollection: the list deleted" "$tmp/list" 'ConfigMapList v1 c1 c2'
check "d1 stays" 0 "${k[@]}" get configmap -l set -o name
expect_exact "d1 stays: names" "$tmp/out" 'configmap/d1'
call "deletecollection of a bad selector" 400 DELETE "/api/v1/namespaces/default/configmaps?labelSelector=a%3D%3D%3D"
call "namespaces refuse deletecollection" 405 DELETE "/api/v1/namespaces"
call "discovery lists deletecollection" 200 GET /api/v1
expect_in "discovery: pods" "$tmp/out" '"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]'
expect_in "discovery: namespaces" "$tmp/out" '"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"]'

# ---- 5. deletecollection in discovery and the OpenAPI documents, as on Kubernetes 1.32 ----------
check "api-resources -o wide" 0 "${k[@]}" api-resources -o wide
sed 's/ *$//; s/  */ /g' "$tmp/out" | grep -E '^(configmaps|endpointslices|namespaces|services) ' >"$tmp/rows"
expect_exact "api-resources: the verbs" "$tmp/rows" 'configmaps cm v1 true ConfigMap create,delete,deletecollection,get,list,patch,update,watch
namespaces ns v1 false Namespace create,delete,get,list,patch,update,watch
services svc v1 true Service create,delete,deletecollection,get,list,patch,update,watch all
endpointslices discovery.k8s.io/v1 true EndpointSlice create,delete,deletecollection,get,list,patch,update,watch'
collection_ops() { # document path, collection paths...: "PATH METHOD ACTION" of each DELETE
  call "openapi $1" 200 GET "$1"
  /usr/bin/python3 -c 'import json, sys
paths = json.load(open(sys.argv[1]))["paths"]
for p in sys.argv[2:]:
    op = paths[p].get("delete")
    print(p, op["x-kubernetes-action"] if op else "none",
          ",".join(q["name"] for q in op["parameters"]) if op else "")' "$tmp/out" "${@:2}" >"$tmp/ops"
}
collection_ops /openapi/v3/api/v1 /api/v1/namespaces/{namespace}/pods /api/v1/namespaces/{namespace}/services \
  /api/v1/namespaces/{namespace}/configmaps /api/v1/nodes /api/v1/namespaces
expect_exact "openapi v3 core: deletecollection on collections, not namespaces" "$tmp/ops" '/api/v1/namespaces/{namespace}/pods deletecollection namespace,labelSelector,fieldSelector,dryRun
/api/v1/namespaces/{namespace}/services deletecollection namespace,labelSelector,fieldSelector,dryRun
/api/v1/namespaces/{namespace}/configmaps deletecollection namespace,labelSelector,fieldSelector,dryRun
/api/v1/nodes deletecollection labelSelector,fieldSelector,dryRun
/api/v1/namespaces none '
collection_ops /openapi/v3/apis/discovery.k8s.io/v1 /apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices
expect_exact "openapi v3 discovery.k8s.io" "$tmp/ops" '/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices deletecollection namespace,labelSelector,fieldSelector,dryRun'
collection_ops /openapi/v2 /api/v1/namespaces/{namespace}/pods
expect_exact "openapi v2" "$tmp/ops" '/api/v1/namespaces/{namespace}/pods deletecollection namespace,labelSelector,fieldSelector,dryRun'

# ---- 6. EndpointSlices honour finalizers, the endpoints controller's deletes too -------------
cat >"$tmp/svc.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: fin}
spec:
  selector: {app: fin}
  ports: [{port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: mine
  finalizers: [example.com/hold]
addressType: IPv4
endpoints: []
YAML
check "create the Service and a slice of mine" 0 "${k[@]}" create -f "$tmp/svc.yaml"
check "delete my slice" 0 "${k[@]}" delete endpointslice mine --wait=false
check "my slice is kept, marked" 0 "${k[@]}" get endpointslice mine -o jsonpath='{.metadata.finalizers}|{.metadata.deletionGracePeriodSeconds}'
expect_exact "my slice is kept: fields" "$tmp/out" '["example.com/hold"]|0'
check "my slice lets go" 0 "${k[@]}" patch endpointslice mine --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
check "my slice is gone" 1 "${k[@]}" get endpointslice mine
slice_of_fin() { "${k[@]}" get endpointslice -l kubernetes.io/service-name=fin -o jsonpath='{.items[*].metadata.name}'; }
has_slice() { [[ -n "$(slice_of_fin)" ]] && echo yes || echo no; }
slice_hold() { "${k[@]}" get endpointslice "$slice" -o jsonpath='{.metadata.finalizers}|{.metadata.deletionGracePeriodSeconds}' 2>&1; }
slice_there() { "${k[@]}" get endpointslice "$slice" -o name >/dev/null 2>&1 && echo there || echo gone; }
poll "the controller's slice of fin" 120 yes has_slice
slice=$(slice_of_fin)
check "hold the controller's slice" 0 "${k[@]}" patch endpointslice "$slice" --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}'
check "delete the Service" 0 "${k[@]}" delete service fin
poll "the controller's slice is marked, not removed" 120 '["example.com/hold"]|0' slice_hold
check "the controller's slice lets go" 0 "${k[@]}" patch endpointslice "$slice" --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
poll "the controller's slice is gone" 120 gone slice_there

finish "finalizers"
