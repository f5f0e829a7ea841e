#!/usr/bin/python3
"""Exports torchvision CNNs (and the Swin and MaxViT transformers) to ONNX with PyTorch's own exporter, plus a seeded input and
PyTorch's output, so dlas can check that it imports and runs them with matching outputs.

For every selected architecture it writes into OUT:
  <name>.onnx          the model (random weights, eval mode, BN statistics randomised)
  <name>.input.npy     the seeded float32 input
  <name>.output.npy    PyTorch's eager fp32 output for that input
  <name>.output64.npy  the same model run in float64: the truth both fp32 runs approximate
  <name>.json          {"status": "ok" | "export_failed", "error", "opset", "input_shape", ...}
Up-to-date entries (same script hash and library versions) are skipped, so tests can call
this script every run. Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3).

usage: export_torchvision.py --out DIR [--models a,b,...] [--size N] [--force] [--list]
"""
import argparse
import copy
import hashlib
import json
import os
import sys
import time
import traceback

# name -> (torchvision builder, input H=W, opset, extra builder kwargs). The "-opsetN"
# variants also export without constant folding, so the exporter's Constant nodes and
# Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains reach dlas's importer and folder
# unfolded. (The exporter fuses eval-mode BatchNorm into a preceding Conv either way;
# DenseNet keeps BatchNormalization nodes, as its BNs precede their convs.)
# Sizes are the smallest the architecture exports at: VGG and AlexNet end in an adaptive
# pool to 7x7 / 6x6 that ONNX export only handles when it divides the feature map, so
# they need 224; everything else pools globally and runs at 64 (Inception v3 needs 75+).
ARCHITECTURES = {
    "resnet18": ("resnet18", 64, 13, {}),
    "resnet18-opset11": ("resnet18", 64, 11, {}),
    "resnet50": ("resnet50", 64, 13, {}),
    "resnext50_32x4d": ("resnext50_32x4d", 64, 13, {}),
    "mobilenet_v2": ("mobilenet_v2", 64, 13, {}),
    "mobilenet_v2-opset11": ("mobilenet_v2", 64, 11, {}),
    "mobilenet_v3_small": ("mobilenet_v3_small", 64, 13, {}),
    "mobilenet_v3_large-opset17": ("mobilenet_v3_large", 64, 17, {}),
    "efficientnet_b0": ("efficientnet_b0", 64, 13, {}),
    "densenet121": ("densenet121", 64, 13, {}),
    "squeezenet1_0": ("squeezenet1_0", 64, 13, {}),
    "squeezenet1_1-opset11": ("squeezenet1_1", 64, 11, {}),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", 64, 13, {}),
    "shufflenet_v2_x0_5-opset17": ("shufflenet_v2_x0_5", 64, 17, {}),
    "googlenet": ("googlenet", 64, 13, {"aux_logits": False, "init_weights": True}),
    "inception_v3": ("inception_v3", 96, 13, {"aux_logits": False, "init_weights": True}),
    "mnasnet0_5": ("mnasnet0_5", 64, 13, {}),
    "mnasnet0_5-opset17": ("mnasnet0_5", 64, 17, {}),
    "regnet_x_400mf": ("regnet_x_400mf", 64, 13, {}),
    "regnet_y_400mf": ("regnet_y_400mf", 64, 13, {}),
    "convnext_tiny": ("convnext_tiny", 64, 13, {}),
    "swin_t": ("swin_t", 64, 13, {}),
    "maxvit_t": ("maxvit_t", 224, 13, {}),
    "alexnet": ("alexnet", 224, 13, {}),
    "vgg11": ("vgg11", 224, 13, {}),
}
DEFAULT_MODELS = list(ARCHITECTURES)
SEED = 20240611


