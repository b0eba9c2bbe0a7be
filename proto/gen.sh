#!/usr/bin/env bash
# Regenerates proto/gen from proto/defs with the generators pinned in tools/codegen.
#   proto/gen.sh            rewrite proto/gen
#   proto/gen.sh --check    fail when proto/gen differs from what the generators produce
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
# Generated code is formatted so that diffs stay readable; deno is on PATH inside `deno task`.
deno fmt --quiet --no-config --line-width 110 "$out/gen" >/dev/null
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -r "$out/gen" "$here/gen" >/dev/null; then
    diff -r "$out/gen" "$here/gen" | head -40 >&2 || true
    echo "gen:proto: proto/gen is stale; run 'deno task gen:proto' and commit the result" >&2
    exit 1
  fi
  echo "gen:proto: proto/gen is up to date" >&2
else
  rm -rf "$here/gen"
  cp -r "$out/gen" "$here/gen"
  echo "gen:proto: wrote $(find "$here/gen" -name '*.ts' | wc -l) files to proto/gen" >&2
fi
