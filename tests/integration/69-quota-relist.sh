#!/usr/bin/env bash
# ResourceQuota admission and status while the quota's running usage is listed again beside
# creates (issue 18): `xpool server` keeps a log of 1 write (trimmed every 16), so the writes of a churning
# ConfigMap push the pod writes out of it between checks and each check lists the namespace's
# pods again (outside its lock; XPOOL_DEBUG=quota logs each list). Four clients create GPU pods
# against a quota of 3 GPUs at the same time, deleting each one admitted but their last, while the
# quota's status is read. Then:
# - every create is admitted (201) or refused (403) with Kubernetes' message at 3 of 3 used;
# - status never shows a usage below 0 or above 3, and settles on the pods left;
# - with those gone, exactly 3 of 4 creates are admitted again: nothing charged twice or lost.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
server_pid=
base=
bg_pids=()
stop_bg() {
  local p
  for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bg_pids=()
}
trap 'stop_bg; [[ -z "$server_pid" ]] || kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

XPOOL_DEBUG=quota start_server "$data" --event-history 1
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=60s)
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
api() { # method, path, [curl args...]: the body on stdout, then the HTTP code on a line
  local method=$1 path=$2
  shift 2
  curl -sS --max-time 60 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" \
    -X "$method" -w '\n%{http_code}\n' "$@" "$base$path"
}
gpu_pod() { # name
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}' "$1"
}
create_pod() { # name: the HTTP code of its create; the body in $tmp/bodies/NAME
  api POST /api/v1/namespaces/default/pods -H 'Content-Type: application/json' \
    --data-binary "$(gpu_pod "$1")" >"$tmp/bodies/$1" 2>&1 || true
  tail -n 1 "$tmp/bodies/$1"
}
used_gpus() { "${k[@]}" get quota gpus -o 'jsonpath={.status.used.requests\.nvidia\.com/gpu}'; }
mkdir -p "$tmp/bodies"

check "create quota" 0 "${k[@]}" create quota gpus --hard=requests.nvidia.com/gpu=3
check "other namespace" 0 "${k[@]}" create namespace other
check "churned configmap" 0 "${k[@]}" create configmap churn -n other --from-literal=n=0

# ---- creates, deletes, unrelated writes and status reads at the same time --------------------
ROUNDS=12
creator() { # id: ROUNDS creates, each admitted one deleted again but the last
  local id=$1 i code
  for ((i = 1; i <= ROUNDS; i++)); do
    code=$(create_pod "c$id-$i")
    echo "c$id-$i $code" >>"$tmp/codes.$id"
    if [[ "$code" == 201 && $i -lt $ROUNDS ]]; then
      api DELETE "/api/v1/namespaces/default/pods/c$id-$i?gracePeriodSeconds=0" >"$tmp/delete.$id" 2>&1 || true
      tail -n 1 "$tmp/delete.$id" >>"$tmp/deletes"
    fi
  done
}
churn() { # ConfigMap writes that push the pod writes out of the server's log (bounded)
  local i
  for ((i = 1; i <= 5000; i++)); do
    [[ -e "$tmp/creators-done" ]] && return 0
    api PATCH /api/v1/namespaces/other/configmaps/churn -H 'Content-Type: application/merge-patch+json' \
      --data-binary "{\"data\":{\"n\":\"$i\"}}" >/dev/null 2>&1 || true
  done
}
reader() { # the quota's status as clients see it, until the creators are done (bounded)
  local i
  for ((i = 1; i <= 2000; i++)); do
    [[ -e "$tmp/creators-done" ]] && return 0
    api GET /api/v1/namespaces/default/resourcequotas/gpus 2>/dev/null |
      grep -o '"used":{"requests.nvidia.com/gpu":"[^"]*"}' >>"$tmp/samples" || true
  done
}
for _ in 1 2 3; do
  churn &
  bg_pids+=($!)
done
reader &
bg_pids+=($!)
creators=()
for id in 1 2 3 4; do
  creator "$id" &
  creators+=($!)
done
for p in "${creators[@]}"; do wait "$p" || true; done
touch "$tmp/creators-done"
stop_bg

cat "$tmp"/codes.* >"$tmp/codes"
expect_count "every create answered" "$tmp/codes" $((4 * ROUNDS)) " "
bad=$(grep -cvE ' (201|403)$' "$tmp/codes" || true)
[[ "$bad" -eq 0 ]] || { echo "FAIL creates neither admitted nor refused:"; grep -vE ' (201|403)$' "$tmp/codes"; failures=$((failures + 1)); }
admitted=$(grep -c ' 201$' "$tmp/codes" || true)
refused=$(grep -c ' 403$' "$tmp/codes" || true)
echo "creates: $admitted admitted, $refused refused"
[[ "$admitted" -ge 3 ]] || { echo "FAIL only $admitted creates admitted"; failures=$((failures + 1)); }
full='exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=3'
for name in $(grep ' 403$' "$tmp/codes" | cut -d' ' -f1); do
  grep -qF "pods \\\"$name\\\" is forbidden: $full" "$tmp/bodies/$name" ||
    { echo "FAIL $name refused with another message:"; cat "$tmp/bodies/$name"; failures=$((failures + 1)); }
done
if [[ -s "$tmp/deletes" ]] && grep -qvE '^200$' "$tmp/deletes"; then
  echo "FAIL deletes not answered 200:"; sort "$tmp/deletes" | uniq -c; failures=$((failures + 1))
fi

# status: read while all that ran, always within 0..3
[[ -s "$tmp/samples" ]] || { echo "FAIL no status read while the creates ran"; failures=$((failures + 1)); }
out_of_range=$(grep -cvE '"requests.nvidia.com/gpu":"[0-3]"' "$tmp/samples" || true)
[[ "$out_of_range" -eq 0 ]] || { echo "FAIL status outside 0..3:"; sort "$tmp/samples" | uniq -c; failures=$((failures + 1)); }
echo "status read $(wc -l <"$tmp/samples") times: $(sort "$tmp/samples" | uniq -c | tr -s ' \n' ' ')"

# the running usage was listed again while the creates ran (the first list is list 1)
relists=$(grep -c 'quota: the pods of default listed at version [0-9]* (list \([2-9]\|[1-9][0-9]\)' "$tmp/server.log" || true)
echo "relists of default's pods: $relists"
[[ "$relists" -ge 1 ]] || { echo "FAIL the pods were never listed again"; failures=$((failures + 1)); }

# ---- what is left: status settles on it, and admission counts from it ----------------------
left=$("${k[@]}" get pods --no-headers 2>/dev/null | wc -l)
[[ "$left" -le 3 ]] || { echo "FAIL $left pods left, more than the quota's 3"; failures=$((failures + 1)); }
poll "status counts the pods left" 60 "$left" used_gpus
check "delete what is left" 0 "${k[@]}" delete pods --all --force --grace-period=0 --wait=false
poll "status gives them back" 60 "0" used_gpus
for name in again1 again2 again3 again4; do
  echo "$name $(create_pod "$name")" >>"$tmp/again"
done
expect_exact "3 of 4 admitted" "$tmp/again" "again1 201
again2 201
again3 201
again4 403"
expect_in "the fourth in Kubernetes' words" "$tmp/bodies/again4" "pods \\\"again4\\\" is forbidden: $full"
poll "status: 3 of 3" 60 "3" used_gpus

finish "quota relist beside creates"
