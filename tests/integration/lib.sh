# Sourced by the numbered integration scripts: the binary and data under test, a scratch
# directory, and checks that count failures instead of stopping at the first.
set -euo pipefail
xpool=${XPOOL_BIN:?}
src=${XPOOL_SOURCE_DIR:?}
tmp=$(mktemp -d)
# Process pods see the node read-only, with a /tmp of their own (docs/security.md, "Pods"): the
# agents the tests start share the scratch directory with them (their --share), where the
# tests' pods run scripts from and write what the tests check.
export XPOOL_SHARE=$tmp
# What a test's daemons leave behind once they are stopped: the pods still running (an agent
# that stops leaves its pods running, as the kubelet does: their shims run from $tmp, and
# killing a container's first process ends its pid namespace), then what is mounted below $tmp
# (pods' namespace pins, volumes), deepest first: rm -rf cannot remove a mount point, and a
# leaked mount stays in every process's mount table.
release_tmp() {
  local shim
  test_cost
  release_ports
  for shim in $(pgrep -f -- "__shim $tmp/" 2>/dev/null || true); do
    pkill -KILL -P "$shim" 2>/dev/null || true
    kill -KILL "$shim" 2>/dev/null || true
  done
  # the pods' cgroups of this test's agents (each logs its parent): what still runs there is this
  # test's (an image container's process outlives its killed shim), and shims killed here never
  # removed the groups, which no later agent has the parent of (a few tries while processes go)
  local parent try
  for parent in $(grep -rhoa --include='*.log' "pods' cgroups below /xpool/agent-[0-9a-f]*" "$tmp" 2>/dev/null |
    sed 's/.* below //' | sort -u); do
    cat /sys/fs/cgroup/*"$parent"/*/*/cgroup.procs /sys/fs/cgroup"$parent"/*/*/cgroup.procs 2>/dev/null |
      sort -u | xargs -r kill -KILL 2>/dev/null || true
    for try in 1 2 3 4 5; do
      find /sys/fs/cgroup/*"$parent" /sys/fs/cgroup"$parent" -depth -type d -exec rmdir {} + 2>/dev/null && break
      [[ -n "$(find /sys/fs/cgroup/*"$parent" /sys/fs/cgroup"$parent" -maxdepth 0 2>/dev/null)" ]] || break
      sleep 0.1
    done
  done
  awk -v t="$tmp/" 'index($5, t) == 1 { print length($5) " " $5 }' /proc/self/mountinfo 2>/dev/null |
    sort -rn | cut -d' ' -f2- | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # the namespace pins of this test's agents given no --ipc-dir/--netns-dir: below the
  # /run/xpool/agent-KEY directories each logged (its key is of the test's own state directory)
  local pins
  for pins in $(agent_pin_dirs "$tmp" | tr ' ' '\n' | sort -u); do
    [[ $pins == /run/xpool/agent-[0-9a-f]*/* ]] || continue
    awk -v t="$pins/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo 2>/dev/null |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
    find "$pins" -mindepth 1 -maxdepth 1 -type f -delete 2>/dev/null || true
    rmdir "$pins" "${pins%/*}" 2>/dev/null || true
  done
}
# What the test cost, once, as it ends (ctest keeps it in Testing/Temporary/LastTest.log; the
# suite's figures in docs/development.md, "Tests"): its wall time, and the CPU of the script and
# of the processes it waited for (a daemon killed without a wait is not counted).
test_cost() {
  [[ -z "${test_cost_told:-}" ]] || return 0
  test_cost_told=1
  times >"$tmp/times" 2>&1 || true # in this shell: a $(times) would be a fresh subshell's zeros
  echo "cost of $(basename "$0"): ${SECONDS} s wall; CPU user/system, the script's then its children's: $(tr '\n' ' ' <"$tmp/times" 2>/dev/null)"
}
# The directories where agents pin their pods' namespaces, as each start logged them: one line
# "NETWORK IPC" per start, in a log's order (NETWORK is "none" for an agent without pod
# networks). $1: an agent's log, or a directory whose *.log files (any depth) are read.
agent_pin_dirs() {
  grep -rhoa --include='*.log' "agent: pods' namespaces in [^ ]* (network) and [^ ]* (IPC)" "$1" 2>/dev/null |
    sed 's/.* in \([^ ]*\) (network) and \([^ ]*\) (IPC)$/\1 \2/' || true
}
trap 'release_tmp; rm -rf "$tmp"' EXIT
failures=0
# set -e stops a script at an unchecked failure: say where, or the test fails with no output
trap 'rc=$?; echo "FAIL $(basename "$0") stopped at line $LINENO: $BASH_COMMAND (exit $rc)"' ERR

