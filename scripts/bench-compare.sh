#!/usr/bin/env bash
# Runs matched workloads against a private syncd and a private Redis (Unix socket, AOF everysec)
# in one run, and prints a Markdown table with both figures, their ratio and the target.
#
#   scripts/bench-compare.sh [--quick]
#
# Installs redis-server with apt when it is missing (as root), builds the release binaries, and
# leaves nothing running. --quick uses smaller counts (a smoke test, not figures to publish).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[ "${1:-}" = "--quick" ] && quick=true
if $quick; then
    puts=20000 fanout=10000 paced=1000 keys=100000 watchers=200 sends=1000000
else
    puts=200000 fanout=100000 paced=5000 keys=1000000 watchers=1000 sends=5000000
fi

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "bench-compare: installing redis-server" >&2
    # A fresh machine may have no package lists yet: fetch them when the first try fails.
    DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >/dev/null 2>&1 \
        || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >/dev/null; }
fi
for tool in gcc python3; do
    command -v "$tool" >/dev/null || { echo "bench-compare: needs $tool" >&2; exit 1; }
done

echo "bench-compare: building release binaries (the first time takes about 15 minutes)" >&2
swift build -c release --product syncd >/dev/null
swift build -c release --product syncctl >/dev/null
swift build -c release --product feature-bench >/dev/null
bin="$(swift build -c release --show-bin-path)"

