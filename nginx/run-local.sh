#!/usr/bin/env bash
# Runs nginx from this directory's config in front of locally running
# `hiscore serve` instances, with every path under a temporary prefix (no
# root-owned files). Environment:
#   LISTEN     address to listen on          (default 127.0.0.1:8000)
#   UPSTREAMS  app servers, comma-separated  (default 127.0.0.1:8080)
#   STATIC_DIR the ranking page              (default ../static)
#   PREFIX     nginx's working directory     (default a new temp dir)
#   TRUSTED_PROXIES  proxies in front of this nginx (a TLS terminator, a
#              load balancer), comma-separated addresses or CIDRs: their
#              X-Forwarded-For names the client (default none)
#   ADMIN_FROM addresses or CIDRs besides this host that may reach
#              /api/admin/, comma-separated (default none: this host only)
# It ends by exec-ing nginx in the foreground, so SIGTERM to this process
# stops nginx and everything it started.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

export LISTEN="${LISTEN:-127.0.0.1:8000}"
UPSTREAMS="${UPSTREAMS:-127.0.0.1:8080}"
export STATIC_ROOT="$(cd "${STATIC_DIR:-$here/../static}" && pwd)"
PREFIX="${PREFIX:-$(mktemp -d -t hiscore-nginx.XXXXXX)}"
export ACCESS_LOG="$PREFIX/logs/access.log"
export TEMP_DIR="$PREFIX/temp"

UPSTREAM_SERVERS=""
IFS=',' read -ra servers <<< "$UPSTREAMS"
for server in "${servers[@]}"; do
  UPSTREAM_SERVERS+="server ${server} max_fails=3 fail_timeout=5s; "
done
export UPSTREAM_SERVERS

# One nginx directive for each item of a comma-separated list:
# directives "allow" "10.0.0.0/8,10.1.2.3" -> "allow 10.0.0.0/8; allow 10.1.2.3; "
directives() {
  local name="$1" list="$2" out="" item
  [ -n "$list" ] || return 0
  IFS=',' read -ra items <<< "$list"
  for item in "${items[@]}"; do
    out+="${name} ${item}; "
  done
  printf '%s' "$out"
}

# Behind a trusted proxy every client would share its address (and the
# app's per-address limits would become global): take the client's from
# the proxy's X-Forwarded-For instead, past trusted hops only.
REAL_IP="$(directives set_real_ip_from "${TRUSTED_PROXIES:-}")"
[ -z "$REAL_IP" ] || REAL_IP+="real_ip_header X-Forwarded-For; real_ip_recursive on;"
export REAL_IP
# Who besides this host may reach /api/admin/.
ADMIN_ALLOW="$(directives allow "${ADMIN_FROM:-}")"
export ADMIN_ALLOW

mkdir -p "$PREFIX/conf/conf.d" "$PREFIX/logs" "$TEMP_DIR"
cp "$here/nginx.conf" "$PREFIX/conf/nginx.conf"
cp "${MIME_TYPES:-/etc/nginx/mime.types}" "$PREFIX/conf/mime.types"
# Only our variables: nginx's own ($host, $request_id, …) stay as they are.
envsubst '${LISTEN} ${UPSTREAM_SERVERS} ${STATIC_ROOT} ${ACCESS_LOG} ${TEMP_DIR} ${REAL_IP} ${ADMIN_ALLOW}' \
  < "$here/templates/hiscore.conf.template" > "$PREFIX/conf/conf.d/hiscore.conf"

nginx=(nginx -p "$PREFIX" -c "$PREFIX/conf/nginx.conf" -e "$PREFIX/logs/error.log"
       -g "pid $PREFIX/nginx.pid; daemon off;")
"${nginx[@]}" -t -q
echo "hiscore behind nginx: http://${LISTEN}/ (upstreams ${UPSTREAMS}; logs in $PREFIX/logs)"
exec "${nginx[@]}"
