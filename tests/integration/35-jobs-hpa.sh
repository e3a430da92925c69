#!/usr/bin/env bash
# Jobs, CronJobs and autoscaling with stock kubectl against `xpool up --simulate` (docs/workloads.md,
# "Jobs and CronJobs", "Autoscaling"):
#   - a Job of 10 completions with parallelism 2: never more than 2 pods at once (read from the
#     pods' start and finish times), Complete with 10/10 in kubectl's table;
#   - an Indexed Job whose pods print JOB_COMPLETION_INDEX: 0, 1, 2, completedIndexes 0-2;
#   - a Job whose pod exits 42 under a FailJob rule: Failed with reason PodFailurePolicy;
#   - a CronJob (kubectl create cronjob), a Job made from it (kubectl create job --from), the
#     table's columns, and Kubernetes' message for a bad schedule and an unknown time zone.
source "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
data=$tmp/data
up_pid=
stop_up() {
  [[ -n "$up_pid" ]] || return 0
  kill -KILL "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_pid=
}
trap 'stop_up; release_tmp; rm -rf "$tmp"' EXIT

log=$tmp/up.log
"$xpool" up --listen 127.0.0.1:0 --data-dir "$data" --simulate --node-name batch-node \
  --backoff-initial 200ms --pod-network host --default-runtime process >"$log" 2>&1 &
up_pid=$!
diag_log "$log"
deadline=$((SECONDS + 60))
until grep -q "^xpool is up" "$log"; do
  kill -0 "$up_pid" 2>/dev/null || { echo "FAIL xpool up exited:"; cat "$log"; exit 1; }
  [[ $SECONDS -lt $deadline ]] || { echo "FAIL xpool up did not come up within 60 s:"; cat "$log"; exit 1; }
  sleep 0.1
done
export KUBECONFIG=$data/admin.kubeconfig
k=(kubectl --request-timeout=20s)
diag_run "kubectl get jobs,cronjobs,pods -o wide"
diag_run "kubectl get events"

cat >"$tmp/jobs.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: ten}
spec:
  completions: 10
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: [sh, -c, "sleep 0.4"]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: [sh, -c, "echo index=$JOB_COMPLETION_INDEX"]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: fatal}
spec:
  backoffLimit: 3
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: [sh, -c, "exit 42"]}
YAML
check "apply the jobs" 0 "${k[@]}" apply -f "$tmp/jobs.yaml"

job_status() { "${k[@]}" get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}' 2>/dev/null | tr ' ' '\n' | grep -xE 'Complete|Failed' || true; }
poll "ten completes" 120 Complete job_status ten
poll "indexed completes" 60 Complete job_status indexed
poll "fatal fails" 60 Failed job_status fatal

check "get jobs" 0 "${k[@]}" get jobs
expect_in "the table's columns" "$tmp/out" "NAME      STATUS     COMPLETIONS   DURATION   AGE"
expect_in "ten: 10/10" "$tmp/out" "ten       Complete   10/10"
expect_in "fatal: Failed 0/1" "$tmp/out" "fatal     Failed     0/1"

# never more than 2 at once: each pod's run is [startedAt, finishedAt] of its container
check "ten's pods" 0 "${k[@]}" get pods -l job-name=ten -o jsonpath='{range .items[*]}{.status.containerStatuses[0].state.terminated.startedAt} {.status.containerStatuses[0].state.terminated.finishedAt}{"\n"}{end}'
expect_count "ten ran 10 pods" "$tmp/out" 10 "Z"
most=$(awk '{print $1" 1"; print $2" -1"}' "$tmp/out" | sort -k1,1 -k2,2n | awk '{n+=$2; if (n>m) m=n} END {print m+0}')
[[ $most -le 2 ]] || { echo "FAIL ten: $most pods ran at once, parallelism is 2"; failures=$((failures + 1)); }

check "indexed's logs" 0 bash -c "for p in \$(kubectl get pods -l job-name=indexed -o name); do kubectl logs \$p; done | sort"
expect_in "indexes 0, 1, 2" "$tmp/out" "$(printf 'index=0\nindex=1\nindex=2')"
check "completedIndexes" 0 "${k[@]}" get job indexed -o jsonpath='{.status.completedIndexes}'
expect_in "0-2" "$tmp/out" "0-2"

