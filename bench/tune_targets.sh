#!/usr/bin/env bash
# The tuner's three targets, measured with fixed seeds at batch 1:
#  (a) untuned vs tuned:BUDGET (early stop by PHI) on the four CIFAR zoo models (best algorithm each side:
#      untuned = the fastest of --conv-algo auto|direct|gemm|spatial-pack|winograd, tuned =
#      `dlas tune` over every algorithm); target: mean speedup >= 1.3. Also reported: the
#      speedup over the fastest single algorithm (auto excluded: the paper's untuned
#      baseline, one algorithm per model at default knobs), and the ceiling: the speedup
#      over auto if every non-Winograd conv of the untuned model ran at the machine's
#      measured peak (`dlas profile`), an upper bound on what knob tuning can give;
#  (b) resnet18-cifar: a LONG evolutionary run (--phi 0), the time its curve first comes
#      within 95% of the run's best latency (target <= 60 s), and evolutionary vs random
#      search at EQUAL_TRIALS trials each (target: evolutionary faster);
#  (c) resnet18-cifar: survey tuning (early stop by --phi) vs sequential per-layer tuning
#      (--mode sequential: --patience / --task-trials per task), both capped at CAP, survey
#      with early-stop threshold PHI:
#      tuning time and final latency (target: survey <= 50% of the time, <= 3% slower).
# A tuned model runs the tuner's final choices (`dlas tune --choices`, the fastest whole
# model it timed, applied with --layers); part (a) also benches the per-task best records
# (--records) as `records_ms`. Final latencies are `dlas bench` medians, ROUNDS rounds
# over all variants of a part (interleaved, so a slow stretch of a shared machine hits
# every variant), min over rounds.
# Prints a table and one JSON object (also OUT/summary.json); every tune's JSON and
# records stay in OUT.
# With several --seeds, every tune except the long run is repeated once per tuning seed
# (search and measurement noise differ from run to run by a few %, the size of the
# targets' margins) and the targets judge the means over seeds; per-seed figures are kept.
#   bench/tune_targets.sh [--budget 120s] [--long 600s] [--equal-trials 1000] [--cap 1200s] [--phi 0.0005]
#                         [--threads 2] [--seeds "1 2 3"] [--repeat 50] [--rounds 3]
#                         [--models "resnet18-cifar ..."] [--parts abc] [--out DIR]
# The full run takes about 4 x BUDGET + LONG + 2 x EQUAL_TRIALS trials + 2 x CAP (at most)
# plus the benches; a short one: --budget 10s --long 40s --equal-trials 150 --cap 60s.
set -euo pipefail
cd "$(dirname "$0")/.."

BUDGET=120s
LONG=600s
EQUAL_TRIALS=1000
CAP=1200s
PHI=0.0005
THREADS=2
SEEDS=1
REPEAT=50
ROUNDS=3
MODELS="resnet18-cifar mobilenetv1-cifar mobilenetv2-cifar vgg16-cifar"
PARTS=abc
OUT=results/tune-targets
DLAS=${DLAS:-build/bin/dlas}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget) BUDGET=$2 ;;
    --long) LONG=$2 ;;
    --equal-trials) EQUAL_TRIALS=$2 ;;
    --cap) CAP=$2 ;;
    --phi) PHI=$2 ;;
    --threads) THREADS=$2 ;;
    --seed | --seeds) SEEDS=$2 ;;
    --repeat) REPEAT=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --models) MODELS=$2 ;;
    --parts) PARTS=$2 ;;
    --out) OUT=$2 ;;
    -h | --help)
      sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "tune_targets.sh: unknown argument '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  shift 2
done
[[ -x "$DLAS" ]] || {
  echo "tune_targets.sh: $DLAS not built (cmake --build build --target dlas_cli)" >&2
  exit 2
}
mkdir -p "$OUT"
BENCH="$OUT/bench.tsv"
: >"$BENCH"
log() { echo "[tune_targets $(date +%H:%M:%S)] $*" >&2; }

