#!/usr/bin/env bash
# xpool server's scheduling loop, driven with curl: pods placed on the node that has what they
# ask for (the seed's GPU + NPU pod), the placement annotation naming real devices, unschedulable
# pods with kube-scheduler's PodScheduled message and a FailedScheduling Event counted on
# repeats, retried when a node is added, NVLink pairs, priority order, hostPorts (NodePorts),
# --no-scheduler, and kubectl describe showing the events.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
fixtures=${XPOOL_TEST_DATA:?}/scheduler
server_pid=
base=
token=
tls=

trap 'stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

curl() {
  command curl ${tls:+--cacert "$data/pki/ca.crt"} ${token:+-H "Authorization: Bearer $token"} "$@"
}

start_server() { # log name, server options...: starts on a free port, waits until /version answers
  local log=$tmp/$1.log deadline=$((SECONDS + 15)) url=
  shift
  : >"$log"
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" "$@" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    url=$(sed -n 's|.*xpool server listening on \(https*://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$url" ]] && curl -fsS -o /dev/null "$url/version" 2>/dev/null; then
      base=$url
      token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 15 s:"; cat "$log"; exit 1
}

# req name, expected HTTP code, method, path [, body file]: the answer in $tmp/out
req() {
  local name=$1 want=$2 method=$3 path=$4 body=${5:-} type=${6:-application/json} got
  local args=(-sS -X "$method" -o "$tmp/out" -w '%{http_code}' --max-time 20)
  [[ -n "$body" ]] && args+=(-H "Content-Type: $type" --data-binary "@$body")
  got=$(curl "${args[@]}" "$base$path") || got="curl failed ($?)"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name: HTTP $got, expected $want"; cat "$tmp/out"; echo; failures=$((failures + 1))
  fi
}

create() { # manifest (YAML), collection path: converts and POSTs it
  "$xpool" convert -o json -f "$1" >"$tmp/create.json"
  req "create $(basename "$1")" 201 POST "$2" "$tmp/create.json"
}

api_holds() { answer_holds "$tmp/out" "$2" "$base$1"; } # path, text: for wait_until

not_in() { # name, file, text
  if grep -qF -- "$3" "$2"; then
    echo "FAIL $1: '$3' in output:"; cat "$2"; failures=$((failures + 1))
  fi
}

events_of() { # pod: its events, one per line, into $tmp/events
  curl -sS --max-time 5 "$base/api/v1/namespaces/default/events" |
    sed 's/},{"apiVersion"/}\n{"apiVersion"/g' | grep -F "\"involvedObject\":{\"kind\":\"Pod\"" |
    grep -F "\"name\":\"$1\"" >"$tmp/events" || true
}

pods=/api/v1/namespaces/default/pods
nodes=/api/v1/nodes
start_server scheduler --no-tls
for node in gpu-only npu-only mixed; do
  create "$fixtures/$node.yaml" "$nodes"
done

# ---- the seed's pod: a GPU and two NPUs, only the mixed node has both -------------------------
create "$src/examples/ai-training.yaml" "$pods"
wait_until "seed pod bound" 10 api_holds "$pods/ai-training" '"nodeName":"mixed"'
expect_in "seed pod placement annotation" "$tmp/out" '"xpool.io/placement":"{\"node\":\"mixed\"'
for id in GPU-mixed-0 NPU-mixed-0 NPU-mixed-1; do
  expect_in "seed pod placement names $id" "$tmp/out" "\\\"id\\\":\\\"$id\\\""
done
expect_in "seed pod PodScheduled" "$tmp/out" '{"type":"PodScheduled","status":"True"'
events_of ai-training
expect_in "Scheduled event" "$tmp/events" '"reason":"Scheduled","message":"Successfully assigned default/ai-training to mixed"'
expect_in "Scheduled event type" "$tmp/events" '"type":"Normal"'
expect_in "Scheduled event source" "$tmp/events" '"source":{"component":"default-scheduler"}'
expect_in "Scheduled event reportingComponent" "$tmp/events" '"reportingComponent":"default-scheduler"'
expect_in "Scheduled event reportingInstance" "$tmp/events" "\"reportingInstance\":\"default-scheduler-$(hostname)\""

