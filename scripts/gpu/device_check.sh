#!/usr/bin/env bash
# Runs ON the GPU machine, from the repository copy, as one prepared run:
#   bash scripts/gpu/device_check.sh "$OUT"
# Steps: env (GPU, driver, toolkit, torch versions into env.txt), unpack (.gpu-bundle/bundle.tar.xz
# from scripts/gpu/bundle.sh into /tmp/partex-gpu), ldd (missing libraries of each binary), one row
# per bin/tst_cuda* test, bench (bin/bench_gpu), torch (scripts/gpu/torch_bench.py).
# Never stops at a failure: every step's exit code and time go into the summary; a missing
# binary or tool is a logged "skip". OUTDIR receives raw.log (everything), env.txt, tests.txt (all
# test outputs), bench_gpu.json, bench_gpu_graphapi.json, flow.json, flow_summary.txt, torch.json,
# summary.txt; past the 8 files a device run brings back, the JSON files go into results-json.tar.xz.
# Environment: TEST_FUNCS (test function names passed to every test binary: a rerun of some only);
# BENCH_ARGS (more arguments to bench_gpu, e.g. --reps 100); BENCH_GENERATED (generated models
# bench_gpu also runs, default bert,gpt2,resnet18,mobilenetv2,widedeep); STEPS (default "env unpack ldd tests bench flow rowmajor torch bench_graphapi", run in that order) runs a subset; CHECK_BUDGET_S
# (default 540) bounds the whole run: each step's timeout is cut to what is left of it, so the
# run ends inside the device call's 600 s limit.
set -u
OUTDIR=${1:?usage: device_check.sh OUTDIR}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
cd "$(dirname "$0")/../.." || exit 2
REPO=$PWD
BUNDLE=${BUNDLE:-$REPO/.gpu-bundle/bundle.tar.xz}
WORK=${WORK:-/tmp/partex-gpu}
STEPS=${STEPS:-env unpack ldd tests bench flow rowmajor torch bench_graphapi}
BUDGET=${CHECK_BUDGET_S:-540}
LOG=$OUTDIR/raw.log
T0=$(date +%s)
: > "$LOG"

# Everything printed from here on also goes to raw.log; fds 3/4 keep the originals so that the
# tee can be closed and waited for at the end (no lost last lines).
exec 3>&1 4>&2
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

NAMES=() RCS=() SECS=()
record() { NAMES+=("$1"); RCS+=("$2"); SECS+=("$3"); }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# limit WANTED: WANTED seconds, cut to what is left of the budget less 10 s; 0 when nothing is left.
limit() {
  local left=$((BUDGET - ($(date +%s) - T0) - 10))
  [ $left -lt 15 ] && { echo 0; return; }
  [ "$1" -lt $left ] && echo "$1" || echo $left
}
wanted() { [[ " $STEPS " == *" $1 "* ]]; }
banner() { echo; echo "=== [$(date -u +%H:%M:%S)] $*"; }

BUNDLE_LD=""   # LD_LIBRARY_PATH for the bundle's binaries (not for python: torch brings its own)

step_env() {
  {
    echo "# date: $(date -u +%FT%TZ)"
    echo "# nvidia-smi"
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,driver_version,power.limit,compute_cap --format=csv
      nvidia-smi
    else echo "absent"; fi
    echo "# nvcc"
    local nvcc; nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    [ -x "$nvcc" ] && "$nvcc" --version || echo "absent"
    echo "# python3"
    command -v python3 && python3 --version
    python3 - <<'EOF' 2>&1
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          "cudnn", torch.backends.cudnn.version(), "available", torch.cuda.is_available())
    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(0))
except Exception as e:
    print("torch absent:", e)
EOF
    echo "# nproc: $(nproc)"
    echo "# uname: $(uname -a)"
    echo "# glibc: $(ldd --version 2>&1 | head -1)"
    echo "# libcuda: $(ldconfig -p 2>/dev/null | grep -m1 'libcuda\.so\.1' || echo 'not in the loader cache')"
    echo "# os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
    echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    echo "# memory: $(free -g 2>/dev/null | awk '/Mem:/ { print $2 " GiB" }')"
  } > "$OUTDIR/env.txt" 2>&1
  cat "$OUTDIR/env.txt"
  command -v nvidia-smi >/dev/null   # the step's code: is there a GPU driver at all
}

