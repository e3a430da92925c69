#!/usr/bin/env bash
# A strategic PATCH of a Deployment through `xpool server` alone (review32 M1: the update's decode
# by reference let the Deployment's defaults write into the request's patch and the stored
# object): the answer has the new init container with its defaults and reads as a GET then does;
# the same PATCH again changes nothing (no new generation, and no new version of its own: the
# workload controller's status writes may land between, so a version is compared a few times).
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid=
trap '[[ -z "$server_pid" ]] || kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

start_server "$data"
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
url=$base/apis/apps/v1/namespaces/default/deployments
api() { # method, url, content type, body file: the answer in $tmp/out
  check "$1 $2" 0 curl -fsS --max-time 60 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" \
    -X "$1" -H "Content-Type: $3" --data-binary "@$4" "$2"
}
field() { # file, python expression on the object o
  /usr/bin/python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
spec_of() { field "$1" 'json.dumps(o["spec"], sort_keys=True)'; }

cat >"$tmp/d.json" <<'JSON'
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":0,
 "selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
 "spec":{"containers":[{"name":"c","image":"web:1"}]}}}}
JSON
cat >"$tmp/patch.json" <<'JSON'
{"spec":{"template":{"spec":{"initContainers":[{"name":"init","image":"init:1"}]}}}}
JSON
api POST "$url" application/json "$tmp/d.json"

api PATCH "$url/web" application/strategic-merge-patch+json "$tmp/patch.json"
cp "$tmp/out" "$tmp/first"
[[ $(field "$tmp/first" 'o["spec"]["template"]["spec"]["initContainers"][0]["imagePullPolicy"]') == IfNotPresent ]] ||
  { echo "FAIL the init container has no defaults"; cat "$tmp/first"; exit 1; }
[[ $(field "$tmp/first" 'o["metadata"]["generation"]') == 2 ]] ||
  { echo "FAIL the first PATCH is not generation 2"; cat "$tmp/first"; exit 1; }
check "GET" 0 curl -fsS --max-time 60 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" "$url/web"
[[ $(spec_of "$tmp/out") == "$(spec_of "$tmp/first")" ]] ||
  { echo "FAIL the stored spec is not the PATCH's answer"; diff <(spec_of "$tmp/first") <(spec_of "$tmp/out"); exit 1; }
echo "ok first PATCH answered and stored the same spec"

unchanged=
for attempt in 1 2 3 4 5; do
  check "GET before again $attempt" 0 curl -fsS --max-time 60 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" "$url/web"
  before=$(field "$tmp/out" 'o["metadata"]["resourceVersion"]')
  api PATCH "$url/web" application/strategic-merge-patch+json "$tmp/patch.json"
  [[ $(spec_of "$tmp/out") == "$(spec_of "$tmp/first")" ]] ||
    { echo "FAIL the same PATCH again answers another spec"; diff <(spec_of "$tmp/first") <(spec_of "$tmp/out"); exit 1; }
  [[ $(field "$tmp/out" 'o["metadata"]["generation"]') == 2 ]] ||
    { echo "FAIL the same PATCH again made a new generation"; cat "$tmp/out"; exit 1; }
  if [[ $(field "$tmp/out" 'o["metadata"]["resourceVersion"]') == "$before" ]]; then
    unchanged=1
    break
  fi
done
[[ -n $unchanged ]] || { echo "FAIL the same PATCH again wrote a new version in 5 of 5 tries"; exit 1; }
echo "ok the same PATCH again changes nothing"
finish "deployment patch"
