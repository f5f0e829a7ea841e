#!/usr/bin/env bash
# Installs the Debian packages dlas needs. Idempotent: when every package is
# already installed it only checks (well under a second) and touches nothing.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config git         # build
  libprotobuf-dev protobuf-compiler libonnx-dev # ONNX protobuf classes (import/export)
  nlohmann-json3-dev libcli11-dev               # JSON output; command-line parsing
  libtorch-dev                                  # independent reference and the training engine
  libgtest-dev libgmock-dev libbenchmark-dev    # tests and microbenchmarks
  libonnx-testdata                              # ONNX backend conformance cases
  libcpuinfo-dev                                # CPU feature detection (layer 6)
  libpthreadpool-dev                            # the engine's thread pool (docs/decisions.md)
  libdnnl-dev                                   # oneDNN: the vendor-library backend and peer
  libsqlite3-dev                                # results store (study)
  libtomlplusplus-dev                           # study specs (TOML, with line/column positions)
  gnuplot-nox                                   # study report plots (SVG/PNG)
  chromium                                      # tests: the study report rendered headless
  libopenmpi-dev openmpi-bin                    # mpirun -n K dlas study run (scale-out)
  zlib1g-dev                                    # gzip'd IDX datasets
  libxgboost-dev                                # the auto-tuner's cost model (dlas tune)
  dataset-fashion-mnist                         # the default real dataset
  libjpeg-dev libpng-dev                        # image-folder datasets (JPEG via libjpeg-turbo, PNG)
  python3-torch python3-torchvision python3-onnx python3-numpy  # PyTorch-exported ONNX cross-checks
)
if [[ "${DLAS_FUZZ:-0}" == 1 ]]; then PACKAGES+=(clang libclang-rt-14-dev libfuzzer-14-dev); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) != 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done" >&2
