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
--realtime runs every measured process (dlas, oneDNN and the peer servers alike) under
`chrt -f 10` (SCHED_FIFO; needs root or CAP_SYS_NICE; a server only while it is timed): on a shared 2-core machine a
background job otherwise preempts one of two worker threads for a whole time slice and the
other waits at the next barrier, which inflates 2-thread times of every peer by 1.3-1.6x.
The kernel's RT throttling still leaves 5% of each second to other tasks.
--peers adds the ONNX engines of onnx_peers.py (onnxruntime, openvino, tvm, tvm-tuned,
deepsparse; default: every one installed in .venv-peers by scripts/peers-setup.sh), each one
long-lived server per thread count, interleaved in the same rounds. They run the model as
the ONNX file `dlas export` writes (cached under --onnx-cache). Every peer's output, and every
dlas variant's, is checked against dlas's reference interpreter (`dlas run --reference`) on
one seeded input: max |out - ref| / max |ref| must be <= 1e-4; the tables show it, and a
mismatch is marked there, never dropped.
--compress int8|fp16|bf16 runs every engine on the model as `dlas quantize --dtype C` writes
it (int8: a standard ONNX QDQ model, calibrated on seeded random data; fp16/bf16: 16-bit
initializers): dlas loads that file, the ONNX peers run it as it is, and the
reference is the reference interpreter on the same file, so every engine computes the same
quantized function. The tolerance is then the quantization tolerance (QUANT_TOLERANCE: an
engine that requantizes in integers may round a value one step the other way, and the step
propagates), and the check also says whether the top-1 class agrees. PyTorch and the
oneDNN backend are left out (they run f32 models only).

usage:
  run_peers.py [--models M,..] [--threads 2[,1]] [--rounds 5] [--repeat 30]
               [--repeat-for resnet50=10,..] [--algos auto,direct,..] [--json out.json]
               [--baseline OLD_BUILD/bin/dlas] [--peers onnxruntime,openvino,tvm,..|none]
               [--tvm-trials N] [--compress int8|fp16|bf16]
  run_peers.py --quick      smoke check: resnet18-cifar, 1 round, 3 repeats
  run_peers.py --dry-run    print the interleaved schedule and exit
  run_peers.py --report out.json   print the tables of a saved run again
