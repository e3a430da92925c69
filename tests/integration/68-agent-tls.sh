#!/usr/bin/env bash
# The agent's endpoint over HTTPS (docs/agent.md, "HTTPS"): the agent makes its own key (0600,
# never sent) and gets a certificate the server's kubelet-serving CA (pki/kubelet-ca.crt, apart
# from the cluster CA) signs for its name and address through a certificates.k8s.io
# CertificateSigningRequest (kubernetes.io/kubelet-serving); curl verifies it with that CA and
# refuses it with the cluster CA or none, and the API server's certificate does not verify with
# the kubelet-serving CA; plain HTTP gets no answer; kubectl logs and exec go
# through the server's verified connection; a node asking for another's name or an address not
# its own is refused; a forged certificate (self-signed, or the CA's for another node) is refused
# by the server, as is one the cluster CA signed; a restart keeps a good certificate and replaces
# one near its end, and one the cluster CA signed (an earlier server's: the migration).
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 77; }
data=$tmp/data
server_pid= agent_pid= fake_pid=
stop_all() {
  local pid
  for pid in $fake_pid $agent_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $fake_pid $agent_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT
mkdir -p "$data"

start_server "$data" --metrics-resolution 1s
url=$base
ca=$data/pki/ca.crt
kca=$data/pki/kubelet-ca.crt
export KUBECONFIG=$data/admin.kubeconfig
diag_cluster "$KUBECONFIG"
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
"$xpool" token create --node n1 --data-dir "$data" >"$tmp/n1.token" 2>/dev/null
"$xpool" token create --node n9 --data-dir "$data" >"$tmp/n9.token" 2>/dev/null

start_agent() {
  "$xpool" agent --server "$url" --token-file "$tmp/n1.token" --ca-file "$ca" --node-name n1 \
    --data-dir "$tmp/agent" --listen 127.0.0.1:0 --pod-network host --default-runtime process \
    --metrics-interval 500ms --heartbeat 1s >>"$tmp/agent.log" 2>&1 &
  agent_pid=$!
  diag_log "$tmp/agent.log"
}
stop_agent() { kill -TERM "$agent_pid"; wait "$agent_pid" 2>/dev/null || true; agent_pid=; }
port_of() { "${kc[@]}" get node "$1" -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null; }
start_agent
poll "n1 registered" 120 yes bash -c "[[ -n \$(kubectl get node n1 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null) ]] && echo yes"
port=$(port_of n1)

# ---- the key stays on the node, the certificate is the CA's for n1 at 127.0.0.1 -------------------
pki=$tmp/agent/pki
check "the key is the agent's alone" 0 test "$(stat -c %a "$pki/agent-serving.key")" = 600
check "the certificate chains to the kubelet-serving CA" 0 openssl verify -CAfile "$kca" "$pki/agent-serving.crt"
check "... not to the cluster CA: an agent's certificate is no server's" 2 openssl verify -CAfile "$ca" "$pki/agent-serving.crt"
check "the server's certificate is no agent's" 2 openssl verify -CAfile "$kca" "$data/pki/server.crt"
check "the server's certificate chains to the cluster CA" 0 openssl verify -CAfile "$ca" "$data/pki/server.crt"
check "the certificate's names" 0 openssl x509 -in "$pki/agent-serving.crt" -noout -ext subjectAltName,extendedKeyUsage -subject
expect_in "DNS name n1" "$tmp/out" "DNS:n1"
expect_in "address 127.0.0.1" "$tmp/out" "IP Address:127.0.0.1"
expect_in "serverAuth" "$tmp/out" "TLS Web Server Authentication"
expect_in "subject" "$tmp/out" "CN = system:node:n1"
expect_in "the agent says where" "$tmp/agent.log" "new serving certificate for n1 and 127.0.0.1"

# ---- curl with and without the CA, and plain HTTP ----------------------------------------------
check "with the CA: TLS holds, the signature is asked for" 0 \
  curl -sS --cacert "$kca" -o "$tmp/body" -w '%{http_code}' "https://127.0.0.1:$port/containerLogs/default/x/c"
expect_exact "with the CA: 401" "$tmp/out" "401"
check "with the cluster CA: curl refuses the certificate" 60 \
  curl -sS --cacert "$ca" -o /dev/null "https://127.0.0.1:$port/containerLogs/default/x/c"
check "without the CA: curl refuses the certificate" 60 \
  curl -sS -o /dev/null "https://127.0.0.1:$port/containerLogs/default/x/c"
check "plain HTTP: no answer" 0 bash -c "[[ \$(curl -sS -m 5 -o /dev/null -w '%{http_code}' 'http://127.0.0.1:$port/containerLogs/default/x/c' 2>/dev/null) != 401 ]]"

# ---- kubectl logs and exec go through the server's verified connection ---------------------------
cat >"$tmp/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  containers:
  - name: app
    image: busybox
    command: [sh, -c, "echo hello over tls; sleep 600"]
YAML
check "create the pod" 0 "${kc[@]}" apply -f "$tmp/pod.yaml"
poll "the pod runs" 60 Running "${kc[@]}" get pod talker -o 'jsonpath={.status.phase}'
poll "kubectl logs" 120 "hello over tls" "${kc[@]}" logs talker
check "kubectl exec" 0 "${kc[@]}" exec talker -- echo exec over tls
expect_exact "kubectl exec: its output" "$tmp/out" "exec over tls"
check "kubectl top (the signed /metrics/resource over HTTPS)" 0 bash -c \
  "for i in \$(seq 240); do '${kc[0]}' '${kc[1]}' top node n1 --no-headers 2>/dev/null | grep -q '^n1 ' && exit 0; sleep 0.5; done; exit 1"

# ---- the signer's rules through the API ----------------------------------------------------------
csr() { # token, subject, SANs: POSTs the request; code in $tmp/code, answer in $tmp/answer
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/csr.key" \
    -subj "$2" -addext "subjectAltName=$3" -out "$tmp/csr.pem" 2>/dev/null
  printf '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"generateName":"csr-"},"spec":{"signerName":"kubernetes.io/kubelet-serving","usages":["digital signature","server auth"],"request":"%s"}}' \
    "$(base64 -w0 "$tmp/csr.pem")" >"$tmp/csr.json"
  curl -sS --cacert "$ca" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    --data-binary "@$tmp/csr.json" -o "$tmp/answer" -w '%{http_code}' \
    "$url/apis/certificates.k8s.io/v1/certificatesigningrequests" >"$tmp/code"
}
n1=$(cat "$tmp/n1.token")
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)
csr "$n1" "/O=system:nodes/CN=system:node:n1" "DNS:n1,IP:127.0.0.1"
expect_exact "n1 for itself: signed" "$tmp/code" "201"
expect_in "n1 for itself: Approved" "$tmp/answer" '"type":"Approved"'
csr "$n1" "/O=system:nodes/CN=system:node:n1" "DNS:n1,DNS:n2"
expect_exact "n1 asking for n2's name: refused" "$tmp/code" "403"
expect_in "n1 asking for n2's name: why" "$tmp/answer" 'DNS name \"n2\" is not node \"n1\"'
# n1 writes its own Node's addresses: listing another's there gets it no certificate for it
curl -sS --cacert "$ca" -H "Authorization: Bearer $n1" -H 'Content-Type: application/merge-patch+json' \
  -X PATCH --data-binary '{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"ExternalIP","address":"10.99.0.1"}]}}' \
  -o /dev/null -w '%{http_code}' "$url/api/v1/nodes/n1/status" >"$tmp/code"
