#!/usr/bin/env bash
# Damage is never silent (docs/store.md, "Damage"): the real server on loopback refuses a
# zero-length state.db and a WAL with a damaged frame after kill -9 mid-burst, with what was lost
# and the recovery command; `xpool store check` reports; `xpool store recover` keeps what is intact
# and no resourceVersion is used twice. A flipped bit inside a ConfigMap's value in state.db
# (which SQLite's quick_check passes): refused naming the object, checked, recovered without it;
# a row changed under a running server is a 500 naming it. A full disk: the server starts read-only, serves reads,
# refuses writes saying why, and takes them again when space returns. File modes 0600/0700 and
# the warning for a 0755 data directory; TLS 1.0 and 1.1 refused, 1.2 and 1.3 accepted.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
burst=${XPOOL_API_BURST:?the api_burst helper (tests/tools/api_burst.c)}
py=/usr/bin/python3
server_pid=
burst_pid=
base=
token=
mnt=
skipped=()

cleanup() {
  [[ -z "$burst_pid" ]] || { kill -KILL "$burst_pid" 2>/dev/null || true; wait "$burst_pid" 2>/dev/null || true; }
  stop_server KILL
  [[ -z "$mnt" ]] || umount "$mnt" 2>/dev/null || true
  release_tmp
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_server DATA LOG [server flags...]: on a free port; waits (bounded) until /version answers.
start_server() {
  local data=$1 log=$tmp/$2.log deadline=$((SECONDS + 60)) url=
  shift 2
  : >"$log"
  "$xpool" server --listen 127.0.0.1:0 --data-dir "$data" "$@" >"$log" 2>&1 &
  server_pid=$!
  diag_log "$log"
  while [[ $SECONDS -lt $deadline ]]; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      wait "$server_pid" 2>/dev/null || true
      server_pid=
      return 1
    fi
    url=$(sed -n 's|.*xpool server listening on \(https\{0,1\}://[^,]*\), state in .*|\1|p' "$log" 2>/dev/null || true)
    if [[ -n "$url" ]]; then
      token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" 2>/dev/null | head -1 || true)
      base=$url
      return 0
    fi
    sleep 0.05
  done
  echo "FAIL the server did not start within 60 s:"; cat "$log"; exit 1
}

cacert=
api() { # curl arguments...: with the token (and $cacert over TLS); prints the code, body in $tmp/body
  curl -sS --max-time 10 -o "$tmp/body" -w '%{http_code}' ${cacert:+--cacert "$cacert"} \
    -H "Authorization: Bearer $token" "$@" || true
}

create_pod() { # name: POST a pod; $code and $created (its resourceVersion, "" unless 201)
  code=$(api -H 'Content-Type: application/json' --data-binary \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}" \
    "$base/api/v1/namespaces/default/pods")
  created=
  [[ "$code" != 201 ]] || created=$(grep -o '"resourceVersion":"[0-9]*"' "$tmp/body" | head -1 | cut -d'"' -f4)
}

expect_code() { # name, want: the last request's code
  if [[ "$code" != "$2" ]]; then
    echo "FAIL $1: HTTP $code, expected $2"; cat "$tmp/body"; echo; failures=$((failures + 1))
  fi
}

max_version() { # file: the highest resourceVersion in it
  grep -o '"resourceVersion":"[0-9]*"' "$1" | cut -d'"' -f4 | sort -n | tail -1
}

mode_is() { # name, path, octal mode
  local got
  got=$(stat -c %a "$2" 2>/dev/null || echo missing)
  [[ "$got" == "$3" ]] || { echo "FAIL $1: $2 is $got, expected $3"; failures=$((failures + 1)); }
}

# ---- modes: a 0755 data directory is warned about; every state file is 0600 ----------------------
data=$tmp/loose
mkdir -m 0755 "$data"
start_server "$data" modes || { echo "FAIL the server did not start:"; cat "$tmp/modes.log"; exit 1; }
expect_in "a loose data directory is warned about" "$tmp/modes.log" "'$data' is mode 0755: others may look into it"
cacert=$data/pki/ca.crt
create_pod m1
expect_code "create over TLS" 201
for f in state.db state.db-wal state.db-shm state.db.seal tokens tokens.lock admin.kubeconfig pki/ca.key pki/server.key; do
  mode_is "$f" "$data/$f" 600
done
mode_is "pki" "$data/pki" 700
mode_is "an existing data directory is kept as it is" "$data" 755

# ---- TLS: 1.0 and 1.1 refused, 1.2 and 1.3 accepted --------------------------------------------
if command -v openssl >/dev/null; then
  port=${base##*:}
  for v in tls1 tls1_1 tls1_2 tls1_3; do
    # SECLEVEL=0: the client itself would take the old versions, so only the server can refuse
    rc=0
    timeout 10 openssl s_client "-$v" -cipher 'DEFAULT:@SECLEVEL=0' -CAfile "$data/pki/ca.crt" \
      -connect "127.0.0.1:$port" </dev/null >"$tmp/tls-$v" 2>&1 || rc=$?
    # a completed handshake prints "New, TLSv1.x, Cipher is X"; a refused one "New, (NONE)"
    case $v in
    tls1 | tls1_1)
      [[ $rc -ne 0 ]] && ! grep -q '^New, TLSv' "$tmp/tls-$v" ||
        { echo "FAIL a $v handshake completed:"; grep -E '^New|Protocol' "$tmp/tls-$v"; failures=$((failures + 1)); } ;;
    *)
      [[ $rc -eq 0 ]] && grep -q '^New, TLSv1\.[23],' "$tmp/tls-$v" && grep -q 'Verify return code: 0 (ok)' "$tmp/tls-$v" ||
        { echo "FAIL a $v handshake failed:"; cat "$tmp/tls-$v"; failures=$((failures + 1)); } ;;
    esac
  done
  grep -q 'Cipher is ECDHE-ECDSA-AES128-GCM-SHA256\|Cipher is ECDHE-ECDSA-AES256-GCM-SHA384\|Cipher is ECDHE-ECDSA-CHACHA20-POLY1305' "$tmp/tls-tls1_2" ||
    { echo "FAIL TLS 1.2 without an AEAD cipher:"; grep -E '^New' "$tmp/tls-tls1_2"; failures=$((failures + 1)); }
