#!/usr/bin/env bash
# Pods are contained (docs/security.md, "Threat model"). A server and node agents on loopback,
# and `xpool up`; pods with no securityContext and with each field the process runtime honours:
# - a default pod reads neither the agent's node token nor the server's CA key (the server's
#   default data directory beside the agent, and the `xpool up` layout where both share one),
#   nor /etc/shadow, nor the node's /dev/shm, nor writes the agent's CDI specs (their hooks run on
#   the node) or /var/lib/dpkg,
#   cannot write its devices.allow nor open a device it was not given, cannot raise its memory
#   limit nor move itself to the root cgroup; CapEff is Docker's default set, NoNewPrivs 1,
#   Seccomp 2 (filter) and `unshare -m` fails;
# - capabilities.drop [ALL] gives CapEff 0; allowPrivilegeEscalation true lifts NoNewPrivs;
#   runAsNonRoot as root waits in CreateContainerConfigError with the kubelet's message;
#   readOnlyRootFilesystem makes writes fail;
# - privileged is refused without --allow-privileged (PrivilegedNotAllowed), runs with it and
#   is recorded by a Warning Event;
# - a pod whose process escaped with setsid (and tried to leave its cgroup) is gone after DELETE;
# - an agent that cannot use its cgroups says so, reports IsolationDegraded and refuses pods with
#   limits (IsolationDegraded), unless started with --allow-degraded-isolation.
# Needs root and cgroup v1 (else exit 77).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (namespaces, cgroups, device nodes)"; exit 77; }
for c in cpu memory devices cpuset pids; do
  [[ -d /sys/fs/cgroup/$c ]] || { echo "SKIP: needs cgroup v1 with the $c controller"; exit 77; }
done
probe=/sys/fs/cgroup/devices/xpool-probe-$$
mkdir "$probe" 2>/dev/null && rmdir "$probe" ||
  { echo "SKIP: cannot create cgroups under /sys/fs/cgroup/devices (read-only here)"; exit 77; }

# the server's default data directory, below a scratch XDG_STATE_HOME (the default root's first
# choice; as root it is /var/lib/xpool otherwise)
home=$tmp/home
sdata=$home/.local/state/xpool
up=$tmp/up
dev=$(mktemp -d /dev/xpool-test.XXXXXX)
marker="sleep 1009.$$"   # the escaping process's command line
probe_sleep="sleep 300.$$"
server_pid= up_pid=
declare -A agent_pid=()
stop_all() {
  local p
  for p in "${agent_pid[@]}" $server_pid $up_pid; do kill -KILL "$p" 2>/dev/null || true; done
  pkill -KILL -f "$marker" 2>/dev/null || true
  pkill -KILL -f "$probe_sleep" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap 'stop_all; release_tmp; rm -rf "$tmp" "$dev" "/dev/shm/xpool-probe-$$"' EXIT
mkdir -p "$home"
export HOME=$home XDG_STATE_HOME=$home/.local/state

# a device node no pod is given (kmsg's numbers: opened for writing it needs no capability)
mknod "$dev/notmine" c 1 11

"$xpool" token create --node n1 >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 >"$tmp/n2.token" 2>/dev/null
"$xpool" token create --node n3 >"$tmp/n3.token" 2>/dev/null
"$xpool" server --listen 127.0.0.1:0 >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
url=
for _ in $(seq 600); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not come up:"; cat "$tmp/server.log"; exit 1; }
[[ -f $sdata/pki/ca.key ]] || { echo "FAIL no CA key in the default data directory $sdata"; exit 1; }
export KUBECONFIG=$sdata/admin.kubeconfig
diag_cluster "$KUBECONFIG"

start_agent() { # node, extra flags...: the node's agent, its token from a file
  local n=$1
  shift
  "$xpool" agent --server "$url" --token-file "$tmp/$n.token" --ca-file "$sdata/pki/ca.crt" \
    --node-name "$n" --data-dir "$tmp/agent-$n" --listen 127.0.0.1:0 --pod-network host --default-runtime process "$@" \
    >>"$tmp/agent-$n.log" 2>&1 &
  agent_pid[$n]=$!
  diag_log "$tmp/agent-$n.log"
}
start_agent n1 --cdi-dir "$tmp/cdi-n1"
# n2 and n3 cannot use cgroups: their cgroup root is an empty directory
mkdir -p "$tmp/nocgroups"
start_agent n2 --cgroup-root "$tmp/nocgroups"
start_agent n3 --cgroup-root "$tmp/nocgroups" --allow-degraded-isolation

ready() { kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'; }
phase() { kubectl "${@:2}" get pod "$1" -o 'jsonpath={.status.phase}'; }
not_in() { if grep -qF -- "$3" "$2"; then echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1)); fi; }
poll "node n1 Ready" 60 True ready n1
[[ $failures -eq 0 ]] || { echo "== agent n1:"; cat "$tmp/agent-n1.log"; exit 1; }
for n in n2 n3; do poll "node $n Ready" 60 True ready "$n"; done

