#!/usr/bin/env bash
# Configuration kinds with stock kubectl against `xpool up --simulate` (docs/config.md):
#   - ConfigMap, a document kind (xpool/doc.h): kubectl create configmap --from-literal and
#     --from-file (protobuf bodies, binary files in binaryData), get (NAME DATA AGE), -o yaml,
#     apply (create, unchanged, configured), edit, patch, label and field selectors, watch,
#     explain, api-resources, delete; Kubernetes' messages for a bad key, an unknown field
#     (strict), a data value of the wrong type, the 1 MiB limit and an immutable ConfigMap;
#   - Secret: kubectl create secret generic|docker-registry (protobuf), stringData merged into
#     data, the table (NAME TYPE DATA AGE: never a value), a type's required key, a type that
#     cannot change;
#   - ResourceQuota of 2 GPUs: the third GPU pod refused with Kubernetes' exact message, the
#     usage in kubectl get quota, and a Deployment of 4 GPU pods held to 2 (its ReplicaSet's
#     creates at once each see the others); LimitRange: a container's requests and limits defaulted, a limit
#     over the maximum refused.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
node=config-node
up_pid=
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -KILL "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT

log=$tmp/up.log
"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name "$node" \
  --backoff-initial 200ms --pod-network host --default-runtime process >"$log" 2>&1 &
up_pid=$!
diag_log "$log"
deadline=$((SECONDS + 60))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 60 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)

expect_exact() { # name, file, exact expected content
  if [[ "$(cat "$2")" != "$3" ]]; then
    echo "FAIL $1: expected:"; echo "$3"; echo "got:"; cat "$2"; failures=$((failures + 1))
  fi
}

# ---- ConfigMap -----------------------------------------------------------------------------------
printf 'hello\nworld\n' >"$tmp/greeting.txt"
printf '\000\001\377' >"$tmp/blob.bin"
check "create configmap (protobuf)" 0 "${k[@]}" create configmap app-config \
  --from-literal=mode=fast --from-literal=level.max=3 \
  --from-file="$tmp/greeting.txt" --from-file="$tmp/blob.bin"
expect_exact "created" "$tmp/out" "configmap/app-config created"
check "get configmaps" 0 "${k[@]}" get configmaps
# beside kube-root-ca.crt, the CA the server publishes in every namespace (its name sets the width)
expect_in "the table" "$tmp/out" "NAME               DATA   AGE"
expect_in "four keys" "$tmp/out" "app-config         4      "
expect_in "the CA's" "$tmp/out" "kube-root-ca.crt   1      "
check "get -o jsonpath" 0 "${k[@]}" get cm app-config -o 'jsonpath={.data.mode} {.data.level\.max} {.binaryData.blob\.bin}'
expect_exact "the values" "$tmp/out" "fast 3 AAH/"
check "get -o yaml" 0 "${k[@]}" get cm app-config -o yaml
expect_in "the file's lines" "$tmp/out" "  greeting.txt: |
    hello
    world"
expect_in "apiVersion first" "$tmp/out" "apiVersion: v1"
check "create again" 1 "${k[@]}" create configmap app-config --from-literal=a=b
expect_in "already exists" "$tmp/err" 'configmaps "app-config" already exists'

cat >"$tmp/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  labels:
    app: web
data:
  color: blue
