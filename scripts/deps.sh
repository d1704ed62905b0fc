#!/usr/bin/env bash
# Installs the Debian 12 packages that Partex needs to build, test and run. Idempotent: installs
# only what is missing. Runs as root, or through sudo when available.
set -euo pipefail

# Installed with --no-install-recommends, so a package whose CMake config needs something its -dev
# package only recommends must be listed here: libdnnl-dev's dnnl-config.cmake calls
# find_package(OpenCL), which needs ocl-icd-opencl-dev (a Recommends of libdnnl-dev).
# slurmctld, slurmd, slurm-client and munge (Debian's slurm-wlm 22.05) are the single-node Slurm that
# tests/slurm/ starts to run a sweep as a job array (partex-cli sweep --slurm); the product needs only
# sbatch on PATH where it submits.
# python3-venv lets scripts/ort/install.sh make a virtual environment with Debian's /usr/bin/python3
# (whose pip refuses to install into the system, PEP 668) and put ONNX Runtime 1.30.0 from PyPI in it:
# the yardstick of the CPU runtime's benchmark (bench_ort) and of the optional output-equality tests
# (tst_ort_outputs); the product does not use it. Its Depends (python3.11-venv, python3-pip-whl,
# python3-setuptools-whl, python3-distutils) are all ensurepip needs: no Recommends.
PACKAGES=(
  cmake ninja-build g++ pkg-config
  qt6-base-dev qt6-svg-dev libgl-dev
  libgraphviz-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev ocl-icd-opencl-dev
  nlohmann-json3-dev libcli11-dev
  libonnx-testdata
  clang libclang-rt-14-dev
  xvfb xauth
  slurmctld slurmd slurm-client munge
  python3-venv
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} Debian packages present"
  "$(dirname "$0")/ort/install.sh" || echo "deps: ONNX Runtime (PyPI, in a venv) not installed: bench_ort and tst_ort_outputs will say so and skip" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "deps: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
    exit 1
  fi
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The yardstick of the benchmarks; the build and the product do not need it, so a failure only warns.
"$(dirname "$0")/ort/install.sh" || echo "deps: ONNX Runtime (PyPI, in a venv) not installed: bench_ort and tst_ort_outputs will say so and skip" >&2
