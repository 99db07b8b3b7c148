#!/usr/bin/env bash
# `npm run lint`: checks, never rewrites (`npm run format` rewrites). Part of `npm test`.
#   prettier --check  JS, CSS, HTML and JSON laid out as .prettierrc.json says
#   eslint            the recommended correctness rules (eslint.config.js)
#   clang-format-14   C++ laid out as .clang-format says (--dry-run -Werror: report, fail); by
#                     version, since another may lay out the same code differently
#   lint_comment_paths.mjs  every repository path a comment names exists
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
npx --no-install prettier --check --log-level warn . || { echo 'lint: run npm run format' >&2; status=1; }
npx --no-install eslint --max-warnings 0 . || status=1
if [ -f .clang-format ]; then
  cpp_files=$(git ls-files 'cpp/*.cpp' 'cpp/*.h' 'tests/cpp/*.cpp' 'tests/cpp/*.h')
  # shellcheck disable=SC2086
  clang-format-14 --dry-run -Werror $cpp_files || status=1
fi
node scripts/lint_comment_paths.mjs || status=1
[ $status -eq 0 ] && echo "lint: clean"
exit $status
