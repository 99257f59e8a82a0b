#!/usr/bin/env bash
# syncd on etcd, measured against etcd itself on this machine: a private 3-member etcd cluster on
# loopback (data on tmpfs), two syncd "hosts" on it, and
#   - puts/s and latency straight to etcd (etcd-bench) and through syncd, same concurrency;
#   - write -> delivery latency from a writer on host A to a subscriber on host B, paced;
#   - etcd's watchers with 0 and with 1,000 local watchers on host A.
#
#   scripts/bench-etcd.sh [--quick]
#
# Needs etcd 3.4 (apt-get install -y etcd-server etcd-client); builds the release binaries;
# leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[ "${1:-}" = "--quick" ] && quick=true
if $quick; then puts=2000 paced=400 watchers=100; else puts=10000 paced=2000 watchers=1000; fi
clients=${CLIENTS:-16}

command -v etcd >/dev/null || { echo "bench-etcd: needs etcd (apt-get install -y etcd-server etcd-client)" >&2; exit 1; }
echo "bench-etcd: building release binaries" >&2
swift build -c release --product syncd >&2
swift build -c release --product syncctl >&2
swift build -c release --product etcd-bench >&2
bin=$(swift build -c release --show-bin-path)

work=$(mktemp -d /tmp/bench-etcd.XXXXXX)
data=$(mktemp -d /dev/shm/bench-etcd.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work" "$data"
}
trap cleanup EXIT

base=$((20000 + RANDOM % 20000))
cluster="" endpoints=""
for i in 0 1 2; do
    cluster+="${cluster:+,}m$i=http://127.0.0.1:$((base + 10 * i + 1))"
    endpoints+="${endpoints:+,}http://127.0.0.1:$((base + 10 * i))"
done
for i in 0 1 2; do
    etcd --name "m$i" --data-dir "$data/m$i" \
        --listen-client-urls "http://127.0.0.1:$((base + 10 * i))" --advertise-client-urls "http://127.0.0.1:$((base + 10 * i))" \
        --listen-peer-urls "http://127.0.0.1:$((base + 10 * i + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((base + 10 * i + 1))" \
        --initial-cluster "$cluster" --initial-cluster-token bench --log-level warn --logger zap 2>"$work/etcd-$i.log" &
    pids+=($!)
done
until ETCDCTL_API=3 etcdctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1; do sleep 0.2; done

# Room for the watching connections below (256 per user by default).
echo '{ "logLevel": "warning", "limits": { "maxConnections": 4096, "maxConnectionsPerUser": 4096 } }' >"$work/syncd.json"
etcd_pids=("${pids[@]}")
syncd_pids=()
for host in a b; do
    "$bin/syncd" --socket "$work/$host.sock" --database "$work/$host/lock" --config "$work/syncd.json" \
        --backend etcd --etcd-endpoints "$endpoints" 2>"$work/$host.log" &
    pids+=($!)
    syncd_pids+=($!)
done
until "$bin/syncctl" --socket "$work/a.sock" status >/dev/null 2>&1 && "$bin/syncctl" --socket "$work/b.sock" status >/dev/null 2>&1; do sleep 0.1; done

# CPU time (utime + stime, in clock ticks) of the processes given, and of the benchmark's client
# (this shell's children that end meanwhile), so a run can say where each put's CPU went.
ticks() {
    local total=0 pid
    for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
    echo "$total"
}
children_ticks() { awk '{print $16 + $17}' /proc/$$/stat; }
per_put() { awk -v t="$1" -v hz="$(getconf CLK_TCK)" -v n="$2" 'BEGIN { printf "%.0f", t * 1e6 / hz / n }'; }
# `sample` notes the CPU each party has used; `cpu_report N` prints what each used since, per put of N.
sample() { before=($(ticks "${etcd_pids[@]}") $(ticks "${syncd_pids[0]}") $(ticks "${syncd_pids[1]}") $(children_ticks)); }
cpu_report() {
    echo "   CPU µs per put: etcd (3 members) $(per_put $(($(ticks "${etcd_pids[@]}") - before[0])) "$1")," \
        "syncd A $(per_put $(($(ticks "${syncd_pids[0]}") - before[1])) "$1")," \
        "syncd B $(per_put $(($(ticks "${syncd_pids[1]}") - before[2])) "$1")," \
        "the benchmark's client $(per_put $(($(children_ticks) - before[3])) "$1")"
}

echo "## etcd: $puts puts of 20 B, $clients clients (one connection), straight to etcd (outside syncd's prefix)"
sample
"$bin/etcd-bench" --endpoints "$endpoints" --clients "$clients" --count "$puts" --value-size 20
cpu_report "$puts"
echo "## the same through syncd (host A), $clients connections x pipeline 1"
sample
"$bin/syncctl" --socket "$work/a.sock" bench put --connections "$clients" --pipeline 1 --count "$puts" --value-size 20
cpu_report "$puts"
echo "## one put at a time: straight to etcd, then through syncd"
"$bin/etcd-bench" --endpoints "$endpoints" --clients 1 --count $((puts / 10)) --value-size 20
"$bin/syncctl" --socket "$work/a.sock" bench put --connections 1 --pipeline 1 --count $((puts / 10)) --value-size 20
echo "## a write on host A to a subscriber on host B, 200 writes/s"
"$bin/syncctl" --socket "$work/a.sock" bench fanout --subscriber-socket "$work/b.sock" --subscribers 1 --writers 1 --pipeline 1 \
    --rate 200 --count "$paced"

watchers_in_etcd() {
    local total=0
    for i in 0 1 2; do
        local n
        n=$(curl -s "http://127.0.0.1:$((base + 10 * i))/metrics" | awk '/^etcd_debugging_mvcc_watcher_total /{print $2}')
        total=$((total + ${n%.*}))
    done
    echo "$total"
}
echo "## etcd's watchers (all members) with 2 syncd and no local watcher: $(watchers_in_etcd)"
"$bin/syncctl" --socket "$work/a.sock" bench watchers --connections "$watchers" >/dev/null 2>&1 &
holder=$!
pids+=($holder)
for _ in $(seq 300); do
    "$bin/syncctl" --socket "$work/a.sock" --json status | grep -q "\"watches\":$watchers," && break
    kill -0 "$holder" 2>/dev/null || { echo "bench-etcd: bench watchers exited" >&2; exit 1; }
    sleep 0.2
done
echo "## etcd's watchers with $watchers local watchers on host A: $(watchers_in_etcd)"
kill "$holder"
