#!/usr/bin/env bash
# xpool server under kill -9 mid-burst: api_burst creates pods over HTTP from many clients and
# prints each name only once its 201 arrived; the server is killed with SIGKILL after some hundreds
# of acknowledgements and restarted on the same data directory. Every acknowledged pod must be
# listed, and a new create must get a resourceVersion above every stored one. Then three more
# kill/restart cycles: resourceVersion keeps growing across each.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
burst=${XPOOL_API_BURST:?the api_burst helper (tests/tools/api_burst.c)}
data=$tmp/data
total=${SERVER_CRASH_CREATES:-5000} # more than can be acknowledged before the kill
want=${SERVER_CRASH_ACKS:-300}      # acknowledgements before the kill
server_pid=
burst_pid=
base=
token=

stop_burst() {
  [[ -n "$burst_pid" ]] || return 0
  kill -KILL "$burst_pid" 2>/dev/null || true
  wait "$burst_pid" 2>/dev/null || true
  burst_pid=
}
trap 'stop_burst; stop_server KILL; release_tmp; rm -rf "$tmp"' EXIT

# The bearer token, when the server writes one (DATA_DIR/admin.kubeconfig, `token: ...`); empty
# when it does not, and then requests go without Authorization.
read_token() {
  token=
  if [[ -f "$data/admin.kubeconfig" ]]; then
    token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*["'\'']\{0,1\}\([^"'\'' ]*\).*/\1/p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
  fi
}

curl_api() { # curl arguments...: with the bearer token when there is one
  if [[ -n "$token" ]]; then
    curl -H "Authorization: Bearer $token" "$@"
  else
    curl "$@"
  fi
}

start_server() { # log name: starts on a free port and waits (bounded) until /version answers
  local log=$tmp/$1.log deadline=$((SECONDS + 60)) port=
  : >"$log" # the background job opens it later: it must exist for the first look
  "$xpool" server --listen 127.0.0.1:0 --no-tls --data-dir "$data" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited:"; cat "$log"; exit 1; }
    port=$(sed -n 's|.*xpool server listening on http://127\.0\.0\.1:\([0-9]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$port" ]]; then
      read_token
      if curl_api -fsS -o /dev/null "http://127.0.0.1:$port/version" 2>/dev/null; then
        base=http://127.0.0.1:$port
        return 0
      fi
    fi
    sleep 0.1
  done
  echo "FAIL the server did not answer within 60 s:"; cat "$log"; exit 1
}

max_version() { # file: the highest resourceVersion in it (the list's own and every item's)
  grep -o '"resourceVersion":"[0-9]*"' "$1" | cut -d'"' -f4 | sort -n | tail -1
}

list_pods() { # name: GET the pods of default into $tmp/list; counts a failure when it is not 200
  local got
  got=$(curl_api -sS -o "$tmp/list" -w '%{http_code}' "$base$pods") || got="curl failed ($?)"
  if [[ "$got" != 200 ]]; then
    echo "FAIL $1: HTTP $got"; cat "$tmp/list"; echo; failures=$((failures + 1))
    : >"$tmp/list"
  fi
}

create_pod() { # name, pod name: POST a small pod; its resourceVersion in $created ("" on failure)
  local got
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"main","image":"busybox"}]}}' "$2" >"$tmp/new.json"
  got=$(curl_api -sS -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "@$tmp/new.json" "$base$pods") || got="curl failed ($?)"
  created=$(max_version "$tmp/out")
  if [[ "$got" != 201 || -z "$created" ]]; then
    echo "FAIL $1: HTTP $got"; cat "$tmp/out"; echo; failures=$((failures + 1))
    created=
  fi
}

check_acked() { # name: every pod api_burst acknowledged is in the list, and is counted
  local acked stored lost
  # the kill may cut the last line short: only whole lines were acknowledged
  grep -x 'burst-[0-9]*' "$tmp/acked" | sort -u >"$tmp/acked-names" || true
  grep -o '"name":"burst-[0-9]*"' "$tmp/list" | cut -d'"' -f4 | sort -u >"$tmp/stored-names" || true
  acked=$(wc -l <"$tmp/acked-names")
  stored=$(wc -l <"$tmp/stored-names")
  lost=$(comm -23 "$tmp/acked-names" "$tmp/stored-names" | wc -l)
  echo "$1: acknowledged $acked, stored $stored, lost $lost"
  if [[ $lost -ne 0 ]]; then
    echo "FAIL $1: $lost acknowledged pods are gone:"; comm -23 "$tmp/acked-names" "$tmp/stored-names" | head
    failures=$((failures + 1))
  fi
  # a create that was in flight at the kill may be stored without its 201: more is fine, fewer not
  if [[ $stored -lt $acked ]]; then
    echo "FAIL $1: $stored stored, fewer than the $acked acknowledged"; failures=$((failures + 1))
  fi
}

pods=/api/v1/namespaces/default/pods
start_server first
read_token
if [[ -n "$token" ]]; then echo "the server wrote admin.kubeconfig: requests carry its bearer token"; fi

# The burst, and kill -9 once enough of it is acknowledged (bounded wait).
"$burst" "$base" "$total" 16 ${token:+"$token"} >"$tmp/acked" 2>"$tmp/burst-err" &
burst_pid=$!
deadline=$((SECONDS + 120))
while [[ $(wc -l <"$tmp/acked") -lt $want && $SECONDS -lt $deadline ]] && kill -0 "$burst_pid" 2>/dev/null; do
  sleep 0.02
