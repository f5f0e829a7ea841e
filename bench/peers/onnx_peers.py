#!/usr/bin/env python3
"""ONNX peers for dlas benchmarks: one ONNX file run through another inference engine, timed
the way `dlas bench --json` times dlas, with the same statistics keys.

Peers (each a long-lived server process, so no timing pays process start-up or imports):
  onnxruntime  CPU execution provider, every graph optimization (ORT_ENABLE_ALL).
  openvino     CPU plugin, PERFORMANCE_HINT=LATENCY, INFERENCE_PRECISION_HINT=f32; the
               plugin's own default precision on this CPU is reported too
               ("default_precision": bf16 on AMX machines, f32 elsewhere).
  tvm          Apache TVM: ONNX -> Relax -> llvm -mcpu=<this CPU>, default schedules (no
               tuning): TVM's untuned baseline.
  tvm-tuned    the same, with MetaSchedule at a trial budget (--tvm-trials); "tune_ms" is
               the wall-clock tuning time.
  deepsparse   Neural Magic's DeepSparse engine (where it is installed).
Threads, alike for every peer: --threads intra-op threads, one stream, no inter-op
parallelism, no thread pinning (dlas pins nothing either).

usage:
  onnx_peers.py --peer P [--threads T] [--repeat N] [--warmup W] MODEL.onnx
      one JSON object: the statistics of `dlas bench --json` (median_ms, mean_ms, min_ms,
      max_ms, p10_ms, p90_ms, std_ms, cv, first_ms, compile_ms, repeat, number, warmup,
      threads, backend, batch, times_ms) and the peer's own keys (version, tune_ms, ...).
      --input X.npy --reference R.npy adds the accuracy check (below).
  onnx_peers.py --serve --peer P [--threads T] [--tvm-trials N]
      reads one JSON command per line from stdin and answers each with one JSON line:
        {"cmd": "load", "model": PATH}     compile (and tune): {"loaded", "compile_ms", ...}
        {"cmd": "run", "model": PATH, "repeat": N, "warmup": W}
                                           W discarded runs, then N timed: the statistics
        {"cmd": "check", "model": PATH, "input": X.npy, "reference": R.npy[, "tol": T]}
                                           one run on X against R: {"max_abs_err", "scale"
                                           (max |R|), "rel_err" (their ratio), "tol" (T,
                                           default 1e-4), "ok", "top1" (the first output's
                                           argmax agrees)}
        {"cmd": "infer", "model": PATH, "input": [X.npy, ...], "output": [Y.npy, ...]}
                                           one run on the inputs, each output written to
                                           its file: {"outputs": N} (dlas's peer executor)
        {"cmd": "quit"}
      A first line {"ready": true, ...} announces the peer; a failing command answers
      {"error": "..."} and the loop goes on.
  onnx_peers.py --list      the peers importable by this interpreter, with versions (JSON)
Run with .venv-peers/bin/python (scripts/peers-setup.sh); DeepSparse with
.venv-peers/deepsparse/bin/python.
"""
import argparse
import importlib.metadata
import importlib.util
import json
import math
import os
import sys
import tempfile
import time

PEERS = ["onnxruntime", "openvino", "tvm", "tvm-tuned", "deepsparse"]
MODULE = {"onnxruntime": "onnxruntime", "openvino": "openvino", "tvm": "tvm",
          "tvm-tuned": "tvm", "deepsparse": "deepsparse"}
DIST = {"onnxruntime": "onnxruntime", "openvino": "openvino", "tvm": "apache-tvm",
        "tvm-tuned": "apache-tvm", "deepsparse": "deepsparse"}
TOLERANCE = 1e-4  # max |peer - reference| over max |reference|


OUT = sys.stdout  # the JSON channel; main() points file descriptor 1 at stderr


def emit(obj):
    OUT.write(json.dumps(obj) + "\n")
    OUT.flush()


def installed():
    out = {}
    for p in PEERS:
        if importlib.util.find_spec(MODULE[p]) is not None:
            try:
                out[p] = importlib.metadata.version(DIST[p])
            except importlib.metadata.PackageNotFoundError:
                out[p] = "?"
    return out


def percentile(v, q):
    """dlas's percentile (src/system/measure.cc): linear between the two nearest ranks."""
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def latency_stats(times):
    n = len(times)
    mean = sum(times) / n
    std = math.sqrt(sum((t - mean) ** 2 for t in times) / (n - 1)) if n > 1 else 0.0
    return {"median_ms": percentile(times, 0.5), "mean_ms": mean, "min_ms": min(times),
            "max_ms": max(times), "p10_ms": percentile(times, 0.1),
            "p90_ms": percentile(times, 0.9), "std_ms": std, "cv": std / mean if mean > 0 else 0.0}