# tune NAME MODEL ARGS...: dlas tune's JSON to OUT/NAME.json, records to OUT/NAME.jsonl.
tune() {
  local name=$1 model=$2
  shift 2
  log "tune $model $* -> $OUT/$name.json"
  "$DLAS" tune "$model" --threads "$THREADS" --tune-seed "$TSEED" --json -o "$OUT/$name.jsonl" \
    --choices "$OUT/$name.choices.json" "$@" >"$OUT/$name.json" 2>"$OUT/$name.log"
}
# bench PART MODEL VARIANT ARGS...: one median into bench.tsv.
bench() {
  local part=$1 model=$2 variant=$3
  shift 3
  local ms
  ms=$("$DLAS" bench "$model" --threads "$THREADS" --repeat "$REPEAT" --json "$@" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
  printf '%s\t%s\t%s\t%s\n' "$part" "$model" "$variant" "$ms" >>"$BENCH"
}

UNTUNED_ALGOS="auto direct gemm spatial-pack winograd"
if [[ $PARTS == *a* ]]; then
  for TSEED in $SEEDS; do
    for m in $MODELS; do tune "a-$m-s$TSEED" "$m" --budget "$BUDGET" --phi "$PHI"; done
  done
  for r in $(seq "$ROUNDS"); do
    log "part a: bench round $r/$ROUNDS"
    for m in $MODELS; do
      for a in $UNTUNED_ALGOS; do bench a "$m" "untuned:$a" --conv-algo "$a"; done
      for sd in $SEEDS; do
        bench a "$m" "tuned-s$sd" --layers "$OUT/a-$m-s$sd.choices.json"
        bench a "$m" "records-s$sd" --records "$OUT/a-$m-s$sd.jsonl"
      done
    done
  done
  for m in $MODELS; do
    "$DLAS" profile "$m" --threads "$THREADS" --repeat "$REPEAT" --json >"$OUT/a-$m.profile.json"
  done
fi
R18=resnet18-cifar
if [[ $PARTS == *b* ]]; then
  TSEED=${SEEDS%% *}
  tune b-long "$R18" --budget "$LONG" --phi 0 --strategy evolutionary
  for TSEED in $SEEDS; do
    for s in evolutionary random; do
      tune "b-$s-s$TSEED" "$R18" --budget "${EQUAL_TRIALS}trials" --phi 0 --strategy "$s"
    done
  done
  for r in $(seq "$ROUNDS"); do
    log "part b: bench round $r/$ROUNDS"
    bench b "$R18" long --layers "$OUT/b-long.choices.json"
    for sd in $SEEDS; do
      for s in evolutionary random; do
        bench b "$R18" "$s-s$sd" --layers "$OUT/b-$s-s$sd.choices.json"
      done
    done
  done
fi
if [[ $PARTS == *c* ]]; then
  for TSEED in $SEEDS; do
    tune "c-survey-s$TSEED" "$R18" --budget "$CAP" --mode survey --phi "$PHI"
    tune "c-sequential-s$TSEED" "$R18" --budget "$CAP" --mode sequential
  done
  for r in $(seq "$ROUNDS"); do
    log "part c: bench round $r/$ROUNDS"
    bench c "$R18" untuned
    for sd in $SEEDS; do
      for s in survey sequential; do bench c "$R18" "$s-s$sd" --layers "$OUT/c-$s-s$sd.choices.json"; done
    done
  done
fi

python3 - "$OUT" "$PARTS" "$MODELS" "$THREADS" "$SEEDS" "$BUDGET" "$LONG" "$EQUAL_TRIALS" "$CAP" "$PHI" <<'EOF'
import json, math, os, sys
out, parts, models, threads, seeds, budget, long_, equal, cap, phi = sys.argv[1:]
seeds = seeds.split()
bench = {}
for line in open(os.path.join(out, "bench.tsv")):
    part, model, variant, ms = line.rstrip("\n").split("\t")
    bench.setdefault((part, model, variant), []).append(float(ms))
best = {k: min(v) for k, v in bench.items()}
def tj(name):
    return json.load(open(os.path.join(out, name + ".json")))
def mean(v):
    return sum(v) / len(v)
def fmt(v, f="{:.3f}"):
    return " ".join(f.format(x) for x in v)
s = {"threads": int(threads), "seeds": [int(x) for x in seeds], "budget": budget,
     "long": long_, "equal_trials": int(equal), "cap": cap, "phi": float(phi)}
rows = []
R18 = "resnet18-cifar"
if "a" in parts:
    per = []
    for m in models.split():
        un = {k[2].split(":", 1)[1]: v for k, v in best.items()
              if k[:2] == ("a", m) and k[2].startswith("untuned:")}
        algo = min(un, key=un.get)
        fixed = min((a for a in un if a != "auto"), key=un.get)
        # Ceiling: every conv except Winograd (which beats the direct-MAC peak) at peak.
        prof = tj("a-" + m + ".profile")
        pk = prof["peak_gflops"] * 1e9
        saved = sum(max(0.0, st["ms"] - 2e3 * st["macs"] / pk) for st in prof["steps"]
                    if st["macs"] > 0 and st["kernel"] != "winograd")
        tuned = [best[("a", m, "tuned-s" + sd)] for sd in seeds]
        ts = [tj(f"a-{m}-s{sd}") for sd in seeds]
        per.append({"model": m, "untuned_best_ms": un[algo], "untuned_best_algo": algo,
                    "untuned_ms_by_algo": un, "tuned_ms": mean(tuned),
                    "tuned_ms_by_seed": tuned, "speedup": un[algo] / mean(tuned),
                    "speedup_by_seed": [un[algo] / t for t in tuned],
                    "untuned_fixed_algo": fixed, "untuned_fixed_ms": un[fixed],
                    "speedup_vs_fixed": un[fixed] / mean(tuned),
                    "ceiling_speedup": prof["total_ms"] / (prof["total_ms"] - saved),
                    "records_ms": mean([best[("a", m, "records-s" + sd)] for sd in seeds]),
                    "tuning_seconds": mean([t["tuning_seconds"] for t in ts]),
                    "tuning_seconds_by_seed": [t["tuning_seconds"] for t in ts],
                    "trials": mean([t["trials"] for t in ts]),
                    "tuner_speedup": mean([t["speedup"] for t in ts])})
        p = per[-1]
        rows.append(("a", m, f"untuned {un[algo]:.3f} ms ({algo}) -> tuned {p['tuned_ms']:.3f} ms "
                     f"in {p['tuning_seconds']:.1f} s", f"{p['speedup']:.2f}x"))
        rows.append(("a", m, f"  by seed {fmt(p['speedup_by_seed'], '{:.2f}x')}; vs {fixed} alone "
                     f"{un[fixed]:.3f} ms; ceiling over auto",
                     f"{p['speedup_vs_fixed']:.2f}x; {p['ceiling_speedup']:.2f}x"))
    sp = [p["speedup"] for p in per]
    s["a"] = {"models": per, "mean_speedup": mean(sp),
              "mean_speedup_vs_fixed": mean([p["speedup_vs_fixed"] for p in per]),
              "mean_ceiling_speedup": mean([p["ceiling_speedup"] for p in per]),
              "geomean_speedup": math.exp(sum(map(math.log, sp)) / len(sp)),
              "target": "mean speedup >= 1.3", "met": mean(sp) >= 1.3}
    rows.append(("a", "mean", "tuned vs untuned, best algorithm each", f"{mean(sp):.2f}x"))
    rows.append(("a", "mean", "tuned vs the fastest single algorithm; ceiling over auto",
                 f"{s['a']['mean_speedup_vs_fixed']:.2f}x; {s['a']['mean_ceiling_speedup']:.2f}x"))
if "b" in parts:
    lj = tj("b-long")
    curve = lj["curve"][1:]  # point 0 is the untuned model
    bl = min(p["latency_ms"] for p in curve)
    hit = next(p for p in curve if p["latency_ms"] <= bl / 0.95)
    ev = [best[("b", R18, "evolutionary-s" + sd)] for sd in seeds]
    ra = [best[("b", R18, "random-s" + sd)] for sd in seeds]
    evj = [tj("b-evolutionary-s" + sd) for sd in seeds]
    raj = [tj("b-random-s" + sd) for sd in seeds]
    s["b"] = {"long_seconds": lj["tuning_seconds"], "long_trials": lj["trials"],
              "long_best_ms": bl, "long_bench_ms": best[("b", R18, "long")],
              "t95_seconds": hit["seconds"], "t95_trials": hit["trials"],
              "evolutionary_bench_ms": mean(ev), "random_bench_ms": mean(ra),
              "evolutionary_bench_ms_by_seed": ev, "random_bench_ms_by_seed": ra,
              "evolutionary_tuner_ms_by_seed": [j["tuned_ms"] for j in evj],
              "random_tuner_ms_by_seed": [j["tuned_ms"] for j in raj],
              "evolutionary_seconds": mean([j["tuning_seconds"] for j in evj]),
              "random_seconds": mean([j["tuning_seconds"] for j in raj]),
              "target": "t95 <= 60 s and evolutionary < random at equal trials (means over seeds)"}
    b = s["b"]
    b["met"] = b["t95_seconds"] <= 60 and b["evolutionary_bench_ms"] < b["random_bench_ms"]
    rows.append(("b", R18, f"long run best {bl:.3f} ms; 95% of it after", f"{hit['seconds']:.1f} s"))
    rows.append(("b", R18, f"{equal} trials: evolutionary {mean(ev):.3f} ms vs random",
                 f"{mean(ra):.3f} ms"))
    rows.append(("b", R18, f"  by seed: evolutionary {fmt(ev)} vs random", fmt(ra)))
if "c" in parts:
    sv = [tj("c-survey-s" + sd) for sd in seeds]
    sq = [tj("c-sequential-s" + sd) for sd in seeds]
    ls = [best[("c", R18, "survey-s" + sd)] for sd in seeds]
    lq = [best[("c", R18, "sequential-s" + sd)] for sd in seeds]
    c = {"survey_seconds": mean([j["tuning_seconds"] for j in sv]),
         "sequential_seconds": mean([j["tuning_seconds"] for j in sq]),
         "survey_seconds_by_seed": [j["tuning_seconds"] for j in sv],
         "sequential_seconds_by_seed": [j["tuning_seconds"] for j in sq],
         "survey_retime_seconds": mean([j["retime_seconds"] for j in sv]),
         "sequential_retime_seconds": mean([j["retime_seconds"] for j in sq]),
         "survey_trials": mean([j["trials"] for j in sv]),
         "sequential_trials": mean([j["trials"] for j in sq]),
         "survey_stop": [j["stop_reason"] for j in sv],
         "sequential_stop": [j["stop_reason"] for j in sq],
         "untuned_bench_ms": best[("c", R18, "untuned")],
         "survey_bench_ms": mean(ls), "sequential_bench_ms": mean(lq),
         "survey_bench_ms_by_seed": ls, "sequential_bench_ms_by_seed": lq,
         "target": "time_ratio <= 0.5 and latency_ratio <= 1.03 (means over seeds)"}
    c["time_ratio"] = c["survey_seconds"] / c["sequential_seconds"]
    c["latency_ratio"] = c["survey_bench_ms"] / c["sequential_bench_ms"]
    c["met"] = c["time_ratio"] <= 0.5 and c["latency_ratio"] <= 1.03
    s["c"] = c
    rows.append(("c", R18, f"survey {c['survey_seconds']:.1f} s / {mean(ls):.3f} ms vs sequential "
                 f"{c['sequential_seconds']:.1f} s / {mean(lq):.3f} ms",
                 f"time x{c['time_ratio']:.2f}, latency x{c['latency_ratio']:.3f}"))
    rows.append(("c", R18, f"  by seed: survey {fmt(ls)} vs sequential", fmt(lq)))
for r in rows:
    print(f"{r[0]}  {r[1]:<18} {r[2]:<78} {r[3]}")
for k in "abc":
    if k in s:
        print(f"target {k}: {s[k]['target']}: {'met' if s[k]['met'] else 'NOT met'}")
tmp = os.path.join(out, "summary.json.tmp")
with open(tmp, "w") as f:
    json.dump(s, f, indent=2)
os.replace(tmp, os.path.join(out, "summary.json"))
print(json.dumps(s, indent=2))
EOF
