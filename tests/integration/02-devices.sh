#!/usr/bin/env bash
# xpool devices: the live machine, captured trees, node descriptions, exit codes and what a user
# reads. Usage errors (an unknown option, output format or backend) exit 2; failed discovery (an
# unreadable root, a broken node description) exits 1.
source "$(dirname "$0")/lib.sh"
data=${XPOOL_TEST_DATA:?}

# The live machine: its threads and memory as the kernel reports them.
check "live machine" 0 "$xpool" devices
all=$(nproc --all)
online=$(getconf _NPROCESSORS_ONLN)
grep -qE "^Node: .* ($all|$online) threads?;" "$tmp/out" ||
  { echo "FAIL live threads: expected $all (or $online online) threads:"; cat "$tmp/out"; failures=$((failures + 1)); }
mem=$(awk '/^MemTotal:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
expect_in "live memory" "$tmp/out" "memory $mem GiB"
expect_in "live NUMA" "$tmp/out" "NUMA node 0: CPUs "
check "live machine json" 0 "$xpool" devices -o json
cp "$tmp/out" "$tmp/live.json"
expect_in "live json threads" "$tmp/live.json" '"threads": '
kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
expect_in "live json memory" "$tmp/live.json" "\"memoryBytes\": $((kb * 1024))"
if command -v jq >/dev/null; then
  [[ $(jq -r '.cpu.threads' "$tmp/live.json") =~ ^($all|$online)$ ]] ||
    { echo "FAIL live json: jq reads cpu.threads $(jq -r '.cpu.threads' "$tmp/live.json")"; failures=$((failures + 1)); }
fi

# The captured CI machine: CPUs and memory, no accelerators.
check "ci-machine tree" 0 "$xpool" devices --root "$data/sysfs/ci-machine"
expect_in "ci-machine no accelerators" "$tmp/out" "No accelerators found."
expect_in "ci-machine threads" "$tmp/out" "2 threads;"

# The seed's node description: one GPU and two NPUs, all simulated, with their resource names.
seed=$src/examples/nodes/seed-gpu-npu.yaml
check "seed description" 0 "$xpool" devices --node-description "$seed"
cp "$tmp/out" "$tmp/seed.txt"
expect_count "seed simulated devices" "$tmp/seed.txt" 3 "  SIM  Healthy"
expect_count "seed GPU" "$tmp/seed.txt" 1 " nvidia.com/gpu "
expect_count "seed NPUs" "$tmp/seed.txt" 2 " vendor.com/npu "
expect_in "seed GPU model" "$tmp/seed.txt" "NVIDIA H100 80GB HBM3"
expect_in "seed topology by default" "$tmp/seed.txt" "Legend"
expect_in "seed node line" "$tmp/seed.txt" "Node: "
check "seed -o json" 0 "$xpool" devices --backends sim -n "$seed" -o json
cp "$tmp/out" "$tmp/seed.json"
expect_count "seed json simulated" "$tmp/seed.json" 3 '"simulated": true'
expect_in "seed json catalog" "$tmp/seed.json" '"fp16TFLOPS": 989.5'
expect_in "seed json link" "$tmp/seed.json" '"level": "NVLink"'
# what -o json prints is itself a node description xpool reads back to the same inventory
check "json reads back" 0 "$xpool" devices --backends sim -n "$tmp/seed.json" -o json
cmp -s "$tmp/out" "$tmp/seed.json" || { echo "FAIL -o json does not read back the same"; diff "$tmp/seed.json" "$tmp/out"; failures=$((failures + 1)); }
check "seed -o yaml" 0 "$xpool" devices --backends sim -n "$seed" -o yaml
cp "$tmp/out" "$tmp/seed.yaml"
expect_in "seed yaml" "$tmp/seed.yaml" "resourceName: vendor.com/npu"
check "yaml reads back" 0 "$xpool" devices --backends sim -n "$tmp/seed.yaml" -o json
cmp -s "$tmp/out" "$tmp/seed.json" || { echo "FAIL -o yaml does not read back the same"; diff "$tmp/seed.json" "$tmp/out"; failures=$((failures + 1)); }
check "description on stdin" 0 "$xpool" devices --backends sim -n - -o json <"$seed"
cmp -s "$tmp/out" "$tmp/seed.json" || { echo "FAIL stdin description differs"; failures=$((failures + 1)); }

# Every example node description works.
for f in "$src"/examples/nodes/*.yaml; do
  check "example $(basename "$f")" 0 "$xpool" devices --backends sim -n "$f" --topology
done
check "one GPU, --topology" 0 "$xpool" devices --backends sim -n - --topology <<<'devices: [{kind: gpu, resourceName: nvidia.com/gpu}]'
expect_in "topology on request" "$tmp/out" "Legend"
check "one GPU, no matrix" 0 "$xpool" devices --backends sim -n - <<<'devices: [{kind: gpu, resourceName: nvidia.com/gpu}]'
grep -q Legend "$tmp/out" && { echo "FAIL a single device printed a topology matrix"; failures=$((failures + 1)); }

# Broken descriptions: exit 1, file:line:column and field on stderr, nothing on stdout.
check "bad kind" 1 "$xpool" devices -n "$data/nodes/bad-kind.yaml"
expect_in "bad kind error" "$tmp/err" "error: $data/nodes/bad-kind.yaml:7:9: devices[1].kind: Unsupported value: \"tpu\": supported values: "
[[ -s "$tmp/out" ]] && { echo "FAIL bad kind: wrote to stdout"; failures=$((failures + 1)); }
check "bad link" 1 "$xpool" devices -n "$data/nodes/bad-link.yaml"
expect_in "bad link error" "$tmp/err" "bad-link.yaml:7:20: links[0].devices[1]: unknown device \"gpu-2\""
check "bad syntax" 1 "$xpool" devices -n "$data/nodes/bad-syntax.json"
expect_in "bad syntax error" "$tmp/err" "bad-syntax.json:4:1: "
check "missing description" 1 "$xpool" devices -n "$tmp/nope.yaml"
expect_in "missing description error" "$tmp/err" "cannot open the node description $tmp/nope.yaml: No such file or directory"

# A simulated id that a discovered device already has (the driver's GPU UUID): both named.
check "id clash" 1 "$xpool" devices --root "$data/sysfs/dgx-8gpu" -n "$data/nodes/bad-clash.yaml"
expect_in "id clash error" "$tmp/err" "bad-clash.yaml:3:8: devices[0].id: simulated device \"GPU-5f2a8c31-9d47-4e1b-b6a0-3c7e1d9f2000\" clashes with the device GPU-5f2a8c31-9d47-4e1b-b6a0-3c7e1d9f2000 (NVIDIA H100 80GB HBM3 at 0000:03:00.0) already in the inventory"
# Without NVML a GPU keeps the id NVML gives it (the driver's UUID), not its PCI address.
check "pci ids are the driver's UUIDs" 0 "$xpool" devices --root "$data/sysfs/dgx-8gpu" --backends pci -o json
expect_in "pci UUID id" "$tmp/out" '"id": "GPU-5f2a8c31-9d47-4e1b-b6a0-3c7e1d9f2000"'

# NVIDIA GPUs through the real dlopen path, against the fake libnvidia-ml.so.1 the tests build.
if [[ -n "${XPOOL_FAKE_NVML:-}" && -f "$XPOOL_FAKE_NVML" ]]; then
  check "nvml on the dgx tree" 0 env FAKE_NVML_CONFIG="$data/nvml/h100-8x-nvswitch.json" \
    "$xpool" devices --root "$data/sysfs/dgx-8gpu" --nvml-library "$XPOOL_FAKE_NVML"
  expect_in "nvml gives memory and health" "$tmp/out" "7      gpu   NVIDIA H100 80GB HBM3  nvidia.com/gpu  79.6 GiB  1     0000:a4:00.0  -    Healthy"
  expect_in "nvml NVSwitch fabric" "$tmp/out" "GPU0	 X 	NV18	NV18	NV18	NV18	NV18	NV18	NV18	0-47,96-143	0"
  check "nvml Xid 79" 0 env FAKE_NVML_CONFIG="$data/nvml/xid79.json" XPOOL_NVML_LIBRARY="$XPOOL_FAKE_NVML" \
    "$xpool" devices --backends nvml
  expect_in "Xid 79 makes the GPU unhealthy" "$tmp/out" "Unhealthy (Xid 79: GPU has fallen off the bus)"
  check "override resource name and TFLOPS" 0 env FAKE_NVML_CONFIG="$data/nvml/xid79.json" XPOOL_NVML_LIBRARY="$XPOOL_FAKE_NVML" \
    "$xpool" devices --backends nvml --override 'H100:resource=nvidia.com/h100,fp16=1000' -o json
  expect_in "override resource name" "$tmp/out" '"resourceName": "nvidia.com/h100"'
  expect_in "override fp16" "$tmp/out" '"fp16TFLOPS": 1000.0'
  check "override needs a key" 2 "$xpool" devices --override H100
  expect_in "override hint" "$tmp/err" "expected MATCH:KEY=VALUE"
  check "override checks the resource name" 2 "$xpool" devices --override 'H100:resource=gpu'
  expect_in "override resource error" "$tmp/err" 'Invalid value: "gpu"'
  check "nvml absent is no error" 0 "$xpool" devices --backends cpu,nvml --nvml-library "$tmp/no/libnvidia-ml.so.1"
  expect_in "nvml absent" "$tmp/out" "No accelerators found."
else
  echo "note: XPOOL_FAKE_NVML not set; fake NVML checks skipped"
fi

# Usage and discovery errors say what to do.
check "unknown backend" 2 "$xpool" devices --backends cpu,tpu
expect_in "unknown backend hint" "$tmp/err" "unknown backend 'tpu' in --backends: choose from cpu, nvml, pci and sim"
check "empty backends" 2 "$xpool" devices --backends ,
check "bad output format" 2 "$xpool" devices -o xml
expect_in "bad output format hint" "$tmp/err" "unsupported output format 'xml' (supported: table, json, yaml)"
check "stray argument" 2 "$xpool" devices nodes.yaml
expect_in "stray argument hint" "$tmp/err" "--node-description FILE"
check "missing root" 1 "$xpool" devices --root "$tmp/nothing"
expect_in "missing root error" "$tmp/err" "cannot open the discovery root $tmp/nothing"
expect_in "missing root hint" "$tmp/err" "hint: --root names a directory with sys/ and proc/"
check "devices help" 0 "$xpool" devices --help
expect_in "devices help" "$tmp/out" "--node-description FILE"
check "help lists devices" 0 "$xpool" help
expect_in "help lists devices" "$tmp/out" "devices"

# The nvidia-smi comparison says why it cannot run here.
if ! command -v nvidia-smi >/dev/null; then
  check "compare-nvidia-smi without a GPU" 77 env XPOOL_BIN="$xpool" "$src/scripts/compare-nvidia-smi"
  expect_in "compare-nvidia-smi message" "$tmp/err" "nvidia-smi not found"
fi

finish "xpool devices"
