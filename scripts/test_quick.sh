#!/usr/bin/env bash
# `npm run test:quick`: the loop to run while working on the package, with the build in place
# (`npm run build`; this script builds nothing). About 2 minutes on 2 idle cores (3 minutes of
# CPU; web/docs/developing.md, "Testing"), longer under load. `npm test` still
# runs everything (scripts/test.sh); this leaves out the wasm ctest suites (the same C++ suite
# as the native one, compiled to wasm) and every JS folder but tests/js/package/: the page's
# suites (page/), the tools' (tools/), and the package in browsers, Deno, Bun, bundlers and
# relaxed SIMD (engines/).
set -uo pipefail
cd "$(dirname "$0")/.."

for built in build/native/wa_tests web/lib/wasm/wasm_attention_simd128_mt.wasm web/lib/index.cjs; do
  [ -e "$built" ] || { echo "test:quick: $built is missing: run npm run build first" >&2; exit 1; }
done

status=0
# Formats and lints: Prettier, ESLint, clang-format-14 (scripts/lint.sh).
bash scripts/lint.sh || status=1
# The C++ doctest suite, natively: every kernel against its scalar double reference.
build/native/wa_tests || status=1
# The package's Node suites (each file's header says what it covers): the API against the
# float64 reference, gradients, float16 tensors and compressed caches, every error and its
# message, the host left as found, the worker form, the packed tarball, the docs' examples.
# As many files at a time as the cores, at least 2, as npm test runs them (scripts/test.sh).
jobs=$(nproc)
[ "$jobs" -ge 2 ] || jobs=2
node --test --test-concurrency="$jobs" tests/js/package/*.test.mjs || status=1
exit $status
