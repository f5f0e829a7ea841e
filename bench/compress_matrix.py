#!/usr/bin/python3
"""The compression regression guard: every zoo model x every compression, at batch 1 and the
same thread count, interleaved round by round, each as its ratio to the same model's dense
fp32 measured in the same rounds (> 1: slower than fp32).

Each round runs every (model, compression) once as one `dlas bench MODEL --compress C --json
--times` process, in an order rotated by one place per round, so no variant always runs first
or next to the same neighbour. Every repeat's time is pooled over the rounds and the median of
the pool is the headline. A variant whose plan runs any step on a reference kernel, or any
step on emulated 16-bit arithmetic (widened to f32: everywhere on a CPU with no fp16/bf16 unit,
on the steps without a native kernel elsewhere), is labelled in the table with the count: the
first is a cliff to fix, the second the hardware's or the kernels' answer.

The column `onednn` is the dense fp32 model on the oneDNN backend (`--backend onednn`), the
yardstick of "int8 at most 0.5x oneDNN's fp32": with it, a second table gives every column's
ratio to oneDNN's time. `--engine-args` adds engine flags to every dlas process (e.g.
"--layout nchwc", to compare a layout's 16-bit plans).

usage:
  compress_matrix.py [--models M,..] [--compress dense,onednn,int8,..] [--threads 2]
                     [--rounds 3] [--repeat 20] [--engine-args "..."] [--realtime]
                     [--json out.json] [--dlas build/bin/dlas]
  compress_matrix.py --quick     resnet18-cifar and mobilenetv2-cifar, 1 round, 3 repeats
  compress_matrix.py --dry-run   print the interleaved schedule and exit
Standard library only. Progress goes to stderr, the Markdown table to stdout.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ZOO = ["resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar", "vgg16-cifar", "resnet50",
       "mobilenetv2", "densenet161", "efficientnetb0"]
COMPRESS = ["dense", "int8", "fp16", "bf16", "wp:0.9:layer", "cp:0.5", "wp:0.9:layer+int8"]


def log(msg):
    sys.stderr.write(f"[compress {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def csv(s):
    return [w.strip() for w in s.split(",") if w.strip()]


def bench(a, model, compress):
    what = ["--backend", "onednn"] if compress == "onednn" else ["--compress", compress]
    cmd = (["chrt", "-f", "10"] if a.realtime else []) + [
        a.dlas, "bench", model, *what, "--threads", str(a.threads),
        "--repeat", str(a.repeat), "--warmup", "1", "--json", "--times",
        *shlex.split(a.engine_args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def label(j):
    notes = []
    if j.get("reference_steps"):
        notes.append(f"{j['reference_steps']} reference steps")
    if j.get("emulated_steps"):
        n = j["emulated_steps"]
        notes.append(f"{n} step{'s' if n > 1 else ''} on emulated 16-bit (widened to f32)")
    return ", ".join(notes)


def table(a, results):
    comps = a.compress
    lines = [f"{a.threads} thread(s), batch 1, median of {a.rounds} interleaved rounds x "
             f"{a.repeat} repeats; each cell: ms (ratio to dense fp32; < 1 is faster)", "",
             "| model | " + " | ".join(comps) + " |",
             "|---|" + "---:|" * len(comps)]
    notes = []
    for m in a.models:
        base = results.get((m, "dense"), {}).get("median_ms")
        cells = []
        for c in comps:
            r = results.get((m, c))
            if not r or r.get("median_ms") is None:
                cells.append(r.get("error", "–") if r else "–")
                continue
            cell = f"{r['median_ms']:.2f}"
            if base and c != "dense":
                cell += f" ({r['median_ms'] / base:.2f}×)"
            if r.get("label"):
                cell += " †"
                notes.append(f"† {m} {c}: {r['label']}")
            cells.append(cell)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    if "onednn" in comps:
        others = [c for c in comps if c != "onednn"]
        lines += ["", "Ratio to oneDNN's dense fp32 in the same rounds (< 1: faster than oneDNN):",
                  "", "| model | " + " | ".join(others) + " |", "|---|" + "---:|" * len(others)]
        for m in a.models:
            ref = results.get((m, "onednn"), {}).get("median_ms")
            cells = []
            for c in others:
                t = results.get((m, c), {}).get("median_ms")
                cells.append(f"{t / ref:.2f}×" if t and ref else "–")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines + ([""] + sorted(set(notes)) if notes else []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=csv, default=ZOO)
    ap.add_argument("--compress", type=csv, default=COMPRESS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per dlas process")
    ap.add_argument("--engine-args", default="",
                    help="more engine flags for every dlas process, e.g. '--layout nchwc'")
    ap.add_argument("--realtime", action="store_true",
                    help="run every measured process under chrt -f 10 (root or CAP_SYS_NICE)")
    ap.add_argument("--dlas", default=os.path.join(ROOT, "build", "bin", "dlas"))
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.models, a.rounds, a.repeat = ["resnet18-cifar", "mobilenetv2-cifar"], 1, 3
    if "dense" not in a.compress:
        a.compress = ["dense"] + a.compress
    if not os.access(a.dlas, os.X_OK):
        sys.exit(f"compress_matrix: {a.dlas} is not an executable dlas (build it, or --dlas)")
    variants = [(m, c) for m in a.models for c in a.compress]
    schedule = [variants[r % len(variants):] + variants[:r % len(variants)]
                for r in range(a.rounds)]
    if a.dry_run:
        for r, order in enumerate(schedule):
            print(f"round {r + 1}: " + ", ".join(f"{m}/{c}" for m, c in order))
        return 0
    hw = subprocess.run([a.dlas, "hw", "--json"], capture_output=True, text=True)
    cpu = json.loads(hw.stdout).get("model", "unknown CPU") if hw.returncode == 0 else "unknown"
    times = {v: [] for v in variants}
    info = {}
    for r, order in enumerate(schedule):
        for i, (m, c) in enumerate(order):
            log(f"round {r + 1}/{a.rounds}, {i + 1}/{len(order)}: {m} {c}")
            try:
                j = bench(a, m, c)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                log(f"  failed: {e}")
                info[(m, c)] = {"error": "failed"}
                continue
            times[(m, c)] += j.get("times_ms") or [j["median_ms"]]
            info[(m, c)] = {"label": label(j)}
    results = {}
    for v in variants:
        r = dict(info.get(v, {}))
        if times[v]:
            r["median_ms"] = statistics.median(times[v])
        results[v] = r
    print(f"CPU: {cpu}\n")
    print(table(a, results))
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"cpu": cpu, "threads": a.threads, "rounds": a.rounds, "repeat": a.repeat,
                   "engine_args": a.engine_args,
                       "results": [{"model": m, "compress": c, **results[(m, c)]}
                                   for m, c in variants]}, f, indent=2)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
