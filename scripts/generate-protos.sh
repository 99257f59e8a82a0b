#!/usr/bin/env bash
# Regenerates Sources/Wire/Generated/ from Protos/. Run it after changing a .proto file and
# commit the result together with the change.
#
# Needs protoc (apt-get install -y protobuf-compiler) and protoc-gen-swift built from the same
# swift-protobuf version as Package.swift names. Without PROTOC_GEN_SWIFT set, the plugin is built
# once into .build-protoc/ (about 3 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

swift_protobuf_version=1.39.0
plugin=${PROTOC_GEN_SWIFT:-}
if [ -z "$plugin" ]; then
  checkout=.build-protoc/swift-protobuf
  if [ ! -x "$checkout/.build/release/protoc-gen-swift" ]; then
    rm -rf "$checkout"
    git clone --quiet --branch "$swift_protobuf_version" https://github.com/apple/swift-protobuf "$checkout"
    swift build --package-path "$checkout" -c release --product protoc-gen-swift
  fi
  plugin=$checkout/.build/release/protoc-gen-swift
fi

command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler" >&2; exit 1; }

out=Sources/Wire/Generated
mkdir -p "$out"
protoc \
  --plugin=protoc-gen-swift="$plugin" \
  --proto_path=Protos \
  --swift_out="$out" \
  --swift_opt=Visibility=Public \
  --swift_opt=FileNaming=DropPath \
  Protos/sharedstate/v1/sharedstate.proto
echo "generated $(ls "$out")"
# The tables that follow from the proto: the session's dispatch (and syncctl's commands).
python3 scripts/generate-request-tables.py
python3 scripts/generate-python-requests.py
