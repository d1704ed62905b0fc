#!/usr/bin/env bash
# Installs ONNX Runtime 1.30.0 from PyPI (the onnxruntime wheel, CPU execution provider) into a Python
# virtual environment: the yardstick that bench/ort and the optional output-equality tests compare
# Partex's CPU runtime with (scripts/ort/run.py runs it). Not a product dependency.
# Debian 12's system Python refuses `pip install` (PEP 668, externally managed), hence the venv, made
# with Debian's own interpreter (/usr/bin/python3 -m venv needs the python3-venv package, which
# scripts/deps.sh installs). Pinned: onnxruntime 1.30.0, NumPy 2.4.6 (run.py's arrays and .npy files)
# and onnx 1.23.2 (scripts/models/run_suite.py reads the suite's models and their input types with it),
# and gguf 0.19.0, llama.cpp's own GGUF reader: tst_gguf checks Partex's GGUF writer and reader against it.
# Target: $PARTEX_ORT_VENV (default ~/.local/share/partex/ort-venv); run.py is then run as
# $PARTEX_ORT_VENV/bin/python scripts/ort/run.py. Idempotent: when both pinned versions are there it
# only says so (reading the installed metadata, without importing them).
set -euo pipefail
ORT_VERSION=1.30.0
NUMPY_VERSION=2.4.6
ONNX_VERSION=1.23.2
GGUF_VERSION=0.19.0
dir="${PARTEX_ORT_VENV:-$HOME/.local/share/partex/ort-venv}"
py="$dir/bin/python"

present() {
  [ -x "$py" ] && "$py" - "$ORT_VERSION" "$NUMPY_VERSION" "$ONNX_VERSION" "$GGUF_VERSION" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
try:
    ok = (m.version("onnxruntime") == sys.argv[1] and m.version("numpy") == sys.argv[2]
          and m.version("onnx") == sys.argv[3] and m.version("gguf") == sys.argv[4])
except m.PackageNotFoundError:
    ok = False
sys.exit(0 if ok else 1)
PY
}

if present; then
  echo "ort: onnxruntime $ORT_VERSION, numpy $NUMPY_VERSION, onnx $ONNX_VERSION and gguf $GGUF_VERSION present in $dir"
  exit 0
fi
if [ ! -x "$py" ]; then
  [ -x /usr/bin/python3 ] || { echo "ort: /usr/bin/python3 is missing (scripts/deps.sh installs python3-venv)" >&2; exit 1; }
  echo "ort: creating the virtual environment $dir"
  mkdir -p "$(dirname "$dir")"
  if ! /usr/bin/python3 -m venv "$dir"; then
    rm -rf "$dir"  # a half-made venv (no pip: ensurepip missing) would pass the -x test next time
    echo "ort: /usr/bin/python3 -m venv failed: install Debian's python3-venv (scripts/deps.sh does)" >&2
    exit 1
  fi
fi
echo "ort: installing onnxruntime==$ORT_VERSION numpy==$NUMPY_VERSION onnx==$ONNX_VERSION gguf==$GGUF_VERSION into $dir"
"$py" -m pip install --disable-pip-version-check --no-input -q "onnxruntime==$ORT_VERSION" "numpy==$NUMPY_VERSION" \
  "onnx==$ONNX_VERSION" "gguf==$GGUF_VERSION"
present || { echo "ort: the installation in $dir does not hold the pinned versions" >&2; exit 1; }
echo "ort: done; run scripts/ort/run.py with $py"
