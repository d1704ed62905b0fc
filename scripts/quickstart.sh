#!/usr/bin/env bash
# Installs what is missing, builds Release into build/ and opens Partex on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh default
example="build/examples/resnet18.onnx"
if [ ! -f "$example" ]; then
  mkdir -p build/examples
  build/bin/partex-cli generate resnet18 -o "$example"
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "quickstart: no display; starting Partex under xvfb-run (set DISPLAY to see the window)"
  exec xvfb-run -a -s "-screen 0 1600x1000x24" build/bin/partex "$example"
fi
exec build/bin/partex "$example"
