#!/usr/bin/env bash
# Checks formatting with the toolchain's swift-format and the checked-in .swift-format; generated
# protobuf code is left as protoc wrote it. `scripts/lint.sh --fix` rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find Sources Tests Examples Benchmarks -name '*.swift' -not -path '*/Generated/*' -not -path '*/.build*' 2>/dev/null | sort)
if [ "${1:-}" = "--fix" ]; then
  swift format format --in-place "${files[@]}"
else
  swift format lint --strict "${files[@]}"
fi
