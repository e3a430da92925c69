#!/usr/bin/env bash
# kubectl's typed commands send Kubernetes protobuf (kubectl create namespace); the server reads
# it into the JSON it accepts. Against the real server over TLS with its admin kubeconfig: create
# a namespace and a pod with kubectl and read them back; with curl, post a Pod body (tests/data/
# protobuf/pod-d.pb) and bodies the server must refuse with 415 and a message saying why.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
server_pid=
trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

log=$tmp/server.log
: >"$log"
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$log" 2>&1 &
server_pid=$!
diag_log "$log"
deadline=$((SECONDS + 60))
until grep -q 'xpool server listening on https://' "$log" && [[ -s "$data/admin.kubeconfig" ]]; do
  kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not start within 60 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
export KUBECONFIG=$data/admin.kubeconfig
k() { kubectl --request-timeout=10s "$@"; }

# kubectl create namespace: protobuf on the wire (its -v=8 log shows the request's Content-Type)
check "create namespace" 0 k create namespace x -v=8
expect_in "create namespace sends protobuf" "$tmp/err" "Content-Type: application/vnd.kubernetes.protobuf"
expect_in "create namespace answer" "$tmp/out" "namespace/x created"
check "get namespace" 0 k get namespace x -o 'jsonpath={.metadata.name} {.status.phase} {.spec.finalizers[0]}'
expect_in "get namespace" "$tmp/out" "x Active kubernetes"
check "create namespace again" 1 k create namespace x
expect_in "create namespace again" "$tmp/err" "AlreadyExists"
check "create namespace bad name" 1 k create namespace Bad_Name
expect_in "create namespace bad name" "$tmp/err" "Bad_Name"

# kubectl run (kubectl 1.32 sends JSON here, other versions protobuf: both must work)
check "run" 0 k run p -n x --image=busybox --restart=Never --labels=a=b
expect_in "run answer" "$tmp/out" "pod/p created"
check "get pod" 0 k get pod p -n x -o yaml
expect_in "get pod name" "$tmp/out" "name: p"
expect_in "get pod namespace" "$tmp/out" "namespace: x"
expect_in "get pod label" "$tmp/out" "a: b"
expect_in "get pod image" "$tmp/out" "image: busybox"
expect_in "get pod restartPolicy" "$tmp/out" "restartPolicy: Never"
expect_in "get pod phase" "$tmp/out" "phase: Pending"

if command -v curl >/dev/null; then
  server=$(sed -n 's/^[[:space:]]*server:[[:space:]]*//p' "$KUBECONFIG" | head -1)
  token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" 2>/dev/null | head -1 || true)
  post() { # name, expected HTTP code, path, body file: the answer in $tmp/out
    local got
    got=$(curl -sSk -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/vnd.kubernetes.protobuf' --data-binary "@$3" "$server$2") ||
      got="curl failed"
    [[ "$got" == "$1" ]] || { echo "FAIL post $3: HTTP $got, expected $1"; cat "$tmp/out"; failures=$((failures + 1)); }
  }
  pb=$src/tests/data/protobuf
  post 201 /api/v1/namespaces/default/pods "$pb/pod-d.pb"
  check "get protobuf pod" 0 k get pod d -n default -o 'jsonpath={.metadata.labels.app} {.spec.containers[0].ports[0].containerPort} {.spec.containers[1].image}'
  expect_in "get protobuf pod" "$tmp/out" "d 8080 cuda:12"
  # a kind without a protobuf message: kubectl create deployment's body with its kind renamed
  python3 -c 'import sys; sys.stdout.buffer.write(open(sys.argv[1], "rb").read().replace(b"Deployment", b"Deploymenx"))' \
    "$pb/deployment-d.pb" >"$tmp/unknown.pb"
  post 415 /api/v1/namespaces/default/pods "$tmp/unknown.pb"
  expect_in "unsupported kind" "$tmp/out" "kind Deploymenx (apiVersion apps/v1) are not supported"
  head -c 40 "$pb/namespace-x.pb" >"$tmp/cut.pb"
  post 415 /api/v1/namespaces "$tmp/cut.pb"
  expect_in "truncated body" "$tmp/out" "the protobuf request body could not be read"
  post 400 /api/v1/namespaces "$pb/pod-j.pb"
  expect_in "kind of another resource" "$tmp/out" "does not match the resource"
fi
finish "kubectl protobuf"
