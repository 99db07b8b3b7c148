#!/usr/bin/env bash
# `npm start`: set up, build, then serve web/ on localhost with the headers that give the
# page threads (see scripts/serve.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node scripts/serve.mjs "$@"
