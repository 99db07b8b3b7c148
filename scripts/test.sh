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

# Files and ctest suites run at once: as many as the cores, at least 2.
jobs=$(nproc)
[ "$jobs" -ge 2 ] || jobs=2

status=0
# Formats and lints (scripts/lint.sh): checks, never rewrites; `npm run format` rewrites.
bash scripts/lint.sh || status=1
ctest --test-dir build/native --output-on-failure || status=1
# The three wasm suites (SIMD128, its threaded build, relaxed SIMD threaded) side by side.
ctest --test-dir build/wasm --output-on-failure -j"$jobs" || status=1
# Every JS suite, folder by folder (tests/js/: package, page, tools, engines; helpers/ holds
# what they share and no suite), $jobs files at a time: node's default, one fewer than the
# cores, leaves a core of 2 idle while a suite waits on a browser, a bundler or npm. No verdict
# depends on the time a file takes (a wait is for an event; a timeout only guards a hang), and
# each file's servers, folders and ports are its own (web/docs/developing.md, "Testing").
node --test --test-concurrency="$jobs" tests/js/*/*.test.mjs || status=1
exit $status
