#!/usr/bin/env bash
# Installs or upgrades xpool on a Kubernetes cluster without Helm (docs/kubernetes.md):
#   1. refuses to go on when NVIDIA's device plugin runs and nvidia.com/gpu is not left to it;
#   2. applies the manifests (kubectl apply -k), with IMAGE and SKIP_RESOURCES put in;
#   3. makes the extender's certificates once (a CA, a serving certificate for its Service, a
#      client certificate for kube-scheduler) into the Secret xpool-extender-tls;
#   4. writes kube-scheduler's configuration and the files it names into OUT, to be copied to
#      /etc/kubernetes/xpool/ on each control-plane node.
# Environment: IMAGE (default xpool:0.1.0), SKIP_RESOURCES (comma-separated, default empty),
# OUT (default ./xpool-scheduler), KUBECTL (default kubectl). Needs kubectl and openssl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kubectl=${KUBECTL:-kubectl}
image=${IMAGE:-xpool:0.1.0}
skip=${SKIP_RESOURCES:-}
out=${OUT:-./xpool-scheduler}
ns=xpool-system

command -v openssl >/dev/null || { echo "install.sh: openssl is needed for the extender's certificates" >&2; exit 1; }

# 1. coexistence: two plugins must never advertise one resource
if $kubectl get daemonsets --all-namespaces -o name 2>/dev/null | grep -q 'nvidia-device-plugin'; then
  case ",$skip," in
  *,nvidia.com/gpu,*) ;;
  *)
    echo "install.sh: NVIDIA's device plugin runs in this cluster and advertises nvidia.com/gpu." >&2
    echo "  Leave it that resource: SKIP_RESOURCES=nvidia.com/gpu $0" >&2
    echo "  (or remove NVIDIA's plugin first; docs/kubernetes.md, 'Beside NVIDIA's device plugin')" >&2
    exit 1
    ;;
  esac
fi

# 2. the manifests, through a throw-away overlay that sets the image and the skipped resources
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
cp -r "$here"/*.yaml "$overlay/"
name=${image%:*}
tag=${image##*:}
[[ "$name" == "$image" ]] && tag=latest
cat >"$overlay/kustomization.yaml" <<KUST
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [namespace.yaml, config.yaml, node-rbac.yaml, node-daemonset.yaml, extender-rbac.yaml, extender.yaml]
images:
- name: xpool
  newName: $name
  newTag: "$tag"
KUST
sed -i "s|  skip-resources: \"\"|  skip-resources: \"$skip\"|" "$overlay/config.yaml"
$kubectl apply -k "$overlay"

# 3. certificates, made once (an upgrade keeps them)
ip=$($kubectl -n $ns get service xpool-extender -o jsonpath='{.spec.clusterIP}')
mkdir -p "$out"
if ! $kubectl -n $ns get secret xpool-extender-tls >/dev/null 2>&1; then
  certs=$(mktemp -d)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=xpool-extender-ca \
    -keyout "$certs/ca.key" -out "$certs/ca.crt" 2>/dev/null
  printf 'subjectAltName=DNS:xpool-extender.%s.svc,DNS:xpool-extender.%s.svc.cluster.local,IP:%s\nextendedKeyUsage=serverAuth\n' \
    $ns $ns "$ip" >"$certs/server.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=xpool-extender \
    -keyout "$certs/tls.key" -out "$certs/server.csr" 2>/dev/null
  openssl x509 -req -in "$certs/server.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -CAcreateserial \
    -days 825 -extfile "$certs/server.ext" -out "$certs/tls.crt" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$certs/client.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-scheduler \
    -keyout "$out/client.key" -out "$certs/client.csr" 2>/dev/null
  openssl x509 -req -in "$certs/client.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -CAcreateserial \
    -days 825 -extfile "$certs/client.ext" -out "$out/client.crt" 2>/dev/null
  cp "$certs/ca.crt" "$out/ca.crt"
  $kubectl -n $ns create secret generic xpool-extender-tls --from-file=tls.crt="$certs/tls.crt" \
    --from-file=tls.key="$certs/tls.key" --from-file=client-ca.crt="$certs/ca.crt"
  chmod 600 "$out/client.key"
  rm -rf "$certs"
else
  echo "install.sh: keeping the existing Secret xpool-extender-tls (delete it to make new certificates)"
fi

# 4. kube-scheduler's configuration
sed "s|XPOOL_EXTENDER_IP|$ip|" "$here/scheduler/kube-scheduler-config.yaml" >"$out/kube-scheduler-config.yaml"
$kubectl -n $ns rollout status deployment/xpool-extender --timeout=120s || true
cat <<MSG

xpool is installed. On each control-plane node:
  1. copy $out/{ca.crt,client.crt,client.key,kube-scheduler-config.yaml} to /etc/kubernetes/xpool/
  2. start kube-scheduler with --config=/etc/kubernetes/xpool/kube-scheduler-config.yaml
     (kubeadm: add it to /etc/kubernetes/manifests/kube-scheduler.yaml with a hostPath mount)
Label the accelerator nodes: kubectl label node NODE xpool.io/node=true
MSG
