#!/usr/bin/env bash
# Containers from images under an OCI runtime (docs/containers.md), against a real registry on
# loopback (Debian's docker-registry, as docker.io's mirror) and images built here from
# busybox-static, with a node agent whose simulated GPUs and NPUs have stand-in device nodes
# (mknod) described in CDI specs:
# - the seed's pod, unchanged (tests/data/manifests/seed-pod.yaml: an image and no command), is
#   pulled (Pulling/Pulled events), runs its image's entrypoint to Completed and logs exactly its
#   GPU's and NPUs' nodes; its podIP is its own network namespace's address (the CNI bridge);
#   the other GPU's node is not in the container, and opening it (mknod'ed there) fails with
#   EPERM where opening its own gives ENXIO (no driver behind a stand-in);
# - command/args against the image's Entrypoint/Cmd as Kubernetes' table says; the image's env
#   under the pod's; workingDir and user from the image unless the pod sets them;
# - configMap and secret volumes (an item at its path, read-only); emptyDir shared by two containers (which share the pod's IPC namespace, not the node's), hostPath (allowed, read-only, refused outside
#   --allow-host-path); readOnlyRootFilesystem; a seccomp-denied call failing with EPERM (and
#   not with seccompProfile Unconfined); capabilities as the process runtime gives them;
#   allowPrivilegeEscalation false and true;
# - exec (stdin, SPDY) and cp into an image's container, in its pid namespace and root, as its
#   user (the image's or runAsUser) and under its seccomp filter; a non-root container may use
#   ICMP echo sockets and port 80 in its pod's network;
# - xpool run --image; runc as a runtime class; an unknown runtime class refused with its reason;
#   AppArmor's profile where the kernel has AppArmor (else the agent says it has none);
# - the agent SIGKILLed while a container is being created (the runtime held up in `create`),
#   alone and with the container's shim, and with its shim in crun's one-call `run --detach`
#   (recorded lost, restarted): no container runs twice, and once the pods are deleted no mount,
#   bundle, overlay upper layer or runtime state is left;
# - a running container's shim SIGKILLed: the container is killed, recorded (137) and restarted.
# Needs root, crun, overlayfs, docker-registry and skopeo (else exit 77, saying which).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/images_lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (overlay mounts, namespaces, cgroups)"; exit 77; }
img_need /usr/bin/docker-registry skopeo curl /usr/bin/python3
command -v crun >/dev/null || { echo "SKIP: no crun, the default OCI runtime (scripts/install-deps installs it)"; exit 77; }
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || { echo "SKIP: this kernel has no overlayfs: containers cannot get a root file system"; exit 77; }
[[ -d /sys/fs/cgroup/devices || -f /sys/fs/cgroup/cgroup.controllers ]] || { echo "SKIP: no cgroups"; exit 77; }

