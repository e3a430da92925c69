#!/usr/bin/env bash
# Leftovers of the workloads and API-fidelity issues, against `xpool server` alone (pods stay
# Pending and count for their quota):
# - a ResourceQuota has status.hard and zero used from its create (kubectl describe quota shows
#   the counters at once), and its status counts what admission counts: two GPU pods show 2/2,
#   and the third is refused with that same usage in Kubernetes' message;
# - kubectl get --watch (-o wide too) receives its watch as Tables (as=Table;g=meta.k8s.io in the
#   watch's Accept), the columns once, and prints a row per change;
# - a JSON patch that does not apply is kube-apiserver's 422: "the server rejected our request
#   due to an error in our request", with the JSON patch library's words as a Warning, and one of
#   more than 10000 operations its 413, one that is no array a 400 in Go's decoder's words;
# - kubectl create and describe of a ConfigMap, a Secret (its size, not its value) and a CronJob.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid= watch_pid=
base=
trap '[[ -z "$watch_pid" ]] || kill -TERM "$watch_pid" 2>/dev/null; [[ -z "$server_pid" ]] || kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data"
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=60s)
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)

# ---- quota: counters from the create, the same usage in status and admission -------------
check "create quota" 0 "${k[@]}" create quota gpus --hard=requests.nvidia.com/gpu=2,pods=4
check "status at once" 0 "${k[@]}" get quota gpus -o 'jsonpath={.status}'
expect_exact "hard and zero used" "$tmp/out" '{"hard":{"pods":"4","requests.nvidia.com/gpu":"2"},"used":{"pods":"0","requests.nvidia.com/gpu":"0"}}'
check "describe quota" 0 "${k[@]}" describe quota gpus
expect_exact "describe shows the counters" "$tmp/out" 'Name:                    gpus
Namespace:               default
Resource                 Used  Hard
--------                 ----  ----
pods                     0     4
requests.nvidia.com/gpu  0     2'

gpu_pod() { # name
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  containers:
  - {name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}
YAML
}
gpu_pod g1 >"$tmp/g1.yaml"
gpu_pod g2 >"$tmp/g2.yaml"
gpu_pod g3 >"$tmp/g3.yaml"
check "first GPU pod" 0 "${k[@]}" create -f "$tmp/g1.yaml"
check "second GPU pod" 0 "${k[@]}" create -f "$tmp/g2.yaml"
poll "status counts both" 60 "2 2" "${k[@]}" get quota gpus -o 'jsonpath={.status.used.pods} {.status.used.requests\.nvidia\.com/gpu}'
check "get quota" 0 "${k[@]}" get quota gpus
expect_in "kubectl get quota" "$tmp/out" "pods: 2/4, requests.nvidia.com/gpu: 2/2"
check "third GPU pod refused" 1 "${k[@]}" create -f "$tmp/g3.yaml"
expect_in "Kubernetes' message with the status's usage" "$tmp/err" 'pods "g3" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2'
check "delete one" 0 "${k[@]}" delete pod g1 --wait=false
poll "status gives it back" 60 "1 1" "${k[@]}" get quota gpus -o 'jsonpath={.status.used.pods} {.status.used.requests\.nvidia\.com/gpu}'
check "describe quota again" 0 "${k[@]}" describe quota gpus
expect_in "describe: 1 of 2" "$tmp/out" 'requests.nvidia.com/gpu  1     2'
check "now the third fits" 0 "${k[@]}" create -f "$tmp/g3.yaml"

# ---- kubectl get --watch in Table form -------------------------------------------------------
# the watch as kubectl asks for it: each event's object a Table, the columns with the first only
table='application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'
rv=$("${k[@]}" get --raw /api/v1/namespaces/default/pods | grep -o '"resourceVersion":"[0-9]*"' | head -1 | cut -d'"' -f4)
"${k[@]}" label pod g2 step=one >/dev/null
"${k[@]}" label pod g3 step=one >/dev/null
check "a Table watch" 0 curl -sS --max-time 60 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" \
  -H "Accept: $table" "$base/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv&timeoutSeconds=1"
expect_count "two events" "$tmp/out" 2 '{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1"'
expect_count "the columns with the first" "$tmp/out" 1 '"columnDefinitions":[{"name":"Name"'
expect_count "none after" "$tmp/out" 1 '"columnDefinitions":[]'
expect_in "a row of g3" "$tmp/out" '"cells":["g3","0/1","Pending","0",'

"${k[@]/--request-timeout=60s/--request-timeout=0}" get pods -w -o wide >"$tmp/watch.out" 2>"$tmp/watch.err" &
watch_pid=$!
poll "kubectl lists first" 60 yes bash -c "grep -q '^g3 ' '$tmp/watch.out' && echo yes"
check "a pod created while watching" 0 "${k[@]}" run w1 --image=busybox --restart=Never
poll "the watch prints its row" 60 yes bash -c "grep -q '^w1 ' '$tmp/watch.out' && echo yes"
kill -TERM "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
watch_pid=
# the AGE column is as wide as the widest age listed: 3 characters up to 99s, 4 from 100s (a
# run at load 30 may take that long since g2's create), so its padding is left out of the check
sed -E 's/^(NAME   READY   STATUS    RESTARTS   AGE) +DEVICES/\1   DEVICES/' "$tmp/watch.out" >"$tmp/watch.agepad"
expect_count "the header once, with -o wide's columns" "$tmp/watch.agepad" 1 "NAME   READY   STATUS    RESTARTS   AGE   DEVICES            IP       NODE     NOMINATED NODE   READINESS GATES"
expect_in "w1's wide row" "$tmp/watch.out" "<none>             <none>   <none>   <none>           <none>"
if [[ -s "$tmp/watch.err" ]]; then
  echo "FAIL kubectl get -w complained:"; cat "$tmp/watch.err"; failures=$((failures + 1))