# ---- the engines: each turns an ONNX file into a callable f(inputs) -> [outputs] ----------


def input_specs(path):
    """[(name, shape, numpy dtype)] of the graph's real inputs; dynamic dims become 1."""
    import numpy as np
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    specs = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                 for d in t.shape.dim]
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
        specs.append((i.name, shape, dtype))
    return specs


class OnnxRuntime:
    def __init__(self, threads):
        import onnxruntime as ort
        self.ort, self.threads = ort, threads
        self.info = {"version": ort.__version__, "provider": "CPUExecutionProvider",
                     "graph_optimization": "ORT_ENABLE_ALL"}

    def compile(self, path, specs):
        ort = self.ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [s[0] for s in specs]
        return lambda xs: sess.run(None, dict(zip(names, xs))), {}


def ov_type(t):
    """An OpenVINO element type as its short name (f32, bf16, f16)."""
    return t.get_type_name() if hasattr(t, "get_type_name") else str(t)


class OpenVino:
    def __init__(self, threads):
        import openvino as ov
        self.ov, self.threads = ov, threads
        self.core = ov.Core()
        # Asked before anything is set: what the plugin would pick for an f32 model here.
        default = ov_type(self.core.get_property("CPU", "INFERENCE_PRECISION_HINT"))
        self.info = {"version": ov.__version__, "device": "CPU",
                     "cpu": str(self.core.get_property("CPU", "FULL_DEVICE_NAME")),
                     "default_precision": default, "precision": "f32",
                     "performance_hint": "LATENCY"}

    def compile(self, path, specs):
        cfg = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32",
               "INFERENCE_NUM_THREADS": self.threads, "NUM_STREAMS": 1,
               "ENABLE_CPU_PINNING": False}
        compiled = self.core.compile_model(self.core.read_model(path), "CPU", cfg)
        req = compiled.create_infer_request()
        got = ov_type(compiled.get_property("INFERENCE_PRECISION_HINT"))

        def run(xs):
            req.infer(dict(enumerate(xs)))
            return [req.get_output_tensor(i).data.copy() for i in range(len(compiled.outputs))]
        return run, {"precision": got}


