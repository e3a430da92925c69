#!/usr/bin/env bash
# The red team's second round (docs/reliability.md, "Red team, second round"): what a tenant
# holding a ServiceAccount token, and an outsider, may reach on `xpool up --simulate`.
#   - a service account without a role reads only discovery: not the metrics API
#     (metrics.k8s.io pods and nodes, metrics.xpool.io devices and http_sd), which held every
#     namespace's pod names and usage and was served to it as a discovery path before the fix;
#     the discovery documents of those groups stay readable; a reader account reads the metrics;
#   - a process pod's terminals: the node's /dev/pts held every terminal of the node (an admin's
#     ssh session), which a root process pod opened and wrote to before the fix, and /dev/console
#     opened read-write; now a devpts of its own (its own ptys work), /dev/console /dev/null, or
#     with tty: true its own terminal (needs root: mount namespaces);
#   - what held, kept held: Secrets (get, list, watch, Table, other namespaces) for a reader
#     account, /metrics and the dashboard's history for an account without a role,
#     impersonation, a TokenRequest for another account, and every path for an outsider.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
data=$tmp/data
up_pid=
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -KILL "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT

log=$tmp/up.log
"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name rt-node \
  --pod-network host --default-runtime process >"$log" 2>&1 &
up_pid=$!
diag_log "$log"
deadline=$((SECONDS + 120))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 120 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
server=$("${k[@]}" config view -o jsonpath='{.clusters[0].cluster.server}')
ca=$data/pki/ca.crt
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)

# code NAME WANT TOKEN METHOD PATH [BODY] [HEADER]: the HTTP status of a call with that token
code() {
  local name=$1 want=$2 tok=$3 method=$4 path=$5 body=${6:-} header=${7:-} got
  local args=(-sS --cacert "$ca" -X "$method" -o "$tmp/out" -w '%{http_code}')
  [[ -n "$tok" ]] && args+=(-H "Authorization: Bearer $tok")
  [[ -n "$header" ]] && args+=(-H "$header")
  [[ -n "$body" && "$header" != Content-Type:* ]] && args+=(-H "Content-Type: application/json")
  [[ -n "$body" ]] && args+=(--data-binary "$body")
  got=$(curl "${args[@]}" "$server$path") || true
  [[ "$got" == "$want" ]] || { echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1)); }
}

check "a tenant namespace" 0 "${k[@]}" create namespace team
check "another" 0 "${k[@]}" create namespace other
check "the tenant's account" 0 "${k[@]}" -n team create serviceaccount tenant
check "a reader account" 0 "${k[@]}" -n team create serviceaccount watcher
check "made reader" 0 "${k[@]}" -n team annotate serviceaccount watcher xpool.io/role=reader
check "a secret of the other namespace" 0 "${k[@]}" -n other create secret generic db --from-literal=password=hunter2
check "a pod of the other namespace" 0 "${k[@]}" -n other run victim --image=busybox --restart=Never -- sleep 600
poll "the pod is bound" 60 rt-node "${k[@]}" -n other get pod victim -o jsonpath='{.spec.nodeName}'
"${k[@]}" -n team create token tenant >"$tmp/tenant.token"
"${k[@]}" -n team create token watcher >"$tmp/watcher.token"
tenant=$(cat "$tmp/tenant.token")
watcher=$(cat "$tmp/watcher.token")

# ---- a service account without a role: discovery only, not the metrics API ----------------------
M=/apis/metrics.k8s.io/v1beta1
code "metrics: every pod" 403 "$tenant" GET "$M/pods"
expect_in "in Kubernetes' words" "$tmp/out" 'pods.metrics.k8s.io is forbidden: User \"system:serviceaccount:team:tenant\" cannot list resource \"pods\" in API group \"metrics.k8s.io\" at the cluster scope'
code "metrics: another namespace's pods" 403 "$tenant" GET "$M/namespaces/other/pods"
code "metrics: one pod" 403 "$tenant" GET "$M/namespaces/other/pods/victim"
code "metrics: its own namespace" 403 "$tenant" GET "$M/namespaces/team/pods"
code "metrics: nodes" 403 "$tenant" GET "$M/nodes"
code "metrics: a node" 403 "$tenant" GET "$M/nodes/rt-node"
code "devices" 403 "$tenant" GET /apis/metrics.xpool.io/v1alpha1/devices
code "Prometheus' discovery" 403 "$tenant" GET /apis/metrics.xpool.io/v1alpha1/http_sd
code "the group's discovery stays" 200 "$tenant" GET "$M"
code "the group itself" 200 "$tenant" GET /apis/metrics.k8s.io
code "discovery" 200 "$tenant" GET /api/v1
code "can-i agrees" 201 "$tenant" POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews \
  '{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"list","group":"metrics.k8s.io","resource":"pods"}}}'
expect_in "not allowed" "$tmp/out" '"allowed":false'
# the metrics stay served to those who read them (whatever the simulated node has measured)
code "a reader account reads them" 200 "$watcher" GET "$M/pods"
expect_in "a list" "$tmp/out" '"kind":"PodMetricsList"'
code "the admin too" 200 "$admin" GET "$M/nodes"
code "a reader: devices" 200 "$watcher" GET /apis/metrics.xpool.io/v1alpha1/devices

