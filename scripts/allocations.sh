#!/usr/bin/env bash
# The allocation benchmarks (Benchmarks/allocations): mallocs per operation on the hot path, run
# by ordo-one's package-benchmark in a release build of their own (.build-allocations), which the
# everyday build never pays for (Package.swift adds them when SHAREDSTATE_ALLOCATION_BENCHMARKS is set).
#
#   scripts/allocations.sh          run them: mallocs and times per operation
#   scripts/allocations.sh check    run them; exit 1 when one's mallocs per operation (p90) exceed its
#                                   committed threshold (Benchmarks/Thresholds). Times are printed, never judged.
#   scripts/allocations.sh update   run them and write the thresholds anew, mallocs only: commit the
#                                   change with the reason an operation allocates more (or less) now
set -euo pipefail
cd "$(dirname "$0")/.."
export SHAREDSTATE_ALLOCATION_BENCHMARKS=1
scratch=.build-allocations
thresholds="$PWD/Benchmarks/Thresholds"
benchmark=(swift package --scratch-path "$scratch")

case "${1:-run}" in
  run)
    "${benchmark[@]}" benchmark --target allocations --no-progress
    ;;
  check)
    "${benchmark[@]}" benchmark --target allocations --no-progress
    set +e
    "${benchmark[@]}" benchmark thresholds check --target allocations --path "$thresholds" --no-progress
    status=$?
    set -e
    # package-benchmark: 0 equal, 2 a regression, 4 only improvements.
    case $status in
      0) echo "allocations: every benchmark within its threshold" ;;
      4) echo "allocations: some benchmark allocates less than its threshold; scripts/allocations.sh update records it" ;;
      *) echo "allocations: a benchmark allocates more than its threshold (above); if that is meant, scripts/allocations.sh update and commit why" >&2
         exit 1 ;;
    esac
    ;;
  update)
    "${benchmark[@]}" --allow-writing-to-package-directory benchmark thresholds update --target allocations \
      --path "$thresholds" --no-progress
    # Keep mallocs only: a threshold on time would judge the machine, not the code.
    python3 - "$thresholds" <<'PYTHON'
import json, pathlib, sys
for path in pathlib.Path(sys.argv[1]).glob("*.json"):
    kept = {metric: value for metric, value in json.loads(path.read_text()).items() if metric == "mallocCountTotal"}
    path.write_text(json.dumps(kept, indent=2, sort_keys=True) + "\n")
    print(f"{path}: {kept}")
PYTHON
    ;;
  *)
    echo "usage: scripts/allocations.sh [run|check|update]" >&2
    exit 1
    ;;
esac
