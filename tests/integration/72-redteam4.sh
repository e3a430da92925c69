#!/usr/bin/env bash
# The red team's fourth round (docs/reliability.md, "Red team, fourth round"), on `xpool up` running
# process pods as root, with stock kubectl. A default pod must not read the node's private data
# or reach other pods' namespaces:
#   - the node's /var/log, /var/lib, /var/spool, /var/backups, /var/mail, /root and /home are
#     empty directories in its view (before the fix, it read the node's logs, every daemon's
#     state and root's home), as is /etc/ssl/private (the node's TLS keys, with its VPN, Wi-Fi
#     and Kerberos keys now among the hidden credentials); its shadow file and SSH host keys
#     stay hidden;
#   - a hostPath volume of /var/log (a log shipper, allowed by --allow-host-path) still shows
#     the node's logs at its mount point, and a path the admin shares (XPOOL_SHARE) is seen;
#   - the pod has an IPC namespace of its own, shared by its containers, and where the node has a
#     /dev/mqueue, the pod's own message queues there (before, the node's and every pod's);
#   - the namespace pins (iproute2's /run/netns, the agents' /run/xpool) are empty directories:
#     a listing there named every pod of the node, and a pin opened joins its network.
# This machine mounts no mqueue file system: the test runs in a mount namespace of its own
# (unshare -m) with one at /dev/mqueue, whose directory it makes on the node's /dev when missing
# (removed at the end). Without unshare or the mqueue file system it is skipped (77).
if [[ -z ${XPOOL_R4_OWN_NS:-} ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "SKIP: process pods' mount namespaces need root"; exit 77; }
  command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) is not installed"; exit 77; }
  XPOOL_R4_OWN_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: ip (iproute2) is not installed"; exit 77; }
data=$tmp/data
marker=xpool-r4-$$
made_mqueue=
up_pid=
cleanup_node() {
  rm -f "/var/log/$marker" "/var/mail/$marker" "/etc/ssl/private/$marker.key"
  ip netns del "$marker" 2>/dev/null || true
  umount /dev/mqueue 2>/dev/null || true
  [[ -z $made_mqueue ]] || rmdir /dev/mqueue 2>/dev/null || true
}
trap 'stop_up; release_tmp; cleanup_node; rm -rf "$tmp"' EXIT

if [[ ! -e /dev/mqueue ]]; then
  mkdir /dev/mqueue || { echo "SKIP: cannot make /dev/mqueue"; exit 77; }
  made_mqueue=1
