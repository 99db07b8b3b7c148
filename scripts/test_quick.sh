#!/usr/bin/env bash
# `npm run test:quick`: the loop to run while working on the package, with the build in place
# (`npm run build`; this script builds nothing). Under 3 minutes on 2 cores. `npm test` still
# runs everything (scripts/test.sh); this leaves out what needs browsers (browser_*, page_*,
# bundlers, bench_browser), other runtimes (runtimes: Deno and Bun), the wasm ctest suites
# (the same C++ suite as the native one, compiled to wasm), relaxed (a child Node per case, and
# browsers) and the tools' and the page model's suites (model*, trainer, kneser_ney,
# long_context, peak_probe).
set -uo pipefail
cd "$(dirname "$0")/.."

for built in build/native/wa_tests web/lib/wasm/wasm_attention_mt.wasm web/lib/index.cjs; do
  [ -e "$built" ] || { echo "test:quick: $built is missing: run npm run build first" >&2; exit 1; }
done

status=0
# Formats and lints: Prettier, ESLint, clang-format-14 (scripts/lint.sh).
bash scripts/lint.sh || status=1
# The C++ doctest suite, natively: every kernel against its scalar double reference.
build/native/wa_tests || status=1
# The package's Node suites:
#   api, modern, mha_modern, sinks, out   the API against the float64 reference
#   backward                              gradients against finite differences
#   half, kv_dtype, kv_read, kv_size      float16 tensors; float16 and int8 caches, read back, sized
#   long_sequence                         fused attention at n 16384 within its memory
#   onnx_node                             ONNX's own Attention node tests
#   reference                             the float64 reference against hand-worked numbers
#   errors, properties, hostile_parse,    every error and its message; property-based cases;
#   host_inputs, host_reentry,            arguments read once; re-entrant getters; the host
#   host_process                          process left as found
#   worker                                the worker form, bit for bit the direct one
#   variants                              the table of builds against CMakeLists.txt
#   package                               the packed tarball installed, imported, required, typed
#   docs_examples                         every example of the README and web/docs runs
#   imports                               scripts/ and web/ never import tests/
node --test \
  tests/js/api.test.mjs tests/js/modern.test.mjs tests/js/mha_modern.test.mjs tests/js/sinks.test.mjs \
  tests/js/out.test.mjs tests/js/backward.test.mjs tests/js/half.test.mjs tests/js/kv_dtype.test.mjs \
  tests/js/kv_read.test.mjs tests/js/kv_size.test.mjs \
  tests/js/long_sequence.test.mjs tests/js/onnx_node.test.mjs tests/js/reference.test.mjs \
  tests/js/errors.test.mjs tests/js/properties.test.mjs tests/js/hostile_parse.test.mjs \
  tests/js/host_inputs.test.mjs tests/js/host_reentry.test.mjs tests/js/host_process.test.mjs \
  tests/js/worker.test.mjs tests/js/variants.test.mjs tests/js/package.test.mjs \
  tests/js/docs_examples.test.mjs tests/js/imports.test.mjs ||
  status=1
exit $status
