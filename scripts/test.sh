#!/usr/bin/env bash
# The test command: set-up, build, then every test (unit, ONNX conformance,
# zoo, libtorch cross-check, CLI end to end) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${DLAS_BUILD_DIR:-build}
cd "$BUILD_DIR"
# Two test processes per core pair: pool workers sleep between loops instead of spinning
# (DLAS_POOL_YIELD, docs/cli.md), or each process's spinners starve the other's workers.
DLAS_POOL_YIELD=1 ctest --output-on-failure -j "$(nproc)" "$@"