fi
mount -t mqueue r4mqueue /dev/mqueue || { echo "SKIP: this kernel mounts no mqueue file system"; exit 77; }
# what a pod must not see: a node log, a node message queue, another network namespace's pin
echo "node log $marker" >"/var/log/$marker"
echo "shared $marker" >"/var/mail/$marker"
[[ ! -d /etc/ssl/private ]] || echo "not a key" >"/etc/ssl/private/$marker.key"
# A queue's bytes count against root's budget (RLIMIT_MSGQUEUE, 800 KiB) in every IPC namespace
# at once, and one made by touch takes 80 KiB of it: on a machine whose root holds other queues,
# the pod's would fail with EMFILE, which says nothing about isolation. Queues of one small
# message each leave that budget alone.
cat >"$tmp/mkqueue.py" <<'PY'
import ctypes, os, sys
class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("reserved", ctypes.c_long * 4)]
libc = ctypes.CDLL(None, use_errno=True)
libc.mq_open.restype = ctypes.c_int
attr = MqAttr(0, 1, 16, 0)
fd = libc.mq_open(sys.argv[1].encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
if fd < 0:
    sys.exit("mq_open %s: %s" % (sys.argv[1], os.strerror(ctypes.get_errno())))
PY
/usr/bin/python3 "$tmp/mkqueue.py" "/$marker"
ip netns add "$marker"
node_ipc=$(readlink /proc/self/ns/ipc)

log=$tmp/up.log
XPOOL_SHARE=$tmp:/var/mail start_up "$log" --listen 127.0.0.1:0 --data-dir "$data" --node-name r4 \
  --pod-network host --default-runtime process --allow-host-path /var/log
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
diag_cluster "$KUBECONFIG"
phase() { "${k[@]}" get pod "$1" -o 'jsonpath={.status.phase}'; }
poll "node r4 Ready" 120 True "${k[@]}" get node r4 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'

# ---- a default pod, two containers: the node's private paths, its IPC, the pins ----------------
probe='n() { ls -A "$1" 2>/dev/null | wc -l; }
      echo "varlog=$(n /var/log) varlib=$(n /var/lib) spool=$(n /var/spool) backups=$(n /var/backups)"
      echo "root=$(n /root) home=$(n /home) ssh=$(n /etc/ssh) shadow=$(wc -c </etc/shadow)"
      echo "sslkeys=$(n /etc/ssl/private)"
      echo "netns=$(n /run/netns) xpool=$(n /run/xpool)"
      cat /var/log/'$marker' 2>/dev/null || echo nolog
      cat /var/mail/'$marker' 2>/dev/null || echo noshare
      ls -A /dev/mqueue | grep -q '$marker' && echo nodequeue
      /usr/bin/python3 '$tmp'/mkqueue.py /podqueue-'$marker' && [ -e /dev/mqueue/podqueue-'$marker' ] && echo madequeue
      echo "ipc=$(readlink /proc/self/ns/ipc)"'
cat >"$tmp/view.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: view}
spec:
  restartPolicy: Never
  containers:
  - name: a
    command: [sh, -c, $(printf '%s' "$probe" | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()))')]
  - name: b
    command: [sh, -c, 'echo "ipc=\$(readlink /proc/self/ns/ipc)"']
EOF
check "apply view" 0 "${k[@]}" apply -f "$tmp/view.yaml"
poll "view completes" 90 Succeeded phase view
# the node had what the pod must not see: its agent's pin directory below /run/xpool (named by
# the agent's log; a listing of /run/xpool piped to grep -q, under pipefail, failed at random once
# it outgrew one write)
own_pins=$(agent_pin_dirs "$tmp" | sed -n '1s/.* //p')
[[ $own_pins == /run/xpool/agent-*/ipc && -d ${own_pins%/ipc} ]] ||
  { echo "FAIL the agent pinned nothing below /run/xpool ('$own_pins')"; failures=$((failures + 1)); }
check "view's output" 0 "${k[@]}" logs view -c a
cp "$tmp/out" "$tmp/view.out"
for what in varlog varlib spool backups root home ssh netns xpool; do
  expect_in "a default pod: the node's $what is an empty directory" "$tmp/view.out" "$what=0"
done
expect_in "... its shadow file is empty" "$tmp/view.out" "shadow=0"
expect_in "... the node's TLS keys are an empty directory" "$tmp/view.out" "sslkeys=0"
expect_in "... a node log is not there" "$tmp/view.out" "nolog"
expect_in "... a path the admin shares is" "$tmp/view.out" "shared $marker"
if grep -q nodequeue "$tmp/view.out"; then
  echo "FAIL a default pod lists the node's message queues"; failures=$((failures + 1))
fi
expect_in "... it makes a queue of its own" "$tmp/view.out" "madequeue"
[[ ! -e /dev/mqueue/podqueue-$marker ]] || { echo "FAIL the pod's queue is in the node's /dev/mqueue"; failures=$((failures + 1)); }
ipc_a=$(sed -n 's/^ipc=//p' "$tmp/view.out")
check "view's second container" 0 "${k[@]}" logs view -c b
ipc_b=$(sed -n 's/^ipc=//p' "$tmp/out")
[[ -n $ipc_a && $ipc_a != "$node_ipc" ]] ||
  { echo "FAIL the pod's IPC namespace '$ipc_a' is the node's '$node_ipc'"; failures=$((failures + 1)); }
[[ $ipc_a == "$ipc_b" ]] ||
  { echo "FAIL the pod's containers have two IPC namespaces: '$ipc_a' and '$ipc_b'"; failures=$((failures + 1)); }

# ---- a log shipper: a hostPath volume of /var/log shows the node's logs ------------------------
cat >"$tmp/shipper.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: shipper}
spec:
  restartPolicy: Never
  containers:
  - name: c
    command: [sh, -c, 'cat /var/log/$marker && echo "varlib=\$(ls -A /var/lib | wc -l)"']
    volumeMounts: [{name: logs, mountPath: /var/log, readOnly: true}]
  volumes: [{name: logs, hostPath: {path: /var/log, type: Directory}}]
EOF
check "apply shipper" 0 "${k[@]}" apply -f "$tmp/shipper.yaml"
poll "shipper completes" 60 Succeeded phase shipper
check "shipper's output" 0 "${k[@]}" logs shipper
expect_in "a hostPath volume of /var/log: the node's log at its mount point" "$tmp/out" "node log $marker"
expect_in "... /var/lib still hidden" "$tmp/out" "varlib=0"

finish 72-redteam4