else
  skipped+=("TLS versions: openssl is not installed (scripts/install-deps)")
fi
cacert=
stop_server TERM

# ---- a zero-length state.db: refused, reported, recovered without reusing a version ------------
data=$tmp/zero
start_server "$data" zero1 --no-tls --no-scheduler || { echo "FAIL the server did not start:"; cat "$tmp/zero1.log"; exit 1; }
mode_is "a new data directory" "$data" 700
acked=0
for i in $(seq 1 30); do
  create_pod "z$i"
  [[ -z "$created" ]] || acked=$created
done
[[ "$acked" -gt 30 ]] || { echo "FAIL only versions up to '$acked' acknowledged"; failures=$((failures + 1)); }
stop_server TERM
: >"$data/state.db"
if start_server "$data" zero2 --no-tls; then
  echo "FAIL the server started on a zero-length state.db:"; cat "$tmp/zero2.log"; failures=$((failures + 1))
  stop_server KILL
fi
[[ $(stat -c %s "$data/state.db") -eq 0 ]] || { echo "FAIL the refusal changed state.db"; failures=$((failures + 1)); }
check "zero-length: store check says damaged" 3 "$xpool" store check --data-dir "$data"
expect_in "zero-length: check's verdict" "$tmp/out" "DAMAGED: the database is empty"
sealed=$(sed -n 's/^seal: .*last commit \([0-9]*\),.*/\1/p' "$tmp/out")
[[ -n "$sealed" && "$sealed" -ge "$acked" ]] ||
  { echo "FAIL zero-length: the seal's last commit '$sealed' is below the acknowledged $acked"; failures=$((failures + 1)); }
