#!/usr/bin/env bash
# Disruption budgets, eviction and drain, and the kubernetes Service, with stock kubectl on
# `xpool up` (pods as processes of the node): a PodDisruptionBudget made by `kubectl create pdb`
# with the figures the disruption controller writes and kubectl's columns; an eviction refused
# with kube-apiserver's 429 and its DisruptionBudget cause; two budgets over one pod (500); the
# validation's words; `kubectl drain` retrying on 429 until the budget allows, then done; the
# endpoints controller's Endpoints and EndpointSlices (kubectl and the Python client), slices mirrored from
# user-written Endpoints, node ports,
# the DisruptionTarget condition of an evicted pod;
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
  release_tmp
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
deadline=$((SECONDS + 60))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 60 s"; cat "$log"; exit 1; }
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
# a single-stack IPv4 cluster, as kube-apiserver's initIPFamilyFields answers it
cat >"$tmp/dual.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: dual}
spec: {ipFamilyPolicy: RequireDualStack, selector: {app: x}, ports: [{port: 80}]}
EOF
check "RequireDualStack" 1 kubectl apply -f "$tmp/dual.yaml"
expect_in "its message" "$tmp/err" 'The Service "dual" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services'
sed -i 's/ipFamilyPolicy: RequireDualStack/ipFamilies: [IPv6]/' "$tmp/dual.yaml"
check "an IPv6 Service" 1 kubectl apply -f "$tmp/dual.yaml"
expect_in "its message" "$tmp/err" 'The Service "dual" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'
sed -i 's/ipFamilies: \[IPv6\]/ipFamilyPolicy: SingleStack, ipFamilies: [IPv4, IPv6]/' "$tmp/dual.yaml"
check "two families, SingleStack" 1 kubectl apply -f "$tmp/dual.yaml"
expect_in "its message" "$tmp/err" "The Service \"dual\" is invalid: spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"
sed -i 's/ipFamilyPolicy: SingleStack, ipFamilies: \[IPv4, IPv6\]/ipFamilyPolicy: PreferDualStack/' "$tmp/dual.yaml"
check "PreferDualStack" 0 kubectl apply -f "$tmp/dual.yaml"
check "gets one family" 0 kubectl get svc dual -o 'jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}'
expect_in "PreferDualStack [IPv4]" "$tmp/out" 'PreferDualStack ["IPv4"]'
cat >"$tmp/hl.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: hl}
spec: {clusterIP: None, ports: [{port: 80}]}
EOF
check "a headless Service without selector" 0 kubectl apply -f "$tmp/hl.yaml"
check "is dual-stack" 0 kubectl get svc hl -o 'jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}'
expect_in "RequireDualStack [IPv4 IPv6]" "$tmp/out" 'RequireDualStack ["IPv4","IPv6"]'
check "delete them" 0 kubectl delete svc dual hl

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
      - {name: main, image: web:1, command: [sleep, "3600.$mark"], ports: [{name: http, containerPort: 8080}]}
EOF
check "create the Deployment" 0 kubectl apply -f "$tmp/web.yaml"
check "kubectl create pdb" 0 kubectl create pdb web --selector=app=web --min-available=2
poll "the budget's figures" 60 "2 2 2 0 InsufficientPods" kubectl get pdb web -o \
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

# ---- Services of pods: Endpoints and EndpointSlices, node ports ------------------------------
check "kubectl expose" 0 kubectl expose deployment web --port=80 --target-port=http
ip=$(kubectl get pod "$pod" -o 'jsonpath={.status.podIP}')
poll "the Service's Endpoints (targetPort by name)" 60 "$ip,$ip 8080" kubectl get endpoints web -o \
  'jsonpath={.subsets[0].addresses[0].ip},{.subsets[0].addresses[1].ip} {.subsets[0].ports[0].port}'
check "kubectl get endpoints web" 0 kubectl get endpoints web
expect_in "its row" "$tmp/out" "web    $ip:8080,$ip:8080"
cat >"$tmp/slices.py" <<'EOF'
import sys
from kubernetes import client, config
config.load_kube_config()
ep = client.CoreV1Api().read_namespaced_endpoints(sys.argv[1], "default")
for s in ep.subsets or []:
    print("endpoints", sorted(a.target_ref.name for a in s.addresses or []),
          sorted(a.target_ref.name for a in s.not_ready_addresses or []), [p.port for p in s.ports])
for s in client.DiscoveryV1Api().list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=" + sys.argv[1]).items:
    print("slice", s.metadata.labels["endpointslice.kubernetes.io/managed-by"],
          s.metadata.owner_references[0].kind, [p.port for p in s.ports or []])
    for e in s.endpoints or []:
        print("endpoint", e.target_ref.name, e.node_name, e.conditions.ready,
              e.conditions.serving, e.conditions.terminating)
