#!/usr/bin/env bash
# Regenerates the TypeScript for every .proto under proto/ with ts-proto
# (protoc from apt `protobuf-compiler`, the plugin from node_modules).
# The output sits next to its .proto, is committed, and is never edited by hand.
# Run: npm run proto
#
# Two files per .proto of proto/cni/ (one for proto/etcd/, etcd's v3 API, a client of which the control plane is):
#   X.ts           messages + grpc-js service definition and client (the agent)
#   X_messages.ts  messages only, importing nothing but @bufbuild/protobuf/wire:
#                  the agent's CNI server (agent/src/cniserver/server.ts), which
#                  serves gRPC on node:http2 itself. The nodenet-cni shim is C
#                  and encodes its two messages by hand (cni/grpc.c)
#
# Options:
#   outputServices=grpc-js   a grpc-js client constructor + service definition (none for _messages)
#   esModuleInterop, env=node (bytes are Buffer), importSuffix=.js (ESM NodeNext)
#   oneof=unions             a oneof is a discriminated union on `$case`
#   outputJsonMethods=false  the wire is binary only; keeps the shim bundle small
#   useExactTypes=false      fromPartial without Exact<>
#   useOptionals=messages    message-typed fields are optional, scalars are not
# The output typechecks under the repo's strict tsconfig as is (checked by
# `npx tsc --noEmit -p .`); if a ts-proto upgrade breaks that, prepend
# `// @ts-nocheck` here rather than editing the output.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/proto"
opts="outputServices=grpc-js,esModuleInterop=true,env=node,oneof=unions,importSuffix=.js"
opts+=",outputJsonMethods=false,useExactTypes=false,useOptionals=messages"
mapfile -t protos < <(find . -name '*.proto' | sed 's|^\./||' | sort)
plugin="protoc-gen-ts_proto=$root/node_modules/.bin/protoc-gen-ts_proto"
mapfile -t etcdprotos < <(printf '%s\n' "${protos[@]}" | grep '^etcd/')
mapfile -t cniprotos < <(printf '%s\n' "${protos[@]}" | grep '^cni/')
protoc --plugin="$plugin" --ts_proto_out=. --ts_proto_opt="$opts" -I . "${cniprotos[@]}"
# etcd's IDs (cluster, member, lease) are full 64-bit values: int64 and uint64 as bigint there.
protoc --plugin="$plugin" --ts_proto_out=. --ts_proto_opt="$opts,forceLong=bigint" -I . "${etcdprotos[@]}"
# The messages-only twin for the shim<->agent contract (proto/cni/) only; etcd's API (proto/etcd/) is a
# client's, used through grpc-js.
protoc --plugin="$plugin" --ts_proto_out=. -I . "${cniprotos[@]}" \
  --ts_proto_opt="${opts/outputServices=grpc-js/outputServices=none},fileSuffix=_messages"
