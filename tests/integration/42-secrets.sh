#!/usr/bin/env bash
# Secrets and ConfigMaps in use, with stock kubectl against `xpool up --simulate` (docs/workloads.md,
# docs/security.md):
#   - a pod with configMap and secret volumes: ContainerCreating with the kubelet's FailedMount
#     event while its ConfigMap is missing, then the files (items, defaultMode, ..data links), a change to the ConfigMap written to them;
#   - a process pod's emptyDir written by one container and read by the other, a hostPath of each
#     type checked inside it (the readOnly one refused a write), a type mismatch refused with the
#     kubelet's message, the emptyDir gone with the pod;
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
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT

# each start's log is kept (lib.sh's start_up: up.1.log, up.2.log... before the current up.log),
# so that a failure after a restart still shows how the earlier server ended
log=$tmp/up.log
start_xpool() {
  start_up "$log" --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name "$node" \
    --backoff-initial 200ms --pod-network host --default-runtime process \
    --allow-host-path "$tmp/host"
}
start_xpool
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
poll "waits for its ConfigMap" 60 'CreateContainerConfigError: configmap "app" not found' waiting
check "get pod" 0 "${k[@]}" get pod envpod
expect_in "kubectl shows the reason" "$tmp/out" "CreateContainerConfigError"

check "create configmap" 0 "${k[@]}" create configmap app --from-literal=mode=fast --from-literal=level=3 --from-literal=1bad=x
phase() { "${k[@]}" get pod envpod -o jsonpath='{.status.phase}'; }
poll "runs once it is there" 60 Running phase
logs() { "${k[@]}" logs envpod; }
poll "the values" 60 "PW=$value MODE=fast APP_level=3 user=admin
0" logs
events() { "${k[@]}" get events --field-selector involvedObject.name=envpod -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'; }
invalid_key_events() { events | grep -c '^InvalidEnvironmentVariableNames: Keys \[1bad\] from the EnvFrom configMap default/app were skipped since they are considered invalid environment variable names.$'; }
poll "the invalid key's event" 60 1 invalid_key_events

# ---- configMap, secret, projected and downwardAPI volumes of a process pod ------------------------
# FailedMount until the ConfigMap is there; then the files bound read-only at their mountPath in
# the container's own mount namespace, the secret's on a tmpfs; the downward API in env and files.
mnt=$tmp/mnt
mkdir -p "$mnt"
cat >"$tmp/volpod.sh" <<'EOF'
m=${0%/volpod.sh}/mnt
cat $m/cfg/mode; echo; cat $m/sec/auth/pw; echo; cat $m/info/labels; echo; cat $m/all/name; echo
echo NAME=$NAME CPU=$CPU MEM=$MEM
# mount point and file system type of each volume, from this process's own mount table
grep " $m/" /proc/self/mountinfo | sed 's|^[^ ]* [^ ]* [^ ]* [^ ]* \([^ ]*\) .* - \([^ ]*\) .*|\1 \2|'
touch $m/cfg/x
exec sleep 600
EOF
cat >"$tmp/volpod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: volpod
  labels: {tier: a}
  annotations: {note: 'say "hi"'}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "$tmp/volpod.sh"]
    resources: {limits: {cpu: 500m, memory: 64Mi}}
    env:
    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    volumeMounts:
    - {name: cfg, mountPath: $mnt/cfg}
    - {name: sec, mountPath: $mnt/sec}
    - {name: info, mountPath: $mnt/info}
    - {name: all, mountPath: $mnt/all}
  volumes:
  - {name: cfg, configMap: {name: vcfg}}
  - {name: sec, secret: {secretName: db, defaultMode: 0400, items: [{key: password, path: auth/pw}]}}
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: cpu, resourceFieldRef: {containerName: c, resource: limits.cpu, divisor: 1m}}
  - name: all
    projected:
      sources:
      - downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}
      - secret: {name: db, items: [{key: user, path: user}]}
