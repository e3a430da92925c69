#!/usr/bin/env bash
# A server started on a data directory whose store is at schema 3 (its objects table WITHOUT ROWID,
# as xpool wrote it before schema 4: docs/store.md, "What is stored where") upgrades it at start
# and serves every object as it was: the same names, resourceVersions and data, in the same
# order. `xpool store check` says, before, that the next open upgrades it, and nothing after.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (scripts/install-deps)"; exit 77; }
py=/usr/bin/python3
[[ -x $py ]] || { echo "SKIP: python3 is not installed"; exit 77; }
data=$tmp/data
server_pid=
base=

trap 'stop_server TERM; release_tmp; rm -rf "$tmp"' EXIT

api() { # method, path, [body]: the answer in $tmp/body, the status printed (a PATCH is a merge patch)
  local token type=application/json
  token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$data/admin.kubeconfig" | head -1)
  [[ $1 == PATCH ]] && type=application/merge-patch+json
  curl -sS --max-time 30 --cacert "$data/pki/ca.crt" -H "Authorization: Bearer $token" \
    -H "Content-Type: $type" -X "$1" ${3:+--data "$3"} -o "$tmp/body" \
    -w '%{http_code}' "$base$2"
}

items() { # the ConfigMaps of every namespace as the list gives them: namespace, name, version, data
  [[ $(api GET /api/v1/configmaps) == 200 ]] || { echo "FAIL the list:"; cat "$tmp/body"; exit 1; }
  "$py" -c '
import json, sys
for o in json.load(open(sys.argv[1]))["items"]:
    m = o["metadata"]
    if m["name"].startswith("cm"):
        print(m["namespace"], m["name"], m["resourceVersion"], json.dumps(o.get("data"), sort_keys=True))
' "$tmp/body"
}

start_server "$data" --no-scheduler
[[ $(api POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}') == 201 ]] ||
  { echo "FAIL creating the namespace:"; cat "$tmp/body"; exit 1; }
filler=$(printf 'x%.0s' {1..1500})
for i in $(seq 1 24); do
  ns=default
  [[ $((i % 3)) -eq 0 ]] && ns=team
  code=$(api POST "/api/v1/namespaces/$ns/configmaps" \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm$i\"},\"data\":{\"i\":\"$i\",\"filler\":\"$filler\"}}")
  [[ $code == 201 ]] || { echo "FAIL creating cm$i: $code"; cat "$tmp/body"; exit 1; }
done
# an update: its event's body moves out of the objects row
code=$(api PATCH /api/v1/namespaces/default/configmaps/cm1 '{"data":{"i":"one"}}')
[[ $code == 200 ]] || { echo "FAIL the update of cm1: $code"; cat "$tmp/body"; exit 1; }
items >"$tmp/before"
expect_count "24 ConfigMaps before" "$tmp/before" 24 " cm"
expect_in "cm1 as updated" "$tmp/before" '"i": "one"'
stop_server TERM

# the store as schema 3 kept it: the same rows, the objects table WITHOUT ROWID
"$py" - "$data/state.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.executescript("""
BEGIN;
CREATE TABLE objects_v3 (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  version INTEGER NOT NULL, body TEXT NOT NULL, checksum INTEGER,
  PRIMARY KEY (kind, namespace, name)) WITHOUT ROWID;
INSERT INTO objects_v3 SELECT kind, namespace, name, version, body, checksum FROM objects;
DROP TABLE objects;
ALTER TABLE objects_v3 RENAME TO objects;
PRAGMA user_version = 3;
COMMIT;
""")
db.close()
EOF
check "store check of the schema 3 store" 0 "$xpool" store check --data-dir "$data"
expect_in "it says the next open upgrades it" "$tmp/out" "it is at schema 3, which the next open upgrades to 4"

start_server "$data" --no-scheduler
expect_in "the server says why its start waits" "$tmp/server.log" "upgrading to schema 4, a copy of the objects table (once)"
items >"$tmp/after"
expect_exact "every ConfigMap as it was, in the same order" "$tmp/after" "$(cat "$tmp/before")"
code=$(api POST /api/v1/namespaces/default/configmaps '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}')
[[ $code == 201 ]] || { echo "FAIL a create after the upgrade: $code"; cat "$tmp/body"; failures=$((failures + 1)); }
code=$(api POST /api/v1/namespaces/default/configmaps '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"}}')
[[ $code == 409 ]] || { echo "FAIL a create of an upgraded object's name: $code, not 409"; failures=$((failures + 1)); }
stop_server TERM

"$py" -c '
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print("schema", db.execute("PRAGMA user_version").fetchone()[0],
      "without_rowid", db.execute("SELECT wr FROM pragma_table_list WHERE name = ?", ("objects",)).fetchone()[0])
' "$data/state.db" >"$tmp/schema"
expect_exact "the store is at schema 4, a rowid table" "$tmp/schema" "schema 4 without_rowid 0"
check "store check after" 0 "$xpool" store check --data-dir "$data"
expect_in "intact" "$tmp/out" "intact: the database is intact and agrees with its seal"
if grep -q "schema" "$tmp/out"; then echo "FAIL store check still speaks of an upgrade:"; cat "$tmp/out"; failures=$((failures + 1)); fi

finish "store upgrade"
