#!/usr/bin/env bash
# Image garbage collection (docs/images.md, "Image garbage collection"), as the kubelet's, with
# stock kubectl against `xpool up --housekeeping-interval 1s --minimum-image-ttl-duration 0s` on
# a data directory on a tmpfs of 64 MiB the test mounts, and five images built here from
# busybox-static, each with a layer of 4 MiB of its own, imported with `xpool image import`:
#   - "keep" runs in a pod (held), "done" ran in a pod that finished and is not deleted (in use,
#     as the kubelet counts the images of exited containers), "old" ran in a pod now deleted
#     (used, then given back), two "spare" images were never used;
#   - a file of the test's brings the file system to 87 % used (the high threshold is 85 %):
#     the spares go, the never used first, and that is enough to be back under 80 %: "old" and
#     "keep" and "done" stay;
#   - a second file brings it to 97 %, past --eviction-hard nodefs.available<5%: "old" goes too,
#     "keep" and "done" (in use) never; 80 % is out of reach: a FreeDiskSpaceFailed Event on the Node with
#     the kubelet's message, then ImageGCFailed as it falls short again; what "old" gave back
#     lifts the disk pressure before any pod is evicted: the keeper keeps running;
#   - restarted with the collection off (--image-gc-high-threshold 100) and
#     --eviction-hard nodefs.available<20%, spare1 imported again and the free space brought 2 MiB
#     under the threshold: under disk pressure the agent deletes the unused image first, and as
#     that is enough, evicts no pod;
#   - thresholds are checked as the kubelet checks them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/images_lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (a tmpfs, overlay mounts, namespaces)"; exit 77; }
command -v crun >/dev/null || { echo "SKIP: no crun, the default OCI runtime (scripts/install-deps installs it)"; exit 77; }
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || { echo "SKIP: this kernel has no overlayfs: containers cannot get a root file system"; exit 77; }
[[ -x /bin/busybox ]] || { echo "SKIP: busybox-static is not installed"; exit 77; }
fs=$tmp/fs
mkdir -p "$fs"
mount -t tmpfs -o size=64m tmpfs "$fs" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
data=$fs/data
up_pid=
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -TERM "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap '[[ -n "$up_pid" ]] && "${k[@]}" delete pods --all --wait=true --timeout=30s >/dev/null 2>&1; stop_up; umount -l "$fs" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT

# ---- five images, each with 4 MiB of its own above a shared busybox layer -----------------------
for name in keep old done spare1 spare2; do
  mkdir -p "$tmp/extra-$name"
  head -c $((4 * 1024 * 1024)) /dev/urandom >"$tmp/extra-$name/ballast"
  img_layout "$tmp/layout-$name" "" "$tmp/extra-$name"
  tar -C "$tmp/layout-$name" -cf "$tmp/$name.tar" .
  check "import $name" 0 "$xpool" image import --data-dir "$data/agent" --name "localhost/$name" "$tmp/$name.tar"
done
images() { "$xpool" image list --data-dir "$data/agent" | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' '; }
check "the images are in the store" 0 test "$(images)" = "localhost/done localhost/keep localhost/old localhost/spare1 localhost/spare2 "

start_up() { # log, extra flags...
  log=$1
  shift
  "$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --node-name gc-node --pod-network host \
    --ipc-dir "$tmp/ipc" --housekeeping-interval 1s --heartbeat 1s --minimum-image-ttl-duration 0s \
    "$@" >"$log" 2>&1 &
  up_pid=$!
  local deadline=$((SECONDS + 120))
  until grep -q "^xpool is up" "$log"; do
    kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
    [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 120 s:"; cat "$log"; exit 1; }
    sleep 0.1
  done
}
start_up "$tmp/up.log" --eviction-hard 'nodefs.available<5%'
diag_log "$log"
diag_cluster "$KUBECONFIG"

pod() { # name image command...
  local name=$1 image=$2
  shift 2
  local args
  args=$(printf '"%s",' "$@")
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: c, image: %s, imagePullPolicy: Never, command: [%s]}\n' \
    "$name" "$image" "${args%,}" | "${k[@]}" apply -f - >/dev/null
}
phase() { "${k[@]}" get pod "$1" -o jsonpath='{.status.phase}'; }
pod keeper localhost/keep:latest sleep 600
pod once localhost/old:latest true
pod done localhost/done:latest true
poll "the keeper runs from its image" 60 Running phase keeper
poll "the old image's pod ran" 60 Succeeded phase once
poll "the finished pod ran" 60 Succeeded phase done
check "the old image's pod is deleted" 0 "${k[@]}" delete pod once --wait=true --timeout=120s
holds() { ls "$data/agent/images/holds" | wc -l; }
poll "only the keeper holds an image" 120 1 holds

