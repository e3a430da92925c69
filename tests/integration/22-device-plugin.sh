#!/usr/bin/env bash
# xpool device-plugin against a fake kubelet in Debian's python3-grpcio (tests/tools/fake_kubelet.py,
# from the same .proto files): every resource registers (8 NVIDIA GPUs from the fake NVML in two
# NVLink islands, Ascend NPUs, an AMD GPU and an FPGA from a node description); ListAndWatch
# lists every device with its NUMA node; an Xid injected through the fake NVML streams the GPU
# Unhealthy and the driver's "no recovery pending" streams it Healthy again; preferred
# allocations keep NVLink islands whole and honour must-include devices; Allocate gives exactly
# the chosen devices (environment, device nodes, mounts, CDI names); garbage protobuf and unknown
# devices get clear errors while the plugin keeps serving; a kubelet restart (every socket
# removed, kubelet.sock recreated) brings every plugin back registered with nothing lost; the
# pod-resources client reads what the fake kubelet serves. The CDI spec files pass xpool's checker
# and the CDI project's JSON schema (Debian's golang-...-container-device-interface-dev, when
# installed).
source "$(dirname "$0")/lib.sh"
python=/usr/bin/python3
if ! "$python" -c 'import grpc, google.protobuf' 2>/dev/null; then
  echo "SKIP: $python has no grpc (python3-grpcio) or protobuf (python3-protobuf); scripts/install-deps installs them"
  exit 77
fi
if ! command -v protoc >/dev/null; then
  echo "SKIP: no protoc (protobuf-compiler) to generate the fake kubelet's messages"
  exit 77
fi
tool=${XPOOL_KUBE_TOOL:?}
kubelet_pid= plugin_pid=
cleanup() {
  for pid in $plugin_pid $kubelet_pid; do kill -KILL "$pid" 2>/dev/null || true; done
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

plugins=$tmp/device-plugins cdi=$tmp/cdi root=$tmp/root
mkdir -p "$plugins" "$cdi"
# the GPUs' NUMA nodes, read below --root as from sysfs: 0 for the first island, 1 for the other
for bus in 18 2a 3a 5d 9a ab ba db; do
  mkdir -p "$root/sys/bus/pci/devices/0000:$bus:00.0"
  case $bus in 9a | ab | ba | db) echo 1 ;; *) echo 0 ;; esac >"$root/sys/bus/pci/devices/0000:$bus:00.0/numa_node"
done
cp "$XPOOL_TEST_DATA/nvml/h100-8x-two-islands.json" "$tmp/nvml.json"

"$python" "$src/tests/tools/fake_kubelet.py" --proto-dir "$src/src/kube/proto" --dir "$plugins" \
  --podres-socket "$tmp/podres.sock" --nvml-config "$tmp/nvml.json" --tool "$tool" \
  --ready "$tmp/ready" --go "$tmp/go" >"$tmp/kubelet.out" 2>&1 &
kubelet_pid=$!
diag_log "$tmp/kubelet.out"
for _ in $(seq 600); do [[ -e $tmp/ready ]] && break; sleep 0.1; done

FAKE_NVML_CONFIG=$tmp/nvml.json XPOOL_NVML_LIBRARY=$XPOOL_FAKE_NVML \
  "$xpool" device-plugin --plugin-dir "$plugins" --cdi-dir "$cdi" --root "$root" --backends nvml,sim \
  --node-description "$XPOOL_TEST_DATA/nodes/kube-plugin-extras.yaml" --health-interval 300ms \
  --mount huawei.com/Ascend910=/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro \
  >"$tmp/plugin.out" 2>&1 &
plugin_pid=$!
diag_log "$tmp/plugin.out"
touch "$tmp/go"

kubelet_rc=0
for _ in $(seq 1800); do kill -0 "$kubelet_pid" 2>/dev/null || break; sleep 0.1; done
wait "$kubelet_pid" || kubelet_rc=$?
kubelet_pid=
cat "$tmp/kubelet.out"
if [[ $kubelet_rc -ne 0 ]]; then
  echo "FAIL the fake kubelet's scenario (exit $kubelet_rc); the plugin said:"; cat "$tmp/plugin.out"
  failures=$((failures + 1))
