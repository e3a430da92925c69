#!/usr/bin/env bash
# The simulator against the real server (docs/simulator.md, "The simulator and the server"): the
# 41-node slice of the Alibaba trace test_sim replays (tests/data/sim), exported by `xpool sim
# --export` (Nodes, Pods in arrival order, where each went), then created through the API in
# that order with `xpool server --placement-profile P`, whose scheduling loop binds them. The
# server must place every pod where the simulator did (same node, same devices, same milli) and
# leave Pending exactly the pods the simulator dropped, for the server's default profile and for
# a published one. Both measure fragmentation against the pods placed so far (`--live-mix`: the
# server knows no trace), the tie order comes from the same seed (0, the server's), and pods only
# arrive, so a pod that fit nowhere when it came fits nowhere later: no tolerance is needed.
source "$(dirname "$0")/lib.sh"
command -v /usr/bin/python3 >/dev/null || { echo "SKIP: /usr/bin/python3 is not installed"; exit 77; }
slice=${XPOOL_TEST_DATA:?}/sim
server_pid=

trap 'stop_server TERM; release_tmp; rm -rf "$tmp"' EXIT

# The placements as the server has them, in placements.csv's form, sorted by pod.
server_placements() { # kubeconfig
  "$xpool" get pods -n sim -o json --kubeconfig "$1" | /usr/bin/python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    ann = json.loads(p["metadata"].get("annotations", {}).get("xpool.io/placement", "{}") or "{}")
    devs = ";".join("%d:%d" % (d["index"], d["milli"]) for d in ann.get("devices", []))
    print("%s,%s,%s" % (p["metadata"]["name"], p["spec"].get("nodeName", ""), devs))
' | sort
}

# How many pods the server has settled: bound, or said unschedulable.
settled() { # kubeconfig
  "$xpool" get pods -n sim -o json --kubeconfig "$1" | /usr/bin/python3 -c '
import json, sys
n = 0
for p in json.load(sys.stdin)["items"]:
    conds = p.get("status", {}).get("conditions", [])
    if p["spec"].get("nodeName") or any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conds):
        n += 1
print(n)'
}

replay() { # profile
  local profile=$1 dir=$tmp/$1 kc want
  mkdir -p "$dir"
  check "sim $profile" 0 "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" \
    --policy "$profile" --seed 0 --seeds 1 --live-mix --export "$dir"
  expect_in "sim $profile prints its row" "$tmp/out" "$profile"
  tail -n +2 "$dir/placements.csv" | sort >"$dir/want"
  want=$(wc -l <"$dir/want")
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$dir/data" --placement-profile "$profile" \
    >"$dir/server.log" 2>&1 &
  server_pid=$!
  diag_log "$dir/server.log"
  kc=$dir/data/admin.kubeconfig
  poll "$profile server up" 60 ok bash -c "'$xpool' get nodes --kubeconfig '$kc' >/dev/null 2>&1 && echo ok"
  check "$profile namespace" 0 kubectl create namespace sim --kubeconfig "$kc"
  check "$profile nodes" 0 "$xpool" apply -f "$dir/nodes.json" --kubeconfig "$kc"
  check "$profile pods" 0 "$xpool" apply -f "$dir/pods.json" --kubeconfig "$kc"
  poll "$profile: every pod settled" 120 "$want" settled "$kc"
  server_placements "$kc" >"$dir/got"
  if ! diff "$dir/want" "$dir/got" >"$dir/diff"; then
    echo "FAIL $profile: the server placed differently from xpool sim (< sim, > server):"
    head -20 "$dir/diff"
    failures=$((failures + 1))
  fi
  # the slice is tight: some pods fit nowhere in both, and most were placed
  [[ $(grep -c ',,$' "$dir/want") -gt 0 && $(grep -vc ',,$' "$dir/want") -gt 150 ]] ||
    { echo "FAIL $profile: the slice placed $(grep -vc ',,$' "$dir/want") of $want pods"; failures=$((failures + 1)); }
  stop_server TERM
}

