#!/usr/bin/env bash
# `npm test`: set up, build, then every check: the C++ format, the C++ tests natively and as
# wasm under Node (ctest), then the JS tests (node's test runner). Runs them all, fails if any
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh || exit 1
bash scripts/build.sh || exit 1

status=0
# C++ format: cpp/ and tests/cpp/ must be as .clang-format lays them out. A check, never a
# rewrite; to fix: find cpp tests/cpp -name '*.cpp' -o -name '*.h' | xargs clang-format-14 -i
# (clang-format-14 by name: another version may lay out the same code differently).
echo "format check: clang-format-14 --dry-run -Werror over cpp/ and tests/cpp/"
if ! find cpp tests/cpp \( -name '*.cpp' -o -name '*.h' \) -print0 | xargs -0 clang-format-14 --dry-run -Werror; then
  echo "format check failed: run clang-format-14 -i on the files above" >&2
  status=1
fi
ctest --test-dir build/native --output-on-failure || status=1
ctest --test-dir build/wasm --output-on-failure || status=1
if compgen -G "tests/js/*.test.mjs" >/dev/null; then
  node --test tests/js/*.test.mjs || status=1
fi
exit $status