server_pid= agent_pid= reg_pid_plain=
br= uids=
cleanup() {
  {
    kill -KILL $agent_pid $server_pid $reg_pid_plain || true
    pkill -KILL -f "$tmp/node/containers" || true
    wait || true
  } 2>/dev/null
  umount -R -l "$tmp/netns" 2>/dev/null || true
  umount -l "$tmp/host/data/inner" 2>/dev/null || true
  [[ -n "$br" ]] && ip link del "$br" 2>/dev/null
  release_tmp
  rmdir /sys/fs/cgroup/*/"xpool-noplace-$$" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- images: the seed's in a registry, docker.io's mirror; a test image imported ----------------
"$src/scripts/seed-image" "$tmp/ai-framework.tar"
reg_start plain
plain=127.0.0.1:$reg_port_plain
skopeo copy --quiet --insecure-policy --dest-tls-verify=false "oci-archive:$tmp/ai-framework.tar" \
  "docker://$plain/library/ai-framework:latest" >/dev/null
cat >"$tmp/registries.yaml" <<EOF
mirrors:
  docker.io:
    endpoint: ["http://$plain"]
EOF

# tools: busybox, an Entrypoint and a Cmd, env, a working directory, a user and a group
tools_image() { # tag, user: an OCI layout in $tmp/tools-TAG, imported as localhost/tools:TAG
  local tag=$1 user=$2 root=$tmp/tools-root lay=$tmp/tools-$1 d
  if [[ ! -d $root ]]; then
    mkdir -p "$root"/{bin,etc,srv,tmp,root,home/app}
    cp /bin/busybox "$root/bin/"
    for a in sh ls cat echo env grep sort sleep id true false touch mknod stat unshare ip wc head pwd mkdir test dd tar tr nc kill; do
      ln -s busybox "$root/bin/$a"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n' >"$root/etc/passwd"
    printf 'root:x:0:\nstaff:x:50:app\napp:x:1000:\n' >"$root/etc/group"
    chmod 1777 "$root/tmp"
    read -r diff dig size < <(img_tar_layer "$root" "$tmp/tools-layer.tar.gz")
    echo "$diff $dig $size" >"$tmp/tools-layer.ids"
  fi
  read -r diff dig size <"$tmp/tools-layer.ids"
  mkdir -p "$lay"
  img_blob "$lay" "$tmp/tools-layer.tar.gz" >/dev/null
  printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin","IMAGE_VAR=from-image","SHARED=from-image"],"Entrypoint":["/bin/echo","from-entrypoint"],"Cmd":["from-cmd"],"WorkingDir":"/srv","User":"%s"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$user" "$diff" >"$tmp/tools-config.json"
  d=$(img_blob "$lay" "$tmp/tools-config.json")
  echo "sha256:$d" >"$tmp/tools-$tag.id" # its ID: the imageID of a container run from it
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$d" "$(stat -c %s "$tmp/tools-config.json")" "$dig" "$size" >"$tmp/tools-manifest.json"
  d=$(img_blob "$lay" "$tmp/tools-manifest.json")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"localhost/tools:%s"}}]}' \
    "$d" "$(stat -c %s "$tmp/tools-manifest.json")" "$tag" >"$lay/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$lay/oci-layout"
  tar -C "$lay" -cf "$tmp/tools-$tag.tar" .
  "$xpool" image import --data-dir "$tmp/node" "$tmp/tools-$tag.tar" >/dev/null
}
tools_image 1 ""
tools_image app "app:staff"

# ---- a node: two GPUs and two NPUs, simulated, their nodes stand-ins --------------------------
cat >"$tmp/node.yaml" <<'EOF'
devices:
- {id: sim-gpu-0, kind: gpu, vendor: NVIDIA, model: NVIDIA H100 80GB HBM3, resourceName: nvidia.com/gpu, index: 0, deviceNodes: [/dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm]}
- {id: sim-gpu-1, kind: gpu, vendor: NVIDIA, model: NVIDIA H100 80GB HBM3, resourceName: nvidia.com/gpu, index: 1, deviceNodes: [/dev/nvidia1, /dev/nvidiactl, /dev/nvidia-uvm]}
- {kind: npu, count: 2, vendor: Example, model: Example NPU, resourceName: vendor.com/npu, deviceNodes: ["/dev/npu{index}"]}
EOF
mkdir -p "$tmp/host/data/inner" "$tmp/elsewhere"
# a mount inside a hostPath reaches the container with it (volumes are bound recursively)
mount -t tmpfs -o size=1m xpool-inner "$tmp/host/data/inner"
echo inner-mount >"$tmp/host/data/inner/f"
# a runtime held up in create (while $tmp/hold exists), for the agent killed mid-start
cat >"$tmp/slow-crun" <<EOF
#!/bin/sh
case " \$* " in *" create "*) touch "$tmp/creating"; while [ -e "$tmp/hold" ]; do sleep 0.1; done;; esac
exec $(command -v crun) "\$@"
EOF
chmod +x "$tmp/slow-crun"
# crun and runc start a container in one call (`run --detach`, docs/containers.md "Speed"): a
# runtime named crun held up in that call, for the agent and shim killed in a one-call start
mkdir -p "$tmp/held"
cat >"$tmp/held/crun" <<EOF
#!/bin/sh
case " \$* " in *" run "*) touch "$tmp/running-held"; while [ -e "$tmp/hold-run" ]; do sleep 0.1; done;; esac
exec $(command -v crun) "\$@"
EOF
chmod +x "$tmp/held/crun"
# a runtime named crun that ignores the shim's cgroupsPath (its own group instead): a one-call start
# must fail closed (docs/containers.md "Speed"); it records its calls in $tmp/noplace.calls
mkdir -p "$tmp/noplace"
noplace_group=xpool-noplace-$$
cat >"$tmp/noplace/crun" <<EOF
#!/bin/sh
prev= bundle=
for a in "\$@"; do [ "\$prev" = --bundle ] && bundle=\$a; prev=\$a; done
case " \$* " in *" run "*) echo run >>"$tmp/noplace.calls";; *" create "*) echo create >>"$tmp/noplace.calls";; esac
[ -n "\$bundle" ] && sed -i 's|"cgroupsPath":"[^"]*"|"cgroupsPath":"/$noplace_group"|' "\$bundle/config.json"
exec $(command -v crun) "\$@"
EOF
chmod +x "$tmp/noplace/crun"

cni_bridge 252 xpc
[[ -n "$br" ]] ||
  echo "SKIP the pod's own network namespace: no CNI bridge plugin or network namespaces here (pods on the node's network)"

data=$tmp/server
export KUBECONFIG=$data/admin.kubeconfig
"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" >"$tmp/server.log" 2>&1 &
server_pid=$!
url=
for _ in $(seq 600); do
  url=$(sed -n 's|.*xpool server listening on \(https://127\.0\.0\.1:[0-9]*\).*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL the server did not start"; cat "$tmp/server.log"; exit 1; }
"$xpool" token create --node c1 --data-dir "$data" >"$tmp/c1.token" 2>/dev/null
start_agent() {
  "$xpool" agent --server "$url" --token-file "$tmp/c1.token" --ca-file "$data/pki/ca.crt" \
    --node-name c1 --data-dir "$tmp/node" \
    --node-description "$tmp/node.yaml" --registries "$tmp/registries.yaml" --listen 127.0.0.1:0 \
    --heartbeat 500ms --backoff 1s --allow-host-path "$tmp/host" --runtime-class "slow=$tmp/slow-crun" \
    --runtime-class "heldrun=$tmp/held/crun" --runtime-class "noplace=$tmp/noplace/crun" \
    --allow-privileged \
    "${net_flags[@]}" >>"$tmp/agent.log" 2>&1 &
  agent_pid=$!
}
start_agent
get() { kubectl get pod "$1" -o "jsonpath={$2}"; }
poll "node c1 Ready" 60 True kubectl get node c1 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
[[ $failures -eq 0 ]] || { tail -20 "$tmp/agent.log"; exit 1; }
check "the CDI spec of the GPUs" 0 cat "$tmp/node/cdi/xpool.io-gpu.json"
expect_in "a GPU's node is its stand-in" "$tmp/out" "\"hostPath\": \"$tmp/node/sim-dev/nvidia0\""
check "the stand-ins are character devices" 0 stat -c '%F %t' "$tmp/node/sim-dev/nvidia1" "$tmp/node/sim-dev/npu0"
expect_count "made with mknod, major 120 (0x78)" "$tmp/out" 2 "character special file 78"

# ---- the pods that need no device start beside the seed's (their starts overlap) -----------------
logs() { kubectl logs "$1" -c "$2" 2>&1 || true; }
phase() { get "$1" .status.phase; }
apply() { # name: applies $tmp/NAME.yaml with @TOOLS@, @APPUSER@ and @HOST@ filled in
  sed "s|@TOOLS@|localhost/tools:1|g; s|@APPUSER@|localhost/tools:app|g; s|@HOST@|$tmp/host|g" "$tmp/$1.yaml" >"$tmp/$1.applied"
  check "apply $1" 0 kubectl apply -f "$tmp/$1.applied"
}
waiting() { # pod: its first container's waiting reason and message
  get "$1" '.status.containerStatuses[0].state.waiting.reason'
}

cat >"$tmp/table.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: table}
spec:
  restartPolicy: Never
  containers:
  - {name: neither, image: @TOOLS@}
  - {name: args, image: @TOOLS@, args: [a1, a2]}
  - {name: command, image: @TOOLS@, command: [/bin/echo, c1]}
  - {name: both, image: @TOOLS@, command: [/bin/echo, c1], args: [a1]}
  - name: env
    image: @TOOLS@
    command: [sh, -c, 'echo "env: $IMAGE_VAR $SHARED $POD_VAR $(pwd) $HOSTNAME home=$HOME"; id']
    env: [{name: SHARED, value: from-pod}, {name: POD_VAR, value: pod}]
  - {name: workdir, image: @TOOLS@, workingDir: /tmp, command: [sh, -c, 'echo "cwd: $(pwd)"']}
  - {name: image-user, image: @APPUSER@, command: [sh, -c, 'id; echo "home=$HOME"']}
  - name: run-as
    image: @APPUSER@
    securityContext: {runAsUser: 2000, runAsGroup: 3000}
    command: [id]
EOF

# spec.hostname is the UTS name; with spec.subdomain the FQDN is in /etc/hosts, as the kubelet
cat >"$tmp/named.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: named}
spec:
  restartPolicy: Never
  hostname: db-0
  subdomain: workers
  containers:
  - {name: c, image: @TOOLS@, command: [sh, -c, 'echo "host: $(cat /proc/sys/kernel/hostname) $HOSTNAME"; grep db-0 /etc/hosts']}
EOF

cat >"$tmp/nonroot.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: nonroot}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers: [{name: c, image: @APPUSER@, command: [id]}]
EOF

# kubectl exec runs as the container's process does: its user (the image's by name, or
# runAsUser) and its seccomp filter, as runc/crun exec do; not as root and unfiltered
cat >"$tmp/execas.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: execas}
spec:
  containers:
  - {name: image-user, image: @APPUSER@, command: [sh, -c, 'id; exec sleep 300']}
  - name: run-as
    image: @APPUSER@
    securityContext: {runAsUser: 2000, runAsGroup: 3000}
    command: [sh, -c, 'id; exec sleep 300']
  - name: unprivileged
    image: @APPUSER@
    securityContext: {runAsUser: 2000, runAsGroup: 3000}
    command: [sh, -c, 'echo "ping: $(cat /proc/sys/net/ipv4/ping_group_range)"; nc -l -p 80 & sleep 1; kill $! && echo bound-80; exec sleep 300']
EOF

cat >"$tmp/vols.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: vols}
spec:
  restartPolicy: Never
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 8Mi}}
  - {name: data, hostPath: {path: @HOST@/data, type: Directory}}
  - {name: made, hostPath: {path: @HOST@/made, type: DirectoryOrCreate}}
  - {name: cfg, configMap: {name: volcfg, items: [{key: k, path: sub/k}]}}
  - {name: sec, secret: {secretName: volsec}}
  containers:
  - name: config
    image: @TOOLS@
    command: [sh, -c, 'cat /cfg/sub/k /sec/pw; echo no >/cfg/x || echo cfg-ro; grep " /sec " /proc/mounts; grep " /cfg " /proc/mounts']
    volumeMounts: [{name: cfg, mountPath: /cfg}, {name: sec, mountPath: /sec}]
  - name: writer
    image: @TOOLS@
    command: [sh, -c, 'readlink /proc/self/ns/ipc; echo shared >/scratch/x; echo mem >/mem/m; echo from-pod >/data/f; echo made >/made/y; echo no >/ro/z || echo ro-refused; echo no >/ro/inner/z || echo ro-inner-refused; cat /data/inner/f']
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
    - {name: data, mountPath: /data}
    - {name: made, mountPath: /made}
    - {name: data, mountPath: /ro, readOnly: true}
  - name: reader
    image: @TOOLS@
    command: [sh, -c, 'i=0; while [ ! -s /m/m ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; cat /s/x /m/m; grep " /m " /proc/mounts; readlink /proc/self/ns/ipc']
    volumeMounts: [{name: scratch, mountPath: /s}, {name: mem, mountPath: /m}]
EOF

cat >"$tmp/hostetc.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: hostetc}
spec:
  volumes: [{name: etc, hostPath: {path: /etc}}]
  containers: [{name: c, image: @TOOLS@, command: [cat, /host/shadow], volumeMounts: [{name: etc, mountPath: /host}]}]
EOF

cat >"$tmp/secure.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: secure}
spec:
  restartPolicy: Never
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
  - name: rootfs-ro
    image: @TOOLS@
    securityContext: {readOnlyRootFilesystem: true}
    command: [sh, -c, 'touch /x 2>&1; touch /w/y && echo emptydir-writable']
    volumeMounts: [{name: scratch, mountPath: /w}]
  - name: seccomp
    image: @TOOLS@
    command: [sh, -c, 'unshare -U true 2>&1; echo "unshare=$?"; grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status']
  - name: unconfined
    image: @TOOLS@
    securityContext: {seccompProfile: {type: Unconfined}}
    command: [sh, -c, 'unshare -U true && echo unshare-ok']
  - name: nocaps
    image: @TOOLS@
    securityContext: {capabilities: {drop: [ALL]}}
    command: [sh, -c, 'grep ^CapEff: /proc/self/status']
EOF

cat >"$tmp/kata.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: under-kata}
spec:
  runtimeClassName: kata
  containers: [{name: c, image: @TOOLS@}]
EOF

if command -v runc >/dev/null; then
  cat >"$tmp/runc.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: under-runc}
spec:
  restartPolicy: Never
  runtimeClassName: runc
  containers: [{name: c, image: @TOOLS@}]
EOF
fi
# a process of the node: its image is not pulled, it has no imageID
cat >"$tmp/proc.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: proc}
spec:
  restartPolicy: Never
  runtimeClassName: process
  containers: [{name: c, image: @TOOLS@, command: ["true"]}]
EOF
check "the volumes' configmap" 0 kubectl create configmap volcfg --from-literal=k=cfg-value
check "the volumes' secret" 0 kubectl create secret generic volsec --from-literal=pw=sec-value
for p in table named nonroot vols hostetc secure kata execas proc; do apply $p; done
command -v runc >/dev/null && apply runc

# ---- the seed's pod, unchanged ------------------------------------------------------------------
check "apply the seed's pod" 0 kubectl apply -f "$XPOOL_TEST_DATA/manifests/seed-pod.yaml"
completed() { # the reason its container's first run ended with (its later ones restart it)
  kubectl get pod ai-training -o json | tr -d ' \n' | grep -o '"terminated":{[^}]*"reason":"[A-Za-z]*"' |
    head -1 | sed 's/.*"reason":"//; s/"$//'
}
poll "the seed's pod ran to Completed" 60 Completed completed
check "its events" 0 kubectl describe pod ai-training
expect_in "Pulling" "$tmp/out" "Pulling image \"ai-framework:latest\""
expect_in "Pulled" "$tmp/out" "Successfully pulled image \"ai-framework:latest\""
check "its log" 0 kubectl logs ai-training
# it restarts (restartPolicy Always): a run begun since the poll has not logged yet, and the run
# that completed is the previous one
grep -qF "ai-framework: done" "$tmp/out" || check "its log, the run that completed" 0 kubectl logs --previous ai-training
cp "$tmp/out" "$tmp/seed.log"
expect_in "the image's entrypoint ran" "$tmp/seed.log" "ai-framework: done"
gpus=$(grep -cE '^  /dev/nvidia[0-9]$' "$tmp/seed.log" || true)
[[ $gpus -eq 1 ]] || { echo "FAIL the seed's pod sees $gpus GPUs:"; cat "$tmp/seed.log"; failures=$((failures + 1)); }
expect_in "the GPU's control node" "$tmp/seed.log" "  /dev/nvidiactl"
expect_in "the first NPU" "$tmp/seed.log" "  /dev/npu0"
expect_in "the second NPU" "$tmp/seed.log" "  /dev/npu1"
expect_in "the devices by id" "$tmp/seed.log" "XPOOL_VISIBLE_DEVICES="
check "its podIP" 0 get ai-training .status.podIP
if [[ -n "$br" ]]; then
  expect_in "its own address on the pod network" "$tmp/out" "$net."
else
  [[ -s "$tmp/out" ]] || { echo "FAIL no podIP"; failures=$((failures + 1)); }
fi
# imageID as the kubelet's: the pulled image's repository and manifest digest, the registry's
seed_digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$plain/library/ai-framework:latest")
check "its imageID" 0 get ai-training '.status.containerStatuses[0].imageID'
expect_exact "docker.io/library/ai-framework@<the registry's digest>" "$tmp/out" "docker.io/library/ai-framework@$seed_digest"
# image as the kubelet's with containerd: the spec's "ai-framework:latest" fully qualified
check "its image" 0 get ai-training '.status.containerStatuses[0].image'
expect_exact "the reference as resolved" "$tmp/out" "docker.io/library/ai-framework:latest"
check "kubectl describe" 0 kubectl describe pod ai-training
expect_in "prints it" "$tmp/out" "docker.io/library/ai-framework@$seed_digest"
check "delete the seed's pod" 0 kubectl delete pod ai-training --wait=false

# ---- pods from the test image -------------------------------------------------------------------
# Kubernetes' table, and what the image's config gives
poll "the table's pod Succeeded" 60 Succeeded phase table
# an image imported without a repository digest: its ID, the config's digest
check "the imageID of an imported image" 0 get table '.status.containerStatuses[0].imageID'
expect_exact "sha256:<its config's digest>" "$tmp/out" "$(cat "$tmp/tools-1.id")"
check "the image of an imported image" 0 get table '.status.containerStatuses[0].image'
expect_exact "the name the store has it under" "$tmp/out" "localhost/tools:1"
poll "the process pod Succeeded" 60 Succeeded phase proc
check "its imageID" 0 get proc '.status.containerStatuses[0].imageID'
expect_exact "a process of the node has none" "$tmp/out" ""
check "its image" 0 get proc '.status.containerStatuses[0].image'
expect_exact "the spec's" "$tmp/out" "localhost/tools:1"
expect_log() { # name, pod, container, text
  logs "$2" "$3" >"$tmp/log.$2.$3"
  expect_in "$1" "$tmp/log.$2.$3" "$4"
}
expect_log "neither: Entrypoint + Cmd" table neither "from-entrypoint from-cmd"
expect_log "args: Entrypoint + args" table args "from-entrypoint a1 a2"
expect_log "command: command only" table command "c1"
not_in() { if grep -qF -- "$3" "$2"; then echo "FAIL $1: '$3' in:"; cat "$2"; failures=$((failures + 1)); fi; }
not_in "command: no Cmd" "$tmp/log.table.command" "from-cmd"
expect_log "command and args" table both "c1 a1"
not_in "command and args: no Entrypoint" "$tmp/log.table.both" "from-entrypoint"
poll "the named pod Succeeded" 60 Succeeded phase named
expect_log "spec.hostname as the host name" named c "host: db-0 db-0"
expect_log "the FQDN in /etc/hosts" named c $'db-0.workers.default.svc.cluster.local\tdb-0'
expect_log "the image's env under the pod's, its working directory" table env "env: from-image from-pod pod /srv table home=/root"
expect_log "root by default" table env "uid=0(root) gid=0(root)"
expect_log "the pod's workingDir over the image's" table workdir "cwd: /tmp"
expect_log "the image's User, names from its /etc/passwd and /etc/group" table image-user "uid=1000(app) gid=50(staff)"
expect_log "HOME from its /etc/passwd" table image-user "home=/home/app"
expect_log "runAsUser and runAsGroup over the image's User" table run-as "uid=2000 gid=3000"

poll "the exec pod Running" 60 Running phase execas
said() { logs execas "$1" | grep -q "$2"; } # container, text: once its output holds the text
for c in run-as image-user; do # image-user last: $tmp/out is its exec's below
  wait_for "$c said who it is" 60 said "$c" uid= || true # Running comes before its first line
  logs execas "$c" >"$tmp/log.execas.$c"
  check "exec into $c" 0 kubectl exec execas -c "$c" -- sh -c 'id; grep "^Seccomp:" /proc/self/status; echo "home=$HOME"'
  expect_in "exec into $c: the container's user and groups" "$tmp/out" "$(head -n 1 "$tmp/log.execas.$c")"
  expect_in "exec into $c: the container's seccomp filter" "$tmp/out" $'Seccomp:\t2'
done
expect_in "exec: the container's environment (HOME from its /etc/passwd)" "$tmp/out" "home=/home/app"
expect_in "the image user's exec is not root" "$tmp/log.execas.image-user" "uid=1000(app) gid=50(staff)"
expect_in "runAsUser's exec is not root" "$tmp/log.execas.run-as" "uid=2000 gid=3000"
# a pod of its own network: ICMP echo sockets for every group and any port for any user, as
# Docker and containerd 2 set them (busybox's ping opens a raw socket: iputils' would be needed)
if [[ -n "$br" ]]; then
  wait_for "unprivileged said whether it bound port 80" 60 said unprivileged bound-80 || true
  expect_log "a non-root container's ICMP echo sockets" execas unprivileged $'ping: 0\t2147483647'
  expect_log "a non-root container listens on port 80" execas unprivileged "bound-80"
fi
check "delete the exec pod" 0 kubectl delete pod execas --wait=false

# runAsNonRoot cannot be verified for an image user given by name, as the kubelet says
poll "runAsNonRoot with a named image user" 60 CreateContainerConfigError waiting nonroot
check "its message" 0 get nonroot '.status.containerStatuses[0].state.waiting.message'
expect_in "the kubelet's words" "$tmp/out" "image has non-numeric user (app), cannot verify user is non-root"

# volumes: an emptyDir two containers share, one in memory, hostPaths (one read-only)
poll "the volumes' pod Succeeded" 60 Succeeded phase vols
expect_log "a read-only hostPath refuses writes" vols writer "ro-refused"
expect_log "a mount inside a hostPath is in the container too" vols writer "inner-mount"
expect_log "a mount inside a read-only hostPath is read-only too" vols writer "ro-inner-refused"
check "... and nothing was written to it" 1 test -e "$tmp/host/data/inner/z"
expect_log "... as a read-only file system" vols writer "Read-only file system"
expect_log "the emptyDir is shared" vols reader "shared"
expect_log "a configMap volume's item at its path" vols config "cfg-value"
expect_log "a secret volume's key, decoded" vols config "sec-value"
expect_log "configMap volumes are read-only" vols config "cfg-ro"
expect_log "a secret volume is on a tmpfs (its values never reach the node's disk)" vols config "tmpfs /sec tmpfs"
not_in "a configMap volume is not" "$tmp/log.vols.config" "tmpfs /cfg tmpfs"
expect_log "the memory emptyDir too" vols reader "mem"
expect_log "... on a tmpfs" vols reader "tmpfs /m tmpfs"
# the pod's containers share its IPC namespace, which is not the node's
ipc_w=$(grep -o 'ipc:\[[0-9]*\]' "$tmp/log.vols.writer" | head -n 1)
ipc_r=$(grep -o 'ipc:\[[0-9]*\]' "$tmp/log.vols.reader" | head -n 1)
check "the pod's containers share one IPC namespace" 0 test -n "$ipc_w" -a "$ipc_w" = "$ipc_r"
check "... not the node's" 1 test "$ipc_w" = "$(readlink /proc/self/ns/ipc)"
check "the pod wrote to the node's path" 0 cat "$tmp/host/data/f"
expect_in "its content" "$tmp/out" from-pod
check "DirectoryOrCreate made it" 0 cat "$tmp/host/made/y"
poll "a hostPath the node does not allow" 60 CreateContainerConfigError waiting hostetc
check "its message" 0 get hostetc '.status.containerStatuses[0].state.waiting.message'
expect_in "says what and how" "$tmp/out" "hostPath /etc is not allowed on node c1"

# containment: a read-only root, seccomp, capabilities
poll "the containment pod Succeeded" 60 Succeeded phase secure
expect_log "a read-only root" secure rootfs-ro "Read-only file system"
expect_log "its volumes stay writable" secure rootfs-ro "emptydir-writable"
expect_log "seccomp refuses unshare with EPERM" secure seccomp "Operation not permitted"
expect_log "... and it failed" secure seccomp "unshare=1"
expect_log "a filter is loaded" secure seccomp $'Seccomp:\t2'
expect_log "no_new_privs" secure seccomp $'NoNewPrivs:\t1'
expect_log "Docker's default capabilities" secure seccomp $'CapEff:\t00000000a80425fb'
if unshare -U true 2>/dev/null; then
  expect_log "Unconfined lets the same call through" secure unconfined "unshare-ok"
else
  echo "SKIP seccomp Unconfined: this kernel refuses user namespaces to everyone"
fi
expect_log "drop ALL" secure nocaps $'CapEff:\t0000000000000000'

# a container sees only its devices: the other GPU's node is not there, and opening it fails
m0=$(stat -c %T "$tmp/node/sim-dev/nvidia0") m1=$(stat -c %T "$tmp/node/sim-dev/nvidia1")
cat >"$tmp/devices.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: devices}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: @TOOLS@
    resources: {limits: {nvidia.com/gpu: 1}}
    command: [sh, -c, 'for g in 0 1; do [ -e /dev/nvidia\$\$g ] && echo "mine nvidia\$\$g" || echo "absent nvidia\$\$g"; done; ls /dev | grep -c npu; mknod /tmp/g0 c 120 $((16#$m0)) && mknod /tmp/g1 c 120 $((16#$m1)); cat /tmp/g0; cat /tmp/g1; true']
EOF
apply devices
poll "the devices' pod Succeeded" 60 Succeeded phase devices
logs devices c >"$tmp/log.devices"
expect_count "one GPU node of its own" "$tmp/log.devices" 1 "mine nvidia"
expect_count "the other GPU's node is absent" "$tmp/log.devices" 1 "absent nvidia"
expect_in "no NPU given, none seen" "$tmp/log.devices" $'\n0\n'
expect_count "its own opens up to the (absent) driver" "$tmp/log.devices" 1 "No such device or address"
expect_count "the other's is refused by the device cgroup" "$tmp/log.devices" 1 "Operation not permitted"

# allowPrivilegeEscalation in an image's container (17-containment: processes): false sets
# no_new_privs, true does not; neither opens a node device no container is given
node_dev=
for d in /dev/loop-control /dev/fuse /dev/kmsg /dev/cpu_dma_latency; do [[ -c $d ]] && { node_dev=$d; break; }; done
status='grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status'
cat >"$tmp/privs.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: privs}
spec:
  restartPolicy: Never
  containers:
  - name: noescalate
    image: @TOOLS@
    securityContext: {allowPrivilegeEscalation: false}
    command: [sh, -c, '$status; [ -e "${node_dev:-/none}" ] || echo "no node device"']
  - name: escalate
    image: @TOOLS@
    securityContext: {allowPrivilegeEscalation: true}
    command: [sh, -c, '$status']
EOF
apply privs
poll "the privileges pod Succeeded" 60 Succeeded phase privs
expect_log "allowPrivilegeEscalation false: no_new_privs" privs noescalate $'NoNewPrivs:\t1'
expect_log "... Docker's default capabilities" privs noescalate $'CapEff:\t00000000a80425fb'
expect_log "... a filter" privs noescalate $'Seccomp:\t2'
expect_log "allowPrivilegeEscalation true: no no_new_privs" privs escalate $'NoNewPrivs:\t0'
[[ -z "$node_dev" ]] || expect_log "no node device ($node_dev) in an unprivileged container" privs noescalate "no node device"

# privileged in an image's container: what the node's root holds (the kernel's capabilities in
# its bounding set; root may lack some), no filter, the node's devices, and a Warning Event
cat >"$tmp/privileged.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: privileged}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: @TOOLS@
    securityContext: {privileged: true}
    command: [sh, -c, '$status; [ -c "${node_dev:-/none}" ] && echo "has the node device"; true']
EOF
apply privileged
poll "the privileged pod Succeeded" 60 Succeeded phase privileged
node_caps=$(sed -n 's/^CapPrm:\t//p' /proc/self/status)
expect_log "privileged: the capabilities the node's root holds" privileged c $'CapEff:\t'"$node_caps"
expect_log "... no filter" privileged c $'Seccomp:\t0'
[[ -z "$node_dev" ]] || expect_log "... the node's devices ($node_dev)" privileged c "has the node device"
check "the privileged pod's Events" 0 kubectl get events --field-selector involvedObject.name=privileged -o 'jsonpath={range .items[*]}{.type} {.reason}{"\n"}{end}'
expect_in "privileged is audible" "$tmp/out" "Warning Privileged"

# xpool run --image, and without it the process runtime class
check "xpool run --image: the image's own command" 0 "$xpool" run --image localhost/tools:1
expect_in "Entrypoint and Cmd" "$tmp/out" "from-entrypoint from-cmd"
check "xpool run --image -- ARGS" 0 "$xpool" run --image localhost/tools:1 -- hello
expect_in "ARGS replace Cmd" "$tmp/out" "from-entrypoint hello"
check "xpool run --image --gpu 1 --command: the exit code" 3 \
  "$xpool" run --image localhost/tools:1 --gpu 1 --command -- sh -c 'ls /dev | grep -c "^nvidia[0-9]"; exit 3'
expect_in "with its one GPU" "$tmp/out" "1"
check "xpool run without --image: a process of the node" 0 "$xpool" run -- sh -c 'test -d "$1" && echo on-the-node' sh "$tmp/host"
expect_in "sees the node's files" "$tmp/out" on-the-node

# runtime classes: runc, and one the node does not have
if command -v runc >/dev/null; then
  poll "runc runs it" 60 Succeeded phase under-runc
  expect_log "the same container" under-runc c "from-entrypoint from-cmd"
else
  echo "SKIP runtime class runc: runc is not installed"
fi
poll "an unknown runtime class fails the pod" 60 Failed phase under-kata
check "its reason" 0 get under-kata .status.reason
expect_in "RuntimeClassNotFound" "$tmp/out" RuntimeClassNotFound
check "its message" 0 get under-kata .status.message
expect_in "names the class and the node's" "$tmp/out" 'runtimeClassName "kata": node c1 has no such runtime class (its classes: process, crun, runc, slow'

# AppArmor, where the kernel has it
if [[ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" == Y ]]; then
  check "xpool run --image: its AppArmor profile" 0 "$xpool" run --image localhost/tools:1 --command -- cat /proc/self/attr/current
  expect_in "xpool's default profile, enforced" "$tmp/out" "xpool-default (enforce)"
else
  expect_in "without AppArmor the agent says so" "$tmp/agent.log" "AppArmor is not enabled in this kernel"
  echo "SKIP AppArmor profile: AppArmor is not enabled in this kernel"
fi

# ---- the agent SIGKILLed while a container is being created ---------------------------------------
slow_pod() { # name [class]: a pod of the slow runtime class counting its runs in @HOST@/NAME
  local fork= # noplace: the container forks a sleep before its main one (a process to contain)
  [[ ${2:-} == noplace ]] && fork='sleep 301 &'
  cat >"$tmp/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  runtimeClassName: ${2:-slow}
  volumes: [{name: count, hostPath: {path: @HOST@, type: Directory}}]
  containers:
  - {name: c, image: @TOOLS@, command: [sh, -c, 'echo run >>/count/$1; $fork exec sleep 300'], volumeMounts: [{name: count, mountPath: /count}]}
EOF
  apply "$1"
}
hold_until_creating() { # the slow runtime sits in create; waits (bounded) until it does
  local deadline=$((SECONDS + 60))
  until [[ -e "$tmp/creating" || $SECONDS -ge $deadline ]]; do sleep 0.1; done
  [[ -e "$tmp/creating" ]] || { echo "FAIL the runtime was not asked to create"; failures=$((failures + 1)); }
}
running() { get "$1" '.status.containerStatuses[0].state.running.startedAt' | grep -c T; }
touch "$tmp/hold"; rm -f "$tmp/creating"
slow_pod slow1
hold_until_creating
kill -KILL "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
rm -f "$tmp/hold" # the shim goes on alone
start_agent
poll "the agent killed mid-start: its container runs" 60 1 running slow1
check "its imageID, kept across the agent's restart" 0 get slow1 '.status.containerStatuses[0].imageID'
expect_exact "the imported image's ID" "$tmp/out" "$(cat "$tmp/tools-1.id")"
# Running is reported once the runtime started the container, which writes its run a moment
# later: wait for that line, then give a second run a second to show
wait_for "slow1 wrote its run" 60 grep -q run "$tmp/host/slow1" || true
sleep 1
check "it ran once" 0 cat "$tmp/host/slow1"
expect_count "one run" "$tmp/out" 1 run
# exec, stdin, SPDY and cp into an image's container: its pid namespace (sleep is pid 1), its root
check "exec into an image container" 0 kubectl exec slow1 -- sh -c 'echo in-image; tr "\0" " " </proc/1/cmdline; echo; ls /count'
expect_in "exec: in the container" "$tmp/out" "in-image"
expect_in "exec: its pid 1 is the container's command" "$tmp/out" "sleep 300"
expect_in "exec: its root file system (the volume at /count)" "$tmp/out" "slow1"
# the shim calls its runtime from a read-only bind of it (docs/containers.md "Speed"): the
# protection crun's own copy gave against CVE-2019-5736 holds without that copy
shim1=$(pgrep -f "__shim $tmp/node/containers/$(get slow1 .metadata.uid)/c" | head -n 1)
check "the shim of slow1 runs" 0 test -n "$shim1"
check "the shim's runtime binary cannot be opened for writing" 3 \
  nsenter -m -t "${shim1:-0}" sh -c "test -w '$tmp/slow-crun' && exit 0; exit 3"
check "the shim's mount of it is read-only" 0 \
  sh -c "awk '\$5 == \"$tmp/slow-crun\" {print \$6}' /proc/${shim1:-0}/mountinfo | grep -q '^ro'"
check "exec -i into an image container" 0 sh -c "printf 'to the image\n' | kubectl exec -i slow1 -- cat"
expect_in "exec -i: stdin" "$tmp/out" "to the image"
check "exec over SPDY into an image container" 7 env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false kubectl exec slow1 -- sh -c 'exit 7'
printf 'copied-%s\n' "$$" >"$tmp/tocopy"
check "cp into an image container" 0 kubectl cp "$tmp/tocopy" slow1:/tmp/copied
check "cp out of it" 0 kubectl cp slow1:/tmp/copied "$tmp/copied.back"
cmp -s "$tmp/tocopy" "$tmp/copied.back" || { echo "FAIL cp through an image container"; failures=$((failures + 1)); }

touch "$tmp/hold"; rm -f "$tmp/creating"
slow_pod slow2
hold_until_creating
uid2=$(get slow2 .metadata.uid)
kill -KILL "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
pkill -KILL -f "__shim $tmp/node/containers/$uid2/c" 2>/dev/null || true
rm -f "$tmp/hold"
start_agent
poll "agent and shim killed mid-start: the start is made again" 60 1 running slow2
wait_for "slow2 wrote its run" 60 grep -q run "$tmp/host/slow2" || true
sleep 1
check "it ran once" 0 cat "$tmp/host/slow2"
expect_count "one run" "$tmp/out" 1 run

# ---- the agent and the shim SIGKILLed in a one-call start (crun's `run --detach`) -----------------
# Its release marker is made before that call: the attempt is recorded lost (a start made again
# could run it twice) and the container restarted per restartPolicy (Always), once.
touch "$tmp/hold-run"; rm -f "$tmp/running-held"
slow_pod held1 heldrun
for _ in $(seq 300); do [[ -e "$tmp/running-held" ]] && break; sleep 0.1; done
check "the runtime named crun is asked to run (one call)" 0 test -e "$tmp/running-held"
uid3=$(get held1 .metadata.uid)
kill -KILL "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
pkill -KILL -f "__shim $tmp/node/containers/$uid3/c" 2>/dev/null || true
rm -f "$tmp/hold-run"
start_agent
poll "one-call start killed: the container restarted (restartPolicy Always)" 60 1 running held1
check "the interrupted attempt's state" 0 get held1 '.status.containerStatuses[0].lastState.terminated.message'
expect_in "the shim died while starting it" "$tmp/out" "died while starting the container"
wait_for "held1 wrote its run" 60 grep -q run "$tmp/host/held1" || true
sleep 1
check "it ran once" 0 cat "$tmp/host/held1"
expect_count "one run" "$tmp/out" 1 run

# ---- a runtime named crun that leaves the container outside its group: fail closed ---------------
# The one-call start's container (and the sleep it forked) is killed, the start recorded failed
# with its reason, and the runtime class starts with create + start from then on: the restart
# runs, in the pod's group, and nothing is left in the runtime's own group.
slow_pod noplace1 noplace
poll "the start outside its group failed, the next (create + start) runs" 60 1 running noplace1
check "the failed start's reason" 0 get noplace1 '.status.containerStatuses[0].lastState.terminated.message'
expect_in "it says why" "$tmp/out" "did not put the container in its cgroup"
check "the runtime's calls" 0 cat "$tmp/noplace.calls"
expect_exact "run once, then create" "$tmp/out" "$(printf 'run\ncreate')"
check "the runtime class remembers" 0 find "$tmp/node/containers/.oci/noplace" -maxdepth 1 -name create-start
expect_count "its marker" "$tmp/out" 1 create-start
# the hierarchies whose limits the shim applies (pids, memory, cpu, devices): the pod's group
outside() { cat /sys/fs/cgroup/{pids,memory}/"$noplace_group"/cgroup.procs 2>/dev/null | wc -l; }
poll "no process left in the runtime's own pids and memory groups" 60 0 outside
uid4=$(get noplace1 .metadata.uid)
main4=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$tmp/node/containers/$uid4/c/running.json")
check "the restarted container's groups" 0 cat "/proc/${main4:-0}/cgroup"
not_in "pids: not the runtime's own" "$tmp/out" "pids:/$noplace_group"
not_in "memory: not the runtime's own" "$tmp/out" "memory:/$noplace_group"
expect_in "it is in the pod's group" "$tmp/out" "$uid4/c"

# ---- the shim of a running image container SIGKILLed ----------------------------------------------
# Its container's process is the runtime's, outside the shim's pid namespace: the agent notices
# the shim gone (its pidfd), kills the container through its group, records the exit (137) and
# restarts it per restartPolicy (Always), as the kubelet does when containerd loses a shim.
uid1=$(get slow1 .metadata.uid)
main1=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$tmp/node/containers/$uid1/c/running.json")
check "slow1's container process is known" 0 test -n "$main1"
kill -KILL "$shim1"
alive() { kill -0 "${main1:-0}" 2>/dev/null && echo yes || echo no; }
poll "the shim killed: its container's process is killed too" 60 no alive
restarts() { get slow1 '.status.containerStatuses[0].restartCount'; }
poll "... and the container restarted (restartPolicy Always)" 60 1 restarts
poll "... running again" 60 1 running slow1
check "its last state" 0 get slow1 '.status.containerStatuses[0].lastState.terminated.exitCode'
expect_exact "exit code 137, as a kill" "$tmp/out" 137
check "... says why" 0 get slow1 '.status.containerStatuses[0].lastState.terminated.message'
expect_in "the shim died" "$tmp/out" "died without recording the exit"
check "it ran twice, never at once" 0 cat "$tmp/host/slow1"
expect_count "two runs" "$tmp/out" 2 run

# ---- everything deleted: nothing left behind ------------------------------------------------------
uids=$(kubectl get pods -o 'jsonpath={.items[*].metadata.uid}')
check "delete every pod" 0 kubectl delete pods --all --wait=false
gone() { kubectl get pods -o name | wc -l; }
poll "the pods are gone" 60 0 gone
left() { # what containers left on the node
  {
    awk -v t="$tmp/node/" 'index($5, t) == 1 {print "mount " $5}' /proc/self/mountinfo
    find "$tmp/node/containers" -mindepth 1 -maxdepth 2 -not -name '.*' -not -path '*/.*/*' -printf 'state %p\n'
    find "$tmp/node/containers/.pods" "$tmp/node/containers/.oci/crun" "$tmp/node/containers/.oci/slow" "$tmp/node/containers/.oci/heldrun" "$tmp/node/containers/.oci/noplace" -mindepth 1 -maxdepth 1 -not -name create-start -printf 'pod or runtime state %p\n' 2>/dev/null
    pgrep -f "__shim $tmp/node/containers/" | sed 's/^/shim /'
    for u in $uids; do [[ -e $tmp/ipc/$u ]] && echo "IPC namespace $tmp/ipc/$u"; done
  } | sort
}
poll "no mount, state, overlay or runtime state left" 60 "" left
finish containers
