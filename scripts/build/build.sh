#!/usr/bin/env bash
# Builds the product: the native core and tests (build/native), with Emscripten the wasm tests
# (build/wasm) and the package's four modules (web/lib/wasm), and the package's CommonJS entry
# (web/lib/index.cjs). Incremental: a second run rebuilds only what changed.
#   bash scripts/build/build.sh                  the product (npm run build)
#   bash scripts/build/build.sh TARGET...        only these build/wasm targets, which the default build
#                                          leaves out: the lab's modules, built on demand by the
#                                          bench and the forensics scripts (CMakeLists.txt:
#                                          forensics, pool_trace)
set -euo pipefail
cd "$(dirname "$0")/../.."

# Emscripten's link step runs its JS optimizer under Node, which needs Debian's acorn.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
# Debian's Emscripten runs binaryen's tools (wasm-opt, ...) by name, from PATH. Under npm
# (npm test, npm start) PATH starts with node_modules/.bin, which holds npm's newer binaryen
# (the relaxed builds call it by its path): its wasm-opt would stand in for Debian's and link
# modules whose JS glue does not match their .wasm. So that folder leaves PATH here.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd: -)
export PATH
jobs=$(nproc)

configure_wasm() {
  if [ ! -f build/wasm/CMakeCache.txt ]; then
    emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
}

if [ $# -gt 0 ]; then
  configure_wasm
  cmake --build build/wasm -j"$jobs" --target "$@"
  exit 0
fi

cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j"$jobs"

configure_wasm
# The default targets: the package's modules and the wasm test suites.
cmake --build build/wasm -j"$jobs"

# The package's entry for require() users, index.cjs: Node 20's require() cannot load the ES
# modules, so Rollup bundles the synchronous functions from their modules into one CommonJS
# file, whose createAttention imports index.js. Its types: the same declarations under the
# .d.cts name TypeScript looks for beside index.cjs.
node scripts/build/build_cjs.mjs
cp web/lib/index.d.ts web/lib/index.d.cts