pod() { # name, node, security context of the container (YAML flow), command: a pod manifest
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $2
  restartPolicy: Never
  containers:
  - name: c
    securityContext: $3
    resources: {limits: {memory: 64Mi}}
    command:
    - sh
    - -c
    - |
$(sed 's/^/      /' <<<"$4")
EOF
}
# prints NAME=yes when the command succeeds, NAME=no otherwise
try='t() { n=$1; shift; if eval "$*" >/dev/null 2>&1; then echo "$n=yes"; else echo "$n=no"; fi; }'
status='grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status'

# ---- a default pod ------------------------------------------------------------------------------
# the pod's group, below n1's own parent (which n1 logs at start)
parent=$(sed -n "s|.*pods' cgroups below /\(xpool/agent-[0-9a-f]*\)\$|\1|p" "$tmp/agent-n1.log" | tail -1)
[[ -n "$parent" ]] || { echo "FAIL n1 did not say where its pods' cgroups are"; failures=$((failures + 1)); }
cg="$parent"'/$XPOOL_POD_UID/c'
# a POSIX shared memory segment of the node's (another pod's, a database's)
shm_marker=/dev/shm/xpool-probe-$$
: >"$shm_marker"
pod probe n1 '{}' "$try
t token grep -q xpn_ $tmp/n1.token
t cakey grep -q PRIVATE $sdata/pki/ca.key
t admin grep -q token: $sdata/admin.kubeconfig
t agentstate ls $tmp/agent-n1/containers
t devallow \"echo \\\"a *:* rwm\\\" >/sys/fs/cgroup/devices/$cg/devices.allow\"
t notmine \"true >>$dev/notmine\"
t memlimit \"echo -1 >/sys/fs/cgroup/memory/$cg/memory.limit_in_bytes\"
t rootcg \"echo \\\$\\\$ >/sys/fs/cgroup/memory/cgroup.procs\"
t unshare unshare -m true
t mount mount -t tmpfs none /mnt
t etc touch /etc/.xpool-probe-$$
t tmpwrite touch /tmp/.xpool-probe-$$
t cdi touch $tmp/cdi-n1/injected.json
t shadow grep -q root: /etc/shadow
t dpkg touch /var/lib/dpkg/.xpool-probe-$$
t nodeshm test -e $shm_marker
$status
echo probed; exec $probe_sleep" >"$tmp/probe.yaml"
check "apply probe" 0 kubectl apply -f "$tmp/probe.yaml"
poll "probe runs" 60 Running phase probe
poll "probe probed" 60 yes sh -c "kubectl logs probe | grep -q probed && echo yes"
check "probe's output" 0 kubectl logs probe
cp "$tmp/out" "$tmp/probe.out"
for what in token cakey admin agentstate devallow notmine memlimit rootcg unshare mount etc cdi shadow dpkg nodeshm; do
  expect_in "a default pod: $what refused" "$tmp/probe.out" "$what=no"
