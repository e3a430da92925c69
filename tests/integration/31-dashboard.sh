#!/usr/bin/env bash
# The web dashboard (docs/dashboard.md) in a real headless browser (Debian's chromium): it signs
# in with a token, shows the seed's node with its GPU and NPUs and their topology, the seed's pod
# placed on its devices, a pending pod's reason, and a live connection; a wrong token is refused
# on the page. Over HTTP: the assets with their content types, the Content-Security-Policy and
# ETags, and no data without a token (401). A screenshot is left in build/tests/artifacts/.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
chromium=$(command -v chromium || true)
[[ -n "$chromium" ]] || { echo "SKIP: chromium is not installed (scripts/install-deps)"; exit 77; }
data=$tmp/data
fixtures=${XPOOL_TEST_DATA:?}/scheduler
artifacts=${XPOOL_ARTIFACTS:-$PWD/artifacts}
server_pid=
trap '[[ -n "$server_pid" ]] && kill -KILL "$server_pid" 2>/dev/null; release_tmp; rm -rf "$tmp"' EXIT
mkdir -p "$artifacts"

"$xpool" server --listen 127.0.0.1:0 --data-dir "$data" --no-tls >"$tmp/server.log" 2>&1 &
server_pid=$!
diag_log "$tmp/server.log"
base=
for _ in $(seq 150); do
  base=$(sed -n 's|.*xpool server listening on \(http://127\.0\.0\.1:[0-9]*\), state in .*|\1|p' "$tmp/server.log" 2>/dev/null || true)
  [[ -n "$base" ]] && curl -fsS -o /dev/null "$base/version" 2>/dev/null && break
  base=
  sleep 0.1
done
[[ -n "$base" ]] || { echo "FAIL the server did not start:"; cat "$tmp/server.log"; exit 1; }
token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
auth=(-H "Authorization: Bearer $token")
diag_run "curl -sS -H 'Authorization: Bearer $token' $base/api/v1/pods"

post() { # manifest (YAML), collection path
  "$xpool" convert -o json -f "$1" >"$tmp/create.json"
  check "create $(basename "$1")" 0 curl -fsS "${auth[@]}" -H 'Content-Type: application/json' \
    --data-binary "@$tmp/create.json" "$base$2"
}
api_holds() { answer_holds "$tmp/got" "$2" "${auth[@]}" "$base$1"; } # path, text: for wait_until

# ---- the pool: the seed's node (a GPU, two NPUs), an 8-GPU NVLink node, the seed's pod, one
# pod that cannot fit ---------------------------------------------------------------------------
# the seed's node with local storage to offer, shown in bytes as memory is
sed 's/memory: 64Gi, /memory: 64Gi, ephemeral-storage: 100Gi, /' "$fixtures/mixed.yaml" >"$tmp/mixed.yaml"
post "$tmp/mixed.yaml" /api/v1/nodes
post "$fixtures/big.yaml" /api/v1/nodes
post "$src/examples/ai-training.yaml" /api/v1/namespaces/default/pods
cat >"$tmp/too-big.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: too-big}
spec:
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/gpu: 9}}
YAML
post "$tmp/too-big.yaml" /api/v1/namespaces/default/pods
# no devices: placed without a NUMA node (numaNode -1), which the page leaves out
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\nspec:\n  containers: [{name: c, image: busybox}]\n' >"$tmp/plain.yaml"
post "$tmp/plain.yaml" /api/v1/namespaces/default/pods
wait_until "plain pod placed" 15 api_holds /api/v1/namespaces/default/pods/plain '"xpool.io/placement"'
wait_until "seed pod placed" 15 api_holds /api/v1/namespaces/default/pods/ai-training '"xpool.io/placement"'
wait_until "pending pod's reason" 15 api_holds /api/v1/namespaces/default/pods/too-big '"reason":"Unschedulable"'

# ---- HTTP: assets, their headers, no data without a token --------------------------------------
check "index" 0 curl -fsS -D "$tmp/head" -o "$tmp/index.html" "$base/ui/"
expect_in "index content type" "$tmp/head" "Content-Type: text/html; charset=utf-8"
expect_in "CSP on the page" "$tmp/head" "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self';"
expect_in "no framing" "$tmp/head" "frame-ancestors 'none'"
expect_in "nosniff" "$tmp/head" "X-Content-Type-Options: nosniff"
expect_in "the page" "$tmp/index.html" '<script src="/ui/app.js" defer></script>'
check "script" 0 curl -fsS -D "$tmp/head" -o /dev/null "$base/ui/app.js"
expect_in "script content type" "$tmp/head" "Content-Type: text/javascript; charset=utf-8"
expect_in "CSP on the script" "$tmp/head" "Content-Security-Policy: default-src 'none'"
etag=$(sed -n 's/^ETag: *\(.*\)\r$/\1/p' "$tmp/head")
check "an ETag" 0 test -n "$etag"
check "revalidation" 0 curl -sS -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$base/ui/app.js"
expect_in "304 for a current copy" "$tmp/out" "304"
check "style" 0 curl -fsS -D "$tmp/head" -o /dev/null "$base/ui/style.css"
expect_in "style content type" "$tmp/head" "Content-Type: text/css; charset=utf-8"
check "no such asset" 0 curl -sS -o /dev/null -w '%{http_code}' "$base/ui/nope.js"
expect_in "404 for no such asset" "$tmp/out" "404"
for path in /ui/api/history /api/v1/pods /api/v1/nodes "/api/v1/pods?watch=true"; do
  check "$path without a token" 0 curl -sS -o /dev/null -w '%{http_code}' "$base$path"
  expect_in "$path without a token: 401" "$tmp/out" "401"