EOF
check "the Python client lists them" 0 /usr/bin/python3 "$tmp/slices.py" web
pods=$(kubectl get pods -l app=web -o 'jsonpath={.items[*].metadata.name}' | tr ' ' '\n' | sort | tr '\n' ' ')
read -r first second <<<"$pods"
expect_in "the Endpoints" "$tmp/out" "endpoints ['$first', '$second'] [] [8080]"
expect_in "one slice" "$tmp/out" "slice endpointslice-controller.k8s.io Service [8080]"
expect_in "a ready endpoint" "$tmp/out" "endpoint $first $node True True False"
check "a node port named" 0 kubectl create service nodeport np --tcp=80:8080 --node-port=30080
check "a node port taken" 1 kubectl create service nodeport np2 --tcp=80:8080 --node-port=30080
expect_in "its message" "$tmp/err" 'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated'
check "a node port out of range" 1 kubectl create service nodeport np3 --tcp=80:8080 --node-port=80
expect_in "its message" "$tmp/err" 'Service "np3" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767'
check "a node port picked" 0 kubectl expose deployment web --name=web-np --type=NodePort --port=80 --target-port=http
check "its port" 0 kubectl get svc web-np -o 'jsonpath={.spec.ports[0].nodePort}'
if ! [[ "$(cat "$tmp/out")" =~ ^3[0-2][0-9]{3}$ ]] || (( $(cat "$tmp/out") > 32767 )); then
  echo "FAIL the node port is not from 30000-32767:"; cat "$tmp/out"; failures=$((failures + 1))
fi
check "the node port freed" 0 kubectl delete svc np
check "and taken again" 0 kubectl create service nodeport np4 --tcp=80:8080 --node-port=30080

# ---- an eviction marks the pod DisruptionTarget; the terminating pod leaves the Endpoints -------
cat >"$tmp/solo.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: solo, labels: {app: solo}}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - {name: main, image: solo:1, command: [sh, -c, 'trap "" TERM; sleep 3600.$mark'], ports: [{containerPort: 9090}]}
EOF
check "a pod that outlives SIGTERM" 0 kubectl apply -f "$tmp/solo.yaml"
check "its Service" 0 kubectl expose pod solo --port=90 --target-port=9090
poll "its Endpoints" 60 "$ip:9090" kubectl get endpoints solo -o 'jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}'
check "evict it" 0 evict solo
expect_in "201" "$tmp/out" "201"
check "its condition" 0 kubectl get pod solo -o 'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")]}'
/usr/bin/python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["status"], c["reason"], c["message"])' \
  "$tmp/out" >"$tmp/cond" 2>&1 || true
expect_in "DisruptionTarget" "$tmp/cond" "True EvictionByEvictionAPI Eviction API: evicting"
poll "terminating: out of the Endpoints" 60 "" kubectl get endpoints solo -o 'jsonpath={.subsets[*].addresses}'
poll "terminating: in the slice, not ready, serving" 60 "false true true" kubectl get endpointslices \
  -l kubernetes.io/service-name=solo -o 'jsonpath={.items[0].endpoints[0].conditions.ready} {.items[0].endpoints[0].conditions.serving} {.items[0].endpoints[0].conditions.terminating}'
check "force it" 0 kubectl delete pod solo --grace-period=0 --force
check "delete its Service" 0 kubectl delete svc solo
poll "its Endpoints and slices go with it" 60 "" kubectl get endpoints,endpointslices -l app=solo -o name

# ---- a Service without a selector: its user-written Endpoints mirrored into EndpointSlices -----
cat >"$tmp/ext.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  ports: [{name: sql, port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, labels: {tier: db}}
subsets:
- addresses: [{ip: 192.0.2.10}, {ip: "2001:db8::10"}]
  notReadyAddresses: [{ip: 192.0.2.11}]
  ports: [{name: sql, port: 5432}]
EOF
check "a Service without a selector and its Endpoints" 0 kubectl apply -f "$tmp/ext.yaml"
poll "mirrored: one slice per address family" 60 "IPv4 IPv6" sh -c \
  "kubectl get endpointslices -l endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io,kubernetes.io/service-name=ext -o 'jsonpath={.items[*].addressType}' | tr ' ' '\n' | sort | paste -sd ' '"
check "the IPv4 slice" 0 kubectl get endpointslices -l kubernetes.io/service-name=ext,tier=db \
  -o 'jsonpath={range .items[?(@.addressType=="IPv4")].endpoints[*]}{.addresses[0]}={.conditions.ready} {end}{.items[0].ports[0].port}'
expect_in "ready and not ready, the port" "$tmp/out" "192.0.2.10=true 192.0.2.11=false 5432"
check "the Endpoints change" 0 kubectl patch endpoints ext --type=json \
  -p '[{"op":"replace","path":"/subsets/0/addresses","value":[{"ip":"192.0.2.12"}]}]'
poll "the IPv4 slice follows, the IPv6 one goes" 60 "IPv4 192.0.2.12" kubectl get endpointslices \
  -l kubernetes.io/service-name=ext -o 'jsonpath={.items[*].addressType} {.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}'
check "skip-mirror" 0 kubectl label endpoints ext endpointslice.kubernetes.io/skip-mirror=true
poll "no slice for Endpoints that skip mirroring" 60 "" kubectl get endpointslices -l kubernetes.io/service-name=ext -o name
check "delete the Service" 0 kubectl delete -f "$tmp/ext.yaml"

# ---- drain: blocked by the budget, retried, done once the budget allows ------------------------
# (its limit covers the refusals until the budget changes and the evictions after: 60 s in all,
# as before, was not a limit at load once the look for the refusal itself may take 60 s)
timeout 180 kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data >"$tmp/drain" 2>&1 &
drain_pid=$!
poll "drain is refused by the budget" 60 yes sh -c "grep -q 'error when evicting pods/\"$pod\" -n \"default\" (will retry after 5s): Cannot evict pod as it would violate the pod.s disruption budget.' '$tmp/drain' && echo yes"
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
poll "the drained pods left the Endpoints" 60 "" kubectl get endpoints web -o 'jsonpath={.subsets}'

finish "disruption budgets, eviction, drain and the kubernetes Service"