def _ms_build(mod, target, _params):
    """MetaSchedule's default_build without its `import tvm.s_tir.tensor_intrin`, which
    registers every target's tensor intrinsics (~25 s) in each fresh builder process: with
    that, every candidate batch hit the builder's timeout and no trial was ever measured. No
    f32 CPU schedule tensorizes, so the intrinsics are not needed."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock
    return tvm_build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)


class Tvm:
    def __init__(self, threads, trials=0, work_dir=None):
        import tvm
        from tvm import relax
        self.tvm, self.relax = tvm, relax
        self.threads, self.trials, self.work_dir = threads, trials, work_dir
        self.mcpu = tvm.target.codegen.llvm_get_system_cpu()
        self.target = tvm.target.Target({"kind": "llvm", "mcpu": self.mcpu, "num-cores": threads})
        self.info = {"version": tvm.__version__, "frontend": "relax", "target": str(self.target),
                     "mcpu": self.mcpu, "schedules": "metaschedule" if trials else "default"}
        if trials:
            self.info["trials"] = trials

    def compile(self, path, specs):
        import onnx
        tvm, relax = self.tvm, self.relax
        from tvm.relax.frontend.onnx import from_onnx
        mod = from_onnx(onnx.load(path), shape_dict={n: s for n, s, _ in specs})
        extra = {}
        with self.target:
            mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                            relax.transform.CanonicalizeBindings(),
                                            relax.get_pipeline("zero")])(mod)
        if self.trials:
            mod, extra = self._tune(mod)
        ex = tvm.compile(mod, target=self.target)
        vm = relax.VirtualMachine(ex, tvm.cpu())
        fn = vm["main"]

        def run(xs):
            out = fn(*[tvm.runtime.tensor(x) for x in xs])
            outs = out if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else [out]
            return [o.numpy() for o in outs]
        return run, extra

    def _tune(self, mod):
        from tvm.s_tir import meta_schedule as ms
        tvm, relax = self.tvm, self.relax
        work_dir = self.work_dir or tempfile.mkdtemp(prefix="dlas-tvm-tune-")
        # Under --realtime the server runs SCHED_FIFO; the search (its compiler and builder
        # processes) runs under the normal scheduler, so it cannot starve the machine.
        policy = os.sched_getscheduler(0)
        if policy != os.SCHED_OTHER:
            prio = os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        t0 = time.perf_counter()
        try:
            tasks = ms.relax_integration.extract_tasks(mod, self.target)
            db = ms.relax_integration.tune_relax(
                mod, params={}, target=self.target, work_dir=work_dir,
                max_trials_global=self.trials, num_trials_per_iter=min(64, self.trials),
                builder=ms.builder.LocalBuilder(f_build=_ms_build, timeout_sec=60),
                database="memory", seed=0)
            with self.target, db, tvm.transform.PassContext(opt_level=3):
                mod = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
        finally:
            tune_ms = (time.perf_counter() - t0) * 1e3
            if policy != os.SCHED_OTHER:
                os.sched_setscheduler(0, policy, prio)
        return mod, {"tune_ms": tune_ms, "tasks": len(tasks), "trials": self.trials,
                     "tune_dir": work_dir}


class DeepSparse:
    def __init__(self, threads):
        import deepsparse
        self.ds, self.threads = deepsparse, threads
        self.info = {"version": deepsparse.__version__}

    def compile(self, path, specs):
        engine = self.ds.compile_model(path, batch_size=specs[0][1][0] if specs[0][1] else 1,
                                       num_cores=self.threads, num_streams=1)
        return lambda xs: engine(list(xs)), {}


def make_engine(peer, threads, trials, work_dir):
    if peer == "onnxruntime":
        return OnnxRuntime(threads)
    if peer == "openvino":
        return OpenVino(threads)
    if peer == "tvm":
        return Tvm(threads)
    if peer == "tvm-tuned":
        if trials < 1:
            raise ValueError("tvm-tuned needs --tvm-trials >= 1")
        return Tvm(threads, trials, work_dir)
    if peer == "deepsparse":
        return DeepSparse(threads)
    raise ValueError(f"unknown peer '{peer}' ({', '.join(PEERS)})")


class Peer:
    """One engine and the models it has compiled (path -> (run, inputs, load record))."""

    def __init__(self, peer, threads, trials=0, work_dir=None):
        self.peer, self.threads = peer, threads
        self.engine = make_engine(peer, threads, trials, work_dir)
        self.loaded = {}

    def load(self, path):
        if path in self.loaded:
            return self.loaded[path][2]
        import numpy as np
        if not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")
        specs = input_specs(path)
        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(s).astype(d) if d.kind == "f" else np.zeros(s, d)
              for _, s, d in specs]
        t0 = time.perf_counter()
        run, extra = self.engine.compile(path, specs)
        compile_ms = (time.perf_counter() - t0) * 1e3 - extra.get("tune_ms", 0.0)
        t0 = time.perf_counter()
        run(xs)
        first_ms = (time.perf_counter() - t0) * 1e3
        rec = {"model": path, "loaded": True, "peer": self.peer, "compile_ms": compile_ms,
               "first_ms": first_ms, **extra}
        self.loaded[path] = (run, xs, rec, specs)
        return rec

    def run(self, path, repeat, warmup=0):
        rec = self.load(path)
        run, xs, _, specs = self.loaded[path]
        for _ in range(warmup):
            run(xs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run(xs)
            times.append((time.perf_counter() - t0) * 1e3)
        out = {"model": path, "peer": self.peer, **latency_stats(times),
               "first_ms": rec["first_ms"], "compile_ms": rec["compile_ms"], "repeat": repeat,
               "number": 1, "warmup": warmup, "threads": self.threads, "backend": self.peer,
               "batch": specs[0][1][0] if specs and specs[0][1] else 1,
               **{k: v for k, v in self.engine.info.items()},
               **{k: rec[k] for k in ("tune_ms", "tasks", "trials", "precision") if k in rec},
               "times_ms": [round(t, 4) for t in times]}
        return out

    def infer(self, path, input_paths, output_paths):
        import numpy as np
        self.load(path)
        run, _, _, specs = self.loaded[path]
        if len(input_paths) != len(specs):
            raise ValueError(f"{len(input_paths)} inputs for a model of {len(specs)}")
        xs = [np.load(p).astype(d, copy=False) for p, (_, _, d) in zip(input_paths, specs)]
        outs = run(xs)
        if len(outs) < len(output_paths):
            raise ValueError(f"{len(outs)} outputs, {len(output_paths)} asked for")
        for o, p in zip(outs, output_paths):
            np.save(p, np.ascontiguousarray(np.asarray(o)))
        return {"model": path, "outputs": len(output_paths)}

    def check(self, path, input_paths, reference_paths, tol=TOLERANCE):
        import numpy as np
        self.load(path)
        run, _, _, specs = self.loaded[path]
        xs = [np.load(p).astype(d) for p, (_, _, d) in zip(input_paths, specs)]
        outs = run(xs)
        refs = [np.load(p) for p in reference_paths]
        if len(outs) < len(refs):
            raise ValueError(f"{len(outs)} outputs, {len(refs)} references")
        err, scale = 0.0, 0.0
        for o, r in zip(outs, refs):
            o = np.asarray(o, dtype=np.float64).reshape(r.shape)
            r = r.astype(np.float64)
            err = max(err, float(np.max(np.abs(o - r))) if r.size else 0.0)
            scale = max(scale, float(np.max(np.abs(r))) if r.size else 0.0)
        rel = err / scale if scale > 0 else err
        out = {"model": path, "peer": self.peer, "max_abs_err": err, "scale": scale,
               "rel_err": rel, "tol": tol, "ok": bool(rel <= tol)}
        if refs and refs[0].size:  # the class a classifier picks, first output
            out["top1"] = bool(np.argmax(np.asarray(outs[0]).reshape(-1)) ==
                               np.argmax(refs[0].reshape(-1)))
        return out


def as_list(v):
    return v if isinstance(v, list) else [v]


def serve(peer):
    emit({"ready": True, "peer": peer.peer, "threads": peer.threads, **peer.engine.info})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if line == "quit":
            break
        try:
            c = json.loads(line)
            cmd = c.get("cmd")
            if cmd == "quit":
                break
            if cmd == "load":
                emit(peer.load(c["model"]))
            elif cmd == "run":
                n = int(c.get("repeat", 1))
                if n < 1:
                    raise ValueError("repeat must be >= 1")
                emit(peer.run(c["model"], n, int(c.get("warmup", 0))))
            elif cmd == "check":
                emit(peer.check(c["model"], as_list(c["input"]), as_list(c["reference"]),
                                float(c.get("tol", TOLERANCE))))
            elif cmd == "infer":
                emit(peer.infer(c["model"], as_list(c["input"]), as_list(c["output"])))
            else:
                raise ValueError(f"bad command {line!r} (cmd: load | run | check | infer | quit)")
        except Exception as e:  # one bad command must not end the A/B loop
            emit({"error": f"{type(e).__name__}: {e}"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", help="ONNX file")
    ap.add_argument("--peer", choices=PEERS)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--tvm-trials", type=int, default=0,
                    help="MetaSchedule's trial budget (tvm-tuned), over all tasks")
    ap.add_argument("--tvm-work-dir", help="MetaSchedule's logs (default: a temporary folder)")
    ap.add_argument("--input", nargs="*", default=[], help="accuracy check: input .npy files")
    ap.add_argument("--reference", nargs="*", default=[], help="accuracy check: expected outputs")
    ap.add_argument("--serve", action="store_true", help="answer JSON commands from stdin")
    ap.add_argument("--list", action="store_true", help="the installed peers (JSON)")
    a = ap.parse_args()
    # The engines' own banners and logs (DeepSparse prints one to stdout from C++) must not
    # mix with the JSON lines: those go to a private copy of stdout, and fd 1 to stderr.
    global OUT
    sys.stdout.flush()
    OUT = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    if a.list:
        emit({"python": sys.executable, "peers": installed()})
        return 0
    if not a.peer:
        ap.error("--peer is required")
    if a.threads < 1 or a.repeat < 1 or a.warmup < 0:
        ap.error("--threads and --repeat must be >= 1, --warmup >= 0")
    if a.peer == "tvm-tuned" and a.tvm_trials < 1:
        ap.error("tvm-tuned needs --tvm-trials N (N >= 1)")
    if bool(a.input) != bool(a.reference):
        ap.error("--input and --reference go together")
    # Before any engine is imported: every runtime that reads these sizes its pool by them.
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    os.environ["TVM_NUM_THREADS"] = str(a.threads)
    os.environ.setdefault("TVM_BIND_THREADS", "0")
    os.environ.setdefault("NM_DISABLE_ANALYTICS", "1")
    peer = Peer(a.peer, a.threads, a.tvm_trials, a.tvm_work_dir)
    if a.serve:
        serve(peer)
        return 0
    if not a.model:
        ap.error("give an ONNX file (or --serve / --list)")
    out = peer.run(a.model, a.repeat, a.warmup)
    if a.input:
        out["accuracy"] = peer.check(a.model, a.input, a.reference)
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