EOF
check "apply creates" 0 "${k[@]}" apply -f "$tmp/cm.yaml"
expect_exact "apply created" "$tmp/out" "configmap/web created"
check "apply again" 0 "${k[@]}" apply -f "$tmp/cm.yaml"
expect_exact "apply unchanged" "$tmp/out" "configmap/web unchanged"
sed -i 's/blue/green/' "$tmp/cm.yaml"
check "apply a change" 0 "${k[@]}" apply -f "$tmp/cm.yaml"
expect_exact "apply configured" "$tmp/out" "configmap/web configured"
check "the change" 0 "${k[@]}" get cm web -o 'jsonpath={.data.color}'
expect_exact "green" "$tmp/out" "green"
check "edit" 0 env EDITOR="sed -i s/green/red/" "${k[@]}" edit cm web
expect_exact "edited" "$tmp/out" "configmap/web edited"
check "the edit" 0 "${k[@]}" get cm web -o 'jsonpath={.data.color}'
expect_exact "red" "$tmp/out" "red"
check "label selector" 0 "${k[@]}" get cm -l app=web -o name
expect_exact "only web" "$tmp/out" "configmap/web"
check "field selector" 0 "${k[@]}" get cm --field-selector metadata.name=app-config -o name
expect_exact "only app-config" "$tmp/out" "configmap/app-config"
check "api-resources" 0 "${k[@]}" api-resources --api-group=
sed 's/  */ /g' "$tmp/out" >"$tmp/squeezed"
expect_in "configmaps listed" "$tmp/squeezed" "configmaps cm v1 true ConfigMap"
expect_in "secrets listed" "$tmp/squeezed" "secrets v1 true Secret"
expect_in "resourcequotas listed" "$tmp/squeezed" "resourcequotas quota v1 true ResourceQuota"
check "explain" 0 "${k[@]}" explain configmap.immutable
expect_in "described" "$tmp/out" "When true, data and binaryData can no longer change"

# refusals, in Kubernetes' words
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  "a b": c\n' >"$tmp/bad-key.yaml"
check "a key with a space" 1 "${k[@]}" apply -f "$tmp/bad-key.yaml"
expect_in "the key message" "$tmp/err" "The ConfigMap \"bad\" is invalid: data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndatta:\n  a: b\n' >"$tmp/bad-field.yaml"
check "an unknown field" 1 "${k[@]}" apply -f "$tmp/bad-field.yaml"
expect_in "strict decoding" "$tmp/err" 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "datta"'
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: 5\n' >"$tmp/bad-type.yaml"
check "a number as a value" 1 "${k[@]}" create --validate=false -f "$tmp/bad-type.yaml"
expect_in "the type" "$tmp/err" 'data[a]: expected a string, got a number'
head -c 1048577 /dev/zero | tr '\0' x >"$tmp/big.txt"
check "more than 1 MiB" 1 "${k[@]}" create configmap big --from-file="$tmp/big.txt"
expect_in "too long" "$tmp/err" 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'
check "nothing was written" 1 "${k[@]}" get cm bad big

# immutable: data and the flag itself stay; metadata may change
check "make it immutable" 0 "${k[@]}" patch cm web -p '{"immutable":true}'
check "data stays" 1 "${k[@]}" patch cm web -p '{"data":{"color":"x"}}'
expect_in "data is immutable" "$tmp/err" 'The ConfigMap "web" is invalid: data: Forbidden: field is immutable when `immutable` is set'
check "the flag stays" 1 "${k[@]}" patch cm web -p '{"immutable":false}'
expect_in "immutable is immutable" "$tmp/err" 'The ConfigMap "web" is invalid: immutable: Forbidden: field is immutable when `immutable` is set'
check "labels may change" 0 "${k[@]}" label cm web tier=front
check "the data as it was" 0 "${k[@]}" get cm web -o 'jsonpath={.data.color} {.metadata.labels.tier}'
expect_exact "red front" "$tmp/out" "red front"

# watch: the list first (so the watch runs from its version), then a change arrives
"${k[@]}" get cm web --watch -o name >"$tmp/watch.out" 2>&1 &
watch_pid=$!
poll "the watch listed" 60 "configmap/web" bash -c "grep -m1 web '$tmp/watch.out' || true"
check "change during the watch" 0 "${k[@]}" label cm web seen=yes
poll "the watch saw it" 60 2 bash -c "grep -c web '$tmp/watch.out' || true"
kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null || true

check "delete" 0 "${k[@]}" delete cm web app-config
expect_in "deleted" "$tmp/out" 'configmap "web" deleted'
check "none left" 0 "${k[@]}" get cm -o name
expect_exact "only the CA's, which the server publishes in every namespace" "$tmp/out" "configmap/kube-root-ca.crt"

