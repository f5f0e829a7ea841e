#!/usr/bin/python3
"""Tuning cost: latency as a function of tuning time, for `dlas tune` and Apache TVM's
MetaSchedule (the DLAS paper's own tuner), on the same models, threads and machine.

For each model:
  1. dlas tunes it once per --dlas-budgets entry (`dlas tune MODEL --threads T --budget B`),
     each from scratch; the tuning time is the tune command's wall clock.
  2. TVM tunes the same ONNX file (what `dlas export` writes) once per --tvm-trials entry
     (MetaSchedule, `onnx_peers.py --serve --peer tvm-tuned --tvm-trials N`); the tuning
     time is MetaSchedule's own wall clock (onnx_peers.py's tune_ms), the build aside.
  3. Every tuned result, and both engines untuned, are timed interleaved round by round
     (the order rotated each round, as run_peers.py does): dlas with
     `dlas bench MODEL --records FILE --times`, TVM in its long-lived servers.
The table per model gives each point's tuning seconds, median latency and its speedup over
the same engine untuned, and the headline: TVM's best latency, the tuning time it took,
and the least tuning time after which dlas is at least as fast (ratio < 0.1 meets the
"a tenth of TVM's tuning time" goal). Progress on stderr, Markdown on stdout, all of it in
--json.

usage:
  tuning_cost.py [--models resnet18-cifar,mobilenetv2-cifar] [--threads 2]
                 [--dlas-budgets 3s,10s,60s,600s] [--tvm-trials 16,64,256]
                 [--rounds 3] [--repeat 20] [--realtime] [--json out.json]
Needs .venv-peers with apache-tvm (scripts/peers-setup.sh --only tvm).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_peers as rp  # noqa: E402  (the peer servers, ONNX export and reference checks)


def budget_seconds(b):
    """'60s' / '2m' / '1h' -> seconds (what `dlas tune --budget` takes, time budgets only)."""
    unit = {"s": 1, "m": 60, "h": 3600}.get(b[-1:])
    try:
        value = float(b[:-1])
    except ValueError:
        unit = None
    if unit is None or value <= 0:
        raise ValueError(f"budget '{b}': give a time such as 60s or 10m")
    return value * unit


def tune_dlas(a, model, budget, records):
    cmd = [a.dlas, "tune", model, "--threads", str(a.threads), "--budget", budget,
           "-o", records, "--json"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=budget_seconds(budget) * 3 + 300)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    j = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    return {"tune_s": wall, "records": records,
            **{k: j[k] for k in ("trials", "tuning_seconds", "tuned_ms", "untuned_ms", "stop_reason")
               if k in j}}


def bench_dlas(a, model, records, repeat):
    cmd = list(a.prefix) + [a.dlas, "bench", model, "--threads", str(a.threads), "--repeat",
                            str(repeat), "--warmup", str(a.warmup), "--json", "--times"]
    if records:
        cmd += ["--records", records]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)["times_ms"]


def tvm_server(a, trials):
    peer = "tvm-tuned" if trials else "tvm"
    cmd = [rp.peer_python(a, peer), os.path.join(rp.HERE, "onnx_peers.py"), "--serve",
           "--peer", peer, "--threads", str(a.threads)]
    if trials:
        cmd += ["--tvm-trials", str(trials)]
    return rp.PeerServer(f"{peer}@{trials}" if trials else peer, cmd, realtime=a.realtime)


def headline(points):
    """TVM's best point, and the least dlas tuning time reaching its latency."""
    tvm = [p for p in points if p["engine"] == "tvm" and p.get("median_ms")]
    dl = [p for p in points if p["engine"] == "dlas" and p.get("median_ms")]
    if not tvm or not dl:
        return {}
    best = min(tvm, key=lambda p: p["median_ms"])
    reach = sorted((p for p in dl if p["median_ms"] <= best["median_ms"]),
                   key=lambda p: p["tune_s"])
    h = {"tvm_best_ms": best["median_ms"], "tvm_best_tune_s": best["tune_s"],
         "tvm_best_label": best["label"],
         "dlas_best_ms": min(p["median_ms"] for p in dl)}
    if reach:
        h["dlas_reach_tune_s"] = reach[0]["tune_s"]
        h["dlas_reach_label"] = reach[0]["label"]
        if best["tune_s"] > 0:
            h["time_ratio"] = reach[0]["tune_s"] / best["tune_s"]
    return h


