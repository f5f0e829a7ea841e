#!/usr/bin/env bash
# The main job: set-up, build, then the across-stack study of studies/default.toml (about
# 12 minutes on 2 cores) into results/study.db, its report (results/report/report.html) and
# the check of the DLAS paper's observations. The default study scores accuracy on three
# small CNNs that this script first trains briefly on Fashion-MNIST (about 2 minutes, once:
# studies/models/ keeps them, so a rerun skips training). `scripts/main.sh SPEC.toml` runs
# another study; rerunning resumes: variants already stored ok on this machine are not
# measured again, also after the job was killed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${DLAS_BUILD_DIR:-build}
SPEC=${1:-studies/default.toml}
OUT=${DLAS_RESULTS:-results}
DLAS="$BUILD_DIR/bin/dlas"
mkdir -p "$OUT"
"$DLAS" hw

# The default study's trained models: zoo CIFAR architectures at a fraction of their width,
# trained for 0.3 of an epoch (a fixed seed; each file is written whole or not at all).
if [[ "$SPEC" == studies/default.toml ]]; then
  mkdir -p studies/models
  for entry in resnet18-cifar:0.25 mobilenetv1-cifar:0.5 vgg16-cifar:0.25; do
    model=${entry%%:*} width=${entry##*:}
    file=studies/models/$model-fmnist.onnx
    [[ -f "$file" ]] && continue
    echo "main: training $model (width x$width, 0.3 epoch of Fashion-MNIST) -> $file"
    "$DLAS" train "$model" --dataset fashion-mnist --width-mult "$width" --epochs 0.3 \
      --threads 2 --seed 1 --test-limit 1000 -o "$file"
  done
fi

"$DLAS" study run "$SPEC" --db "$OUT/study.db"
"$DLAS" study report "$OUT/study.db" -o "$OUT/report"
"$DLAS" study observe "$OUT/study.db"
echo "report: $OUT/report/report.html (Markdown: $OUT/report/report.md)"