expect_in "zero-length: check's loss" "$tmp/out" "lost:       versions 1..$sealed ($sealed acknowledged writes)"
expect_in "zero-length: refused" "$tmp/zero2.log" "is damaged: the database is empty, but its seal records versions up to $sealed: versions 1..$sealed were acknowledged and are lost"
expect_in "zero-length: the recovery command" "$tmp/zero2.log" "xpool store recover --data-dir $data"
check "zero-length: recover" 0 "$xpool" store recover --data-dir "$data"
expect_in "zero-length: recover says what was lost" "$tmp/out" "lost:       versions 1..$sealed"
expect_in "zero-length: recover keeps the files" "$tmp/out" "aside:      the damaged files are in $data/state.db.damaged-"
ls "$data"/state.db.damaged-*/state.db.seal >/dev/null 2>&1 || { echo "FAIL the damaged seal was not kept aside"; failures=$((failures + 1)); }
check "zero-length: check after recover" 0 "$xpool" store check --data-dir "$data"
start_server "$data" zero3 --no-tls || { echo "FAIL no start after recover:"; cat "$tmp/zero3.log"; exit 1; }
create_pod after-zero
expect_code "zero-length: create after recover" 201
[[ -n "$created" && "$created" -gt "$acked" ]] ||
  { echo "FAIL zero-length: version '$created' after recover is not above the $acked acknowledged"; failures=$((failures + 1)); }
echo "zero-length: versions up to $acked acknowledged, the first create after recover got $created"
stop_server TERM

# ---- a damaged WAL frame after kill -9 mid-burst -----------------------------------------------
data=$tmp/wal
start_server "$data" wal1 --no-tls --no-scheduler || { echo "FAIL the server did not start:"; cat "$tmp/wal1.log"; exit 1; }
"$burst" "$base" 3000 8 "$token" >"$tmp/acked" 2>"$tmp/burst-err" &
burst_pid=$!
deadline=$((SECONDS + 60))
while [[ $(wc -l <"$tmp/acked") -lt 150 && $SECONDS -lt $deadline ]] && kill -0 "$burst_pid" 2>/dev/null; do
  sleep 0.02
