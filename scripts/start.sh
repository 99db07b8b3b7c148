#!/usr/bin/env bash
# `npm start`: set up, build, then serve web/ on localhost with the headers that give the
# page threads (see scripts/serve.mjs): the tutorial at /, the benchmark at /bench.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build/setup.sh
bash scripts/build/build.sh
# web/bench.html's bundled packages (scripts/bench/browser_bundles.mjs); the page runs without them
node scripts/bench/browser_bundles.mjs || echo 'start: the browser bench bundles failed; web/bench.html will lack them' >&2
exec node scripts/serve.mjs "$@"
