#!/usr/bin/env bash
# The GPU checks in one go, on a machine with a CUDA device (docs/gpu.md): the device and its
# measured peaks, the GPU tests (tests/gpu/, `ctest -L gpu` in a build tree), per-layer
# profiles, GPU tuning, pruned and batched models, and dlas against cuDNN and PyTorch on
# CUDA (bench/gpu/compare_gpu.py). STEPS (default all, in this order) picks: hw, tests,
# calibrate, compare, half, profile, tune, sparse, batch, study (studies/gpu.toml: CPU and
# GPU rows in one store, and its report); and, only when named, cpu: the host CPU's figures
# at 2 threads pinned to cores 2 and 3 (bench/compress_matrix.py: dense, oneDNN, int8, fp16,
# bf16 on the zoo, then bf16 with --layout nchwc), the AVX-512/AMX numbers a GPU machine's
# Sapphire Rapids host gives. The calibration writes this GPU's profile to the cache, so the
# steps after it run the measured auto rule.
#   scripts/gpu-check.sh [DIR] [OUT]
# DIR: a build tree (build/) or a bundle from scripts/gpu-bundle.sh (its lib/ joins the
# library path); OUT: where the logs go (default gpu-check-out/).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
out=${2:-$root/gpu-check-out}
mkdir -p "$out"
if [ -x "$dir/bin/dlas" ]; then dlas=$dir/bin/dlas; tests=$dir/dlas_gpu_tests; else
  dlas=$dir/dlas; tests=$dir/dlas_gpu_tests; export LD_LIBRARY_PATH=$dir/lib:${LD_LIBRARY_PATH:-}
fi
# cuDNN and cuBLAS where the CUDA toolkit lacks them (PyTorch's wheels carry them).
for lib in libcudnn.so.9 libcublas.so.13; do
  if ! ldconfig -p | grep -q "$lib" && [ ! -e /usr/local/cuda/lib64/$lib ]; then
    found=$(find / -name "$lib" -not -path '/proc/*' 2>/dev/null | head -1)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):$LD_LIBRARY_PATH
  fi
