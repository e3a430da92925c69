#!/usr/bin/env bash
# Secrets and ConfigMaps in use, with stock kubectl against `xpool up --simulate` (docs/workloads.md,
# docs/security.md):
#   - a pod with configMap and secret volumes: ContainerCreating with the kubelet's FailedMount
#     event while its ConfigMap is missing, then the files (items, defaultMode, ..data links), a change to the ConfigMap written to them;
#   - a process pod whose env comes from both kinds (env valueFrom, envFrom with a prefix): while
#     its ConfigMap is missing it waits with CreateContainerConfigError and the kubelet's message,
#     and it runs with the values once the ConfigMap is created; an envFrom key that is no
#     variable name is skipped with the InvalidEnvironmentVariableNames event;
#   - the node authorizer's rule: the node's token gets the Secret its pod names, and 403 with
#     "no relationship found" for an unrelated one;
#   - encryption at rest: the value is nowhere in the server's data directory (grep -r);
#   - xpool store rotate-key, killed after its first step and run again: the Secret still reads.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
data=$tmp/data
node=secrets-node
value=Zq9v-s3cr3t-42
up_pid=
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -TERM "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up; unmount_under_tmp; rm -rf "$tmp"' EXIT

log=$tmp/up.log
start_up() {
  "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name "$node" \
    --backoff-initial 200ms --pod-network host --default-runtime process >"$log" 2>&1 &
  up_pid=$!
  local deadline=$((SECONDS + 20))
  until grep -q "^xpool is up" "$log"; do
    kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
    [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 20 s:"; cat "$log"; exit 1; }
    sleep 0.1
  done
}
start_up
diag_log "$log"
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
diag_cluster "$KUBECONFIG"

check "create secret" 0 "${k[@]}" create secret generic db --from-literal=password="$value" --from-literal=user=admin
check "create unrelated secret" 0 "${k[@]}" create secret generic other --from-literal=token=x

# ---- a pod waits for its ConfigMap, then runs with the values ------------------------------------
cat >"$tmp/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: envpod
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo PW=$PW MODE=$MODE APP_level=$APP_level user=$user; env | grep -c '^1bad=' ; exec sleep 60"]
    env:
    - {name: PW, valueFrom: {secretKeyRef: {name: db, key: password}}}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: app, key: mode}}}
    - {name: NOPE, valueFrom: {configMapKeyRef: {name: absent, key: k, optional: true}}}
    envFrom:
    - {prefix: APP_, configMapRef: {name: app}}
    - {secretRef: {name: db}}
    - {configMapRef: {name: app}}
EOF
check "apply pod" 0 "${k[@]}" apply -f "$tmp/pod.yaml"
waiting() { "${k[@]}" get pod envpod -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}'; }
poll "waits for its ConfigMap" 15 'CreateContainerConfigError: configmap "app" not found' waiting
check "get pod" 0 "${k[@]}" get pod envpod
expect_in "kubectl shows the reason" "$tmp/out" "CreateContainerConfigError"

check "create configmap" 0 "${k[@]}" create configmap app --from-literal=mode=fast --from-literal=level=3 --from-literal=1bad=x
phase() { "${k[@]}" get pod envpod -o jsonpath='{.status.phase}'; }
poll "runs once it is there" 15 Running phase
logs() { "${k[@]}" logs envpod; }
poll "the values" 10 "PW=$value MODE=fast APP_level=3 user=admin
0" logs
events() { "${k[@]}" get events --field-selector involvedObject.name=envpod -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'; }
invalid_key_events() { events | grep -c '^InvalidEnvironmentVariableNames: Keys \[1bad\] from the EnvFrom configMap default/app were skipped since they are considered invalid environment variable names.$'; }
poll "the invalid key's event" 10 1 invalid_key_events

# ---- configMap and secret volumes: FailedMount until the ConfigMap is there, then the files ------
cat >"$tmp/volpod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: volpod
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sleep", "60"]
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: sec, mountPath: /etc/sec}
  volumes:
  - {name: cfg, configMap: {name: vcfg}}
  - {name: sec, secret: {secretName: db, defaultMode: 0400, items: [{key: password, path: auth/pw}]}}
