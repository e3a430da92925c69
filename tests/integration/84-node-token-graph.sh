#!/usr/bin/env bash
# A node's TokenRequest bound to a pod, as the agent makes it (src/agent/podconfig_token.c: its
# node token, boundObjectRef with the pod's name and uid), end to end against `xpool server`: the
# server reads a bound pod from the node authorizer's graph (xp_node_graph_pod()) and an unbound
# one from the store (api_token.c, read_pod()). Each row is asked right after the write that
# changes its answer (the graph catches up before it answers: no wait in between):
#   right uid 201 (claims: the pod's name and uid, the account's name and uid), wrong uid 409,
#   another account 400, deleted pod 404, the pod made again with another account (400 for the
#   old account, 201 for the new), the old uid after that 409, the pod made again on another
#   node 403, then again on this node 201, an unbound pod 403, then bound to this node 201.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
data=$tmp/data
ca=$data/pki/ca.crt
server_pid=
trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

# no agent renews the nodes' leases: a long grace keeps the node lifecycle away from their pods
start_server "$data" --node-monitor-grace-period 1h
admin=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
check "a node token for n1" 0 "$xpool" token create --node n1 --data-dir "$data"
node=$(cat "$tmp/out")

# call NAME WANT TOKEN METHOD PATH [BODY]: the answer in $tmp/out, its code checked
call() {
  local name=$1 want=$2 tok=$3 method=$4 path=$5 body=${6:-} got
  local args=(-sS --cacert "$ca" -X "$method" -o "$tmp/out" -w '%{http_code}' -H "Authorization: Bearer $tok")
  [[ -n "$body" ]] && args+=(-H "Content-Type: application/json" --data-binary "$body")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed"
  [[ "$got" == "$want" ]] || { echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1)); }
}
# the server rereads its tokens file within a second: n1's token is taken once it lists nodes
node_lists_nodes() { curl -sS --cacert "$ca" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $node" "$base/api/v1/nodes" | grep -q 200; }
wait_for "n1's token is taken" 60 node_lists_nodes

P=/api/v1/namespaces/default/pods
# Nodes n1 and n2 exist (the pod GC removes pods of a node that does not); the pods name a
# scheduler that is not the server's, so that only the bindings below place them.
for n in n1 n2; do
  call "node $n" 201 "$admin" POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"'"$n"'"}}'
done
for sa in web db; do
  call "service account $sa" 201 "$admin" POST /api/v1/namespaces/default/serviceaccounts \
    '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"'"$sa"'"}}'
