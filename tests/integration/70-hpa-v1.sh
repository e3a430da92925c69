#!/usr/bin/env bash
# A HorizontalPodAutoscaler read and written through autoscaling/v1 (issue 18) with Debian's
# python3-kubernetes (AutoscalingV1Api) against `xpool server`, as kube-apiserver 1.32 converts
# it: an autoscaling/v2 HPA with a behavior, whose controller has written its conditions (its
# target does not exist: AbleToScale False), reads in v1 with targetCPUUtilizationPercentage, no
# null status fields, and the conditions and behavior as JSON in the
# autoscaling.alpha.kubernetes.io annotations, in a get, a list and a watch; replaced through v1
# as read, it keeps its behavior in v2, and the annotations are not stored.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { echo "SKIP: python3-kubernetes is not installed"; exit 77; }
data=$tmp/data
server_pid=
base=
trap '[[ -z "$server_pid" ]] || kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data"
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=60s)

cat >"$tmp/hpa.yaml" <<'YAML'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, annotations: {team: a}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 30
      policies: [{type: Pods, value: 1, periodSeconds: 60}]
YAML
check "create the HPA in v2" 0 "${k[@]}" create -f "$tmp/hpa.yaml"
poll "the controller's conditions" 120 "False" \
  "${k[@]}" get hpa web -o 'jsonpath={.status.conditions[?(@.type=="AbleToScale")].status}'

cat >"$tmp/v1.py" <<'PY'
import json, sys
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
v1 = client.AutoscalingV1Api()
api = client.ApiClient()
def show(what, hpa):
    a = hpa.metadata.annotations or {}
    print(what, hpa.api_version, hpa.spec.target_cpu_utilization_percentage, hpa.spec.max_replicas,
          hpa.status.last_scale_time, a.get("team"))
    conditions = json.loads(a["autoscaling.alpha.kubernetes.io/conditions"])
    print(what, "conditions", [(c["type"], list(c)) for c in conditions if c["type"] == "AbleToScale"])
    print(what, "behavior", a["autoscaling.alpha.kubernetes.io/behavior"])
hpa = v1.read_namespaced_horizontal_pod_autoscaler("web", "default")
show("get", hpa)
show("list", v1.list_namespaced_horizontal_pod_autoscaler("default").items[0])
for e in watch.Watch().stream(v1.list_namespaced_horizontal_pod_autoscaler, "default", timeout_seconds=1):
    show("watch", e["object"])
    break
# the raw answer: unset pointers absent, not null
raw = v1.read_namespaced_horizontal_pod_autoscaler("web", "default", _preload_content=False).data
print("null fields:", b"null" in raw)
hpa.spec.max_replicas = 5
done = v1.replace_namespaced_horizontal_pod_autoscaler("web", "default", hpa)
print("replaced", done.api_version, done.spec.max_replicas)
PY
check "read and replace through v1" 0 /usr/bin/python3 "$tmp/v1.py" "$KUBECONFIG"
# kube-apiserver's v2 defaults fill the behavior in (scaleUp whole, scaleDown's selectPolicy);
# the annotation is json.Marshal of Kubernetes' internal type, which has no json tags: Go's names
behavior='{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}]},"ScaleDown":{"StabilizationWindowSeconds":30,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}]}}'
for what in get list watch; do
  expect_in "$what: v1 fields" "$tmp/out" "$what autoscaling/v1 60 4 None a"
  expect_in "$what: the conditions, in Go's order" "$tmp/out" "$what conditions [('AbleToScale', ['type', 'status', 'lastTransitionTime', 'reason', 'message'])]"
  expect_in "$what: the behavior, with v2's defaults" "$tmp/out" "$what behavior $behavior"
done
expect_in "no null" "$tmp/out" "null fields: False"
expect_in "replaced" "$tmp/out" "replaced autoscaling/v1 5"

# in v2: the behavior kept, the write's annotations not stored
check "read in v2" 0 "${k[@]}" get hpa.v2.autoscaling web \
  -o 'jsonpath={.spec.maxReplicas} {.spec.behavior.scaleDown.stabilizationWindowSeconds} {.spec.behavior.scaleDown.policies[0].type} {.metadata.annotations}'
expect_exact "v2 after the v1 replace" "$tmp/out" '5 30 Pods {"team":"a"}'

finish "HorizontalPodAutoscaler through autoscaling/v1"