# ---- 87 % used: the never used images go, enough to be under 80 % ------------------------------
fill() { # the file FILE, so that PERCENT of the file system is used
  local file=$1 percent=$2 total avail
  read -r total avail < <(df -B1 --output=size,avail "$fs" | tail -1)
  fallocate -l $((avail - total * (100 - percent) / 100)) "$fs/$file"
}
fill fill1 87
poll "the images never used are collected" 120 "localhost/done localhost/keep localhost/old " images
expect_in "the agent says why" "$log" "over the high threshold 85%"
used() { df --output=pcent "$fs" | tail -1 | tr -dc 0-9; }
check "back under the low threshold" 0 test "$(used)" -lt 80
check "nothing was evicted" 0 test "$(phase keeper)" = Running

# ---- 97 % used: the image in use stays, the shortfall is told ----------------------------------
fill fill2 97
poll "the last unused image is collected" 120 "localhost/done localhost/keep " images
event() { "${k[@]}" get events --field-selector "reason=$1,involvedObject.kind=Node" -o jsonpath='{.items[*].message}'; }
failed() { event FreeDiskSpaceFailed | grep -c "Failed to garbage collect required amount of images. Attempted to free [0-9]* bytes, but only found [0-9]* bytes eligible to free."; }
poll "FreeDiskSpaceFailed on the Node" 120 1 failed
gcfailed() { event ImageGCFailed | grep -c "Attempted to free"; }
poll "ImageGCFailed as it falls short again" 120 1 gcfailed
check "what the image gave back spared the pods" 0 test "$(phase keeper)" = Running
check "no pod was evicted" 1 grep -q "evicted pod" "$log"
check "the keeper's image is refused to rm while it runs" 1 "$xpool" image rm --data-dir "$data/agent" localhost/keep:latest
rm -f "$fs/fill1" "$fs/fill2"
stop_up

# ---- disk pressure with the collection off: unused images go before any pod is evicted ---------
check "import spare1 again" 0 "$xpool" image import --data-dir "$data/agent" --name localhost/spare1 "$tmp/spare1.tar"
start_up "$tmp/up2.log" --image-gc-high-threshold 100 --image-gc-low-threshold 99 --eviction-hard 'nodefs.available<20%'
diag_log "$log"
poll "the keeper is running again" 60 Running phase keeper
# 2 MiB under the threshold: what spare1 gives back (4 MiB) lifts the pressure
read -r total avail < <(df -B1 --output=size,avail "$fs" | tail -1)
fallocate -l $((avail - total * 20 / 100 + 2 * 1024 * 1024)) "$fs/fill3"
poll "under disk pressure the unused image is deleted" 120 "localhost/done localhost/keep " images
expect_in "the agent says why" "$log" "disk pressure: deleting the images no container uses"
check "that was enough: no pod was evicted" 1 grep -q "evicted pod" "$log"
check "the keeper still runs" 0 test "$(phase keeper)" = Running
rm -f "$fs/fill3"
"${k[@]}" delete pod keeper done --wait=true --timeout=30s >/dev/null 2>&1 || true
stop_up

# ---- thresholds as the kubelet checks them ------------------------------------------------------
check "low at or over high is refused" 1 "$xpool" agent --image-gc-high-threshold 80 --image-gc-low-threshold 80 \
  --server http://127.0.0.1:1 --token x --data-dir "$tmp/badagent"
expect_in "it says which" "$tmp/err" "--image-gc-low-threshold 80 must be less than --image-gc-high-threshold 80"
check "a percent over 100 is refused" 2 "$xpool" agent --image-gc-high-threshold 101 --server http://127.0.0.1:1 --token x
expect_in "it says what" "$tmp/err" "expected a percent from 1 to 100"
finish "image GC"
