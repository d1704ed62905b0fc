#!/usr/bin/env bash
# Packs what the GPU machine needs into one file, DEST/bundle.tar.xz, after a CUDA build here:
#   bin/          bench_gpu, every tst_cuda*, bench_rowmajor and (when it still fits) partex-cli from BUILD_DIR/bin
#   lib/          their shared-library closure (ldd), less what the GPU machine has itself: the glibc
#                 family, libstdc++/libgcc_s (newer there), libcuda (the driver) and cuDNN/cuBLAS
#                 (python wheels there, see device_check.sh); libcudart, Qt, ICU, oneDNN... travel
#   plugins/      Qt's offscreen platform plugin, when a binary links QtGui (QT_QPA_PLATFORM=offscreen)
#   models/       copies of MODELS_SRC/*.onnx (../shared/models does not travel to the GPU machine)
#   conformance/  the ONNX conformance cases named in CONFORMANCE_LIST (one case folder name a line)
# DEST is added to .git/info/exclude, so the device call must name it in `carry`.
# Usage: scripts/gpu/bundle.sh [BUILD_DIR=build] [DEST=.gpu-bundle] [CONFORMANCE_LIST=file]
#        (positional BUILD_DIR DEST LIST, KEY=VALUE arguments or environment variables).
# Fails (exit 1) when the packed file exceeds 60 MiB or a carried library has an unmet dependency.
set -euo pipefail

BUILD_DIR=${BUILD_DIR:-build}
DEST=${DEST:-.gpu-bundle}
CONFORMANCE_LIST=${CONFORMANCE_LIST:-}
MODELS_SRC=${MODELS_SRC:-/work/shared/models}
SUITE=${SUITE:-/usr/share/libonnx-testdata/data/node}
LIMIT_MIB=60
pos=0
for a in "$@"; do
  case "$a" in
    BUILD_DIR=*|DEST=*|CONFORMANCE_LIST=*|MODELS_SRC=*) declare "$a" ;;
    *) pos=$((pos + 1))
       case $pos in 1) BUILD_DIR=$a ;; 2) DEST=$a ;; 3) CONFORMANCE_LIST=$a ;;
         *) echo "bundle.sh: too many arguments" >&2; exit 2 ;; esac ;;
  esac
done

# Paths given relative to the caller's directory; the script then works from the repository root.
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
BUILD_DIR=$(abspath "$BUILD_DIR"); DEST=$(abspath "$DEST")
[ -n "$CONFORMANCE_LIST" ] && CONFORMANCE_LIST=$(abspath "$CONFORMANCE_LIST")
step() { echo "== $*"; }

# Libraries the GPU machine provides (or must provide itself): matched on the soname.
EXCLUDE='^(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudnn[A-Za-z0-9_]*|libcublas|libcublasLt)\.so(\..*)?$|^ld-linux'

step "1. binaries from $BUILD_DIR/bin"
[ -d "$BUILD_DIR/bin" ] || { echo "no $BUILD_DIR/bin: build first (with CUDA)"; exit 1; }
bins=()
for f in "$BUILD_DIR"/bin/bench_gpu "$BUILD_DIR"/bin/tst_cuda* "$BUILD_DIR"/bin/libpartex_cuda.so "$BUILD_DIR"/bin/bench_rowmajor; do
  [ -f "$f" ] && [ -x "$f" ] && bins+=("$f")
