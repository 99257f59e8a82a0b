#!/usr/bin/env bash
# Regenerates Sources/Daemon/EtcdClient/Generated/ from etcd's own protocol files, as Debian ships them
# for the etcd-server it packages (3.4). Run it after moving to another etcd release and commit the
# result together with the change.
#
# Needs:
# - etcd's .proto files: apt-get install -y golang-etcd-server-dev
# - protoc: apt-get install -y protobuf-compiler
# - protoc-gen-swift (swift-protobuf) and protoc-gen-grpc-swift-2 (grpc-swift-protobuf), built from
#   the versions Package.swift names. Without PROTOC_GEN_SWIFT / PROTOC_GEN_GRPC_SWIFT set, each
#   is built once into .build-protoc/ (a few minutes each on 2 cores).
#
# etcd's files carry gogoproto options (for Go's code generator) and google.api.http options (for
# its JSON gateway). Neither changes a message or a method, and neither's .proto is packaged
# beside them, so they are removed from a copy before protoc reads it. Only the client side of
# each service is generated: syncd calls etcd, it never serves it.
set -euo pipefail
cd "$(dirname "$0")/.."

etcd_protos=${ETCD_PROTOS:-/usr/share/gocode/src/go.etcd.io/etcd}
swift_protobuf_version=1.39.0
grpc_swift_protobuf_version=2.4.1

[ -f "$etcd_protos/etcdserver/etcdserverpb/rpc.proto" ] ||
  { echo "etcd's .proto files are missing: apt-get install -y golang-etcd-server-dev (or set ETCD_PROTOS)" >&2; exit 1; }
command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 1; }

# Builds `product` of the package at `url`@`version` into .build-protoc/, once; prints its path.
build_plugin() {
  local name=$1 url=$2 version=$3 product=$4
  local checkout=.build-protoc/$name
  if [ ! -x "$checkout/.build/release/$product" ]; then
    rm -rf "$checkout"
    git clone --quiet --branch "$version" "$url" "$checkout"
    swift build --package-path "$checkout" -c release --product "$product" >&2
  fi
  echo "$checkout/.build/release/$product"
}

swift_plugin=${PROTOC_GEN_SWIFT:-$(build_plugin swift-protobuf https://github.com/apple/swift-protobuf "$swift_protobuf_version" protoc-gen-swift)}
grpc_plugin=${PROTOC_GEN_GRPC_SWIFT:-$(build_plugin grpc-swift-protobuf https://github.com/grpc/grpc-swift-protobuf "$grpc_swift_protobuf_version" protoc-gen-grpc-swift-2)}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=(etcd/etcdserver/etcdserverpb/rpc.proto etcd/mvcc/mvccpb/kv.proto etcd/auth/authpb/auth.proto)
for file in "${files[@]}"; do
  mkdir -p "$work/$(dirname "$file")"
  python3 - "$etcd_protos/${file#etcd/}" "$work/$file" <<'PYTHON'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r'^import "(gogoproto/gogo|google/api/annotations)\.proto";\n', '', text, flags=re.M)
text = re.sub(r'^option \(gogoproto\.[^;]*;\n', '', text, flags=re.M)
# An HTTP option is a block that may hold blocks (`additional_bindings { ... }`): cut each up to
# the brace that closes it. A method left with an empty body `{}` is still valid proto3.
while (start := text.find('option (google.api.http) = {')) != -1:
    depth, end = 0, text.index('{', start)
    while True:
        depth += {'{': 1, '}': -1}.get(text[end], 0)
        end += 1
        if depth == 0:
            break
    text = text[:start] + text[end:].removeprefix(';')
if 'gogoproto' in text or 'google.api' in text:
    sys.exit(f'{sys.argv[1]}: an option this script does not know how to remove')
open(sys.argv[2], 'w').write(text)
PYTHON
done

out=Sources/Daemon/EtcdClient/Generated
rm -rf "$out"
mkdir -p "$out"
protoc \
  --plugin=protoc-gen-swift="$swift_plugin" \
  --proto_path="$work" \
  --swift_out="$out" \
  --swift_opt=FileNaming=DropPath \
  "${files[@]/#/$work/}"
# Only rpc.proto declares services.
protoc \
  --plugin=protoc-gen-grpc-swift-2="$grpc_plugin" \
  --proto_path="$work" \
  --grpc-swift-2_out="$out" \
  --grpc-swift-2_opt=FileNaming=DropPath,Client=true,Server=false \
  "$work/${files[0]}"
version=$(dpkg-query -W -f '${Version}' golang-etcd-server-dev 2>/dev/null || echo unknown)
echo "generated $(ls "$out" | tr '\n' ' ')from etcd's protocol files ($version)"