fi

# ---- JSON patch errors in kube-apiserver's words ----------------------------------------------
# kubectl prints a cluster's line; what failed comes as a Warning, which kubectl prints above it
check "a test that fails" 1 "${k[@]}" patch pod g2 --type=json -p '[{"op":"test","path":"/spec/x","value":1}]'
expect_exact "kubectl's lines" "$tmp/err" "Warning: testing value /spec/x failed: test failed
The request is invalid: the server rejected our request due to an error in our request"
check "a remove of nothing" 1 "${k[@]}" patch pod g2 --type=json -p '[{"op":"remove","path":"/spec/x"}]'
expect_in "doc is missing path" "$tmp/err" 'Warning: remove operation does not apply: doc is missing path: "/spec/x": missing value'
check "the Status of a replace of nothing" 0 curl -sS --max-time 10 -D "$tmp/headers" --cacert "$data/pki/ca.crt" \
  -H "Authorization: Bearer $token" -X PATCH -H 'Content-Type: application/json-patch+json' \
  --data-binary '[{"op":"replace","path":"/spec/x","value":1}]' "$base/api/v1/namespaces/default/pods/g2"
expect_exact "kube-apiserver's Status" "$tmp/out" '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{},"code":422}'
expect_in "the Warning header" "$tmp/headers" 'Warning: 299 - "replace operation does not apply: doc is missing key: /spec/x: missing value"'
# a patch that is no array: Go's decoder's words in a 400, as kube-apiserver answers: its strict
# decode first for the default directive (Warn: kubectl patch sends none), the JSON patch
# library's for Ignore (75-fidelity-sweep has the other shapes)
check "an object as a JSON patch" 1 "${k[@]}" patch pod g2 --type=json -p '{"op":"add"}'
expect_exact "kubectl's line" "$tmp/err" "Error from server (BadRequest): error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
check "the Status of an object as a JSON patch" 0 curl -sS --max-time 10 --cacert "$data/pki/ca.crt" \
  -H "Authorization: Bearer $token" -X PATCH -H 'Content-Type: application/json-patch+json' \
  --data-binary '{"op":"add"}' "$base/api/v1/namespaces/default/pods/g2?fieldValidation=Ignore"
expect_in "400 BadRequest" "$tmp/out" '"message":"json: cannot unmarshal object into Go value of type jsonpatch.Patch","reason":"BadRequest"'
expect_in "its code" "$tmp/out" '"code":400'
# more operations than kube-apiserver takes: its 413 and words, before any operation applies
/usr/bin/python3 -c 'import json; print(json.dumps([{"op": "add", "path": "/metadata/labels/step", "value": "two"}] * 10001))' >"$tmp/ops.json"
check "10001 operations" 1 "${k[@]}" patch pod g2 --type=json --patch-file "$tmp/ops.json"
expect_exact "kubectl's line" "$tmp/err" "Error from server (RequestEntityTooLarge): Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
check "the pod is as it was" 0 "${k[@]}" get pod g2 -o 'jsonpath={.metadata.labels.step}'
expect_exact "unchanged" "$tmp/out" "one"

# ---- kubectl create and describe of the configuration and batch kinds (issue 18, item 4) ------
check "create configmap" 0 "${k[@]}" create configmap settings --from-literal=mode=fast
check "describe configmap" 0 "${k[@]}" describe configmap settings
expect_in "its data" "$tmp/out" "mode:
----
fast"
check "create secret" 0 "${k[@]}" create secret generic creds --from-literal=password=s3cret
check "describe secret" 0 "${k[@]}" describe secret creds
grep -Eq '^password: +6 bytes$' "$tmp/out" || { echo "FAIL describe secret: no size line:"; cat "$tmp/out"; failures=$((failures + 1)); }
if grep -q s3cret "$tmp/out"; then
  echo "FAIL describe secret shows the value"; failures=$((failures + 1))
fi
check "create cronjob" 0 "${k[@]}" create cronjob nightly --image=busybox --schedule='0 3 * * *' -- true
check "describe cronjob" 0 "${k[@]}" describe cronjob nightly
grep -Eq '^Schedule: +0 3 \* \* \*$' "$tmp/out" || { echo "FAIL describe cronjob: no schedule:"; cat "$tmp/out"; failures=$((failures + 1)); }
grep -Eq '^Suspend: +False$' "$tmp/out" || { echo "FAIL describe cronjob: no Suspend:"; cat "$tmp/out"; failures=$((failures + 1)); }

finish "quota, watch and patch"
