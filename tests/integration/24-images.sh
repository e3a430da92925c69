#!/usr/bin/env bash
# The node's image store (docs/images.md), against real registries on loopback: Debian's
# docker-registry (plain HTTP; TLS with basic authentication) holding images built here from
# busybox-static and pushed with skopeo, one of them the seed's ai-framework:latest (no command;
# its entrypoint logs the devices it sees), and a registry that misbehaves on purpose
# (fake_registry.py). Checked: `xpool image pull|list|inspect|import|rm|prune`, TLS and basic
# auth with the node's credentials file, a second pull that downloads and unpacks nothing, a zstd
# layer (skopeo's recompression: pulled, unpacked and run to Completed), a
# registry served by its mirror (and, missing from both, an error saying what each answered), OCI
# layout and docker-archive imports; every bad case (hostile layers, malformed documents, a
# digest mismatch, 401/404/500, a registry that hangs) a clear error that leaves nothing in the
# store; then the agent: Pulling/Pulled, ErrImagePull and ImagePullBackOff, ErrImageNeverPull,
# "already present", a pod's imagePullSecrets (an API Secret), and the Node's status.images.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/images_lib.sh"
img_need /usr/bin/docker-registry skopeo htpasswd openssl curl /usr/bin/python3
[[ $(id -u) -eq 0 ]] || { echo "SKIP: unpacking layers (owners, whiteouts) needs root"; exit 77; }
server_pid= agent_pid= fake_pid= reg_pid_plain= reg_pid_secure=
cleanup() {
  for pid in $agent_pid $server_pid $fake_pid $reg_pid_plain $reg_pid_secure; do kill -KILL "$pid" 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- images and registries ------------------------------------------------------------------
img_ai_framework "$tmp/ai"
mkdir -p "$tmp/extra/opt"; echo second >"$tmp/extra/opt/second"
img_layout "$tmp/two" "" "$tmp/extra"
reg_start plain
reg_start secure tls auth
plain=127.0.0.1:$reg_port_plain secure=127.0.0.1:$reg_port_secure
img_push "$tmp/ai" "$plain/ai-framework:latest" --dest-tls-verify=false
img_push "$tmp/two" "$plain/two:1.0" --dest-tls-verify=false
# an image of its own (its layer shares no diff_id with another, so the pull unpacks it), whose
# gzip layer skopeo recompresses with zstd (an OCI manifest, tar+zstd)
printf '#!/bin/sh\necho "zstd layer: unpacked, and its entrypoint ran"\n' >"$tmp/zstd-entry.sh"
img_layout "$tmp/zsrc" "$tmp/zstd-entry.sh"
img_push "$tmp/zsrc" "$plain/ai-zstd:1" --dest-tls-verify=false --dest-compress-format zstd
img_push "$tmp/ai" "$secure/team/ai-framework:2.0" --dest-cert-dir "$tmp/reg-secure" --dest-creds puller:s3cret
/usr/bin/python3 "$src/tests/integration/fake_registry.py" 0 300 >"$tmp/fake.port" 2>"$tmp/fake.err" &
fake_pid=$!
wait_until "the fake registry starts" 10 test -s "$tmp/fake.port"
fake=127.0.0.1:$(cat "$tmp/fake.port")
cat >"$tmp/registries.yaml" <<EOF
mirrors:
  "127.0.0.1:1": # a registry that is not there, mirrored by the plain one
    endpoint: ["http://$plain"]
configs:
  "$plain":
    plain_http: true
  "$secure":
    tls:
      ca_file: $tmp/reg-secure/ca.crt
  "$fake":
    plain_http: true
    untrusted: true
timeouts:
  connect: 8s # a TLS handshake with the Go registry under a loaded sanitizer run
  stall: 2s
EOF
printf '{"auths": {"https://%s/v1/": {"auth": "%s"}}}\n' "$secure" "$(printf puller:s3cret | base64)" >"$tmp/auth.json"
img() { "$xpool" image --data-dir "$tmp/node" --registries "$tmp/registries.yaml" "$@"; }
store=$tmp/node/images

# ---- pull, list, inspect ----------------------------------------------------------------------
check "pull ai-framework" 0 img pull "$plain/ai-framework:latest"
expect_in "pull says what it pulled" "$tmp/out" "$plain/ai-framework:latest: sha256:"
check "list" 0 img list
expect_in "list row" "$tmp/out" "$plain/ai-framework"
check "inspect by short name" 0 img inspect "$plain/ai-framework"
expect_in "entrypoint" "$tmp/out" '"/usr/local/bin/entrypoint"'
expect_in "env" "$tmp/out" '"IMAGE_VAR=from-image"'
expect_in "workingDir" "$tmp/out" '"workingDir": "/tmp"'
expect_in "exposed port" "$tmp/out" '"8080/tcp"'
layer=$(sed -n 's/^ *"\(\/.*\/fs\)",\{0,1\}$/\1/p' "$tmp/out" | head -1)
[[ -x "$layer/bin/busybox" && -L "$layer/bin/sh" && -x "$layer/usr/local/bin/entrypoint" ]] ||
  { echo "FAIL the unpacked layer ($layer) lacks busybox or the entrypoint"; failures=$((failures + 1)); }
id=$(sed -n 's/^ *"id": "\(sha256:[0-9a-f]*\)".*/\1/p' "$tmp/out")
digest=$(sed -n 's/^ *"digest": "\(sha256:[0-9a-f]*\)".*/\1/p' "$tmp/out")
check "inspect by ID prefix" 0 img inspect "${id:7:12}"
# -q: the IDs as the table shows them (docker images -q), whole with --no-trunc
check "list -q" 0 img list -q
[[ "$(cat "$tmp/out")" == "${id:7:12}" ]] || { echo "FAIL list -q: '$(cat "$tmp/out")', expected '${id:7:12}'"; failures=$((failures + 1)); }
check "list -q --no-trunc" 0 img list -q --no-trunc
[[ "$(cat "$tmp/out")" == "$id" ]] || { echo "FAIL list -q --no-trunc: '$(cat "$tmp/out")', expected '$id'"; failures=$((failures + 1)); }
check "pull again" 0 img pull "$plain/ai-framework:latest"
expect_in "nothing downloaded twice" "$tmp/err" "(already here)"
check "through a mirror" 0 img pull "127.0.0.1:1/ai-framework:latest"
check "missing from the mirror and the registry" 1 img pull "127.0.0.1:1/nothere:1"
expect_in "the mirror's answer is said too" "$tmp/err" "before it, the mirror: GET http://$plain/v2/nothere/manifests/1"
check "two layers" 0 img pull "$plain/two:1.0"
expect_in "two layers pulled" "$tmp/out" "2 layers"

# ---- a zstd layer ------------------------------------------------------------------------------
check "the registry holds a zstd layer" 0 curl -sf -H "Accept: application/vnd.oci.image.manifest.v1+json" \
  "http://$plain/v2/ai-zstd/manifests/1"
cp "$tmp/out" "$tmp/zstd-manifest.json"
expect_in "... as tar+zstd" "$tmp/zstd-manifest.json" '"application/vnd.oci.image.layer.v1.tar+zstd"'
check "... and no gzip layer" 1 grep -qF "tar+gzip" "$tmp/zstd-manifest.json"
# xpool reads layers with the node's libarchive (dlopen): with its zstd filter the layer unpacks,
# without it the pull says so
# (awk reads to the end: one that exits at the match leaves ldconfig a closed pipe, SIGPIPE, and
# pipefail stops the script; the CI saw it)
archive_so=$(ldconfig -p | awk '/libarchive\.so\.13 / && !found {found = $NF} END {print found}')
if [[ -n "$archive_so" && "$(ldd "$archive_so")" == *libzstd* ]]; then
  zstd_ok=1
  not_here() { if grep -qF "(already here)" "$tmp/err"; then echo "FAIL $1: a layer was already here"; failures=$((failures + 1)); fi; }
  check "pull the zstd image" 0 img pull "$plain/ai-zstd:1"
  expect_in "... its layer" "$tmp/err" "  layer sha256:"
  not_here "... downloaded and unpacked, not shared"
  check "inspect it" 0 img inspect "$plain/ai-zstd:1"
  zlayer=$(sed -n 's/^ *"\(\/.*\/fs\)",\{0,1\}$/\1/p' "$tmp/out" | head -1)
  [[ -x "$zlayer/bin/busybox" && -L "$zlayer/bin/sh" && -x "$zlayer/usr/local/bin/entrypoint" ]] ||
    { echo "FAIL the unpacked zstd layer ($zlayer) lacks busybox or the entrypoint"; failures=$((failures + 1)); }
else
  zstd_ok=
  echo "NOTE: this node's libarchive ($archive_so) has no zstd: the pull must fail saying so"
  check "pull the zstd image without libarchive's zstd" 1 img pull "$plain/ai-zstd:1"
  expect_in "says why" "$tmp/err" "libarchive lacks gzip or zstd"
fi

# ---- TLS and basic authentication ---------------------------------------------------------------
check "TLS without the CA" 1 "$xpool" image --data-dir "$tmp/node" pull "$secure/team/ai-framework:2.0"
expect_in "TLS error" "$tmp/err" "TLS"
check "no credentials" 1 img pull "$secure/team/ai-framework:2.0"
expect_in "401 said" "$tmp/err" "refused access (401"
check "credentials file" 0 img --auth-file "$tmp/auth.json" pull "$secure/team/ai-framework:2.0"
check "bad credentials file" 1 img --auth-file "$tmp/registries.yaml" list
expect_in "says which file" "$tmp/err" "$tmp/registries.yaml"
printf 'configs:\n  "x":\n    tls:\n      ca_fle: /x\n' >"$tmp/typo.yaml"
check "registries typo" 1 "$xpool" image --data-dir "$tmp/node" --registries "$tmp/typo.yaml" list
expect_in "typo at its place" "$tmp/err" "typo.yaml:4:7: configs.\"x\": unknown key \"ca_fle\""

# ---- bad input: each a clear error, nothing left behind ----------------------------------------
layers_before=$(ls "$store/layers" | wc -l)
bad() { # case, expected text
  check "bad $1" 1 timeout 30 "$xpool" image --data-dir "$tmp/node" --registries "$tmp/registries.yaml" pull "$fake/$1:1"
  expect_in "bad $1 says why" "$tmp/err" "$2"
}
bad traversal "entry \"../../escaped\": '..' leads out of the layer root"
bad symlink "entry \"evil/escaped\": its path leads out of the layer root through a symbolic link"
bad hardlink "entry \"passwd\": hard link"
bad device "entry \"dev/sda\": a character device node (8:0) in an untrusted image"
bad truncated "truncated gzip input"
bad badconfig "rootfs.diff_ids: must be an array"
bad mismatch "does not match its digest"
bad badjson "not JSON"
bad badindex "manifests[0].digest: must be sha256:"
bad schema1 "schema 1"
bad e500 "the registry answered 500: storage exploded"
bad e401 "refused access (401"
bad nope "not found (404: manifest unknown"
bad hang "did not answer in time"
[[ ! -e /tmp/escaped && ! -e "$store/escaped" && ! -e "$tmp/escaped" ]] || { echo "FAIL a hostile layer wrote outside"; failures=$((failures + 1)); }
[[ -z "$(ls -A "$store/tmp")" ]] || { echo "FAIL tmp/ holds leftovers:"; ls -la "$store/tmp"; failures=$((failures + 1)); }
[[ $(ls "$store/layers" | wc -l) -eq $layers_before ]] || { echo "FAIL a failed pull left a layer"; ls "$store/layers"; failures=$((failures + 1)); }
# a pull killed half-way through a layer: its temporary directory goes at the next open
"$xpool" image --data-dir "$tmp/node" --registries "$tmp/registries.yaml" pull "$fake/slow:1" >/dev/null 2>&1 &
slow_pid=$!
wait_until "the slow pull is unpacking" 20 compgen -G "$store/tmp/layer-*/fs/etc"
kill -KILL "$slow_pid"; wait "$slow_pid" 2>/dev/null || true
check "open after a killed pull" 0 img list
[[ -z "$(ls -A "$store/tmp")" ]] || { echo "FAIL the killed pull's leftovers stayed:"; ls -la "$store/tmp"; failures=$((failures + 1)); }
[[ $(ls "$store/layers" | wc -l) -eq $layers_before ]] || { echo "FAIL the killed pull left a layer"; failures=$((failures + 1)); }
check "bearer token, no credentials" 1 img pull "$fake/bearer:1"
expect_in "bearer refused" "$tmp/err" "refused access (401"
printf '{"auths": {"%s": {"username": "puller", "password": "s3cret"}}}\n' "$fake" >"$tmp/fake-auth.json"
check "bearer token from the realm" 0 img --auth-file "$tmp/fake-auth.json" pull "$fake/bearer:1"
check "setuid stripped (untrusted)" 0 img pull "$fake/setuid:1"
su=$(ls -d "$store"/layers/*.untrusted)/fs/bin/su
[[ -f "$su" && ! -u "$su" ]] || { echo "FAIL the setuid bit of $su stayed"; failures=$((failures + 1)); }

# ---- import -------------------------------------------------------------------------------------
skopeo copy --quiet --insecure-policy "oci:$tmp/two:latest" "oci-archive:$tmp/two-oci.tar:example.com/imported:oci"
skopeo copy --quiet --insecure-policy "oci:$tmp/ai:latest" "docker-archive:$tmp/ai-docker.tar:example.com/imported:docker"
check "import OCI layout" 0 img import "$tmp/two-oci.tar"
expect_in "OCI name" "$tmp/out" "example.com/imported:oci"
check "import docker-archive" 0 img import "$tmp/ai-docker.tar"
expect_in "docker-archive name" "$tmp/out" "example.com/imported:docker"
check "inspect imported" 0 img inspect example.com/imported:docker
expect_in "imported entrypoint" "$tmp/out" '"/usr/local/bin/entrypoint"'
echo "not a tarball" >"$tmp/junk.tar"
check "import junk" 1 img import "$tmp/junk.tar"
expect_in "junk said" "$tmp/err" "junk.tar"

# ---- rm, prune ----------------------------------------------------------------------------------
check "rm" 0 img rm "$plain/two:1.0" example.com/imported:oci
check "rm again" 1 img rm "$plain/two:1.0"
expect_in "rm unknown" "$tmp/err" "no image"
check "prune" 0 img prune
check "list after rm" 0 img list
[[ $(grep -c "two\|imported:oci" "$tmp/out") -eq 0 ]] || { echo "FAIL rm left the image"; cat "$tmp/out"; failures=$((failures + 1)); }
[[ ! -e "$store/layers/$(sha256sum "$tmp/extra/opt/second" | cut -c1-8)" ]] || true

# ---- the agent: pull policy, events, reasons, Node images ---------------------------------------
data=$tmp/server
export KUBECONFIG=$data/admin.kubeconfig
"$xpool" token create --node img1 --data-dir "$data" >"$tmp/node.token" 2>/dev/null
"$xpool" server --no-tls --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
url=
for _ in $(seq 150); do
  url=$(sed -n 's|.*xpool server listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start"; cat "$tmp/server.log"; exit 1; }
"$xpool" agent --server "$url" --token-file "$tmp/node.token" --node-name img1 --data-dir "$tmp/node" \
  --netns-dir "$tmp/netns" --ipc-dir "$tmp/ipc" --registries "$tmp/registries.yaml" --listen 127.0.0.1:0 --heartbeat 500ms --backoff 1s >"$tmp/agent.log" 2>&1 &
agent_pid=$!
diag_log "$tmp/agent.log"
pod() { # name image [policy]
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: %s\n%s' \
    "$1" "$2" "${3:+    imagePullPolicy: $3
}" >"$tmp/$1.yaml"
  "$xpool" apply -f "$tmp/$1.yaml" --server "$url" >/dev/null
}
describe() { "$xpool" describe pod "$1" --server "$url" >"$tmp/desc.$1" 2>&1; grep -qF -- "$2" "$tmp/desc.$1"; }
pod framework "$plain/ai-framework:latest"
pod missing "$plain/nope:1"
pod never "$plain/not-here:1" Never
pod present "$plain/ai-framework@$digest"
pod never-present "$plain/ai-framework@$digest" Never
wait_until "Pulling event" 30 describe framework "Pulling image \"$plain/ai-framework:latest\""
wait_until "Pulled event" 30 describe framework "Successfully pulled image \"$plain/ai-framework:latest\" in"
wait_until "after the pull, it runs from its image (crun)" 30 describe framework "Completed"
if [[ -n "$zstd_ok" ]]; then
  pod zstd "$plain/ai-zstd:1" Always
  wait_until "the zstd image: Pulled" 30 describe zstd "Successfully pulled image \"$plain/ai-zstd:1\" in"
  wait_until "... runs its entrypoint to Completed" 30 describe zstd "Completed"
  check "the zstd image's output" 0 "$xpool" logs zstd --server "$url"
  expect_in "... its entrypoint ran" "$tmp/out" "zstd layer: unpacked, and its entrypoint ran"
fi
wait_until "ErrImagePull" 30 describe missing "Failed to pull image \"$plain/nope:1\""
wait_until "ImagePullBackOff" 30 describe missing "ImagePullBackOff"
wait_until "Back-off event" 30 describe missing "Back-off pulling image"
wait_until "ErrImageNeverPull" 30 describe never "is not present with pull policy of Never"
wait_until "already present" 30 describe present "already present on machine"
wait_until "Never, present: the kubelet's Pulled event too" 30 describe never-present "already present on machine"
# imagePullSecrets through an API Secret (kubernetes.io/dockerconfigjson): the node reads the
# Secret its pod names (the node authorizer's rule); Always, as the image is in the store already
printf '{"auths": {"%s": {"auth": "%s"}}}' "$secure" "$(printf puller:s3cret | base64)" >"$tmp/regcred.json"
printf '{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred"}, "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "%s"}}' \
  "$(base64 -w0 "$tmp/regcred.json")" >"$tmp/regcred.json.body"
admin_token=$(sed -n 's/^ *token: //p' "$KUBECONFIG" | head -1)
check "pull secret" 0 curl -sf -o /dev/null -H "Authorization: Bearer $admin_token" -H "Content-Type: application/json" \
  --data-binary @"$tmp/regcred.json.body" "$url/api/v1/namespaces/default/secrets"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: withsecret}\nspec:\n  restartPolicy: Never\n  imagePullSecrets: [{name: regcred}]\n  containers:\n  - {name: c, image: "%s", imagePullPolicy: Always}\n' \
  "$secure/team/ai-framework:2.0" >"$tmp/withsecret.yaml"
check "pod with imagePullSecrets" 0 "$xpool" apply -f "$tmp/withsecret.yaml" --server "$url"
pod nosecret "$secure/team/ai-framework:2.0" Always
wait_until "pulled with the pod's imagePullSecret" 30 describe withsecret "Successfully pulled image \"$secure/team/ai-framework:2.0\" in"
wait_until "refused without one" 30 describe nosecret "Failed to pull image \"$secure/team/ai-framework:2.0\""
wait_until "the pod with the secret runs to its end" 30 describe withsecret "Completed"
node_images() { "$xpool" get node img1 -o yaml --server "$url" | grep -A3 "images:" | grep -F "$plain/ai-framework" >/dev/null; }
wait_until "Node status.images" 30 node_images
kill -TERM "$agent_pid"; wait "$agent_pid" 2>/dev/null || true; agent_pid=
finish images
