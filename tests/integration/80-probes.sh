#!/usr/bin/env bash
# Container probes on `xpool up --simulate` with stock kubectl (docs/probes.md): a readiness exec
# probe keeps a pod at READY 0/1 with Unhealthy Events until the file it reads appears; a failing
# httpGet liveness probe restarts its container (RESTARTS, the Killing Event in the kubelet's
# words) while a passing tcpSocket/httpGet pair leaves its pod ready; a startup probe holds a
# failing liveness probe back until it passes; a gRPC probe is said to be unsupported.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 77; }
data=$tmp/data
up_pid=
stop_all() {
  local p
  [[ -z "$up_pid" ]] || { kill -KILL "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; }
  # the containers outlive their agent by design: this run's own end here (they carry its mark)
  for p in /proc/[0-9]*; do
    [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"$mark"* ]] && kill -KILL "${p#/proc/}" 2>/dev/null
  done
  return 0
}
trap 'stop_all; release_tmp; rm -rf "$tmp"' EXIT
export KUBECONFIG=$data/admin.kubeconfig
kc=(kubectl "--cache-dir=$tmp/kube-cache" --request-timeout=20s)
mark=$((RANDOM % 900 + 100))$$
port=$(port_before_listener) || exit 1
tls_port=$(port_before_listener) || exit 1
# a self-signed certificate: the HTTPS probe does not verify it, as the kubelet's does not
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/key.pem" \
  -out "$tmp/cert.pem" -subj /CN=probe -days 1 2>/dev/null || { echo "FAIL openssl req"; exit 1; }

"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name probe-node --netns-dir "$tmp/netns" \
  --ipc-dir "$tmp/ipc" --backoff-initial 200ms >"$tmp/up.log" 2>&1 &
up_pid=$!
diag_log "$tmp/up.log"
diag_cluster "$KUBECONFIG"
deadline=$((SECONDS + 120))
until grep -q "^xpool is up" "$tmp/up.log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$tmp/up.log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up:"; cat "$tmp/up.log"; exit 1; }
  sleep 0.1
done

jp() { "${kc[@]}" get pod "$1" -o "jsonpath=$2"; }
events() { # pod: its events' reason, count and message, one a line
  "${kc[@]}" get events --field-selector "involvedObject.name=$1" \
    -o 'jsonpath={range .items[*]}{.reason} {.count} {.message}{"\n"}{end}'
}
has_event() { events "$1" | grep -qF -- "$2"; }
unhealthy_above() { # pod, count: its Unhealthy Event counted more than count times
  [[ "$("${kc[@]}" get events --field-selector "involvedObject.name=$1,reason=Unhealthy" \
    -o 'jsonpath={.items[0].count}')" -gt "$2" ]]
}
restarts_above() { [[ "$(jp "$1" '{.status.containerStatuses[0].restartCount}')" -gt "$2" ]]; }

cat >"$tmp/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: gate}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "rm -f /tmp/ready.$mark; exec sleep 3600.$mark"]
    # timeoutSeconds: an exec probe can take over the default 1 s under ASan, and a timed-out run
    # says something else, so its Unhealthy would be a second Event, not a count on the first
    readinessProbe:
      exec: {command: ["cat", "/tmp/ready.$mark"]}
      periodSeconds: 1
      timeoutSeconds: 10
---
apiVersion: v1
kind: Pod
metadata: {name: dead}
spec:
  runtimeClassName: process
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3601.$mark"]
    livenessProbe:
      httpGet: {path: /healthz, port: $port}
      periodSeconds: 1
      failureThreshold: 2
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: python
    command: ["python3", "-c", "import http.server as h, sys; h.ThreadingHTTPServer(('', $port), h.SimpleHTTPRequestHandler).serve_forever()", "$mark"]
    ports: [{name: http, containerPort: $port}]
    livenessProbe:
      tcpSocket: {port: http}
      periodSeconds: 1
      failureThreshold: 60
    readinessProbe:
      httpGet: {path: /, port: http, httpHeaders: [{name: X-Probe, value: "yes"}]}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: secure}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: python
    command: ["python3", "-c", "import http.server as h, ssl; s = h.ThreadingHTTPServer(('', $tls_port), h.SimpleHTTPRequestHandler); c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain('$tmp/cert.pem', '$tmp/key.pem'); s.socket = c.wrap_socket(s.socket, server_side=True); s.serve_forever()", "$mark"]
    readinessProbe:
      httpGet: {path: /, port: $tls_port, scheme: HTTPS}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: hang}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3604.$mark"]
    readinessProbe:
      exec: {command: ["sh", "-c", "sleep 300.$mark"]}
      timeoutSeconds: 1
      periodSeconds: 2
---
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  runtimeClassName: process
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3602.$mark"]
    startupProbe:
      exec: {command: ["cat", "/tmp/started.$mark"]}
      periodSeconds: 1
      timeoutSeconds: 10
      failureThreshold: 600
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: rpc}
spec:
  runtimeClassName: process
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3603.$mark"]
    readinessProbe:
      grpc: {port: $port}
      periodSeconds: 1
EOF
check "apply the pods" 0 "${kc[@]}" apply -f "$tmp/pods.yaml"
for p in gate dead web secure hang slow rpc; do
  wait_for "$p runs" 60 sh -c "[ \"\$(${kc[*]} get pod $p -o 'jsonpath={.status.phase}')\" = Running ]"
done

