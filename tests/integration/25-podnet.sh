#!/usr/bin/env bash
# Pod networking (docs/networking.md) through Debian's CNI plugins (bridge, host-local, portmap),
# on a bridge and a /24 of the test's own (host-local's files in the scratch directory), so that
# all traffic stays between namespaces the test made and the host's own addresses:
# - each pod gets a network namespace of its own and an address in status.podIP, podIPs and
#   hostIP; two pods reach each other by podIP; the downward API's status.podIP is the pod's;
# - a pod reaches neither an abstract Unix socket the test opened on the host nor the host's
#   loopback services (the API server), while a hostNetwork pod does, sees the host's interfaces
#   and has podIP = hostIP;
# - a hostPort is forwarded to its pod (portmap; skipped alone where iptables cannot work);
# - a deleted pod leaves no namespace, veth or address behind (CNI DEL);
# - an agent SIGKILLed and started again keeps the pods' addresses and ADDs nothing twice; pods
#   deleted while no agent ran have their networks torn down by the next agent, also one of
#   which nothing but its network was left (a leftover with no pod and no container);
# - a node without the plugins reports NetworkUnavailable and refuses pods without hostNetwork
#   (reason NetworkUnavailable), and runs hostNetwork ones.
# Needs root and the CNI plugins (else exit 77).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (network namespaces, a bridge)"; exit 77; }
for p in bridge host-local portmap; do
  [[ -x /usr/lib/cni/$p ]] ||
    { echo "SKIP: no CNI plugin /usr/lib/cni/$p (apt install containernetworking-plugins)"; exit 77; }
done
command -v ip >/dev/null || { echo "SKIP: no ip (apt install iproute2)"; exit 77; }
py=/usr/bin/python3
[[ -x $py ]] || { echo "SKIP: no $py for the pods' listener and client"; exit 77; }
unshare -n true 2>/dev/null || { echo "SKIP: cannot make network namespaces here"; exit 77; }
iptables_ok=yes
iptables -t nat -S >/dev/null 2>&1 || iptables_ok=

# a bridge and a subnet no one else uses (other checkouts may run this test at the same time)
br= net=
for _ in $(seq 40); do
  n=$((RANDOM % 250 + 2))
  cand=xpt$(printf '%04x' $((RANDOM % 65536)))
  ip link show "$cand" >/dev/null 2>&1 && continue
  [[ -z "$(ip -4 route show "10.251.$n.0/24")" ]] || continue
  ip link add "$cand" type bridge 2>/dev/null || continue
  br=$cand net=10.251.$n
  break