# the selector the server generated: the Job's uid, on the template and in spec.selector
uid=$("${k[@]}" get job ten -o jsonpath='{.metadata.uid}')
check "ten's selector" 0 "${k[@]}" get job ten -o jsonpath='{.spec.selector.matchLabels}{" "}{.spec.template.metadata.labels}'
expect_in "selects its uid" "$tmp/out" "{\"batch.kubernetes.io/controller-uid\":\"$uid\"} "
expect_in "template's uid label" "$tmp/out" "\"controller-uid\":\"$uid\""
expect_in "template's name label" "$tmp/out" "\"batch.kubernetes.io/job-name\":\"ten\""
check "a selector without manualSelector" 1 "${k[@]}" create -f - <<<'{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"sel"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x"}]}}}}'
expect_in "not auto-generated" "$tmp/err" 'spec.selector: Invalid value: "app=x": `selector` not auto-generated'
check "fatal's reason" 0 "${k[@]}" get job fatal -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}: {.status.conditions[?(@.type=="Failed")].message}'
expect_in "PodFailurePolicy" "$tmp/out" "PodFailurePolicy: Container main for pod default/fatal-"
expect_in "its rule" "$tmp/out" "failed with exit code 42 matching FailJob rule at index 0"

# ---- CronJob ------------------------------------------------------------------------------------
check "create cronjob" 0 "${k[@]}" create cronjob tick --image=busybox --schedule="*/5 * * * *" -- sh -c 'echo tick'
check "get cronjobs" 0 "${k[@]}" get cronjobs
expect_in "its columns" "$tmp/out" "NAME   SCHEDULE      TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE"
expect_in "its row" "$tmp/out" "tick   */5 * * * *   <none>     False     0        <none>"
check "create job --from=cronjob" 0 "${k[@]}" create job manual --from=cronjob/tick
poll "manual completes" 60 Complete job_status manual
check "manual's owner" 0 "${k[@]}" get job manual -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}'
expect_in "the CronJob" "$tmp/out" "CronJob/tick"
check "describe job manual" 0 "${k[@]}" describe job manual
expect_in "its events" "$tmp/out" "SuccessfulCreate"
check "a bad schedule" 1 "${k[@]}" create cronjob bad --image=busybox --schedule="61 * * * *"
expect_in "robfig's message" "$tmp/err" 'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'
"${k[@]}" create cronjob zoned --image=busybox --schedule="0 9 * * *" --dry-run=client -o json |
  sed 's/"schedule": "0 9 \* \* \*"/"schedule": "0 9 * * *", "timeZone": "Mars\/Olympus"/' >"$tmp/zoned.json"
check "an unknown time zone" 1 "${k[@]}" apply -f "$tmp/zoned.json"
expect_in "Kubernetes' message" "$tmp/err" 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'

# ---- HorizontalPodAutoscaler (the kind; its controller: 41-autoscaling) ---------
cat >"$tmp/hpa.yaml" <<'YAML'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: inference}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: inference}
  maxReplicas: 4
  metrics:
  - type: Pods
    pods:
      metric: {name: xpool_device_utilization}
      target: {type: AverageValue, averageValue: "50"}
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
YAML
# --validate=false: kubectl's client-side check cannot read the autoscaling/v2 OpenAPI yet
check "create the hpa" 0 "${k[@]}" apply --validate=false -f "$tmp/hpa.yaml"
check "get hpa" 0 "${k[@]}" get hpa
expect_in "its columns" "$tmp/out" "NAME        REFERENCE              TARGETS                            MINPODS   MAXPODS   REPLICAS   AGE"
expect_in "its row" "$tmp/out" "inference   Deployment/inference   <unknown>/50, cpu: <unknown>/60%   1         4         0"
sed 's/maxReplicas: 4/minReplicas: 0\n  maxReplicas: 4/; s/name: inference}$/name: zero}/' "$tmp/hpa.yaml" >"$tmp/zero.yaml"
check "minReplicas 0 is refused" 1 "${k[@]}" apply --validate=false -f "$tmp/zero.yaml"
expect_in "Kubernetes' message" "$tmp/err" 'spec.minReplicas: Invalid value: 0: must be greater than or equal to 1'

finish "jobs-hpa"