step_unpack() {
  rm -rf "$WORK"   # never run binaries left from an earlier unpack
  [ -f "$BUNDLE" ] || { echo "no $BUNDLE: run scripts/gpu/bundle.sh here and carry .gpu-bundle"; return 1; }
  mkdir -p "$WORK" || return 1
  tar -C "$WORK" -xJf "$BUNDLE" || return 1
  echo "unpacked: $(ls "$WORK" | tr '\n' ' ')($(du -sh "$WORK" | cut -f1))"
  # cuDNN and cuBLAS come from the python wheels (site-packages/nvidia/*/lib); search, the layout
  # differs between wheel generations (nvidia/cudnn/lib, nvidia/cublas/lib, nvidia/cu13/lib).
  local dirs=("$WORK/lib") sp d
  local sps
  sps=$(python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  for sp in $sps; do
    [ -d "$sp" ] || continue
    while read -r d; do dirs+=("$d"); done < <(
      find "$sp" -maxdepth 5 \( -name 'libcudnn.so.9' -o -name 'libcublasLt.so.13' -o -name 'libcublas.so.13' \
        -o -name 'libnvrtc.so.13' -o -name 'libnvJitLink.so.13' \) -printf '%h\n' 2>/dev/null | sort -u)
  done
  [ -d /usr/local/cuda/lib64 ] && dirs+=(/usr/local/cuda/lib64)
  # The driver's libcuda.so.1 normally comes from the loader's cache; its folder last, in case not.
  if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    while read -r d; do dirs+=("$d"); done < <(find /usr/local/nvidia /usr/lib/x86_64-linux-gnu -maxdepth 2 \
      -name 'libcuda.so.1' -printf '%h\n' 2>/dev/null | sort -u)
  fi
  BUNDLE_LD=$(printf '%s\n' "${dirs[@]}" | awk '!seen[$0]++' | paste -sd:)
  echo "LD_LIBRARY_PATH for the bundle: $BUNDLE_LD"
  local lib found
  for lib in libcudnn.so.9 libcublasLt.so.13 libcublas.so.13; do
    found=$(for d in "${dirs[@]}"; do [ -e "$d/$lib" ] && echo "$d/$lib" && break; done)
    echo "  $lib: ${found:-NOT FOUND}"
  done
}

step_ldd() {
  [ -d "$WORK/bin" ] || { echo "skipped: nothing unpacked"; return 125; }
  local f bad=0 miss
  for f in "$WORK"/bin/* "$WORK"/plugins/platforms/*; do
    [ -f "$f" ] || continue
    miss=$(LD_LIBRARY_PATH=$BUNDLE_LD ldd "$f" 2>&1 | grep 'not found')
    if [ -n "$miss" ]; then echo "${f#"$WORK"/}:"; echo "$miss"; bad=$((bad + 1))
    else echo "${f#"$WORK"/}: all libraries found"; fi
  done
  return $bad
}

# run_test PATH: one Qt Test executable, its txt log to the scratch folder and to stdout.
run_test() {
  local t=$1 name; name=${t##*/}
  local lim; lim=$(limit 240)
  [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  local CLI_ENV=""   # tests that run the CLI find the bundle's copy, when it has one
  [ -x "$WORK/bin/partex-cli" ] && CLI_ENV="PARTEX_CLI=$WORK/bin/partex-cli"
  echo "timeout ${lim}s, cwd $REPO"
  env LD_LIBRARY_PATH="$BUNDLE_LD" QT_QPA_PLATFORM=offscreen QT_PLUGIN_PATH="$WORK/plugins" \
      PARTEX_MODELS_DIR="$WORK/models" PARTEX_SHARED_MODELS="$WORK/models" \
      PARTEX_CONFORMANCE_DIR="$WORK/conformance" PARTEX_TEST_DATA="$REPO/tests/data" PARTEX_GPU_REF_CACHE=/tmp/partex-gpu-ref \
      ${CLI_ENV:+"$CLI_ENV"} timeout -k 10 "$lim" "$t" -o "$WORK/testout/$name.txt,txt" -o "-,txt" ${TEST_FUNCS:-}
}

step_tests() {
  local t n=0 rc t1
  mkdir -p "$WORK/testout"
  : > "$OUTDIR/tests.txt"
  for t in "$WORK"/bin/tst_cuda*; do
    [ -x "$t" ] || continue
    n=$((n + 1)); t1=$(now)
    banner "test ${t##*/}"
    run_test "$t"; rc=$?
    [ $rc = 124 ] && echo "TIMEOUT"
    record "test:${t##*/}" "$rc" "$(elapsed "$t1")"
    { echo "=== ${t##*/} (rc $rc)"
      cat "$WORK/testout/${t##*/}.txt" 2>/dev/null || echo "(no output file: crashed or never started)"
      echo; } >> "$OUTDIR/tests.txt"
  done
  [ $n -gt 0 ] || { echo "skipped: no bin/tst_cuda* in the bundle"; echo "no tst_cuda* in the bundle" >> "$OUTDIR/tests.txt"; return 125; }
  return 0
}

step_bench() {
  local b="$WORK/bin/bench_gpu" lim
  [ -x "$b" ] || { echo "skipped: no bin/bench_gpu in the bundle"; return 125; }
  lim=$(limit 300); [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  echo "timeout ${lim}s"
  env LD_LIBRARY_PATH="$BUNDLE_LD" QT_QPA_PLATFORM=offscreen QT_PLUGIN_PATH="$WORK/plugins" \
      PARTEX_CUDA_VERBOSE=1 timeout -k 10 "$lim" "$b" --models "$WORK/models" --out "$OUTDIR/bench_gpu.json" --ref-cache /tmp/partex-gpu-ref \
      --generated "${BENCH_GENERATED:-bert,gpt2,resnet18,mobilenetv2,widedeep}" ${BENCH_ARGS:-}
}

# The default measured flow with the GPU in this-machine (scripts/gpu/flow.sh): predicted against
# measured for plans on the GPU alone, best and HEFT over the GPU and the CPU, and a plan from the
# modelled costs alone.
step_flow() {
  local c="$WORK/bin/partex-cli" lim
  [ -x "$c" ] || { echo "skipped: no bin/partex-cli in the bundle"; return 125; }
  lim=$(limit 300); [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  echo "timeout ${lim}s"
  env LD_LIBRARY_PATH="$BUNDLE_LD" XDG_CACHE_HOME=/tmp/partex-flow-cache QT_QPA_PLATFORM=offscreen \
      QT_PLUGIN_PATH="$WORK/plugins" timeout -k 10 "$lim" bash "$REPO/scripts/gpu/flow.sh" "$c" "$WORK/models" "$OUTDIR"
}

# The GPU host's CPU kernels fed row-major (a GPU's output on the host) against fed channels-last, and
# the conversion between them (bin/bench_rowmajor, about 10 s): issue 25's CPU readers of GPU tensors,
# beside flow's "cpu readers of gpu tensors" lines.
step_rowmajor() {
  local b="$WORK/bin/bench_rowmajor" lim
  [ -x "$b" ] || { echo "skipped: no bin/bench_rowmajor in the bundle"; return 125; }
  lim=$(limit 60); [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  echo "timeout ${lim}s"
  env LD_LIBRARY_PATH="$BUNDLE_LD" timeout -k 5 "$lim" "$b" --reps 60
}

# The same with cuDNN's graph-API convolution engines among the candidates (PARTEX_CUDA_GRAPH_API=1;
# off by default until such a run shows them right and faster).
step_bench_graphapi() {
  local b="$WORK/bin/bench_gpu" lim
  [ -x "$b" ] || { echo "skipped: no bin/bench_gpu in the bundle"; return 125; }
  lim=$(limit "${GRAPHAPI_LIMIT_S:-400}"); [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  echo "timeout ${lim}s"
  env LD_LIBRARY_PATH="$BUNDLE_LD" PARTEX_CUDA_GRAPH_API=1 PARTEX_CUDA_VERBOSE=${GRAPHAPI_VERBOSE:-0} timeout -k 10 "$lim" "$b" \
      --models "$WORK/models" --reps 100 --out "$OUTDIR/bench_gpu_graphapi.json" --ref-cache /tmp/partex-gpu-ref \
      --generated "${BENCH_GENERATED:-bert,gpt2,resnet18,mobilenetv2,widedeep}"
}

# The same with TF32 tensor cores allowed for float32 (PyTorch's default for cuDNN convolutions).
step_bench_tf32() {
  local b="$WORK/bin/bench_gpu" lim
  [ -x "$b" ] || { echo "skipped: no bin/bench_gpu in the bundle"; return 125; }
  lim=$(limit 200); [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  echo "timeout ${lim}s"
  env LD_LIBRARY_PATH="$BUNDLE_LD" timeout -k 10 "$lim" "$b" --models "$WORK/models" --reps 100 --tf32 --ref-cache /tmp/partex-gpu-ref \
      --out "$OUTDIR/bench_gpu_tf32.json"
}

step_torch() {
  command -v python3 >/dev/null || { echo "skipped: no python3"; return 125; }
  local lim; lim=$(limit 240); [ "$lim" -gt 0 ] || { echo "skipped: budget spent"; return 125; }
  echo "timeout ${lim}s"
  PYTHONUNBUFFERED=1 timeout -k 10 "$lim" python3 "$REPO/scripts/gpu/torch_bench.py" --out "$OUTDIR/torch.json"
}

echo "device_check: repo $REPO, out $OUTDIR, steps: $STEPS, budget ${BUDGET}s"
# unpack sets the library path that ldd, tests and bench need: it runs whenever one of them does.
if wanted ldd || wanted tests || wanted bench || wanted bench_graphapi || wanted flow || wanted rowmajor || wanted bench_tf32; then STEPS="$STEPS unpack"; fi
# The most needed first: a budget that runs out cuts the graph-API and TF32 benches, not the flow.
for s in env unpack ldd tests bench flow rowmajor torch bench_graphapi bench_tf32; do
  wanted "$s" || { record "$s" skip 0; continue; }
  banner "step $s"
  t1=$(now)
  "step_$s"; rc=$?          # not in a pipeline: step_unpack sets BUNDLE_LD for the later steps
  [ "$s" = tests ] && [ $rc = 0 ] && continue   # its rows are the tests themselves
  record "$s" "$rc" "$(elapsed "$t1")"
done

# Summary: rc 125 is how a step says "skipped"; 124 is timeout's.
{
  echo
  echo "=== summary ($(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s in all)"
  printf '%-40s %-14s %8s\n' step rc seconds
  fails=0
  for i in "${!NAMES[@]}"; do
    r=${RCS[$i]}
    case "$r" in 125) r=skip ;; 124) r="124(timeout)"; fails=$((fails + 1)) ;;
      0|skip) ;; *) fails=$((fails + 1)) ;; esac
    printf '%-40s %-14s %8s\n' "${NAMES[$i]}" "$r" "${SECS[$i]}"
  done
  echo "failed steps: $fails"
} | tee "$OUTDIR/summary.txt"
# At most 8 files come back from the device: past that, the JSON results travel as one archive.
nfiles=$(find "$OUTDIR" -type f | wc -l)
if [ "$nfiles" -gt 8 ]; then
  (cd "$OUTDIR" && tar -cJf results-json.tar.xz ./*.json && rm -f ./*.json) && echo "JSON results packed into results-json.tar.xz"
  nfiles=$(find "$OUTDIR" -type f | wc -l)
fi
[ "$nfiles" -le 8 ] || echo "WARNING: $nfiles files in $OUTDIR, only 8 come back"

exec 1>&3 2>&4 3>&- 4>&-
wait "$TEE_PID" 2>/dev/null
grep -q '^failed steps: 0$' "$OUTDIR/summary.txt"
