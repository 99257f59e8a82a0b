# Sourced by the benchmarks that race syncd against Redis with the C peers (bench-floor.sh,
# bench-path.sh): builds `fanout-peer` into $work, starts a private Redis (AOF, fsync every second)
# and the release syncd (from $bin) on sockets in $work, removes $work and stops both when the
# script exits, and returns once both answer. Sets redis_pid and syncd_pid.
gcc -O2 -o "$work/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
redis-server --port 0 --unixsocket "$work/redis.sock" --dir "$work" --save "" --appendonly yes \
    --appendfsync everysec --logfile "$work/redis.log" &
redis_pid=$!
"$bin/syncd" --socket "$work/syncd.sock" --database "$work/state.sqlite" 2>"$work/syncd.log" &
syncd_pid=$!
trap 'kill $redis_pid $syncd_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
until redis-cli -s "$work/redis.sock" ping >/dev/null 2>&1; do sleep 0.05; done
until "$bin/syncctl" --socket "$work/syncd.sock" status >/dev/null 2>&1; do sleep 0.05; done