done
uid_of() { # path: the object's metadata.uid as the admin reads it
  curl -sS --cacert "$ca" -H "Authorization: Bearer $admin" "$base$1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["uid"])'
}
web_uid=$(uid_of /api/v1/namespaces/default/serviceaccounts/web)
db_uid=$(uid_of /api/v1/namespaces/default/serviceaccounts/db)
make_pod() { # name, account: an unbound pod; its uid in $tmp/uid
  call "pod $1 of $2" 201 "$admin" POST "$P" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'"$1"'"},"spec":{"schedulerName":"nobody","serviceAccountName":"'"$2"'","containers":[{"name":"c","image":"busybox"}]}}'
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"]["uid"])' "$tmp/out" >"$tmp/uid"
}
bind_pod() { # name, node
  call "bind $1 to $2" 201 "$admin" POST "$P/$1/binding" '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"'"$1"'"},"target":{"kind":"Node","name":"'"$2"'"}}'
}
delete_pod() { # name: at once (no kubelet here confirms a graceful deletion)
  call "delete $1" 200 "$admin" DELETE "$P/$1" '{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}'
}
# token NAME WANT ACCOUNT POD [UID]: n1's TokenRequest, the agent's body; the answer in $tmp/out
token() {
  local body
  body=$(printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600,"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"%s","uid":"%s"}}}' "$4" "${5:-}")
  call "$1" "$2" "$node" POST "/api/v1/namespaces/default/serviceaccounts/$3/token" "$body"
}
# claims NAME POD POD_UID ACCOUNT ACCOUNT_UID: the token in $tmp/out speaks for that account and
# is bound to that pod (its JWT payload, decoded)
claims() {
  python3 - "$tmp/out" >"$tmp/claims" 2>&1 <<'PY' || true
import base64, json, sys
tok = json.load(open(sys.argv[1]))["status"]["token"]
p = tok.split(".")[1]
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
k = c["kubernetes.io"]
print(c["sub"], k["serviceaccount"]["name"], k["serviceaccount"]["uid"], k["pod"]["name"], k["pod"]["uid"])
PY
  expect_exact "$1: the claims" "$tmp/claims" "system:serviceaccount:default:$4 $4 $5 $2 $3"
}
# message NAME TEXT: the refusal says why (tells one refusal from another of the same code)
message() { expect_in "$1: why" "$tmp/out" "$2"; }

# ---- a pod of web bound to n1 ---------------------------------------------------------------------
make_pod p1 web
p1_uid=$(cat "$tmp/uid")
bind_pod p1 n1
# a pod bound to n1 gets n1 its token, right after the bind (a pod the graph has not caught up
# with is read from the store, bound too: a stale graph shows in the rows after the delete below)
token "right uid, right after the bind" 201 web p1 "$p1_uid"
# the token is the bound pod's: its uid as the graph keeps it, and the account it was asked for
claims "right uid" p1 "$p1_uid" web "$web_uid"
# the graph keeps the uid: another one is a pod deleted and made again (kube-apiserver's 409)
token "wrong uid" 409 web p1 "00000000-0000-0000-0000-000000000000"
message "wrong uid" "the UID in the bound object reference (00000000-0000-0000-0000-000000000000) does not match"
# the graph keeps the pod's account: a token of another account is not bound to it
token "another service account" 400 db p1 "$p1_uid"
message "another service account" 'cannot bind token for serviceaccount \"db\" to pod running with different serviceaccount name.'

# ---- deleted, then made again with another account ------------------------------------------------
delete_pod p1
# the graph catches up with the delete before it answers: no token for a pod that is gone (a
# graph that answers from what it had says 201, and every row below goes wrong too)
token "deleted pod, right after the delete" 404 web p1 "$p1_uid"
message "deleted pod" 'pods \"p1\" not found'
make_pod p1 db
p1_new=$(cat "$tmp/uid")
bind_pod p1 n1
# the graph has the new pod's account, not the old one's: the old account is refused, the new one
# gets a token naming the new uid
token "recreated: the old account" 400 web p1
message "recreated: the old account" 'cannot bind token for serviceaccount \"web\"'
token "recreated: the new account" 201 db p1 "$p1_new"
claims "recreated: the new account" p1 "$p1_new" db "$db_uid"
# the graph has the new uid: the agent's request for the pod it ran before is refused
token "the old uid after the recreate" 409 db p1 "$p1_uid"

# ---- made again on n2 -----------------------------------------------------------------------------
delete_pod p1
make_pod p1 db
p1_n2=$(cat "$tmp/uid")
bind_pod p1 n2
# the graph has the pod on n2: n1 may not have its token, even with its uid (a graph keeping n1's
# old entry of the pod says 400 or 409)
token "rebound to n2: by name" 403 db p1
message "rebound to n2" 'may only request tokens bound to pods on node \"n1\"'
token "rebound to n2: with its uid" 403 db p1 "$p1_n2"
# the admin's TokenRequest reads the same pods: the one on n2 is there for it
call "the admin's token for the pod on n2" 201 "$admin" POST /api/v1/namespaces/default/serviceaccounts/db/token \
  '{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p1","uid":"'"$p1_n2"'"}}}'
claims "the admin's token" p1 "$p1_n2" db "$db_uid"
# and made again on n1: the graph has it back on n1 right after the bind (a graph that kept the
# pod on n2 says 403; one that kept an older entry says 400 or 409)
delete_pod p1
make_pod p1 db
p1_back=$(cat "$tmp/uid")
bind_pod p1 n1
token "back on n1, right after the bind" 201 db p1 "$p1_back"
claims "back on n1" p1 "$p1_back" db "$db_uid"

# ---- an unbound pod, then bound to n1 -------------------------------------------------------------
make_pod p2 web
p2_uid=$(cat "$tmp/uid")
# not in the graph (no node): read from the store, and on no node, so not n1's (a server that
# reads the graph only says 404 "not found")
token "unbound pod" 403 web p2 "$p2_uid"
message "unbound pod" 'may only request tokens bound to pods on node \"n1\"'
bind_pod p2 n1
# on n1 now: its token at once, bound to the pod's uid
token "then bound to n1, right after the bind" 201 web p2 "$p2_uid"
claims "then bound to n1" p2 "$p2_uid" web "$web_uid"


finish "node token graph"
