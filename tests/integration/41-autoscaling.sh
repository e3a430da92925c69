#!/usr/bin/env bash
# HorizontalPodAutoscaler end to end (docs/workloads.md): a Deployment of NPU "inference" pods on
# a node whose simulated NPUs take their utilisation from a file the test writes
# (metricsScript.utilizationFile). An autoscaling/v2 HPA on the Pods metric
# xpool_device_utilization scales it 1 -> 4 when the file says 90 % (target 50) and back to 1
# when it says 10 %, after a 2 s scale-down window; kubectl shows the targets, the conditions
# and the SuccessfulRescale Events in Kubernetes' words. `kubectl autoscale` (autoscaling/v1)
# makes an HPA that `kubectl get hpa` shows.
# The Prometheus source runs against a real Prometheus in 59-hpa-prometheus.sh. Here a python
# stand-in (fake_prometheus.py) gives what a real one never answers: an HTML error page (a proxy
# in front of it) and a document that is not an instant vector; the HPA of an External metric
# reports each (FailedGetExternalMetric, ScalingActive False) and leaves its Deployment alone.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/server
server_pid= agent_pid= prom_pid=
export KUBECONFIG=$data/admin.kubeconfig
mark=$$

cleanup() {
  local p
  for pid in $agent_pid $server_pid $prom_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $agent_pid $server_pid $prom_pid; do wait "$pid" 2>/dev/null || true; done
  # the pods' processes outlive the agent by design: this run's end here (each sleeps 600.MARK)
  for p in /proc/[0-9]*; do
    if [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"sleep 600.$mark"* ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

echo 90 >"$tmp/util"
cat >"$tmp/node.yaml" <<YAML
devices:
- {kind: npu, count: 4, vendor: Example, model: Example NPU, resourceName: vendor.com/npu,
   memoryBytes: 34359738368}
metricsScript:
  utilizationFile: $tmp/util
YAML

echo '<html><body><h1>502 Bad Gateway</h1></body></html>' >"$tmp/answer"
/usr/bin/python3 "$src/tests/integration/fake_prometheus.py" "$tmp/prom.port" "$tmp/answer" \
  "$tmp/queries" &
prom_pid=$!
poll "the fake Prometheus listens" 60 yes bash -c "[[ -s $tmp/prom.port ]] && echo yes"

"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
: >"$tmp/server.log"
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --metrics-resolution 1s \
  --horizontal-pod-autoscaler-sync-period 1s --horizontal-pod-autoscaler-downscale-stabilization 2s \
  --hpa-prometheus-url "http://localhost:$(cat "$tmp/prom.port")" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
url=
for _ in $(seq 1200); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
"$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
  --node-name n1 --data-dir "$tmp/agent" --node-description "$tmp/node.yaml" \
  --listen 127.0.0.1:0 --pod-network host --default-runtime process --metrics-interval 500ms \
  --heartbeat 1s >"$tmp/agent.log" 2>&1 &
agent_pid=$!
diag_log "$tmp/agent.log"
poll "n1 registered" 60 yes bash -c "[[ -n \$(kubectl get node n1 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null) ]] && echo yes"

cat >"$tmp/inference.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: inference}
spec:
  replicas: 1
  selector: {matchLabels: {app: inference}}
  template:
    metadata: {labels: {app: inference}}
    spec:
      containers:
      - name: server
        image: busybox
        command: [sleep, "600.$mark"]
        resources: {limits: {vendor.com/npu: 1}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: inference}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: inference}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Pods
    pods:
      metric: {name: xpool_device_utilization}
      target: {type: AverageValue, averageValue: "50"}
YAML
check "create the deployment and its hpa" 0 kubectl apply -f "$tmp/inference.yaml"
replicas() { kubectl get deployment "$1" -o jsonpath='{.spec.replicas}/{.status.readyReplicas}'; }
poll "scaled up to 4 at 90 %" 60 4/4 replicas inference
# the status says what the sync after the rescale saw: 4 pods, asking for 8, held at the max
poll "the hpa saw 4" 60 "4 TooManyReplicas" kubectl get hpa inference -o jsonpath='{.status.currentReplicas} {.status.conditions[?(@.type=="ScalingLimited")].reason}'
check "get hpa" 0 kubectl get hpa inference
expect_in "its targets" "$tmp/out" "inference   Deployment/inference   90/50     1         4         4"
check "describe hpa" 0 kubectl describe hpa inference
expect_in "the first rescale" "$tmp/out" "New size: 2; reason: pods metric xpool_device_utilization above target"
expect_in "the second" "$tmp/out" "New size: 4; reason: pods metric xpool_device_utilization above target"
expect_in "ScalingActive" "$tmp/out" "ScalingActive   True    ValidMetricFound"
expect_in "ScalingLimited at the max" "$tmp/out" "ScalingLimited  True    TooManyReplicas"
expect_in "its message" "$tmp/out" "the desired replica count is more than the maximum replica count"

echo 10 >"$tmp/util"
poll "scaled down to 1 at 10 %" 60 1/1 replicas inference
check "describe hpa after" 0 kubectl describe hpa inference
expect_in "the scale-down" "$tmp/out" "New size: 1; reason: All metrics below target"
check "its status" 0 kubectl get hpa inference -o jsonpath='{.status.currentMetrics[0].pods.current.averageValue} {.status.desiredReplicas} {.status.lastScaleTime}'
expect_in "current value and desired" "$tmp/out" "10 1 20"

# ---- an External metric from an endpoint that answers what Prometheus never does ---------------
cat >"$tmp/worker.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 1
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers:
      - {name: main, image: busybox, command: [sleep, "600.$mark"]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: worker}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  maxReplicas: 5
  metrics:
  - type: External
    external:
      metric: {name: waiting_requests, selector: {matchLabels: {queue: main}}}
      target: {type: AverageValue, averageValue: "10"}
YAML
check "create the worker and its hpa" 0 kubectl apply -f "$tmp/worker.yaml"
active() { kubectl get hpa worker -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].status} {.status.conditions[?(@.type=="ScalingActive")].message}'; }
poll "an HTML page: not JSON" 60 "False the HPA was unable to compute the replica count: failed to get waiting_requests external metric: unable to get metric waiting_requests: prometheus: the answer is not JSON: '[' or '{' expected near '<' at line 1" active
poll "its Event" 60 yes bash -c "[[ \$(kubectl get events --field-selector involvedObject.name=worker,reason=FailedGetExternalMetric -o name) ]] && echo yes"
echo '{"status":"success","data":{"resultType":"string","result":[1767225600,"30"]}}' >"$tmp/answer"
poll "a string: not an instant vector" 60 "False the HPA was unable to compute the replica count: failed to get waiting_requests external metric: unable to get metric waiting_requests: prometheus: the answer is a string, not an instant vector" active
check "the worker is left as it was" 0 kubectl get deployment worker -o jsonpath='{.spec.replicas}'
expect_in "1 replica" "$tmp/out" "1"
expect_in "the PromQL sent" "$tmp/queries" 'waiting_requests{namespace="default",queue="main"}'

