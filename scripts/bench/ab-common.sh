# Sourced by the A/B scripts (scripts/bench-ab*.sh): syncd's CPU from /proc, the order of a
# round's builds, a fresh syncd per round, and the medians of the rounds they printed.

ticks=$(getconf CLK_TCK)

# cpu_us PID: the process's user and system CPU so far, in microseconds.
cpu_us() { awk -v hz="$ticks" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000000 / hz }' "/proc/$1/stat"; }

# round_order ROUND: "old new" in odd rounds, "new old" in even ones: the second build of a round
# runs on a warmer, busier machine, so which goes first alternates.
round_order() { if [ $(($1 % 2)) -eq 0 ]; then echo "new old"; else echo "old new"; fi; }

# start_fresh_syncd SYNCD: starts SYNCD on an empty database in $work and waits until it answers
# ($syncctl); sets $pid. The caller's trap kills it.
start_fresh_syncd() {
    rm -rf "$work/db"*
    "$1" --socket "$work/s" --database "$work/db" 2>>"$work/syncd.log" &
    pid=$!
    until "$syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.01; done
}

# print_medians ROUNDS: a Markdown table of each figure's median per build, and new / old, from
# lines "round N BUILD: name value name value ...".
print_medians() {
    python3 - "$1" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    words = line.split()
    build = words[2].rstrip(":")
    for name, value in zip(words[3::2], map(float, words[4::2])):
        rows.setdefault(name, {}).setdefault(build, []).append(value)
print()
print("| median of the rounds | old | new | new / old |")
print("| --- | --- | --- | --- |")
for name, builds in rows.items():
    old, new = statistics.median(builds["old"]), statistics.median(builds["new"])
    print(f"| {name} | {old:,.2f} | {new:,.2f} | {new / old:.3f} |")
PY
}
