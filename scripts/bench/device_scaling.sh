#!/usr/bin/env bash
# The scaling section on a lent many-core machine, in one call (scripts/bench/device_scaling_pack.sh
# says how to pack and call it): unpacks Node and the payload, says what the machine is, and
# runs `bench --only scaling` at 1, 2, 4, 8 and 16 threads, ours against onnxruntime-web
# (tfjs-wasm left out: its rows take minutes the 15-minute device budget does not have), and
# ours on threads: 'auto' (what createAttention gives by default: the cores, up to 16).
# $OUT gets scaling.log (the bench's report and progress), scaling.json (its results) and
# auto.md, the check only a many-core machine can make: 'auto' against every smaller count,
# case by case, "not slower" or "slower than N threads" (also printed last).
# SCALING_ARGS replaces the bench's arguments (a local try: SCALING_ARGS='--threads 1,2 --quick').
set -euo pipefail
cd "$(dirname "$0")/../.."
here=build/device-scaling
out=${OUT:-build/device-scaling/out}
mkdir -p "$out" /tmp/wa-node
xz -dc "$here/node.xz" >/tmp/wa-node/node
chmod +x /tmp/wa-node/node
export PATH=/tmp/wa-node:$PATH
# node_modules travels as a link to the checkout it came from: the payload's copy replaces it
if [ -L node_modules ]; then rm node_modules; fi
tar -xJf "$here/payload.tar.xz"
{
  echo "node $(node --version), $(nproc) cores, $(lscpu | grep 'Model name' | sed 's/  */ /g')"
  uptime
} | tee "$out/scaling.log"
# shellcheck disable=SC2086  # SCALING_ARGS is a list of arguments
node scripts/bench.mjs --only scaling ${SCALING_ARGS:---threads 1,2,4,8,16 --peers ort} 2>&1 | tee -a "$out/scaling.log"
cp build/bench/results-scaling.json "$out/scaling.json"
# the report's 'auto' table, from its heading to the line that says what "slower" means
sed -n "/^### threads: 'auto'/,/^'auto' is slower/p" "$out/scaling.log" | tee "$out/auto.md"
