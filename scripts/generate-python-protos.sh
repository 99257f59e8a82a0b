#!/usr/bin/env bash
# Regenerates the Python client's protobuf code (clients/python/src/sharedstate/_generated/) from
# Protos/. Run it after changing a .proto file and commit the result together with the change.
#
# Needs protoc 3.21.x (apt-get install -y protobuf-compiler on Debian 12 gives 3.21.12). That
# protoc's code runs on every protobuf runtime from 4.21 on, the range clients/python/pyproject.toml
# allows; a newer protoc writes code that refuses older runtimes, so the script insists on 3.21.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler" >&2; exit 1; }
version=$(protoc --version | awk '{print $2}')
case "$version" in
  3.21.*) ;;
  *) echo "protoc $version found; this script needs protoc 3.21.x (see the comment at its top)" >&2; exit 1 ;;
esac

out=clients/python/src/sharedstate/_generated
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
protoc --proto_path=Protos --python_out="$work" --pyi_out="$work" sharedstate/v1/sharedstate.proto
# The schema imports nothing, so the module can live anywhere in the package: flatten its path.
mkdir -p "$out"
cp "$work/sharedstate/v1/sharedstate_pb2.py" "$work/sharedstate/v1/sharedstate_pb2.pyi" "$out/"
echo "generated $out/sharedstate_pb2.py and $out/sharedstate_pb2.pyi with protoc $version"
