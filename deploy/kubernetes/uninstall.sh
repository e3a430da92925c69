#!/usr/bin/env bash
# Removes xpool from a Kubernetes cluster (docs/kubernetes.md): first take the extender stanza
# out of kube-scheduler's configuration on every control-plane node (with ignorable: false, pods
# asking for managed resources would fail to schedule while the extender is gone). Then this
# deletes the manifests and removes from every Node the labels and annotations xpool published
# (the labels it recorded in xpool.io/labels). KUBECTL (default kubectl).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kubectl=${KUBECTL:-kubectl}

$kubectl delete -k "$here" --ignore-not-found
$kubectl -n xpool-system delete secret xpool-extender-tls --ignore-not-found 2>/dev/null || true
for node in $($kubectl get nodes -o name); do
  owned=$($kubectl get "$node" -o jsonpath='{.metadata.annotations.xpool\.io/labels}')
  if [[ -n "$owned" ]]; then
    # shellcheck disable=SC2046
    $kubectl label "$node" $(tr ',' '\n' <<<"$owned" | sed 's/$/-/') >/dev/null
  fi
  $kubectl annotate "$node" xpool.io/inventory- xpool.io/labels- >/dev/null 2>&1 || true
done
$kubectl label nodes --all xpool.io/node- >/dev/null 2>&1 || true
echo "xpool is removed; kube-scheduler no longer names it once its configuration does not."
