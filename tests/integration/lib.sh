# Sourced by the numbered integration scripts: the binary and data under test, a scratch
# directory, and checks that count failures instead of stopping at the first.
set -euo pipefail
xpool=${XPOOL_BIN:?}
src=${XPOOL_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

check() { # name, expected exit code, command...: runs it with output in $tmp/out and $tmp/err
  local name=$1 want=$2 got=0
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  if [[ $got -ne $want ]]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$tmp/out" "$tmp/err"; failures=$((failures + 1))
  fi
}

expect_in() { # name, file, text
  if ! grep -qF -- "$3" "$2"; then
    echo "FAIL $1: '$3' not in output:"; cat "$2"; failures=$((failures + 1))
  fi
}

expect_count() { # name, file, count, text: lines holding text
  local got
  got=$(grep -cF -- "$4" "$2" || true)
  if [[ $got -ne $3 ]]; then
    echo "FAIL $1: $got lines with '$4', expected $3:"; cat "$2"; failures=$((failures + 1))
  fi
}

poll() { # name, seconds, expected, command...: runs command until its output is expected (bounded)
  local name=$1 deadline=$((SECONDS + $2)) want=$3 got=
  shift 3
  while [[ $SECONDS -lt $deadline ]]; do
    got=$("$@" 2>&1) || true
    [[ "$got" == "$want" ]] && return 0
    sleep 0.2
  done
  echo "FAIL $name: '$got', expected '$want'"; failures=$((failures + 1))
}

finish() { # what: ends the script with the verdict
  if [[ $failures -gt 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all $1 checks passed"
}
