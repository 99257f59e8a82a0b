#!/usr/bin/env bash
# Which of syncd's source files an ordinary put runs through, counted by the compiler's coverage
# counters instead of by hand (ARCHITECTURE.md, "A put, counted").
#
#   scripts/count-put-path.sh [PUTS]
#
# syncd, built with coverage counters, runs twice on a database of its own, each time with one
# watcher of `bench/` on its own connection and one writer that puts PUTS (default 1,000), then
# 2 × PUTS, values of 300 bytes, one at a time (each its own commit, answered before the next is
# sent). A file counts when some line in it ran at least 0.9 × PUTS more times in the second run
# than in the first: at least once per put. Start-up, shutdown, timers and per-connection work
# run as often in both runs and cancel out.
#
# Builds syncd with coverage into .build-coverage (a debug build of its own: about 5 minutes the
# first time) and the release syncctl that drives it. SYNCD=path uses a syncd built elsewhere
# with `-profile-generate -profile-coverage-mapping` (to count an older commit the same way).
# LINES=1 lists, for each file, the numbers of the lines run per put.
set -euo pipefail
cd "$(dirname "$0")/.."
puts=${1:-1000}
toolchain="$(dirname "$(readlink -f "$(command -v swift)")")"
if [[ -z "${SYNCD:-}" ]]; then
    swift build --product syncd --scratch-path .build-coverage \
        -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping >/dev/null
    SYNCD="$(swift build --scratch-path .build-coverage --show-bin-path)/syncd"
fi
swift build -c release --product syncctl >/dev/null
syncctl="$(swift build -c release --show-bin-path)/syncctl"

work=$(mktemp -d /tmp/count-put-path.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# One run: syncd, a watcher, COUNT puts, a clean shutdown (the counters are written at exit).
run() {
    local count=$1 name=$2
    rm -f "$work/state.sqlite"*
    LLVM_PROFILE_FILE="$work/$name.profraw" "$SYNCD" --socket "$work/syncd.sock" \
        --database "$work/state.sqlite" 2>"$work/$name.log" &
    local syncd_pid=$!
    until "$syncctl" --socket "$work/syncd.sock" status >/dev/null 2>&1; do sleep 0.05; done
    "$syncctl" --socket "$work/syncd.sock" watch bench/ >/dev/null &
    local watch_pid=$!
    sleep 0.5
    "$syncctl" --socket "$work/syncd.sock" bench put --connections 1 --pipeline 1 \
        --count "$count" --value-size 300 --keys 100 >/dev/null
    sleep 0.5
    kill "$watch_pid"
    wait "$watch_pid" 2>/dev/null || true
    kill -TERM "$syncd_pid"
    wait "$syncd_pid"
    "$toolchain/llvm-profdata" merge -o "$work/$name.profdata" "$work/$name.profraw"
    "$toolchain/llvm-cov" export -format=lcov -instr-profile="$work/$name.profdata" "$SYNCD" \
        >"$work/$name.lcov"
}
run "$puts" once
run $((puts * 2)) twice

python3 - "$work/once.lcov" "$work/twice.lcov" "$puts" <<'EOF'
import collections, os, sys

def lines_run(path):
    counts, source = {}, None
    for line in open(path):
        if line.startswith("SF:"):
            source = line[3:].strip()
        elif line.startswith("DA:") and source:
            number, count = line[3:].split(",")[:2]
            counts[(source, int(number))] = int(count)
    return counts

once, twice, puts = lines_run(sys.argv[1]), lines_run(sys.argv[2]), int(sys.argv[3])
verbose = os.environ.get("LINES") == "1"
per_put = collections.defaultdict(list)
for (source, number), count in twice.items():
    if "/Sources/" in source and "/.build" not in source:
        if count - once.get((source, number), 0) >= 0.9 * puts:
            per_put[source].append(number)

by_module = collections.defaultdict(list)
for source, numbers in per_put.items():
    relative = source.split("/Sources/", 1)[1]
    module = os.path.dirname(relative)
    lines = sum(1 for _ in open(source))
    by_module[module].append((os.path.basename(relative), lines, sorted(numbers)))
total_files = total_lines = total_run = 0
for module in sorted(by_module):
    files = sorted(by_module[module])
    total_files += len(files)
    total_lines += sum(lines for _, lines, _ in files)
    total_run += sum(len(numbers) for _, _, numbers in files)
    print(f"{module}: {len(files)} files")
    for name, lines, numbers in files:
        shown = " ".join(map(str, numbers)) if verbose else ""
        print(f"    {name}: {lines} lines, {len(numbers)} run per put {shown}".rstrip())
print(f"A put runs through {total_files} files ({total_lines} lines) of syncd's own Swift code,")
print(f"and {total_run} lines in them at least once per put.")
EOF
