#!/usr/bin/env bash
# The GPU checks in one go, on a machine with a CUDA device (docs/gpu.md): the device and its
# measured peaks, the GPU tests (tests/gpu/, `ctest -L gpu` in a build tree), per-layer
# profiles, and dlas against cuDNN and PyTorch on CUDA (bench/gpu/compare_gpu.py).
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
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$out/nvidia-smi.txt"
"$dlas" hw --peak --json > "$out/hw.json"; echo "hw: rc=$?"
"$dlas" hw | tail -3
# The CLI tests call the binary the build recorded.
cli=$(grep -a -o -m1 '/[[:alnum:]_./-]*/bin/dlas' "$tests" | head -1 || true)
if [ -n "$cli" ] && [ ! -e "$cli" ]; then mkdir -p "$(dirname "$cli")"; ln -sf "$dlas" "$cli"; fi
"$tests" 2>&1 | tee "$out/gpu-tests.log" | grep -E '^\[  (FAILED|  OK|PASSED|SKIPPED)|Failure|error' | head -60
for m in resnet50 mobilenetv2; do
  "$dlas" profile $m --device cuda --repeat 20 > "$out/profile-$m.txt" 2>&1; echo "profile $m: rc=$?"
  "$dlas" profile $m --backend cudnn --device cuda --repeat 20 > "$out/profile-$m-cudnn.txt" 2>&1
done
PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/compare_gpu.py" --dlas "$dlas" --rounds ${ROUNDS:-2} \
  --repeat ${REPEAT:-30} --json "$out/compare.json" ${MODELS:+--models $MODELS} 2>&1 | tee "$out/compare.txt"