# ---- a process pod and the node's terminals ------------------------------------------------------
if [[ $(id -u) -eq 0 ]]; then
  /usr/bin/python3 -c 'import pty, os, sys, time
master, slave = pty.openpty()
print(os.ttyname(slave), flush=True)
time.sleep(120)' >"$tmp/pty.name" &
  pty_pid=$!
  poll "a terminal of the node" 60 yes sh -c "grep -q /dev/pts/ '$tmp/pty.name' && echo yes"
  node_pty=$(cat "$tmp/pty.name")
  cat >"$tmp/terminals.sh" <<EOF
if (exec 3<>$node_pty) 2>/dev/null; then echo "node terminal: opened"; else echo "node terminal: not opened"; fi
echo "console: \$(stat -c %t:%T /dev/console)"
/usr/bin/python3 -c 'import pty, os; m, s = pty.openpty(); print("own terminal:", os.ttyname(s))'
EOF
  check "a pod trying the node's terminals" 0 "${k[@]}" -n other run terms --image=busybox --restart=Never --command -- sh "$tmp/terminals.sh"
  poll "it ends" 60 Succeeded "${k[@]}" -n other get pod terms -o jsonpath='{.status.phase}'
  "${k[@]}" -n other logs terms >"$tmp/terms.log" 2>&1 || true
  expect_in "the node's terminal stays closed to it" "$tmp/terms.log" "node terminal: not opened"
  expect_in "its console is /dev/null (1:3)" "$tmp/terms.log" "console: 1:3"
  expect_in "its own terminals work" "$tmp/terms.log" "own terminal: /dev/pts/0"
  # tty: true, whose terminal the shim opens on the node's devpts: the same, its terminal on
  # /dev/console (before the fix of the fix it kept the node's /dev/pts, every terminal in it)
  echo 'echo "terminal: $(tty)"' >>"$tmp/terminals.sh"
  cat >"$tmp/tty.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: ttyterms, namespace: other}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: [sh, $tmp/terminals.sh], tty: true, stdin: true}
EOF
  check "a tty: true pod trying them" 0 "${k[@]}" apply -f "$tmp/tty.yaml"
  poll "it ends" 60 Succeeded "${k[@]}" -n other get pod ttyterms -o jsonpath='{.status.phase}'
  "${k[@]}" -n other logs ttyterms 2>&1 | tr -d '\r' >"$tmp/ttyterms.log" || true
  expect_in "tty: the node's terminal stays closed to it" "$tmp/ttyterms.log" "node terminal: not opened"
  expect_in "tty: its own terminals work" "$tmp/ttyterms.log" "own terminal: /dev/pts/0"
  expect_in "tty: its terminal is its console" "$tmp/ttyterms.log" "terminal: /dev/console"
  kill "$pty_pid" 2>/dev/null || true
  wait "$pty_pid" 2>/dev/null || true
else
  echo "SKIP the terminal checks: they need root (mount namespaces)"
fi

# ---- what held, kept held -------------------------------------------------------------------------
code "no role: /metrics" 403 "$tenant" GET /metrics
code "no role: the dashboard's history" 403 "$tenant" GET /ui/api/history
code "no role: pods" 403 "$tenant" GET /api/v1/namespaces/team/pods
code "no role: a token for another account" 403 "$tenant" POST /api/v1/namespaces/team/serviceaccounts/watcher/token \
  '{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","spec":{}}'
code "no role: impersonating the admin" 403 "$tenant" GET /api/v1/secrets "" "Impersonate-User: admin"
code "reader: a secret" 403 "$watcher" GET /api/v1/namespaces/other/secrets/db
code "reader: the list" 403 "$watcher" GET /api/v1/secrets
code "reader: by field selector" 403 "$watcher" GET "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%3Ddb"
code "reader: a watch" 403 "$watcher" GET "/api/v1/namespaces/other/secrets?watch=1&resourceVersion=0"
code "reader: as a Table" 403 "$watcher" GET /api/v1/namespaces/other/secrets "" \
  "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"
code "reader: exec in another namespace" 403 "$watcher" POST "/api/v1/namespaces/other/pods/victim/exec?command=id&stdout=1"
code "reader: an eviction" 403 "$watcher" POST /api/v1/namespaces/other/pods/victim/eviction \
  '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"other"}}'
code "reader: a dry-run patch" 403 "$watcher" PATCH "/api/v1/namespaces/other/pods/victim?dryRun=All" \
  '{"metadata":{"labels":{"x":"y"}}}' "Content-Type: application/merge-patch+json"
code "reader: a binding" 403 "$watcher" POST /api/v1/namespaces/other/pods/victim/binding \
  '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"victim"},"target":{"kind":"Node","name":"rt-node"}}'
code "reader: making itself admin" 403 "$watcher" PATCH /api/v1/namespaces/team/serviceaccounts/watcher \
  '{"metadata":{"annotations":{"xpool.io/role":"admin"}}}' "Content-Type: application/merge-patch+json"
for path in /api/v1/secrets "$M/pods" /metrics /ui/api/history /apis/metrics.xpool.io/v1alpha1/http_sd; do
  code "an outsider: $path" 401 "" GET "$path"
done
code "a forged token (alg none)" 401 "eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTp0ZW5hbnQifQ." GET "$M/pods"
code "the secret untouched" 200 "$admin" GET /api/v1/namespaces/other/secrets/db

finish "the red team's second round"
