#!/usr/bin/env bash
# Configures and builds a CMake preset (default: "default", into build/). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
jobs="${PARTEX_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