EOF
check "apply volume pod" 0 "${k[@]}" apply -f "$tmp/volpod.yaml"
volwait() { "${k[@]}" get pod volpod -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}'; }
poll "waits ContainerCreating" 60 ContainerCreating volwait
volevents() { "${k[@]}" get events --field-selector involvedObject.name=volpod -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'; }
failed_mount() { volevents | grep -c '^FailedMount: MountVolume.SetUp failed for volume "cfg" : configmap "vcfg" not found$'; }
poll "the kubelet's FailedMount event" 60 1 failed_mount
check "create the volume's configmap" 0 "${k[@]}" create configmap vcfg --from-literal=mode=fast
volphase() { "${k[@]}" get pod volpod -o jsonpath='{.status.phase}'; }
poll "the volume pod runs once it is there" 60 Running volphase
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
check "the secret volume is a tmpfs of its own on the node" 0 findmnt -n -o FSTYPE --mountpoint "$vdir/sec"
expect_in "tmpfs" "$tmp/out" "tmpfs"
check "so is the projected one" 0 findmnt -n -o FSTYPE --mountpoint "$vdir/all"
expect_in "tmpfs" "$tmp/out" "tmpfs"
check "the configMap one stays on disk" 1 findmnt -n --mountpoint "$vdir/cfg"
volout() { "${k[@]}" logs volpod | head -5; }
volro() { "${k[@]}" logs volpod | grep -c "Read-only file system"; }
poll "the process sees the files at mountPath" 60 "fast
$value
tier=\"a\"
volpod
NAME=volpod CPU=500 MEM=64" volout
poll "its write refused" 60 1 volro
check "the rest of its log" 0 "${k[@]}" logs volpod
expect_in "the mounts in its own namespace: the secret on tmpfs" "$tmp/out" "$mnt/sec tmpfs"
expect_in "the configMap's on the node's disk" "$tmp/out" "$mnt/cfg ext4"
expect_in "read-only" "$tmp/out" "Read-only file system"
check "the node's own directory (the mount point) stays empty" 0 test -z "$(find "$mnt/cfg" -mindepth 1)"
check "annotations in the kubelet's form" 0 cat "$vdir/info/annotations"
expect_in "quoted" "$tmp/out" 'note="say \"hi\""'
check "a resourceFieldRef file" 0 cat "$vdir/info/cpu"
expect_in "in millicores" "$tmp/out" "500"
check "change the volume's configmap" 0 "${k[@]}" patch configmap vcfg -p '{"data":{"mode":"slow"}}'
check "change the pod's labels" 0 "${k[@]}" label pod volpod tier=b --overwrite
inside() { "${k[@]}" exec volpod -- cat "$mnt/cfg/mode" "$mnt/info/labels"; }
poll "both changes reach the container (the labels at the update, the configMap at its 10 s round)" 60 'slowtier="b"' inside
check "delete volume pod" 0 "${k[@]}" delete pod volpod --grace-period=0 --force
voldir_state() { [[ -e "$vdir" ]] && echo there || echo gone; }
poll "the pod's volume files go with it" 60 gone voldir_state

# ---- emptyDir and hostPath volumes of a process pod ----------------------------------------------
# one container writes the emptyDir, the other reads it; a hostPath of each type checked inside
host=$tmp/host
mkdir -p "$host/dir" "$tmp/mnt2/shared" "$tmp/mnt2/dir" "$tmp/mnt2/made"
: >"$host/file"
mknod "$host/chr" c 1 3
mknod "$host/blk" b 7 250
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$host/sock"
m2=$tmp/mnt2
cat >"$tmp/edpod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: edpod}
spec:
  restartPolicy: Never
  containers:
  - name: writer
    image: busybox
    command: ["sh", "-c", "echo from-writer > $m2/shared/f; test -d $m2/dir && test -d $m2/made && test -f $m2/file && test -f $m2/new && test -S $m2/sock && test -c $m2/chr && test -b $m2/blk && echo types ok; touch $m2/dir/x || echo ro refused; exec sleep 60"]
    volumeMounts:
    - {name: shared, mountPath: $m2/shared}
    - {name: dir, mountPath: $m2/dir, readOnly: true}
    - {name: made, mountPath: $m2/made}
    - {name: file, mountPath: $m2/file}
    - {name: new, mountPath: $m2/new}
    - {name: sock, mountPath: $m2/sock}
    - {name: chr, mountPath: $m2/chr}
    - {name: blk, mountPath: $m2/blk}
  - name: reader
    image: busybox
    command: ["sh", "-c", "for i in \$(seq 600); do test -s $m2/shared/f && break; sleep 0.1; done; cat $m2/shared/f; exec sleep 60"]
    volumeMounts:
    - {name: shared, mountPath: $m2/shared}
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: dir, hostPath: {path: $host/dir, type: Directory}}
  - {name: made, hostPath: {path: $host/made, type: DirectoryOrCreate}}
  - {name: file, hostPath: {path: $host/file, type: File}}
  - {name: new, hostPath: {path: $host/new, type: FileOrCreate}}
  - {name: sock, hostPath: {path: $host/sock, type: Socket}}
  - {name: chr, hostPath: {path: $host/chr, type: CharDevice}}
  - {name: blk, hostPath: {path: $host/blk, type: BlockDevice}}
