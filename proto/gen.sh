#!/usr/bin/env bash
# Regenerates proto/gen (with grpc-js clients and services, for the control plane) and
# proto/gen_messages (the same messages with plain service descriptors, no grpc-js: for the proxy)
# from proto/defs with the generators pinned in tools/codegen.
#   proto/gen.sh            rewrite both
#   proto/gen.sh --check    fail when either differs from what the generators produce
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
tools="$root/tools/codegen"
if [[ ! -x "$tools/node_modules/.bin/protoc-gen-ts_proto" || "$tools/package-lock.json" -nt "$tools/node_modules/.package-lock.json" ]]; then
  echo "gen:proto: installing pinned generators (npm ci in tools/codegen)" >&2
  npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error >&2
fi
buf="$tools/node_modules/.bin/buf"
cd "$here"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$buf" generate --template buf.gen.yaml -o "$out"
outputs=(gen gen_messages)
# Generated code is formatted so that diffs stay readable; deno is on PATH inside `deno task`.
for o in "${outputs[@]}"; do
  deno fmt --quiet --no-config --line-width 110 "$out/$o" >/dev/null
done
if [[ "${1:-}" == "--check" ]]; then
  stale=0
  for o in "${outputs[@]}"; do
    if ! diff -r "$out/$o" "$here/$o" >/dev/null; then
      diff -r "$out/$o" "$here/$o" | head -40 >&2 || true
      echo "gen:proto: proto/$o is stale; run 'deno task gen:proto' and commit the result" >&2
      stale=1
    fi
  done
  [[ $stale == 0 ]] || exit 1
  echo "gen:proto: proto/gen and proto/gen_messages are up to date" >&2
else
  for o in "${outputs[@]}"; do
    rm -rf "${here:?}/$o"
    cp -r "$out/$o" "$here/$o"
    echo "gen:proto: wrote $(find "$here/$o" -name '*.ts' | wc -l) files to proto/$o" >&2
  done
fi
