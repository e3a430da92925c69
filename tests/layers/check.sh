#!/usr/bin/env bash
# The layers the build enforces (docs/development.md, "Layers"): builds the probes of
# tests/layers in the build tree given as $1, each posing as a file of one layer (a PROBE layer of
# cmake/layers.cmake with that layer's include path and links), and checks that an upward
# include does not compile, that an upward call fails the layer's link check, that their
# controls (downward) build, and that every layer of src/ has its link check in the build.
set -u
build=$1
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failures=0

fail() {
  echo "FAIL $1"
  sed 's/^/  | /' "$out" | tail -20
  failures=$((failures + 1))
}

# expect_refused WHAT TARGET REGEX: building TARGET fails, saying REGEX.
expect_refused() {
  if cmake --build "$build" --target "$2" >"$out" 2>&1; then
    fail "$1: $2 built"
  elif ! grep -Eq "$3" "$out"; then
    fail "$1: $2 failed, but not with /$3/"
  else
    echo "ok   $1: $(grep -Em1 "$3" "$out" | sed 's/^.*\(fatal \)\{0,1\}error: //')"
  fi
}

# expect_built WHAT TARGET: building TARGET succeeds.
expect_built() {
  if cmake --build "$build" --target "$2" >"$out" 2>&1; then
    echo "ok   $1"
  else
    fail "$1: $2 did not build"
  fi
}

expect_refused "core includes sched's header" xpool_probe_include_up \
  "xpool/sched\.h(: No such file or directory|' file not found)"
expect_refused "runtime includes the store's header (a layer beside it)" xpool_probe_include_peer \
  "xpool/store\.h(: No such file or directory|' file not found)"
expect_built "server includes the headers below it" xpool_probe_include_down
expect_refused "registry calls the server" xpool_probe_call_up_linkcheck \
  "undefined reference to .xp_server_new'"
expect_built "registry calls the store and util below it" xpool_probe_call_down_linkcheck

# Every directory of src/ but the executables' own is a layer, checked with the tree.
for dir in "$source_dir"/src/*/; do
  name=$(basename "$dir")
  case $name in shim | plugin) continue ;; esac
  if [[ -x $build/layers/xpool_${name}_linkcheck ]]; then
    echo "ok   layer $name: linked against the layers below it only"
  else
    : >"$out"
    fail "layer $name: no link check (is it in CMakeLists.txt's table of layers?)"
  fi
done

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