done
expect_in "... /tmp stays writable" "$tmp/probe.out" "tmpwrite=yes"
rm -f "/etc/.xpool-probe-$$" "/tmp/.xpool-probe-$$"
expect_in "Docker's default capabilities" "$tmp/probe.out" "CapEff:	00000000a80425fb"
expect_in "... bounding too" "$tmp/probe.out" "CapBnd:	00000000a80425fb"
expect_in "no_new_privs by default" "$tmp/probe.out" "NoNewPrivs:	1"
expect_in "seccomp in filter mode" "$tmp/probe.out" "Seccomp:	2"
# from the host: the limit and the filter are as the agent set them, the processes in the group
uid=$(kubectl get pod probe -o 'jsonpath={.metadata.uid}')
group=$parent/$uid/c
check "memory limit from the host" 0 cat "/sys/fs/cgroup/memory/$group/memory.limit_in_bytes"
expect_in "still 64Mi" "$tmp/out" 67108864
check "devices.list from the host" 0 cat "/sys/fs/cgroup/devices/$group/devices.list"
not_in "still filtered" "$tmp/out" "a *:* rwm"
pids=$(pgrep -f "^$probe_sleep\$" | sort) || true
inside=$(sort "/sys/fs/cgroup/memory/$group/cgroup.procs")
[[ -n "$pids" && -n "$inside" ]] && comm -23 <(echo "$pids") <(echo "$inside") | grep -q . &&
  { echo "FAIL a process of probe left its group: $pids vs $inside"; failures=$((failures + 1)); }
check "delete probe" 0 kubectl delete pod probe --grace-period 0 --wait=false

# ---- /dev/shm: a volume at it replaces the container's own; one below it is refused -----------
shm_pod() { # name, mountPath
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: n1
  restartPolicy: Never
  containers:
  - name: c
    command: [sh, -c, "if test -e $shm_marker; then echo nodeshm=yes; else echo nodeshm=no; fi"]
    volumeMounts: [{name: m, mountPath: $2}]
  volumes: [{name: m, emptyDir: {medium: Memory}}]
EOF
}
shm_pod shmat /dev/shm >"$tmp/shmat.yaml"
shm_pod shmbelow /dev/shm/x >"$tmp/shmbelow.yaml"
for p in shmat shmbelow; do check "apply $p" 0 kubectl apply -f "$tmp/$p.yaml"; done
poll "a memory emptyDir at /dev/shm runs" 60 Succeeded phase shmat
check "shmat's output" 0 kubectl logs shmat
expect_in "... and shows it, not the node's" "$tmp/out" "nodeshm=no"
poll "a volume below /dev/shm is refused" 60 Failed phase shmbelow
check "shmbelow's message" 0 kubectl get pod shmbelow -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}'
expect_in "... saying why" "$tmp/out" "a process container's /dev/shm is its own"
[[ -e /dev/shm/x ]] && { echo "FAIL a mount point was made on the node's /dev/shm"; failures=$((failures + 1)); }