done
[ ${#bins[@]} -gt 0 ] || { echo "neither bench_gpu nor tst_cuda* in $BUILD_DIR/bin"; exit 1; }
printf '   %s\n' "${bins[@]##*/}"
cli="$BUILD_DIR/bin/partex-cli"
[ -x "$cli" ] || cli=""

# collect WITH_CLI: fills DEST/{bin,lib,plugins,models,conformance}, packs them and removes them.
# Returns 3 when the packed file is over the limit, 1 on an unmet dependency.
collect() {
  local with_cli=$1 f name path n
  rm -rf "$DEST"; mkdir -p "$DEST/bin" "$DEST/lib"
  local files=("${bins[@]}")
  if [ "$with_cli" = 1 ]; then files+=("$cli"); fi
  cp -L "${files[@]}" "$DEST/bin/"

  step "2. shared-library closure (ldd)$([ "$with_cli" = 1 ] && echo ', partex-cli included')"
  local scan=("${files[@]}")
  # The offscreen platform plugin for binaries that link QtGui (QGuiApplication in QTEST_MAIN).
  local deps
  deps=$(ldd "${files[@]}" 2>/dev/null || true)   # not piped into grep -q: SIGPIPE + pipefail
  if [[ "$deps" == *libQt6Gui.so* ]]; then
    local plugdir
    plugdir=$(qtpaths6 --query QT_INSTALL_PLUGINS 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/qt6/plugins)
    if [ -f "$plugdir/platforms/libqoffscreen.so" ]; then
      mkdir -p "$DEST/plugins/platforms"
      cp -L "$plugdir/platforms/libqoffscreen.so" "$DEST/plugins/platforms/"
      scan+=("$plugdir/platforms/libqoffscreen.so")
      echo "   plugins/platforms/libqoffscreen.so (QtGui is linked)"
    fi
  fi
  # ldd already lists the transitive closure; its lines are "soname => path (addr)",
  # "soname => not found" or "/path/ld-linux... (addr)".
  local missing=0 carried=0 excluded=()
  while read -r name path; do
    if [[ "$name" =~ $EXCLUDE ]]; then excluded+=("$name"); continue; fi
    if [ "$path" = "not" ]; then echo "   NOT FOUND: $name"; missing=1; continue; fi
    cp -L "$path" "$DEST/lib/$name"; carried=$((carried + 1))
  done < <(ldd "${scan[@]}" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }' | sort -u)
  echo "   carried $carried libraries ($(du -sh "$DEST/lib" | cut -f1) unpacked)"
  echo "   left to the GPU machine: $(printf '%s\n' "${excluded[@]}" | sort -u | tr '\n' ' ')"
  [ $missing = 0 ] || { echo "   unmet dependencies here: fix the build first"; return 1; }

  # Closure check independent of this machine's library paths: every DT_NEEDED of a carried
  # binary, plugin or library is either carried or excluded.
  for f in "$DEST"/bin/* "$DEST"/lib/* $(ls "$DEST"/plugins/platforms/* 2>/dev/null); do
    for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ "$n" =~ $EXCLUDE ]] || [ -f "$DEST/lib/$n" ] || { echo "   ${f##*/} needs $n: not carried"; missing=1; }
    done
  done
  [ $missing = 0 ] || return 1
  echo "   closure check: every dependency carried or left to the GPU machine"
  # The GPU machine's own glibc and libstdc++ must be at least these (Ubuntu 24.04: 2.39, 3.4.33).
  local vers
  vers=$(for f in "$DEST"/bin/* "$DEST"/lib/*; do objdump -T "$f" 2>/dev/null; done |
         grep -oE 'GLIBC_2\.[0-9]+|GLIBCXX_3\.4\.[0-9]+' | sort -u -V |
         awk -F_ '{ top[$1] = $2 } END { printf "GLIBC %s, GLIBCXX %s", top["GLIBC"], top["GLIBCXX"] }')
  echo "   newest symbol versions needed: $vers"

  step "3. models from $MODELS_SRC"
  mkdir -p "$DEST/models"
  if ls "$MODELS_SRC"/*.onnx >/dev/null 2>&1; then
    cp -L "$MODELS_SRC"/*.onnx "$DEST/models/"
    echo "   $(ls "$DEST/models" | wc -l) models ($(du -sh "$DEST/models" | cut -f1))"
  else
    echo "   none found (skipped)"
  fi

  step "4. conformance cases"
  if [ -n "$CONFORMANCE_LIST" ] && [ -f "$CONFORMANCE_LIST" ]; then
    mkdir -p "$DEST/conformance"
    local ok=0 absent=0
    while read -r name; do
      name=${name%%#*}; name=${name//[[:space:]]/}
      [ -n "$name" ] || continue
      if [ -d "$SUITE/$name" ]; then cp -r "$SUITE/$name" "$DEST/conformance/"; ok=$((ok + 1))
      else echo "   not in the suite: $name"; absent=$((absent + 1)); fi
    done < "$CONFORMANCE_LIST"
    echo "   $ok cases copied, $absent absent ($(du -sh "$DEST/conformance" | cut -f1))"
  else
    echo "   no list (CONFORMANCE_LIST or the third argument): skipped"
  fi

  step "5. packing $DEST/bundle.tar.xz (xz -T2)"
  local parts=()
  for n in bin lib plugins models conformance; do [ -e "$DEST/$n" ] && parts+=("$n"); done
  tar -C "$DEST" -cf - "${parts[@]}" | xz -T2 -6 > "$DEST/bundle.tar.xz"
  (cd "$DEST" && rm -rf "${parts[@]}")
  local bytes
  bytes=$(stat -c %s "$DEST/bundle.tar.xz")
  echo "   packed size: $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB)"
  [ "$bytes" -le $((LIMIT_MIB * 1048576)) ] || return 3
}

# collect runs in a subshell with errexit on (a `collect || ...` would switch errexit off inside it).
set +e
if [ -n "$cli" ]; then
  (set -e; collect 1); rc=$?
  if [ $rc = 3 ]; then
    echo "   over $LIMIT_MIB MiB with partex-cli: packing again without it"
    (set -e; collect 0); rc=$?
  fi
else
  echo "   (no partex-cli in $BUILD_DIR/bin)"
  (set -e; collect 0); rc=$?
fi
set -e
[ $rc = 3 ] && { echo "FAIL: bundle over $LIMIT_MIB MiB"; exit 1; }
[ $rc = 0 ] || { echo "FAIL: see above"; exit 1; }

step "6. .git/info/exclude"
case "$DEST" in
  "$REPO"/*)
    rel="/${DEST#"$REPO"/}/"
    excl=$(git rev-parse --git-path info/exclude)
    mkdir -p "$(dirname "$excl")"
    if grep -qxF "$rel" "$excl" 2>/dev/null; then echo "   $rel already excluded"
    else echo "$rel" >> "$excl"; echo "   added $rel"; fi
    echo "OK: $DEST/bundle.tar.xz; name '${rel:1:-1}' in the device call's carry" ;;
  *) echo "OK: $DEST/bundle.tar.xz (outside the repository: copy it in to carry it)" ;;
esac