check() { # name, expected exit code, command...: runs it with output in $tmp/out and $tmp/err
  local name=$1 want=$2 got=0
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  if [[ $got -ne $want ]]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$tmp/out" "$tmp/err"; failures=$((failures + 1))
  fi
}

# (a file that is missing fails the check, and the script goes on to finish and its diagnosis:
# a cat that fails inside a function would end a set -e script there, without a word)
expect_in() { # name, file, text
  if ! grep -qF -- "$3" "$2"; then
    echo "FAIL $1: '$3' not in output:"; cat "$2" || true; failures=$((failures + 1))
  fi
}

expect_count() { # name, file, count, text: lines holding text
  local got
  got=$(grep -cF -- "$4" "$2" || true)
  if [[ ${got:-0} -ne $3 ]]; then
    echo "FAIL $1: ${got:-0} lines with '$4', expected $3:"; cat "$2" || true; failures=$((failures + 1))
  fi
}

# wait_for / wait_until name, seconds, command...: runs the command every 0.2 s until it succeeds
# (bounded). Giving up is a failure: "FAIL name (gave up after N s)", the command's last answer
# (its output on the last try) and, the first time a wait gives up, the diagnosis (wait_diagnosis:
# the logs the test registered, its diag_run commands), so that a wait that stops a set -e script
# says why. wait_for then returns 1: a bare call stops the script there, as what follows needs
# what it waited for. wait_until returns 0: the script goes on to its other checks.
# (the status goes back to the caller's line: a failing command inside a function would end a set
# -e script there, without the ERR trap's line, which functions do not inherit)
wait_for() { wait_bounded 1 "$@" || return; }
wait_until() { wait_bounded 0 "$@"; }
wait_bounded() { # status on giving up, name, seconds, command...
  local status=$1 name=$2 seconds=$3 deadline=$((SECONDS + $3)) out=$tmp/wait.$BASHPID.out
  shift 3
  until "$@" >"$out" 2>&1; do
    if [[ $SECONDS -ge $deadline ]]; then
      echo "FAIL $name (gave up after $seconds s)"; failures=$((failures + 1))
      wait_diagnosis "$out" "$@"
      return "$status"
    fi
    sleep 0.2
  done
}
wait_diagnosis() { # the last answer's file, command...: what a wait that gave up saw
  local out=$1
  shift
  echo "---- the last answer of: $*"
  tail -n 40 "$out"
  [[ -z "${wait_diagnosed:-}" ]] || return 0 # the logs once: another wait's adds little
  wait_diagnosed=1
  [[ ${#diag_logs[@]} -gt 0 || ${#diag_cmds[@]} -gt 0 ]] || return 0
  echo "==== for the diagnosis"
  diag_show
}
# answer_holds file, text, curl args... (the URL last): GETs into file (5 s at most), and holds
# when the answer holds text; if not it says so with the answer, a wait's last answer.
answer_holds() {
  local file=$1 text=$2
  shift 2
  curl -sS --max-time 5 -o "$file" "$@" || true
  grep -qF -- "$text" "$file" 2>/dev/null && return 0
  echo "'$text' did not appear in ${*: -1}:"; cat "$file" 2>/dev/null; echo
  return 1
}

poll() { # name, seconds, expected, command...: runs command until its output is expected (bounded)
  local name=$1 deadline=$((SECONDS + $2)) want=$3 got=
  shift 3
  while :; do # the first try before the deadline's check: a short bound still runs it once
    got=$("$@" 2>&1) || true
    [[ "$got" == "$want" ]] && return 0
    [[ $SECONDS -lt $deadline ]] || break
    sleep 0.2
  done
  echo "FAIL $name: '$got', expected '$want'"; failures=$((failures + 1))
}

# A port for a listener that must be named before it starts (an agent started before its server):
# below the kernel's ephemeral range, so no listener on port 0 and no outgoing connection of a
# parallel test takes it meanwhile, and not accepting connections now. Claimed under
# $port_claims by a file naming this script's pid, made whole and linked in (link(2) is atomic and
# fails when the name is taken), so that two tests running at once never pick the same one; it
# goes at the script's end (release_tmp), and a killed script's is taken over.
port_claims=${TMPDIR:-/tmp}/xpool-test-ports
port_before_listener() {
  local low port i claim owner mine
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  [[ $low -gt 11000 ]] || low=32768
  mkdir -p -m 1777 "$port_claims"
  mine=$port_claims/.pid.$$
  echo "$$" >"$mine"
  for ((i = 0; i < 50; i++)); do
    port=$((10000 + RANDOM % (low - 10000)))
    claim=$port_claims/$port
    if ! ln "$mine" "$claim" 2>/dev/null; then
      # another test's; one that was killed gives it back (its pid gone, claimed a minute ago)
      [[ -n $(find "$claim" -maxdepth 0 -mmin +1 2>/dev/null) ]] || continue
      owner=$(cat "$claim" 2>/dev/null || true)
      [[ -n $owner && -d /proc/$owner ]] && continue # alive, whoever's it is
      mv -T "$claim" "$claim.gone.$$" 2>/dev/null || continue # one taker only: rename is atomic
      if [[ $(cat "$claim.gone.$$" 2>/dev/null || true) != "$owner" ]]; then
        ln "$claim.gone.$$" "$claim" 2>/dev/null || true # a new claim came meanwhile: its again
        rm -f "$claim.gone.$$"
        continue
      fi
      rm -f "$claim.gone.$$"
      ln "$mine" "$claim" 2>/dev/null || continue
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      rm -f "$claim" # in use by something else: not ours to hold
      continue
    fi
    rm -f "$mine"
    echo "$port"
    return 0
  done
  rm -f "$mine"
  echo "FAIL no free port below $low in 50 tries" >&2
  return 1
}
release_ports() { # the ports this script claimed
  local claim
  for claim in "$port_claims"/[0-9]*; do
    [[ -f $claim && $(cat "$claim" 2>/dev/null) == "$$" ]] && rm -f "$claim"
  done
  return 0
}

# What a failure needs for its diagnosis, shown once by finish when a check failed: the output of
# commands such as the pods as the server has them (diag_run 'COMMAND', evaluated then in a
# subshell, or earlier with diag_state, before a test stops its daemons), then the last lines of
# the daemons' logs (diag_log FILE...).
diag_logs=()
diag_cmds=()
diag_log() { # file...: each once
  local f g
  for f in "$@"; do
    for g in "${diag_logs[@]}"; do [[ "$g" == "$f" ]] && continue 2; done
    diag_logs+=("$f")
  done
}
diag_run() { diag_cmds+=("$1"); }
diag_cluster() { # kubeconfig: the pods (YAML), nodes and events as its server has them then
  diag_run "timeout 20 \"\$xpool\" get pods -A -o yaml --kubeconfig '$1'"
  diag_run "timeout 20 \"\$xpool\" get nodes -o wide --kubeconfig '$1'"
  diag_run "timeout 20 \"\$xpool\" get events -A --kubeconfig '$1'"
}
diag_state() { # runs the diag_run commands now (while the daemons run), once
  local c
  for c in "${diag_cmds[@]}"; do
    echo "---- $c"
    (eval "$c") 2>&1 | head -n 400 || true
  done
  diag_cmds=()
}
up_state() { # whether start_up's xpool up still runs, or how it ended when it ended by itself
  local rc=0 state
  [[ -n "${up_pid:-}" ]] || return 0
  state=$(ps -o stat=,etime=,time=,rss= -p "$up_pid" 2>/dev/null) || true
  if [[ -z "$state" || "$state" == Z* ]]; then
    wait "$up_pid" 2>/dev/null || rc=$? # bash keeps the status of a child it reaped
    echo "---- xpool up (pid $up_pid) had exited by itself, status $rc"
    up_pid=
  else
    echo "---- xpool up (pid $up_pid) runs (state, elapsed, CPU time, RSS KiB): $state"
  fi
}
diag_show() { # up_state, diag_state, then the last lines of the logs (which stay registered)
  local f
  up_state
  diag_state
  for f in "${diag_logs[@]}"; do
    [[ -e "$f" ]] || { echo "---- $f: missing"; continue; }
    echo "---- $f (last 60 lines)"
    tail -n 60 "$f"
  done
}
diagnose() { # what diag_state has not shown yet, then the logs
  [[ ${#diag_logs[@]} -gt 0 || ${#diag_cmds[@]} -gt 0 ]] || return 0
  echo "==== for the diagnosis"
  diag_show
  diag_logs=()
}

expect_exact() { # name, file, exact expected content
  if [[ "$(cat "$2")" != "$3" ]]; then
    echo "FAIL $1: expected:"; echo "$3"; echo "got:"; cat "$2" || true; failures=$((failures + 1))
  fi
}

start_server() { # data dir, server args...: `xpool server` on a loopback port, its log in
  # $tmp/server.log; sets server_pid, and base (its https URL) once /healthz answers (120 s at
  # most: a start under ASan at a load of 30 and more)
  local data=$1 deadline=$((SECONDS + 120))
  shift
  base=
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" "$@" >"$tmp/server.log" 2>&1 &
  server_pid=$!
  diag_log "$tmp/server.log"
  until [[ -n "$base" ]] && curl -fsS --cacert "$data/pki/ca.crt" -o /dev/null "$base/healthz" 2>/dev/null; do
    [[ $SECONDS -lt $deadline ]] || { echo "FAIL the server did not start within 120 s:"; cat "$tmp/server.log"; exit 1; }
    sleep 0.1
    base=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  done
}

stop_server() { # signal (TERM, KILL): stops the server start_server started, if it still runs
  [[ -n "${server_pid:-}" ]] || return 0
  kill "-$1" "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

start_up() { # log file, `xpool up` args...: runs it in the background (up_pid) and waits (120 s
  # at most, or up_seconds: a start under ASan at a load of 30 and more) for "xpool is up"; stop_up
  # ends it. A restart with the same log file keeps the earlier
  # start's log beside it (up.log: up.1.log, up.2.log..., each shown by diagnose): a failure after
  # a restart still shows how the earlier run went. FILE holds the current start's log only.
  # The earlier log is moved away here, before the start: the redirection below is made by the
  # background child, later, and a grep of a file still holding the earlier start's "xpool is
  # up" passed at once, before the new server wrote its kubeconfig (42-secrets' kubectl then
  # found the old port closed, "connection refused"; a loop of such starts at load 37 saw the
  # earlier line in 12 of 500).
  local log=$1 within=${up_seconds:-120} n=1 deadline
  shift
  if [[ -e "$log" ]]; then
    while [[ -e "${log%.log}.$n.log" ]]; do n=$((n + 1)); done
    mv "$log" "${log%.log}.$n.log"
    diag_log "${log%.log}.$n.log"
  fi
  "$xpool" up "$@" >"$log" 2>&1 &
  up_pid=$!
  deadline=$((SECONDS + within))
  until grep -qs "^xpool is up" "$log"; do
    kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; diagnose; exit 1; }
    [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within $within s:"; cat "$log"; diagnose; exit 1; }
    sleep 0.1
  done
  diag_log "$log"
}

stop_up() { # SIGTERM, then (a failure) SIGKILL when it did not stop within 120 s (a clean stop
  # under ASan and LeakSanitizer at a load of 30 and more can take over 30 s)
  local i
  [[ -n "${up_pid:-}" ]] || return 0
  kill -TERM "$up_pid" 2>/dev/null || true
  for ((i = 0; i < 1200; i++)); do
    kill -0 "$up_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$up_pid" 2>/dev/null; then
    echo "FAIL xpool up (pid $up_pid) did not stop within 120 s of SIGTERM; killed:"
    ps -L -o pid,tid,stat,time,wchan:24,comm -p "$up_pid" 2>/dev/null | head -n 40 || true
    kill -KILL "$up_pid" 2>/dev/null || true
    failures=$((failures + 1))
  fi
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}

finish() { # what: ends the script with the verdict
  if [[ $failures -gt 0 ]]; then
    diagnose
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all $1 checks passed"
}
