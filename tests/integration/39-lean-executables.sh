#!/usr/bin/env bash
# The executables load only what their commands use (issue 21, docs/cli.md "Executables"): the
# `xpool` front links none of SQLite, libmicrohttpd, gRPC, libarchive or libseccomp, and hands
# server, up, token, store, image, extender and inventory to xpool-full, agent to xpool-agent
# (no SQLite, no gRPC) and device-plugin to xpool-device-plugin, with their exit codes; a missing
# sibling is named. A `get` whose kubeconfig carries the server's CA reads no system trust store.
source "$(dirname "$0")/lib.sh"
dir=$(dirname "$xpool")
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

needed() { # executable: the libraries it names (DT_NEEDED), one a line
  LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}
needed "$xpool" >"$tmp/front"
for lib in libsqlite3 libmicrohttpd libnghttp2 libarchive libseccomp libprotobuf-c; do
  if grep -q "^$lib" "$tmp/front"; then
    echo "FAIL the xpool front links $lib"; failures=$((failures + 1))
  fi
done
expect_in "the front talks to servers over TLS" "$tmp/front" "libgnutls"
needed "$dir/xpool-agent" >"$tmp/agent"
for lib in libsqlite3 libnghttp2 libprotobuf-c; do
  if grep -q "^$lib" "$tmp/agent"; then
    echo "FAIL xpool-agent links $lib"; failures=$((failures + 1))
  fi
done
needed "$dir/xpool-full" >"$tmp/full"
expect_in "xpool-full has the store" "$tmp/full" "libsqlite3"

# each command reaches the executable that runs it, with its exit code
for cmd in server up token store image extender inventory agent device-plugin; do
  check "xpool $cmd --help" 0 "$xpool" "$cmd" --help
  expect_in "xpool $cmd --help" "$tmp/out" "Usage: xpool $cmd"
done
check "an unknown option of a handed-over command" 2 "$xpool" server --no-such-option
check "an unknown command" 2 "$xpool" no-such-command
expect_in "an unknown command" "$tmp/err" "unknown command 'no-such-command'"
check "xpool-agent without its command" 2 "$dir/xpool-agent"
expect_in "xpool-agent without its command" "$tmp/err" "usage: xpool-agent agent"
check "xpool-full runs the front's commands too" 0 "$dir/xpool-full" version
expect_in "xpool-full version" "$tmp/out" "xpool "

# a front installed without its siblings says which one is missing
mkdir "$tmp/alone"
cp "$xpool" "$tmp/alone/xpool"
check "a missing sibling" 1 "$tmp/alone/xpool" server --help
expect_in "a missing sibling" "$tmp/err" "cannot run '$tmp/alone/xpool-full' (the 'server' command"
check "the front alone still gets" 0 "$tmp/alone/xpool" version

# the kubeconfig's CA is the only one read
if command -v strace >/dev/null; then
  mkdir -m 700 "$tmp/data"
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$tmp/data" >"$tmp/server.log" 2>&1 &
  server_pid=$!
  poll "server up" 60 yes bash -c "grep -q 'listening on https://' '$tmp/server.log' && test -s '$tmp/data/admin.kubeconfig' && echo yes"
  # (LeakSanitizer cannot run under ptrace: off for the traced call of an ASan build)
  check "get pods over TLS" 0 strace -f -o "$tmp/trace" -e trace=open,openat \
    env KUBECONFIG="$tmp/data/admin.kubeconfig" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    "$xpool" get pods
  if grep -q '/etc/ssl/certs\|ca-certificates.crt' "$tmp/trace"; then
    echo "FAIL get pods read the system trust store:"; grep '/etc/ssl' "$tmp/trace" | head -3
    failures=$((failures + 1))
  fi
  expect_in "get pods read its kubeconfig" "$tmp/trace" "admin.kubeconfig"
else
  echo "note: no strace; the trust store check is skipped"
fi
finish "lean executables"