Standard library only; run with Debian's /usr/bin/python3 (PyTorch's peer needs its torch;
the ONNX peers run in .venv-peers' interpreters).
"""
import argparse
import json
import math
import os
import platform
import random
import signal
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ZOO = ["resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar", "vgg16-cifar", "resnet50",
       "mobilenetv2", "densenet161", "efficientnetb0"]
ALGOS = ["auto", "direct", "gemm", "spatial-pack", "winograd"]
PYTORCH, ONEDNN = "pytorch", "onednn"
# The ONNX peers (onnx_peers.py), and which interpreter of the peers' venv runs each.
ONNX_PEERS = ["onnxruntime", "openvino", "tvm", "tvm-tuned", "deepsparse"]
PEER_PYTHON = {"deepsparse": os.path.join("deepsparse", "bin", "python")}
NOT_DLAS = set([PYTORCH, ONEDNN] + ONNX_PEERS)
TOLERANCE = 1e-4  # max |out - reference| / max |reference|
# The same measure for a quantized model (--compress): int8 engines differ from the reference's
# float arithmetic by a rounding step here and there, which later layers carry on.
QUANT_TOLERANCE = 5e-2
COMPRESS = ["int8", "fp16", "bf16"]
BASELINE = "@baseline"  # suffix of a variant run through --baseline's binary


def log(msg):
    sys.stderr.write(f"[peers {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def csv(s):
    return [w.strip() for w in s.split(",") if w.strip()]


class PeerServer:
    """A long-lived peer process (pytorch_peer.py or onnx_peers.py --serve): one command per
    line on stdin, one JSON line per answer on stdout.

    With realtime, every thread of the server runs SCHED_FIFO only while it is timed
    (`timed`), and the normal scheduler otherwise: idle engines' worker threads spin-wait
    (ONNX Runtime, TVM, DeepSparse), and at FIFO priority a spinning idle server would hold
    a core against the next variant until the kernel's RT throttling stepped in.

    Between commands the server is stopped (SIGSTOP; SIGCONT before the next): even at
    normal priority, idle ONNX Runtime and OpenVINO worker threads spinning on both cores
    slowed the dlas variant timed next to them, whose threads sleep between steps and wake
    on a shared core (resnet18-cifar 2.9 ms against 2.16 alone, AMD EPYC Zen 5, 2
    threads), while oneDNN's spinning OpenMP threads held theirs. No engine runs beside
    another one's timing."""

    def __init__(self, name, cmd, realtime=False):
        self.name, self.realtime = name, realtime
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.ready = self._read()
        if not self.ready.get("ready"):
            raise RuntimeError(f"{name} peer did not start: {self.ready}")
        self._signal(signal.SIGSTOP)

    def _signal(self, sig):
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def _read(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.name} peer exited (see its stderr above)")
            try:
                return json.loads(line)
            except ValueError:
                log(f"{self.name}: {line.rstrip()[:200]}")  # a stray print, not an answer

    def _policy(self, fifo):
        # chrt -a: every thread of the process, those the engine already started included.
        args = ["-f", "-p", "10"] if fifo else ["-o", "-p", "0"]
        subprocess.run(["chrt", "-a"] + args + [str(self.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)

    def timed(self, command):
        """ask() under SCHED_FIFO (with realtime)."""
        if not self.realtime:
            return self.ask(command)
        self._policy(True)
        try:
            return self.ask(command)
        finally:
            self._policy(False)

    def ask(self, command):
        text = command if isinstance(command, str) else json.dumps(command)
        self._signal(signal.SIGCONT)
        try:
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
            answer = self._read()
        finally:
            self._signal(signal.SIGSTOP)
        if "error" in answer:
            raise RuntimeError(f"{self.name}: {text[:120]}: {answer['error']}")
        return answer

    def close(self):
        self._signal(signal.SIGCONT)
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


def dlas_command(a, model, variant, threads, repeat):
    binary, has_times = a.dlas, a.has_times
    if variant.endswith(BASELINE):
        variant, binary, has_times = variant[:-len(BASELINE)], a.baseline, a.baseline_has_times
    # Compressed: the quantized file every engine runs (known after prepare_model).
    target = a.onnx_files.get(model, f"{model}-{a.compress}.onnx") if a.compress else model
    cmd = list(a.prefix) + [binary, "bench", target, "--threads", str(threads), "--repeat",
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


def run_round(a, servers, model, variant, threads, repeat):
    if variant == PYTORCH:
        torch = servers[PYTORCH]
        if a.warmup > 0:
            torch.timed(f"run {model} {a.warmup}")  # discarded, like dlas bench --warmup
        j = torch.timed(f"run {model} {repeat}")
        return j["times_ms"], j
    if variant in ONNX_PEERS:
        if variant not in servers:
            raise RuntimeError(f"{variant}: {a.peer_errors.get(variant, 'not started')}")
        j = servers[variant].timed({"cmd": "run", "model": a.onnx_files[model],
                                    "repeat": repeat, "warmup": a.warmup})
        return j["times_ms"], j
    return run_dlas(a, model, variant, threads, repeat)


# ---- ONNX files, inputs and reference outputs (stdlib .npy, float32 only) ----------------


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}f", *values))


def read_npy(path):
    """The values of a little-endian f32/f64 .npy file, flattened."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    n = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    off = 10 + n if data[6] == 1 else 12 + n
    header = data[off - n:off].decode("latin1")
    code = {"'<f4'": "f", "'<f8'": "d"}.get(header.split("'descr':")[1].split(",")[0].strip())
    if not code:
        raise ValueError(f"{path}: only little-endian f32/f64 arrays are read here ({header})")
    return struct.unpack(f"<{(len(data) - off) // struct.calcsize(code)}{code}", data[off:])


def compare(outputs, references, tol=TOLERANCE):
    """max |out - ref| over max |ref|, over every output; top1: whether the first output's
    largest value is at the same index (the class a classifier picks)."""
    err = scale = 0.0
    for o, r in zip(outputs, references):
        if len(o) != len(r):
            raise ValueError(f"output has {len(o)} values, reference {len(r)}")
        err = max([err] + [abs(x - y) for x, y in zip(o, r)])
        scale = max([scale] + [abs(y) for y in r])
    rel = err / scale if scale > 0 else err
    out = {"max_abs_err": err, "scale": scale, "rel_err": rel, "tol": tol, "ok": rel <= tol}
    if outputs and outputs[0]:
        o, r = outputs[0], references[0]
        out["top1"] = max(range(len(o)), key=o.__getitem__) == max(range(len(r)), key=r.__getitem__)
    return out


def dlas_json(a, args):
    cmd = [a.dlas] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}


def stale(path, *sources):
    return not os.path.isfile(path) or any(os.path.getmtime(path) < os.path.getmtime(s)
                                           for s in sources if os.path.isfile(s))


def prepare_model(a, model):
    """The model as an ONNX file (zoo models exported once into --onnx-cache), one seeded
    random input and the reference interpreter's outputs on it, all cached there."""
    os.makedirs(a.onnx_cache, exist_ok=True)
    if model.endswith(".onnx"):
        onnx = os.path.abspath(model)
        stem = os.path.join(a.onnx_cache, os.path.basename(model)[:-5] + "-" + format(
            abs(hash(onnx)) % 10**8, "08d"))
    else:
        stem = os.path.join(a.onnx_cache, model)
        onnx = stem + ".onnx"
        if stale(onnx, a.dlas):
            dlas_json(a, ["export", model, "-o", onnx])
    if a.compress:  # the quantized file every engine runs, and the reference on it
        source, stem = onnx, f"{stem}-{a.compress}"
        onnx = stem + ".onnx"
        if stale(onnx, source, a.dlas):
            dlas_json(a, ["quantize", source, "--dtype", a.compress, "--calib-seed", "1",
                          "-o", onnx, "--json"])
    info = dlas_json(a, ["info", onnx, "--json"])
    inputs, refs = [], []
    for k, spec in enumerate(info["inputs"]):
        path = f"{stem}.input{k}.npy"
        if stale(path, onnx):
            rng = random.Random(k)
            n = math.prod(spec["shape"])
            write_npy(path, spec["shape"], [rng.gauss(0.0, 1.0) for _ in range(n)])
        inputs.append(path)
    refs = [f"{stem}.ref{k}.npy" for k in range(len(info["outputs"]))]
    if any(stale(r, onnx, a.dlas) for r in refs):
        dlas_json(a, ["run", onnx, "--reference", "--input"] + inputs + ["--output"] + refs)
    return {"onnx": onnx, "inputs": inputs, "references": refs}


def check_dlas(a, model, variant, threads):
    """One dlas variant's outputs on the reference input, against the reference."""
    files = a.model_files[model]
    algo, _, rest = variant.partition("/")
    layout, _, profile = rest.partition("/")
    outs = [os.path.join(a.onnx_cache, f"out-{os.getpid()}-{k}.npy")
            for k in range(len(files["references"]))]
    args = ["run", files["onnx"], "--threads", str(threads), "--conv-algo", algo]
    args += (["--layout", layout] if layout else []) + (["--profile", profile] if profile else [])
    dlas_json(a, args + ["--input"] + files["inputs"] + ["--output"] + outs)
    try:
        return compare([read_npy(o) for o in outs], [read_npy(r) for r in files["references"]],
                       a.tolerance)
    finally:
        for o in outs:
            if os.path.exists(o):
                os.remove(o)


def peer_python(a, peer):
    return os.path.join(a.venv, PEER_PYTHON.get(peer, os.path.join("bin", "python")))


def installed_peers(a):
    """{peer: version} of the ONNX peers in the venv (onnx_peers.py --list per interpreter)."""
    found = {}
    for py in sorted({peer_python(a, p) for p in ONNX_PEERS}):
        if not os.access(py, os.X_OK):
            continue
        p = subprocess.run([py, os.path.join(HERE, "onnx_peers.py"), "--list"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 0 and p.stdout.strip():
            got = json.loads(p.stdout.strip().splitlines()[-1])["peers"]
            # Each peer comes from its own interpreter (the DeepSparse venv also has an ORT).
            found.update({k: v for k, v in got.items() if peer_python(a, k) == py})
    return found


def start_onnx_peer(a, peer, threads):
    cmd = [peer_python(a, peer), os.path.join(HERE, "onnx_peers.py"), "--serve",
           "--peer", peer, "--threads", str(threads)]
    if peer == "tvm-tuned":
        cmd += ["--tvm-trials", str(a.tvm_trials)]
    return PeerServer(peer, cmd, realtime=bool(a.prefix))


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
            if s and v not in NOT_DLAS and not v.endswith(BASELINE)}
    best = min(dlas, key=lambda v: dlas[v]["median_ms"]) if dlas else None
    peers = {v: s for v, s in out.items() if s and v in ONNX_PEERS}
    best_peer = min(peers, key=lambda v: peers[v]["median_ms"]) if peers else None
    for v, s in out.items():
        if not s:
            continue
        if best_peer and v not in NOT_DLAS and not v.endswith(BASELINE):
            s["vs_best_peer"] = s["median_ms"] / peers[best_peer]["median_ms"]
        if pt and v != PYTORCH:
            s["vs_pytorch"] = s["median_ms"] / pt["median_ms"]
        if dn and v not in (PYTORCH, ONEDNN):
            s["vs_onednn"] = s["median_ms"] / dn["median_ms"]
        base = out.get(v + BASELINE)
        if base:
            s["vs_baseline"] = s["median_ms"] / base["median_ms"]
    rec["summary"], rec["best_dlas"], rec["best_peer"] = out, best, best_peer


def fmt_ratio(s, key):
    return f"{s[key]:.2f}×" if s and key in s else "–"


def fmt_acc(r, v):
    """The accuracy cell: max |out - ref| / max |ref|, marked when over the tolerance."""
    acc = r["variants"][v].get("accuracy")
    if not acc:
        return "–"
    if "error" in acc:
        return "check failed"
    return f"{acc['rel_err']:.1e}" + ("" if acc["ok"] else " **MISMATCH**") + (
        " (top-1 differs)" if acc.get("top1") is False else "")


def peer_label(r, v, peer_info):
    """A peer's row name: OpenVINO's default precision on this CPU when it is not f32 (the
    runs themselves force f32)."""
    info = (peer_info or {}).get(v, {})
    dp = info.get("default_precision")
    if v == "openvino" and dp and dp != "f32":
        return f"openvino (f32; default {dp})"
    if v == "tvm-tuned" and info.get("trials"):
        return f"tvm-tuned ({info['trials']} trials)"
    return v


def peers_table(rows, threads, peer_info, what=""):
    present = [p for p in ONNX_PEERS if any(p in r["variants"] for r in rows)]
    if not present:
        return []
    t = f"{threads} thread{'s' if threads > 1 else ''}"
    lines = ["", f"### {t}, batch 1{what} — ONNX peers (median ms; best dlas/best peer < 1: dlas "
             "faster; ✗ output mismatch)", "",
             "| model | best dlas | best dlas ms | " + " | ".join(
                 peer_label(None, p, peer_info) + " ms" for p in present) +
             " | best peer | best dlas/best peer |",
             "|---|---|---:|" + "---:|" * len(present) + "---|---:|"]
    for r in rows:
        s, b, bp = r["summary"], r["best_dlas"], r.get("best_peer")

        def cell(v):
            if v not in r["variants"]:
                return "–"
            if not s.get(v):
                return "failed"
            acc = r["variants"][v].get("accuracy") or {}
            return f"{s[v]['median_ms']:.3f}" + (" ✗" if acc.get("ok") is False else "")
        ratio = f"{s[b]['median_ms'] / s[bp]['median_ms']:.2f}×" if b and bp and s.get(b) else "–"
        lines.append(f"| {r['model']} | {b or '–'} | {cell(b) if b else '–'} | " +
                     " | ".join(cell(p) for p in present) + f" | {bp or '–'} | {ratio} |")
    return lines


def markdown(records, threads, peer_info=None, compress="dense", tol=TOLERANCE):
    rows = [r for r in records if r["threads"] == threads]
    what = "" if compress in (None, "dense") else f", {compress} (`dlas quantize --dtype {compress}`)"
    lines = [f"### {threads} thread{'s' if threads > 1 else ''}, batch 1{what} — summary", "",
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
    lines += peers_table(rows, threads, peer_info, what)
    lines += ["", f"### {threads} thread{'s' if threads > 1 else ''}, batch 1{what} — every "
              "variant (★ best dlas; ratios < 1: dlas faster; error: max |out − ref| / max |ref| "
              f"against the reference interpreter, tolerance {tol:g})", "",
              "| model | variant | median ms | round medians (min–max) | n | ×PyTorch | ×oneDNN | "
              "×best peer | error | compile (tune) s |",
              "|---|---|---:|---|---:|---:|---:|---:|---|---:|"]
    # The round-median range shows a noisy machine: a round far above the others ran while
    # something else held the CPUs; the pooled median resists fewer than half such rounds.
    for r in rows:
        for v in r["variants"]:
            s = r["summary"].get(v)
            name = f"dlas {v}" if v not in NOT_DLAS else peer_label(r, v, peer_info)
            if v == r["best_dlas"]:
                name = f"**{name}** ★"
            if not s:
                err = r["variants"][v]["errors"][:1]
                why = err[0][-70:].replace("|", "/").replace("\n", " ") if err else ""
                lines.append(f"| {r['model']} | {name} | failed | {why} | 0 | – | – | – | "
                             f"{fmt_acc(r, v)} | – |")
                continue
            rm = s["round_medians_ms"]
            ld = r["variants"][v].get("load") or {}
            comp = f"{ld['compile_ms'] / 1e3:.1f}" if "compile_ms" in ld else "–"
            if "tune_ms" in ld:
                comp += f" ({ld['tune_ms'] / 1e3:.0f})"
            lines.append(f"| {r['model']} | {name} | {s['median_ms']:.3f} | "
                         f"{min(rm):.3f}–{max(rm):.3f} | {s['n']} | {fmt_ratio(s, 'vs_pytorch')} | "
                         f"{fmt_ratio(s, 'vs_onednn')} | {fmt_ratio(s, 'vs_best_peer')} | "
                         f"{fmt_acc(r, v)} | {comp} |")
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


def prepare_and_check(a, m, t, rec, servers, peers, variants):
    """Before the rounds: the model's ONNX file, input and reference; every peer compiles (and
    tunes) it; every peer and dlas variant is checked against the reference."""
    if not peers and a.no_check and not a.compress:
        return
    try:
        files = a.model_files.get(m) or prepare_model(a, m)
        a.model_files[m], a.onnx_files[m] = files, files["onnx"]
    except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
        log(f"{m}: no ONNX file / reference: {e}")
        for p in peers:
            rec["variants"][p]["errors"].append(f"no ONNX file: {e}")
        return
    for p in peers:
        r = rec["variants"][p]
        if p not in servers:
            r["errors"].append(a.peer_errors.get(p, "not started"))
            continue
        try:
            r["load"] = servers[p].ask({"cmd": "load", "model": files["onnx"]})
            tune = f", tuned in {r['load']['tune_ms'] / 1e3:.0f} s" if "tune_ms" in r["load"] else ""
            log(f"{m}: {p} compiled in {r['load']['compile_ms'] / 1e3:.1f} s{tune}")
        except RuntimeError as e:
            r["errors"].append(str(e))
            log(f"{m} t{t} {p}: FAILED to load: {str(e)[:200]}")
            continue
        if not a.no_check:
            try:
                r["accuracy"] = servers[p].ask({"cmd": "check", "model": files["onnx"],
                                                "input": files["inputs"],
                                                "reference": files["references"],
                                                "tol": a.tolerance})
            except RuntimeError as e:
                r["accuracy"] = {"error": str(e)}
    if a.no_check:
        return
    for v in variants:
        if v in NOT_DLAS or v.endswith(BASELINE):
            continue
        try:
            rec["variants"][v]["accuracy"] = check_dlas(a, m, v, t)
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            rec["variants"][v]["accuracy"] = {"error": str(e)}
    bad = [f"{v} {c['rel_err']:.1e}" for v in variants
           for c in [rec["variants"][v].get("accuracy") or {}] if c.get("ok") is False]
    log(f"{m}: outputs against the reference interpreter: " +
        (f"MISMATCH {', '.join(bad)}" if bad else "all within tolerance"))


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
    ap.add_argument("--peers", default="auto", help="ONNX peers, comma-separated: onnxruntime, "
                    "openvino, tvm, tvm-tuned, deepsparse; auto (default): every one installed "
                    "in --venv; none: no ONNX peer")
    ap.add_argument("--venv", default=os.path.join(ROOT, ".venv-peers"),
                    help="the peers' virtual environment (scripts/peers-setup.sh)")
    ap.add_argument("--tvm-trials", type=int, default=64,
                    help="tvm-tuned: MetaSchedule's trial budget per model, over all its tasks")
    ap.add_argument("--onnx-cache", default=os.path.join(ROOT, "build", "peers-onnx"),
                    help="where zoo models are exported as ONNX, with inputs and reference outputs")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the accuracy check against the reference interpreter")
    ap.add_argument("--compress", choices=COMPRESS, help="run every engine on the model as "
                    "`dlas quantize --dtype C` writes it (int8: ONNX QDQ), checked against the "
                    f"reference interpreter on that file within {QUANT_TOLERANCE:g}; PyTorch and "
                    "oneDNN are left out")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per dlas bench process")
    ap.add_argument("--json", help="write every time and the summary here")
    ap.add_argument("--quick", action="store_true", help="smoke check: resnet18-cifar, 1 round, 3 repeats")
    ap.add_argument("--dry-run", action="store_true", help="print the schedule and exit")
    ap.add_argument("--realtime", action="store_true",
                    help="run every measured process under chrt -f 10 (SCHED_FIFO)")
    ap.add_argument("--report", metavar="JSON", help="print the tables of a saved --json run")
    a = ap.parse_args()
    a.prefix = ["chrt", "-f", "10"] if a.realtime else []
    a.tolerance = QUANT_TOLERANCE if a.compress else TOLERANCE
    if a.compress and not (a.no_pytorch and a.no_onednn):
        # PyTorch runs the zoo's f32 modules; the oneDNN backend has no QuantizeLinear /
        # DequantizeLinear lowering.
        a.no_pytorch = a.no_onednn = True
        log(f"--compress {a.compress}: PyTorch and the oneDNN backend left out (f32 only)")
    if a.report:
        with open(a.report) as f:
            saved = json.load(f)
        for t in saved["args"]["threads"]:
            print(markdown(saved["records"], t, saved["machine"].get("peers"),
                           saved["args"].get("compress"),
                           saved["args"].get("tolerance", TOLERANCE)))
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
    a.onnx_files, a.model_files, a.peer_errors = {}, {}, {}
    if a.peers in ("auto", "none"):
        peers = []
    else:
        peers = csv(a.peers)
        bad = [p for p in peers if p not in ONNX_PEERS]
        if bad:
            ap.error(f"unknown peer(s) {bad}; peers: {','.join(ONNX_PEERS)}")
    if "tvm-tuned" in peers and a.tvm_trials < 1:
        ap.error("tvm-tuned needs --tvm-trials >= 1")
    if a.peers == "auto" and not a.dry_run:
        found = installed_peers(a)
        peers = [p for p in ONNX_PEERS if p in found]
        log(f"ONNX peers installed in {a.venv}: {', '.join(peers) or 'none (scripts/peers-setup.sh)'}")
    # A baseline reruns the plain ALGO variants: /LAYOUT and /PROFILE need flags an older binary
    # may not have.
    variants = algos + ([v + BASELINE for v in algos if "/" not in v] if a.baseline else []) + \
        ([] if a.no_onednn else [ONEDNN]) + ([] if a.no_pytorch else [PYTORCH]) + peers

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
                            else f"onnx_peers --serve --peer {v}: run {m}.onnx {a.warmup}+{rep}"
                            if v in ONNX_PEERS else " ".join(dlas_command(a, m, v, t, rep))))
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

    if peers and a.peers != "auto":
        found = installed_peers(a)
        for p in peers:
            if p not in found:
                a.peer_errors[p] = f"not installed in {a.venv} (scripts/peers-setup.sh)"
    result = {"machine": machine_info(a), "args": {
        "models": models, "threads": threads_list, "rounds": a.rounds, "repeat": a.repeat,
        "repeat_for": repeat_for, "warmup": a.warmup, "variants": variants,
        "baseline": a.baseline, "peers": peers, "tvm_trials": a.tvm_trials,
        "compress": a.compress or "dense", "tolerance": a.tolerance,
        "pooled": "times_ms" if a.has_times else "round medians"}, "records": []}
    try:
        result["machine"]["dlas_hw"] = dlas_json(a, ["hw", "--json"]).get("model")
    except (RuntimeError, ValueError, subprocess.TimeoutExpired):
        pass
    result["machine"]["peers"] = {}
    log(f"cpu {result['machine'].get('cpu', '?')}, load {result['machine']['loadavg_start']}")
    t_start = time.time()
    for t in threads_list:
        servers = {}
        if not a.no_pytorch:
            torch = PeerServer(PYTORCH, [a.python, os.path.join(HERE, "pytorch_peer.py"), "--serve",
                                         "--threads", str(t)], realtime=a.realtime)
            servers[PYTORCH] = torch
            result["machine"]["torch"] = torch.ready.get("torch")
            log(f"pytorch peer ready (torch {torch.ready.get('torch')}, {torch.ready.get('threads')} threads)")
        for p in peers:
            if p in a.peer_errors:
                continue
            try:
                servers[p] = start_onnx_peer(a, p, t)
                info = {k: v for k, v in servers[p].ready.items() if k not in ("ready", "peer")}
                if p == "tvm-tuned":
                    info["trials"] = a.tvm_trials
                result["machine"]["peers"][p] = info
                log(f"{p} peer ready ({info.get('version', '?')}, {t} threads)")
            except (RuntimeError, OSError, ValueError) as e:
                a.peer_errors[p] = str(e)
                log(f"{p}: FAILED to start: {e}")
        try:
            for m in models:
                rep = repeat_for.get(m, a.repeat)
                rec = {"model": m, "threads": t, "batch": 1, "repeat": rep, "loadavg": [],
                       "variants": {v: {"times_ms": [], "round_medians_ms": [], "errors": [],
                                        "order": []} for v in variants}}
                if PYTORCH in servers:
                    try:
                        b = servers[PYTORCH].ask(f"load {m}")
                        log(f"{m}: pytorch loaded in {b['build_s']:.1f} s")
                    except RuntimeError as e:
                        log(str(e))
                prepare_and_check(a, m, t, rec, servers, peers, variants)
                for rnd in range(a.rounds):
                    rec["loadavg"].append(os.getloadavg()[0])  # noisy rounds show up here
                    k = rnd % len(variants)
                    for pos, v in enumerate(variants[k:] + variants[:k]):
                        r = rec["variants"][v]
                        if r["errors"] and not r["times_ms"]:
                            continue  # failed before: don't retry every round
                        try:
                            times, j = run_round(a, servers, m, v, t, rep)
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
                    vs = "".join(f", x{b[k]:.2f} {name}" for k, name in (
                        ("vs_pytorch", "PyTorch"), ("vs_onednn", "oneDNN"),
                        ("vs_best_peer", rec.get("best_peer") or "")) if k in b)
                    log(f"{m} t{t}: best dlas {rec['best_dlas']} {b['median_ms']:.3f} ms{vs}")
                if a.json:  # keep what we have if a later model fails or is interrupted
                    with open(a.json, "w") as f:
                        json.dump(result, f, indent=1)
        finally:
            for server in servers.values():
                server.close()
    result["machine"]["loadavg_end"] = os.getloadavg()
    result["wall_s"] = time.time() - t_start
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    m = result["machine"]
    versions = "".join(f", {p} {i.get('version', '?').split('-')[0]}" for p, i in m["peers"].items()
                       if p != "tvm-tuned")
    print(f"<!-- {m.get('cpu', '?')}, {m['nproc']} CPUs, torch {m.get('torch', '-')}{versions}, "
          f"dlas {m.get('git', '?')}, {a.rounds} rounds x {a.repeat} repeats, load "
          f"{m['loadavg_start'][0]:.2f}->{m['loadavg_end'][0]:.2f}, {result['wall_s']:.0f} s -->")
    for t in threads_list:
        print(markdown(result["records"], t, m["peers"], a.compress, a.tolerance))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
