#!/usr/bin/env bash
# The xpool binary on manifests: exit codes, where output goes, and what a user reads.
source "$(dirname "$0")/lib.sh"
data=${XPOOL_TEST_DATA:?}/manifests

check "seed pod validates" 0 "$xpool" validate -f "$src/examples/ai-training.yaml"
expect_in "seed pod summary" "$tmp/out" "Pod default/ai-training: container trainer limits nvidia.com/gpu=1,vendor.com/npu=2"

check "multi-document file" 0 "$xpool" validate -f "$data/multi.yaml" -f "$data/gpu-node.yaml"
expect_in "multi-document count" "$tmp/out" "multi.yaml: 4 objects valid"
expect_in "node devices" "$tmp/out" "Node dgx-01: allocatable cpu=3800m,memory=62Gi,nvidia.com/gpu=2,pods=110 devices=2"

# A bad manifest: exit 1, the precise error on stderr, nothing on stdout.
sed 's/nvidia.com\/gpu: 1/nvidia.com\/gpu: 1.5x/' "$src/examples/ai-training.yaml" >"$tmp/pod.yaml"
check "bad quantity" 1 "$xpool" validate -f "$tmp/pod.yaml"
expect_in "bad quantity error" "$tmp/err" "error: $tmp/pod.yaml:19:25: spec.containers[0].resources.limits[nvidia.com/gpu]: \"1.5x\" is not a valid quantity"
[[ -s "$tmp/out" ]] && { echo "FAIL bad quantity: wrote to stdout"; failures=$((failures + 1)); }

# One bad file among good ones: the good ones are still reported, the exit code says failure.
check "mixed files" 1 "$xpool" validate -f "$data/seed-pod.yaml" -f "$tmp/pod.yaml"
expect_in "mixed files good one" "$tmp/out" "seed-pod.yaml: 1 object valid"

# Standard input, and --strict catching a typo.
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    resoures: {}\n' >"$tmp/typo.yaml"
check "typo accepted without --strict" 0 "$xpool" validate -f - <"$tmp/typo.yaml"
check "typo refused with --strict" 1 "$xpool" validate --strict -f - <"$tmp/typo.yaml"
expect_in "strict error" "$tmp/err" "<stdin>:8:5: spec.containers[0].resoures: unknown field \"resoures\" in Container"

# convert prints JSON that xpool reads back to the same result.
check "convert" 0 "$xpool" convert -f "$data/full-pod.yaml"
cp "$tmp/out" "$tmp/full.json"
expect_in "convert keeps unknown fields" "$tmp/full.json" '"containerPort": 29500'
expect_in "convert canonical quantity" "$tmp/full.json" '"cpu": "4"'
check "convert output reloads" 0 "$xpool" convert -f "$tmp/full.json"
cmp -s "$tmp/out" "$tmp/full.json" || { echo "FAIL convert is not idempotent"; diff "$tmp/out" "$tmp/full.json"; failures=$((failures + 1)); }
check "convert several as List" 0 "$xpool" convert -f "$data/multi.yaml"
expect_in "convert List" "$tmp/out" '"kind": "List"'

# convert -o yaml prints what kubectl prints, and reads back to the same objects.
check "convert yaml" 0 "$xpool" convert -o yaml -f "$data/full-pod.yaml"
cp "$tmp/out" "$tmp/full.yaml"
expect_in "convert yaml kind" "$tmp/full.yaml" 'kind: Pod'
expect_in "convert yaml quotes numeric strings" "$tmp/full.yaml" 'cpu: "4"'
grep -A1 -x '  containers:' "$tmp/full.yaml" | grep -qx '  - name: trainer' ||
  { echo "FAIL convert -o yaml: list items not at their key's indentation"; failures=$((failures + 1)); }
check "convert yaml reloads" 0 "$xpool" convert -o json -f - <"$tmp/full.yaml"
cmp -s "$tmp/out" "$tmp/full.json" || { echo "FAIL convert -o yaml does not read back the same"; diff "$tmp/out" "$tmp/full.json"; failures=$((failures + 1)); }
check "convert yaml idempotent" 0 "$xpool" convert -o yaml -f "$tmp/full.yaml"
cmp -s "$tmp/out" "$tmp/full.yaml" || { echo "FAIL convert -o yaml is not idempotent"; diff "$tmp/out" "$tmp/full.yaml"; failures=$((failures + 1)); }
check "convert several as yaml List" 0 "$xpool" convert -o yaml -f "$data/multi.yaml"
cp "$tmp/out" "$tmp/list.yaml"
expect_in "convert yaml List" "$tmp/list.yaml" 'kind: List'
grep -q '^---' "$tmp/list.yaml" && { echo "FAIL convert -o yaml of several objects printed several documents"; failures=$((failures + 1)); }
check "convert yaml List reloads" 0 "$xpool" convert -o json -f - <"$tmp/list.yaml"
cp "$tmp/out" "$tmp/list.json"
check "convert several as json List" 0 "$xpool" convert -f "$data/multi.yaml"
cmp -s "$tmp/out" "$tmp/list.json" || { echo "FAIL convert -o yaml List does not read back the same"; diff "$tmp/out" "$tmp/list.json"; failures=$((failures + 1)); }

# Usage errors exit 2 and say what to do.
check "no file" 2 "$xpool" validate
expect_in "no file hint" "$tmp/err" "no manifest given: use -f FILE"
check "unknown command" 2 "$xpool" frobnicate
expect_in "unknown command hint" "$tmp/err" "unknown command 'frobnicate'; run 'xpool help' for the list"
check "missing file" 1 "$xpool" validate -f "$tmp/nope.yaml"
expect_in "missing file error" "$tmp/err" "cannot open $tmp/nope.yaml: No such file or directory"
check "bad output format" 2 "$xpool" convert -f "$data/seed-pod.yaml" -o xml
expect_in "bad output format hint" "$tmp/err" "unsupported output format 'xml' (supported: json, yaml)"
check "help" 0 "$xpool" help
expect_in "help lists validate" "$tmp/out" "validate"
check "version" 0 "$xpool" version
expect_in "version" "$tmp/out" "xpool 0.1.0"

finish "CLI manifest"
