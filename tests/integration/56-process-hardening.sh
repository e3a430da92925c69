#!/usr/bin/env bash
# A process pod's view of the node (docs/security.md, "Pods"), with stock kubectl against
# `xpool up --allow-privileged` running process pods as root:
#   - a default root pod writes none of the node's /root, /opt, /var/lib, /usr/local; its writes
#     to /tmp and /var/tmp land in its own (the node's unchanged, a file of the node's /tmp out
#     of its sight); its emptyDir volumes (one at /tmp itself) and a shared path (--share, here
#     XPOOL_SHARE) stay writable, the latter's write seen by the node; readOnlyRootFilesystem
#     keeps its volumes writable and its /tmp read-only;
#   - a privileged pod (the opt-out) writes the node's /opt;
#   - a volume whose mountPath passes a symbolic link a non-root user planted in a shared
#     directory fails to start, saying why, and nothing is made where the link points; a
#     mountPath below the shared directory is made there;
#   - so does one below root's link in a root-only directory of the shared path (a root pod's);
#   - a non-root pod's emptyDir at a missing /opt/.../mp fails, and nothing is made in /opt;
#   - every pod's token volume at /var/run/secrets/... passes the node's own link /var/run ->
#     /run (root's, in a directory only root writes), which is followed.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: process pods' mount namespaces need root"; exit 77; }
data=$tmp/data
shared=$tmp/shared
target=$tmp/target
mkdir -p "$shared/open" "$target"
chmod 0777 "$shared/open"
# a link a node user (nobody) left in the shared, world-writable directory
ln -s "$target" "$shared/open/evil"
chown -h 65534:65534 "$shared/open/evil"
# root's link in a root-only directory of the shared path: what a root pod can leave there
mkdir -p "$shared/rootonly"
chmod 0755 "$shared/rootonly"
ln -s "$target" "$shared/rootonly/evil"
probe=.xpool-h16-$$
node_tmp_marker=/tmp/xpool-h16-marker.$$
: >"$node_tmp_marker"
up_pid=
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -TERM "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
cleanup_node() {
  rm -f "/root/$probe" "/opt/$probe" "/var/lib/$probe" "/usr/local/$probe" "/tmp/$probe" \
    "/var/tmp/$probe" "$node_tmp_marker"
}
trap 'stop_up; release_tmp; cleanup_node; rm -rf "$tmp"' EXIT

log=$tmp/up.log
XPOOL_SHARE=$shared "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --node-name h16 \
  --pod-network host --default-runtime process --allow-privileged >"$log" 2>&1 &
up_pid=$!
deadline=$((SECONDS + 120))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 120 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
diag_log "$log"
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
diag_cluster "$KUBECONFIG"
phase() { "${k[@]}" get pod "$1" -o 'jsonpath={.status.phase}'; }
not_in() { if grep -qF -- "$3" "$2"; then echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1)); fi; }
poll "node h16 Ready" 120 True "${k[@]}" get node h16 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'

try='t() { n=$1; shift; if eval "$*" >/dev/null 2>&1; then echo "$n=yes"; else echo "$n=no"; fi; }'
writes="$try
t root touch /root/$probe
t opt touch /opt/$probe
t varlib touch /var/lib/$probe
t usrlocal touch /usr/local/$probe
t tmp touch /tmp/$probe
t vartmp touch /var/tmp/$probe
t nodetmp test -e $node_tmp_marker
t data touch /data/$probe
t scratch touch /scratch/$probe
t shared touch $shared/$probe
t token test -s /var/run/secrets/kubernetes.io/serviceaccount/token
echo probed"
pod() { # name, security context (YAML flow), command; emptyDirs at /data and /scratch
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
  - name: c
    securityContext: $2
    command:
    - sh
    - -c
    - |
$(sed 's/^/      /' <<<"$3")
    volumeMounts: [{name: d, mountPath: /data}, {name: s, mountPath: /scratch}]
  volumes: [{name: d, emptyDir: {}}, {name: s, emptyDir: {}}]
EOF
}
pod root '{}' "$writes" >"$tmp/root.yaml"
pod rofs '{readOnlyRootFilesystem: true}' "$writes" >"$tmp/rofs.yaml"
for p in root rofs; do
  check "apply $p" 0 "${k[@]}" apply -f "$tmp/$p.yaml"
  poll "$p completes" 60 Succeeded phase "$p"
  check "$p's output" 0 "${k[@]}" logs "$p"
  cp "$tmp/out" "$tmp/$p.out"
done
for what in root opt varlib usrlocal nodetmp; do
  expect_in "a root pod: the node's $what refused" "$tmp/root.out" "$what=no"
done
for what in tmp vartmp data scratch shared token; do
  expect_in "a root pod: $what writable" "$tmp/root.out" "$what=yes"
done
for f in "/root/$probe" "/opt/$probe" "/var/lib/$probe" "/usr/local/$probe" "/tmp/$probe" "/var/tmp/$probe"; do
  [[ ! -e $f ]] || { echo "FAIL a default pod wrote the node's $f"; failures=$((failures + 1)); }
