#!/usr/bin/env bash
# Adds the exporter-made models to the public model suite (docs/model-suite.md, "Exported models"):
# transformers and torchvision architectures with seeded random weights, exported with torch.onnx.export
# (TorchScript exporter, opset 17) into DIR/exported/ and merged into DIR/manifest.json.
# Usage: scripts/models/export_suite.sh [DIR] [--models a,b] [--force]
#   DIR: default $PARTEX_MODEL_SUITE, else ~/.cache/partex/model-suite.
# Run it after fetch_suite.sh: fetch_suite.sh writes the manifest anew from suite.json and so drops the
# exported entries (their files stay; running this script again puts them back without exporting).
# The venv: $PARTEX_EXPORT_VENV, default ~/.local/share/partex/export-venv, made with /usr/bin/python3 -m venv
# and the pinned scripts/models/export_suite.requirements.txt (torch from PyPI: ~5.7 GB with its CUDA wheels).
# Exit 2 with one line naming the model when an export fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${PARTEX_MODEL_SUITE:-$HOME/.cache/partex/model-suite}"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then dir="$1"; shift; fi
venv="${PARTEX_EXPORT_VENV:-$HOME/.local/share/partex/export-venv}"
req="$here/export_suite.requirements.txt"
stamp="$venv/.partex-requirements"
if [ ! -x "$venv/bin/python" ]; then
  echo "export_suite: creating $venv"
  /usr/bin/python3 -m venv "$venv" || { echo "export_suite: /usr/bin/python3 -m venv failed (install python3-venv)" >&2; exit 2; }
fi
if ! cmp -s "$req" "$stamp"; then
  echo "export_suite: installing $req into $venv"
  "$venv/bin/pip" install --progress-bar off -q -r "$req" || { echo "export_suite: pip install -r $req failed" >&2; exit 2; }
  cp "$req" "$stamp"
fi
exec "$venv/bin/python" "$here/export_suite.py" --dir "$dir" "$@"
