#!/usr/bin/env bash
# Disruption budgets, eviction and drain, and the kubernetes Service, with stock kubectl on
# `xpool up` (pods as processes of the node): a PodDisruptionBudget made by `kubectl create pdb`
# with the figures the disruption controller writes and kubectl's columns; an eviction refused
# with kube-apiserver's 429 and its DisruptionBudget cause; two budgets over one pod (500); the
# validation's words; `kubectl drain` retrying on 429 until the budget allows, then done;
# `kubectl cluster-info`, `get svc` and `get endpoints kubernetes` as on a cluster, and cluster
# IPs from the range.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
node=pdb-node
up_pid=
drain_pid=
mark=$$
cleanup() {
  local p
  [[ -z "$drain_pid" ]] || kill "$drain_pid" 2>/dev/null || true
  if [[ -n "$up_pid" ]]; then
    kill -TERM "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  # the pods' processes outlive xpool up by design: this run's end here
  for p in /proc/[0-9]*; do
    if [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"sleep 3600.$mark"* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  unmount_under_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"
diag_run "timeout 20 kubectl get pdb,svc,ep -o yaml"
log=$tmp/up.log
"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --node-name "$node" --pod-network host \
  --default-runtime process --heartbeat 1s >"$log" 2>&1 &
up_pid=$!
diag_log "$log"
deadline=$((SECONDS + 20))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 20 s"; cat "$log"; exit 1; }
  sleep 0.1
done
server=$(kubectl config view --raw -o 'jsonpath={.clusters[0].cluster.server}')
token=$(kubectl config view --raw -o 'jsonpath={.users[0].user.token}')
port=${server##*:}

# ---- the kubernetes Service and cluster-info --------------------------------------------------
check "kubectl cluster-info" 0 kubectl cluster-info
printf 'Kubernetes control plane is running at %s\n\nTo further debug and diagnose cluster problems, use %s.\n' \
  "$server" "'kubectl cluster-info dump'" >"$tmp/want"
if ! diff -u "$tmp/want" "$tmp/out"; then
  echo "FAIL cluster-info is not word for word"; failures=$((failures + 1))
fi
check "kubectl get svc" 0 kubectl get svc
expect_in "svc header" "$tmp/out" "NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE"
expect_in "svc row" "$tmp/out" "kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP   "
check "kubectl get endpoints kubernetes" 0 kubectl get endpoints kubernetes
expect_in "endpoints header" "$tmp/out" "NAME         ENDPOINTS"
expect_in "endpoints row" "$tmp/out" "kubernetes   127.0.0.1:$port"
check "kubectl get endpointslice kubernetes" 0 kubectl get endpointslice kubernetes
expect_in "endpointslice row" "$tmp/out" "kubernetes   IPv4          $port   127.0.0.1"
check "kubectl create service clusterip" 0 kubectl create service clusterip api --tcp=80:8080
check "its cluster IP" 0 kubectl get svc api -o 'jsonpath={.spec.clusterIP} {.spec.ports[0].targetPort} {.spec.type}'
if ! grep -Eq '^10\.(9[6-9]|10[0-9]|11[01])\.[0-9]+\.[0-9]+ 8080 ClusterIP$' "$tmp/out"; then
  echo "FAIL the cluster IP is not from 10.96.0.0/12:"; cat "$tmp/out"; failures=$((failures + 1))
fi
cat >"$tmp/svc.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: outside}
spec: {clusterIP: 192.168.7.7, ports: [{port: 80}]}
EOF
check "a cluster IP outside the range" 1 kubectl apply -f "$tmp/svc.yaml"
expect_in "its message" "$tmp/err" 'The Service "outside" is invalid: spec.clusterIPs: Invalid value: []string{"192.168.7.7"}: failed to allocate IP 192.168.7.7: provided IP (192.168.7.7) is not in the valid range. The range of valid IPs is 10.96.0.0/12'

# ---- a Deployment of 2 and its budget ---------------------------------------------------------
cat >"$tmp/web.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: main, image: web:1, command: [sleep, "3600.$mark"]}
EOF
check "create the Deployment" 0 kubectl apply -f "$tmp/web.yaml"
check "kubectl create pdb" 0 kubectl create pdb web --selector=app=web --min-available=2
poll "the budget's figures" 30 "2 2 2 0 InsufficientPods" kubectl get pdb web -o \
  'jsonpath={.status.currentHealthy} {.status.desiredHealthy} {.status.expectedPods} {.status.disruptionsAllowed} {.status.conditions[?(@.type=="DisruptionAllowed")].reason}'
check "kubectl get pdb" 0 kubectl get pdb
expect_in "pdb header" "$tmp/out" "NAME   MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE"
expect_in "pdb row" "$tmp/out" "web    2               N/A               0                     "

pod=$(kubectl get pods -l app=web -o 'jsonpath={.items[0].metadata.name}')
evict() { # pod: POSTs its Eviction; the body in $tmp/evict, the status code printed
  curl -sk -o "$tmp/evict" -w '%{http_code}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -X POST \
    "$server/api/v1/namespaces/default/pods/$1/eviction" \
    -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$1\"}}"
}
check "an eviction the budget forbids" 0 evict "$pod"
expect_in "429" "$tmp/out" "429"
/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["reason"], "|", s["message"], "|", s["details"]["causes"][0]["reason"], "|", s["details"]["causes"][0]["message"])' \
  "$tmp/evict" >"$tmp/status" 2>&1 || true
expect_in "the Status" "$tmp/status" "TooManyRequests | Cannot evict pod as it would violate the pod's disruption budget. | DisruptionBudget | The disruption budget web needs 2 healthy pods and has 2 currently"
check "both pods still there" 0 kubectl get pods -l app=web -o name
expect_count "two pods" "$tmp/out" 2 "pod/"

check "a second budget over the same pods" 0 kubectl create pdb web2 --selector=app=web --max-unavailable=50%
check "an eviction with two budgets" 0 evict "$pod"
expect_in "500" "$tmp/out" "500"
expect_in "its message" "$tmp/evict" "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
check "delete the second budget" 0 kubectl delete pdb web2
check "both set" 1 kubectl create pdb bad --selector=app=web --min-available=1 --max-unavailable=1
cat >"$tmp/bad.yaml" <<'EOF'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bad}
spec: {minAvailable: "120%"}
EOF
check "over 100%" 1 kubectl apply -f "$tmp/bad.yaml"
expect_in "its message" "$tmp/err" 'The PodDisruptionBudget "bad" is invalid: spec.minAvailable: Invalid value: "120%": must not be greater than 100%'

# ---- drain: blocked by the budget, retried, done once the budget allows ------------------------
timeout 60 kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data >"$tmp/drain" 2>&1 &
drain_pid=$!
poll "drain is refused by the budget" 20 yes sh -c "grep -q 'error when evicting pods/\"$pod\" -n \"default\" (will retry after 5s): Cannot evict pod as it would violate the pod.s disruption budget.' '$tmp/drain' && echo yes"
expect_in "drain cordoned the node" "$tmp/drain" "node/$node cordoned"
check "the node is unschedulable" 0 kubectl get node "$node" -o 'jsonpath={.spec.unschedulable}'
expect_in "unschedulable" "$tmp/out" "true"
check "the budget allows both" 0 kubectl patch pdb web --type=merge -p '{"spec":{"minAvailable":0}}'
status=0
wait "$drain_pid" || status=$?
drain_pid=
if [[ $status -ne 0 ]]; then
  echo "FAIL kubectl drain exited $status:"; cat "$tmp/drain"; failures=$((failures + 1))
fi
expect_in "the pod evicted" "$tmp/drain" "pod/$pod evicted"
expect_in "drained" "$tmp/drain" "node/$node drained"

finish "disruption budgets, eviction, drain and the kubernetes Service"