done
stop_server KILL
n=$(wc -l <"$tmp/acked")
# with the server gone every client sees a refused or reset connection and stops: bounded wait
deadline=$((SECONDS + 60))
while kill -0 "$burst_pid" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do sleep 0.05; done
if kill -0 "$burst_pid" 2>/dev/null; then
  echo "FAIL api_burst did not stop within 60 s of the server's death"; failures=$((failures + 1))
fi
rc=0
wait "$burst_pid" 2>/dev/null || rc=$?
burst_pid=
echo "killed the server after $n acknowledgements; api_burst: $(cat "$tmp/burst-err")"
if [[ $n -lt $want ]]; then
  echo "FAIL only $n acknowledgements before the kill, expected $want"; failures=$((failures + 1))
fi
if [[ $rc -eq 0 || $n -ge $total ]]; then
  echo "FAIL the burst finished ($n of $total) before the kill: nothing was in flight"
  failures=$((failures + 1))
fi
if grep -q 'HTTP' "$tmp/burst-err"; then
  echo "FAIL answers other than 201 during the burst:"; cat "$tmp/burst-err"; failures=$((failures + 1))
fi

start_server second
list_pods "list after kill -9"
check_acked "after kill -9"
before=$(max_version "$tmp/list")
create_pod "create after restart" after-crash-0
if [[ -n "$created" && "$created" -le "$before" ]]; then
  echo "FAIL create after restart: version $created not above $before"; failures=$((failures + 1))
fi
last=$created

# Bindings under kill -9: a node takes the pending pods; the scheduler binds each with its
# Scheduled Event in one commit (docs/scheduler.md). A binding a watch has seen was committed:
# after kill -9 and a restart each such pod is still on the node, with its Event.
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"crash-node"},"status":{"capacity":{"cpu":"64","memory":"64Gi","pods":"20000"},"allocatable":{"cpu":"64","memory":"64Gi","pods":"20000"},"conditions":[{"type":"Ready","status":"True"}]}}' >"$tmp/node.json"
curl_api -sSN --max-time 180 "$base$pods?watch=true&resourceVersion=$last" >"$tmp/watch" 2>/dev/null &
watch_pid=$!
curl_api -sS -o /dev/null -H 'Content-Type: application/json' --data-binary "@$tmp/node.json" "$base/api/v1/nodes"
deadline=$((SECONDS + 120))
while [[ $(grep -c '"nodeName":"crash-node"' "$tmp/watch") -lt 50 && $SECONDS -lt $deadline ]]; do sleep 0.02; done
stop_server KILL
wait "$watch_pid" 2>/dev/null || true
/usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)["object"]
    except (ValueError, KeyError):
        continue  # the kill may cut the last line short
    if o.get("spec", {}).get("nodeName") == "crash-node":
        print(o["metadata"]["name"])
' "$tmp/watch" | sort -u >"$tmp/seen-bound"
start_server binds
curl_api -sS -o "$tmp/bound" "$base$pods?fieldSelector=spec.nodeName%3Dcrash-node"
curl_api -sS -o "$tmp/events" "$base/api/v1/namespaces/default/events?fieldSelector=reason%3DScheduled"
# every pod on the node by its name, as the watch's are (not only the burst's: the pod created
# after the first crash may be bound too)
/usr/bin/python3 -c '
import json, sys
for o in json.load(open(sys.argv[1])).get("items", []):
    print(o["metadata"]["name"])
' "$tmp/bound" | sort -u >"$tmp/stored-bound" || true
seen=$(wc -l <"$tmp/seen-bound")
lost=$(comm -23 "$tmp/seen-bound" "$tmp/stored-bound" | wc -l)
no_event=0
while read -r name; do
  grep -q "Successfully assigned default/$name to crash-node" "$tmp/events" || no_event=$((no_event + 1))
done <"$tmp/seen-bound"
echo "bindings seen before kill -9: $seen, lost: $lost, without their Scheduled Event: $no_event"
if [[ $seen -lt 50 || $lost -ne 0 || $no_event -ne 0 ]]; then
  echo "FAIL bindings under kill -9: want at least 50 seen, none lost, each with its Event"
  comm -23 "$tmp/seen-bound" "$tmp/stored-bound" | head
  failures=$((failures + 1))
fi
last=$(max_version "$tmp/bound")

# Three more kill -9 / restart cycles: a create before each kill, one after each restart; the
# versions only grow, and what was acknowledged stays.
for cycle in 1 2 3; do
  create_pod "cycle $cycle: create before the kill" "before-kill-$cycle"
  if [[ -n "$created" && -n "$last" && "$created" -le "$last" ]]; then
    echo "FAIL cycle $cycle: version $created not above $last"; failures=$((failures + 1))
  fi
  if [[ -n "$created" ]]; then last=$created; fi
  stop_server KILL
  start_server "cycle-$cycle"
  list_pods "cycle $cycle: list after kill -9"
  check_acked "cycle $cycle"
  expect_in "cycle $cycle: the pod created before the kill" "$tmp/list" "\"name\":\"before-kill-$cycle\""
  before=$(max_version "$tmp/list")
  create_pod "cycle $cycle: create after restart" "after-crash-$cycle"
  if [[ -n "$created" && ( "$created" -le "$before" || "$created" -le "$last" ) ]]; then
    echo "FAIL cycle $cycle: version $created after restart not above $before (list) and $last (last create)"
    failures=$((failures + 1))
  fi
  echo "cycle $cycle: stored versions up to $before, new create got $created"
  if [[ -n "$created" ]]; then last=$created; fi
done

stop_server TERM
finish "server crash"