EOF
check "apply the emptyDir and hostPath pod" 0 "${k[@]}" apply -f "$tmp/edpod.yaml"
edphase() { "${k[@]}" get pod edpod -o jsonpath='{.status.phase}'; }
poll "it runs" 60 Running edphase
edread() { "${k[@]}" logs edpod -c reader; }
poll "the reader reads what the writer wrote in the emptyDir" 60 from-writer edread
edwriter() { "${k[@]}" logs edpod -c writer | grep -c -e "types ok" -e "ro refused"; }
poll "every hostPath type as asked, the readOnly one refused a write" 60 2 edwriter
check "DirectoryOrCreate and FileOrCreate made them on the node" 0 test -d "$host/made" -a -f "$host/new"
eduid=$("${k[@]}" get pod edpod -o jsonpath='{.metadata.uid}')
check "the emptyDir is the pod's directory on the node" 0 cat "$data/agent/containers/.pods/$eduid/volumes/shared/f"
expect_in "with what was written" "$tmp/out" "from-writer"
check "delete the emptyDir pod" 0 "${k[@]}" delete pod edpod --grace-period=0 --force
edgone() { [[ -e "$data/agent/containers/.pods/$eduid" ]] && echo there || echo gone; }
poll "the emptyDir goes with the pod" 60 gone edgone
hostpod() { # name, path, type
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  restartPolicy: Never\n' "$1"
  printf '  containers: [{name: c, image: busybox, command: [sleep, "60"], volumeMounts: [{name: h, mountPath: %s}]}]\n' "$m2/dir"
  printf '  volumes: [{name: h, hostPath: {path: %s, type: %s}}]\n' "$2" "$3"
}
hostpod badtype "$host/dir" File >"$tmp/badtype.yaml"
check "apply a hostPath of the wrong type" 0 "${k[@]}" apply -f "$tmp/badtype.yaml"
badmsg() { "${k[@]}" get pod badtype -o jsonpath='{.status.containerStatuses[0]}' | grep -c "hostPath type check failed: $host/dir is not a file"; }
poll "refused with the kubelet's message" 60 1 badmsg
check "delete it" 0 "${k[@]}" delete pod badtype --grace-period=0 --force
check "the node's directory was not changed" 0 test -d "$host/dir"

# ---- the downward API's paths are checked at admission, in kube-apiserver's words ----------------
bad_pod() { # fieldPath, where: env or volume
  {
    printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: badpath}\nspec:\n'
    printf '  containers: [{name: c, image: busybox, command: [sleep, "1"]%s}]\n' \
      "$([[ $2 == env ]] && echo ", env: [{name: X, valueFrom: {fieldRef: {fieldPath: '$1'}}}]")"
    [[ $2 == env ]] || printf '  volumes: [{name: d, downwardAPI: {items: [{path: f, fieldRef: {fieldPath: %s}}]}}]\n' "$1"
  } >"$tmp/bad.yaml"
  "${k[@]}" create -f "$tmp/bad.yaml"
}
check "a fieldPath env does not take" 1 bad_pod status.phase env
expect_in "Unsupported value" "$tmp/err" 'The Pod "badpath" is invalid: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"'
check "a fieldPath no pod has" 1 bad_pod metadata.nope env
expect_in "Invalid value" "$tmp/err" 'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.nope": error converting fieldPath: field label not supported: metadata.nope'
check "a fieldPath a volume does not take" 1 bad_pod spec.nodeName volume
expect_in "Unsupported value" "$tmp/err" 'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"'
check "nothing was stored" 1 "${k[@]}" get pod badpath

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
start_xpool
check "the secret reads after rotation" 0 "${k[@]}" get secret db -o jsonpath='{.data.password}'
expect_in "the value" "$tmp/out" "$b64"
check "still not in plaintext" 1 grep -r -a --exclude-dir=agent -e "$value" -e "$b64" "$data"

# ---- a lost key file: the server starts and serves the rest; the Secret says why it cannot -------
stop_up
mv "$data/encryption.keys" "$tmp/encryption.keys.lost"
start_xpool
check "the server serves pods" 0 "${k[@]}" get pods
check "and configmaps" 0 "${k[@]}" get configmap vcfg -o jsonpath='{.data.mode}'
expect_in "the value" "$tmp/out" "slow"
check "the secret cannot be read" 1 "${k[@]}" get secret db
expect_in "500 with the reason" "$tmp/err" "Error from server (InternalError): Internal error occurred: secrets default/db cannot be decrypted with the keys in the data directory's encryption.keys: it is encrypted with key key3, which that file does not hold"
expect_in "the start says why, once" "$log" "xpool server: 2 Secrets cannot be decrypted with the keys in $data/encryption.keys (the file was missing: it was made anew, with a new key): reads of them are refused (500)"
expect_in "one log line names it" "$log" "leaving out secrets default/db: secrets default/db cannot be decrypted"
check "a list of secrets says the same" 1 "${k[@]}" get secrets
expect_in "the reason" "$tmp/err" "secrets default/db cannot be decrypted"
check "nor is it deleted unread (as in Kubernetes)" 1 "${k[@]}" delete secret db
expect_in "the same reason" "$tmp/err" "secrets default/db cannot be decrypted"

# each controller that lists Secrets (the quota counter and the workloads') names it at its
# start, and no retry or relist repeats it (they would within the minute only on a change)
expect_count "named by the two controllers' lists, not by retries" "$log" 2 "leaving out secrets default/db:"
check "the server still runs" 0 kill -0 "$up_pid"

finish "secrets"
