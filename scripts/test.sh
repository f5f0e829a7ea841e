#!/usr/bin/env bash
# The test command: set-up, build, then every test (unit, ONNX conformance,
# zoo, libtorch cross-check, CLI end to end) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${DLAS_BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" "$@"