done
# the history records at most once a second: the placement shows within a second or so
wait_until "history: the GPUs allocated" 15 api_holds /ui/api/history \
  '{"resource":"nvidia.com/gpu","kind":"gpu","node":"mixed","points":[['
expect_in "history: the step" "$tmp/got" '"stepSeconds":10'

# ---- the browser ---------------------------------------------------------------------------------
browse() { # output option, url: headless chromium, bounded
  timeout 40 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --user-data-dir="$tmp/chrome" --window-size=1360,1900 --virtual-time-budget=3000 "$1" "$2" 2>>"$tmp/chrome.log"
}
diag_log "$tmp/chrome.log"
# Signed in through the form (the DevTools protocol types the token), a pod created meanwhile
# shown through the watch, the screenshot.
check "the page in chromium" 0 timeout 120 /usr/bin/python3 "$src/tests/tools/dashboard_cdp.py" \
  "$chromium" "$tmp/chrome" "$base" "$token" "$tmp/dom.html" "$artifacts/31-dashboard.png"
cat "$tmp/out"
expect_in "signed in and live" "$tmp/dom.html" 'data-state="live">Live</span>'
expect_in "the seed's node" "$tmp/dom.html" 'aria-label="Node mixed"'
for id in GPU-mixed-0 NPU-mixed-0 NPU-mixed-1; do
  expect_in "the node's $id" "$tmp/dom.html" ">$id</div>"
done
expect_in "the GPU's model" "$tmp/dom.html" "NVIDIA H100 80GB HBM3"
expect_in "the NPUs' NVLink" "$tmp/dom.html" "NPU-mixed-0 ↔ NPU-mixed-1</span> NVLink ×7"
expect_in "the NUMA node" "$tmp/dom.html" "NUMA 0: CPUs 0-15, 64 GiB"
expect_in "the GPU held by the seed's pod" "$tmp/dom.html" 'class="holder">default/ai-training</div>'
grep -o '<tr data-pod="default/ai-training">.*</tr>' "$tmp/dom.html" | sed 's|</tr>.*||' >"$tmp/seed-row" || true
expect_in "the seed's pod on its node" "$tmp/seed-row" '<td>mixed</td>'
expect_in "the seed's pod's devices" "$tmp/seed-row" 'GPU-mixed-0, NPU-mixed-'
grep -o '<tr data-pod="default/plain">.*' "$tmp/dom.html" | sed 's|</tr>.*||' >"$tmp/plain-row" || true
expect_in "the plain pod" "$tmp/plain-row" 'data-pod="default/plain"'
expect_count "a pod without a NUMA node shows none" "$tmp/plain-row" 0 "NUMA -1"
grep -o '<tr data-pod="default/too-big">.*' "$tmp/dom.html" | sed 's|</tr>.*||' >"$tmp/pending-row" || true
expect_in "the pending pod" "$tmp/pending-row" '>Pending</span>'
expect_in "why it waits" "$tmp/pending-row" 'Unschedulable</span>: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.'
expect_in "its FailedScheduling Event" "$tmp/pending-row" 'Warning FailedScheduling'
expect_in "the allocation tile" "$tmp/dom.html" '<div class="value">1 / 9</div>'
expect_in "the history chart" "$tmp/dom.html" '<strong>nvidia.com/gpu</strong>'
expect_in "local storage in bytes" "$tmp/dom.html" '0 B / 100 GiB'
expect_in "no utilisation yet" "$tmp/dom.html" '<p id="usage-none" class="muted small">No utilisation samples yet.</p>'

rm -rf "$tmp/chrome"
browse --dump-dom "$base/ui/#token=not-a-token" >"$tmp/dom-bad.html" || true
expect_in "a wrong token refused" "$tmp/dom-bad.html" 'role="alert">the server refused this token</p>'
not_signed_in=$(grep -c 'id="dash" hidden' "$tmp/dom-bad.html" || true)
check "a wrong token shows no data" 0 test "$not_signed_in" -eq 1

check "a screenshot" 0 test -s "$artifacts/31-dashboard.png"
finish dashboard
