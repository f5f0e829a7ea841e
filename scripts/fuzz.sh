#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cc) with clang, ASan and UBSan, and
# runs each for SECONDS (default 60), seeded from a small corpus generated here:
# ONNX models from Debian's libonnx-testdata and a few .npy files.
#   scripts/fuzz.sh [SECONDS]
# Crash reproducers land in $DLAS_FUZZ_DIR/artifacts (default build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
DLAS_FUZZ=1 bash scripts/setup.sh  # adds clang and libFuzzer's runtime
SECONDS_PER_TARGET=${1:-60}
BUILD_DIR=${DLAS_FUZZ_DIR:-build-fuzz}
JOBS=${DLAS_FUZZ_JOBS:-2}
TESTDATA=/usr/share/libonnx-testdata/data

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  # fuzzer-no-link gives the library coverage instrumentation; the targets link libFuzzer.
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDLAS_FUZZ=ON -DDLAS_WITH_TORCH=OFF -DDLAS_BUILD_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
fi
ninja -C "$BUILD_DIR" -j "$JOBS" onnx_import_fuzz npy_fuzz

# --- seed corpora ----------------------------------------------------------------
CORPUS="$BUILD_DIR/corpus"
mkdir -p "$CORPUS/onnx_import" "$CORPUS/npy" "$BUILD_DIR/artifacts"
if [[ -d "$TESTDATA" && -z "$(ls -A "$CORPUS/onnx_import")" ]]; then
  # Every pytorch-converted model and every 8th node model: small, varied, valid.
  i=0
  for m in "$TESTDATA"/pytorch-converted/*/model.onnx "$TESTDATA"/node/*/model.onnx; do
    case_name=$(basename "$(dirname "$m")")
    if [[ "$m" == */node/* ]] && (( i++ % 8 != 0 )); then continue; fi
    cp "$m" "$CORPUS/onnx_import/$case_name.onnx"
  done
fi
if [[ -z "$(ls -A "$CORPUS/npy")" ]]; then
  # Hand-written .npy files: version 1.0 headers, several dtypes, shapes and orders.
  npy() {  # npy NAME DESCR SHAPE PAYLOAD_BYTES [VERSION_BYTE]
    local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    local total=$((10 + ${#header} + 1))
    local pad=$(((64 - total % 64) % 64))
    header="$header$(printf '%*s' "$pad" '')"
    local len=$((${#header} + 1))
    {
      printf '\x93NUMPY\x01\x00'
      printf "\\x$(printf '%02x' $((len & 255)))\\x$(printf '%02x' $((len >> 8)))"
      printf '%s\n' "$header"
      head -c "$4" /dev/urandom
    } >"$CORPUS/npy/$1.npy"
  }
  npy f32_2x3 '<f4' '(2, 3)' 24
  npy f32_scalar '<f4' '()' 4
  npy f32_empty '<f4' '(0, 5)' 0
  npy f64_4 '<f8' '(4,)' 32
  npy f16_1x2x2 '<f2' '(1, 2, 2)' 8
  npy i8_7 '|i1' '(7,)' 7
  npy u8_3x1 '|u1' '(3, 1)' 3
  npy i32_2 '<i4' '(2,)' 8
  npy i64_1x1x1x3 '<i8' '(1, 1, 1, 3)' 24
  npy bool_5 '|b1' '(5,)' 5
  # Fortran order and a big-endian dtype (rejected or converted, never crashing).
  printf '\x93NUMPY\x01\x00\x76\x00%-117s\n' \
    "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }" >"$CORPUS/npy/fortran.npy"
  head -c 16 /dev/urandom >>"$CORPUS/npy/fortran.npy"
  printf '\x93NUMPY\x01\x00\x76\x00%-117s\n' \
    "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }" >"$CORPUS/npy/big_endian.npy"
  head -c 12 /dev/urandom >>"$CORPUS/npy/big_endian.npy"
fi

# --- run --------------------------------------------------------------------------
REPORT_LINES='^(Done|INFO: seed corpus|==[0-9]+==ERROR|SUMMARY|stat::number_of_executed_units)'
REPORT_LINES+='|[Tt]est unit written'
status=0
for target in onnx_import npy; do
  echo "== fuzzing ${target} for ${SECONDS_PER_TARGET}s"
  # Work on a copy so new inputs do not grow the seed folder between runs.
  work="$BUILD_DIR/work_$target"
  mkdir -p "$work"
  log="$BUILD_DIR/${target}_fuzz.log"
  rc=0
  "$BUILD_DIR/${target}_fuzz" "$work" "$CORPUS/$target" \
    -max_total_time="$SECONDS_PER_TARGET" -max_len=262144 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$BUILD_DIR/artifacts/${target}_" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  grep -E "$REPORT_LINES" "$log" || true
  if [[ $rc -ne 0 ]]; then
    echo "!! ${target}: the fuzzer found a problem (exit $rc); see $log and $BUILD_DIR/artifacts/"
    status=1
  fi
done
exit $status
