#!/usr/bin/env bash
# The API from pods (docs/networking.md, "The API from pods"): with the server on the node's
# loopback, as `xpool up` runs it, a pod in a network namespace of its own reaches the API at the
# `kubernetes` Service's address, which the agent puts on the node's lo and forwards to the
# server:
# - the agent puts the address on lo and says so; the server's certificate carries it;
# - the pod's KUBERNETES_SERVICE_HOST/PORT are that address and port 443; curl --cacert with the
#   mounted token and ca.crt, and the Python client's load_incluster_config(), read the pod
#   itself from the API (TLS verified against the service account's CA);
# - the pod reaches nothing else of the node's: not the server's own loopback port, not another
#   loopback listener of the node, neither at 127.0.0.1 nor at the service address nor at the
#   bridge's; no route_localnet is turned on;
# - the agent stopped removes the address it put there;
# - an address the server's certificate does not name is refused at the agent's start (a request
#   through it fails verification), and left off lo.
# On an address of the test's own (--api-service-address; the defaults, 10.96.0.1:443, differ by
# the flag's default only, which test_apiproxy covers): every agent with a pod network takes the
# defaults, so another test's agent could take them while this one is killed and restarted. Needs root, the CNI plugins and curl (else 77).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (network namespaces, a bridge, lo's addresses)"; exit 77; }
for p in bridge host-local; do
  [[ -x /usr/lib/cni/$p ]] ||
    { echo "SKIP: no CNI plugin /usr/lib/cni/$p (apt install containernetworking-plugins)"; exit 77; }