done
[[ -e $shared/$probe ]] || { echo "FAIL the shared path's write is not on the node"; failures=$((failures + 1)); }
rm -f "$shared/$probe"
for what in root opt tmp vartmp nodetmp; do
  expect_in "readOnlyRootFilesystem: $what refused" "$tmp/rofs.out" "$what=no"
done
for what in data scratch shared; do
  expect_in "readOnlyRootFilesystem: its volume $what writable" "$tmp/rofs.out" "$what=yes"
done
rm -f "$shared/$probe"

# ---- an emptyDir at /tmp replaces the pod's own /tmp ----------------------------------------------
cat >"$tmp/tmpvol.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: tmpvol}
spec:
  restartPolicy: Never
  containers:
  - name: c
    command: [sh, -c, "touch /tmp/$probe && grep -q ' /tmp .*rw' /proc/self/mounts && echo tmpvol=ok"]
    volumeMounts: [{name: t, mountPath: /tmp}]
  volumes: [{name: t, emptyDir: {}}]
EOF
check "apply tmpvol" 0 "${k[@]}" apply -f "$tmp/tmpvol.yaml"
poll "tmpvol completes" 60 Succeeded phase tmpvol
check "tmpvol's output" 0 "${k[@]}" logs tmpvol
expect_in "an emptyDir at /tmp is writable" "$tmp/out" "tmpvol=ok"
[[ -z "$(find "$data" -name "$probe" -path '*volumes*' -print -quit)" ]] &&
  { echo "FAIL tmpvol's write is not in its emptyDir"; failures=$((failures + 1)); }
[[ ! -e /tmp/$probe ]] || { echo "FAIL tmpvol wrote the node's /tmp"; failures=$((failures + 1)); }

# ---- privileged: the opt-out sees and writes the node as it is ------------------------------------
pod priv '{privileged: true}' "$try
t opt touch /opt/$probe
t nodetmp test -e $node_tmp_marker
echo probed" >"$tmp/priv.yaml"
check "apply priv" 0 "${k[@]}" apply -f "$tmp/priv.yaml"
poll "priv completes" 60 Succeeded phase priv
check "priv's output" 0 "${k[@]}" logs priv
expect_in "privileged: the node's /opt writable" "$tmp/out" "opt=yes"
expect_in "privileged: the node's /tmp in view" "$tmp/out" "nodetmp=yes"
[[ -e /opt/$probe ]] || { echo "FAIL the privileged pod's write is not on the node"; failures=$((failures + 1)); }
rm -f "/opt/$probe"

# ---- mount points: a planted link is not followed; a new one below a shared path is made ----------
mp_pod() { # name, mountPath, security context
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
  - name: c
    securityContext: ${3:-{\}}
    command: [sh, -c, "touch $2/x && echo mounted"]
    volumeMounts: [{name: v, mountPath: $2}]
  volumes: [{name: v, emptyDir: {}}]
EOF
}
mp_pod planted "$shared/open/evil/mp" >"$tmp/planted.yaml"
mp_pod fresh "$shared/open/new/mp" >"$tmp/fresh.yaml"
mp_pod rootlink "$shared/rootonly/evil/mp" >"$tmp/rootlink.yaml"
mp_pod optmp "/opt/$probe/mp" '{runAsUser: 65534}' >"$tmp/optmp.yaml"
for p in planted fresh rootlink optmp; do check "apply $p" 0 "${k[@]}" apply -f "$tmp/$p.yaml"; done
poll "fresh completes" 60 Succeeded phase fresh
[[ -d $shared/open/new/mp ]] || { echo "FAIL fresh's mount point was not made in the shared path"; failures=$((failures + 1)); }
poll "planted fails" 60 Failed phase planted
check "planted's message" 0 "${k[@]}" get pod planted -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}'
expect_in "... saying why" "$tmp/out" "symbolic link"
[[ ! -e $target/mp ]] || { echo "FAIL a mount point was made through the planted link"; failures=$((failures + 1)); }
[[ ! -e $target/mp/x ]] || { echo "FAIL planted wrote through the link"; failures=$((failures + 1)); }
poll "a root link in a shared path is not followed either" 60 Failed phase rootlink
check "rootlink's message" 0 "${k[@]}" get pod rootlink -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}'
expect_in "... saying why" "$tmp/out" "symbolic link"
[[ ! -e $target/mp ]] || { echo "FAIL a mount point was made through root's link in the shared path"; failures=$((failures + 1)); }
poll "a mountPath missing below /opt fails" 60 Failed phase optmp
check "optmp's message" 0 "${k[@]}" get pod optmp -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}'
expect_in "... saying why" "$tmp/out" "missing on the node"
[[ ! -e /opt/$probe ]] || { echo "FAIL a non-root pod made /opt/$probe on the node"; rm -rf "/opt/$probe"; failures=$((failures + 1)); }

finish 56-process-hardening