# ---- capabilities, no_new_privs, runAsNonRoot, readOnlyRootFilesystem -----------------------------
pod dropall n1 '{capabilities: {drop: [ALL]}}' "$status" >"$tmp/dropall.yaml"
pod escalate n1 '{allowPrivilegeEscalation: true, capabilities: {add: [SYS_ADMIN], drop: [CHOWN]}}' "$status" >"$tmp/escalate.yaml"
pod nonroot n1 '{runAsNonRoot: true}' "echo should not run" >"$tmp/nonroot.yaml"
pod rofs n1 '{readOnlyRootFilesystem: true}' "$try
t write touch /root/.xpool-rofs-$$
t tmp touch /tmp/.xpool-rofs-$$
t devnull \"echo x >/dev/null\"" >"$tmp/rofs.yaml"
pod priv n1 '{privileged: true}' "echo should not run" >"$tmp/priv.yaml"
for p in dropall escalate nonroot rofs priv; do check "apply $p" 0 kubectl apply -f "$tmp/$p.yaml"; done
poll "dropall Succeeded" 60 Succeeded phase dropall
check "dropall's output" 0 kubectl logs dropall
expect_in "drop [ALL]: no capability" "$tmp/out" "CapEff:	0000000000000000"
expect_in "... none to gain" "$tmp/out" "CapBnd:	0000000000000000"
poll "escalate Succeeded" 60 Succeeded phase escalate
check "escalate's output" 0 kubectl logs escalate
expect_in "allowPrivilegeEscalation true: no no_new_privs" "$tmp/out" "NoNewPrivs:	0"
expect_in "add SYS_ADMIN, drop CHOWN" "$tmp/out" "CapEff:	00000000a82425fa"
poll "nonroot waits" 60 CreateContainerConfigError \
  kubectl get pod nonroot -o 'jsonpath={.status.containerStatuses[0].state.waiting.reason}'
nonroot_uid=$(kubectl get pod nonroot -o 'jsonpath={.metadata.uid}')
check "nonroot's message" 0 kubectl get pod nonroot -o 'jsonpath={.status.containerStatuses[0].state.waiting.message}'
expect_in "the kubelet's message" "$tmp/out" "container has runAsNonRoot and image will run as root (pod: \"nonroot_default($nonroot_uid)\", container: c)"
check "nonroot stays Pending" 0 kubectl get pod nonroot -o 'jsonpath={.status.phase}'
expect_in "Pending" "$tmp/out" Pending
[[ ! -e "$tmp/agent-n1/logs/default_nonroot_$nonroot_uid/c/0.log" ]] ||
  { echo "FAIL nonroot's container was started"; failures=$((failures + 1)); }
poll "rofs Succeeded" 60 Succeeded phase rofs
check "rofs's output" 0 kubectl logs rofs
expect_in "readOnlyRootFilesystem: / is read-only" "$tmp/out" "write=no"
expect_in "... /tmp too" "$tmp/out" "tmp=no"
expect_in "... /dev stays usable" "$tmp/out" "devnull=yes"
[[ ! -e /root/.xpool-rofs-$$ ]] || { echo "FAIL rofs wrote /root"; rm -f "/root/.xpool-rofs-$$"; failures=$((failures + 1)); }
poll "privileged refused" 60 "Failed PrivilegedNotAllowed" \
  kubectl get pod priv -o 'jsonpath={.status.phase} {.status.reason}'
check "priv's message" 0 kubectl get pod priv -o 'jsonpath={.status.message}'
expect_in "says why" "$tmp/out" "--allow-privileged"

# ---- a process that escapes with setsid dies with its pod -------------------------------------
pod escape n1 '{}' "setsid sh -c \"for c in memory cpu pids devices; do echo \\\$\\\$ >/sys/fs/cgroup/\\\$c/cgroup.procs; done; exec $marker\" </dev/null >/dev/null 2>&1 & exec sleep 1008" >"$tmp/escape.yaml"
check "apply escape" 0 kubectl apply -f "$tmp/escape.yaml"
poll "escape runs" 60 Running phase escape
poll "its escapee runs" 60 yes sh -c "pgrep -f '$marker' >/dev/null && echo yes"
check "delete escape" 0 kubectl delete pod escape --grace-period 1 --wait=false
poll "escape is gone" 60 "" kubectl get pod escape -o name --ignore-not-found
poll "no process of it is left" 60 "" pgrep -f "$marker"