fi
expect_in "the plugin logs the Xid" "$tmp/plugin.out" "nvidia.com/gpu GPU-1a2b3c02-0000-4000-8000-000000000002: Unhealthy (Xid 79: GPU has fallen off the bus)"
expect_in "the plugin logs the recovery" "$tmp/plugin.out" "GPU-1a2b3c02-0000-4000-8000-000000000002: Healthy again"
expect_in "the plugin logs the garbage it refused" "$tmp/plugin.out" "/v1beta1.DevicePlugin/Allocate: refused a request"

# SIGTERM: a clean stop that takes its sockets along
kill -TERM "$plugin_pid"
plugin_rc=0
wait "$plugin_pid" || plugin_rc=$?
plugin_pid=
check "the plugin stops on SIGTERM" 0 test "$plugin_rc" -eq 0
check "no plugin socket is left" 0 bash -c "! ls '$plugins' | grep -q '^xpool-'"

# CDI: one spec per kind, every one valid, naming every device with device nodes
check "CDI specs for the GPUs, NPUs and the FPGA" 0 ls "$cdi/xpool.io-gpu.json" "$cdi/xpool.io-npu.json" "$cdi/xpool.io-fpga.json"
check "the CDI specs pass xpool's checker" 0 "$tool" cdi-check "$cdi"/*.json
expect_count "the GPU spec names 9 GPUs (8 NVIDIA, 1 AMD)" "$cdi/xpool.io-gpu.json" 9 '"name":'
cdi_schema=/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema
if "$python" -c 'import jsonschema' 2>/dev/null && [[ -f $cdi_schema/schema.json ]]; then
  check "the CDI specs pass the CDI project's JSON schema" 0 "$python" -c '
import json, sys, jsonschema
schema_dir = sys.argv[1]
schema = json.load(open(schema_dir + "/schema.json"))
defs = json.load(open(schema_dir + "/defs.json"))
resolver = jsonschema.RefResolver("file://" + schema_dir + "/", schema, store={"defs.json": defs})
for path in sys.argv[2:]:
    jsonschema.validate(json.load(open(path)), schema, resolver=resolver)
    print("valid", path)
' "$cdi_schema" "$cdi"/*.json
else
  echo "note: python3-jsonschema or the CDI schema (golang-github-container-orchestrated-devices-container-device-interface-dev) is missing: the schema check is left out"
fi
printf '{"cdiVersion":"0.5.0","kind":"xpool.io/gpu","devices":[{"name":"-bad","containerEdits":{"deviceNodes":[{"path":"/dev/x","type":"z"}]}}]}' >"$tmp/bad.json"
check "the checker refuses a bad spec" 1 "$tool" cdi-check "$tmp/bad.json"
expect_in "the checker says where and what" "$tmp/out" "/devices/0/name: '-bad' is not a device name"

# no device to serve: a clear error
check "a node without devices" 1 "$xpool" device-plugin --plugin-dir "$plugins" --no-cdi --backends sim
expect_in "says why" "$tmp/err" "no device resource to serve on this node"
check "--resources naming no device of the node" 1 "$xpool" device-plugin --plugin-dir "$plugins" --no-cdi \
  --backends sim --node-description "$XPOOL_TEST_DATA/nodes/kube-plugin-extras.yaml" --resources foo.com/x
expect_in "says the name is not served" "$tmp/err" "--resources foo.com/x: no device of this node has that resource; not served"
expect_in "and which resources the node has" "$tmp/err" "(its devices' resources: amd.com/gpu, huawei.com/Ascend910, xilinx.com/fpga; --resources and --skip-resources leave none)"
check "a plugin directory that cannot be made" 1 "$xpool" device-plugin --plugin-dir "$tmp/no/such/dir" --no-cdi \
  --backends sim --node-description "$XPOOL_TEST_DATA/nodes/kube-plugin-extras.yaml"
expect_in "names the flag and what the directory is" "$tmp/err" "--plugin-dir $tmp/no/such/dir: No such file or directory (the kubelet's device plugin directory"
check "a bad --mount" 2 "$xpool" device-plugin --mount nonsense
expect_in "says what is expected" "$tmp/err" "expected RESOURCE=/HOST:/CONTAINER[:ro]"
finish device-plugin
