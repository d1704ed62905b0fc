#!/usr/bin/env bash
# Installs what is missing, builds Release into build/ and runs every test through ctest.
# PARTEX_SANITIZE=1 also builds the ASan + UBSan preset and runs the suite under it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh default
ctest --preset default -j "$(nproc)"
if [ "${PARTEX_SANITIZE:-0}" = "1" ]; then
  scripts/build.sh sanitize
  ctest --preset sanitize -j "$(nproc)"
fi