done
stop_server KILL
deadline=$((SECONDS + 60))
while kill -0 "$burst_pid" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do sleep 0.05; done
kill -KILL "$burst_pid" 2>/dev/null || true
wait "$burst_pid" 2>/dev/null || true
burst_pid=
grep -x 'burst-[0-9]*' "$tmp/acked" | sort -u >"$tmp/acked-names" || true
echo "killed the server after $(wc -l <"$tmp/acked-names") acknowledged creates"
# flip a byte in the middle frame of those the WAL holds now (frames whose salts match its header)
"$py" - "$data/state.db-wal" >"$tmp/frame" <<'EOF' || { echo "FAIL cannot damage the WAL"; cat "$tmp/frame"; failures=$((failures + 1)); }
import struct, sys
path = sys.argv[1]
data = open(path, 'rb').read()
page = struct.unpack('>I', data[8:12])[0]
salts = data[16:24]
valid = [k for k in range((len(data) - 32) // (24 + page)) if data[32 + k * (24 + page) + 8:32 + k * (24 + page) + 16] == salts]
assert len(valid) > 20, "too few frames: %d" % len(valid)
k = valid[len(valid) // 2]
off = 32 + k * (24 + page) + 24 + 512
with open(path, 'r+b') as f:
    f.seek(off)
    b = f.read(1)
    f.seek(off)
    f.write(bytes([b[0] ^ 0xff]))
print("damaged frame %d of %d" % (k, len(valid)))
EOF
cat "$tmp/frame"
if start_server "$data" wal2 --no-tls; then
  echo "FAIL the server started on a damaged WAL:"; cat "$tmp/wal2.log"; failures=$((failures + 1))
  stop_server KILL
fi
expect_in "damaged WAL: refused" "$tmp/wal2.log" "were acknowledged but are not in the database"
expect_in "damaged WAL: the check command" "$tmp/wal2.log" "xpool store check --data-dir $data"
check "damaged WAL: store check says damaged" 3 "$xpool" store check --data-dir "$data"
expect_in "damaged WAL: check's verdict" "$tmp/out" "DAMAGED: versions "
lost=$(sed -n 's/^lost: *versions \([0-9]*\.\.[0-9]*\) .*/\1/p' "$tmp/out")
lost_to=${lost#*..}
check "damaged WAL: recover" 0 "$xpool" store recover --data-dir "$data"
expect_in "damaged WAL: recover keeps objects" "$tmp/out" "kept:       "
kept=$(sed -n 's/^kept: *\([0-9]*\) objects.*/\1/p' "$tmp/out")
start_server "$data" wal3 --no-tls || { echo "FAIL no start after recover:"; cat "$tmp/wal3.log"; exit 1; }
code=$(api "$base/api/v1/namespaces/default/pods")
expect_code "damaged WAL: list after recover" 200
grep -o '"name":"burst-[0-9]*"' "$tmp/body" | cut -d'"' -f4 | sort -u >"$tmp/kept-names" || true
n_kept=$(wc -l <"$tmp/kept-names")
[[ $n_kept -gt 0 ]] || { echo "FAIL damaged WAL: no pod was kept (the recover said '$kept' objects)"; failures=$((failures + 1)); }
extra=$(comm -13 "$tmp/acked-names" "$tmp/kept-names" | wc -l)
# a create in flight at the kill may be stored without its 201: at most the 8 clients' worth
[[ $extra -le 8 ]] || { echo "FAIL damaged WAL: $extra pods nobody created"; failures=$((failures + 1)); }
before=$(max_version "$tmp/body")
code=$(api "$base/api/v1/namespaces")
n_ns=$(grep -o '"kind":"Namespace"' "$tmp/body" | wc -l)
n_svc=0 # the kubernetes Service, its Endpoints and its EndpointSlice, which the server writes
for list in api/v1/namespaces/default/services api/v1/namespaces/default/endpoints \
  apis/discovery.k8s.io/v1/namespaces/default/endpointslices; do
  code=$(api "$base/$list")
  n_svc=$((n_svc + $(grep -o '"name":"kubernetes"' "$tmp/body" | wc -l)))
done
# and the built-in PriorityClasses, stored at the first start as kube-apiserver stores them
code=$(api "$base/apis/scheduling.k8s.io/v1/priorityclasses")
n_pc=$(grep -o '"kind":"PriorityClass"' "$tmp/body" | wc -l)
# and each namespace's ServiceAccount default and ConfigMap kube-root-ca.crt, which the server
# writes (the recover kept those written before the kill; the server may have made more since)
code=$(api "$base/api/v1/serviceaccounts")
n_sa=$({ grep -o '"kind":"ServiceAccount"' "$tmp/body" || true; } | wc -l)
code=$(api "$base/api/v1/configmaps")
n_cm=$({ grep -o '"kind":"ConfigMap"' "$tmp/body" || true; } | wc -l)
[[ "$kept" -ge $((n_kept + n_ns + n_svc + n_pc)) && "$kept" -le $((n_kept + n_ns + n_svc + n_pc + n_sa + n_cm)) ]] ||
  { echo "FAIL damaged WAL: recover kept $kept objects, the server lists $n_kept pods, $n_ns namespaces, $n_svc objects of the kubernetes Service, $n_pc PriorityClasses, $n_sa ServiceAccounts and $n_cm ConfigMaps"; failures=$((failures + 1)); }
create_pod after-wal
expect_code "damaged WAL: create after recover" 201
[[ -n "$created" && -n "$lost_to" && "$created" -gt "$lost_to" && "$created" -gt "$before" ]] ||
  { echo "FAIL damaged WAL: version '$created' after recover not above the acknowledged '$lost_to'"; failures=$((failures + 1)); }
echo "damaged WAL: versions $lost lost, $kept objects ($n_kept pods) kept, the first create after recover got $created"
stop_server TERM

# ---- a flipped bit inside a row's value: refused naming the object, checked, recovered ----------
# (the red team's case: quick_check passes, since it checks pages, not values)
data=$tmp/flip
start_server "$data" flip1 --no-tls --no-scheduler || { echo "FAIL the server did not start:"; cat "$tmp/flip1.log"; exit 1; }
create_cm() { # name
  code=$(api -H 'Content-Type: application/json' --data-binary \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\"},\"data\":{\"v\":\"value-of-$1-0123456789\"}}" \
    "$base/api/v1/namespaces/default/configmaps")
}
for i in $(seq 1 40); do
  create_cm "cm$i"
  expect_code "flip: create cm$i" 201
done
# a running server: a row changed under it is a 500 naming the object and a log line, never its
# changed value
change_cm7() { # from, to: cm7's value changed through SQLite beside the server
  "$py" - "$data/state.db" "$1" "$2" <<'EOF' || { echo "FAIL cannot change cm7's row"; failures=$((failures + 1)); }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
n = db.execute("UPDATE objects SET body = replace(body, ?, ?) WHERE name = 'cm7'", (sys.argv[2], sys.argv[3])).rowcount
db.commit()
assert n == 1, n
EOF
}
change_cm7 value-of-cm7- value-of-cm7+
code=$(api "$base/api/v1/namespaces/default/configmaps/cm7")
expect_code "flip: a damaged row read while running" 500
expect_in "flip: the 500 names the object" "$tmp/body" "default/cm7 (type "
expect_in "flip: the server logs it" "$tmp/flip1.log" "default/cm7 (type "
! grep -q 'value-of-cm7+' "$tmp/body" || { echo "FAIL flip: the changed value was served"; failures=$((failures + 1)); }
code=$(api "$base/api/v1/namespaces/default/configmaps/cm8")
expect_code "flip: an intact row read while running" 200
change_cm7 value-of-cm7+ value-of-cm7-
code=$(api "$base/api/v1/namespaces/default/configmaps/cm7")
expect_code "flip: the row as written reads again" 200
stop_server TERM
# one bit of state.db, inside cm32's value in its objects row (its event reads it there)
"$py" - "$data/state.db" >"$tmp/flip-out" <<'EOF' || { echo "FAIL cannot flip a bit of cm32"; cat "$tmp/flip-out"; failures=$((failures + 1)); }
import sqlite3, sys
path = sys.argv[1]
def stored():
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return db.execute("SELECT body FROM objects WHERE name = 'cm32'").fetchone()[0]
    finally:
        db.close()
before = stored()
data = open(path, 'rb').read()
at = data.find(b'value-of-cm32-')
while at >= 0:
    off = at + len('value-of-cm32-') + 3
    with open(path, 'r+b') as f:
        f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x01]))
    if stored() != before:
        print("flipped a bit at offset %d" % off)
        sys.exit(0)
    with open(path, 'r+b') as f:
        f.seek(off); f.write(b)
    at = data.find(b'value-of-cm32-', at + 1)
sys.exit("cm32's objects row not found in the file")
EOF
cat "$tmp/flip-out"
"$py" -c 'import sqlite3, sys; r = sqlite3.connect(sys.argv[1]).execute("PRAGMA quick_check").fetchone()[0]; sys.exit(r != "ok")' "$data/state.db" ||
  { echo "FAIL flip: quick_check no longer passes, so this is not the case checksums are for"; failures=$((failures + 1)); }
if start_server "$data" flip2 --no-tls; then
  echo "FAIL the server started with a flipped bit in cm32:"; cat "$tmp/flip2.log"; failures=$((failures + 1))
  stop_server KILL
fi
expect_in "flip: refused naming the object" "$tmp/flip2.log" "state.db is damaged: object default/cm32 (type "
expect_in "flip: the reason" "$tmp/flip2.log" "fails its checksum"
expect_in "flip: the recovery command" "$tmp/flip2.log" "xpool store recover --data-dir $data"
check "flip: store check says damaged" 3 "$xpool" store check --data-dir "$data"
expect_in "flip: check names the object" "$tmp/out" "checksums:  1 failed: object default/cm32 (type "
check "flip: recover" 0 "$xpool" store recover --data-dir "$data"
expect_in "flip: recover says what it left out" "$tmp/out" "default/cm32"
start_server "$data" flip3 --no-tls || { echo "FAIL no start after recover:"; cat "$tmp/flip3.log"; exit 1; }
code=$(api "$base/api/v1/namespaces/default/configmaps/cm32")
expect_code "flip: cm32 is gone after recover" 404
code=$(api "$base/api/v1/namespaces/default/configmaps/cm31")
expect_code "flip: cm31 is kept" 200
expect_in "flip: cm31's value" "$tmp/body" "value-of-cm31-0123456789"
stop_server TERM

# ---- a full disk: start read-only, serve reads, refuse writes with the reason, recover ---------
mnt=$tmp/full
mkdir -p "$mnt"
if [[ $(id -u) -eq 0 ]] && mount -t tmpfs -o size=4m,mode=0700 tmpfs "$mnt" 2>"$tmp/mount-err"; then
  data=$mnt/data
  start_server "$data" full1 --no-tls --no-scheduler || { echo "FAIL the server did not start:"; cat "$tmp/full1.log"; exit 1; }
  for i in 1 2 3 4 5; do
    create_pod "f$i"
    expect_code "full disk: create f$i while there is room" 201
  done
  dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null || true
  create_pod f6
  expect_code "full disk: a create on a full disk" 500
  expect_in "full disk: it says why" "$tmp/body" "is read-only: the disk is full"
  stop_server KILL
  # (it says so at start when an empty commit fails then; it may still fit where the killed
  # server's last commit was cut short, and the first write that does not fit says so)
  if ! start_server "$data" full2 --no-tls --no-scheduler; then
    echo "FAIL full disk: the server did not start again:"; cat "$tmp/full2.log"; failures=$((failures + 1))
  else
    code=$(api "$base/api/v1/namespaces/default/pods")
    expect_code "full disk: reads are served" 200
    [[ $(grep -o '"name":"f[0-9]"' "$tmp/body" | wc -l) -eq 5 ]] ||
      { echo "FAIL full disk: not the 5 pods:"; cat "$tmp/body"; failures=$((failures + 1)); }
    create_pod f7
    expect_code "full disk: writes are refused" 500
    expect_in "full disk: with the reason" "$tmp/body" "is read-only: the disk is full"
    rm -f "$mnt/filler"
    deadline=$((SECONDS + 60))
    create_pod f8
    while [[ "$code" != 201 && $SECONDS -lt $deadline ]]; do
      sleep 0.2
      create_pod f8
    done
    expect_code "full disk: writes are taken again once there is space" 201
    stop_server TERM
  fi
  umount "$mnt"
  mnt=
else
  skipped+=("full disk: cannot mount a tmpfs here ($(cat "$tmp/mount-err" 2>/dev/null)); needs root")
fi

if [[ $failures -eq 0 && ${#skipped[@]} -gt 0 ]]; then
  echo "every check that ran passed, but some could not run here:"
  printf 'SKIP %s\n' "${skipped[@]}"
  exit 77
fi
finish "store damage"