expect_exact "n1 lists 10.99.0.1 in its status" "$tmp/code" "200"
csr "$n1" "/O=system:nodes/CN=system:node:n1" "DNS:n1,IP:10.99.0.1"
expect_exact "n1 asking for another address: refused" "$tmp/code" "403"
expect_in "another address: why" "$tmp/answer" 'address 10.99.0.1 is not one of node \"n1\"'
csr "$n1" "/O=system:nodes/CN=system:node:n2" "DNS:n2"
expect_exact "n1 asking as n2: refused" "$tmp/code" "403"
csr "$admin" "/O=system:nodes/CN=system:node:n1" "DNS:n1"
expect_exact "an admin asking for a node: refused" "$tmp/code" "403"

# ---- forged certificates: the server refuses them ------------------------------------------------
# n9's "agent" is openssl s_server with a certificate of the test's making; a pod bound to n9
fake() { # cert key: serves them on $fake_port
  [[ -z "$fake_pid" ]] || { kill "$fake_pid" 2>/dev/null || true; wait "$fake_pid" 2>/dev/null || true; }
  openssl s_server -quiet -accept "127.0.0.1:$fake_port" -cert "$1" -key "$2" -www >/dev/null 2>&1 &
  fake_pid=$!
  poll "the fake agent listens" 60 yes bash -c "(exec 3<>/dev/tcp/127.0.0.1/$fake_port) 2>/dev/null && echo yes"
}
fake_port=$(port_before_listener)
api() { # method path type body
  curl -sS --cacert "$ca" -H "Authorization: Bearer $admin" -H "Content-Type: $3" -X "$1" --data-binary "$4" -o /dev/null "$url$2"
}
n9_status="{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$fake_port}}}"
api POST /api/v1/nodes application/json "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n9\"},\"status\":$n9_status}"
api PATCH /api/v1/nodes/n9/status application/merge-patch+json "{\"status\":$n9_status}"
api POST /api/v1/namespaces/default/pods application/json '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"onfake"},"spec":{"nodeName":"n9","containers":[{"name":"app","image":"x"}]}}'
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -keyout "$tmp/self.key" \
  -subj "/O=system:nodes/CN=system:node:n9" -addext "subjectAltName=DNS:n9,IP:127.0.0.1" -out "$tmp/self.crt" 2>/dev/null