def script_hash():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def randomise_batch_norm(torch, model, height, generator):
    """Gives every BatchNorm non-trivial affine parameters and running statistics that match
    the activations it sees (so no layer saturates or vanishes), then perturbs them."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return 0
    with torch.no_grad():
        for bn in bns:
            bn.weight.uniform_(0.5, 1.5, generator=generator)
            bn.bias.uniform_(-0.2, 0.2, generator=generator)
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration batches
        model.train()
        for _ in range(2):
            model(torch.randn(4, 3, height, height, generator=generator))
        for bn in bns:
            std = bn.running_var.sqrt()
            noise = torch.randn(bn.running_mean.shape, generator=generator)
            bn.running_mean.add_(0.1 * std * noise)
            scale = torch.empty(bn.running_var.shape).uniform_(0.8, 1.25, generator=generator)
            bn.running_var.mul_(scale)
    model.eval()
    return len(bns)


def export_one(torch, torchvision, name, out_dir, stamp):
    builder, _, opset, kwargs = ARCHITECTURES[name]
    size = stamp["input_shape"][2]
    fold = "-opset" not in name
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    model = getattr(torchvision.models, builder)(weights=None, **kwargs)
    model.eval()
    bns = randomise_batch_norm(torch, model, size, generator)
    x = torch.randn(1, 3, size, size, generator=generator)
    with torch.no_grad():
        y = model(x)
        y64 = copy.deepcopy(model).double()(x.double())
    if not isinstance(y, torch.Tensor):  # GoogLeNetOutputs / InceptionOutputs
        y, y64 = y[0], y64[0]
    import numpy as np
    base = os.path.join(out_dir, name)
    onnx_tmp = base + ".onnx.tmp"
    torch.onnx.export(model, x, onnx_tmp, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=fold)
    os.replace(onnx_tmp, base + ".onnx")
    np.save(base + ".input.npy", x.numpy().astype(np.float32))
    np.save(base + ".output.npy", y.numpy().astype(np.float32))
    np.save(base + ".output64.npy", y64.numpy())
    stamp.update(status="ok", batch_norms=bns, constant_folding=fold, output_shape=list(y.shape),
                 output_max_abs=float(y.abs().max()))


def library_versions():
    from importlib import metadata
    return {"script": script_hash(), "torch": metadata.version("torch"),
            "torchvision": metadata.version("torchvision")}


def up_to_date(stamp_path, versions, size):
    if not os.path.exists(stamp_path):
        return None
    with open(stamp_path) as f:
        old = json.load(f)
    same = old.get("versions") == versions and old.get("input_shape", [0] * 4)[2] == size
    return old if same else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="output folder")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated names (default: all)")
    parser.add_argument("--force", action="store_true", help="re-export up-to-date entries")
    parser.add_argument("--list", action="store_true", help="print the known names and exit")
    parser.add_argument("--size", type=int, default=0,
                        help="input height and width for every model (default: each model's "
                        "smallest; 224 for benchmarks)")
    args = parser.parse_args()
    if args.list:
        print("\n".join(ARCHITECTURES))
        return 0
    if not args.out:
        parser.error("--out is required")
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in ARCHITECTURES]
    if unknown:
        parser.error("unknown models: " + ", ".join(unknown))
    os.makedirs(args.out, exist_ok=True)
    versions = library_versions()
    # Test processes may run this concurrently: one exports, the others wait and then find
    # everything up to date. torch is imported only when something needs exporting.
    import fcntl
    with open(os.path.join(args.out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        size_of = {n: args.size or ARCHITECTURES[n][1] for n in names}
        todo = [n for n in names if args.force or
                not up_to_date(os.path.join(args.out, n + ".json"), versions, size_of[n])]
        for n in names:
            if n not in todo:
                print(f"{n}: up to date")
        if not todo:
            return 0
        import torch
        import torchvision
        # One thread: the test suite exports beside other tests, and two spinning thread
        # pools on a 2-core machine slow both several-fold.
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        failures = 0
        for name in todo:
            builder, _, opset, _ = ARCHITECTURES[name]
            size = size_of[name]
            stamp_path = os.path.join(args.out, name + ".json")
            stamp = {"name": name, "architecture": builder, "opset": opset,
                     "input_shape": [1, 3, size, size], "versions": versions}
            start = time.time()
            try:
                export_one(torch, torchvision, name, args.out, stamp)
            except Exception as e:  # recorded; the C++ test reports it
                failures += 1
                stamp.update(status="export_failed", error=f"{type(e).__name__}: {e}")
                traceback.print_exc()
            stamp["seconds"] = round(time.time() - start, 2)
            tmp = stamp_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(stamp, f, indent=1)
            os.replace(tmp, stamp_path)
            print(f"{name}: {stamp['status']} in {stamp['seconds']} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