# ---- kubectl autoscale sends autoscaling/v1 (protobuf): stored as v2, answered in v1 ---------------
check "create deployment web" 0 kubectl create deployment web --image=busybox --replicas=0 -- sleep 1
check "kubectl autoscale" 0 kubectl autoscale deployment web --min 1 --max 4 --cpu-percent 50
expect_in "its answer" "$tmp/out" "horizontalpodautoscaler.autoscaling/web autoscaled"
check "get hpa web" 0 kubectl get hpa web
expect_in "TARGETS as kubectl shows it" "$tmp/out" "web    Deployment/web   cpu: <unknown>/50%   1         4"
check "read in v2" 0 kubectl get hpa web -o jsonpath='{.apiVersion} {.spec.metrics[0].resource.target.averageUtilization}'
expect_in "converted" "$tmp/out" "autoscaling/v2 50"

# ---- a ResourceQuota's scope must fit its resources (kube-apiserver's words), nothing stored -----
cat >"$tmp/quota.yaml" <<'YAML'
apiVersion: v1
kind: ResourceQuota
metadata: {name: be}
spec:
  hard: {pods: "4", requests.cpu: "2"}
  scopes: [BestEffort]
YAML
check "BestEffort with requests.cpu is refused" 1 kubectl create -f "$tmp/quota.yaml"
expect_in "as Kubernetes says it" "$tmp/err" 'The ResourceQuota "be" is invalid: spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort"}: unsupported scope applied to resource'
check "not stored" 1 kubectl get resourcequota be
sed -i 's/requests.cpu: "2"/count\/jobs.batch: "2"/' "$tmp/quota.yaml"
check "BestEffort with pods and an object count is taken" 0 kubectl create -f "$tmp/quota.yaml"

finish "autoscaling"