fake "$tmp/self.crt" "$tmp/self.key"
check "a self-signed certificate: logs refused" 1 "${kc[@]}" logs onfake
expect_in "self-signed: why" "$tmp/err" "the agent's certificate is not valid for node \"n9\" at 127.0.0.1"
# the cluster CA's certificate for n9 (the CA that signs the API server's: no say over agents)
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/n9c.key" \
  -subj "/O=system:nodes/CN=system:node:n9" -out "$tmp/n9c.csr" 2>/dev/null
printf 'subjectAltName=DNS:n9,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tmp/n9c.ext"
openssl x509 -req -in "$tmp/n9c.csr" -CA "$ca" -CAkey "$data/pki/ca.key" -CAcreateserial -days 2 \
  -extfile "$tmp/n9c.ext" -out "$tmp/n9c.crt" 2>/dev/null
fake "$tmp/n9c.crt" "$tmp/n9c.key"
check "a certificate of the cluster CA: logs refused" 1 "${kc[@]}" logs onfake
expect_in "cluster CA's: why" "$tmp/err" "the agent's certificate is not valid for node \"n9\" at 127.0.0.1"
# the kubelet-serving CA's own certificate for n1 (as if n1's key were stolen and served as n9)
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/n1x.key" \
  -subj "/O=system:nodes/CN=system:node:n1" -out "$tmp/n1x.csr" 2>/dev/null
printf 'subjectAltName=DNS:n1,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tmp/n1x.ext"
openssl x509 -req -in "$tmp/n1x.csr" -CA "$kca" -CAkey "$data/pki/kubelet-ca.key" -CAcreateserial \
  -days 2 -extfile "$tmp/n1x.ext" -out "$tmp/n1x.crt" 2>/dev/null
fake "$tmp/n1x.crt" "$tmp/n1x.key"
check "another node's certificate: logs refused" 1 "${kc[@]}" logs onfake
expect_in "another node's: why" "$tmp/err" "has a certificate that is not node \"n9\"'s"
check "another node's certificate: exec refused" 1 "${kc[@]}" exec onfake -- true
expect_in "exec: why" "$tmp/err" "not node \"n9\"'s"

# ---- restarts: a good certificate stays, one near its end is replaced ----------------------------
before=$(sha256sum <"$pki/agent-serving.crt")
key_before=$(sha256sum <"$pki/agent-serving.key")
stop_agent
start_agent
poll "n1 back" 120 yes bash -c "[[ \$(kubectl get node n1 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}' 2>/dev/null) != '$port' ]] && echo yes"
check "a good certificate is kept" 0 test "$(sha256sum <"$pki/agent-serving.crt")" = "$before"
stop_agent
openssl req -new -key "$pki/agent-serving.key" -subj "/O=system:nodes/CN=system:node:n1" -out "$tmp/old.csr" 2>/dev/null
openssl x509 -req -in "$tmp/old.csr" -CA "$kca" -CAkey "$data/pki/kubelet-ca.key" -CAcreateserial \
  -days 3 -extfile "$tmp/n1x.ext" -out "$pki/agent-serving.crt" 2>/dev/null
start_agent
poll "n1 back again" 120 yes bash -c "openssl x509 -in '$pki/agent-serving.crt' -noout -checkend $((300 * 86400)) >/dev/null && echo yes"
check "the key is kept across renewals" 0 test "$(sha256sum <"$pki/agent-serving.key")" = "$key_before"
expect_in "... saying why" "$tmp/agent.log" "agent-serving.crt is not used: it ends within 30 days"
port=$(port_of n1)
poll "kubectl logs after the renewal" 120 "hello over tls" "${kc[@]}" logs talker

# ---- the migration: a certificate the cluster CA signed (an earlier server's) is asked again -----
stop_agent
openssl x509 -req -in "$tmp/old.csr" -CA "$ca" -CAkey "$data/pki/ca.key" -CAcreateserial -days 300 \
  -extfile "$tmp/n1x.ext" -out "$pki/agent-serving.crt" 2>/dev/null
rm -f "$pki/agent-serving.cluster-ca.crt" # an earlier agent wrote none
start_agent
poll "the cluster CA's certificate replaced" 120 yes bash -c "openssl verify -CAfile '$kca' '$pki/agent-serving.crt' >/dev/null 2>&1 && echo yes"
expect_in "... saying why" "$tmp/agent.log" "agent-serving.crt is not used: this cluster's kubelet-serving CA did not sign it"
port=$(port_of n1)
poll "kubectl logs after the migration" 120 "hello over tls" "${kc[@]}" logs talker

finish "agent TLS"
