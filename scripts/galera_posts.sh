#!/usr/bin/env bash
# Group-commit throughput on a three-node MariaDB Galera cluster (behind
# HAProxy, one writer) against this machine's single MariaDB, in one run:
# scripts/post_rate.sh (64 players posting from 64 connections for 10 s)
# on each, alternating, ROUNDS times (default 2). Starts the Galera nodes
# (Debian's galera-4, rsync state transfers) and HAProxy on ports 23307-23309,
# 24568-24570, 25568-25570, 26444-26446 and 23400; needs a release build, wrk,
# galera-4, haproxy, rsync. The nodes and HAProxy are stopped at the end.
set -eu
cd "$(dirname "$0")/.."
base=$(mktemp -d); chmod 777 "$base"
cleanup() { kill $(jobs -p) 2>/dev/null || true; sleep 1; rm -rf "$base"; }
trap cleanup EXIT
cluster="gcomm://127.0.0.1:24568,127.0.0.1:24569,127.0.0.1:24570"
for i in 1 2 3; do
  mariadb-install-db --no-defaults --datadir="$base/n$i/data" --auth-root-authentication-method=normal \
    --skip-test-db --user=root > /dev/null 2>&1
  # The rsync state transfer runs as `nobody`.
  chmod -R a+rwX "$base/n$i"
done
node() { # index, extra args…
  local i=$1; shift; local d=$base/n$i
  mariadbd --no-defaults --user=root --datadir="$d/data" --port=$((23306 + i)) --bind-address=127.0.0.1 \
    --socket="$d/sock" --pid-file="$d/pid" --skip-log-bin --innodb-buffer-pool-size=256M --binlog-format=ROW \
    --innodb-autoinc-lock-mode=2 --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so \
    --wsrep-cluster-name=hiscore-bench --wsrep-cluster-address="$cluster" --wsrep-node-name="n$i" \
    --wsrep-node-address="127.0.0.1:$((24567 + i))" \
    --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$((24567 + i));ist.recv_addr=127.0.0.1:$((25567 + i))" \
    --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$((26443 + i))" "$@" > "$d/log" 2>&1 &
}
status() { mariadb --no-defaults -S "$base/n1/sock" -uroot -N -e "SHOW STATUS LIKE '$1'" 2>/dev/null | awk '{print $2}'; }
node 1 --wsrep-new-cluster
until [ "$(status wsrep_ready)" = ON ]; do sleep 0.5; done
node 2; node 3
until [ "$(status wsrep_cluster_size)" = 3 ]; do sleep 0.5; done
cat > "$base/haproxy.cfg" <<CFG
global
    maxconn 2048
defaults
    mode tcp
    timeout connect 2s
    timeout client 1h
    timeout server 1h
listen galera
    bind 127.0.0.1:23400
    option tcp-check
    server n1 127.0.0.1:23307 check inter 500
    server n2 127.0.0.1:23308 check inter 500 backup
    server n3 127.0.0.1:23309 check inter 500 backup
CFG
haproxy -db -q -f "$base/haproxy.cfg" &
sleep 1
for _ in $(seq 1 "${ROUNDS:-2}"); do
  printf 'single MariaDB: '; scripts/post_rate.sh mysql://root@127.0.0.1:3306/hiscore_gc ./target/release/hiscore | sed 's/^[^:]*: //'
  printf 'Galera (3 nodes, HAProxy): '; scripts/post_rate.sh mysql://root@127.0.0.1:23400/hiscore_gc ./target/release/hiscore | sed 's/^[^:]*: //'
done
