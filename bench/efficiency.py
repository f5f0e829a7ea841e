#!/usr/bin/python3
"""Convolution efficiency: how close a model's 3x3 and 1x1 convolutions run to the machine's
measured peak, per algorithm, from `dlas profile --json`.

Each round runs `dlas profile MODEL --json` once per model (models in an order rotated by one
place per round); a step's time is the median of its per-round times. A conv's % of peak is
2 x its MACs per second against the measured peak of the unit its arithmetic runs on (the
profile's per-step `peak_gflops`). MACs are the direct convolution's, so a Winograd layer
counts its effective FLOPs (and can exceed 100%), every other algorithm its real ones. The
summary per model and class is MAC-weighted: total FLOPs over total time. `--layers` also
shows each layer's weight stream (its weight bytes over its time): a layer of few pixels and
many weights (vgg16-cifar's 2x2 layers: 9.4 MB of weights for 4 output pixels) is bound by
memory bandwidth (`dlas hw --peak`), not by the FMAs.

usage:
  efficiency.py [--models M,..] [--threads 2] [--rounds 3] [--repeat 20] [--target 70]
                [--compress dense] [--engine-args "..."] [--layers] [--realtime]
                [--json out.json] [--dlas build/bin/dlas]
Standard library only. Progress goes to stderr, the Markdown tables to stdout.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ["resnet18-cifar", "vgg16-cifar", "resnet50"]
KEY = re.compile(r"^c(\d+)_h(\d+)_w(\d+)_k(\d+)_(\d+)x(\d+)_s(\d+)x(\d+)_.*_g(\d+)")


def log(msg):
    sys.stderr.write(f"[efficiency {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def profile(a, model):
    cmd = (["chrt", "-f", "10"] if a.realtime else []) + [
        a.dlas, "profile", model, "--threads", str(a.threads), "--repeat", str(a.repeat),
        "--compress", a.compress, "--json"] + a.engine_args.split()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def weight_bytes(shape, elem=4):
    """Bytes of a conv's weights from its problem key (f32 unless the key says otherwise)."""
    m = KEY.match(shape or "")
    if not m:
        return 0
    c, k, kh, kw, g = (int(m.group(i)) for i in (1, 4, 5, 6, 9))
    if shape.endswith(("_f16", "_bf16")):
        elem = 2
    elif "s8" in shape.split("_g")[-1]:
        elem = 1
    return c // g * k * kh * kw * elem


def conv_class(shape):
    """'3x3', '1x1', ... for a dense (ungrouped) conv's problem key; None otherwise."""
    m = KEY.match(shape or "")
    if not m or int(m.group(9)) != 1:
        return None
    return f"{m.group(5)}x{m.group(6)}"


def summarize(model, runs, a):
    """Per-step median time over the rounds; per (class, kernel) and overall MAC-weighted %."""
    steps = []
    for i, s in enumerate(runs[0]["steps"]):
        cls = conv_class(s.get("shape"))
        if cls not in ("3x3", "1x1") or not s["macs"]:
            continue
        ms = statistics.median(r["steps"][i]["ms"] for r in runs)
        peak = statistics.median(r["steps"][i]["peak_gflops"] for r in runs)
        gflops = 2.0 * s["macs"] / (ms * 1e6) if ms > 0 else 0.0
        wgbs = weight_bytes(s["shape"]) / (ms * 1e6) if ms > 0 else 0.0
        steps.append({"node": s["node"], "class": cls, "kernel": s["kernel"], "weight_gbs": wgbs,
                      "layout": s["layout"], "shape": s["shape"], "knobs": s["knobs"],
                      "macs": s["macs"], "ms": ms, "gflops": gflops, "peak_gflops": peak,
                      "peak_pct": 100.0 * gflops / peak if peak > 0 else 0.0})
    groups = {}
    for s in steps:
        for k in ((s["class"], s["kernel"]), (s["class"], "all"), ("all", "all")):
            g = groups.setdefault(k, {"layers": 0, "under": 0, "flop": 0.0, "ms": 0.0,
                                      "peak": s["peak_gflops"]})
            g["layers"] += 1
            g["under"] += s["peak_pct"] < a.target
            g["flop"] += 2.0 * s["macs"]
            g["ms"] += s["ms"]
    for g in groups.values():
        g["gflops"] = g["flop"] / (g["ms"] * 1e6) if g["ms"] > 0 else 0.0
        g["peak_pct"] = 100.0 * g["gflops"] / g["peak"] if g["peak"] > 0 else 0.0
    model_ms = statistics.median(r["median_ms"] for r in runs)
    return {"model": model, "median_ms": model_ms, "variant": runs[0]["variant"],
            "steps": steps,
            "groups": [{"class": c, "kernel": k, **g} for (c, k), g in sorted(groups.items())]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--target", type=float, default=70.0, help="%% of peak a layer should reach")
    ap.add_argument("--compress", default="dense")
    ap.add_argument("--engine-args", default="", help="more engine flags, e.g. '--layout nchw'")
    ap.add_argument("--layers", action="store_true", help="also print every layer")
    ap.add_argument("--realtime", action="store_true", help="run each profile under chrt -f 10")
    ap.add_argument("--json", help="write every step and summary here")
    ap.add_argument("--dlas", default=os.path.join(ROOT, "build", "bin", "dlas"))
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args()
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    if a.rounds < 1 or a.repeat < 1 or not models:
        ap.error("--rounds and --repeat must be >= 1 and --models non-empty")
    if not os.access(a.dlas, os.X_OK):
        ap.error(f"{a.dlas}: not an executable (build first, or pass --dlas)")

    runs = {m: [] for m in models}
    try:
        for r in range(a.rounds):
            order = models[r % len(models):] + models[:r % len(models)]
            for m in order:
                log(f"round {r + 1}/{a.rounds}: {m}")
                runs[m].append(profile(a, m))
    except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        sys.stderr.write(f"efficiency.py: {e}\n")
        return 2
    out = [summarize(m, runs[m], a) for m in models]

    print(f"Convolution efficiency, {a.threads} threads, {a.rounds} rounds x {a.repeat} "
          f"profiled runs, compress {a.compress} (% of the measured peak; Winograd: "
          f"effective FLOPs)\n")
    print("| model | class | kernel | layers | under %g%% | GFLOP/s | %% of peak |" % a.target)
    print("|---|---|---|---:|---:|---:|---:|")
    for s in out:
        for g in s["groups"]:
            bold = "**" if g["class"] == "all" else ""
            print(f"| {s['model']} | {bold}{g['class']}{bold} | {g['kernel']} | {g['layers']} | "
                  f"{g['under']} | {g['gflops']:.1f} | {bold}{g['peak_pct']:.1f}{bold} |")
    if a.layers:
        for s in out:
            print(f"\n{s['model']} ({s['variant']}, whole model {s['median_ms']:.3f} ms)\n")
            print("| node | class | kernel | layout | shape | ms | GFLOP/s | % of peak | "
                  "weights GB/s | knobs |")
            print("|---|---|---|---|---|---:|---:|---:|---:|---|")
            for t in s["steps"]:
                print(f"| {t['node']} | {t['class']} | {t['kernel']} | {t['layout']} | "
                      f"{t['shape']} | {t['ms']:.3f} | {t['gflops']:.1f} | "
                      f"{t['peak_pct']:.1f} | {t['weight_gbs']:.1f} | {t['knobs']} |")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"threads": a.threads, "rounds": a.rounds, "repeat": a.repeat,
                       "target": a.target, "models": out}, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