# ---- more GPUs than any node has: Pending, the reason, an Event; retried when a node comes -----
# with kube-scheduler's tail: every pod here is of priority 0, so no node has a victim
message='0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.'
create "$fixtures/pod-4gpu.yaml" "$pods"
wait_until "4-GPU pod unschedulable" 10 api_holds "$pods/four-gpus" '"reason":"Unschedulable"'
expect_in "4-GPU pod message" "$tmp/out" "{\"type\":\"PodScheduled\",\"status\":\"False\",\"lastProbeTime\":null,\"lastTransitionTime\":"
expect_in "4-GPU pod message text" "$tmp/out" "\"reason\":\"Unschedulable\",\"message\":\"$message\""
not_in "4-GPU pod not bound" "$tmp/out" '"nodeName"'
expect_in "4-GPU pod still Pending" "$tmp/out" '"phase":"Pending"'
events_of four-gpus
expect_count "one FailedScheduling event" "$tmp/events" 1 '"reason":"FailedScheduling"'
expect_in "FailedScheduling message" "$tmp/events" "\"message\":\"$message | "
expect_in "FailedScheduling type" "$tmp/events" '"type":"Warning"'
expect_in "FailedScheduling names the pod's uid" "$tmp/events" '"uid":"'
# A change to a node retries it; the same failure counts on the same Event.
printf '%s' '{"metadata":{"labels":{"touched":"yes"}}}' >"$tmp/patch.json"
req "touch a node" 200 PATCH "$nodes/gpu-only" "$tmp/patch.json" application/merge-patch+json
deadline=$((SECONDS + 10))
while [[ $SECONDS -lt $deadline ]]; do
  events_of four-gpus
  grep -qF '"count":2' "$tmp/events" && break
  sleep 0.2
done
expect_count "repeats stay one Event" "$tmp/events" 1 '"reason":"FailedScheduling"'
expect_in "repeats counted" "$tmp/events" '"count":2'
# The bigger node: now it fits.
create "$fixtures/big.yaml" "$nodes"
wait_until "4-GPU pod bound once a node fits" 10 api_holds "$pods/four-gpus" '"nodeName":"big"'
expect_in "4-GPU pod scheduled" "$tmp/out" '{"type":"PodScheduled","status":"True"'
events_of four-gpus
expect_in "4-GPU Scheduled event" "$tmp/events" '"message":"Successfully assigned default/four-gpus to big"'

# ---- 2 GPUs on the NVLink node: a connected pair (one island), not one from each -----------------
create "$fixtures/pod-2gpu.yaml" "$pods"
wait_until "2-GPU pod bound" 10 api_holds "$pods/two-gpus" '"nodeName":"big"'
ids=$(grep -o 'GPU-big-[0-7]' "$tmp/out" | sort -u | tr '\n' ' ')
if [[ ! "$ids" =~ ^GPU-big-[0-3]\ GPU-big-[0-3]\ $ && ! "$ids" =~ ^GPU-big-[4-7]\ GPU-big-[4-7]\ $ ]]; then
  echo "FAIL 2-GPU pod on one NVLink island: got $ids"; failures=$((failures + 1))
fi
grep -o 'GPU-big-[0-7]' "$tmp/out" | sort -u >"$tmp/two"
curl -sS "$base$pods/four-gpus" | grep -o 'GPU-big-[0-7]' | sort -u >"$tmp/four"
if [[ -n "$(comm -12 "$tmp/two" "$tmp/four")" ]]; then
  echo "FAIL the 2-GPU pod shares a GPU with the 4-GPU pod"; failures=$((failures + 1))
fi

# ---- priority: two pods wait for one slot, the higher priority gets it ---------------------------
create "$fixtures/pod-low.yaml" "$pods"
create "$fixtures/pod-high.yaml" "$pods"
wait_until "low waits" 10 api_holds "$pods/low" 'Insufficient example.com/slot'
wait_until "high waits" 10 api_holds "$pods/high" 'Insufficient example.com/slot'
create "$fixtures/slot.yaml" "$nodes"
wait_until "high priority bound" 10 api_holds "$pods/high" '"nodeName":"slot"'
sleep 1
req "low priority" 200 GET "$pods/low"
not_in "low priority not bound" "$tmp/out" '"nodeName"'
# the count of nodes changed but not the reason: said within 10 s (docs/scheduler.md)
wait_until "low priority told why" 20 api_holds "$pods/low" '0/5 nodes are available: 5 Insufficient example.com/slot.'
# Deleting the winner frees the slot: the other one follows.
# grace 0: no agent runs these bound pods, so a graceful deletion would wait for none
req "delete high" 200 DELETE "$pods/high?gracePeriodSeconds=0"
wait_until "low bound once the slot frees" 10 api_holds "$pods/low" '"nodeName":"slot"'