# ---- readiness: 0/1 with Unhealthy Events until the file appears -----------------------------
wait_for "gate: an Unhealthy Event" 120 has_event gate "Readiness probe failed: cat: "
check "gate: kubectl get pod" 0 "${kc[@]}" get pod gate --no-headers
expect_in "gate: READY 0/1" "$tmp/out" " 0/1 "
poll "gate: containerStatuses[0].ready" 60 false jp gate '{.status.containerStatuses[0].ready}'
poll "gate: the Ready condition" 60 False jp gate '{.status.conditions[?(@.type=="Ready")].status}'
poll "gate: ContainersReady's message" 60 "containers with unready status: [main]" \
  jp gate '{.status.conditions[?(@.type=="ContainersReady")].message}'
wait_for "gate: the Event is counted, not repeated" 120 unhealthy_above gate 1
check "gate: one Unhealthy Event object" 0 "${kc[@]}" get events --field-selector involvedObject.name=gate,reason=Unhealthy --no-headers
expect_count "gate: one Unhealthy Event object" "$tmp/out" 1 "Unhealthy"
check "gate: the file appears" 0 "${kc[@]}" exec gate -- touch "/tmp/ready.$mark"
poll "gate: ready once the probe passes" 120 true jp gate '{.status.containerStatuses[0].ready}'
poll "gate: the Ready condition True" 60 True jp gate '{.status.conditions[?(@.type=="Ready")].status}'
check "gate: kubectl get pod" 0 "${kc[@]}" get pod gate --no-headers
expect_in "gate: READY 1/1" "$tmp/out" " 1/1 "
poll "gate: never restarted" 60 0 jp gate '{.status.containerStatuses[0].restartCount}'

# ---- liveness: a failing httpGet restarts; a passing tcpSocket and httpGet leave it ready -----
wait_for "dead: restarted by its liveness probe" 60 restarts_above dead 0
killing_at_least() { # pod, count: its probe's Killing Event counts at least that many restarts
  events "$1" | awk -v n="$2" '$1 == "Killing" && $2 >= n && /failed liveness probe, will be restarted/ { f = 1 }
    END { exit !f }'
}
wait_for "dead: the Killing Event" 60 killing_at_least dead 1
wait_for "dead: the Unhealthy Event" 60 has_event dead \
  "Liveness probe failed: Get \"http://"
events dead >"$tmp/out"
expect_in "dead: the probe's path and port" "$tmp/out" ":$port/healthz\": dial tcp "
expect_in "dead: refused" "$tmp/out" "connect: connection refused"
wait_for "dead: restarted again" 60 restarts_above dead 1
# each restart one more count on the one Killing Event, as the kubelet's (not once per signal)
wait_for "dead: the Killing Event counts the second restart" 60 killing_at_least dead 2
poll "web: ready" 120 true jp web '{.status.containerStatuses[0].ready}'
poll "web: never restarted" 60 0 jp web '{.status.containerStatuses[0].restartCount}'
poll "secure: ready through its HTTPS probe" 120 true jp secure '{.status.containerStatuses[0].ready}'

# ---- an exec probe past its timeout: ended, reaped, said in the kubelet's words --------------
wait_for "hang: the timeout's Event" 120 has_event hang \
  "Readiness probe failed: command \"sh -c sleep 300.$mark\" timed out"
poll "hang: not ready" 60 false jp hang '{.status.containerStatuses[0].ready}'
# each run is ended at its timeout: never more than the one in flight
hung() { pgrep -f "^sleep 300\.$mark\$" | wc -l; }
for i in 1 2 3 4 5 6; do
  [[ "$(hung)" -le 1 ]] || { echo "FAIL hang: $(hung) probe commands at once"; failures=$((failures + 1)); break; }
  sleep 1
done

# ---- startup gates liveness ------------------------------------------------------------------
wait_for "slow: its startup probe fails" 120 has_event slow "Startup probe failed: cat: "
wait_for "slow: failing for a few periods" 120 unhealthy_above slow 2
poll "slow: liveness held back: no restart" 60 0 jp slow '{.status.containerStatuses[0].restartCount}'
poll "slow: not started" 60 false jp slow '{.status.containerStatuses[0].started}'
poll "slow: not ready" 60 false jp slow '{.status.containerStatuses[0].ready}'
if has_event slow "Liveness probe failed"; then
  echo "FAIL slow: liveness probed before the startup probe passed"; failures=$((failures + 1))
fi
check "slow: the startup file appears" 0 "${kc[@]}" exec slow -- touch "/tmp/started.$mark"
wait_for "slow: liveness runs once started, and restarts it" 60 restarts_above slow 0
# (its Killing Event may be over the pod's Event budget by now, 25 then one per 5 minutes, as the
# kubelet's: the startup probe's failures took it; dead's Killing Event is checked above)
killed_exit() { [[ "$(jp slow '{.status.containerStatuses[0].lastState.terminated.exitCode}')" =~ ^(137|143)$ ]]; }
wait_for "slow: the killed attempt's exit (SIGTERM or, after the grace, SIGKILL)" 60 killed_exit

# ---- gRPC: said, never passing --------------------------------------------------------------
wait_for "rpc: not supported, said" 120 has_event rpc "Readiness probe errored: gRPC probes are not supported"
poll "rpc: not ready" 60 false jp rpc '{.status.containerStatuses[0].ready}'

# ---- no probe process is left behind ----------------------------------------------------------
check "delete the pods" 0 "${kc[@]}" delete -f "$tmp/pods.yaml" --wait=true --timeout=60s
no_probe_left() { ! pgrep -f "^(cat /tmp/(ready|started)|sleep 300)\.$mark"; }
wait_for "no probe command is left" 60 no_probe_left
# every exec probe's helper is reaped: no zombie child of the agent stays (a child that just
# exited is one until the agent's reaper runs, later under load, so this waits, bounded)
no_zombie_child() { ! ps --ppid "$up_pid" -o stat= 2>/dev/null | grep -q Z; }
wait_for "no zombie left by the probes" 60 no_zombie_child
finish "probes"
