# Sourced by the image tests and bench/bench_image_pull.sh (after lib.sh or with $tmp set): images
# made here from what Debian ships, and Debian's docker-registry on a free loopback port.
#   img_layout DIR [ENTRYPOINT_SCRIPT] [EXTRA_FILES_DIR]   an OCI image layout from busybox-static
#   img_ai_framework DIR                                   the seed's ai-framework:latest layout
#   img_tar_layer ROOTDIR OUT.tar.gz                       a gzip layer of ROOTDIR
#   reg_start NAME [tls] [auth]                            a registry: sets reg_url_NAME, reg_pid_NAME
#   img_push LAYOUT:TAG HOST/REPO:TAG [skopeo args...]     skopeo copy into a registry

img_need() { # skips (77) the test with the reason when a tool is missing
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/install-deps installs it)"; exit 77; }
  done
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# A layer: ROOTDIR as a reproducible tar, gzipped; prints "DIFFID DIGEST SIZE".
img_tar_layer() {
  local root=$1 out=$2
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf "$out.tar" .
  gzip -n -c "$out.tar" >"$out"
  echo "$(sha256_of "$out.tar") $(sha256_of "$out") $(stat -c %s "$out")"
  rm -f "$out.tar"
}

# Writes a blob file into LAYOUT/blobs/sha256 and prints its digest hex.
img_blob() {
  local layout=$1 file=$2 hex
  hex=$(sha256_of "$file")
  mkdir -p "$layout/blobs/sha256"
  cp "$file" "$layout/blobs/sha256/$hex"
  echo "$hex"
}

# An OCI image layout in DIR with one busybox layer (and EXTRA's files in a second one), whose
# entrypoint is SCRIPT (installed as /usr/local/bin/entrypoint) or none. Tag "latest".
img_layout() {
  local layout=$1 script=${2:-} extra=${3:-} root=$tmp/rootfs.$$ work=$tmp/layout.$$
  local layers=() diffs=() sizes=() l cfg man cfg_hex man_hex entry='null'
  rm -rf "$layout" "$root" "$work"; mkdir -p "$layout" "$root/bin" "$root/usr/local/bin" "$root/etc" "$root/tmp" "$work"
  cp /bin/busybox "$root/bin/busybox"
  for a in sh ls echo cat env grep sort sleep id true false; do ln -s busybox "$root/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  if [[ -n "$script" ]]; then
    cp "$script" "$root/usr/local/bin/entrypoint"; chmod 0755 "$root/usr/local/bin/entrypoint"
    entry='["/usr/local/bin/entrypoint"]'
  fi
  local dirs=("$root")
  [[ -n "$extra" ]] && dirs+=("$extra")
  local i=0
  for d in "${dirs[@]}"; do
    read -r diff dig size < <(img_tar_layer "$d" "$work/layer$i.tar.gz")
    img_blob "$layout" "$work/layer$i.tar.gz" >/dev/null
    layers+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$dig\",\"size\":$size}")
    diffs+=("\"sha256:$diff\"")
    i=$((i + 1))
  done
  cfg=$work/config.json
  printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","IMAGE_VAR=from-image"],"Entrypoint":%s,"WorkingDir":"/tmp","ExposedPorts":{"8080/tcp":{}},"Labels":{"org.example.role":"test"}},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$entry" "$(IFS=,; echo "${diffs[*]}")" >"$cfg"
  cfg_hex=$(img_blob "$layout" "$cfg")
  man=$work/manifest.json
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "$cfg_hex" "$(stat -c %s "$cfg")" "$(IFS=,; echo "${layers[*]}")" >"$man"
  man_hex=$(img_blob "$layout" "$man")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
    "$man_hex" "$(stat -c %s "$man")" >"$layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  rm -rf "$root" "$work"
}

