#!/usr/bin/env bash
# Installs ONNX Runtime for Node (onnxruntime-node 1.30.0), the yardstick that bench/ort and the optional
# output-equality tests compare Partex's CPU runtime with. Not a product dependency.
# --ignore-scripts: the package's install script downloads GPU binaries from a host these machines
# cannot reach; the CPU library (bin/napi-v6/linux/x64/libonnxruntime.so.1) is inside the package.
# Target: $PARTEX_ORT_DIR (default ~/.local/share/partex/onnxruntime-node). Idempotent.
set -euo pipefail
dir="${PARTEX_ORT_DIR:-$HOME/.local/share/partex/onnxruntime-node}"
if [ -f "$dir/node_modules/onnxruntime-node/package.json" ] &&
   grep -q '"version": "1.30.0"' "$dir/node_modules/onnxruntime-node/package.json"; then
  echo "ort: onnxruntime-node 1.30.0 present in $dir"
  exit 0
fi
command -v npm >/dev/null || { echo "ort: npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
mkdir -p "$dir"
echo "ort: installing onnxruntime-node 1.30.0 into $dir"
npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts onnxruntime-node@1.30.0 >/dev/null
