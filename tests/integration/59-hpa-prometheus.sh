#!/usr/bin/env bash
# The HorizontalPodAutoscaler's Prometheus source against a real Prometheus (Debian's), as
# docs/workloads.md describes it: Prometheus finds the agent through the server's HTTP service
# discovery and scrapes its /metrics with a reader token; the server's --hpa-prometheus-url points
# at Prometheus' query API. The node's simulated NPUs follow a metricsScript: their utilisation ramps from 20 %
# to 90 % over the agent's first 10 s and then holds; the test overrides it with the script's
# utilizationFile for the low phases (30 %, then 10 %), so each phase starts when the test has
# seen the previous one end, not after a guessed time.
# - A Pods metric (xpool_pod_device_utilization_percent, each pod's series that the agent
#   exports) scales an "inference" Deployment 1 -> 4 when the script's 90 % shows, and back to 1
#   after a 2 s scale-down window when the file says 10 %; the queries Prometheus ran (its query
#   log) are the per-pod PromQL of docs/workloads.md.
# - An External metric (waiting_requests, a queue length) is a Prometheus recording rule: with no
#   rule there is no series (FailedGetExternalMetric), with the rule's 30 at 10 per pod a second
#   Deployment runs 3.
# What a real Prometheus cannot answer (a reply that is not Prometheus JSON) is in 41-autoscaling
# with tests/integration/fake_prometheus.py.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
prometheus=$(command -v prometheus || true)
promtool=$(command -v promtool || true)
if [[ -z "$prometheus" || -z "$promtool" ]]; then
  echo "SKIP: Debian's prometheus package is not installed (scripts/install-deps installs it)"
  exit 77
fi
data=$tmp/server
server_pid= agent_pid= prom_pid=
export KUBECONFIG=$data/admin.kubeconfig
mark=$$

cleanup() {
  local p
  for pid in $prom_pid $agent_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $prom_pid $agent_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
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

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo 30 >"$tmp/util"
cat >"$tmp/node.yaml" <<YAML
devices:
- {kind: npu, count: 4, vendor: Example, model: Example NPU, resourceName: vendor.com/npu,
   memoryBytes: 34359738368}
metricsScript:
  devices:
    "*":
    - {at: 0, utilizationPercent: 20}
    - {at: 10, utilizationPercent: 90}
  utilizationFile: $tmp/util
YAML

pport=$(free_port)
"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --reader --subject prometheus --data-dir "$data" >"$tmp/prom.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" \
  --horizontal-pod-autoscaler-sync-period 1s --horizontal-pod-autoscaler-downscale-stabilization 2s \
  --hpa-prometheus-url "http://localhost:$pport" >"$tmp/server.log" 2>&1 &
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

# ---- Prometheus: the agents from the server's discovery, a rules file, a query log --------------
# How Prometheus authenticates to the agents' /metrics, the one place to say it (YAML of the
# scrape job, indented four spaces): the reader token, as deploy/monitoring/ sends it. An agent
# that checks it answers only a token the server accepts for nodes/metrics; one that serves
# /metrics to anyone ignores it. A client certificate would be a tls_config: block here.
agent_scrape_auth="    authorization: {type: Bearer, credentials_file: $tmp/prom.token}"
: >"$tmp/rules.yml"
cat >"$tmp/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
  query_log_file: $tmp/queries.log
rule_files: [$tmp/rules.yml]
scrape_configs:
  - job_name: xpool-agents
$agent_scrape_auth
    # the agent serves HTTPS with a certificate the kubelet-serving CA signed (docs/agent.md,
    # "HTTPS")
    scheme: https
    tls_config: {ca_file: $data/pki/kubelet-ca.crt}
    http_sd_configs:
      - url: $url/apis/metrics.xpool.io/v1alpha1/http_sd
        refresh_interval: 1s
        tls_config: {ca_file: $data/pki/ca.crt}
        authorization: {type: Bearer, credentials_file: $tmp/prom.token}
YAML
check "promtool check config" 0 "$promtool" check config "$tmp/prometheus.yml"
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom" \
  --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
diag_log "$tmp/prometheus.log"
query() { # PromQL -> the value of a one-series answer, else what came back
  curl -s --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r)==1 else "%d series" % len(r))'
}
poll "Prometheus scrapes the agent" 120 1 query 'sum(up{job="xpool-agents"})'

# ---- a Pods metric from the agent's series: 1 -> 4 -> 1 -----------------------------------------
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
      metric: {name: xpool_pod_device_utilization_percent, selector: {matchLabels: {kind: npu}}}
      target: {type: AverageValue, averageValue: "50"}