done
command -v ip >/dev/null || { echo "SKIP: no ip (apt install iproute2)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
py=/usr/bin/python3
[[ -x $py ]] || { echo "SKIP: no $py for the pod's client"; exit 77; }
unshare -n true 2>/dev/null || { echo "SKIP: cannot make network namespaces here"; exit 77; }

on_lo() { ip -o -4 addr show dev lo | grep -qw "inet $1/32"; }

# An address of the test's own, which the server's certificate is given with --tls-san (the
# defaults' address is checked in it too).
alt_ip=
for _ in $(seq 40); do
  n=$((RANDOM % 250 + 2))
  on_lo "10.252.$n.1" || { alt_ip=10.252.$n.1; break; }
done
[[ -n "$alt_ip" ]] || { echo "FAIL no free address in 10.252.0.0/16"; exit 1; }
svc_ip=$alt_ip agent_flags=(--api-service-address "$alt_ip:443") svc_before=no

br= net=
for _ in $(seq 40); do
  n=$((RANDOM % 250 + 2))
  cand=xpa$(printf '%04x' $((RANDOM % 65536)))
  ip link show "$cand" >/dev/null 2>&1 && continue
  [[ -z "$(ip -4 route show "10.251.$n.0/24")" ]] || continue
  ip link add "$cand" type bridge 2>/dev/null || continue
  br=$cand net=10.251.$n
  break
done
[[ -n "$br" ]] || { echo "FAIL no free bridge name and subnet"; exit 1; }
server_pid= agent_pid= agent2_pid= local_pid= outsider=
cleanup() {
  {
    for p in $agent_pid $agent2_pid $server_pid $local_pid; do kill -KILL "$p" || true; done
    wait || true
  } 2>/dev/null
  umount -R -l "$tmp/netns" 2>/dev/null || true
  release_tmp
  ip link del "$br" 2>/dev/null || true
  [[ -z "$outsider" ]] || ip netns del "$outsider" 2>/dev/null || true
  [[ $svc_before == yes ]] || ip addr del "$svc_ip/32" dev lo 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up
mkdir -p "$tmp/cni/net.d" "$tmp/ipam"
cat >"$tmp/cni/net.d/10-test.conflist" <<EOF
{"cniVersion":"1.0.0","name":"podnet-api-test","plugins":[
 {"type":"bridge","bridge":"$br","isGateway":false,"ipMasq":false,
  "ipam":{"type":"host-local","dataDir":"$tmp/ipam",
          "ranges":[[{"subnet":"$net.0/24","gateway":"$net.1"}]],"routes":[{"dst":"0.0.0.0/0"}]}}]}
EOF

# another loopback service of the node, which no pod may reach
local_port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$py -c "import socket, time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $local_port)); s.listen(8); s.settimeout(5)
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
  try: c,_=s.accept()
  except socket.timeout: continue
  c.sendall(b'node-only\n'); c.close()" &
local_pid=$!

data=$tmp/server
export KUBECONFIG=$data/admin.kubeconfig
"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n2 --data-dir "$data" >"$tmp/n2.token" 2>/dev/null
start_server "$data" --tls-san "$alt_ip"
api_port=${base##*:}
start_agent() {
"$xpool" agent --server "$base" --token-file "$tmp/n1.token" --ca-file "$data/pki/ca.crt" \
  --node-name n1 --data-dir "$tmp/agent" --listen 127.0.0.1:0 --heartbeat 500ms --backoff 1s \
  --cni-conf-dir "$tmp/cni/net.d" --cni-bin-dir /usr/lib/cni --netns-dir "$tmp/netns" \
  --ipc-dir "$tmp/ipc" --default-runtime process "${agent_flags[@]}" >>"$tmp/agent.log" 2>&1 &
agent_pid=$!
}
said() { # what the agent said of the pods' API address
  grep -o "agent: pods reach the API server at .*\|agent: pods get no API address of their own" "$tmp/agent.log" | tail -1
}
start_agent
poll_said() { local i; for i in $(seq 300); do [[ -n "$(said)" ]] && return 0; sleep 0.2; done; }
poll_said
diag_log "$tmp/agent.log"
diag_cluster "$KUBECONFIG"
ready() { kubectl get node n1 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'; }
poll "node n1 Ready" 60 True ready
[[ $failures -eq 0 ]] || finish "podnet-api"

said >"$tmp/out"
expect_exact "the agent says where pods reach the API" "$tmp/out" "agent: pods reach the API server at $svc_ip:443, forwarded to $base"
on_lo "$svc_ip" || { echo "FAIL $svc_ip is not on lo"; ip addr show dev lo; failures=$((failures + 1)); }
check "the serving certificate" 0 openssl x509 -in "$data/pki/server.crt" -noout -ext subjectAltName
expect_in "the certificate carries the kubernetes Service's address" "$tmp/out" "IP Address:10.96.0.1"
expect_in "and the Service's names" "$tmp/out" "DNS:kubernetes.default.svc.cluster.local"
sa_name() { kubectl get sa default -o jsonpath='{.metadata.name}'; }
poll "the default account" 60 default sa_name
check "the default account may read" 0 kubectl annotate sa default xpool.io/role=reader

cat >"$tmp/client.py" <<'EOF'
import json, os, socket, ssl, subprocess, sys
sa = '/var/run/secrets/kubernetes.io/serviceaccount'
host, port = os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT']
print('env', host, port, os.environ['KUBERNETES_PORT'])
name, ns = os.environ['XPOOL_POD_NAME'], open(sa + '/namespace').read()
token = open(sa + '/token').read()
out = subprocess.run(['curl', '-sS', '--cacert', sa + '/ca.crt', '-H', 'Authorization: Bearer ' + token,
                      'https://%s:%s/api/v1/namespaces/%s/pods/%s' % (host, port, ns, name)],
                     capture_output=True, text=True, timeout=60)
try:
    print('curl', json.loads(out.stdout)['metadata']['name'])
except Exception:
    print('curl failed', out.returncode, out.stdout[:200], out.stderr[:200])
try:
    from kubernetes import client, config
    import time
    config.load_incluster_config()
    # the agent reports podIP by its status writer, beside the start: until it has (60 s at most)
    for _ in range(120):
        pod = client.CoreV1Api().read_namespaced_pod(name, ns)
        if pod.status.pod_ip:
            break
        time.sleep(0.5)
    print('python', pod.metadata.name, pod.status.pod_ip == os.environ['POD_IP'])
except ImportError:
    print('python: no client')
def reach(what, addr):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(addr)
        print(what, 'reachable')
    except OSError as e:
        print(what, 'unreachable')
gateway = os.environ['GATEWAY']
for what, addr in [('server at 127.0.0.1', '127.0.0.1'), ('server at the service address', host),
                   ('server at the gateway', gateway)]:
    reach(what, (addr, int(os.environ['API_PORT'])))
for what, addr in [('node service at 127.0.0.1', '127.0.0.1'),
                   ('node service at the service address', host),
                   ('node service at the gateway', gateway)]:
    reach(what, (addr, int(os.environ['LOCAL_PORT'])))
EOF
cat >"$tmp/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: incluster}
spec:
  nodeName: n1
  restartPolicy: Never
  containers:
  - name: c
    command: [$py, $tmp/client.py]
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: GATEWAY, value: "$net.1"}
    - {name: API_PORT, value: "$api_port"}
    - {name: LOCAL_PORT, value: "$local_port"}
EOF
check "apply the pod" 0 kubectl apply -f "$tmp/pod.yaml"
phase() { kubectl get pod incluster -o jsonpath='{.status.phase}'; }
poll "the pod Succeeded" 60 Succeeded phase
pod_ip=$(kubectl get pod incluster -o jsonpath='{.status.podIP}')
[[ "$pod_ip" == "$net".* ]] || { echo "FAIL the pod's podIP '$pod_ip' is not in $net.0/24: not in a network of its own"; failures=$((failures + 1)); }
want_py="python incluster True"
$py -c 'import kubernetes' 2>/dev/null || { echo "SKIP (part): no Python kubernetes client"; want_py="python: no client"; }
check "the pod's output" 0 kubectl logs incluster
expect_exact "the pod reads itself from the API at the service address, and reaches nothing else" "$tmp/out" "env $svc_ip 443 tcp://$svc_ip:443
curl incluster
$want_py
server at 127.0.0.1 unreachable
server at the service address unreachable
server at the gateway unreachable
node service at 127.0.0.1 unreachable
node service at the service address unreachable
node service at the gateway unreachable"
# the node's own view: the loopback listener answers there (the checks above can fail)
check "the node service answers on the node" 0 $py -c "import socket; print(socket.create_connection(('127.0.0.1', $local_port), timeout=3).recv(32).decode())"
expect_in "its reply" "$tmp/out" "node-only"
for f in all "$br"; do
  [[ "$(cat "/proc/sys/net/ipv4/conf/$f/route_localnet")" == 0 ]] ||
    { echo "FAIL route_localnet is on for $f"; failures=$((failures + 1)); }
done

# ---- a host that is not a pod, with a route to the service address via the node: refused ----------
# Linux takes a packet for any local address on any interface: without the forwarder's allow-list
# a neighbour adding `ip route $svc_ip via NODE` reached the server the operator bound to loopback.
onet=
for _ in $(seq 40); do
  n=$((RANDOM % 250 + 2))
  cand=xpo$(printf '%04x' $((RANDOM % 65536)))
  ip link show "${cand}h" >/dev/null 2>&1 && continue
  [[ -z "$(ip -4 route show "10.250.$n.0/30")" ]] || continue
  ip netns add "$cand" 2>/dev/null || continue
  outsider=$cand onet=10.250.$n
  break
done
[[ -n "$outsider" ]] || { echo "FAIL no free namespace name and subnet for the outsider"; exit 1; }
ip link add "${outsider}h" type veth peer name "${outsider}o" netns "$outsider"
ip addr add "$onet.1/30" dev "${outsider}h"
ip link set "${outsider}h" up
ip -n "$outsider" addr add "$onet.2/30" dev "${outsider}o"
ip -n "$outsider" link set "${outsider}o" up
ip -n "$outsider" link set lo up
ip -n "$outsider" route add "$svc_ip/32" via "$onet.1"
cat >"$tmp/outsider.py" <<'EOF'
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    raw = socket.create_connection((sys.argv[1], 443), timeout=5)
except OSError as e:
    print('no connection', e.__class__.__name__)
    sys.exit(0)
try:
    ctx.wrap_socket(raw).close()
    print('served')
except (OSError, ssl.SSLError):
    print('closed')
EOF
check "a host outside the pod network, routed to $svc_ip via the node" 0 ip netns exec "$outsider" $py "$tmp/outsider.py" "$svc_ip"
expect_exact "is refused by the forwarder" "$tmp/out" "closed"
check "and the agent says so" 0 grep -F "refused a connection from $onet.2: neither the pod network nor the node" "$tmp/agent.log"

# ---- the agent killed: its successor on the same data directory removes what it left, once ----
# SIGKILL leaves the address on lo and the record in the data directory; the next agent's start
# removes that address before it adds its own, so it is there once and served.
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
agent_pid=
if [[ $svc_before == no ]]; then
  on_lo "$svc_ip" || { echo "FAIL $svc_ip went with the killed agent (nothing to clean up)"; failures=$((failures + 1)); }
  check "the killed agent's record names the address" 0 cat "$tmp/agent/pod-api-address"
  expect_exact "its content" "$tmp/out" "$svc_ip"
fi
mv "$tmp/agent.log" "$tmp/agent-killed.log"
start_agent
poll_said
said >"$tmp/out"
expect_exact "the restarted agent serves the address again" "$tmp/out" "agent: pods reach the API server at $svc_ip:443, forwarded to $base"
if [[ $svc_before == no ]]; then
  check "and says it removed what the killed one left" 0 grep -F "agent: removed the pods' API address $svc_ip a previous agent of this data directory left on lo" "$tmp/agent.log"
fi
ip -o -4 addr show dev lo >"$tmp/lo"
expect_count "$svc_ip is on lo once" "$tmp/lo" 1 "inet $svc_ip/32"
check "the forwarder serves the API at $svc_ip:443" 0 kubectl --server "https://$svc_ip:443" get --raw /version
expect_in "the server's version through it" "$tmp/out" '"gitVersion"'

# ---- another agent (another data directory) whose record names the live address: left alone ------
# As after a kill of that agent while this one found the address there and serves on it: its
# start must not take the address from under this agent's forwarder.
mkdir -p "$tmp/agent2"
printf '%s' "$svc_ip" >"$tmp/agent2/pod-api-address"
"$xpool" agent --server "$base" --token-file "$tmp/n2.token" --ca-file "$data/pki/ca.crt" \
  --node-name n2 --data-dir "$tmp/agent2" --listen 127.0.0.1:0 --heartbeat 500ms --backoff 1s \
  --ipc-dir "$tmp/ipc2" --default-runtime process --pod-network host --api-service-address none >>"$tmp/agent2.log" 2>&1 &
agent2_pid=$!
left() { grep -c "the pods' API address $svc_ip this agent's data directory put on lo is left there" "$tmp/agent2.log"; }
poll "the second agent leaves the address another agent serves on" 60 1 left
on_lo "$svc_ip" || { echo "FAIL the second agent removed $svc_ip from under the first's forwarder"; failures=$((failures + 1)); }
check "the first agent's forwarder still serves" 0 kubectl --server "https://$svc_ip:443" get --raw /version
kill -TERM "$agent2_pid"
wait "$agent2_pid" 2>/dev/null || true
agent2_pid=

# ---- the agent stopped: the address it put there goes -----------------------------------------------
kill -TERM "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
agent_pid=
if [[ $svc_before == no ]]; then
  on_lo "$svc_ip" && { echo "FAIL $svc_ip is still on lo after the agent stopped"; failures=$((failures + 1)); }
  [[ -e "$tmp/agent/pod-api-address" ]] && { echo "FAIL the agent's record of it stayed"; failures=$((failures + 1)); }
fi

# ---- an address the server's certificate does not name: refused at start, nothing left --------------
bad_ip=
for _ in $(seq 40); do
  n=$((RANDOM % 250 + 2))
  [[ "10.252.$n.1" != "$alt_ip" ]] && ! on_lo "10.252.$n.1" && { bad_ip=10.252.$n.1; break; }
done
mv "$tmp/agent.log" "$tmp/agent-first.log"
agent_flags=(--api-service-address "$bad_ip:443")
start_agent
poll_said
said >"$tmp/out"
expect_exact "the agent refuses an address pods could not verify the server at" "$tmp/out" "agent: pods get no API address of their own"
check "and says why" 0 grep -F "agent: pods get no API address of their own (--api-service-address): a request through it:" "$tmp/agent.log"
on_lo "$bad_ip" && { echo "FAIL $bad_ip was left on lo"; failures=$((failures + 1)); }
kill -TERM "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
agent_pid=
[[ -z "$bad_ip" ]] || ip addr del "$bad_ip/32" dev lo 2>/dev/null || true
finish "podnet-api"