# ---- hostPorts (NodePorts): a second pod on the same port stays Pending, another port runs -------
port_pod() { # name, hostPort, protocol: a pod on the mixed node asking that hostPort
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"nodeSelector":{"kubernetes.io/hostname":"mixed"},"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"hostPort":%s,"protocol":"%s"}]}]}}' \
    "$1" "$2" "$3" >"$tmp/port-pod.json"
  req "create $1" 201 POST "$pods" "$tmp/port-pod.json"
}
port_pod web-a 8080 TCP
wait_until "first hostPort pod bound" 10 api_holds "$pods/web-a" '"nodeName":"mixed"'
port_pod web-b 8080 TCP
port_pod web-c 8081 TCP
port_pod dns-a 8080 UDP
wait_until "other hostPort bound" 10 api_holds "$pods/web-c" '"nodeName":"mixed"'
wait_until "same port, other protocol bound" 10 api_holds "$pods/dns-a" '"nodeName":"mixed"'
ports_message="0/5 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 4 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 1 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling."
wait_until "same hostPort unschedulable" 10 api_holds "$pods/web-b" "\"message\":\"$ports_message\""
not_in "same hostPort not bound" "$tmp/out" '"nodeName"'
expect_in "same hostPort Pending" "$tmp/out" '"phase":"Pending"'
events_of web-b
expect_in "same hostPort FailedScheduling" "$tmp/events" "\"message\":\"$ports_message | "
req "delete web-a" 200 DELETE "$pods/web-a?gracePeriodSeconds=0"
wait_until "same hostPort bound once the first is gone" 10 api_holds "$pods/web-b" '"nodeName":"mixed"'

# ---- kubectl describe shows the events (over TLS, with the written kubeconfig) -----------------
stop_server TERM
if command -v kubectl >/dev/null; then
  tls=1
  start_server kubectl
  check "kubectl describe pod" 0 kubectl "--kubeconfig=$data/admin.kubeconfig" "--cache-dir=$tmp/kube-cache" --request-timeout=10s describe pod four-gpus
  expect_in "describe: node" "$tmp/out" "big/"
  expect_in "describe: FailedScheduling" "$tmp/out" "FailedScheduling"
  expect_in "describe: failure message" "$tmp/out" "$message"
  expect_in "describe: Scheduled" "$tmp/out" "Successfully assigned default/four-gpus to big"
  expect_in "describe: source" "$tmp/out" "default-scheduler"
  stop_server TERM
  tls=
else
  echo "kubectl is not installed: describe not checked"
fi

# ---- --no-scheduler: pods stay Pending --------------------------------------------------------
start_server off --no-tls --no-scheduler
sed 's/name: ai-training/name: unplaced/' "$src/examples/ai-training.yaml" >"$tmp/unplaced.yaml"
req "free the mixed node" 200 DELETE "$pods/ai-training?gracePeriodSeconds=0"
create "$tmp/unplaced.yaml" "$pods"
sleep 1.5
req "unplaced pod" 200 GET "$pods/unplaced"
not_in "--no-scheduler leaves it unbound" "$tmp/out" '"nodeName"'
not_in "--no-scheduler writes no condition" "$tmp/out" 'PodScheduled'
# Stops promptly.
start=$(date +%s%N)
stop_server TERM
elapsed=$((($(date +%s%N) - start) / 1000000))
# And the loop again: the pending pod is found by the first listing.
start_server again --no-tls
wait_until "pending pod found at start" 10 api_holds "$pods/unplaced" '"nodeName":"mixed"'
start=$(date +%s%N)
stop_server TERM
elapsed=$((($(date +%s%N) - start) / 1000000))
if [[ $elapsed -gt 2000 ]]; then
  echo "FAIL the server took $elapsed ms to stop"; failures=$((failures + 1))
fi

finish "scheduler"