# ---- Secret ----------------------------------------------------------------------------------------
check "create secret generic" 0 "${k[@]}" create secret generic db --from-literal=password=hunter2 --from-literal=user=app
check "create secret docker-registry" 0 "${k[@]}" create secret docker-registry reg \
  --docker-server=registry.example --docker-username=u --docker-password=p
check "get secrets" 0 "${k[@]}" get secrets
expect_in "the table" "$tmp/out" "NAME   TYPE                             DATA   AGE"
expect_in "generic" "$tmp/out" "db     Opaque                           2      "
expect_in "docker" "$tmp/out" "reg    kubernetes.io/dockerconfigjson   1      "
check "no value in a table" 0 "${k[@]}" get secrets -o wide
if grep -q "hunter2\|aHVudGVyMg" "$tmp/out"; then
  echo "FAIL a value in the table:"; cat "$tmp/out"; failures=$((failures + 1))
fi
check "the value, base64" 0 "${k[@]}" get secret db -o 'jsonpath={.data.password}'
expect_exact "base64 of hunter2" "$tmp/out" "aHVudGVyMg=="
printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: plain\nstringData:\n  token: abc\n' >"$tmp/plain.yaml"
check "stringData" 0 "${k[@]}" apply -f "$tmp/plain.yaml"
check "stringData became data" 0 "${k[@]}" get secret plain -o 'jsonpath={.type} {.data.token} {.stringData}'
expect_exact "Opaque YWJj" "$tmp/out" "Opaque YWJj "
printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: cert\ntype: kubernetes.io/tls\ndata:\n  tls.crt: AA==\n' >"$tmp/tls.yaml"
check "tls without a key" 1 "${k[@]}" apply -f "$tmp/tls.yaml"
expect_in "tls.key required" "$tmp/err" 'The Secret "cert" is invalid: data[tls.key]: Required value'
check "the type stays" 1 "${k[@]}" patch secret db -p '{"type":"example.com/custom"}'
expect_in "type is immutable" "$tmp/err" 'The Secret "db" is invalid: type: Invalid value: "example.com/custom": field is immutable'

# ---- ResourceQuota and LimitRange --------------------------------------------------------------------
check "create quota" 0 "${k[@]}" create quota gpus --hard=requests.nvidia.com/gpu=2,pods=10
gpu_pod() { # name
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: busybox\n    command: [sleep, "60"]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n' "$1" >"$tmp/$1.yaml"
  "${k[@]}" create -f "$tmp/$1.yaml"
}
check "first GPU pod" 0 gpu_pod gpu-1
check "second GPU pod" 0 gpu_pod gpu-2
check "third GPU pod" 1 gpu_pod gpu-3
expect_in "Kubernetes' quota message" "$tmp/err" 'pods "gpu-3" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2'
poll "the quota's usage" 60 "2" "${k[@]}" get quota gpus -o 'jsonpath={.status.used.pods}'
check "get quota" 0 "${k[@]}" get quota gpus
expect_in "the usage column" "$tmp/out" "pods: 2/10, requests.nvidia.com/gpu: 2/2"
check "delete the GPU pods" 0 "${k[@]}" delete pod gpu-1 gpu-2 --grace-period=0 --force
# a ReplicaSet creates its pods at once (batches of 1, 2, ...): each create still sees the ones
# before it, so 2 of the 4 are made and the rest are its FailedCreate
poll "the quota is free again" 60 "0" "${k[@]}" get quota gpus -o 'jsonpath={.status.used.requests\.nvidia\.com/gpu}'
cat >"$tmp/gpus.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpus}
spec:
  replicas: 4
  selector: {matchLabels: {app: gpus}}
  template:
    metadata: {labels: {app: gpus}}
    spec:
      containers:
      - {name: c, image: busybox, command: [sleep, "60"], resources: {limits: {nvidia.com/gpu: 1}}}
