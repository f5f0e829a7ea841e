#!/usr/bin/env python3
"""Layer by layer against oneDNN: where does dlas lose time on a model?

Runs, in interleaved rounds, `dlas profile MODEL --json` (dlas's own per-step times) and
`dlas bench MODEL --backend onednn` with ONEDNN_VERBOSE=1 (oneDNN's per-primitive execution
times). Convolutions are matched by their problem (channels, plane, kernel, stride, front
padding, groups) and order of occurrence; the table lists each conv's median time in both,
the ratio, and the milliseconds dlas loses (or wins) on it, largest loss first. Everything
that is not a matched conv is summed as "other" on both sides.

    python3 bench/onednn_layers.py efficientnetb0 --threads 2 --rounds 3
    python3 bench/onednn_layers.py resnet50 --threads 2 --json out.json

Both sides time each layer inside a whole-model run on the same thread pool size, so a
layer's time includes its own thread hand-off; oneDNN's verbose mode adds a little to
every primitive, which slightly favours dlas on the smallest layers. Quote whole-model
ratios from bench/peers/run_peers.py; use this to find the layers behind them.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DLAS = os.path.join(HERE, "..", "build", "bin", "dlas")

DLAS_KEY = re.compile(r"c(\d+)_h(\d+)_w(\d+)_k(\d+)_(\d+)x(\d+)_s(\d+)x(\d+)_p(\d+)x(\d+)x\d+x\d+_d\d+x\d+_g(\d+)")
ONEDNN_CONV = re.compile(r"(?:g(\d+))?mb\d+_ic(\d+)oc(\d+)_ih(\d+)oh\d+kh(\d+)sh(\d+)dh\d+ph(\d+)_iw(\d+)ow\d+kw(\d+)sw(\d+)dw\d+pw(\d+)")


def dlas_key(shape):
    m = DLAS_KEY.fullmatch(shape or "")
    if not m:
        return None
    c, h, w, k, kh, kw, sh, sw, pt, pl, g = (int(x) for x in m.groups())
    return (c, h, w, k, kh, kw, sh, sw, pt, pl, g)


def onednn_key(desc):
    m = ONEDNN_CONV.search(desc)
    if not m:
        return None
    g, ic, oc, ih, kh, sh, ph, iw, kw, sw, pw = m.groups()
    return (int(ic), int(ih), int(iw), int(oc), int(kh), int(kw), int(sh), int(sw), int(ph), int(pw), int(g or 1))


def key_name(k):
    c, h, w, oc, kh, kw, sh, sw, _, _, g = k
    s = f"{c}->{oc} {h}x{w} {kh}x{kw}"
    if sh > 1 or sw > 1:
        s += f" s{sh}"
    if g > 1:
        s += " dw" if g == c == oc else f" g{g}"
    return s


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"onednn_layers: {' '.join(cmd)} failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return p


def dlas_round(args):
    p = run([args.dlas, "profile", args.model, "--threads", str(args.threads), "--repeat", str(args.repeat), "--json"])
    d = json.loads(p.stdout)
    convs, other, names = [], 0.0, []
    seen = collections.Counter()
    for s in d["steps"]:
        k = dlas_key(s.get("shape"))
        if k is not None and "Conv" in s["op"]:
            convs.append(((k, seen[k]), s["ms"], f'{s["kernel"]} {s["layout"]}', s["node"]))
            seen[k] += 1
        else:
            other += s["ms"]
    return convs, other, d["median_ms"]


def onednn_round(args):
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    p = run([args.dlas, "bench", args.model, "--threads", str(args.threads), "--repeat", str(args.repeat),
             "--backend", "onednn"], env=env)
    lines = [l for l in (p.stdout + "\n" + p.stderr).splitlines() if ",exec," in l]
    recs = []
    for l in lines:
        f = l.split(",")
        recs.append((f[3], ",".join(f[3:-1]), float(f[-1])))
    # Weight reorders come first, once; then one inference's primitives repeat. The period is
    # the shortest one that the last --repeat inferences all share.
    descs = [r[1] for r in recs]
    period = next((p for p in range(1, len(descs) // args.repeat + 1)
                   if all(descs[len(descs) - (i + 1) * p:len(descs) - i * p] == descs[-p:] for i in range(args.repeat))),
                  None)
    if period is None:
        sys.exit("onednn_layers: could not find one inference in oneDNN's verbose output")
    runs = [recs[len(recs) - (i + 1) * period:len(recs) - i * period] for i in range(args.repeat)]
    per = collections.defaultdict(list)
    other = []
    for r in runs:
        seen = collections.Counter()
        o = 0.0
        for kind, desc, ms in r:
            k = onednn_key(desc) if kind == "convolution" else None
            if k is None:
                o += ms
                continue
            per[(k, seen[k])].append(ms)
            seen[k] += 1
        other.append(o)
    impl = {}
    for kind, desc, _ in runs[-1]:
        k = onednn_key(desc) if kind == "convolution" else None
        if k is not None and k not in impl:
            impl[k] = desc.split(",")[1].split(":")[0]
    return {k: statistics.median(v) for k, v in per.items()}, statistics.median(other), impl


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--dlas", default=DEFAULT_DLAS)
    ap.add_argument("--top", type=int, default=25, help="rows shown, largest loss first (0: all)")
    ap.add_argument("--json", help="write the per-layer table here")
    args = ap.parse_args()
    if not os.path.exists(args.dlas):
        sys.exit(f"onednn_layers: no dlas binary at {args.dlas} (build first, or --dlas PATH)")

    d_ms, o_ms = collections.defaultdict(list), collections.defaultdict(list)
    d_other, o_other, d_total = [], [], []
    info, impl = {}, {}
    for r in range(args.rounds):
        # Alternate which engine goes first, so neither always runs on a warmer machine.
        order = (dlas_round, onednn_round) if r % 2 == 0 else (onednn_round, dlas_round)
        for fn in order:
            if fn is dlas_round:
                convs, other, total = dlas_round(args)
                for key, ms, kern, node in convs:
                    d_ms[key].append(ms)
                    info[key] = (kern, node)
                d_other.append(other)
                d_total.append(total)
            else:
                per, other, im = onednn_round(args)
                for key, ms in per.items():
                    o_ms[key].append(ms)
                o_other.append(other)
                impl.update(im)
        print(f"[onednn_layers] round {r + 1}/{args.rounds} done", file=sys.stderr)

    rows = []
    for key in d_ms:
        if key not in o_ms:
            continue
        d, o = statistics.median(d_ms[key]), statistics.median(o_ms[key])
        rows.append({"node": info[key][1], "problem": key_name(key[0]), "dlas_kernel": info[key][0],
                     "onednn_impl": impl.get(key[0], "?"), "dlas_ms": d, "onednn_ms": o,
                     "ratio": d / o if o > 0 else None, "lost_ms": d - o})
    unmatched = [info[k][1] for k in d_ms if k not in o_ms]
    rows.sort(key=lambda r: -r["lost_ms"])
    dc, oc = sum(r["dlas_ms"] for r in rows), sum(r["onednn_ms"] for r in rows)
    do, oo = statistics.median(d_other), statistics.median(o_other)

    print(f"{args.model}, {args.threads} threads, {args.rounds} rounds x {args.repeat} runs (medians)")
    print(f"| node | problem | dlas | oneDNN | dlas ms | oneDNN ms | ratio | lost ms |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    shown = rows if args.top == 0 else rows[:args.top]
    for r in shown:
        print(f'| {r["node"]} | {r["problem"]} | {r["dlas_kernel"]} | {r["onednn_impl"]} | {r["dlas_ms"]:.3f} | '
              f'{r["onednn_ms"]:.3f} | {r["ratio"]:.2f} | {r["lost_ms"]:+.3f} |')
    print(f"convs matched: {len(rows)} (dlas {dc:.2f} ms, oneDNN {oc:.2f} ms, ratio {dc / oc:.2f})"
          + (f"; unmatched dlas convs: {len(unmatched)}" if unmatched else ""))
    print(f"everything else: dlas {do:.2f} ms, oneDNN {oo:.2f} ms; dlas whole-model median {statistics.median(d_total):.2f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "threads": args.threads, "rows": rows, "unmatched": unmatched,
                       "dlas_other_ms": do, "onednn_other_ms": oo}, f, indent=1)


if __name__ == "__main__":
    main()