dir="$(mktemp -d /tmp/bench-compare.XXXXXX)"
gcc -O2 -o "$dir/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
syncd_pid="" redis_pid="" holder_pid=""
cleanup() {
    [ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null || true
    [ -n "$syncd_pid" ] && kill "$syncd_pid" 2>/dev/null || true
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

syncd_socket="$dir/syncd.sock"
redis_socket="$dir/redis.sock"
cat >"$dir/syncd.json" <<JSON
{ "logLevel": "warning", "limits": { "maxConnections": 4096, "maxConnectionsPerUser": 4096 } }
JSON

start_syncd() { # [extra syncd flags]
    [ -n "$syncd_pid" ] && { kill "$syncd_pid"; wait "$syncd_pid" 2>/dev/null || true; }
    local started
    started=$(date +%s%N)
    "$bin/syncd" --socket "$syncd_socket" --database "$dir/state.sqlite" --config "$dir/syncd.json" "$@" 2>>"$dir/syncd.log" &
    syncd_pid=$!
    until "$bin/syncctl" --socket "$syncd_socket" status >/dev/null 2>&1; do sleep 0.005; done
    ready_ms=$((($(date +%s%N) - started) / 1000000))
}
start_redis() { # [appendfsync policy]
    [ -n "$redis_pid" ] && { kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; }
    rm -rf "$dir"/appendonly*
    redis-server --port 0 --unixsocket "$redis_socket" --dir "$dir" --save "" --appendonly yes \
        --appendfsync "${1:-everysec}" --logfile "$dir/redis.log" &
    redis_pid=$!
    until redis-cli -s "$redis_socket" ping >/dev/null 2>&1; do sleep 0.01; done
}
json() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
csv_field() { # redis-benchmark --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
    python3 -c "import csv,sys; rows=list(csv.reader(sys.stdin)); print(rows[1][$1])"
}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
# A server's CPU time so far (user + system), in µs, from /proc/PID/stat: what it spent, whatever
# the benchmark client spent. Comparing these around a workload judges syncd by its own cost.
ticks_per_second=$(getconf CLK_TCK)
cpu_us() { awk -v hz="$ticks_per_second" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000000 / hz }' "/proc/$1/stat"; }
per_op() { python3 -c "print(f'{($2 - $1) / $3:.2f}')"; } # before after operations
cpu_rows=() schema_rows=()
cpu_row() { cpu_rows+=("| $1 | $2 | $3 | $(ratio "$2" "$3") | $4 |"); echo "bench-compare: server CPU µs per op, $1: syncd $2, Redis $3" >&2; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}×')"; }
# The Swift client against the C peer doing the same work at the same syncd (issue 59): each
# client's own CPU per operation (getrusage, every thread, reported by the bench itself), and
# syncd's when fed by each.
client_rows=()
client_row() { client_rows+=("| $1 | $2 | $3 | $(ratio "$2" "$3") | $4 |"); echo "bench-compare: Swift against C, $1: $2, $3" >&2; }
rows=()
row() { rows+=("| $1 | $2 | $3 | $4 | $5 |"); echo "bench-compare: $1: syncd $2, Redis $3" >&2; }

start_syncd
start_redis

# Acknowledged writes, --durability normal (the journal synced each second) against AOF
# everysec: 4 connections × pipeline 16, 100 B values over 1,000 keys.
c0=$(cpu_us "$syncd_pid")
s=$("$bin/syncctl" --socket "$syncd_socket" --json bench put --connections 4 --pipeline 16 --count "$puts" --value-size 100 --keys 1000)
c1=$(cpu_us "$syncd_pid"); d0=$(cpu_us "$redis_pid")
r=$(redis-benchmark -s "$redis_socket" -t set -c 4 -P 16 -n "$puts" -d 100 -r 1000 --csv -q 2>/dev/null)
d1=$(cpu_us "$redis_pid")
sv=$(json ops_per_sec <<<"$s"); rv=$(printf '%s\n' "$r" | csv_field 1)
swift_puts_per_sec=$sv swift_put_client=$(per_op 0 "$(json cpu_us <<<"$s")" "$puts") swift_put_syncd=$(per_op "$c0" "$c1" "$puts")
row "acknowledged writes/s, normal (journal synced each second) vs everysec, 4 conn × pipeline 16, 100 B (syncctl bench against redis-benchmark)" "$sv" "${rv%.*}" "$(ratio "$sv" "$rv")" "(Swift client)"
cpu_row "acknowledged write, normal, 4 conn × pipeline 16, 100 B" "$swift_put_syncd" "$(per_op "$d0" "$d1" "$puts")" "≤ 2.0×"

# A write under a schema (5 properties, 100 B values) against the same write without one:
# syncd's CPU per put, 4 conn × pipeline 16, in alternating rounds (without, with, twice).
without=0 with=0
for round in 1 2; do
    for mode in records schema; do
        c0=$(cpu_us "$syncd_pid")
        "$bin/syncctl" --socket "$syncd_socket" --json bench put --connections 4 --pipeline 16 --count $((puts / 2)) --value-size 100 --keys 1000 "--$mode" >/dev/null
        c1=$(cpu_us "$syncd_pid")
        if [ "$mode" = records ]; then without=$(python3 -c "print($without + $c1 - $c0)"); else with=$(python3 -c "print($with + $c1 - $c0)"); fi
    done
done
schema_rows+=("| acknowledged write of a 5-member object, 4 conn × pipeline 16, 100 B | $(per_op 0 "$without" "$puts") | $(per_op 0 "$with" "$puts") | $(ratio "$with" "$without") | ≤ 1.2× |")
echo "bench-compare: syncd CPU µs per put without a schema $(per_op 0 "$without" "$puts"), under one $(per_op 0 "$with" "$puts")" >&2

# The same from C writers on both sides (fanout-peer writers: 4 processes, 16 in flight each), so
# that no Swift client shares the two cores with syncd: what the daemon itself can take.
c0=$(cpu_us "$syncd_pid")
s=$("$dir/fanout-peer" writers syncd "$syncd_socket" 4 "$puts" 16 100)
c1=$(cpu_us "$syncd_pid"); d0=$(cpu_us "$redis_pid")
r=$("$dir/fanout-peer" writers redis "$redis_socket" 4 "$puts" 16 100)
d1=$(cpu_us "$redis_pid")
sv=$(json writes_per_sec <<<"$s"); rv=$(json writes_per_sec <<<"$r")
c_put_client=$(per_op 0 "$(json cpu_us <<<"$s")" "$puts") c_put_syncd=$(per_op "$c0" "$c1" "$puts")
client_row "client CPU µs per pipelined put, 4 conn × 16 in flight" "$swift_put_client" "$c_put_client" "≤ 1.5×"
client_row "writes/s, 4 conn × 16 in flight" "$swift_puts_per_sec" "$sv" "≥ 0.8×"
client_row "syncd CPU µs per such write, fed by each" "$swift_put_syncd" "$c_put_syncd" "≤ 1.2×"
# The floors under the client's cost per put: the same puts without SyncClient, on NIO channels
# and with write(2), each frame made by hand as the client makes it (bench put --writer).
for writer in nio write; do
    f=$("$bin/syncctl" --socket "$syncd_socket" --json bench put --writer "$writer" --connections 4 --pipeline 16 --count "$puts" --value-size 100)
    client_row "the same put made by $writer, without SyncClient (its floor)" "$(per_op 0 "$(json cpu_us <<<"$f")" "$puts")" "$c_put_client" "(for comparison)"
done
row "acknowledged writes/s, normal vs everysec, from C writers, 4 conn × pipeline 16, 100 B" "$sv" "$rv" "$(ratio "$sv" "$rv")" "≥ 0.5×"
cpu_row "acknowledged write, normal, from C writers, 4 conn × pipeline 16, 100 B" "$c_put_syncd" "$(per_op "$d0" "$d1" "$puts")" "≤ 2.0×"

# Round trip: one connection, one write in flight.
c0=$(cpu_us "$syncd_pid")
s=$("$bin/syncctl" --socket "$syncd_socket" --json bench put --connections 1 --pipeline 1 --count $((puts / 10)) --value-size 100 --keys 1000)
c1=$(cpu_us "$syncd_pid"); d0=$(cpu_us "$redis_pid")
r=$(redis-benchmark -s "$redis_socket" -t set -c 1 -P 1 -n $((puts / 10)) -d 100 -r 1000 --csv -q 2>/dev/null)
d1=$(cpu_us "$redis_pid")
swift_lone_client=$(per_op 0 "$(json cpu_us <<<"$s")" $((puts / 10))) swift_lone_syncd=$(per_op "$c0" "$c1" $((puts / 10)))
cpu_row "lone write, 1 conn × pipeline 1" "$swift_lone_syncd" "$(per_op "$d0" "$d1" $((puts / 10)))" "≤ 1.5×"
sv=$(json p50_us <<<"$s"); rv=$(python3 -c "print(round($(printf '%s\n' "$r" | csv_field 4) * 1000))")
row "write round trip p50 µs, 1 conn × pipeline 1" "$sv" "$rv" "$(ratio "$sv" "$rv")" "≤ 1.5×"
# The same from one C writer on both sides: the same client's wake-ups on both servers.
c0=$(cpu_us "$syncd_pid")
s=$("$dir/fanout-peer" writers syncd "$syncd_socket" 1 $((puts / 10)) 1 100)
c1=$(cpu_us "$syncd_pid"); d0=$(cpu_us "$redis_pid")
c_lone_client=$(per_op 0 "$(json cpu_us <<<"$s")" $((puts / 10)))
client_row "client CPU µs per put round trip, 1 conn × 1 in flight" "$swift_lone_client" "$c_lone_client" "≤ 1.5×"
client_row "syncd CPU µs per lone write, fed by each" "$swift_lone_syncd" "$(per_op "$c0" "$c1" $((puts / 10)))" "≤ 1.2×"
# The same Swift writer from a task that does not prefer the client's executor (SharedStateClient.executor).
s=$("$bin/syncctl" --socket "$syncd_socket" --json bench put --global-executor --connections 1 --pipeline 1 --count $((puts / 10)) --value-size 100 --keys 1000)
client_row "the same round trip, Swift's task on the global executor" "$(per_op 0 "$(json cpu_us <<<"$s")" $((puts / 10)))" "$c_lone_client" "(for comparison)"
"$dir/fanout-peer" writers redis "$redis_socket" 1 $((puts / 10)) 1 100 >/dev/null
d1=$(cpu_us "$redis_pid")
cpu_row "lone write from a C writer, 1 conn × pipeline 1" "$(per_op "$c0" "$c1" $((puts / 10)))" "$(per_op "$d0" "$d1" $((puts / 10)))" "≤ 1.5×"

# Fan-out: one writer, pipeline 16, to 8 subscriber processes.
c0=$(cpu_us "$syncd_pid")
s=$("$bin/syncctl" --socket "$syncd_socket" --json bench fanout --subscribers 8 --writers 1 --pipeline 16 --count "$fanout" --value-size 100)
c1=$(cpu_us "$syncd_pid"); d0=$(cpu_us "$redis_pid")
r=$("$dir/fanout-peer" redis "$redis_socket" 8 "$fanout" 16 100)
d1=$(cpu_us "$redis_pid")
swift_event_syncd=$(per_op "$c0" "$c1" $((fanout * 8))) swift_event_client=$(per_op 0 "$(json subscriber_cpu_us <<<"$s")" $((fanout * 8)))
cpu_row "delivered event, 1 writer × 16 in flight → 8 subscriber processes" "$swift_event_syncd" "$(per_op "$d0" "$d1" $((fanout * 8)))" "≤ 2.0×"
raw=$("$dir/fanout-peer" raw "$dir" 8 "$fanout" 16 100)
sv=$(json delivered_per_sec <<<"$s"); rv=$(json delivered_per_sec <<<"$r"); raw_v=$(json delivered_per_sec <<<"$raw")
swift_delivered_per_sec=$sv
row "delivered events/s, 1 writer × pipeline 16 → 8 subscriber processes (Swift clients at syncd)" "$sv" "$rv" "$(ratio "$sv" "$rv")" "(Swift clients)"
row "the same, against raw Unix-socket fan-out of pre-encoded 100 B frames" "$sv" "raw: $raw_v" "$(ratio "$sv" "$raw_v")" "≥ 0.3×"
# The same with C clients at both ends of syncd (fanout-peer syncd), as Redis's are.
c0=$(cpu_us "$syncd_pid")
s=$("$dir/fanout-peer" syncd "$syncd_socket" 8 "$fanout" 16 100)
c1=$(cpu_us "$syncd_pid")
cpu_row "delivered event, C clients at both ends" "$(per_op "$c0" "$c1" $((fanout * 8)))" "$(per_op "$d0" "$d1" $((fanout * 8)))" "≤ 2.0×"
sv=$(json delivered_per_sec <<<"$s")
client_row "subscriber CPU µs per delivered event, 8 subscriber processes" "$swift_event_client" "$(per_op 0 "$(json subscriber_cpu_us <<<"$s")" $((fanout * 8)))" "≤ 1.5×"
client_row "delivered events/s to 8 subscriber processes" "$swift_delivered_per_sec" "$sv" "≥ 0.8×"
client_row "syncd CPU µs per delivered event, fed by each" "$swift_event_syncd" "$(per_op "$c0" "$c1" $((fanout * 8)))" "≤ 1.2×"
# The floors under the client's cost per event: the same subscribers reading without SyncClient,
# on a NIO channel as the client reads, and with read(2) as the C peer reads; both decode each
# event as the client does (bench fanout --reader).
c_event_client=$(per_op 0 "$(json subscriber_cpu_us <<<"$s")" $((fanout * 8)))
for reader in nio read; do
    f=$("$bin/syncctl" --socket "$syncd_socket" --json bench fanout --reader "$reader" --subscribers 8 --writers 1 --pipeline 16 --count "$fanout" --value-size 100)
    client_row "the same event read by $reader, without SyncClient (its floor)" "$(per_op 0 "$(json subscriber_cpu_us <<<"$f")" $((fanout * 8)))" "$c_event_client" "(for comparison)"
done
row "delivered events/s, C clients at both ends → 8 subscriber processes" "$sv" "$rv" "$(ratio "$sv" "$rv")" "≥ 0.5×"

# Paced: 1,000 writes/s, write-to-delivery p99 at 8 subscriber processes.
c0=$(cpu_us "$syncd_pid")
s=$("$bin/syncctl" --socket "$syncd_socket" --json bench fanout --subscribers 8 --writers 1 --pipeline 16 --count "$paced" --value-size 100 --rate 1000)
c1=$(cpu_us "$syncd_pid"); d0=$(cpu_us "$redis_pid")
r=$("$dir/fanout-peer" redis "$redis_socket" 8 "$paced" 1 100 1000)
d1=$(cpu_us "$redis_pid")
cpu_row "paced write at 1,000/s, delivered to 8 subscriber processes" "$(per_op "$c0" "$c1" "$paced")" "$(per_op "$d0" "$d1" "$paced")" "(none)"
sv=$(json p99_us <<<"$s"); rv=$(json p99_us <<<"$r")
row "write-to-delivery p99 µs at 1,000 writes/s, 8 subscribers" "$sv" "$rv" "$(ratio "$sv" "$rv")" "≤ 1.0×"

# A change reaching a reducer in another process, against a C Redis subscriber seeing a publish,
# both paced at 1,000 writes/s.
s=$("$bin/feature-bench" e2e --socket "$syncd_socket" --count "$paced" --rate 1000 --json)
r=$("$dir/fanout-peer" redis "$redis_socket" 1 "$paced" 1 100 1000)
sv=$(json p50_us <<<"$s"); rv=$(json p50_us <<<"$r"); rv_p50=$rv
row "write → reducer in another process p50 µs at 1,000 writes/s, vs a C subscriber of Redis" "$sv" "$rv" "$(ratio "$sv" "$rv")" "≤ 150 µs"
sv=$(json p99_us <<<"$s"); rv=$(json p99_us <<<"$r"); rv_p99=$rv
row "the same, p99 µs" "$sv" "$rv" "$(ratio "$sv" "$rv")" "≤ 1.0×"
# Where that time goes: syncd with C clients on both ends (no Swift client library), a bare Swift
# client watch (no store), and the floor under a daemon that commits each change to SQLite before
# anyone sees it (a C relay with syncd's SQLite settings and C clients; syncd itself now answers
# from its journal, so this row is a reference, not its floor), at the same pace.
c=$("$dir/fanout-peer" syncd "$syncd_socket" 1 "$paced" 1 100 1000)
w=$("$bin/syncctl" --socket "$syncd_socket" --json bench fanout --subscribers 1 --writers 1 --pipeline 1 --count "$paced" --value-size 100 --rate 1000)
f=$("$dir/fanout-peer" relay "$dir" 1 "$paced" 1 100 1000)
where_row() { # label, peer's JSON
    row "the same p50 µs, $1" "$(json p50_us <<<"$2")" "$rv_p50" "$(ratio "$(json p50_us <<<"$2")" "$rv_p50")" "(where the time goes)"
    row "the same p99 µs, $1" "$(json p99_us <<<"$2")" "$rv_p99" "$(ratio "$(json p99_us <<<"$2")" "$rv_p99")" "(where the time goes)"
}
where_row "syncd with C clients (fanout-peer syncd)" "$c"
client_row "a watch's write-to-delivery p50 µs at 1,000 writes/s, 1 subscriber" "$(json p50_us <<<"$w")" "$(json p50_us <<<"$c")" "≤ 1.2×"
where_row "a bare Swift client watch (syncctl bench fanout)" "$w"
where_row "the floor: a C relay committing each write to SQLite first (fanout-peer relay)" "$f"

# Nothing acknowledged lost on power loss: --durability full (each group synced before it is
# answered) against appendfsync always.
start_syncd --durability full
start_redis always
s=$("$bin/syncctl" --socket "$syncd_socket" --json bench put --connections 4 --pipeline 16 --count $((puts / 4)) --value-size 100 --keys 1000)
r=$(redis-benchmark -s "$redis_socket" -t set -c 4 -P 16 -n $((puts / 4)) -d 100 -r 1000 --csv -q 2>/dev/null)
sv=$(json ops_per_sec <<<"$s"); rv=$(printf '%s\n' "$r" | csv_field 1)
row "acknowledged writes/s, full (each synced before it is answered) vs appendfsync always" "$sv" "${rv%.*}" "$(ratio "$sv" "$rv")" "(no target)"
start_redis

# Many keys: load them, restart, time to a socket that answers, and resident memory.
start_syncd
"$bin/syncctl" --socket "$syncd_socket" --json bench put --connections 4 --pipeline 16 --count "$keys" --value-size 100 --keys "$keys" >/dev/null
start_syncd
syncd_ready=$ready_ms
syncd_rss=$(rss_kb "$syncd_pid")
python3 - "$keys" >"$dir/keys.resp" <<'PY'
import sys
value = b"x" * 100
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    key = b"bench/%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$100\r\n%s\r\n" % (len(key), key, value))
PY
redis-cli -s "$redis_socket" --pipe <"$dir/keys.resp" >/dev/null
redis_rss=$(($(redis-cli -s "$redis_socket" info memory | awk -F: '/^used_memory_rss:/ {print $2}' | tr -d '\r') / 1024))
row "ready after restart with $keys keys of 100 B, ms" "$syncd_ready" "–" "–" "≤ 1000 ms"
row "resident memory with $keys keys of 100 B, MB" "$((syncd_rss / 1024))" "$((redis_rss / 1024))" "$(ratio "$syncd_rss" "$redis_rss")" "≤ 1.0×"

# Idle watchers: memory each adds to syncd.
before=$(rss_kb "$syncd_pid")
"$bin/syncctl" --socket "$syncd_socket" bench watchers --connections "$watchers" >"$dir/watchers.out" &
holder_pid=$!
until grep -q ready "$dir/watchers.out" 2>/dev/null; do sleep 0.05; done
sleep 0.5
after=$(rss_kb "$syncd_pid")
row "memory per idle watching connection ($watchers of them), KB" "$(((after - before) / watchers))" "–" "–" "≤ 32 KB"
kill "$holder_pid"; holder_pid=""

# The store runtime, in-process.
s=$("$bin/feature-bench" send --count "$sends" --json)
row "Store.send of a trivial action, actions/s" "$(json actions_per_sec <<<"$s")" "–" "–" "≥ 2,000,000"
s=$("$bin/feature-bench" compose --elements 1000 --json)
row "an action for one of 1,000 elements through forEach, ns (flat reducer: $(json flat_ns <<<"$s"))" \
    "$(json for_each_ns <<<"$s")" "–" "$(json ratio <<<"$s" | cut -c1-4)× flat" "≤ 2× flat"

echo
echo "$(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(uname -sr), $(redis-server --version | awk '{print $1, $2, $3}')"
echo
echo "| workload | syncd | Redis | ratio | target |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
echo
echo "| server CPU µs per operation (utime + stime from /proc) | syncd | redis-server | ratio | target |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${cpu_rows[@]}"
echo
echo "| Swift client against the C peer, at the same syncd | Swift (SyncClient, syncctl bench: tasks prefer client.executor) | C (fanout-peer) | ratio | target |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${client_rows[@]}"
echo
echo "| syncd CPU µs per put (utime + stime from /proc) | without a schema | under a schema | ratio | target |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${schema_rows[@]}"

# Scale with the number of watches, and snapshots among many keys (a syncd of its own).
kill "$syncd_pid"; wait "$syncd_pid" 2>/dev/null || true; syncd_pid=""
echo
if $quick; then scripts/bench-watches.sh --quick --bin "$bin"; else scripts/bench-watches.sh --bin "$bin"; fi
