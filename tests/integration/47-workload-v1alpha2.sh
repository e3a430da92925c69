#!/usr/bin/env bash
# Kubernetes' Workload in scheduling.k8s.io/v1alpha2 (podGroupTemplates) through stock kubectl,
# served beside v1alpha1 over the same objects: discovery lists both, a manifest is created and
# read back in each version, a bad one is refused with field.ErrorList's words and nothing is
# stored, the spec is immutable, lists and watches answer each item in the version asked for,
# and pods of a PodGroup made from a template (KEP-5832) are gang-scheduled with its minCount.
source "$(dirname "$0")/lib.sh"
data=$tmp/server
export KUBECONFIG=$data/admin.kubeconfig
trap 'kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; release_tmp; rm -rf "$tmp"' EXIT
start_server "$data"
v2=/apis/scheduling.k8s.io/v1alpha2/namespaces/default/workloads
v1=/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads

# ---- discovery and OpenAPI ----------------------------------------------------------------------
check "api-resources lists scheduling.k8s.io" 0 kubectl api-resources --api-group=scheduling.k8s.io -o wide
expect_in "workloads in v1alpha2" "$tmp/out" "scheduling.k8s.io/v1alpha2"
check "the v1alpha2 group version" 0 kubectl get --raw /apis/scheduling.k8s.io/v1alpha2
expect_in "it lists workloads" "$tmp/out" '"name":"workloads"'
check "kubectl explain" 0 kubectl explain workloads.spec.podGroupTemplates --api-version=scheduling.k8s.io/v1alpha2
expect_in "explain knows the templates' policy" "$tmp/out" "schedulingPolicy"

# ---- create from a manifest, read back in both versions ----------------------------------------
cat >"$tmp/wl.yaml" <<'YAML'
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: train}
spec:
  controllerRef: {apiGroup: batch, kind: Job, name: train}
  podGroupTemplates:
  - {name: workers, schedulingPolicy: {gang: {minCount: 3}}}
  - {name: driver, schedulingPolicy: {basic: {}}}
YAML
check "create the v1alpha2 Workload" 0 kubectl create -f "$tmp/wl.yaml"
expect_in "created" "$tmp/out" "workload.scheduling.k8s.io/train created"
check "kubectl get workloads" 0 kubectl get workloads
expect_in "workloads table" "$tmp/out" "workers(gang 3),driver"
check "get in v1alpha2" 0 kubectl get workloads.v1alpha2.scheduling.k8s.io train \
  -o jsonpath='{.apiVersion} {.spec.podGroupTemplates[0].name} {.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount} {.spec.controllerRef.kind}'
expect_exact "the v1alpha2 shape" "$tmp/out" "scheduling.k8s.io/v1alpha2 workers 3 Job"
check "get in v1alpha1" 0 kubectl get --raw "$v1/train"
expect_in "stored as v1alpha1" "$tmp/out" '"apiVersion":"scheduling.k8s.io/v1alpha1"'
expect_in "with podGroups" "$tmp/out" '"podGroups":[{"name":"workers","policy":{"gang":{"minCount":3}}}'
check "list in v1alpha2" 0 kubectl get --raw "$v2"
expect_in "the list's items in v1alpha2" "$tmp/out" '"podGroupTemplates":[{"name":"workers","schedulingPolicy":{"gang":{"minCount":3}}}'
check "no v1alpha1 item in the v1alpha2 list" 1 grep -q podGroups "$tmp/out"
check "watch in v1alpha2" 0 timeout 60 kubectl get --raw "$v2?watch=true&timeoutSeconds=1"
expect_in "the watch's ADDED in v1alpha2" "$tmp/out" '"type":"ADDED","object":{"apiVersion":"scheduling.k8s.io/v1alpha2"'
check "a v1alpha1 Workload is read in v1alpha2" 0 kubectl create -f - <<'YAML'
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata: {name: old}
spec:
  podGroups:
  - {name: all, policy: {gang: {minCount: 2}}}
YAML
check "get it in v1alpha2" 0 kubectl get workload old -o jsonpath='{.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount}'
expect_exact "its template" "$tmp/out" "2"

# ---- refusals: what and where, nothing stored -------------------------------------------------
bad() { # name, sed expression, expected message
  sed "s/metadata: {name: train}/metadata: {name: bad}/; $2" "$tmp/wl.yaml" >"$tmp/bad.yaml"
  check "$1 is refused" 1 kubectl create -f "$tmp/bad.yaml"
  expect_in "$1: the refusal says what and where" "$tmp/err" "$3"
}
bad "a minCount of 0" 's/minCount: 3/minCount: 0/' \
  'The Workload "bad" is invalid: spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1'
bad "two policies" 's/{basic: {}}/{basic: {}, gang: {minCount: 2}}/' \
  'spec.podGroupTemplates[1].schedulingPolicy: Invalid value: "": must specify exactly one of: `basic`, `gang`'
