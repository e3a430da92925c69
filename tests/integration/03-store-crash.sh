#!/usr/bin/env bash
# The store under kill -9: a writer creates objects from several threads and prints each name only
# once xp_store_create() acknowledged it; SIGKILL it mid-burst, reopen, and every acknowledged
# object must be there with its version, and new writes must get higher versions.
source "$(dirname "$0")/lib.sh"
tool=${XPOOL_STORE_CRASH:?the store_crash helper (tests/tools/store_crash.c)}
db=$tmp/state.db
rounds=${STORE_CRASH_ROUNDS:-4}
want=${STORE_CRASH_ACKS:-3000} # acknowledgements before the kill
deadline=$((SECONDS + 25))      # the whole test stays well under 30 s

base=0
for round in $(seq 1 "$rounds"); do
  acked=$tmp/acked-$round
  "$tool" write "$db" 8 "r$round" >"$acked" 2>"$tmp/writer-err" &
  pid=$!
  # wait for enough acknowledgements, then kill -9 (the bound is a limit: at 5 s a writer under
  # the sanitizers at load could stay below the 100 the check below wants)
  round_end=$((SECONDS + 60))
  while [[ $(wc -l <"$acked") -lt $want && $SECONDS -lt $round_end ]] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  n=$(wc -l <"$acked")
  if [[ -s "$tmp/writer-err" ]]; then
    echo "FAIL round $round: the writer failed:"; cat "$tmp/writer-err"; failures=$((failures + 1))
  fi
  if [[ $n -lt 100 ]]; then
    echo "FAIL round $round: only $n acknowledgements before the kill"; failures=$((failures + 1))
  fi
  # check every round's acknowledgements so far: earlier rounds must survive later crashes too
  cat "$tmp"/acked-* >"$tmp/all-acked"
  check "round $round: acknowledged writes survive kill -9" 0 "$tool" check "$db" "$tmp/all-acked"
  echo "round $round: killed after $n acknowledgements ($base before); $(cat "$tmp/out")"
  base=$((base + n))
  [[ $SECONDS -lt $deadline ]] || break
done
finish "store crash"
