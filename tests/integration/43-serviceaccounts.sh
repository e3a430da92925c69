#!/usr/bin/env bash
# Service accounts and their tokens with stock kubectl against `xpool up --simulate`
# (docs/security.md, "Service accounts"):
#   - the ServiceAccount `default` and the ConfigMap kube-root-ca.crt (the server's CA) in every
#     namespace, made again when deleted; kubectl get sa (NAME SECRETS AGE); a pod whose service
#     account does not exist refused in kube-apiserver's words;
#   - kubectl create token (TokenRequest): a signed JWT with Kubernetes' claims; kubectl auth
#     whoami --token; 403 on what the account may not do, 200 on discovery; a role granted by
#     the xpool.io/role annotation and taken back; bad durations, an unknown account, another
#     audience, a bound token dying with its pod, a node asking for another node's pod;
#   - a process pod that reads the token, CA and namespace from its files (the in-cluster
#     layout) and calls the API with curl and with the Python client's load_incluster_config;
#   - the kube-api-access-XXXXX volume the admission adds to every pod (kubectl get -o yaml), used
#     by load_incluster_config() as is (200 with a role, 403 without), the node's directory left
#     as it was; automountServiceAccountToken of the pod over its account's; the account's
#     imagePullSecrets; one TokenRequest per pod however often its container starts; with TLS
#     off, no CA source in the volume.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
data=$tmp/data
node=sa-node
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
deadline=$((SECONDS + 120))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 120 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
server=$("${k[@]}" config view -o jsonpath='{.clusters[0].cluster.server}')
ca=$data/pki/ca.crt
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$KUBECONFIG" | head -1)

# code NAME WANT TOKEN METHOD PATH [BODY]: the HTTP status of a call with that token
code() {
  local name=$1 want=$2 tok=$3 method=$4 path=$5 body=${6:-} got
  local args=(-sS --cacert "$ca" -X "$method" -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $tok")
  [[ -n "$body" ]] && args+=(-H "Content-Type: application/json" --data-binary "$body")
  got=$(curl "${args[@]}" "$server$path") || true
  [[ "$got" == "$want" ]] || { echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1)); }
}

# ---- default and kube-root-ca.crt ----------------------------------------------------------------
poll "default in default" 60 "serviceaccount/default" "${k[@]}" get sa default -o name
check "kubectl get sa" 0 "${k[@]}" get sa
expect_in "the table" "$tmp/out" "NAME      SECRETS   AGE"
expect_in "its row" "$tmp/out" "default   0 "
poll "kube-root-ca.crt" 60 "configmap/kube-root-ca.crt" "${k[@]}" get cm kube-root-ca.crt -o name
"${k[@]}" get cm kube-root-ca.crt -o jsonpath='{.data.ca\.crt}' >"$tmp/published.crt"
check "it holds the server's CA" 0 cmp "$tmp/published.crt" "$ca"
check "a namespace" 0 "${k[@]}" create namespace team
poll "default in the new one" 60 "serviceaccount/default" "${k[@]}" -n team get sa default -o name
poll "and the CA" 60 "configmap/kube-root-ca.crt" "${k[@]}" -n team get cm kube-root-ca.crt -o name
check "delete default" 0 "${k[@]}" -n team delete sa default
poll "it comes back" 60 "serviceaccount/default" "${k[@]}" -n team get sa default -o name
check "change the CA's configmap" 0 "${k[@]}" -n team patch cm kube-root-ca.crt -p '{"data":{"ca.crt":"x"}}'
cafile() { "${k[@]}" -n team get cm kube-root-ca.crt -o jsonpath='{.data.ca\.crt}' | cmp -s - "$ca" && echo same; }
poll "it is set back" 60 same cafile
check "api-resources lists it" 0 "${k[@]}" api-resources --api-group= -o name
expect_in "serviceaccounts" "$tmp/out" "serviceaccounts"
check "explain" 0 "${k[@]}" explain serviceaccount.automountServiceAccountToken
expect_in "its type" "$tmp/out" "<boolean>"

