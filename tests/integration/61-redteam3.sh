#!/usr/bin/env bash
# The red team's third round (docs/reliability.md, "Red team, third round"), on `xpool up` running
# process pods as root, with stock kubectl:
#   - a signed stream URL (exec) the server sent to the agent is good once: the same request
#     replayed is refused 401 (before the fix, anyone who saw it on the plain HTTP opened the
#     stream again within 30 s); one naming an xpool* parameter twice (one percent-encoded,
#     as a client's that passed the server would be) is refused 400;
#   - `kubectl exec -t` into a container whose devpts it cannot reach (its process chrooted
#     away) fails, saying why, rather than handing the command one of the node's terminals;
#   - a volume at a mountPath missing in / (/xpool-r3-PID) is mounted in the pod's own root and
#     the node's / gains nothing (before the fix, an empty directory owned by root);
#   - a secret at /run/secrets/NAME (and an emptyDir deeper below /run) is mounted in a /run of
#     the pod's own: the pod runs and reads it, and the node's /run gains nothing (before the
#     fix, the start failed where the node had no /run/secrets);
#   - a pod's own /tmp holds half its memory limit: writing past it is ENOSPC (before, the
#     tmpfs had the kernel's default size, half the node's memory);
#   - a shared path (--share) is writable with what is mounted below it, but for what the node
#     itself mounts read-only there (before the fix, every mount below a share was read-only).
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v script >/dev/null || { echo "SKIP: script (util-linux) is not installed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: process pods' mount namespaces need root"; exit 77; }
data=$tmp/data
shared=$tmp/shared
mkdir -p "$shared/sub" "$shared/ro" "$tmp/rosrc"
# what the node mounts below its shared path: a writable tmpfs, a read-only bind
mount -t tmpfs -o size=4m r3sub "$shared/sub"
mount --bind "$tmp/rosrc" "$shared/ro"
mount -o remount,bind,ro "$shared/ro"
top=/xpool-r3-$$
secret_dir=/run/secrets/xpool-r3-$$
up_pid=
cleanup_node() {
  rmdir "$top" 2>/dev/null || true
  rm -rf "$secret_dir"
  rmdir /run/deep/x/y /run/deep/x /run/deep 2>/dev/null || true
}
trap 'stop_up; release_tmp; cleanup_node; rm -rf "$tmp"' EXIT

log=$tmp/up.log
XPOOL_SHARE=$shared start_up "$log" --listen 127.0.0.1:0 --data-dir "$data" --node-name r3 \
  --pod-network host --default-runtime process
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
diag_cluster "$KUBECONFIG"
phase() { "${k[@]}" get pod "$1" -o 'jsonpath={.status.phase}'; }
poll "node r3 Ready" 120 True "${k[@]}" get node r3 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'

# ---- one pod: a mount point missing in /, its /tmp's size, the shared path's submounts ----------
cat >"$tmp/view.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: view}
spec:
  restartPolicy: Never
  containers:
  - name: c
    resources: {limits: {memory: 128Mi}}
    command:
    - sh
    - -c
    - |
      t() { n=\$1; shift; if eval "\$*" >/dev/null 2>&1; then echo "\$n=yes"; else echo "\$n=no"; fi; }
      t top touch $top/x
      t topnode test -e /usr/bin/sh
      t token test -s /var/run/secrets/kubernetes.io/serviceaccount/token
      if dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1 | grep -q 'No space left'; then echo tmpfull=yes; fi
      echo "tmpsize=\$(du -m /tmp/fill | cut -f1)"
      rm -f /tmp/fill
      t sub touch $shared/sub/r3
      t ro touch $shared/ro/r3
      echo probed
    volumeMounts: [{name: v, mountPath: $top}]
  volumes: [{name: v, emptyDir: {}}]
EOF
check "apply view" 0 "${k[@]}" apply -f "$tmp/view.yaml"
poll "view completes" 90 Succeeded phase view
check "view's output" 0 "${k[@]}" logs view
cp "$tmp/out" "$tmp/view.out"
expect_in "a volume at a mountPath missing in /: mounted and writable" "$tmp/view.out" "top=yes"
expect_in "its own root holds the node's programs" "$tmp/view.out" "topnode=yes"
expect_in "its token at the usual path" "$tmp/view.out" "token=yes"
[[ ! -e $top ]] || { echo "FAIL the pod's mountPath $top was made in the node's /"; failures=$((failures + 1)); }
expect_in "its /tmp is full at half its memory limit (ENOSPC)" "$tmp/view.out" "tmpfull=yes"
expect_in "... at 64 MiB" "$tmp/view.out" "tmpsize=64"
expect_in "a tmpfs below the shared path is writable" "$tmp/view.out" "sub=yes"
expect_in "the node's read-only mount below it stays read-only" "$tmp/view.out" "ro=no"
[[ -e $shared/sub/r3 ]] || { echo "FAIL the write below the shared path is not on the node"; failures=$((failures + 1)); }
[[ ! -e $tmp/rosrc/r3 ]] || { echo "FAIL the pod wrote the node's read-only mount"; failures=$((failures + 1)); }

# ---- a secret at /run/secrets/NAME: made in a /run of the pod's own, not on the node -------------
# what the node's /run/secrets holds before: afterwards it may have gained only the token's own
# directory (kubernetes.io, made on the node by design), never the pod's secret
secrets_before=$(ls -A /run/secrets 2>/dev/null | sort | tr '\n' ' ')
check "create the secret" 0 "${k[@]}" create secret generic r3secret --from-literal=word=xyzzy
cat >"$tmp/secretdir.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: secretdir}
spec:
  restartPolicy: Never
  containers:
  - name: c
    command: [sh, -c, "cat $secret_dir/word && ls -d /run/deep/x && echo runs"]
    volumeMounts:
    - {name: s, mountPath: $secret_dir, readOnly: true}
    - {name: v, mountPath: /run/deep/x/y}
  volumes:
  - {name: s, secret: {secretName: r3secret}}
  - {name: v, emptyDir: {}}
