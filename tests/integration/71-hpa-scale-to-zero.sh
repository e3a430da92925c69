#!/usr/bin/env bash
# Scaling to zero enabled (issue 18): `xpool server --hpa-scale-to-zero`, as kube-apiserver with the
# HPAScaleToZero gate, accepts an HPA of minReplicas 0 that scales on an External (or Object)
# metric, refuses one that scales on cpu alone in Kubernetes' words, and keeps refusing a
# negative minReplicas. (Without the flag minReplicas 0 is refused: 35-jobs-hpa.)
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
server_pid=
base=
trap '[[ -z "$server_pid" ]] || kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data" --hpa-scale-to-zero
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=60s)

hpa() { # name, minReplicas, metric (YAML flow)
  cat <<YAML
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: $1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: workers}
  minReplicas: $2
  maxReplicas: 4
  metrics: [$3]
YAML
}
external='{type: External, external: {metric: {name: waiting_requests}, target: {type: AverageValue, averageValue: "10"}}}'
cpu='{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}'

hpa queue 0 "$external" >"$tmp/queue.yaml"
check "minReplicas 0 on an External metric" 0 "${k[@]}" create -f "$tmp/queue.yaml"
check "stored with 0" 0 "${k[@]}" get hpa queue -o 'jsonpath={.spec.minReplicas}'
expect_exact "0" "$tmp/out" "0"
hpa busy 0 "$cpu" >"$tmp/busy.yaml"
check "minReplicas 0 on cpu alone" 1 "${k[@]}" create -f "$tmp/busy.yaml"
expect_exact "Kubernetes' message" "$tmp/err" 'The HorizontalPodAutoscaler "busy" is invalid: spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas'
hpa neg -1 "$external" >"$tmp/neg.yaml"
check "minReplicas -1" 1 "${k[@]}" create -f "$tmp/neg.yaml"
expect_exact "the lower bound is 0" "$tmp/err" 'The HorizontalPodAutoscaler "neg" is invalid: spec.minReplicas: Invalid value: -1: must be greater than or equal to 0'
check "nothing stored of them" 0 "${k[@]}" get hpa -o name
expect_exact "only the accepted one" "$tmp/out" "horizontalpodautoscaler.autoscaling/queue"

finish "HPA scale to zero"
