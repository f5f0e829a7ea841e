#!/usr/bin/env python3
"""dlas on a CUDA device against cuDNN (dlas's --backend cudnn) and PyTorch on CUDA, on the
same models, interleaved round by round (docs/gpu.md "Benchmarks"). dlas runs twice: with
the GPU profile when this GPU has one (`dlas hw --calibrate --device cuda`), and with the
hand-written rule (`--profile none`); with --tune S a third time, on the records of a
`dlas tune --device cuda --budget S` of the model made before the rounds.

Models: "tv:NAME" is a torchvision architecture (random weights, seeded), exported once to
ONNX for dlas while PyTorch runs the very same module; any other name is a dlas zoo model or
an ONNX file, run in dlas only (dlas and cudnn rows). Every row is batch 1, fp32 by default
(TF32 off everywhere: PyTorch's matmul and cuDNN flags, cuDNN's FMA math in dlas), or
--compress fp16|bf16 (dlas's and cuDNN's 16-bit variants; PyTorch's module and input cast to
the type), timed with CUDA events around the kernels (dlas: its CUDA graph; PyTorch: a
captured torch.cuda.CUDAGraph replay, and eager), median of --repeat.

  python3 bench/gpu/compare_gpu.py --dlas build/bin/dlas --models tv:resnet50,resnet18-cifar \
      --rounds 3 --repeat 50 --json out.json

Needs a CUDA device; PyTorch rows need torch + torchvision with CUDA (skipped otherwise).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def torch_available():
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        return torch.cuda.is_available()
    except Exception:
        return False


def export_torchvision(name, path, size):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, size, size)
    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=17)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
    except TypeError:
        torch.onnx.export(model, (x,), path, **kwargs)
    return model


def time_torch(model, size, repeat, channels_last, graph, compress="dense"):
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(compress, torch.float32)
    m = model.cuda().eval().to(dtype)
    x = torch.randn(1, 3, size, size, device="cuda", dtype=dtype)
    if channels_last:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(5):
                m(x)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        run = lambda: m(x)  # noqa: E731
        if graph:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                m(x)
            run = g.replay
        times = []
        for _ in range(repeat):
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def time_dlas(dlas, model, args, repeat):
    cmd = [dlas, "bench", model, "--repeat", str(repeat), "--json"] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"}
    j = json.loads(r.stdout)
    return {"kernel_ms": j.get("kernel_median_ms"), "e2e_ms": j["median_ms"],
            "compile_ms": j["compile_ms"], "arena_bytes": j.get("arena_bytes")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dlas", default="build/bin/dlas")
    p.add_argument("--models", default="tv:resnet50,tv:mobilenet_v2,tv:densenet121,"
                   "tv:efficientnet_b0,resnet18-cifar,mobilenetv2-cifar")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--workdir", default="/tmp/dlas_gpu_models")
    p.add_argument("--compress", default="dense", choices=["dense", "fp16", "bf16"])
    p.add_argument("--tune", type=float, default=0,
                   help="seconds of `dlas tune --device cuda` per model (0: no tuned row)")
    p.add_argument("--json", help="write every measurement here")
    a = p.parse_args()
    comp = [] if a.compress == "dense" else ["--compress", a.compress]
    os.makedirs(a.workdir, exist_ok=True)
    have_torch = torch_available()
    if not have_torch:
        print("PyTorch with CUDA is not available: PyTorch rows skipped", file=sys.stderr)
    rows = []
    for name in [m for m in a.models.split(",") if m]:
        model_arg, module = name, None
        if name.startswith("tv:"):
            if not have_torch:
                continue
            model_arg = os.path.join(a.workdir, name[3:] + ".onnx")
            t0 = time.time()
            module = export_torchvision(name[3:], model_arg, a.size)
            print(f"{name}: exported in {time.time() - t0:.1f} s", file=sys.stderr)
        cells = {}
        records = None
        if a.tune > 0:
            records = os.path.join(a.workdir, name.replace(":", "_").replace("/", "_") +
                                   f".{a.compress}.records.jsonl")
            t0 = time.time()
            r = subprocess.run([a.dlas, "tune", model_arg, "--device", "cuda", "--budget",
                                f"{a.tune:g}s", "-o", records] + comp,
                               capture_output=True, text=True)
            tail = (r.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name}: tuned in {time.time() - t0:.1f} s (rc {r.returncode}): {tail}",
                  file=sys.stderr)
            if r.returncode != 0:
                records = None
        for r in range(a.rounds):
            order = ["dlas", "dlas-rule"] + (["dlas-tuned"] if records else []) + ["cudnn"] + (
                ["torch", "torch-graph", "torch-cl-graph"] if module else [])
            if r % 2:
                order.reverse()
            for peer in order:
                if peer == "dlas":
                    res = time_dlas(a.dlas, model_arg, ["--device", "cuda"] + comp, a.repeat)
                elif peer == "dlas-rule":  # the hand-written auto rule, not the GPU profile
                    res = time_dlas(a.dlas, model_arg,
                                    ["--device", "cuda", "--profile", "none"] + comp, a.repeat)
                elif peer == "dlas-tuned":
                    res = time_dlas(a.dlas, model_arg,
                                    ["--device", "cuda", "--records", records] + comp, a.repeat)
                elif peer == "cudnn":
                    res = time_dlas(a.dlas, model_arg, ["--backend", "cudnn"] + comp, a.repeat)
                else:
                    ms = time_torch(module, a.size, a.repeat, channels_last=peer == "torch-cl-graph",
                                    graph=peer != "torch", compress=a.compress)
                    res = {"kernel_ms": ms}
                cells.setdefault(peer, []).append(res)
        row = {"model": name, "compress": a.compress}
        for peer, results in cells.items():
            ok = [x for x in results if "error" not in x]
            if not ok:
                row[peer] = {"error": results[0]["error"]}
                continue
            row[peer] = {k: statistics.median([x[k] for x in ok if x.get(k) is not None])
                         for k in ok[0] if ok[0][k] is not None}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    # The table: kernel time (ms) and dlas's ratio to each peer (the tuned row's where there is
    # one).
    peers = ["dlas", "dlas-rule", "dlas-tuned", "cudnn", "torch", "torch-graph", "torch-cl-graph"]
    print(f"{a.compress}, batch 1, kernel time (CUDA events)")
    print("| model | " + " | ".join(f"{x} ms" for x in peers) +
          " | dlas/cudnn | dlas/best torch | best dlas/cudnn |")
    print("|---|" + "---:|" * (len(peers) + 3))
    for row in rows:
        def ms(peer):
            v = row.get(peer, {})
            return v.get("kernel_ms") if isinstance(v, dict) else None
        vals = [ms(x) for x in peers]
        torch_best = min([v for v in vals[4:] if v], default=None)
        d, c = vals[0], vals[3]
        best = min([v for v in vals[:3] if v], default=None)
        ratio_c = f"{d / c:.2f}" if d and c else "-"
        ratio_t = f"{d / torch_best:.2f}" if d and torch_best else "-"
        ratio_b = f"{best / c:.2f}" if best and c else "-"
        print(f"| {row['model']} | " + " | ".join(f"{v:.3f}" if v else "-" for v in vals) +
              f" | {ratio_c} | {ratio_t} | {ratio_b} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