done
[[ -n "$br" ]] || { echo "FAIL no free bridge name and subnet"; exit 1; }
marker="podnet-$$"
server_pid= abstract_pid= held_pid=
declare -A agent_pid=()
cleanup() {
  local p
  {
    for p in "${agent_pid[@]}" $server_pid $abstract_pid $held_pid; do kill -KILL "$p" || true; done
    pkill -KILL -f "$marker" || true
    pkill -KILL -f "$tmp/agent-n[12]/containers" || true
    wait || true
  } 2>/dev/null
  umount -R -l "$tmp/netns" 2>/dev/null || true
  release_tmp
  ip link del "$br" 2>/dev/null || true
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up

# the network: the test's bridge (its address the pods' gateway), no masquerade, no forwarding
mkdir -p "$tmp/cni/net.d" "$tmp/cni/bin" "$tmp/noplugins" "$tmp/ipam"
portmap=
[[ -n "$iptables_ok" ]] && portmap=',{"type":"portmap","capabilities":{"portMappings":true}}'
cat >"$tmp/cni/net.d/10-test.conflist" <<EOF
{"cniVersion":"1.0.0","name":"podnet-test","plugins":[
 {"type":"bridge","bridge":"$br","isGateway":false,"ipMasq":false,
  "ipam":{"type":"host-local","dataDir":"$tmp/ipam",
          "ranges":[[{"subnet":"$net.0/24","gateway":"$net.1"}]],"routes":[{"dst":"0.0.0.0/0"}]}}$portmap]}
EOF
# each plugin through a wrapper that logs its calls: "COMMAND CONTAINERID PLUGIN"
for p in bridge host-local portmap; do
  printf '#!/bin/sh\necho "$CNI_COMMAND $CNI_CONTAINERID %s" >>%s/calls\nexec /usr/lib/cni/%s "$@"\n' \
    "$p" "$tmp" "$p" >"$tmp/cni/bin/$p"
  chmod +x "$tmp/cni/bin/$p"
done
touch "$tmp/calls"

# an abstract Unix socket on the host, as a node service might listen on one
abstract="xpool-podnet-$$"
$py -c "import socket,time
s=socket.socket(socket.AF_UNIX); s.bind(b'\0$abstract'); s.listen(8)
while True:
  c,_=s.accept(); c.close()" &
abstract_pid=$!

data=$tmp/server
export KUBECONFIG=$data/admin.kubeconfig
for n in n1 n2; do "$xpool" token create --node $n --data-dir "$data" >"$tmp/$n.token" 2>/dev/null; done
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
url=
for _ in $(seq 600); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
api_port=${url##*:}

start_agent() { # node, extra flags...
  local n=$1
  shift
  "$xpool" agent --server "$url" --token-file "$tmp/$n.token" --ca-file "$data/pki/ca.crt" \
    --node-name "$n" --data-dir "$tmp/agent-$n" --listen 127.0.0.1:0 --heartbeat 500ms \
    --backoff 1s --cni-conf-dir "$tmp/cni/net.d" --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc" --default-runtime process "$@" \
    >>"$tmp/agent-$n.log" 2>&1 &
  agent_pid[$n]=$!
}
start_agent n1 --cni-bin-dir "$tmp/cni/bin"
start_agent n2 --cni-bin-dir "$tmp/noplugins"

cond() { kubectl get node "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].$3}"; }
get() { kubectl get pod "$1" -o "jsonpath={$2}"; }
uid_of() { get "$1" .metadata.uid; }
calls() { grep -c "^$1 $2 $3\$" "$tmp/calls" || true; }
veths() { ip -o link show master "$br" 2>/dev/null | wc -l; }
not_in() { if grep -qF -- "$3" "$2"; then echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1)); fi; }
poll "node n1 Ready" 60 True cond n1 Ready status
poll "node n2 Ready" 60 True cond n2 Ready status
[[ $failures -eq 0 ]] || { tail -20 "$tmp"/agent-n*.log; exit 1; }

# ---- the nodes' NetworkUnavailable ---------------------------------------------------------------
check "n1's network condition" 0 cond n1 NetworkUnavailable reason
expect_in "n1 has a pod network" "$tmp/out" PodNetworkReady
check "n1's network message" 0 cond n1 NetworkUnavailable message
expect_in "n1 says which" "$tmp/out" "CNI network \"podnet-test\" (bridge"
check "n2's network condition" 0 cond n2 NetworkUnavailable status
expect_in "n2 has none" "$tmp/out" True
check "n2's reason" 0 cond n2 NetworkUnavailable reason
expect_in "n2 says why" "$tmp/out" CNIPluginNotFound
check "n2's message" 0 cond n2 NetworkUnavailable message
expect_in "n2 names the plugin" "$tmp/out" "no CNI plugin \"bridge\" in $tmp/noplugins"

pod() { # name, node, extra spec lines (indented 2), program, env entries: a pod manifest
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $2
$3
  containers:
  - name: c
    command:
    - $py
    - -c
    - |
$(sed 's/^/      /' <<<"$4")
    - $marker
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: ABSTRACT, value: "$abstract"}
    - {name: API_PORT, value: "$api_port"}
${5:-}
EOF
}
listener=$(cat <<'EOF'
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 8080))
s.listen(16)
while True:
    c, _ = s.accept()
    c.sendall(b'pong\n')
    c.close()
EOF
)
probe=$(cat <<'EOF'
import os, socket
def reach(what, addr, family=socket.AF_INET):
    s = socket.socket(family)
    s.settimeout(3)
    try:
        s.connect(addr)
        print(what, 'reachable')
    except OSError as e:
        print(what, 'refused', e.__class__.__name__)
target = os.environ.get('TARGET')
if target:
    print('reply', socket.create_connection((target, 8080), timeout=5).recv(16).decode().strip())
reach('abstract', b'\0' + os.environ['ABSTRACT'].encode(), socket.AF_UNIX)
reach('loopback', ('127.0.0.1', int(os.environ['API_PORT'])))
print('interfaces', ' '.join(sorted(os.listdir('/sys/class/net'))))
print('downward', os.environ['POD_IP'])
EOF
)

