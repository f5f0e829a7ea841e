#!/usr/bin/env bash
# The main job: set-up, build, then the across-stack study of studies/default.toml (about
# 5-6 minutes on 2 cores) into results/study.db, its report (results/report/report.html) and
# the check of the DLAS paper's observations. `scripts/main.sh SPEC.toml` runs another study;
# rerunning resumes: variants already stored ok on this machine are not measured again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${DLAS_BUILD_DIR:-build}
SPEC=${1:-studies/default.toml}
OUT=${DLAS_RESULTS:-results}
mkdir -p "$OUT"
"$BUILD_DIR/bin/dlas" hw
"$BUILD_DIR/bin/dlas" study run "$SPEC" --db "$OUT/study.db"
"$BUILD_DIR/bin/dlas" study report "$OUT/study.db" -o "$OUT/report"
"$BUILD_DIR/bin/dlas" study observe "$OUT/study.db"
echo "report: $OUT/report/report.html (Markdown: $OUT/report/report.md)"
