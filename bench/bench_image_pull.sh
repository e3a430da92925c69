#!/usr/bin/env bash
# Pulling an image (docs/images.md, "Speed"): an image of about SIZE_MIB MiB unpacked (files of
# /usr copied into LAYERS gzip layers), pushed with skopeo to Debian's docker-registry on loopback,
# then:
#   - the first `xpool image pull` into an empty store: seconds, MiB/s of the layers as unpacked
#     and as downloaded, beside `tar -xzf` of the same layer files into a fresh directory (the
#     unpacking alone, no network, no digests) and `gzip -dc > /dev/null` (the decompression alone);
#   - a second pull of the same image: what it asked of the registry (from the registry's access
#     log) and its time: no layer is downloaded or unpacked again.
#
#   bench/bench_image_pull.sh BUILD_DIR [SIZE_MIB [LAYERS [RUNS]]]    (defaults 100 3 3)
#
# Prints figures only; asserts nothing (tests/integration/24-images.sh checks). Needs root (layer
# owners), docker-registry and skopeo (scripts/install-deps).
set -uo pipefail

build=${1:?usage: bench_image_pull.sh BUILD_DIR [SIZE_MIB [LAYERS [RUNS]]]}
size_mib=${2:-100}
nlayers=${3:-3}
runs=${4:-3}
xpool=$(realpath "$build/xpool")
[[ -x "$xpool" ]] || { echo "bench_image_pull: no $xpool" >&2; exit 1; }
tmp=$(mktemp -d)
reg_pid_bench=
trap 'kill -KILL $reg_pid_bench 2>/dev/null; rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../tests/integration/images_lib.sh"
img_need /usr/bin/docker-registry skopeo python3

# ---- the image: files of /usr, split into layers -----------------------------------------------
per_layer=$((size_mib * 1024 * 1024 / nlayers))
mapfile -t files < <(find /usr/lib /usr/share -xdev -type f -size -8M -readable 2>/dev/null | sort)
layout=$tmp/layout work=$tmp/work
mkdir -p "$layout/blobs/sha256" "$work"
layers_json=() diffs_json=() i=0 used=0 total=0
for ((l = 0; l < nlayers; l++)); do
  root=$work/root$l
  mkdir -p "$root"
  used=0
  while [[ $used -lt $per_layer && $i -lt ${#files[@]} ]]; do
    f=${files[$i]}
    i=$((i + 1))
    mkdir -p "$root$(dirname "$f")"
    cp -p "$f" "$root$f" 2>/dev/null || continue
    used=$((used + $(stat -c %s "$f")))
  done
  total=$((total + used))
  read -r diff dig sz < <(img_tar_layer "$root" "$work/layer$l.tar.gz")
  cp "$work/layer$l.tar.gz" "$layout/blobs/sha256/$dig"
  layers_json+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$dig\",\"size\":$sz}")
  diffs_json+=("\"sha256:$diff\"")
  rm -rf "$root"
done
printf '{"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/sh"]},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
  "$(IFS=,; echo "${diffs_json[*]}")" >"$work/config.json"
cfg=$(img_blob "$layout" "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
  "$cfg" "$(stat -c %s "$work/config.json")" "$(IFS=,; echo "${layers_json[*]}")" >"$work/manifest.json"
man=$(img_blob "$layout" "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
  "$man" "$(stat -c %s "$work/manifest.json")" >"$layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
compressed=$(cat "$work"/layer*.tar.gz | wc -c)

# ---- the registry ---------------------------------------------------------------------------------
reg_start bench
sed -i 's/log: {level: error}/log: {level: info}/' "$tmp/reg-bench/config.yml"
kill -KILL "$reg_pid_bench"; wait "$reg_pid_bench" 2>/dev/null
/usr/bin/docker-registry serve "$tmp/reg-bench/config.yml" >"$tmp/reg-bench/log" 2>&1 &
reg_pid_bench=$!
until curl -s -o /dev/null "http://127.0.0.1:$reg_port_bench/v2/"; do sleep 0.1; done
host=127.0.0.1:$reg_port_bench
img_push "$layout" "$host/bench:latest" --dest-tls-verify=false
printf 'configs:\n  "%s":\n    plain_http: true\n' "$host" >"$tmp/registries.yaml"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / 1048576 / s }'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

echo "image: $(mib "$total") MiB in $nlayers layers ($(mib "$compressed") MiB gzip), $(nproc) CPUs"
for ((r = 1; r <= runs; r++)); do
  rm -rf "$tmp/store" "$tmp/untar"
  sync; t=$(now)
  "$xpool" image pull -q --data-dir "$tmp/store" --registries "$tmp/registries.yaml" "$host/bench:latest" >/dev/null || exit 1
  pull=$(since "$t")
  mkdir -p "$tmp/untar"; sync; t=$(now)
  for l in "$work"/layer*.tar.gz; do tar -xzf "$l" -C "$tmp/untar"; done
  untar=$(since "$t")
  t=$(now)
  for l in "$work"/layer*.tar.gz; do gzip -dc "$l" >/dev/null; done
  gunzip=$(since "$t")
  echo "run $r: first pull ${pull}s = $(rate "$total" "$pull") MiB/s unpacked ($(rate "$compressed" "$pull") MiB/s downloaded); tar -xzf ${untar}s = $(rate "$total" "$untar") MiB/s; gzip -d alone ${gunzip}s"
done
before=$(grep -c '"GET /v2/' "$tmp/reg-bench/log")
blobs_before=$(grep -c '"GET /v2/bench/blobs/' "$tmp/reg-bench/log")
t=$(now)
"$xpool" image pull -q --data-dir "$tmp/store" --registries "$tmp/registries.yaml" "$host/bench:latest" >/dev/null
again=$(since "$t")
echo "second pull: ${again}s, $(($(grep -c '"GET /v2/' "$tmp/reg-bench/log") - before)) requests to the registry, $(($(grep -c '"GET /v2/bench/blobs/' "$tmp/reg-bench/log") - blobs_before)) of them for blobs"
