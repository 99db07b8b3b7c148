#!/usr/bin/env bash
# `npm test`: set up, build, then every check: formats and lints (scripts/lint.sh), the C++
# tests natively and as wasm under Node (ctest), then the JS tests (node's test runner). Runs
# them all, fails if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/build/setup.sh || exit 1
bash scripts/build/build.sh || exit 1
# The bench's pool-trace modules (not in the product build): tests/js/tools/pool_trace.test.mjs
# holds the trace the scaling model reads to the pool.
bash scripts/build/build.sh pool_trace || exit 1

status=0
# Formats and lints (scripts/lint.sh): checks, never rewrites; `npm run format` rewrites.
bash scripts/lint.sh || status=1
ctest --test-dir build/native --output-on-failure || status=1
ctest --test-dir build/wasm --output-on-failure || status=1
# Every JS suite, folder by folder (tests/js/: package, page, tools, engines; helpers/ holds
# what they share and no suite).
node --test tests/js/*/*.test.mjs || status=1
exit $status
