#!/usr/bin/env bash
# Installs the peer engines of bench/peers/onnx_peers.py (ONNX Runtime, OpenVINO, Apache
# TVM, and DeepSparse where it has a wheel) as pinned PyPI wheels into .venv-peers/, a
# virtual environment made from Debian's /usr/bin/python3. The system Python, which the
# rest of the project uses, is never touched. These are benchmark peers only: dlas itself
# builds from Debian packages alone.
#
#   scripts/peers-setup.sh                    every peer
#   scripts/peers-setup.sh --only onnxruntime  one peer (CI: ONNX Runtime alone, ~30 s)
#
# Idempotent: a stamp per peer records the pins it was installed with, so a second run
# only compares stamps (well under a second). Change a pin below and the next run
# reinstalls that peer. DLAS_PEERS_VENV moves the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${DLAS_PEERS_VENV:-.venv-peers}
PY=${DLAS_PEERS_PYTHON:-/usr/bin/python3}

# The pins (docs/decisions.md "Peer engines in a pinned virtual environment").
COMMON=(numpy==2.4.6 onnx==1.23.2)
declare -A PINS=(
  [onnxruntime]="onnxruntime==1.32.0"
  [openvino]="openvino==2026.4.1"
  # apache-tvm-ffi 0.1.15 crashes (SIGSEGV in ToJSONGraph) as soon as MetaSchedule builds a
  # candidate; 0.1.14.post0 is the oldest release the 0.27 wheel accepts and works.
  # psutil, cloudpickle and xgboost are MetaSchedule's own needs (its popen pool and the
  # XGBoost cost model); xgboost-cpu is XGBoost without the CUDA libraries.
  [tvm]="apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post0 psutil==7.2.2 cloudpickle==3.1.2 xgboost-cpu==3.2.0"
)
# DeepSparse 1.8.0 is the last release with CPython wheels (cp38-cp311; 1.9.0 is a source
# archive only) and needs onnx < 1.15 and numpy 1.x, so it lives in its own environment
# inside the first one.
DEEPSPARSE_PINS="deepsparse==1.8.0 numpy==1.26.4 onnx==1.14.1 protobuf==3.20.3"
ALL=(onnxruntime openvino tvm deepsparse)

only=()
while (($#)); do
  case "$1" in
    --only) only+=(${2//,/ }); shift 2 ;;
    --only=*) v=${1#--only=}; only+=(${v//,/ }); shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "peers-setup: unknown argument '$1' (--only onnxruntime,openvino,tvm,deepsparse)" >&2; exit 2 ;;
  esac
done
((${#only[@]})) || only=("${ALL[@]}")
for p in "${only[@]}"; do
  [[ " ${ALL[*]} " == *" $p "* ]] || { echo "peers-setup: unknown peer '$p' (${ALL[*]})" >&2; exit 2; }
done

stamp_ok() {  # stamp_ok NAME PINS: the peer was installed with exactly these pins
  [[ -f "$VENV/.stamp-$1" && "$(cat "$VENV/.stamp-$1")" == "$2" ]]
}

pip_quiet() {  # pip_quiet PYTHON ARGS...: pip, with its output only on failure
  local log
  log=$(mktemp)
  if ! "$1" -m pip install --disable-pip-version-check --no-input "${@:2}" >"$log" 2>&1; then
    tail -20 "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "peers-setup: creating $VENV from $PY ($("$PY" --version 2>&1))" >&2
  "$PY" -m venv "$VENV" || { echo "peers-setup: '$PY -m venv' failed (Debian: apt-get install python3-venv)" >&2; rm -rf "$VENV"; exit 1; }
fi

for p in "${only[@]}"; do
  if [[ $p == deepsparse ]]; then
    pins="$DEEPSPARSE_PINS"
    stamp_ok deepsparse "$pins" && continue
    ds="$VENV/deepsparse"
    [[ -x "$ds/bin/python" ]] || "$PY" -m venv "$ds"
    echo "peers-setup: installing $pins into $ds" >&2
    # --only-binary: a peer that would have to be compiled here is not installed.
    # shellcheck disable=SC2086
    if pip_quiet "$ds/bin/python" --only-binary=:all: $pins 2>/dev/null; then
      echo "$pins" >"$VENV/.stamp-deepsparse"
    else
      rm -rf "$ds"
      echo "peers-setup: deepsparse: no wheel for $("$PY" --version 2>&1) on $(uname -m); skipped" >&2
    fi
    continue
  fi
  pins="${COMMON[*]} ${PINS[$p]}"
  stamp_ok "$p" "$pins" && continue
  echo "peers-setup: installing ${PINS[$p]} into $VENV" >&2
  # shellcheck disable=SC2086
  pip_quiet "$VENV/bin/python" --only-binary=:all: ${COMMON[*]} ${PINS[$p]}
  echo "$pins" >"$VENV/.stamp-$p"
done