# ---- two pods, each its own namespace and address, reaching each other --------------------------
hostport=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pod server n1 "  restartPolicy: Always" "$listener" >"$tmp/server.yaml"
# the listener's port, with a hostPort
sed -i "s|^    env:|    ports: [{containerPort: 8080, hostPort: $hostport}]\n    env:|" "$tmp/server.yaml"
check "apply server" 0 kubectl apply -f "$tmp/server.yaml"
poll "server Running" 60 Running get server .status.phase
server_ip=$(get server .status.podIP)
[[ "$server_ip" == "$net".* ]] || { echo "FAIL server's podIP '$server_ip' is not in $net.0/24"; failures=$((failures + 1)); }
check "server's podIPs and hostIP" 0 get server '.status.podIPs[0].ip} {.status.hostIP'
expect_in "podIPs[0] is podIP, hostIP the node's" "$tmp/out" "$server_ip 127.0.0.1"
server_uid=$(uid_of server)
[[ "$(stat -f -c %T "$tmp/netns/$server_uid" 2>/dev/null)" == nsfs ]] ||
  { echo "FAIL no network namespace mounted at $tmp/netns/$server_uid"; failures=$((failures + 1)); }
grep -q "^$server_uid" "$tmp/ipam/podnet-test/$server_ip" 2>/dev/null ||
  { echo "FAIL host-local holds no address $server_ip for $server_uid"; ls -l "$tmp/ipam/podnet-test"; failures=$((failures + 1)); }

pod client n1 "  restartPolicy: Never" "$probe" "    - {name: TARGET, value: \"$server_ip\"}" >"$tmp/client.yaml"
check "apply client" 0 kubectl apply -f "$tmp/client.yaml"
poll "client Succeeded" 60 Succeeded get client .status.phase
client_ip=$(get client .status.podIP)
check "client's output" 0 kubectl logs client
expect_in "client reached server by its podIP" "$tmp/out" "reply pong"
expect_in "client's own interfaces" "$tmp/out" "interfaces eth0 lo"
expect_in "client's downward podIP" "$tmp/out" "downward $client_ip"
expect_in "no abstract socket of the host" "$tmp/out" "abstract refused"
expect_in "no loopback service of the host" "$tmp/out" "loopback refused"
[[ "$client_ip" != "$server_ip" && "$client_ip" == "$net".* ]] ||
  { echo "FAIL client's podIP '$client_ip'"; failures=$((failures + 1)); }
# a pod that is over gives its address back
client_uid=$(uid_of client)
poll "the finished client's network is torn down" 60 1 calls DEL "$client_uid" bridge
poll "its namespace is gone" 60 gone sh -c "[ -e '$tmp/netns/$client_uid' ] || echo gone"
[[ ! -e "$tmp/ipam/podnet-test/$client_ip" ]] || { echo "FAIL $client_ip is still reserved"; failures=$((failures + 1)); }

# ---- hostNetwork: the host's network, podIP = hostIP ----------------------------------------------
pod hostnet n1 "  restartPolicy: Never
  hostNetwork: true" "$probe" >"$tmp/hostnet.yaml"
check "apply hostnet" 0 kubectl apply -f "$tmp/hostnet.yaml"
poll "hostnet Succeeded" 60 Succeeded get hostnet .status.phase
check "hostnet's podIP and hostIP" 0 get hostnet '.status.podIP} {.status.hostIP'
expect_in "hostnet's podIP is the node's" "$tmp/out" "127.0.0.1 127.0.0.1"
check "hostnet's output" 0 kubectl logs hostnet
expect_in "hostnet sees the host's interfaces" "$tmp/out" "$br"
expect_in "hostnet reaches the host's abstract socket" "$tmp/out" "abstract reachable"
expect_in "hostnet reaches the host's loopback" "$tmp/out" "loopback reachable"
expect_count "hostnet got no CNI network" "$tmp/calls" 0 "$(uid_of hostnet)"

