#!/usr/bin/env bash
# The secured server on loopback, driven with curl and kubectl: TLS verified against the CA it
# makes, the public paths, 401 for every bad credential (revocation without a restart), each
# role's allowed and denied operations with the exact messages (a denied write changes nothing),
# the node rules for bound and unbound pods, the admin kubeconfig across restarts, xpool token
# list, --tls-cert/--tls-key, --no-tls and the body size limit.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
ca=$data/pki/ca.crt
home=$tmp/home
mkdir -p "$home"
server_pid=
base=
cacert=$ca # the CA curl trusts for the running server
admin=
reader=
node=
kubeconfig= # where the server writes the admin kubeconfig, when not the default

trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

token_of() { # kubeconfig: the token in it
  sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$1" 2>/dev/null | head -1
}

curl_tls() { # curl with the CA of the running server when it serves https
  if [[ "$base" == https://* ]]; then curl --cacert "$cacert" "$@"; else curl "$@"; fi
}

# start_server log name, server flags...: starts on a free port with $data and waits (bounded)
# for the listening line and a /healthz answer without a token.
start_server() {
  local log=$tmp/$1.log deadline=$((SECONDS + 60))
  shift
  : >"$log" # the background job opens it later: it must exist for the first look
  # no agent renews these nodes' leases: a long grace keeps the node lifecycle from writing to
  # their pods while the denied requests are checked to change nothing (slow sanitizer runs)
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --node-monitor-grace-period 1h "$@" \
    >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  base=
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    base=$(sed -n 's|.*xpool server listening on \(https\{0,1\}://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$base" ]] && curl_tls -fsS -o /dev/null "$base/healthz" 2>/dev/null; then
      admin=$(token_of "${kubeconfig:-$data/admin.kubeconfig}")
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 60 s:"; cat "$log"; exit 1
}

# req name, expected HTTP code, token ("" for none), method, path [, body file]: the answer in
# $tmp/out. PATCH bodies are JSON merge patches.
req() {
  local name=$1 want=$2 tok=$3 method=$4 path=$5 body=${6:-} got type=application/json
  local args=(-sS -X "$method" -o "$tmp/out" -w '%{http_code}')
  [[ -n "$tok" ]] && args+=(-H "Authorization: Bearer $tok")
  [[ "$method" == PATCH ]] && type=application/merge-patch+json
  [[ -n "$body" ]] && args+=(-H "Content-Type: $type" --data-binary "@$body")
  got=$(curl_tls "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}

raw() { # name, expected HTTP code, header ("" for none), path: a GET with exactly that header
  local got args=(-sS -o "$tmp/out" -w '%{http_code}')
  [[ -n "$3" ]] && args+=(-H "$3")
  got=$(curl_tls "${args[@]}" "$base$4") || got="curl failed ($?)"
  [[ "$got" == "$2" ]] || { echo "FAIL $1: HTTP $got, expected $2"; cat "$tmp/out"; echo; failures=$((failures + 1)); }
}

expect_status() { # name, code, reason, message: $tmp/out is that Status, message exact
  local msg
  msg=$(printf '%s' "$4" | sed 's/\\/\\\\/g; s/"/\\"/g')
  expect_in "$1: a Status" "$tmp/out" '"kind":"Status","apiVersion":"v1"'
  expect_in "$1: reason" "$tmp/out" '"reason":"'"$3"'"'
  expect_in "$1: code" "$tmp/out" '"code":'"$2"'}'
  expect_in "$1: message" "$tmp/out" '"message":"'"$msg"'"'
}

# until_code name, expected code, token, path: GET until it answers the code (the server
# rereads the tokens file within a second), at most 60 s; the last answer in $tmp/out.
until_code() {
  local got='' deadline=$((SECONDS + 60))
  while [[ $SECONDS -lt $deadline ]]; do
    got=$(curl_tls -sS -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $3" "$base$4") || got="curl failed"
    [[ "$got" == "$2" ]] && return 0
    sleep 0.2
  done
  echo "FAIL $1: HTTP $got after 60 s, expected $2"; cat "$tmp/out"; echo; failures=$((failures + 1))
}

expect_line() { # name, file, extended regex that one whole line must match
  grep -qE -- "^$3\$" "$2" || { echo "FAIL $1: no line matching '$3' in:"; cat "$2"; failures=$((failures + 1)); }
}

snapshot() { # path, file: what an admin GET of path answers (code and body)
  local code
  code=$(curl_tls -sS -o "$2" -w '%{http_code}' -H "Authorization: Bearer $admin" "$base$1") || code="curl failed"
  # the scheduler's own retries rewrite a pending pod's PodScheduled message and its version
  # ("0/1 nodes" becomes "0/2 nodes" once the second node registers): not the refused request's doing
  sed -i -E 's/"resourceVersion":"[0-9]+"//; s/"message":"[0-9]+\/[0-9]+ nodes are available[^"]*"//' "$2"
  echo "$code" >>"$2"
}

# ---- TLS by default, with the generated CA ----
start_server first
expect_in "listening on https" "$tmp/first.log" "xpool server listening on https://127.0.0.1:"
check "no TLS without the CA" 60 curl -sS -o /dev/null "$base/version"
check "TLS verified with the CA" 0 curl -fsS --cacert "$ca" -o /dev/null "$base/version"
code=$(curl -sS -o /dev/null -w '%{http_code}' "${base/https/http}/version" 2>/dev/null) || true
[[ "$code" != 200 ]] || { echo "FAIL plain HTTP answered 200 on the TLS port"; failures=$((failures + 1)); }
if command -v openssl >/dev/null; then
  check "openssl verifies the chain" 0 openssl verify -CAfile "$ca" "$data/pki/server.crt"
  check "server certificate SANs" 0 openssl x509 -in "$data/pki/server.crt" -noout -ext subjectAltName
  expect_in "SAN 127.0.0.1" "$tmp/out" "IP Address:127.0.0.1"
  expect_in "SAN localhost" "$tmp/out" "DNS:localhost"
fi
for f in admin.kubeconfig tokens pki/ca.key pki/server.key; do
  [[ "$(stat -c %a "$data/$f")" == 600 ]] || { echo "FAIL $f is mode $(stat -c %a "$data/$f"), not 0600"; failures=$((failures + 1)); }
done
expect_in "kubeconfig has the URL" "$data/admin.kubeconfig" "server: $base"
expect_in "kubeconfig has the CA" "$data/admin.kubeconfig" "certificate-authority-data: $(base64 -w0 "$ca")"
[[ "$admin" =~ ^xpa_[0-9a-f]{12}\.[0-9a-f]{64}$ ]] || { echo "FAIL admin token '$admin' is not xpa_<12 hex>.<64 hex>"; failures=$((failures + 1)); }

# ---- The public paths; everything else needs a token ----
for p in /version /healthz /livez /readyz; do raw "public $p" 200 "" "$p"; done
expect_in "readyz body" "$tmp/out" "ok"
for p in /api /apis /openapi/v3 /api/v1/nodes /api/v1/namespaces/default/pods; do
  raw "no token: $p" 401 "" "$p"
  expect_status "no token: $p" 401 Unauthorized 'Unauthorized: no bearer token: send the header `Authorization: Bearer <token>`'
done

# ---- Tokens of each role ----
check "token create --reader" 0 "$xpool" token create --reader --subject ci --data-dir "$data"
reader=$(cat "$tmp/out")
expect_in "create hints on stderr" "$tmp/err" "It is shown only this once"
expect_in "create says where the token is" "$tmp/err" "Created reader token ${reader:4:12} for ci in $data/tokens."
expect_count "create into a server's directory has no note" "$tmp/err" 0 "Note:"
expect_in "create names the revoke with its directory" "$tmp/err" "Revoke it with: xpool token revoke ${reader:4:12} --data-dir $data"
# Into a directory no server has used (the slip: a server on --data-dir, the token made in the
# default one): made, and said.
check "token create where no server is" 0 "$xpool" token create --admin --data-dir "$tmp/no-server"
expect_in "create where no server is: the note" "$tmp/err" "Note: $tmp/no-server held no tokens yet: no server has started with this data directory. For a server started with --data-dir DIR, run this again with --data-dir DIR."
[[ "$reader" =~ ^xpr_[0-9a-f]{12}\.[0-9a-f]{64}$ ]] || { echo "FAIL reader token '$reader'"; failures=$((failures + 1)); }
check "token create --node" 0 "$xpool" token create --node n1 --data-dir "$data"
node=$(cat "$tmp/out")
[[ "$node" =~ ^xpn_[0-9a-f]{12}\.[0-9a-f]{64}$ ]] || { echo "FAIL node token '$node'"; failures=$((failures + 1)); }
check "token create needs a role" 2 "$xpool" token create --data-dir "$data"
until_code "a new token works without a restart" 200 "$reader" /api/v1/nodes
until_code "a new node token works" 200 "$node" /api/v1/nodes

check "token list" 0 "$xpool" token list --data-dir "$data"
expect_line "list header" "$tmp/out" "ID +ROLE +SUBJECT +CREATED"
expect_line "list admin" "$tmp/out" "${admin:4:12} +admin +admin +20[0-9-]+T[0-9:]+Z"
expect_line "list reader" "$tmp/out" "${reader:4:12} +reader +ci +20[0-9-]+T[0-9:]+Z"
expect_line "list node" "$tmp/out" "${node:4:12} +node +n1 +20[0-9-]+T[0-9:]+Z"
for t in "$admin" "$reader" "$node"; do
  expect_count "list hides the secret of ${t:0:16}" "$tmp/out" 0 "${t#*.}"
done
if grep -qE '[0-9a-f]{32}' "$tmp/out" "$tmp/err"; then
  echo "FAIL token list prints something like a secret or a hash:"; cat "$tmp/out"; failures=$((failures + 1))
fi
expect_count "the tokens file holds no secret" "$data/tokens" 0 "${reader#*.}"

# ---- 401: no token, malformed header, unknown token, revoked token; none changes anything ----
printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"free"},"spec":{"containers":[{"name":"c","image":"i"}]}}' >"$tmp/free.json"
req "admin creates free" 201 "$admin" POST /api/v1/namespaces/default/pods "$tmp/free.json"
free=/api/v1/namespaces/default/pods/free
snapshot "$free" "$tmp/free.before"
unknown=xpa_000000000000.$(printf '0%.0s' $(seq 64))
while IFS='|' read -r what header message; do
  raw "401 $what" 401 "$header" "$free"
  expect_status "401 $what" 401 Unauthorized "Unauthorized: $message"
  hdr=()
  [[ -n "$header" ]] && hdr=(-H "$header")
  check "401 $what: delete" 0 curl_tls -sS -X DELETE -o "$tmp/del" -w '%{http_code}' "${hdr[@]}" "$base$free"
  expect_in "401 $what: delete refused" "$tmp/out" 401
done <<EOF
no header||no bearer token: send the header \`Authorization: Bearer <token>\`
Basic scheme|Authorization: Basic YWRtaW46YWRtaW4=|the Authorization header is not \`Bearer <token>\`
Bearer alone|Authorization: Bearer|the Authorization header is not \`Bearer <token>\`
Bearer and blanks|Authorization: Bearer   |the Authorization header has no token after \`Bearer\`
two tokens|Authorization: Bearer $admin $admin|the Authorization header has text after the token
not a token|Authorization: Bearer secret|malformed token: an xpool token looks like xpa_<12 hex digits>.<64 hex digits>
upper-case hex|Authorization: Bearer ${admin^^}|malformed token: an xpool token looks like xpa_<12 hex digits>.<64 hex digits>
unknown token|Authorization: Bearer $unknown|unknown or revoked token 000000000000
wrong secret|Authorization: Bearer ${admin%.*}.${unknown#*.}|unknown or revoked token ${admin:4:12}
wrong role letter|Authorization: Bearer xpr_${admin#xpa_}|unknown or revoked token ${admin:4:12}
EOF
snapshot "$free" "$tmp/free.after"
cmp -s "$tmp/free.before" "$tmp/free.after" || { echo "FAIL a 401 changed the pod"; diff "$tmp/free.before" "$tmp/free.after"; failures=$((failures + 1)); }
raw "scheme is case-insensitive" 200 "Authorization: bearer $admin" "$free"

check "token create a second reader" 0 "$xpool" token create --reader --subject gone --data-dir "$data"
gone=$(cat "$tmp/out")
until_code "second reader works" 200 "$gone" /api/v1/nodes
check "token revoke" 0 "$xpool" token revoke "${gone:4:12}" --data-dir "$data"
expect_in "revoke says so" "$tmp/err" "Revoked token ${gone:4:12}"
until_code "revoked without a restart" 401 "$gone" /api/v1/nodes
expect_status "revoked" 401 Unauthorized "Unauthorized: unknown or revoked token ${gone:4:12}"
check "token list after revoke" 0 "$xpool" token list --data-dir "$data"
expect_count "revoked token not listed" "$tmp/out" 0 "${gone:4:12}"
check "revoke an unknown id" 1 "$xpool" token revoke 000000000000 --data-dir "$data"

# ---- Objects the role tables work on ----
mkdir "$tmp/b"
node_json() { printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}' "$1"; }
pod_json() { printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"i"}]}}' "$1"; }
lease_json() { printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"%s"},"spec":{"holderIdentity":"%s"}}' "$1" "$1"; }
binding_json() { printf '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"%s"},"target":{"kind":"Node","name":"%s"}}' "$1" "$2"; }
node_json n1 >"$tmp/b/node-n1"
node_json n2 >"$tmp/b/node-n2"
node_json n3 >"$tmp/b/node-n3"
pod_json bound >"$tmp/b/pod-bound"
pod_json other >"$tmp/b/pod-other"
pod_json new >"$tmp/b/pod-new"
lease_json n1 >"$tmp/b/lease-n1"
lease_json n2 >"$tmp/b/lease-n2"
binding_json bound n1 >"$tmp/b/bind-bound"
binding_json other n2 >"$tmp/b/bind-other"
binding_json free n1 >"$tmp/b/bind-free"
printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s"},"involvedObject":{"kind":"Node","name":"n1"},"reason":"Test","message":"m","type":"Normal"}' e1 >"$tmp/b/event-e1"
printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s"},"involvedObject":{"kind":"Node","name":"n1"},"reason":"Test","message":"m","type":"Normal"}' e2 >"$tmp/b/event-e2"
printf '{"metadata":{"labels":{"touched":"yes"}}}' >"$tmp/b/label"
printf '{"status":{"phase":"Running"}}' >"$tmp/b/running"
printf '{"spec":{"holderIdentity":"someone"}}' >"$tmp/b/holder"
printf '{"message":"patched"}' >"$tmp/b/event-patch"

P=/api/v1/namespaces/default/pods
L=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
E=/api/v1/namespaces/default/events
req "admin creates n2" 201 "$admin" POST /api/v1/nodes "$tmp/b/node-n2"
req "admin creates bound" 201 "$admin" POST "$P" "$tmp/b/pod-bound"
req "admin creates other" 201 "$admin" POST "$P" "$tmp/b/pod-other"
req "admin binds bound to n1" 201 "$admin" POST "$P/bound/binding" "$tmp/b/bind-bound"
req "admin binds other to n2" 201 "$admin" POST "$P/other/binding" "$tmp/b/bind-other"
req "bound is on n1" 200 "$admin" GET "$P/bound"
expect_in "bound nodeName" "$tmp/out" '"nodeName":"n1"'
req "admin creates lease n2" 201 "$admin" POST "$L" "$tmp/b/lease-n2"
req "admin creates event e1" 201 "$admin" POST "$E" "$tmp/b/event-e1"

# ---- Allowed: role | expected code | method | path | body (file under $tmp/b, or -) ----
while IFS='|' read -r role want method path body; do
  [[ -z "$role" || "$role" == \#* ]] && continue
  [[ "$body" == - ]] && body= || body=$tmp/b/$body
  req "$role may $method $path" "$want" "${!role}" "$method" "$path" "$body"
done <<'EOF'
# reader: every read and the discovery paths
reader|200|GET|/api|-
reader|200|GET|/apis|-
reader|200|GET|/api/v1|-
reader|200|GET|/openapi/v3|-
reader|200|GET|/api/v1/nodes|-
reader|200|GET|/api/v1/nodes/n2|-
reader|200|GET|/api/v1/pods|-
reader|200|GET|/api/v1/namespaces/default/pods/bound|-
reader|200|GET|/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1|-
reader|200|GET|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|-
reader|200|GET|/api/v1/namespaces/default/pods/bound/status|-
# node n1: reads of everything
node|200|GET|/api/v1/nodes/n2|-
node|200|GET|/api/v1/namespaces/default/pods/other|-
node|200|GET|/api/v1/namespaces|-
# its own Node and its status
node|201|POST|/api/v1/nodes|node-n1
node|200|PATCH|/api/v1/nodes/n1|label
node|200|PATCH|/api/v1/nodes/n1/status|running
# its Lease in kube-node-lease
node|201|POST|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases|lease-n1
node|200|PATCH|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1|holder
node|200|GET|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1|-
# events
node|201|POST|/api/v1/namespaces/default/events|event-e2
node|200|PATCH|/api/v1/namespaces/default/events/e1|event-patch
# the status and log of a pod bound to it (no agent serves logs yet: 503 after authorization)
node|200|PATCH|/api/v1/namespaces/default/pods/bound/status|running
node|503|GET|/api/v1/namespaces/default/pods/bound/log|-
# admin: everything
admin|200|PATCH|/api/v1/nodes/n2|label
admin|201|POST|/api/v1/nodes|node-n3
admin|200|DELETE|/api/v1/nodes/n3|-
admin|200|PATCH|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|holder
EOF
req "node n1 status patched" 200 "$admin" GET /api/v1/nodes/n1
expect_in "node n1 status patched: label" "$tmp/out" '"touched":"yes"'
req "a node's status write on its pod takes effect" 200 "$admin" GET "$P/bound"
expect_in "a node's status write on its pod takes effect" "$tmp/out" '"phase":"Running"'
req "node's lease holder" 200 "$admin" GET "$L/n1"
expect_in "node's lease patched" "$tmp/out" '"holderIdentity":"someone"'

# ---- Denied: role | method | path | body | object that must not change | exact message ----
# The object is read by the admin before and after (code and body, resourceVersion included).
n1='User "system:node:n1"'
rd='User "system:reader:ci"'
while IFS='|' read -r role method path body object message; do
  [[ -z "$role" || "$role" == \#* ]] && continue
  [[ "$body" == - ]] && body= || body=$tmp/b/$body
  message=${message//@n1/$n1}
  message=${message//@rd/$rd}
  snapshot "$object" "$tmp/before"
  req "$role may not $method $path" 403 "${!role}" "$method" "$path" "$body"
  expect_status "$role may not $method $path" 403 Forbidden "$message"
  snapshot "$object" "$tmp/after"
  cmp -s "$tmp/before" "$tmp/after" ||
    { echo "FAIL $role $method $path changed $object:"; diff "$tmp/before" "$tmp/after"; failures=$((failures + 1)); }
done <<'EOF'
# reader: no write of any kind
reader|POST|/api/v1/namespaces/default/pods|pod-new|/api/v1/namespaces/default/pods/new|pods is forbidden: @rd cannot create resource "pods" in API group "" in the namespace "default"
reader|PUT|/api/v1/namespaces/default/pods/bound|pod-bound|/api/v1/namespaces/default/pods/bound|pods "bound" is forbidden: @rd cannot update resource "pods" in API group "" in the namespace "default"
reader|PATCH|/api/v1/namespaces/default/pods/bound|label|/api/v1/namespaces/default/pods/bound|pods "bound" is forbidden: @rd cannot patch resource "pods" in API group "" in the namespace "default"
reader|DELETE|/api/v1/namespaces/default/pods/free|-|/api/v1/namespaces/default/pods/free|pods "free" is forbidden: @rd cannot delete resource "pods" in API group "" in the namespace "default"
reader|PATCH|/api/v1/namespaces/default/pods/free/status|running|/api/v1/namespaces/default/pods/free|pods "free" is forbidden: @rd cannot patch resource "pods/status" in API group "" in the namespace "default"
reader|POST|/api/v1/namespaces/default/pods/free/binding|bind-free|/api/v1/namespaces/default/pods/free|pods "free" is forbidden: @rd cannot create resource "pods/binding" in API group "" in the namespace "default"
reader|DELETE|/api/v1/nodes/n2|-|/api/v1/nodes/n2|nodes "n2" is forbidden: @rd cannot delete resource "nodes" in API group "" at the cluster scope
reader|DELETE|/api/v1/namespaces/default|-|/api/v1/namespaces/default|namespaces "default" is forbidden: @rd cannot delete resource "namespaces" in API group "" at the cluster scope
reader|PATCH|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|holder|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|leases.coordination.k8s.io "n2" is forbidden: @rd cannot patch resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease"
# node n1: other nodes, deleting nodes
node|POST|/api/v1/nodes|node-n3|/api/v1/nodes/n3|nodes "n3" is forbidden: @n1 cannot create resource "nodes" in API group "" at the cluster scope
node|PATCH|/api/v1/nodes/n2|label|/api/v1/nodes/n2|nodes "n2" is forbidden: @n1 cannot patch resource "nodes" in API group "" at the cluster scope
node|PUT|/api/v1/nodes/n2|node-n2|/api/v1/nodes/n2|nodes "n2" is forbidden: @n1 cannot update resource "nodes" in API group "" at the cluster scope
node|PATCH|/api/v1/nodes/n2/status|running|/api/v1/nodes/n2|nodes "n2" is forbidden: @n1 cannot patch resource "nodes/status" in API group "" at the cluster scope
node|DELETE|/api/v1/nodes/n1|-|/api/v1/nodes/n1|nodes "n1" is forbidden: @n1 cannot delete resource "nodes" in API group "" at the cluster scope
node|DELETE|/api/v1/nodes/n2|-|/api/v1/nodes/n2|nodes "n2" is forbidden: @n1 cannot delete resource "nodes" in API group "" at the cluster scope
# other leases, its lease elsewhere
node|PATCH|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|holder|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|leases.coordination.k8s.io "n2" is forbidden: @n1 cannot patch resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease"
node|DELETE|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|-|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2|leases.coordination.k8s.io "n2" is forbidden: @n1 cannot delete resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease"
node|POST|/apis/coordination.k8s.io/v1/namespaces/default/leases|lease-n1|/apis/coordination.k8s.io/v1/namespaces/default/leases/n1|leases.coordination.k8s.io "n1" is forbidden: @n1 cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default"
# events: no delete
node|DELETE|/api/v1/namespaces/default/events/e1|-|/api/v1/namespaces/default/events/e1|events "e1" is forbidden: @n1 cannot delete resource "events" in API group "" in the namespace "default"
# pods: no create, no spec writes, no binding; status and delete only when bound to n1 (a node's
# refused create names the object, as the server reads the name for its Node and Lease rules)
node|POST|/api/v1/namespaces/default/pods|pod-new|/api/v1/namespaces/default/pods/new|pods "new" is forbidden: @n1 cannot create resource "pods" in API group "" in the namespace "default"
node|PATCH|/api/v1/namespaces/default/pods/bound|label|/api/v1/namespaces/default/pods/bound|pods "bound" is forbidden: @n1 cannot patch resource "pods" in API group "" in the namespace "default"
node|PUT|/api/v1/namespaces/default/pods/bound|pod-bound|/api/v1/namespaces/default/pods/bound|pods "bound" is forbidden: @n1 cannot update resource "pods" in API group "" in the namespace "default"
node|POST|/api/v1/namespaces/default/pods/free/binding|bind-free|/api/v1/namespaces/default/pods/free|pods "free" is forbidden: @n1 cannot create resource "pods/binding" in API group "" in the namespace "default"
node|PATCH|/api/v1/namespaces/default/pods/free/status|running|/api/v1/namespaces/default/pods/free|pods "free" is forbidden: @n1 may only access pods bound to node "n1"
node|PATCH|/api/v1/namespaces/default/pods/other/status|running|/api/v1/namespaces/default/pods/other|pods "other" is forbidden: @n1 may only access pods bound to node "n1"
node|PUT|/api/v1/namespaces/default/pods/other/status|pod-other|/api/v1/namespaces/default/pods/other|pods "other" is forbidden: @n1 may only access pods bound to node "n1"
node|DELETE|/api/v1/namespaces/default/pods/free|-|/api/v1/namespaces/default/pods/free|pods "free" is forbidden: @n1 may only access pods bound to node "n1"
node|DELETE|/api/v1/namespaces/default/pods/other|-|/api/v1/namespaces/default/pods/other|pods "other" is forbidden: @n1 may only access pods bound to node "n1"
node|DELETE|/api/v1/namespaces/default|-|/api/v1/namespaces/default|namespaces "default" is forbidden: @n1 cannot delete resource "namespaces" in API group "" at the cluster scope
EOF

# The logs of another node's pod: refused (a read, so only the start of the message is fixed).
req "node may not read other's log" 403 "$node" GET "$P/other/log"
expect_in "other's log refused" "$tmp/out" '"message":"pods \"other\" is forbidden: User \"system:node:n1\" '
req "node may not read an unbound pod's log" 403 "$node" GET "$P/free/log"
# A pod that is not there (deleted meanwhile) is NotFound for a node, as the kubelet gets from
# Kubernetes: a node may read every pod, so it learns nothing, and it can tell "gone" from "refused".
req "a node's status write of a missing pod" 404 "$node" PATCH "$P/missing/status" "$tmp/b/running"
expect_status "a node's status write of a missing pod" 404 NotFound 'pods "missing" not found'
req "a node's delete of a missing pod" 404 "$node" DELETE "$P/missing"
expect_status "a node's delete of a missing pod" 404 NotFound 'pods "missing" not found'
req "the missing pod stays missing" 404 "$admin" GET "$P/missing"
# A node token cannot name another node through the body of a create.
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","name":"n3"}}' >"$tmp/b/dup"
req "duplicate names in a create" 403 "$node" POST /api/v1/nodes "$tmp/b/dup"
req "n3 does not exist" 404 "$admin" GET /api/v1/nodes/n3
# A status write of its own pod keeps the binding.
req "node may PUT its pod's status" 200 "$admin" GET "$P/bound"
sed 's/"nodeName":"n1"/"nodeName":"n2"/; s/"phase":"[A-Za-z]*"/"phase":"Succeeded"/' "$tmp/out" >"$tmp/b/bound-moved"
req "node PUTs its pod's status" 200 "$node" PUT "$P/bound/status" "$tmp/b/bound-moved"
req "status write kept the binding" 200 "$admin" GET "$P/bound"
expect_in "status write kept the binding" "$tmp/out" '"nodeName":"n1"'
expect_in "status PUT of its pod takes effect" "$tmp/out" '"phase":"Succeeded"'
# And it may delete its own pod, and then nothing is left to refuse but NotFound-by-403.
req "node deletes its bound pod" 200 "$node" DELETE "$P/bound"
req "bound is gone" 404 "$admin" GET "$P/bound"
req "admin deletes free" 200 "$admin" DELETE "$free"

# ---- Body size: 413 for a 4 MiB body, nothing created ----
head -c $((4 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$tmp/big.json"
req "4 MiB body" 413 "$admin" POST "$P" "$tmp/big.json"
expect_in "413 reason" "$tmp/out" '"reason":"RequestEntityTooLarge"'
req "nothing but other after the 413" 200 "$admin" GET "$P"
expect_in "other is left" "$tmp/out" '"name":"other"'
expect_count "no new pod" "$tmp/out" 0 '"name":"new"'

# ---- kubectl over TLS: the admin kubeconfig, and a reader token ----
if command -v kubectl >/dev/null; then
  kc() { env -u KUBECONFIG HOME="$home" kubectl "$@"; }
  check "kubectl get ns (admin kubeconfig)" 0 kc --kubeconfig "$data/admin.kubeconfig" get ns
  expect_in "kubectl lists default" "$tmp/out" "default "
  check "kubectl get pods (reader)" 0 kc --server "$base" --certificate-authority "$ca" --token "$reader" get pods -o name
  expect_in "kubectl reader sees other" "$tmp/out" "pod/other"
  check "kubectl without the CA" 1 kc --server "$base" --token "$reader" get pods
  expect_in "kubectl without the CA: unknown authority" "$tmp/err" "certificate signed by unknown authority"
  check "kubectl unknown token" 1 kc --server "$base" --certificate-authority "$ca" --token "$unknown" get pods
  expect_in "kubectl unknown token" "$tmp/err" "Unauthorized"
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: kk, namespace: default}\nspec:\n  containers: [{name: c, image: i}]\n' >"$tmp/kk.yaml"
  check "kubectl apply (reader)" 1 kc --server "$base" --certificate-authority "$ca" --token "$reader" apply -f "$tmp/kk.yaml"
  expect_in "kubectl apply is Forbidden" "$tmp/err" 'Error from server (Forbidden): error when creating "'"$tmp/kk.yaml"'": pods is forbidden: User "system:reader:ci" cannot create resource "pods" in API group "" in the namespace "default"'
  req "kubectl apply created nothing" 404 "$admin" GET "$P/kk"
else
  echo "SKIP kubectl checks: kubectl is not installed"
fi

# ---- The admin kubeconfig across restarts ----
first_admin=$admin
stop_server TERM
start_server second --tls-san xpool.test
[[ "$admin" == "$first_admin" ]] || { echo "FAIL the admin token changed across a restart"; failures=$((failures + 1)); }
[[ "$(stat -c %a "$data/admin.kubeconfig")" == 600 ]] || { echo "FAIL admin.kubeconfig not 0600 after a restart"; failures=$((failures + 1)); }
expect_in "kubeconfig has the new URL" "$data/admin.kubeconfig" "server: $base"
req "admin still works" 200 "$admin" GET "$P/other"
req "reader still works" 200 "$reader" GET "$P/other"
port=${base##*:}
check "--tls-san name verified" 0 curl -fsS --cacert "$ca" --resolve "xpool.test:$port:127.0.0.1" -o /dev/null "https://xpool.test:$port/version"
check "a name not in the certificate" 60 curl -sS --cacert "$ca" --resolve "other.test:$port:127.0.0.1" -o /dev/null "https://other.test:$port/version"

stop_server TERM
rm "$data/admin.kubeconfig"
start_server third
[[ -n "$admin" && "$admin" != "$first_admin" ]] || { echo "FAIL a deleted kubeconfig got the same token"; failures=$((failures + 1)); }
[[ "$(stat -c %a "$data/admin.kubeconfig")" == 600 ]] || { echo "FAIL the new admin.kubeconfig is not 0600"; failures=$((failures + 1)); }
req "the new admin token works" 200 "$admin" GET "$P/other"

# Its token revoked, the next start writes another one; the revoked one is refused.
revoked=$admin
check "revoke the kubeconfig's token" 0 "$xpool" token revoke "${revoked:4:12}" --data-dir "$data"
until_code "the revoked admin token is refused" 401 "$revoked" /api/v1/nodes
stop_server TERM
start_server fourth
[[ -n "$admin" && "$admin" != "$revoked" ]] || { echo "FAIL a revoked kubeconfig token was kept"; failures=$((failures + 1)); }
req "the replacement admin token works" 200 "$admin" GET "$P/other"

# --kubeconfig FILE puts it elsewhere, also 0600.
stop_server TERM
kubeconfig=$tmp/elsewhere/admin.kubeconfig
mkdir -p "$tmp/elsewhere"
start_server fifth --kubeconfig "$kubeconfig"
[[ "$(stat -c %a "$kubeconfig")" == 600 ]] || { echo "FAIL --kubeconfig file is not 0600"; failures=$((failures + 1)); }
req "--kubeconfig token works" 200 "$admin" GET "$P/other"
stop_server TERM
kubeconfig=

# ---- Usage errors ----
check "--tls-cert without --tls-key" 2 "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --tls-cert "$ca"
expect_in "--tls-cert without --tls-key message" "$tmp/err" "--tls-cert and --tls-key go together"
check "--tls-key without --tls-cert" 2 "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --tls-key "$data/pki/ca.key"
expect_in "--tls-key without --tls-cert message" "$tmp/err" "--tls-cert and --tls-key go together"
check "--no-tls with --tls-cert" 2 "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --no-tls --tls-cert "$data/pki/server.crt" --tls-key "$data/pki/server.key"
expect_in "--no-tls with --tls-cert message" "$tmp/err" "--no-tls contradicts --tls-cert and --tls-key"

# ---- --no-tls serves plain HTTP, still with tokens ----
start_server plain --no-tls
expect_in "listening on http" "$tmp/plain.log" "xpool server listening on http://127.0.0.1:"
raw "http /version" 200 "" /version
raw "http no token" 401 "" "$P"
req "http admin" 200 "$admin" GET "$P/other"
expect_in "kubeconfig says http" "$data/admin.kubeconfig" "server: $base"
check "no TLS on the plain port" 35 curl -sS --cacert "$ca" -o /dev/null "${base/http/https}/version"
stop_server TERM

# ---- --tls-cert/--tls-key: a certificate made with openssl ----
if command -v openssl >/dev/null; then
  own=$tmp/own
  mkdir "$own"
  check "openssl CA" 0 openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$own/ca.key" -out "$own/ca.crt" -days 2 -subj /CN=test-ca
  check "openssl server key and request" 0 openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$own/server.key" -out "$own/server.csr" -subj /CN=127.0.0.1
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$own/ext"
  check "openssl sign" 0 openssl x509 -req -in "$own/server.csr" -CA "$own/ca.crt" -CAkey "$own/ca.key" \
    -CAcreateserial -out "$own/server.crt" -days 2 -extfile "$own/ext"
  cacert=$own/ca.crt
  start_server own --tls-cert "$own/server.crt" --tls-key "$own/server.key"
  check "own certificate verified with its CA" 0 curl -fsS --cacert "$own/ca.crt" -o /dev/null "$base/version"
  check "own certificate not from the generated CA" 60 curl -sS --cacert "$ca" -o /dev/null "$base/version"
  req "own certificate: admin works" 200 "$admin" GET "$P/other"
  expect_count "kubeconfig carries no CA data" "$data/admin.kubeconfig" 0 "certificate-authority-data"
  stop_server TERM
  cacert=$ca

  check "openssl another key" 0 openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$own/other.key"
  check "a key that is not the certificate's" 1 "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" \
    --tls-cert "$own/server.crt" --tls-key "$own/other.key"
  expect_in "mismatch names the file" "$tmp/err" "$own/"
  echo "not a certificate" >"$own/junk.crt"
  check "a certificate that does not parse" 1 "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" \
    --tls-cert "$own/junk.crt" --tls-key "$own/server.key"
  expect_in "junk names the file" "$tmp/err" "$own/junk.crt"
  check "a missing key file" 1 "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" \
    --tls-cert "$own/server.crt" --tls-key "$own/nope.key"
  expect_in "missing key names the file" "$tmp/err" "$own/nope.key"
else
  echo "SKIP --tls-cert/--tls-key checks: openssl is not installed"
fi
finish "security"