# ---- admission -----------------------------------------------------------------------------------
check "a pod of an account that does not exist" 1 "${k[@]}" run nosa --image=busybox --restart=Never \
  --overrides='{"spec":{"serviceAccountName":"ghost"}}'
expect_in "kube-apiserver's words" "$tmp/err" 'pods "nosa" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found'
check "nothing was made" 1 "${k[@]}" get pod nosa

# ---- tokens --------------------------------------------------------------------------------------
check "create serviceaccount web" 0 "${k[@]}" create serviceaccount web
check "kubectl create token" 0 "${k[@]}" create token web
tok=$(cat "$tmp/out")
[[ "$tok" =~ ^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]] || { echo "FAIL not a JWT: '$tok'"; failures=$((failures + 1)); }
claims=$(cut -d. -f2 <<<"$tok" | tr '_-' '/+' | { read -r p; while (( ${#p} % 4 )); do p+='='; done; base64 -d <<<"$p"; })
echo "$claims" >"$tmp/claims"
expect_in "sub" "$tmp/claims" '"sub":"system:serviceaccount:default:web"'
expect_in "iss" "$tmp/claims" '"iss":"https://kubernetes.default.svc.cluster.local"'
expect_in "kubernetes.io" "$tmp/claims" '"kubernetes.io":{"namespace":"default","serviceaccount":{"name":"web","uid":"'
check "auth whoami --token" 0 "${k[@]}" auth whoami --token "$tok"
expect_in "the user" "$tmp/out" "system:serviceaccount:default:web"
expect_in "its groups" "$tmp/out" "[system:serviceaccounts system:serviceaccounts:default system:authenticated]"
code "discovery is every user's" 200 "$tok" GET /api/v1
code "listing pods is not" 403 "$tok" GET /api/v1/namespaces/default/pods
expect_in "RBAC's words" "$tmp/out" 'pods is forbidden: User \"system:serviceaccount:default:web\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"'
check "can-i says no" 1 "${k[@]}" auth can-i list pods --token "$tok"
check "grant the reader role" 0 "${k[@]}" annotate sa web xpool.io/role=reader
code "now it may list" 200 "$tok" GET /api/v1/namespaces/default/pods
code "but not create" 403 "$tok" POST /api/v1/namespaces/default/configmaps '{"metadata":{"name":"x"}}'
code "nor read secrets" 403 "$tok" GET /api/v1/namespaces/default/secrets
check "take it back" 0 "${k[@]}" annotate sa web xpool.io/role-
code "at once" 403 "$tok" GET /api/v1/namespaces/default/pods
check "a token for 10 minutes" 0 "${k[@]}" create token web --duration 10m
check "a short duration" 1 "${k[@]}" create token web --duration 5m
expect_in "refused" "$tmp/err" 'spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes'
code "expirationSeconds as a string" 400 "$admin" \
  POST /api/v1/namespaces/default/serviceaccounts/web/token '{"spec":{"expirationSeconds":"long"}}'
check "an account that does not exist" 1 "${k[@]}" create token ghost
expect_in "not found" "$tmp/err" 'serviceaccounts "ghost" not found'
# TokenRequest reads the account from the registry's cache: an account deleted and made again is
# the new one at once (its uid in the claims), and one deleted is gone at once
check "create serviceaccount again" 0 "${k[@]}" create serviceaccount again
check "a token for it" 0 "${k[@]}" create token again
check "delete it" 0 "${k[@]}" delete serviceaccount again
check "no token for a deleted account" 1 "${k[@]}" create token again
expect_in "not found" "$tmp/err" 'serviceaccounts "again" not found'
check "make it again" 0 "${k[@]}" create serviceaccount again
check "its new uid" 0 "${k[@]}" get serviceaccount again -o jsonpath='{.metadata.uid}'
again_uid=$(cat "$tmp/out")
check "a token for the new one" 0 "${k[@]}" create token again
cut -d. -f2 "$tmp/out" | tr '_-' '/+' | { read -r p; while (( ${#p} % 4 )); do p+='='; done; base64 -d <<<"$p"; } >"$tmp/claims"
expect_in "names the new account" "$tmp/claims" '"serviceaccount":{"name":"again","uid":"'"$again_uid"'"}'
check "a token for another audience" 0 "${k[@]}" create token web --audience vault
code "is not for this server" 401 "$(cat "$tmp/out")" GET /api/v1
check "garbage is refused" 1 "${k[@]}" auth whoami --token "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"

# ---- bound tokens --------------------------------------------------------------------------------
cat >"$tmp/bound.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bound}
spec:
  serviceAccountName: web
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: ["sleep", "60"]}
EOF
check "a pod of web" 0 "${k[@]}" apply -f "$tmp/bound.yaml"
check "a token bound to it" 0 "${k[@]}" create token web --bound-object-kind Pod --bound-object-name bound
btok=$(cat "$tmp/out")
check "whoami names the pod" 0 "${k[@]}" auth whoami --token "$btok" -o jsonpath='{.status.userInfo.extra.authentication\.kubernetes\.io/pod-name}'
expect_in "the pod" "$tmp/out" "bound"
check "not to a pod of another account" 1 "${k[@]}" create token default --bound-object-kind Pod --bound-object-name bound
expect_in "refused" "$tmp/err" 'cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.'
check "delete the pod" 0 "${k[@]}" delete pod bound --grace-period=0 --force
code "the bound token dies with it" 401 "$btok" GET /api/v1
expect_in "saying why" "$tmp/out" "this token was made for no longer exists"
code "the unbound one lives on" 200 "$tok" GET /api/v1

# ---- a node asks for tokens ----------------------------------------------------------------------
check "a node token for another node" 0 "$xpool" token create --node other-node --data-dir "$data"
other=$(cat "$tmp/out")
check "the pod again" 0 "${k[@]}" apply -f "$tmp/bound.yaml"
poll "bound to $node" 60 "$node" "${k[@]}" get pod bound -o jsonpath='{.spec.nodeName}'
req='{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"bound"}}}'
# the server reads its tokens file again within a second: the new node's token is taken once
# it lists nodes (a bounded wait; at load 30 the 3 s this loop had could pass first, and the
# checks below then saw 401, not the 403s they test)
other_lists_nodes() { curl -sS --cacert "$ca" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $other" "$server/api/v1/nodes" | grep -q 200; }
wait_for "the other node's token is taken" 60 other_lists_nodes
code "another node's pod" 403 "$other" POST /api/v1/namespaces/default/serviceaccounts/web/token "$req"
expect_in "NodeRestriction's words" "$tmp/out" 'may only request tokens bound to pods on node \"other-node\"'
code "a token bound to no pod" 403 "$other" POST /api/v1/namespaces/default/serviceaccounts/web/token '{}'
expect_in "refused" "$tmp/out" "node requested token not bound to a pod"
check "delete it" 0 "${k[@]}" delete pod bound --grace-period=0 --force

# ---- a pod calls the API with its token, from the in-cluster files ------------------------------
# The token, the CA and the namespace as a pod finds them in
# /var/run/secrets/kubernetes.io/serviceaccount (here below $tmp: a process pod's mountPath is on
# the host), given in a Secret.
mnt=$tmp/mnt
mkdir -p "$mnt/sa"
check "the files as a Secret" 0 "${k[@]}" create secret generic web-token --from-literal=token="$tok" \
  --from-file=ca.crt="$ca" --from-literal=namespace=default
cat >"$tmp/incluster.py" <<'EOF'
import sys
from kubernetes import client
from kubernetes.config.incluster_config import InClusterConfigLoader
d = sys.argv[1]
InClusterConfigLoader(token_filename=d + "/token", cert_filename=d + "/ca.crt").load_and_set()
ns = open(d + "/namespace").read()
api = client.CoreV1Api()
print("py discovery", len(api.get_api_resources().resources) > 0)
try:
    api.list_namespaced_pod(ns)
    print("py pods allowed")
except client.ApiException as e:
    print("py pods", e.status)
EOF
cat >"$tmp/podcall.sh" <<EOF
d=$mnt/sa
call() { curl -sS -o /dev/null -w '%{http_code}' --cacert \$d/ca.crt -H "Authorization: Bearer \$(cat \$d/token)" "$server\$1"; }
echo "discovery \$(call /api)"
echo "pods \$(call /api/v1/namespaces/\$(cat \$d/namespace)/pods)"
if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then /usr/bin/python3 $tmp/incluster.py \$d; else echo "no Python client"; fi
exec sleep 60
EOF
cat >"$tmp/caller.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: caller}
spec:
  serviceAccountName: web
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "$tmp/podcall.sh"]
    volumeMounts:
    - {name: sa, mountPath: $mnt/sa, readOnly: true}
  volumes:
  - {name: sa, secret: {secretName: web-token}}
EOF
check "the calling pod" 0 "${k[@]}" apply -f "$tmp/caller.yaml"
callout() { "${k[@]}" logs caller 2>/dev/null | head -4; }
want_py="py discovery True
py pods 403"
# a process pod runs on this machine: the Python client is there for it when it is here
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { echo "SKIP (part): no Python kubernetes client"; want_py="no Python client"; }
poll "it is told 200 for discovery, 403 for pods, by curl and by the Python client" 120 "discovery 200
pods 403
$want_py" callout
check "delete it" 0 "${k[@]}" delete pod caller --grace-period=0 --force

# ---- a projected serviceAccountToken source: the agent asks for a token bound to the pod -------
mkdir -p "$mnt/proj"
cat >"$tmp/projcall.sh" <<EOF
d=$mnt/proj
call() { curl -sS -o /dev/null -w '%{http_code}' --cacert \$d/ca.crt -H "Authorization: Bearer \$(cat \$d/token)" "$server\$1"; }
echo "files \$(ls \$d | tr '\n' ' ')"
echo "discovery \$(call /api)"
echo "pods \$(call /api/v1/namespaces/\$(cat \$d/namespace)/pods)"
curl -sS --cacert \$d/ca.crt -H "Authorization: Bearer \$(cat \$d/token)" -H 'Content-Type: application/json' \\
  --data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \\
  "$server/apis/authentication.k8s.io/v1/selfsubjectreviews" | grep -o '"authentication.kubernetes.io/pod-name":\[[^]]*\]'
exec sleep 60
EOF
cat >"$tmp/projector.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: projector}
spec:
  serviceAccountName: web
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "$tmp/projcall.sh"]
    volumeMounts:
    - {name: kube-api-access, mountPath: $mnt/proj, readOnly: true}
  volumes:
  - name: kube-api-access
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {expirationSeconds: 3607, path: token}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}]}
EOF
check "a pod with a projected token" 0 "${k[@]}" apply -f "$tmp/projector.yaml"
projout() { "${k[@]}" logs projector 2>/dev/null | head -4; }
poll "its token is bound to it and speaks for web" 120 'files ca.crt namespace token 
discovery 200
pods 403
"authentication.kubernetes.io/pod-name":["projector"]' projout
projuid=$("${k[@]}" get pod projector -o jsonpath='{.metadata.uid}')
check "the token file is the kubelet's link" 0 readlink "$data/agent/volumes/$projuid/kube-api-access/token"
expect_in "into ..data" "$tmp/out" "..data/token"
ptok=$(cat "$data/agent/volumes/$projuid/kube-api-access/token" 2>/dev/null || true)
code "the projected token works from here too" 200 "$ptok" GET /api/v1
check "delete it" 0 "${k[@]}" delete pod projector --grace-period=0 --force
code "and dies with its pod" 401 "$ptok" GET /api/v1
cat >"$tmp/shortproj.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: shortproj}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: ["sleep", "60"], volumeMounts: [{name: t, mountPath: $mnt/proj}]}
  volumes:
  - {name: t, projected: {sources: [{serviceAccountToken: {expirationSeconds: 60, path: token}}]}}
EOF
check "a projected token of 60 s" 0 "${k[@]}" apply -f "$tmp/shortproj.yaml"
shortevents() { "${k[@]}" get events --field-selector involvedObject.name=shortproj -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' | grep -c 'may not specify a duration less than 10 minutes' || true; }
poll "the agent's FailedMount says why" 60 1 shortevents
check "delete it" 0 "${k[@]}" delete pod shortproj --grace-period=0 --force
# a pod that is over has its volumes torn down, as the kubelet's, though the pod is kept: its
# kube-api-access tmpfs no longer stays mounted on the node until the pod is deleted
cat >"$tmp/doneproj.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: doneproj}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: ["sh", "-c", "cat $mnt/proj/token >/dev/null && sleep 4"], volumeMounts: [{name: t, mountPath: $mnt/proj}]}
  volumes:
  - {name: t, projected: {sources: [{serviceAccountToken: {path: token}}]}}
EOF
check "a short pod with a projected token" 0 "${k[@]}" apply -f "$tmp/doneproj.yaml"
doneuid=$("${k[@]}" get pod doneproj -o jsonpath='{.metadata.uid}')
donemounted() { awk -v d="$data/agent/volumes/$doneuid/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l; }
donephase() { "${k[@]}" get pod doneproj -o jsonpath='{.status.phase}'; }
poll "it succeeds (it read its token from the volume)" 60 Succeeded donephase
donedir() { [[ -e "$data/agent/volumes/$doneuid" ]] && echo there || echo gone; }
poll "then its volumes are gone from the node" 60 gone donedir
check "unmounted" 0 donemounted
expect_in "no mount left" "$tmp/out" "0"
check "delete it" 0 "${k[@]}" delete pod doneproj --grace-period=0 --force

# ---- the admission's kube-api-access volume, as every pod gets it --------------------------------
sa=/var/run/secrets/kubernetes.io/serviceaccount
sa_before=$(ls -A "$sa" 2>/dev/null || echo none)
host=$(sed 's|^https://||; s|:[0-9]*$||' <<<"$server")
cat >"$tmp/incluster2.py" <<'PY'
from kubernetes import client, config
config.load_incluster_config()
ns = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
try:
    client.CoreV1Api().list_namespaced_pod(ns)
    print("py pods allowed")
except client.ApiException as e:
    print("py pods", e.status)
PY
port=${server##*:}
cat >"$tmp/auto.sh" <<SH
d=$sa
echo "svc \$KUBERNETES_SERVICE_HOST \$KUBERNETES_SERVICE_PORT \$KUBERNETES_SERVICE_PORT_HTTPS \$KUBERNETES_PORT \$KUBERNETES_PORT_${port}_TCP \$KUBERNETES_PORT_${port}_TCP_PROTO \$KUBERNETES_PORT_${port}_TCP_PORT \$KUBERNETES_PORT_${port}_TCP_ADDR"
echo "files \$(ls \$d | tr '\n' ' ')"
echo "pods \$(curl -sS -o /dev/null -w '%{http_code}' --cacert \$d/ca.crt -H "Authorization: Bearer \$(cat \$d/token)" \\
  https://\$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT/api/v1/namespaces/\$(cat \$d/namespace)/pods)"
if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then /usr/bin/python3 $tmp/incluster2.py; else echo "no Python client"; fi
exec sleep 60
SH
# autopod NAME ACCOUNT [SPEC LINES]: a process pod running auto.sh as ACCOUNT, with no env of its
# own: the agent gives it KUBERNETES_SERVICE_HOST and the rest (docs/agent.md, "Environment")
autopod() {
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  serviceAccountName: $2
  restartPolicy: Never
${3:-}
  containers:
  - name: c
    image: busybox
    command: ["sh", "$tmp/auto.sh"]
${4:-}
YAML
}
check "grant web the reader role again" 0 "${k[@]}" annotate sa web xpool.io/role=reader
check "an account without a role" 0 "${k[@]}" create serviceaccount plain
autopod reader web >"$tmp/reader.yaml"
autopod nobody plain >"$tmp/nobody.yaml"
check "a pod of web, no volume named" 0 "${k[@]}" apply -f "$tmp/reader.yaml"
check "a pod of plain" 0 "${k[@]}" apply -f "$tmp/nobody.yaml"
check "kubectl get pod -o yaml" 0 "${k[@]}" get pod reader -o yaml
expect_in "the volume" "$tmp/out" "  - name: kube-api-access-"
expect_in "its mount" "$tmp/out" "    - mountPath: $sa"
expect_in "its token source" "$tmp/out" "          expirationSeconds: 3607"
check "the volume, exactly as kube-apiserver makes it" 0 "${k[@]}" get pod reader -o jsonpath='{.spec.volumes[0].projected}'
expect_exact "the volume, exactly as kube-apiserver makes it" "$tmp/out" '{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"items":[{"key":"ca.crt","path":"ca.crt"}],"name":"kube-root-ca.crt"}},{"downwardAPI":{"items":[{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"},"path":"namespace"}]}}]}'
volname=$("${k[@]}" get pod reader -o jsonpath='{.spec.volumes[0].name}')
[[ "$volname" =~ ^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$ ]] || { echo "FAIL the volume's name: '$volname'"; failures=$((failures + 1)); }
check "the mount" 0 "${k[@]}" get pod reader -o jsonpath='{.spec.containers[0].volumeMounts[0]}'
expect_exact "the mount: read-only, named for the volume" "$tmp/out" "{\"mountPath\":\"$sa\",\"name\":\"$volname\",\"readOnly\":true}"
want_py="py pods allowed"
want_py403="py pods 403"
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { echo "SKIP (part): no Python kubernetes client"; want_py="no Python client"; want_py403=$want_py; }
readerout() { "${k[@]}" logs reader 2>/dev/null | head -4; }
nobodyout() { "${k[@]}" logs nobody 2>/dev/null | head -4; }
svc="svc $host $port $port tcp://$host:$port tcp://$host:$port tcp $port $host"
poll "the agent's Service variables, and load_incluster_config with the mounted token: web may list pods" 120 "$svc
files ca.crt namespace token 
pods 200
$want_py" readerout
poll "and plain may not" 120 "$svc
files ca.crt namespace token 
pods 403
$want_py403" nobodyout
sa_after=$(ls -A "$sa" 2>/dev/null || echo none)
want_host=$sa_before
[[ "$sa_before" == none ]] && want_host=""
[[ "$sa_after" == "$want_host" ]] || { echo "FAIL the node's $sa holds '$sa_after', expected '$want_host': the token is bound only in the container"; failures=$((failures + 1)); }
check "delete them" 0 "${k[@]}" delete pod reader nobody --grace-period=0 --force

# automountServiceAccountToken: the pod's word over its account's; a dry run goes through admission
cat >"$tmp/quiet.yaml" <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: quiet}
automountServiceAccountToken: false
imagePullSecrets: [{name: reg}, {name: mirror}]
YAML
check "an account that opts out, with pull secrets" 0 "${k[@]}" apply -f "$tmp/quiet.yaml"
vols() { # NAME ACCOUNT [SPEC LINES] [CONTAINER LINES]: the volumes and pull secrets a dry run gets
  autopod "$@" >"$tmp/dry.yaml"
  "${k[@]}" create --dry-run=server -f "$tmp/dry.yaml" \
    -o jsonpath='{.spec.volumes[*].name} {.spec.containers[0].volumeMounts[*].mountPath} pull: {.spec.imagePullSecrets[*].name}'
}
check "the account's pod" 0 vols q1 quiet
expect_exact "no volume, the account's pull secrets" "$tmp/out" "  pull: reg mirror"
check "a pod that opts in" 0 vols q2 quiet "  automountServiceAccountToken: true"
expect_in "gets it" "$tmp/out" "kube-api-access-"
expect_in "mounted" "$tmp/out" " $sa pull: reg mirror"
check "a pod that opts out" 0 vols q3 web "  automountServiceAccountToken: false"
expect_exact "gets none" "$tmp/out" "  pull: "
check "a pod with its own pull secret" 0 vols q4 quiet "  imagePullSecrets: [{name: own}]"
expect_exact "keeps it alone" "$tmp/out" "  pull: own"
check "a pod with its own mount there" 0 vols q5 web "  volumes: [{name: mine, emptyDir: {}}]" \
  "    volumeMounts: [{name: mine, mountPath: $sa}]"
expect_exact "keeps it, and gets no volume" "$tmp/out" "mine $sa pull: "
check "nothing was stored" 1 "${k[@]}" get pod q1

# one TokenRequest per pod, however often its container starts (the agent keeps the token until
# 80 % of its hour has passed)
tokreqs() {
  curl -sS --cacert "$ca" -H "Authorization: Bearer $admin" "$server/metrics" |
    grep '^apiserver_request_total{' | grep 'resource="serviceaccounts"' | grep 'subresource="token"' |
    awk '{s += $NF} END {print s + 0}'
}
check "no pod left" 0 "${k[@]}" delete pods --all --grace-period=0 --force
nopods() { "${k[@]}" get pods -o name | wc -l; }
poll "none" 60 0 nopods
before=$(tokreqs)
cat >"$tmp/restarter.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: restarter}
spec:
  containers:
  - {name: c, image: busybox, command: ["sh", "-c", "cat $sa/namespace; exit 1"]}
YAML
check "a pod that fails and restarts" 0 "${k[@]}" apply -f "$tmp/restarter.yaml"
restarts() { [[ $("${k[@]}" get pod restarter -o jsonpath='{.status.containerStatuses[0].restartCount}') -ge 3 ]] && echo yes; }
poll "it restarted three times" 120 yes restarts
restarterlog() { "${k[@]}" logs restarter; }
poll "it read its files" 60 default restarterlog
after=$(tokreqs)
[[ $((after - before)) -eq 1 ]] || { echo "FAIL TokenRequests for four starts: $((after - before)), expected 1"; failures=$((failures + 1)); }
check "delete it" 0 "${k[@]}" delete pod restarter --grace-period=0 --force

# ---- with TLS off the server has no CA: the volume goes without its configMap source -------------
stop_up
plain=$tmp/plain
"$xpool" server --listen 127.0.0.1:0 --no-tls --data-dir "$plain" >"$tmp/plain.log" 2>&1 &
up_pid=$!
diag_log "$tmp/plain.log"
plain_url=
for _ in $(seq 1200); do
  plain_url=$(sed -n 's|.*xpool server listening on \(http://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/plain.log")
  [[ -n "$plain_url" ]] && curl -fsS -o /dev/null "$plain_url/healthz" 2>/dev/null && break
  sleep 0.1
done
# kubectl sends no token over plain HTTP: curl does
padmin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$plain/admin.kubeconfig" | head -1)
plainpod() {
  curl -sS -H "Authorization: Bearer $padmin" -H 'Content-Type: application/json' \
    --data-binary '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}' \
    "$plain_url/api/v1/namespaces/default/pods?dryRun=All" |
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["spec"]["volumes"][0]["projected"]["sources"], separators=(",", ":"), sort_keys=True))'
}
poll "a pod against it has the token and the namespace only" 60 \
  '[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"downwardAPI":{"items":[{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"},"path":"namespace"}]}}]' plainpod

finish "service account"