# ---- hostPort --------------------------------------------------------------------------------------
if [[ -n "$iptables_ok" ]]; then
  got=$($py -c "import socket; print(socket.create_connection(('127.0.0.1', $hostport), timeout=5).recv(16).decode().strip())" 2>&1 || true)
  [[ "$got" == pong ]] || { echo "FAIL hostPort $hostport: '$got', expected pong"; failures=$((failures + 1)); }
else
  echo "SKIP hostPort only: iptables cannot work here (iptables -t nat -S fails), so portmap cannot forward"
fi

# ---- the agent killed and started again: the addresses kept, nothing ADDed twice -----------------
# victim is deleted while no agent runs; orphan too, and nothing of it is left on the node but
# its network (its processes and their state gone: a leftover with no pod and no container)
pod victim n1 "  restartPolicy: Always" "$listener" >"$tmp/victim.yaml"
pod orphan n1 "  restartPolicy: Always" "$listener" >"$tmp/orphan.yaml"
sed -i "s|- $marker\$|- $marker-orphan|" "$tmp/orphan.yaml"
check "apply victim and orphan" 0 kubectl apply -f "$tmp/victim.yaml" -f "$tmp/orphan.yaml"
poll "victim Running" 60 Running get victim .status.phase
poll "orphan Running" 60 Running get orphan .status.phase
victim_uid=$(uid_of victim) victim_ip=$(get victim .status.podIP)
orphan_uid=$(uid_of orphan) orphan_ip=$(get orphan .status.podIP)
kill -KILL "${agent_pid[n1]}"; wait "${agent_pid[n1]}" 2>/dev/null || true
check "force-delete victim and orphan" 0 kubectl delete pod victim orphan --grace-period=0 --force
# the orphan's shim (its pid namespace's init: the container dies with it), state and cgroups
pkill -KILL -f "containers/$orphan_uid/" || true
for _ in $(seq 600); do pgrep -f "$marker-orphan" >/dev/null || break; sleep 0.1; done
rm -rf "$tmp/agent-n1/containers/$orphan_uid"
for d in /sys/fs/cgroup/*/xpool/agent-*/"$orphan_uid"; do rmdir "$d"/* "$d" 2>/dev/null || true; done
start_agent n1 --cni-bin-dir "$tmp/cni/bin"
for p in victim orphan; do
  uid=${p}_uid ip=${p}_ip
  poll "$p's network is torn down by the next agent" 60 1 calls DEL "${!uid}" bridge
  poll "$p's namespace is gone" 60 gone sh -c "[ -e '$tmp/netns/${!uid}' ] || echo gone"
  [[ ! -e "$tmp/ipam/podnet-test/${!ip}" ]] || { echo "FAIL ${!ip} ($p) is still reserved"; failures=$((failures + 1)); }
done
poll "server still Running" 60 Running get server .status.phase
check "server's address after the restart" 0 get server .status.podIP
expect_in "the same address" "$tmp/out" "$server_ip"
[[ "$(calls ADD "$server_uid" bridge)" == 1 ]] || { echo "FAIL server ADDed again:"; cat "$tmp/calls"; failures=$((failures + 1)); }
[[ "$(calls DEL "$server_uid" bridge)" == 0 ]] || { echo "FAIL server DELed by the restart:"; cat "$tmp/calls"; failures=$((failures + 1)); }
pod client2 n1 "  restartPolicy: Never" "$probe" "    - {name: TARGET, value: \"$server_ip\"}" >"$tmp/client2.yaml"
check "apply client2" 0 kubectl apply -f "$tmp/client2.yaml"
poll "client2 Succeeded" 60 Succeeded get client2 .status.phase
check "client2's output" 0 kubectl logs client2
expect_in "server still reachable by its podIP after the restart" "$tmp/out" "reply pong"

# ---- a node without a pod network ----------------------------------------------------------------
pod nonet n2 "  restartPolicy: Never" "print('ran')" >"$tmp/nonet.yaml"
pod nonethost n2 "  restartPolicy: Never
  hostNetwork: true" "print('ran on the host network')" >"$tmp/nonethost.yaml"
check "apply nonet" 0 kubectl apply -f "$tmp/nonet.yaml" -f "$tmp/nonethost.yaml"
poll "nonet is refused" 60 "Failed NetworkUnavailable" get nonet '.status.phase} {.status.reason'
check "nonet's message" 0 get nonet .status.message
expect_in "it says why and what to do" "$tmp/out" "set hostNetwork: true to run it on the node's network"
poll "nonethost runs" 60 Succeeded get nonethost .status.phase

# ---- deleted pods leave nothing --------------------------------------------------------------------
check "delete the pods" 0 kubectl delete pod server client client2 hostnet nonet nonethost --wait=false
poll "pods gone" 60 "" kubectl get pods -o 'jsonpath={.items[*].metadata.name}'
poll "server's network torn down" 60 1 calls DEL "$server_uid" bridge
poll "no namespace left" 60 "" ls "$tmp/netns"
poll "no veth left on the bridge" 60 0 veths
check "no address left" 0 ls "$tmp/ipam/podnet-test"
not_in "no address reserved" "$tmp/out" "$net."
if [[ -n "$iptables_ok" ]]; then
  check "nat rules" 0 iptables -t nat -S
  not_in "no hostPort rule left" "$tmp/out" "$server_uid"
fi

# ---- the pins of pods whose agent never came back ------------------------------------------------
# as an agent SIGKILLed (or stopped with pods running) and never started again leaves them: a network
# and an IPC namespace no process is in, and one a process still is in (another agent's live pod)
mkdir -p "$tmp/ipc"
touch "$tmp/netns/leaked-net" "$tmp/netns/held-net" "$tmp/ipc/leaked-ipc"
unshare -n mount --bind /proc/self/ns/net "$tmp/netns/leaked-net"
unshare -i mount --bind /proc/self/ns/ipc "$tmp/ipc/leaked-ipc"
unshare -n sleep 60 &
held_pid=$!
poll "the holder is in a namespace of its own" 60 own sh -c \
  "[ \"\$(readlink /proc/$held_pid/ns/net)\" = \"\$(readlink /proc/self/ns/net)\" ] || echo own"
mount --bind "/proc/$held_pid/ns/net" "$tmp/netns/held-net"
kill -TERM "${agent_pid[n1]}"; wait "${agent_pid[n1]}" 2>/dev/null || true
start_agent n1 --cni-bin-dir "$tmp/cni/bin"
mounts() { grep -c -e "$tmp/netns/leaked-net" -e "$tmp/ipc/leaked-ipc" /proc/self/mountinfo || true; }
poll "the restarted agent unmounts the leaked pins" 60 0 mounts
check "the leaked network pin" 1 test -e "$tmp/netns/leaked-net"
check "the leaked IPC pin" 1 test -e "$tmp/ipc/leaked-ipc"
check "the namespace a process is in is kept" 0 stat -f -c %T "$tmp/netns/held-net"
expect_in "as nsfs" "$tmp/out" nsfs
expect_in "one line per removal" "$tmp/agent-n1.log" "removed $tmp/netns/leaked-net, the network namespace"
expect_in "the IPC one too" "$tmp/agent-n1.log" "removed $tmp/ipc/leaked-ipc, the IPC namespace"
expect_in "the kept one said" "$tmp/agent-n1.log" "$tmp/netns/held-net left"
kill -KILL "$held_pid"; wait "$held_pid" 2>/dev/null || true
held_pid=

[[ $failures -eq 0 ]] || { cat "$tmp/calls"; for n in n1 n2; do echo "== agent $n:"; tail -20 "$tmp/agent-$n.log"; done; }
# the sanitizer builds report into the daemons' output; a clean stop lets LeakSanitizer speak
for p in "${agent_pid[@]}" $server_pid; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${agent_pid[@]}" $server_pid; do wait "$p" 2>/dev/null || true; done
agent_pid=() server_pid=
for log in "$tmp"/agent-*.log "$tmp/server.log"; do
  if grep -E "runtime error|ERROR: (Address|Leak)Sanitizer" "$log"; then
    echo "FAIL sanitizer report in $(basename "$log")"; failures=$((failures + 1))
  fi
done
finish "pod network"
