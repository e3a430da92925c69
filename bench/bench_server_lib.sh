# Shared by the benchmarks that time one kind of request against a server of their own
# (bench_status.sh, bench_token.sh): sourced, not run. bench_server_start NAME BUILD COUNT starts
# `xpool server --no-tls --no-scheduler` in a temporary directory (removed at exit) and sets
# server_pid, port, token (the admin's), base (the pods' URL) and tmp; bench_server_time COUNT
# CODE WHAT WHATS (its plural) then sends the requests of $tmp/curl.conf on one kept-alive connection and prints
# the server's CPU (its /proc stat, all its threads) per request, the wall time, and the load
# average before and after.

bench_server_stop() {
  [[ -n "${server_pid:-}" ]] && { kill -KILL "$server_pid" && wait "$server_pid"; } 2>/dev/null
  rm -rf "$tmp"
}

bench_server_start() {
  local name=$1 build=$2 count=$3 xpool=$2/xpool
  [[ -x "$xpool" ]] || { echo "$name: no $xpool" >&2; exit 1; }
  [[ "$count" =~ ^[1-9][0-9]{0,5}$ ]] || { echo "$name: COUNT is 1 to 999999" >&2; exit 1; }
  tmp=$(mktemp -d)
  server_pid=
  trap bench_server_stop EXIT
  "$xpool" server --listen 127.0.0.1:0 --no-tls --no-scheduler --data-dir "$tmp/data" >"$tmp/log" 2>&1 &
  server_pid=$!
  port=
  for _ in $(seq 1 150); do # 15 s at most
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\),.*|\1|p' "$tmp/log")
    [[ -n "$port" ]] && curl -fsS -o /dev/null "http://127.0.0.1:$port/version" 2>/dev/null && break
    port=
    sleep 0.1
  done
  [[ -n "$port" ]] || { echo "$name: the server did not answer:" >&2; cat "$tmp/log" >&2; exit 1; }
  token=$(sed -n 's/^[[:space:]]*token:[[:space:]]*//p' "$tmp/data/admin.kubeconfig" | head -1)
  base=http://127.0.0.1:$port/api/v1/namespaces/default/pods
}

bench_server_time() {
  local count=$1 want=$2 what=$3 whats=$4 ticks0 ticks1 t0 t1 ok hz
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  ticks0=$(awk '{print $14 + $15}' "/proc/$server_pid/stat") t0=$(date +%s%N)
  curl -sS -K "$tmp/curl.conf" >"$tmp/codes"
  ticks1=$(awk '{print $14 + $15}' "/proc/$server_pid/stat") t1=$(date +%s%N)
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  ok=$(grep -c "^$want\$" "$tmp/codes")
  hz=$(getconf CLK_TCK)
  echo "$ok of $count $whats answered $want in $(((t1 - t0) / 1000000)) ms"
  echo "server CPU per $what: $(((ticks1 - ticks0) * 1000000 / hz / count)) us"
}
