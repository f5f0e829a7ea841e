#!/usr/bin/env bash
# Bundles this build for a machine that has a GPU but not the project's Debian packages
# (docs/gpu.md "Running on another machine"): bin/dlas, the GPU test binary, and every
# shared library they load that is neither the C runtime nor CUDA's (those come from the
# target machine), into DIR (default .gpu-bundle/, git-ignored). WITH_CPU_TESTS=1 adds the main
# test binary (dlas_tests), to run the ISA tests on that machine's CPU. On the target:
#   LD_LIBRARY_PATH=DIR/lib DIR/dlas hw
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
out=${1:-$root/.gpu-bundle}
rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/bin/dlas" "$out/dlas"
[ -x "$build/dlas_gpu_tests" ] && cp "$build/dlas_gpu_tests" "$out/dlas_gpu_tests"
[ "${WITH_CPU_TESTS:-0}" = 1 ] && cp "$build/dlas_tests" "$out/dlas_tests"
for bin in "$out/dlas" "$out/dlas_gpu_tests" "$out/dlas_tests"; do
  [ -e "$bin" ] || continue
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcudnn*|libcublas*|libcudart*|libcuda.so*|libnvrtc*) ;;
      *) cp -L -n "$lib" "$out/lib/" ;;
    esac
  done
done
strip --strip-unneeded "$out"/dlas* "$out"/lib/*.so* 2>/dev/null || true
tar -C "$out" -cJf "$out.tar.xz" .
du -sh "$out" "$out.tar.xz"