EOF
check "apply volume pod" 0 "${k[@]}" apply -f "$tmp/volpod.yaml"
volwait() { "${k[@]}" get pod volpod -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}'; }
poll "waits ContainerCreating" 15 ContainerCreating volwait
volevents() { "${k[@]}" get events --field-selector involvedObject.name=volpod -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'; }
failed_mount() { volevents | grep -c '^FailedMount: MountVolume.SetUp failed for volume "cfg" : configmap "vcfg" not found$'; }
poll "the kubelet's FailedMount event" 10 1 failed_mount
check "create the volume's configmap" 0 "${k[@]}" create configmap vcfg --from-literal=mode=fast
volphase() { "${k[@]}" get pod volpod -o jsonpath='{.status.phase}'; }
poll "the volume pod runs once it is there" 15 Running volphase
voluid=$("${k[@]}" get pod volpod -o jsonpath='{.metadata.uid}')
vdir=$data/agent/volumes/$voluid
check "the configMap's key as a file through ..data" 0 cat "$vdir/cfg/mode"
expect_in "its value" "$tmp/out" "fast"
check "the name is the kubelet's link" 0 readlink "$vdir/cfg/mode"
expect_in "into ..data" "$tmp/out" "..data/mode"
check "the secret's item at its path, decoded" 0 cat "$vdir/sec/auth/pw"
expect_in "the secret's value" "$tmp/out" "$value"
check "with its defaultMode" 0 stat -L -c %a "$vdir/sec/auth/pw"
expect_in "0400" "$tmp/out" "400"
check "change the volume's configmap" 0 "${k[@]}" patch configmap vcfg -p '{"data":{"mode":"slow"}}'
volfile() { cat "$vdir/cfg/mode"; }
poll "the change reaches the file (read again each 10 s)" 20 slow volfile
check "delete volume pod" 0 "${k[@]}" delete pod volpod --grace-period=0 --force
voldir_state() { [[ -e "$vdir" ]] && echo there || echo gone; }
poll "the pod's volume files go with it" 15 gone voldir_state

# ---- the node authorizer: what its pods name, nothing else ----------------------------------------
server=$(sed -n 's/^ *server: //p' "$KUBECONFIG" | head -1)
node_token=$(cat "$data/agent/node.token")
node_get() { curl -sk -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $node_token" "$server/api/v1/namespaces/default/secrets/$1"; }
check "node gets the pod's secret" 0 node_get db
expect_in "200" "$tmp/out" "200"
expect_in "its value" "$tmp/body" "$(printf %s "$value" | base64)"
check "node gets an unrelated secret" 0 node_get other
expect_in "403" "$tmp/out" "403"
expect_in "the node authorizer's words" "$tmp/body" "secrets \\\"other\\\" is forbidden: User \\\"system:node:$node\\\" cannot get resource \\\"secrets\\\" in API group \\\"\\\" in the namespace \\\"default\\\": no relationship found between node '$node' and this object"

# ---- encrypted at rest ----------------------------------------------------------------------------
# (the node's agent/ holds what its running pods use: a container's spec with its env, the pod's
# own log, as a kubelet's runtime keeps them; docs/security.md says so)
b64=$(printf %s "$value" | base64)
check "the value is not in the server's data" 1 grep -r -a --exclude-dir=agent -e "$value" -e "$b64" "$data"
check "the envelope is" 0 grep -r -a -l "k8s:enc:aesgcm:v1:key1:" "$data"

# ---- rotate-key: killed after its first step, run again; the Secret reads -------------------------
check "delete pod" 0 "${k[@]}" delete pod envpod --grace-period=0 --force
stop_up
check "rotate-key killed after adding the key" 137 env XPOOL_TEST_CRASH_ROTATE=1 "$xpool" store rotate-key --data-dir "$data"
expect_in "added" "$tmp/out" "added:      key key2, the primary now"
check "rotate-key" 0 "$xpool" store rotate-key --data-dir "$data"
expect_in "encrypted" "$tmp/out" "with key key3"
expect_in "retired" "$tmp/out" "retired:    2 old keys"
check "the key file keeps the primary" 0 grep -c " aesgcm " "$data/encryption.keys"
expect_in "one key" "$tmp/out" "1"
check "no key1 row is left" 1 grep -r -a -l "k8s:enc:aesgcm:v1:key1:" "$data"
start_up
check "the secret reads after rotation" 0 "${k[@]}" get secret db -o jsonpath='{.data.password}'
expect_in "the value" "$tmp/out" "$b64"
check "still not in plaintext" 1 grep -r -a --exclude-dir=agent -e "$value" -e "$b64" "$data"

finish "secrets"