# ---- a degraded agent ---------------------------------------------------------------------------
expect_in "n2 says so at start" "$tmp/agent-n2.log" "isolation is degraded"
cond() { kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="IsolationDegraded")].status}'; }
poll "n2 reports IsolationDegraded" 60 True cond n2
poll "n1 does not" 60 False cond n1
pod limited n2 '{}' "echo ran" >"$tmp/limited.yaml"
pod nolimits n2 '{}' "echo ran" | sed '/resources:/d' >"$tmp/nolimits.yaml"
pod degraded n3 '{}' "echo ran" >"$tmp/degraded.yaml"
for p in limited nolimits degraded; do check "apply $p" 0 kubectl apply -f "$tmp/$p.yaml"; done
poll "a pod with limits is refused" 60 "Failed IsolationDegraded" \
  kubectl get pod limited -o 'jsonpath={.status.phase} {.status.reason}'
check "limited's message" 0 kubectl get pod limited -o 'jsonpath={.status.message}'
expect_in "says how to run it anyway" "$tmp/out" "--allow-degraded-isolation"
poll "a pod without limits runs" 60 Succeeded phase nolimits
poll "--allow-degraded-isolation runs it" 60 Succeeded phase degraded

# ---- xpool up: server and agent share one data directory; privileged allowed ----------------------
"$xpool" up --listen 127.0.0.1:0 --data-dir "$up" --node-name up-node --allow-privileged \
  --pod-network host --default-runtime process >"$tmp/up.log" 2>&1 &
up_pid=$!
diag_log "$tmp/up.log"
poll "xpool up comes up" 60 yes sh -c "grep -q '^xpool is up' '$tmp/up.log' && echo yes"
upk=(--kubeconfig "$up/admin.kubeconfig")
pod upprobe up-node '{}' "$try
t token grep -q xpn_ $up/agent/node.token
t cakey grep -q PRIVATE $up/pki/ca.key
t admin grep -q token: $up/admin.kubeconfig
t tokens cat $up/tokens
t store ls $up/state.db
echo probed" >"$tmp/upprobe.yaml"
pod uppriv up-node '{privileged: true}' "$status" >"$tmp/uppriv.yaml"
check "apply upprobe" 0 kubectl "${upk[@]}" apply -f "$tmp/upprobe.yaml"
check "apply uppriv" 0 kubectl "${upk[@]}" apply -f "$tmp/uppriv.yaml"
poll "upprobe Succeeded" 60 Succeeded phase upprobe "${upk[@]}"
check "upprobe's output" 0 kubectl "${upk[@]}" logs upprobe
for what in token cakey admin tokens store; do
  expect_in "xpool up: $what refused" "$tmp/out" "$what=no"
done
poll "privileged runs with --allow-privileged" 60 Succeeded phase uppriv "${upk[@]}"
check "uppriv's output" 0 kubectl "${upk[@]}" logs uppriv
# every capability the agent holds (root may lack some; the agent can give no more)
all_caps=$(sed -n 's/^CapPrm:\t//p' /proc/self/status)
expect_in "every capability" "$tmp/out" "CapEff:	$all_caps"
expect_in "no seccomp" "$tmp/out" "Seccomp:	0"
check "its Warning Event" 0 kubectl "${upk[@]}" get events --field-selector involvedObject.name=uppriv -o 'jsonpath={range .items[*]}{.type} {.reason}{"\n"}{end}'
expect_in "privileged is audible" "$tmp/out" "Warning Privileged"

[[ $failures -eq 0 ]] || diag_state # the logs follow at the end, with what the stop adds
# the sanitizer builds report into the daemons' output; a clean stop lets LeakSanitizer speak
for p in "${agent_pid[@]}" $server_pid $up_pid; do kill -TERM "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
agent_pid=() server_pid= up_pid=
for log in "$tmp"/agent-*.log "$tmp/server.log" "$tmp/up.log"; do
  if grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$log"; then
    echo "FAIL sanitizer report in $(basename "$log")"; failures=$((failures + 1))
  fi
done
finish "containment"