YAML
check "create the deployment and its hpa" 0 kubectl apply -f "$tmp/inference.yaml"
replicas() { kubectl get deployment "$1" -o jsonpath='{.spec.replicas}/{.status.readyReplicas}'; }
poll "the pod's series in Prometheus at the file's 30 %" 120 30 \
  query 'xpool_pod_device_utilization_percent{namespace="default",pod=~"inference-.*"}'
poll "the hpa reads 30 through Prometheus" 60 "30 True" kubectl get hpa inference -o jsonpath='{.status.currentMetrics[0].pods.current.averageValue} {.status.conditions[?(@.type=="ScalingActive")].status}'
check "below the target: still 1" 0 replicas inference
expect_in "1 replica" "$tmp/out" "1/1"
check "get hpa at 30" 0 kubectl get hpa inference
expect_in "its targets" "$tmp/out" "inference   Deployment/inference   30/50     1         4         1"

rm "$tmp/util" # the script's own figure: 90 % since the agent's tenth second
poll "scaled up to 4 at the script's 90 %" 60 4/4 replicas inference
poll "the hpa saw 4 at 90, held at the max" 60 "4 90 TooManyReplicas" kubectl get hpa inference -o jsonpath='{.status.currentReplicas} {.status.currentMetrics[0].pods.current.averageValue} {.status.conditions[?(@.type=="ScalingLimited")].reason}'
check "describe hpa" 0 kubectl describe hpa inference
expect_in "a rescale on the metric" "$tmp/out" "reason: pods metric xpool_pod_device_utilization_percent above target"
expect_in "ScalingActive" "$tmp/out" "ScalingActive   True    ValidMetricFound"
check "four pods' series in Prometheus" 0 query 'count(xpool_pod_device_utilization_percent{namespace="default",pod=~"inference-.*"})'
expect_in "four" "$tmp/out" "4"

echo 10 >"$tmp/util"
poll "scaled down to 1 at 10 %, after the window" 60 1/1 replicas inference
check "describe hpa after" 0 kubectl describe hpa inference
expect_in "the scale-down" "$tmp/out" "New size: 1; reason: All metrics below target"
poll "its status" 60 "10 1" kubectl get hpa inference -o jsonpath='{.status.currentMetrics[0].pods.current.averageValue} {.status.desiredReplicas}'
# Prometheus' own record of what it was asked: one query per pod, with the selector's labels
check "the per-pod PromQL reached Prometheus" 0 /usr/bin/python3 -c 'import json, re, sys
queries = {json.loads(line)["params"]["query"] for line in open(sys.argv[1]) if line.strip()}
per_pod = [q for q in queries
           if re.fullmatch(r"xpool_pod_device_utilization_percent\{namespace=\"default\",pod=\"inference-[a-z0-9-]+\",kind=\"npu\"\}", q)]
assert len(per_pod) >= 4, sorted(queries)' "$tmp/queries.log"

# ---- an External metric from a recording rule -----------------------------------------------------
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
poll "no series yet: FailedGetExternalMetric" 60 yes bash -c "[[ \$(kubectl get events --field-selector involvedObject.name=worker,reason=FailedGetExternalMetric -o name) ]] && echo yes"
check "its condition" 0 kubectl get hpa worker -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].message}'
expect_in "Prometheus found no series" "$tmp/out" "unable to get metric waiting_requests: prometheus: no series matched the query"
cat >"$tmp/rules.yml" <<'YAML'
groups:
- name: queue
  rules:
  - record: waiting_requests
    expr: vector(30)
    labels: {namespace: default, queue: main}
YAML
check "promtool check rules" 0 "$promtool" check rules "$tmp/rules.yml"
kill -HUP "$prom_pid"
poll "the rule's series" 60 30 query 'waiting_requests{queue="main"}'
poll "30 waiting at 10 each: 3 workers" 120 3 kubectl get deployment worker -o jsonpath='{.spec.replicas}'
poll "the hpa saw 3" 60 3 kubectl get hpa worker -o jsonpath='{.status.currentReplicas}'
check "get hpa worker" 0 kubectl get hpa worker
expect_in "its targets" "$tmp/out" "10/10 (avg)"
expect_in "the External PromQL reached Prometheus" "$tmp/queries.log" 'waiting_requests{namespace=\"default\",queue=\"main\"}'

finish "hpa-prometheus"