done
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
steps=${STEPS:-hw tests calibrate compare half profile tune sparse batch study}
want() { [[ " $steps " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$out/nvidia-smi.txt"
if want hw; then
"$dlas" hw --peak --json > "$out/hw.json"; echo "hw: rc=$?"
"$dlas" hw | tail -3
fi
# The CLI tests call the binary the build recorded.
cli=$(grep -a -o -m1 '/[[:alnum:]_./-]*/bin/dlas' "$tests" | head -1 || true)
if [ -n "$cli" ] && [ ! -e "$cli" ]; then mkdir -p "$(dirname "$cli")"; ln -sf "$dlas" "$cli"; fi
want tests && "$tests" 2>&1 | tee "$out/gpu-tests.log" | grep -E '^\[  (FAILED|  OK|PASSED|SKIPPED)|Failure|error' | head -60
if want calibrate; then
  "$dlas" hw --calibrate --device cuda > "$out/calibrate.txt" 2>&1; echo "calibrate: rc=$?"
  head -1 "$out/calibrate.txt"
fi
want compare && PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/compare_gpu.py" --dlas "$dlas" --rounds ${ROUNDS:-2} \
  --repeat ${REPEAT:-30} --json "$out/compare.json" ${MODELS:+--models $MODELS} 2>&1 | tee "$out/compare.txt"
# fp16: dlas (GPU profile, hand-written rule, tuned for TUNE16 seconds) against cuDNN fp16 on
# the 8 zoo models; then bf16 and the arena of each type on two of them.
if want half; then
  PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/compare_gpu.py" --dlas "$dlas" --compress fp16 \
    --tune ${TUNE16:-8} --rounds ${ROUNDS:-1} --repeat ${REPEAT:-30} --json "$out/compare-fp16.json" \
    --models ${MODELS16:-resnet18-cifar,mobilenetv1-cifar,mobilenetv2-cifar,vgg16-cifar,resnet50,mobilenetv2,densenet161,efficientnetb0} \
    2>&1 | tee "$out/compare-fp16.txt"
  for m in resnet50 mobilenetv2; do
    for c in dense fp16 bf16; do
      printf '%s %s: ' $m $c
      "$dlas" bench $m --device cuda --compress $c --repeat 50 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(round(j["kernel_median_ms"],4), "ms kernels", j["arena_bytes"], "arena bytes")'
    done
  done 2>&1 | tee "$out/half.txt"
fi
if want profile; then
for m in resnet50 mobilenetv2; do
  "$dlas" profile $m --device cuda --repeat 20 > "$out/profile-$m.txt" 2>&1; echo "profile $m: rc=$?"
  "$dlas" profile $m --backend cudnn --device cuda --repeat 20 > "$out/profile-$m-cudnn.txt" 2>&1
done
fi
# Tuning: each model's report, then its records applied by bench (a transfer check).
if want tune; then
for m in ${TUNE_MODELS:-resnet18-cifar mobilenetv2 resnet50}; do
  "$dlas" tune $m --device cuda --budget ${TUNE_BUDGET:-60s} -o "$out/tune-$m.jsonl" \
    > "$out/tune-$m.txt" 2>&1; echo "tune $m: rc=$?"; tail -3 "$out/tune-$m.txt"
done
fi
# Weight-pruned models: dense, pruned on the auto rule (sparse), and cuDNN on the zeros.
if want sparse; then
for m in resnet50 vgg16-cifar resnet18-cifar; do
  wp=wp:0.9; [ $m = resnet18-cifar ] && wp=wp:0.95:layer
  for args in "--device cuda" "--device cuda --compress $wp" "--backend cudnn --compress $wp"; do
    printf '%s %s: ' $m "$args"
    "$dlas" bench $m $args --repeat 50 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(round(j["kernel_median_ms"],4), "ms kernels")'
  done
done 2>&1 | tee "$out/sparse.txt"
fi
# Batch 64: resnet50 in fp32 and fp16 (tiled and tensor-core gemm) against cuDNN, and the
# per-layer profile of its fp16 3x3 convs (the share of the tensor-core peak).
if want batch; then
for args in "--device cuda" "--backend cudnn" "--device cuda --compress fp16" \
            "--device cuda --compress fp16 --conv-algo gemm:tc=1" "--backend cudnn --compress fp16"; do
  printf 'resnet50 batch 64 %s: ' "$args"
  "$dlas" bench resnet50 --batch 64 $args --repeat 10 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(round(j["kernel_median_ms"],4), "ms kernels", round(j["kernel_gflops"]), "GFLOP/s")'
done 2>&1 | tee "$out/batch.txt"
"$dlas" profile resnet50 --device cuda --compress fp16 --batch 64 --repeat 5 > "$out/profile-resnet50-b64-fp16.txt" 2>&1
fi
if want cpu; then
  PYTHONUNBUFFERED=1 taskset -c 2,3 python3 "$root/bench/compress_matrix.py" --dlas "$dlas" \
    --compress dense,onednn,int8,fp16,bf16 --threads 2 --rounds ${ROUNDS:-2} --repeat 10 \
    ${MODELS:+--models $MODELS} --json "$out/cpu-matrix.json" > "$out/cpu-matrix.txt" 2> "$out/cpu-matrix.log"
  echo "cpu matrix: rc=$?"; cat "$out/cpu-matrix.txt"
  PYTHONUNBUFFERED=1 taskset -c 2,3 python3 "$root/bench/compress_matrix.py" --dlas "$dlas" \
    --compress dense,bf16 --engine-args "--layout nchwc" --threads 2 --rounds ${ROUNDS:-2} \
    --repeat 10 ${MODELS:+--models $MODELS} > "$out/cpu-bf16-nchwc.txt" 2>> "$out/cpu-matrix.log"
  echo "cpu bf16 on blocks: rc=$?"; cat "$out/cpu-bf16-nchwc.txt"
fi
if want study; then
  "$dlas" study run "$root/studies/gpu.toml" --db "$out/gpu-study.db" > "$out/study.txt" 2>&1
  echo "study: rc=$?"; tail -3 "$out/study.txt"
  "$dlas" study report "$out/gpu-study.db" -o "$out/gpu-study-report" --no-plots > /dev/null 2>&1
  echo "study report: rc=$?"
fi