EOF
check "apply secretdir" 0 "${k[@]}" apply -f "$tmp/secretdir.yaml"
poll "a secret below /run/secrets: the pod runs" 60 Succeeded phase secretdir
check "secretdir's log" 0 "${k[@]}" logs secretdir
expect_in "... and reads its secret" "$tmp/out" "xyzzy"
expect_in "... and its own /run holds the deeper mount point" "$tmp/out" "runs"
[[ ! -e $secret_dir ]] || { echo "FAIL a pod made $secret_dir on the node"; failures=$((failures + 1)); }
[[ ! -e /run/deep ]] || { echo "FAIL a pod made /run/deep on the node"; failures=$((failures + 1)); }
secrets_after=$( (ls -A /run/secrets 2>/dev/null; [[ "$secrets_before" == *kubernetes.io* ]] || echo kubernetes.io) | sort -u | tr '\n' ' ')
secrets_want=$( (printf '%s\n' $secrets_before; echo kubernetes.io) | sort -u | tr '\n' ' ')
[[ "$secrets_after" == "$secrets_want" ]] ||
  { echo "FAIL the node's /run/secrets gained what a pod mounted: '$secrets_before' -> '$secrets_after'"; failures=$((failures + 1)); }

# ---- exec -t: the container's own terminal or none ----------------------------------------------
cat >"$tmp/jail.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: jail}
spec:
  restartPolicy: Never
  containers:
  - name: c
    command: [/usr/bin/python3, -c, "import os, time; os.makedirs('/tmp/j', exist_ok=True); os.chroot('/tmp/j'); print('jailed', flush=True); time.sleep(600)"]
EOF
check "apply jail" 0 "${k[@]}" apply -f "$tmp/jail.yaml"
poll "jail runs" 60 Running phase jail
poll "jail chrooted" 120 jailed "${k[@]}" logs jail
# script(1) gives kubectl the terminal that -t (with -i) needs; what it printed lands in the file
timeout 60 script -qec "kubectl --request-timeout=20s exec -it jail -- /bin/echo ran" "$tmp/jail.typescript" </dev/null >/dev/null 2>&1 || true
expect_in "fails, saying why" "$tmp/jail.typescript" "cannot open a terminal in container c"
if grep -q "^ran" "$tmp/jail.typescript"; then
  echo "FAIL exec -t ran its command on a terminal not the container's:"; cat "$tmp/jail.typescript"; failures=$((failures + 1))
fi
check "exec without -t still runs" 0 "${k[@]}" exec jail -- /bin/echo ran
expect_in "... its command" "$tmp/out" "ran"

# ---- a signed stream URL is good once ------------------------------------------------------------
token=$(cat "$data/agent/node.token")
id=${token:4:12}
key=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
port=$("${k[@]}" get node r3 -o 'jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}')
uid=$("${k[@]}" get pod jail -o 'jsonpath={.metadata.uid}')
path="/exec/default/jail/c?podUID=$uid&xpoolNonce=0123456789abcdef&command=true&stdout=1"
expiry=$(($(date +%s) + 30))
mac=$(printf 'GET\n%s\n%s' "$path" "$expiry" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" | sed 's/.*= //')
stream() { # the request the server would send, without its upgrade: the code in $tmp/code
  curl -sS --cacert "$data/pki/kubelet-ca.crt" -H "X-Xpool-Signature: $id:$expiry:$mac" -o "$tmp/out" -w '%{http_code}' \
    "https://127.0.0.1:$port$path" >"$tmp/code" || true
}
stream
code=$(cat "$tmp/code")
[[ $code != 401 && $code != 403 ]] || { echo "FAIL the first use of a signed URL was refused ($code):"; cat "$tmp/out"; failures=$((failures + 1)); }
stream
[[ $(cat "$tmp/code") == 401 ]] || { echo "FAIL a replayed signed URL: HTTP $(cat "$tmp/code"), expected 401"; cat "$tmp/out"; failures=$((failures + 1)); }
expect_in "... saying why" "$tmp/out" "this signature was used already"
check "exec through the server still works twice" 0 "${k[@]}" exec jail -- /bin/echo again
check "... the second" 0 "${k[@]}" exec jail -- /bin/echo again

# ---- an xpool* parameter given twice, one percent-encoded, is refused ---------------------------
# (the server drops a client's own by their decoded name; the agent decodes names, so a request
# naming xpoolUser twice was not the server's and could charge another user's share)
path="/exec/default/jail/c?podUID=$uid&xpoolNonce=0123456789abcdee&xpoolUser=00000000000000aa&%78poolUser=00000000000000bb&command=true&stdout=1"
# an expiry of its own: the agent checks the signature's time before the parameters, and the
# two execs above can take the first one's 30 s at load 30 (a 401 then, not the 400 checked)
expiry=$(($(date +%s) + 30))
mac=$(printf 'GET\n%s\n%s' "$path" "$expiry" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" | sed 's/.*= //')
stream
[[ $(cat "$tmp/code") == 400 ]] || { echo "FAIL a signed URL naming xpoolUser twice: HTTP $(cat "$tmp/code"), expected 400"; cat "$tmp/out"; failures=$((failures + 1)); }
expect_in "... saying why" "$tmp/out" "is given more than once"

finish 61-redteam3