# The seed's ai-framework:latest (its pod gives no command): busybox and an entrypoint that logs
# the devices the container sees (tests/data/images/ai-framework.sh).
img_ai_framework() {
  img_layout "$1" "${XPOOL_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}/tests/data/images/ai-framework.sh"
}

# Debian's docker-registry on a free port: plain HTTP, or TLS with a self-signed CA
# ($tmp/reg-NAME/ca.crt) and/or basic authentication (user "puller", password "s3cret").
reg_start() {
  local name=$1 tls=${2:-} auth=${3:-} dir=$tmp/reg-$1 port scheme=http
  mkdir -p "$dir/data"
  port=$(free_port)
  {
    echo "version: 0.1"
    echo "log: {level: error}"
    echo "storage: {filesystem: {rootdirectory: $dir/data}, delete: {enabled: true}}"
    echo "http:"
    echo "  addr: 127.0.0.1:$port"
    if [[ "$tls" == tls ]]; then
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$dir/key.pem" -out "$dir/ca.crt" 2>/dev/null
      echo "  tls: {certificate: $dir/ca.crt, key: $dir/key.pem}"
      scheme=https
    fi
    if [[ "$auth" == auth ]]; then
      htpasswd -Bbn puller s3cret >"$dir/htpasswd" 2>/dev/null
      echo "auth: {htpasswd: {realm: xpool-test, path: $dir/htpasswd}}"
    fi
  } >"$dir/config.yml"
  /usr/bin/docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 &
  eval "reg_pid_$name=$!"
  eval "reg_port_$name=$port"
  local deadline=$((SECONDS + 15))
  until curl -sk -o /dev/null "$scheme://127.0.0.1:$port/v2/"; do
    [[ $SECONDS -lt $deadline ]] || { echo "SKIP: docker-registry did not start:"; cat "$dir/log"; exit 77; }
    sleep 0.1
  done
}

img_push() { # LAYOUT_DIR HOST/REPO:TAG [skopeo dest flags...]
  local layout=$1 dest=$2
  shift 2
  skopeo copy --quiet --insecure-policy "$@" "oci:$layout:latest" "docker://$dest" >/dev/null
}

# A bridge and a /24 of the test's own for CNI's bridge plugin (10.OCTET.N.0/24, a bridge named
# NAME and four hex digits): sets br, net and net_flags (the agent's --cni-conf-dir and
# --netns-dir, and --ipc-dir: the pods' namespaces stay the test's own). Where CNI's plugins, ip or network namespaces are missing, br stays empty and
# net_flags puts pods on the node's network. The caller deletes $br at its end.
cni_bridge() {
  local octet=$1 name=$2 n cand
  net_flags=(--pod-network host --ipc-dir "$tmp/ipc") br= net=
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] && command -v ip >/dev/null &&
    unshare -n true 2>/dev/null || return 0
  for _ in $(seq 40); do
    n=$((RANDOM % 250 + 2)) cand=$name$(printf '%04x' $((RANDOM % 65536)))
    ip link show "$cand" >/dev/null 2>&1 && continue
    [[ -z "$(ip -4 route show "10.$octet.$n.0/24")" ]] || continue
    ip link add "$cand" type bridge 2>/dev/null || continue
    br=$cand net=10.$octet.$n
    break
  done
  [[ -n "$br" ]] || return 0
  ip addr add "$net.1/24" dev "$br" && ip link set "$br" up
  mkdir -p "$tmp/cni" "$tmp/ipam"
  printf '{"cniVersion":"1.0.0","name":"%s-test","plugins":[{"type":"bridge","bridge":"%s","isGateway":false,"ipMasq":false,"ipam":{"type":"host-local","dataDir":"%s/ipam","ranges":[[{"subnet":"%s.0/24","gateway":"%s.1"}]]}}]}\n' \
    "$name" "$br" "$tmp" "$net" "$net" >"$tmp/cni/10-test.conflist"
  net_flags=(--cni-conf-dir "$tmp/cni" --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc")
}