bad "a template name that is no DNS label" 's/name: driver/name: Driver_1/' \
  'spec.podGroupTemplates[1].name: Invalid value: "Driver_1"'
bad "a duplicate template" 's/name: driver/name: workers/' \
  'spec.podGroupTemplates[1].name: Duplicate value: "workers"'
bad "a controllerRef without a name" 's/, name: train}/}/' \
  'spec.controllerRef.name: Required value'
bad "v1alpha1's field name" 's/schedulingPolicy: {basic/policy: {basic/' \
  'unknown field "spec.podGroupTemplates[1].policy"'
{
  sed -n '1,6p' "$tmp/wl.yaml" | sed 's/metadata: {name: train}/metadata: {name: bad}/'
  for i in 0 1 2 3 4 5 6 7 8; do echo "  - {name: g$i, schedulingPolicy: {basic: {}}}"; done
} >"$tmp/bad.yaml"
check "nine templates are refused" 1 kubectl create -f "$tmp/bad.yaml"
expect_in "too many" "$tmp/err" 'spec.podGroupTemplates: Too many: 9: must have at most 8 items'
check "no bad Workload was stored" 1 kubectl get workload bad
expect_in "not found" "$tmp/err" 'workloads.scheduling.k8s.io "bad" not found'

# ---- the spec is immutable; metadata is not -----------------------------------------------------
check "the spec is immutable (patch)" 1 kubectl patch workload train --type=merge \
  -p '{"spec":{"podGroupTemplates":[{"name":"workers","schedulingPolicy":{"gang":{"minCount":4}}}]}}'
expect_in "the patch's refusal" "$tmp/err" 'spec: Invalid value: field is immutable'
sed 's/minCount: 3/minCount: 5/' "$tmp/wl.yaml" >"$tmp/changed.yaml"
check "the spec is immutable (replace)" 1 kubectl replace -f "$tmp/changed.yaml"
expect_in "the replace's refusal" "$tmp/err" 'spec: Invalid value: field is immutable'
check "the controllerRef is immutable" 1 kubectl patch workload train --type=merge \
  -p '{"spec":{"controllerRef":{"name":"other"}}}'
check "a label may change" 0 kubectl label workload train team=a
check "the label is kept" 0 kubectl get workload train -o jsonpath='{.metadata.labels.team} {.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount}'
expect_exact "label set, spec unchanged" "$tmp/out" "a 3"
sed 's/metadata: {name: train}/metadata: {name: train, labels: {team: b}}/' "$tmp/wl.yaml" >"$tmp/ssa.yaml"
check "server-side apply in v1alpha2" 0 kubectl apply --server-side --force-conflicts -f "$tmp/ssa.yaml"
check "the applied label is kept" 0 kubectl get workload train -o jsonpath='{.metadata.labels.team} {.spec.podGroupTemplates[1].schedulingPolicy}'
expect_exact "label applied, spec unchanged" "$tmp/out" 'b {"basic":{}}'
sed 's/minCount: 3/minCount: 6/' "$tmp/ssa.yaml" >"$tmp/ssa-changed.yaml"
check "server-side apply may not change the spec" 1 kubectl apply --server-side --force-conflicts -f "$tmp/ssa-changed.yaml"
expect_in "the apply's refusal" "$tmp/err" 'spec: Invalid value: field is immutable'

# ---- a template's gang: pods of a PodGroup made from it wait for minCount -----------------------
cat >"$tmp/n1.yaml" <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status:
  capacity: {cpu: "32", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "32", memory: 64Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
YAML
check "create node n1" 0 kubectl create -f "$tmp/n1.yaml"
cat >"$tmp/pg.yaml" <<'YAML'
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: train-workers}
spec:
  podGroupTemplateRef: {workload: {workloadName: train, podGroupTemplateName: workers}}
  schedulingPolicy: {gang: {minCount: 3}}
YAML
check "create the template's PodGroup" 0 kubectl create -f "$tmp/pg.yaml"
member() {
  check "create pod $1" 0 kubectl create -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  schedulingGroup: {podGroupName: train-workers}
  containers: [{name: main, image: busybox}]
YAML
}
node_of() { kubectl get pod "$1" -o jsonpath='{.spec.nodeName}'; }
member w-0
member w-1
poll "w-0 waits for its gang" 120 "gang default/train-workers incomplete: 2 of 3 members present" \
  bash -c "kubectl get pod w-0 -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].message}' | sed 's/; timed out after [0-9]*s//'"
check "w-0 is not bound" 0 node_of w-0
[[ ! -s "$tmp/out" ]] || { echo "FAIL w-0 bound before its gang is complete"; failures=$((failures + 1)); }
member w-2
for i in 0 1 2; do
  poll "w-$i bound" 120 n1 node_of "w-$i"
done

check "delete the Workload" 0 kubectl delete workload train
check "it is gone in v1alpha1 too" 1 kubectl get --raw "$v1/train"

finish "workload v1alpha2"