def markdown(result):
    m = result["machine"]
    lines = [f"<!-- {m.get('cpu', '?')}, {m['nproc']} CPUs, {result['args']['threads']} threads, "
             f"dlas {m.get('git', '?')}, TVM {m.get('tvm', '?')}, {result['args']['rounds']} rounds x "
             f"{result['args']['repeat']} repeats, load {m['loadavg_start'][0]:.2f}->"
             f"{m['loadavg_end'][0]:.2f}, {result['wall_s']:.0f} s -->"]
    for rec in result["records"]:
        lines += ["", f"### {rec['model']}, batch 1, {result['args']['threads']} threads — latency "
                  "against tuning time", "",
                  "| engine | tuning | tuning s | median ms | × own untuned |",
                  "|---|---|---:|---:|---:|"]
        untuned = {p["engine"]: p.get("median_ms") for p in rec["points"] if p["tune_s"] == 0}
        for p in rec["points"]:
            ms = f"{p['median_ms']:.3f}" if p.get("median_ms") else "failed"
            base = untuned.get(p["engine"])
            ratio = f"{p['median_ms'] / base:.2f}×" if p.get("median_ms") and base else "–"
            lines.append(f"| {p['engine']} | {p['label']} | {p['tune_s']:.1f} | {ms} | {ratio} |")
        h = rec.get("headline") or {}
        if h:
            if "dlas_reach_tune_s" not in h:
                reach = f"dlas does not reach it (best dlas {h['dlas_best_ms']:.3f} ms)"
            elif h["dlas_reach_tune_s"] == 0:
                reach = "dlas untuned is already as fast: no tuning time at all"
            else:
                reach = (f"dlas reaches it after {h['dlas_reach_tune_s']:.1f} s "
                         f"({h['dlas_reach_label']}): {h['time_ratio']:.3f}× TVM's tuning time")
            lines += ["", f"TVM's best: {h['tvm_best_ms']:.3f} ms after {h['tvm_best_tune_s']:.0f} s "
                      f"({h['tvm_best_label']}); {reach}."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet18-cifar,mobilenetv2-cifar")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dlas-budgets", default="3s,10s,60s,600s",
                    help="dlas tune --budget values (time budgets), comma-separated")
    ap.add_argument("--tvm-trials", default="16,64,256",
                    help="MetaSchedule trial budgets, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dlas", default=os.path.join(rp.ROOT, "build", "bin", "dlas"))
    ap.add_argument("--venv", default=os.path.join(rp.ROOT, ".venv-peers"))
    ap.add_argument("--work", default=os.path.join(rp.ROOT, "build", "tuning-cost"),
                    help="records and ONNX files go here")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--realtime", action="store_true",
                    help="time every measured process under chrt -f 10 (SCHED_FIFO)")
    ap.add_argument("--json", help="write every time and the tables' data here")
    a = ap.parse_args()
    a.prefix = ["chrt", "-f", "10"] if a.realtime else []
    a.onnx_cache = os.path.join(a.work, "onnx")
    models = rp.csv(a.models)
    budgets = rp.csv(a.dlas_budgets)
    trials = [int(t) for t in rp.csv(a.tvm_trials)]
    try:
        for b in budgets:
            budget_seconds(b)
    except ValueError as e:
        ap.error(str(e))
    if a.threads < 1 or a.rounds < 1 or a.repeat < 1 or any(t < 1 for t in trials):
        ap.error("--threads, --rounds, --repeat and every --tvm-trials value must be >= 1")
    bad = [m for m in models if m not in rp.ZOO]
    if bad:
        ap.error(f"unknown model(s) {bad}; zoo: {','.join(rp.ZOO)}")
    if not os.access(a.dlas, os.X_OK):
        ap.error(f"{a.dlas} is not an executable (bash scripts/build.sh)")
    if "tvm-tuned" not in rp.installed_peers(a):
        print(f"tuning_cost: TVM is not installed in {a.venv} (scripts/peers-setup.sh --only tvm)",
              file=sys.stderr)
        return 2
    os.makedirs(a.work, exist_ok=True)
    result = {"machine": rp.machine_info(a), "records": [],
              "args": {"models": models, "threads": a.threads, "dlas_budgets": budgets,
                       "tvm_trials": trials, "rounds": a.rounds, "repeat": a.repeat,
                       "warmup": a.warmup}}
    rp.log(f"cpu {result['machine'].get('cpu', '?')}, load {result['machine']['loadavg_start']}")
    t_start = time.time()
    for m in models:
        files = rp.prepare_model(a, m)
        points = [{"engine": "dlas", "label": "untuned", "tune_s": 0.0, "records": None}]
        for b in budgets:
            rec = os.path.join(a.work, f"{m}-t{a.threads}-{b}.jsonl")
            rp.log(f"{m}: dlas tune --budget {b}")
            try:
                t = tune_dlas(a, m, b, rec)
                points.append({"engine": "dlas", "label": f"--budget {b}", **t})
                rp.log(f"{m}: dlas tuned in {t['tune_s']:.1f} s")
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                rp.log(f"{m}: dlas tune --budget {b} FAILED: {str(e)[:200]}")
        servers = {}
        try:
            for n in [0] + trials:
                label = f"{n} trials" if n else "untuned"
                rp.log(f"{m}: TVM {label}: compiling" + (" and tuning" if n else ""))
                try:
                    s = tvm_server(a, n)
                    result["machine"]["tvm"] = s.ready.get("version")
                    t0 = time.perf_counter()
                    load = s.ask({"cmd": "load", "model": files["onnx"]})
                    wall = time.perf_counter() - t0
                    chk = s.ask({"cmd": "check", "model": files["onnx"], "input": files["inputs"],
                                 "reference": files["references"]})
                except (RuntimeError, OSError) as e:
                    rp.log(f"{m}: TVM {label} FAILED: {str(e)[:200]}")
                    continue
                servers[n] = s
                points.append({"engine": "tvm", "label": label, "trials": n,
                               "tune_s": load.get("tune_ms", 0.0) / 1e3, "load_wall_s": wall,
                               "compile_ms": load.get("compile_ms"), "accuracy": chk})
                rp.log(f"{m}: TVM {label}: {wall:.1f} s (tuning {load.get('tune_ms', 0) / 1e3:.1f} s), "
                       f"output error {chk.get('rel_err', float('nan')):.1e}")
            for p in points:
                p["times_ms"] = []
            for rnd in range(a.rounds):
                k = rnd % len(points)
                for p in points[k:] + points[:k]:
                    try:
                        if p["engine"] == "dlas":
                            times = bench_dlas(a, m, p["records"], a.repeat)
                        else:
                            times = servers[p["trials"]].timed(
                                {"cmd": "run", "model": files["onnx"], "repeat": a.repeat,
                                 "warmup": a.warmup})["times_ms"]
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
                        p.setdefault("errors", []).append(str(e))
                        continue
                    p["times_ms"] += times
                    rp.log(f"{m} round {rnd + 1}/{a.rounds} {p['engine']} {p['label']:14s} "
                           f"median {statistics.median(times):9.3f} ms")
        finally:
            for s in servers.values():
                s.close()
        for p in points:
            if p["times_ms"]:
                p["median_ms"] = statistics.median(p["times_ms"])
        rec = {"model": m, "points": points, "headline": headline(points)}
        result["records"].append(rec)
        if a.json:  # keep what is done if a later model fails
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    result["machine"]["loadavg_end"] = os.getloadavg()
    result["wall_s"] = time.time() - t_start
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
