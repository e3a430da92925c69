#!/usr/bin/env bash
# An autoscaling/v2 HorizontalPodAutoscaler on cpu, memory and a Pods device metric, read and
# replaced through autoscaling/v1 (issue 18) with Debian's python3-kubernetes (AutoscalingV1Api)
# and with kubectl, against `xpool server`, as kube-apiserver 1.32 converts it: v1 shows the cpu
# target as targetCPUUtilizationPercentage and the other metrics as JSON in v1's shapes in the
# annotation autoscaling.alpha.kubernetes.io/metrics; a v1 read-modify-replace keeps every metric
# and the behavior in v2 (the cpu target placed last, where Kubernetes puts it) and the
# annotations are not stored; an annotation kube-apiserver cannot decode is ignored, as it is
# there: the write is taken, and the metrics it held are gone.
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
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 500Mi}}
  - type: Pods
    pods:
      metric: {name: xpool_device_utilization}
      target: {type: AverageValue, averageValue: "50"}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 30
      policies: [{type: Pods, value: 1, periodSeconds: 60}]
YAML
check "create the HPA in v2" 0 "${k[@]}" create -f "$tmp/hpa.yaml"
# the controller's first status (its target does not exist: AbleToScale False), then it holds
poll "the controller's conditions" 120 "False" \
  "${k[@]}" get hpa web -o 'jsonpath={.status.conditions[?(@.type=="AbleToScale")].status}'
check "the v2 object as stored" 0 "${k[@]}" get hpa.v2.autoscaling web -o json
cp "$tmp/out" "$tmp/before.json"

# kubectl in v1: the cpu target in its field, the others in the annotation, in v1's shapes
check "read in v1 with kubectl" 0 "${k[@]}" get horizontalpodautoscalers.v1.autoscaling web \
  -o 'jsonpath={.spec.targetCPUUtilizationPercentage} {.metadata.annotations.autoscaling\.alpha\.kubernetes\.io/metrics}'
expect_exact "v1's view of the metrics" "$tmp/out" \
  '60 [{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}},{"type":"Pods","pods":{"metricName":"xpool_device_utilization","targetAverageValue":"50"}}]'

cat >"$tmp/v1.py" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.AutoscalingV1Api()
def replace(change, status=False):
    # read-modify-replace, read again on a conflict (the controller writes the status): bounded
    for attempt in range(5):
        hpa = v1.read_namespaced_horizontal_pod_autoscaler("web", "default")
        change(hpa)
        try:
            if status:
                return hpa, v1.replace_namespaced_horizontal_pod_autoscaler_status("web", "default", hpa)
            return hpa, v1.replace_namespaced_horizontal_pod_autoscaler("web", "default", hpa)
        except client.exceptions.ApiException as e:
            if e.status != 409 or attempt == 4:
                raise
hpa, done = replace(lambda h: setattr(h.spec, "max_replicas", 5))
a = hpa.metadata.annotations
print("read", hpa.api_version, hpa.spec.target_cpu_utilization_percentage,
      "autoscaling.alpha.kubernetes.io/metrics" in a, "autoscaling.alpha.kubernetes.io/behavior" in a)
print("replaced", done.api_version, done.spec.max_replicas,
      done.metadata.annotations["autoscaling.alpha.kubernetes.io/metrics"] == a["autoscaling.alpha.kubernetes.io/metrics"])
hpa, again = replace(lambda h: None)
print("unchanged", again.api_version)
# the status is the controller's: a v1 update of the object cannot write it through the
# annotations (kube-apiserver keeps the stored status after the conversion)
forged = '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"Forged","message":"x"}]'
replace(lambda h: h.metadata.annotations.update({"autoscaling.alpha.kubernetes.io/conditions": forged}))
hpa, st = replace(lambda h: None, status=True)
print("status replaced", st.api_version, st.spec.target_cpu_utilization_percentage)
PY
check "read-modify-replace with AutoscalingV1Api" 0 /usr/bin/python3 "$tmp/v1.py" "$KUBECONFIG"
expect_in "the v1 read" "$tmp/out" "read autoscaling/v1 60 True True"
expect_in "the v1 answer keeps the metrics" "$tmp/out" "replaced autoscaling/v1 5 True"
expect_in "a v1 replace that changes nothing is answered in v1" "$tmp/out" "unchanged autoscaling/v1"
expect_in "a v1 /status replace (the metrics compared below)" "$tmp/out" "status replaced autoscaling/v1 60"

