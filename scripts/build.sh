#!/usr/bin/env bash
# Configures (CMake + Ninja) and builds dlas into ${DLAS_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${DLAS_BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
fi
ninja -C "$BUILD_DIR" ${DLAS_NINJA_TARGETS:-}
