# Sourced by the A/B scripts (scripts/bench-ab.sh, scripts/bench-ab-writers.sh): syncd's CPU from
# /proc, and the medians of the rounds they printed.

ticks=$(getconf CLK_TCK)

# cpu_us PID: the process's user and system CPU so far, in microseconds.
cpu_us() { awk -v hz="$ticks" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000000 / hz }' "/proc/$1/stat"; }

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
