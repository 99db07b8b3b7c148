#!/usr/bin/env bash
# Builds everything: the native core and tests (build/native), and with Emscripten the wasm
# tests (build/wasm) and the package's two modules (web/lib/wasm). Incremental: a second
# run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Emscripten's link step runs its JS optimizer under Node, which needs Debian's acorn.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=$(nproc)

cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j"$jobs"

if [ ! -f build/wasm/CMakeCache.txt ]; then
  emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build/wasm -j"$jobs"

# The package's types for require() users: the same declarations under the .d.cts name
# TypeScript looks for beside index.cjs.
cp web/lib/index.d.ts web/lib/index.d.cts
