# Sourced by the embedded bench scripts (subscores_bench.sh,
# partitions_bench.sh): one server on SQLite in a temporary directory,
# started and stopped around what a script loads into its database, and
# its resident memory. Needs $binary, $token and $port set first.
dir="$(mktemp -d)"
db="$dir/hiscore.db"
pid=
start() {
  ADMIN_TOKEN=$token RUST_LOG=warn BIND=127.0.0.1:$port DATABASE_URL="sqlite://$db" STATIC_DIR=/nonexistent \
    "$binary" serve >> "$dir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 900); do curl -fsS 127.0.0.1:$port/readyz >/dev/null 2>&1 && break; sleep 0.2; done
  sleep 2 # the warm-up of custom boards settles
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }
admin() { curl -fsS -X "$1" "127.0.0.1:$port$2" -H "authorization: Bearer $token" -H 'content-type: application/json' -d "$3"; echo; }
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
