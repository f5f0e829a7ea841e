#!/usr/bin/env bash
# The main job: set-up, build, then show a zoo model, run it once and benchmark it on the engine.
# (Later issues grow this into the across-stack study.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${DLAS_BUILD_DIR:-build}
MODEL=${1:-resnet18-cifar}
"$BUILD_DIR/bin/dlas" info "$MODEL"
"$BUILD_DIR/bin/dlas" run "$MODEL" --seed 1
"$BUILD_DIR/bin/dlas" bench "$MODEL" --seed 1 --threads "${DLAS_THREADS:-0}" --repeat 50