# the v2 object after them: the same metrics (cpu last), the behavior, no round-trip annotation
cat >"$tmp/same.py" <<'PY'
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
want = before["spec"]["metrics"][1:] + before["spec"]["metrics"][:1]
print("metrics kept:", after["spec"]["metrics"] == want)
print("behavior kept:", after["spec"]["behavior"] == before["spec"]["behavior"])
print("annotations:", after["metadata"]["annotations"])
print("maxReplicas:", after["spec"]["maxReplicas"])
PY
check "read in v2" 0 "${k[@]}" get hpa.v2.autoscaling web -o json
cp "$tmp/out" "$tmp/after.json"
expect_in "the controller's conditions" "$tmp/after.json" '"reason": "FailedGetScale"'
expect_count "not the forged ones" "$tmp/after.json" 0 'Forged'
check "compare" 0 /usr/bin/python3 "$tmp/same.py" "$tmp/before.json" "$tmp/after.json"
expect_exact "v2 after the python replace" "$tmp/out" "metrics kept: True
behavior kept: True
annotations: {'team': 'a'}
maxReplicas: 5"

# kubectl replace through v1, as read (YAML), with maxReplicas changed
check "kubectl get v1 as YAML" 0 "${k[@]}" get horizontalpodautoscalers.v1.autoscaling web -o yaml
sed 's/^  maxReplicas: 5$/  maxReplicas: 6/' "$tmp/out" >"$tmp/v1.yaml"
expect_in "the YAML kubectl read is v1 (a short name takes no version)" "$tmp/v1.yaml" "apiVersion: autoscaling/v1"
check "kubectl replace through v1" 0 "${k[@]}" replace -f "$tmp/v1.yaml"
check "read in v2" 0 "${k[@]}" get hpa.v2.autoscaling web -o json
cp "$tmp/out" "$tmp/after.json"
check "compare" 0 /usr/bin/python3 "$tmp/same.py" "$tmp/before.json" "$tmp/after.json"
expect_exact "v2 after kubectl replace" "$tmp/out" "metrics kept: True
behavior kept: True
annotations: {'team': 'a'}
maxReplicas: 6"

# replaced through v1 as read: the same v2 object, so no new version (the answer in v1)
check "kubectl get v1 as JSON" 0 "${k[@]}" get horizontalpodautoscalers.v1.autoscaling web -o json
cp "$tmp/out" "$tmp/v1.json"
rv=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"]["resourceVersion"])' "$tmp/v1.json")
check "kubectl replace through v1, unchanged" 0 "${k[@]}" replace -f "$tmp/v1.json" \
  -o 'jsonpath={.apiVersion} {.metadata.resourceVersion}'
expect_exact "no new version" "$tmp/out" "autoscaling/v1 $rv"

# an annotation kube-apiserver cannot decode: ignored, and not stored (Kubernetes >= 1.18)
check "a v1 write with a malformed metrics annotation is taken" 0 "${k[@]}" annotate --overwrite \
  horizontalpodautoscalers.v1.autoscaling web 'autoscaling.alpha.kubernetes.io/metrics={nope'
check "read in v2" 0 "${k[@]}" get hpa.v2.autoscaling web \
  -o 'jsonpath={range .spec.metrics[*]}{.resource.name}{.pods.metric.name} {end}{.metadata.annotations}'
expect_exact "only the cpu target left, the annotation not stored" "$tmp/out" 'cpu {"team":"a"}'

# an HPA named "status": an update of the object at .../horizontalpodautoscalers/status is not a
# write of the status subresource, so the forged conditions annotation still writes nothing
sed 's/name: web, annotations/name: status, annotations/' "$tmp/hpa.yaml" >"$tmp/status.yaml"
check "create an HPA named status" 0 "${k[@]}" create -f "$tmp/status.yaml"
poll "its controller's conditions" 120 "False" \
  "${k[@]}" get hpa status -o 'jsonpath={.status.conditions[?(@.type=="AbleToScale")].status}'
cat >"$tmp/named.py" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.AutoscalingV1Api()
forged = '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"Forged","message":"x"}]'
for attempt in range(5):
    hpa = v1.read_namespaced_horizontal_pod_autoscaler("status", "default")
    hpa.metadata.annotations["autoscaling.alpha.kubernetes.io/conditions"] = forged
    try:
        done = v1.replace_namespaced_horizontal_pod_autoscaler("status", "default", hpa)
        break
    except client.exceptions.ApiException as e:
        if e.status != 409 or attempt == 4:
            raise
# the answer shows the status as written (in v1, through the annotation)
print("replaced, forged in the answer:", "Forged" in done.metadata.annotations.get(
    "autoscaling.alpha.kubernetes.io/conditions", ""))
PY
check "a v1 replace of the HPA named status, with forged conditions" 0 /usr/bin/python3 "$tmp/named.py" "$KUBECONFIG"
expect_in "... the answer shows the stored status" "$tmp/out" "replaced, forged in the answer: False"
check "read it in v2" 0 "${k[@]}" get hpa.v2.autoscaling status -o json
expect_in "... the controller's conditions" "$tmp/out" '"reason": "FailedGetScale"'
expect_count "... not the forged ones" "$tmp/out" 0 'Forged'

finish "HorizontalPodAutoscaler metrics through autoscaling/v1"
