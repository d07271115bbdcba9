#!/usr/bin/env bash
# Regenerates the Go code of the plugin protocol from scribe.proto:
#
#   plugins/proto/gen.sh
#
# The generated files (scribe.pb.go, scribe_grpc.pb.go) are committed; run
# this after changing scribe.proto and commit the three together.
#
# protoc comes from Debian's protobuf-compiler package (installed with
# apt-get when missing); the Go generators are installed with `go install`
# at versions pinned to match go.mod: protoc-gen-go at the version of
# google.golang.org/protobuf, protoc-gen-go-grpc at v1.3.0, the last one
# whose output works with google.golang.org/grpc v1.61 (v1.4+ needs v1.62).
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.6
PROTOC_GEN_GO_GRPC_VERSION=v1.3.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if ! command -v protoc >/dev/null 2>&1; then
	echo "gen.sh: installing protoc (Debian package protobuf-compiler)" >&2
	if [ "$(id -u)" -eq 0 ]; then
		apt-get update -q
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q protobuf-compiler
	else
		sudo apt-get update -q
		sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q protobuf-compiler
	fi
fi

bin="$(go env GOPATH)/bin"
want_go="protoc-gen-go ${PROTOC_GEN_GO_VERSION}"
if [ ! -x "$bin/protoc-gen-go" ] || [ "$("$bin/protoc-gen-go" --version 2>/dev/null)" != "$want_go" ]; then
	GOFLAGS= go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
fi
want_grpc="protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}"
if [ ! -x "$bin/protoc-gen-go-grpc" ] || [ "$("$bin/protoc-gen-go-grpc" --version 2>/dev/null)" != "$want_grpc" ]; then
	GOFLAGS= go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
fi

PATH="$bin:$PATH" protoc \
	--proto_path=. \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	scribe.proto

echo "gen.sh: regenerated $(ls "$here"/*.pb.go | xargs -n1 basename | tr '\n' ' ')" >&2