EOF
check "a Deployment of 4 GPU pods" 0 "${k[@]}" create -f "$tmp/gpus.yaml"
poll "its ReplicaSet was refused" 60 yes bash -c "[[ \$(${k[*]} get events --field-selector reason=FailedCreate -o name) ]] && echo yes"
check "the refusal" 0 "${k[@]}" get events --field-selector reason=FailedCreate -o 'jsonpath={.items[*].message}'
expect_in "in Kubernetes' words" "$tmp/out" 'is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2'
poll "the quota's GPUs in use" 60 "2" "${k[@]}" get quota gpus -o 'jsonpath={.status.used.requests\.nvidia\.com/gpu}'
check "two GPU pods, never more" 0 "${k[@]}" get pods -l app=gpus -o name
expect_count "two pods" "$tmp/out" 2 "pod/gpus-"
check "delete the Deployment" 0 "${k[@]}" delete deployment gpus --cascade=foreground
# an update is validated as a create, and its scopes stay (kube-apiserver's
# ValidateResourceQuotaUpdate)
check "a negative amount by patch" 1 "${k[@]}" patch quota gpus -p '{"spec":{"hard":{"pods":"-1"}}}'
expect_in "refused" "$tmp/err" 'spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0'
check "scopes added by patch" 1 "${k[@]}" patch quota gpus -p '{"spec":{"scopes":["NotBestEffort"]}}'
expect_in "immutable" "$tmp/err" 'spec.scopes: Invalid value: []core.ResourceQuotaScope{"NotBestEffort"}: field is immutable'
check "the quota as it was" 0 "${k[@]}" get quota gpus -o 'jsonpath={.spec.hard.pods}|{.spec.scopes}|'
expect_exact "unchanged" "$tmp/out" "10||"
check "a good change" 0 "${k[@]}" patch quota gpus -p '{"spec":{"hard":{"pods":"12"}}}'

cat >"$tmp/limits.yaml" <<'EOF'
apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
EOF
check "create limitrange" 0 "${k[@]}" create -f "$tmp/limits.yaml"
check "get limits" 0 "${k[@]}" get limits
expect_in "the table" "$tmp/out" "NAME       CREATED AT"
check "a pod without resources" 0 "${k[@]}" run plain --image=busybox --restart=Never --command -- true
check "its defaults" 0 "${k[@]}" get pod plain -o 'jsonpath={.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.requests.memory} {.spec.containers[0].resources.limits.cpu}'
expect_exact "requests and limits defaulted" "$tmp/out" "100m 128Mi 500m"
check "over the maximum" 1 "${k[@]}" run big --image=busybox --restart=Never --overrides='{"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"cpu":"2"}}}]}}'
expect_in "LimitRanger's message" "$tmp/err" 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
check "delete plain" 0 "${k[@]}" delete pod plain --grace-period=0 --force

# ---- object count quotas -------------------------------------------------------------------------
check "a namespace" 0 "${k[@]}" create namespace counted
# kube-root-ca.crt counts, as on Kubernetes: wait for it before the quota
poll "the CA's configmap" 60 "configmap/kube-root-ca.crt" "${k[@]}" -n counted get cm kube-root-ca.crt -o name
check "a quota on objects" 0 "${k[@]}" -n counted create quota objects \
  --hard=count/configmaps=2,count/deployments.apps=1,services.loadbalancers=0
check "one configmap" 0 "${k[@]}" -n counted create configmap one --from-literal=a=b
check "a second one" 1 "${k[@]}" -n counted create configmap two --from-literal=a=b
expect_in "Kubernetes' quota message" "$tmp/err" 'configmaps "two" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2'
check "a LoadBalancer" 1 "${k[@]}" -n counted create service loadbalancer lb --tcp=80:80
expect_in "no load balancer" "$tmp/err" 'services "lb" is forbidden: exceeded quota: objects, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0'
check "a deployment" 0 "${k[@]}" -n counted create deployment web --image=busybox --replicas=0
poll "the counts in the quota" 60 "2 1" "${k[@]}" -n counted get quota objects \
  -o 'jsonpath={.status.used.count/configmaps} {.status.used.count/deployments\.apps}'
check "the first configmap goes" 0 "${k[@]}" -n counted delete configmap one
check "room for another" 0 "${k[@]}" -n counted create configmap two --from-literal=a=b
check "delete the namespace" 0 "${k[@]}" delete namespace counted --wait=false

finish "config"
