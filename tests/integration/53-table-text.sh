#!/usr/bin/env bash
# A list's Table (kubectl get) built from the store's text less what no row reads is the same
# Table, byte for byte, as the general path builds from whole objects: pods (one namespace and
# all, with volumes, tolerations and affinity the decode leaves out), nodes and events, each with
# ?includeObject None and Metadata (managedFields kept), selectors and a page. The general path
# answers ?resourceVersionMatch=Exact at the version the first Table has.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid=
base=
trap '[[ -z "$server_pid" ]] || kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data" --no-scheduler
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
table='application/json;as=Table;v=v1;g=meta.k8s.io,application/json'
api() { # method, path [, body]: the answer in $tmp/out
  local args=(-sS --max-time 20 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token"
    -H "Accept: $table" -o "$tmp/out" -X "$1")
  [[ -z "${3:-}" ]] || args+=(-H 'Content-Type: application/json' --data-binary "$3")
  command curl "${args[@]}" "$base$2"
}

pod() { # namespace, name, node
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"%s","labels":{"app":"%s"},"annotations":{"note":"a\\"]}b"}},' "$2" "$1" "$2"
  printf '"spec":{"nodeName":"%s","containers":[{"name":"c","image":"busybox"}],' "$3"
  printf '"volumes":[{"name":"v","emptyDir":{}}],"tolerations":[{"key":"k","operator":"Exists"}],'
  printf '"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,'
  printf '"preference":{"matchExpressions":[{"key":"z","operator":"In","values":["a"]}]}}]}}}}'
}
api POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}'
# the pods are bound to n1 and n2: Nodes of those names, or the pod garbage collector deletes
# them as orphans 40 s in, and a run that long at load 30 counted fewer pods below (n1's label
# "\u00e9t\u00e9" was refused as no label value, so n1 was never there: the text is an annotation's)
api POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"zone":"ete"},"annotations":{"zone":"\u00e9t\u00e9"}}}'
api POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"}}'
api GET /api/v1/nodes
expect_count "both Nodes in the Table" "$tmp/out" 1 '"name":"n1"'
expect_count "... n2 too" "$tmp/out" 1 '"name":"n2"'
for i in 1 2 3; do
  api POST /api/v1/namespaces/default/pods "$(pod default "p$i" n1)"
  api POST /api/v1/namespaces/team/pods "$(pod team "q$i" n2)"
done
api POST /api/v1/namespaces/default/events \
  '{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"p1","namespace":"default"},"reason":"Tested","message":"caf\u00e9 \u2603","type":"Normal"}'
api GET /api/v1/pods
expect_count "all six pods in the Table" "$tmp/out" 1 '"name":"q3"'

ages() { sed -E 's/"[0-9]+[smhdy]([0-9]+[smh])?"/"AGE"/g' "$1"; }
same() { # name, path with its query (may be empty after ?)
  local rv
  api GET "$2"
  cp "$tmp/out" "$tmp/text.json"
  rv=$(grep -o '"resourceVersion":"[0-9]*"' "$tmp/text.json" | head -1 | cut -d'"' -f4)
  [[ -n "$rv" ]] || { echo "FAIL $1: no Table:"; cat "$tmp/text.json"; failures=$((failures + 1)); return; }
  api GET "$2&resourceVersion=$rv&resourceVersionMatch=Exact"
  if [[ "$(ages "$tmp/text.json")" != "$(ages "$tmp/out")" ]]; then
    echo "FAIL $1: the Tables differ:"; cat "$tmp/text.json"; echo; cat "$tmp/out"; echo
    failures=$((failures + 1))
  fi
}

for include in None Metadata ''; do
  q="?includeObject=$include"
  [[ -n "$include" ]] || q='?x=1'
  same "pods $include" "/api/v1/namespaces/default/pods$q"
  same "pods -A $include" "/api/v1/pods$q"
  same "nodes $include" "/api/v1/nodes$q"
  same "events -A $include" "/api/v1/events$q"
  same "pods by label $include" "/api/v1/pods$q&labelSelector=app%3Dq2"
  same "pods by field $include" "/api/v1/pods$q&fieldSelector=spec.nodeName%3Dn1"
  same "a page of pods $include" "/api/v1/pods$q&limit=4"
done
api GET /api/v1/pods
expect_in "rows' metadata is whole" "$tmp/out" '"managedFields"'
not_in() { if grep -qF -- "$3" "$2"; then echo "FAIL $1"; failures=$((failures + 1)); fi; }
api GET '/api/v1/pods?includeObject=None'
not_in "no object with None" "$tmp/out" '"object"'
api GET '/api/v1/pods?limit=4'
expect_in "a page goes on" "$tmp/out" '"continue"'
expect_in "a page counts the rest" "$tmp/out" '"remainingItemCount":2'
api GET '/api/v1/pods?includeObject=Object'
expect_in "Object rows are whole" "$tmp/out" '"tolerations"'
finish "table text"