# Replays run in parallel processes (--jobs) give the figures of one process, row for row (the
# placements/s column aside).
seeds_jobs() { # jobs
  "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" --policy fgd,xpool,random \
    --seeds 3 --jobs "$1" --csv "$tmp/jobs$1.csv" >/dev/null && cut -d, -f1-8 "$tmp/jobs$1.csv"
}
check "sim --jobs 1" 0 seeds_jobs 1
check "sim --jobs 3" 0 seeds_jobs 3
check "sim --jobs 3 gives --jobs 1's figures" 0 diff <(seeds_jobs 1) <(seeds_jobs 3)
expect_in "sim --jobs: three policies" "$tmp/jobs3.csv" "pods,xpool,3,"
check "sim --jobs 0 is refused" 2 "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" --jobs 0

# --plot draws the curves as SVG or PNG (docs/simulator.md, "The curves"). The SVG is the one
# tests/data/sim/curves.svg holds, byte for byte; the PNG must be a sound PNG of the SVG's size
# whose pixels under each of the SVG's polylines are not white, a fifth or more in the line's
# own colour (where curves run together, the one drawn last shows).
png_shows_svg() { # png, svg
  /usr/bin/python3 - "$1" "$2" <<'PY'
import re, struct, sys, zlib
png = open(sys.argv[1], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
pos, idat, ihdr = 8, b"", None
while pos < len(png):
    n, kind = struct.unpack(">I4s", png[pos:pos + 8])
    body = png[pos + 8:pos + 8 + n]
    assert struct.unpack(">I", png[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body), "bad CRC"
    if kind == b"IHDR": ihdr = struct.unpack(">IIBBBBB", body)
    if kind == b"IDAT": idat += body
    pos += 12 + n
    if kind == b"IEND": break
w, h, depth, ctype = ihdr[:4]
svg = open(sys.argv[2]).read()
want = re.search(r"<svg [^>]*width='(\d+)' height='(\d+)'", svg)
assert (w, h) == (int(want[1]), int(want[2])), "PNG is %dx%d, SVG %sx%s" % (w, h, want[1], want[2])
assert depth == 8 and ctype in (2, 6), "depth %d colour type %d" % (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * (w * bpp + 1)], bytearray(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)])
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pred = [0, a, b, (a + b) // 2, a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c][f]
        line[i] = (line[i] + pred) & 0xff
    rows.append(line); prev = line
px = lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])
white = sum(px(x, y) == (255, 255, 255) for y in range(0, h, 4) for x in range(0, w, 4))
assert white > 0.7 * (w // 4) * (h // 4), "only %d sampled pixels white" % white
near = lambda x, y: [px(i, j) for i in range(x - 1, x + 2) for j in range(y - 1, y + 2)]
lines = re.findall(r"<polyline[^>]*stroke='#(\w{6})'[^>]*points='([^']*)'", svg)
assert len(lines) == 7, "%d polylines" % len(lines)
for colour, points in lines:
    rgb = tuple(int(colour[i:i + 2], 16) for i in (0, 2, 4))
    pts = [tuple(round(float(v)) for v in p.split(",")) for p in points.split()]
    inked = sum(any(q != (255, 255, 255) for q in near(x, y)) for x, y in pts)
    own = sum(any(max(abs(q[k] - rgb[k]) for k in range(3)) < 60 for q in near(x, y)) for x, y in pts)
    assert len(pts) > 20 and inked == len(pts), "#%s: %d of %d points inked" % (colour, inked, len(pts))
    # curves that run together hide each other: the one drawn last shows there
    assert own * 5 > len(pts), "#%s: %d of %d points in its colour" % (colour, own, len(pts))
print("png ok: %dx%d, %d curves" % (w, h, len(lines)))
PY
}
plot() { # file
  "$xpool" sim --nodes "$slice/nodes.csv" --pods "$slice/pods.csv" --seeds 2 --plot "$1"
}
check "sim --plot .svg" 0 plot "$tmp/curves.svg"
check "sim --plot .svg draws what it drew" 0 cmp "$tmp/curves.svg" "$slice/curves.svg"
check "sim --plot .png" 0 plot "$tmp/curves.png"
check "the PNG shows the SVG's curves" 0 png_shows_svg "$tmp/curves.png" "$tmp/curves.svg"
expect_in "the PNG's check ran" "$tmp/out" "png ok: 860x540, 7 curves"
check "sim --plot .jpg is refused" 2 plot "$tmp/curves.jpg"
expect_in "sim --plot .jpg says why" "$tmp/err" "name the file .svg or .png"
check "sim --plot .jpg writes nothing" 1 test -e "$tmp/curves.jpg"

replay xpool
replay bestfit
finish sim-server
