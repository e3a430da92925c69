#!/usr/bin/env bash
# scripts/seed-image: the image is reproducible and has what stock tools run in a container
# (kubectl cp runs `tar` there). No xpool binary, no network: the OCI layout is read with tar.
set -euo pipefail
src=${1:?usage: seed_image.sh SOURCE_DIR}
[[ -x /bin/busybox ]] || { echo "SKIP: no busybox-static"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$src/scripts/seed-image" "$tmp/a.tar"
"$src/scripts/seed-image" "$tmp/b.tar"
cmp -s "$tmp/a.tar" "$tmp/b.tar" || fail "two builds of the image differ"

mkdir "$tmp/layout"
tar -xf "$tmp/a.tar" -C "$tmp/layout"
# the one layer: the gzip blob of the layout (the others are JSON)
layer=
for blob in "$tmp"/layout/blobs/sha256/*; do
  gzip -t "$blob" 2>/dev/null && layer=$blob
done
[[ -n $layer ]] || fail "no gzip layer in the image"
tar -tvzf "$layer" >"$tmp/files"
for path in ./bin/sh ./bin/tar ./usr/local/bin/ai-framework; do
  grep -q " $path\( \|$\)" "$tmp/files" || fail "the image has no $path (kubectl cp needs ./bin/tar)"
done
grep -q ' ./bin/tar -> busybox$' "$tmp/files" || fail "./bin/tar is not the busybox applet"
grep -q 'ai-framework:latest' "$tmp/layout/index.json" || fail "index.json does not name ai-framework:latest"

[[ $failures -eq 0 ]] && echo "PASS seed_image" || exit 1
