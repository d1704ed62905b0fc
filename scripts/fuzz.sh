#!/usr/bin/env bash
# Builds the "fuzz" preset (clang, libFuzzer + ASan + UBSan, into build-fuzz/) and fuzzes for ${1:-60}
# seconds in all: half on the ONNX importer (fuzz_import), a quarter on libonnx's shape-inference
# functions behind the importer's guards (fuzz_infer), a quarter on the GGUF header reader (fuzz_gguf,
# seeded with the small headers it writes itself). Seed corpus of fuzz_import: the importer's
# hand-built test models plus the models in ../shared/models up to PARTEX_FUZZ_MAX_SEED bytes (default
# 256 KiB: bigger seeds make every run slow, since libFuzzer mutates up to the largest seed size);
# fuzz_infer starts from its own corpus of earlier runs (build-fuzz/fuzz-infer-corpus).
# Exits non-zero on a finding of either (crash, sanitizer report, leak, timeout); the reproducer is
# left in build-fuzz/fuzz-artifacts/<time>/ and replays with: build-fuzz/bin/fuzz_import FILE (files
# named infer-*: build-fuzz/bin/fuzz_infer FILE, PARTEX_FUZZ_PRINT=1 prints the decoded node; gguf-*:
# build-fuzz/bin/fuzz_gguf FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
jobs="${PARTEX_JOBS:-$(nproc)}"
max_seed="${PARTEX_FUZZ_MAX_SEED:-262144}"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"

# Half of the time to the importer; each target gets at least a second (0 means no limit).
import_seconds=$(( seconds / 2 ))
[ "$import_seconds" -ge 1 ] || import_seconds=1
gguf_seconds=$(( seconds / 4 ))
[ "$gguf_seconds" -ge 1 ] || gguf_seconds=1
infer_seconds=$(( seconds - import_seconds - gguf_seconds ))
[ "$infer_seconds" -ge 1 ] || infer_seconds=1

bin=build-fuzz/bin/fuzz_import
corpus=build-fuzz/fuzz-corpus
infer_corpus=build-fuzz/fuzz-infer-corpus
artifacts="build-fuzz/fuzz-artifacts/$(date +%Y%m%d-%H%M%S)"
gguf_corpus=build-fuzz/fuzz-gguf-corpus
mkdir -p "$corpus" "$infer_corpus" "$gguf_corpus" "$artifacts"
PARTEX_FUZZ_WRITE_SEEDS="$gguf_corpus" build-fuzz/bin/fuzz_gguf
PARTEX_FUZZ_WRITE_SEEDS="$corpus" "$bin"
shared=0
for f in ../shared/models/*.onnx; do
  [ -f "$f" ] || continue
  if [ "$(stat -c %s "$f")" -le "$max_seed" ]; then
    cp -f "$f" "$corpus/shared_$(basename "$f")"
    shared=$((shared + 1))
  fi
done
echo "fuzz: corpus $(ls "$corpus" | wc -l) files ($shared from ../shared/models); running fuzz_import" \
  "${import_seconds}s, fuzz_infer ${infer_seconds}s, fuzz_gguf ${gguf_seconds}s"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
status=0
"$bin" -max_total_time="$import_seconds" -timeout=25 -rss_limit_mb=4096 -max_len="$max_seed" \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" || status=$?
# Both targets run even after a finding of the first, so that one run reports both.
infer_status=0
build-fuzz/bin/fuzz_infer -max_total_time="$infer_seconds" -timeout=25 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/infer-" -print_final_stats=1 "$infer_corpus" || infer_status=$?
[ "$status" -ne 0 ] || status=$infer_status
gguf_status=0
build-fuzz/bin/fuzz_gguf -max_total_time="$gguf_seconds" -timeout=25 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/gguf-" -print_final_stats=1 "$gguf_corpus" || gguf_status=$?
[ "$status" -ne 0 ] || status=$gguf_status
if [ "$status" -ne 0 ] || compgen -G "$artifacts/*" >/dev/null; then
  echo "fuzz: FINDING (exit $status); reproducers in $artifacts/" >&2
  exit $(( status == 0 ? 1 : status ))
fi
rmdir "$artifacts" 2>/dev/null || true
echo "fuzz: clean"
