#!/usr/bin/env bash
# Builds the DocC documentation of the libraries a Swift program imports — SharedState (with its
# articles: getting started, coming from TCA), FeatureStore and SyncClient — for static hosting,
# into .build/documentation/TARGET, with every warning an error (a broken symbol link, an undocumented
# parameter of a documented function). Then checks that every Swift snippet of the articles is
# one the tests compile (scripts/check-doc-snippets.py).
#
#   scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
output=.build/documentation
mkdir -p "$output"
for target in SharedState FeatureStore SyncClient; do
  swift package --allow-writing-to-directory "$output" generate-documentation --target "$target" \
    --warnings-as-errors --transform-for-static-hosting --hosting-base-path "$target" \
    --output-path "$output/$target"
done
python3 scripts/check-doc-snippets.py
echo "documentation in $output/{SharedState,FeatureStore,SyncClient}"
