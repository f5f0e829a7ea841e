#!/usr/bin/python3
"""Peer comparison: the zoo's models at batch 1 and the same thread count through dlas (each
convolution algorithm, and auto), the oneDNN backend (`dlas bench --backend onednn`) and
PyTorch in its best CPU inference mode (pytorch_peer.py), interleaved round by round.

Each round runs every variant once, in an order rotated by one place per round (A/B/A/B, so
no variant always runs first or right after the same neighbour): a dlas variant is one
`dlas bench MODEL --json --times --repeat R --warmup W` process; PyTorch is ONE long-lived
`pytorch_peer.py --serve` process (its JIT warm-up happens once per model) asked for W
discarded runs and then R timed ones. Every repeat's time is pooled over the rounds; the
headline per variant is the median of the pool, and dlas variants get ratios to PyTorch and
to oneDNN (< 1: dlas is faster). Nothing is pinned to a CPU: every peer sees the same
scheduler. Progress goes to stderr, the Markdown tables to stdout, everything to --json.
--baseline BIN adds every dlas variant again through another dlas binary (`auto@baseline`,
...), interleaved in the same rounds, and a table of new/baseline ratios: the way to show a
change to the engine made no model slower.
--realtime runs every measured process (dlas, oneDNN and the PyTorch server alike) under
`chrt -f 10` (SCHED_FIFO; needs root or CAP_SYS_NICE): on a shared 2-core machine a
background job otherwise preempts one of two worker threads for a whole time slice and the
other waits at the next barrier, which inflates 2-thread times of every peer by 1.3-1.6x.
The kernel's RT throttling still leaves 5% of each second to other tasks.

usage:
  run_peers.py [--models M,..] [--threads 2[,1]] [--rounds 5] [--repeat 30]
               [--repeat-for resnet50=10,..] [--algos auto,direct,..] [--json out.json]
               [--baseline OLD_BUILD/bin/dlas]
  run_peers.py --quick      smoke check: resnet18-cifar, 1 round, 3 repeats
  run_peers.py --dry-run    print the interleaved schedule and exit
  run_peers.py --report out.json   print the tables of a saved run again
Standard library only; run with Debian's /usr/bin/python3 (PyTorch's peer needs its torch).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ZOO = ["resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar", "vgg16-cifar", "resnet50",
       "mobilenetv2", "densenet161", "efficientnetb0"]
ALGOS = ["auto", "direct", "gemm", "spatial-pack", "winograd"]
PYTORCH, ONEDNN = "pytorch", "onednn"
BASELINE = "@baseline"  # suffix of a variant run through --baseline's binary


def log(msg):
    sys.stderr.write(f"[peers {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def csv(s):
    return [w.strip() for w in s.split(",") if w.strip()]


class TorchPeer:
    """pytorch_peer.py --serve: one JSON line per command."""

    def __init__(self, python, threads, prefix=()):
        cmd = list(prefix) + [python, os.path.join(HERE, "pytorch_peer.py"), "--serve",
                              "--threads", str(threads)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.ready = self._read()
        if not self.ready.get("ready"):
            raise RuntimeError(f"pytorch peer did not start: {self.ready}")

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("pytorch peer exited (see its stderr above)")
        return json.loads(line)

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"pytorch peer: {command}: {answer['error']}")
        return answer

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()


def dlas_command(a, model, variant, threads, repeat):
    binary, has_times = a.dlas, a.has_times
    if variant.endswith(BASELINE):
        variant, binary, has_times = variant[:-len(BASELINE)], a.baseline, a.baseline_has_times
    cmd = list(a.prefix) + [binary, "bench", model, "--threads", str(threads), "--repeat",
                            str(repeat), "--warmup", str(a.warmup), "--json"]
    if has_times:
        cmd.append("--times")
    if variant == ONEDNN:
        cmd += ["--backend", "onednn"]
    else:
        # ALGO[/LAYOUT[/PROFILE]]: the layout mode (nchw, nchwc, auto) and the machine profile
        # (none, builtin or a file) ride on the variant name.
        algo, _, rest = variant.partition("/")
        layout, _, profile = rest.partition("/")
        cmd += ["--conv-algo", algo] + (["--layout", layout] if layout else [])
        cmd += ["--profile", profile] if profile else []
    return cmd


def run_dlas(a, model, variant, threads, repeat):
    cmd = dlas_command(a, model, variant, threads, repeat)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    j = json.loads(p.stdout)
    # Without --times (an older binary) the round's median stands for its repeats.
    times = j.get("times_ms") or [j["median_ms"]]
    return times, j


def run_round(a, torch, model, variant, threads, repeat):
    if variant == PYTORCH:
        if a.warmup > 0:
            torch.ask(f"run {model} {a.warmup}")  # discarded, like dlas bench --warmup
        j = torch.ask(f"run {model} {repeat}")
        return j["times_ms"], j
    return run_dlas(a, model, variant, threads, repeat)


def summarise(rec):
    out = {}
    for v, r in rec["variants"].items():
        if not r["times_ms"]:
            out[v] = None
            continue
        out[v] = {
            "median_ms": statistics.median(r["times_ms"]),
            "round_medians_ms": r["round_medians_ms"],
            "n": len(r["times_ms"]),
        }
    pt, dn = out.get(PYTORCH), out.get(ONEDNN)
    dlas = {v: s for v, s in out.items()
            if s and v not in (PYTORCH, ONEDNN) and not v.endswith(BASELINE)}
    best = min(dlas, key=lambda v: dlas[v]["median_ms"]) if dlas else None
    for v, s in out.items():
        if not s:
            continue
        if pt and v != PYTORCH:
            s["vs_pytorch"] = s["median_ms"] / pt["median_ms"]
        if dn and v not in (PYTORCH, ONEDNN):
            s["vs_onednn"] = s["median_ms"] / dn["median_ms"]
        base = out.get(v + BASELINE)
        if base:
            s["vs_baseline"] = s["median_ms"] / base["median_ms"]
    rec["summary"], rec["best_dlas"] = out, best


def fmt_ratio(s, key):
    return f"{s[key]:.2f}×" if s and key in s else "–"


def markdown(records, threads):
    rows = [r for r in records if r["threads"] == threads]
    lines = [f"### {threads} thread{'s' if threads > 1 else ''}, batch 1 — summary", "",
             "| model | PyTorch ms | oneDNN ms | dlas auto ms | best dlas | best ms | "
             "best/PyTorch | best/oneDNN | auto/PyTorch |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        s, b = r["summary"], r["best_dlas"]

        def ms(v):
            return f"{s[v]['median_ms']:.3f}" if s.get(v) else "–"
        lines.append(f"| {r['model']} | {ms(PYTORCH)} | {ms(ONEDNN)} | {ms('auto')} | {b or '–'} | "
                     f"{ms(b) if b else '–'} | {fmt_ratio(s.get(b), 'vs_pytorch')} | "
                     f"{fmt_ratio(s.get(b), 'vs_onednn')} | {fmt_ratio(s.get('auto'), 'vs_pytorch')} |")
    lines += ["", f"### {threads} thread{'s' if threads > 1 else ''}, batch 1 — every variant "
              "(★ best dlas; ratios < 1: dlas faster)", "",
              "| model | variant | median ms | round medians (min–max) | n | ×PyTorch | ×oneDNN |",
              "|---|---|---:|---|---:|---:|---:|"]
    # The round-median range shows a noisy machine: a round far above the others ran while
    # something else held the CPUs; the pooled median resists fewer than half such rounds.
    for r in rows:
        for v in r["variants"]:
            s = r["summary"].get(v)
            name = f"dlas {v}" if v not in (PYTORCH, ONEDNN) else v
            if v == r["best_dlas"]:
                name = f"**{name}** ★"
            if not s:
                err = r["variants"][v]["errors"][:1]
                lines.append(f"| {r['model']} | {name} | failed | {err[0][:60] if err else ''} | 0 | – | – |")
                continue
            rm = s["round_medians_ms"]
            lines.append(f"| {r['model']} | {name} | {s['median_ms']:.3f} | "
                         f"{min(rm):.3f}–{max(rm):.3f} | {s['n']} | {fmt_ratio(s, 'vs_pytorch')} | "
                         f"{fmt_ratio(s, 'vs_onednn')} |")
    pairs = [(r, v) for r in rows for v in r["variants"] if r["summary"].get(v, {}) and
             "vs_baseline" in r["summary"][v]]
    if pairs:
        lines += ["", f"### {threads} thread{'s' if threads > 1 else ''}, batch 1 — this build "
                  "against the baseline binary (same rounds; < 1: this build faster)", "",
                  "| model | variant | this ms (rounds min–max) | baseline ms (rounds min–max) | "
                  "this/baseline |", "|---|---|---:|---:|---:|"]
        for r, v in pairs:
            s, b = r["summary"][v], r["summary"][v + BASELINE]
            rs, rb = s["round_medians_ms"], b["round_medians_ms"]
            lines.append(f"| {r['model']} | dlas {v} | {s['median_ms']:.3f} ({min(rs):.3f}–"
                         f"{max(rs):.3f}) | {b['median_ms']:.3f} ({min(rb):.3f}–{max(rb):.3f}) | "
                         f"{s['vs_baseline']:.3f} |")
    return "\n".join(lines)


def machine_info(a):
    info = {"python": platform.python_version(), "nproc": os.cpu_count(),
            "loadavg_start": os.getloadavg(), "realtime": bool(a.realtime)}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["git"] = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                     capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names, or .onnx "
                    "files (those need --no-pytorch: the PyTorch peer builds zoo models)")
    ap.add_argument("--threads", default="2", help="thread count(s), comma-separated")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=30, help="timed runs per variant per round")
    ap.add_argument("--repeat-for", default="", help="per-model repeat, e.g. resnet50=10,densenet161=10")
    ap.add_argument("--warmup", type=int, default=1, help="discarded runs per variant per round")
    ap.add_argument("--algos", default=",".join(ALGOS), help="dlas variants: --conv-algo names, each optionally "
                    "with /LAYOUT for --layout (auto/nchw, auto/nchwc) and /PROFILE for --profile "
                    "(auto/auto/none, auto/auto/builtin, auto/auto/FILE)")
    ap.add_argument("--no-onednn", action="store_true")
    ap.add_argument("--no-pytorch", action="store_true")
    ap.add_argument("--dlas", default=os.path.join(ROOT, "build", "bin", "dlas"))
    ap.add_argument("--baseline", help="another dlas binary: every plain ALGO variant (no /LAYOUT) "
                    "runs through it too, in the same rounds, and the tables gain this/baseline "
                    "ratios")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per dlas bench process")
    ap.add_argument("--json", help="write every time and the summary here")
    ap.add_argument("--quick", action="store_true", help="smoke check: resnet18-cifar, 1 round, 3 repeats")
    ap.add_argument("--dry-run", action="store_true", help="print the schedule and exit")
    ap.add_argument("--realtime", action="store_true",
                    help="run every measured process under chrt -f 10 (SCHED_FIFO)")
    ap.add_argument("--report", metavar="JSON", help="print the tables of a saved --json run")
    a = ap.parse_args()
    a.prefix = ["chrt", "-f", "10"] if a.realtime else []
    if a.report:
        with open(a.report) as f:
            saved = json.load(f)
        for t in saved["args"]["threads"]:
            print(markdown(saved["records"], t))
            print()
        return 0
    if a.quick:
        a.models, a.rounds, a.repeat, a.repeat_for = "resnet18-cifar", 1, 3, ""
    models, algos = csv(a.models), csv(a.algos)
    threads_list = [int(t) for t in csv(a.threads)]
    repeat_for = {k: int(v) for k, v in (kv.split("=", 1) for kv in csv(a.repeat_for))}
    onnx = [m for m in models if m.endswith(".onnx") and os.path.isfile(m)]
    if onnx and not a.no_pytorch:
        ap.error(f"{onnx[0]}: the PyTorch peer runs zoo models only; add --no-pytorch")
    bad = [m for m in models if m not in ZOO and m not in onnx] + \
        [m for m in repeat_for if m not in ZOO and m not in onnx]
    if bad:
        ap.error(f"unknown model(s) {bad}; zoo: {','.join(ZOO)}")
    if a.rounds < 1 or a.repeat < 1 or min(threads_list) < 1 or a.warmup < 0:
        ap.error("--rounds, --repeat and --threads must be >= 1, --warmup >= 0")
    # A baseline reruns the plain ALGO variants: /LAYOUT and /PROFILE need flags an older binary
    # may not have.
    variants = algos + ([v + BASELINE for v in algos if "/" not in v] if a.baseline else []) + \
        ([] if a.no_onednn else [ONEDNN]) + ([] if a.no_pytorch else [PYTORCH])

    a.has_times = a.baseline_has_times = True
    if a.dry_run:
        for t in threads_list:
            for m in models:
                rep = repeat_for.get(m, a.repeat)
                for rnd in range(a.rounds):
                    k = rnd % len(variants)
                    for v in variants[k:] + variants[:k]:
                        print(f"threads={t} {m} round {rnd + 1}: " + (
                            f"pytorch_peer --serve: run {m} {a.warmup}; run {m} {rep}" if v == PYTORCH
                            else " ".join(dlas_command(a, m, v, t, rep))))
        return 0

    if not os.access(a.dlas, os.X_OK):
        ap.error(f"{a.dlas} is not an executable (cmake --build build --target dlas_cli)")
    helptext = subprocess.run([a.dlas, "bench", "--help"], capture_output=True, text=True).stdout
    a.has_times = "--times" in helptext
    if not a.has_times:
        log("this dlas bench has no --times: pooling round medians instead of every repeat")
    if a.baseline:
        if not os.access(a.baseline, os.X_OK):
            ap.error(f"--baseline {a.baseline} is not an executable")
        a.baseline_has_times = "--times" in subprocess.run(
            [a.baseline, "bench", "--help"], capture_output=True, text=True).stdout

    result = {"machine": machine_info(a), "args": {
        "models": models, "threads": threads_list, "rounds": a.rounds, "repeat": a.repeat,
        "repeat_for": repeat_for, "warmup": a.warmup, "variants": variants,
        "baseline": a.baseline,
        "pooled": "times_ms" if a.has_times else "round medians"}, "records": []}
    log(f"cpu {result['machine'].get('cpu', '?')}, load {result['machine']['loadavg_start']}")
    t_start = time.time()
    for t in threads_list:
        torch = None
        if not a.no_pytorch:
            torch = TorchPeer(a.python, t, a.prefix)
            result["machine"]["torch"] = torch.ready.get("torch")
            log(f"pytorch peer ready (torch {torch.ready.get('torch')}, {torch.ready.get('threads')} threads)")
        try:
            for m in models:
                rep = repeat_for.get(m, a.repeat)
                rec = {"model": m, "threads": t, "batch": 1, "repeat": rep, "loadavg": [],
                       "variants": {v: {"times_ms": [], "round_medians_ms": [], "errors": [],
                                        "order": []} for v in variants}}
                if torch:
                    try:
                        b = torch.ask(f"load {m}")
                        log(f"{m}: pytorch loaded in {b['build_s']:.1f} s")
                    except RuntimeError as e:
                        log(str(e))
                for rnd in range(a.rounds):
                    rec["loadavg"].append(os.getloadavg()[0])  # noisy rounds show up here
                    k = rnd % len(variants)
                    for pos, v in enumerate(variants[k:] + variants[:k]):
                        r = rec["variants"][v]
                        if r["errors"] and not r["times_ms"]:
                            continue  # failed before: don't retry every round
                        try:
                            times, j = run_round(a, torch, m, v, t, rep)
                        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                            r["errors"].append(str(e))
                            log(f"{m} t{t} round {rnd + 1} {v}: FAILED {str(e)[:200]}")
                            continue
                        r["times_ms"] += times
                        r["round_medians_ms"].append(statistics.median(times))
                        r["order"].append(pos)
                        if "variant" in j:
                            r["dlas_variant"] = j["variant"]
                        log(f"{m} t{t} round {rnd + 1}/{a.rounds} {v:12s} "
                            f"median {statistics.median(times):9.3f} ms")
                summarise(rec)
                result["records"].append(rec)
                s = rec["summary"]
                if rec["best_dlas"]:
                    b = s[rec["best_dlas"]]
                    log(f"{m} t{t}: best dlas {rec['best_dlas']} {b['median_ms']:.3f} ms, "
                        f"x{b.get('vs_pytorch', float('nan')):.2f} PyTorch, "
                        f"x{b.get('vs_onednn', float('nan')):.2f} oneDNN")
                if a.json:  # keep what we have if a later model fails or is interrupted
                    with open(a.json, "w") as f:
                        json.dump(result, f, indent=1)
        finally:
            if torch:
                torch.close()
    result["machine"]["loadavg_end"] = os.getloadavg()
    result["wall_s"] = time.time() - t_start
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    m = result["machine"]
    print(f"<!-- {m.get('cpu', '?')}, {m['nproc']} CPUs, torch {m.get('torch', '-')}, dlas {m.get('git', '?')}, "
          f"{a.rounds} rounds x {a.repeat} repeats, load {m['loadavg_start'][0]:.2f}->"
          f"{m['loadavg_end'][0]:.2f}, {result['wall_s']:.0f} s -->")
    for t in threads_list:
        print(markdown(result["records"], t))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
