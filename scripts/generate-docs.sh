#!/usr/bin/env bash
# Writes the man pages of syncctl and syncd and syncctl's shell completions, generated from its argument parser, into a folder.
#
#   scripts/generate-docs.sh [SYNCCTL] [OUT]     (defaults: .build/release/syncctl, .build/docs)
set -euo pipefail
cd "$(dirname "$0")/.."
syncctl=${1:-.build/release/syncctl}
out=${2:-.build/docs}
mkdir -p "$out"
"$syncctl" --generate-completion-script bash > "$out/syncctl.bash"
"$syncctl" --generate-completion-script zsh > "$out/_syncctl"
"$syncctl" --generate-completion-script fish > "$out/syncctl.fish"
# The man pages come from swift-argument-parser's generate-manual plugin, which builds every
# executable in release mode and writes one page per tool.
swift package plugin generate-manual >/dev/null
for tool in syncctl syncd; do
  page=.build/plugins/GenerateManual/outputs/$tool/$tool.1
  [ -f "$page" ] || { echo "generate-docs.sh: $page was not generated" >&2; exit 1; }
  cp "$page" "$out/$tool.1"
done
echo "wrote $out/syncctl.1, $out/syncd.1 and completions for bash, zsh and fish"
