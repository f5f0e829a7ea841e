#!/usr/bin/python3
"""Trains small CNNs on Fashion-MNIST with PyTorch itself (not dlas), exports them to ONNX
with PyTorch's exporter, and records PyTorch's own top-1 on the full test split: models
"trained outside dlas", for checking that dlas evaluates and quantizes foreign models as
their authors would.

Each model is trained under one input convention (the preprocessing its author used):
  scaled       x = pixel / 255
  normalized   x = (pixel / 255 - 0.2860) / 0.3530       (Fashion-MNIST's mean and std)
  scaled-nhwc  x = pixel / 255, input laid out [N, 28, 28, 1] (a Keras-style export)

For every model NAME it writes into OUT:
  NAME.onnx   the model (eval mode; BatchNorm folded by the exporter)
  NAME.json   {"status": "ok", "convention", "mean", "std", "scale", "layout",
               "torch_top1" (percent, full test split), "correct" (images right), "n",
               "train_seconds", "torch", "script"}
Entries with the same script hash and torch version are kept, so tests can call this
script on every run. Training is seeded and deterministic for a given thread count
(default 1: the test suite trains beside other tests on a 2-core machine, and two spinning
thread pools on two cores slow both several-fold); the recorded top-1 is PyTorch's on the
exported weights, whatever it comes to.

The data come from Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist) or
--data DIR. Needs Debian's python3-torch and python3-numpy (/usr/bin/python3).

usage: train_fmnist_torch.py --out DIR [--models a,b] [--epochs E] [--threads T] [--force] [--list]
"""
import argparse
import fcntl
import gzip
import hashlib
import json
import os
import struct
import sys
import time

MEAN, STD = 0.2860, 0.3530
# name -> (convention, architecture, epochs, learning rate[, optimizer]). "cnn" is two 3x3
# conv blocks and a linear classifier; "cnn-bn" adds BatchNorm and a wider head; "cnn-wide"
# is "cnn" with a 256-wide hidden layer. The optimizer is SGD with momentum 0.9 unless
# "adam". The short-trained "normalized-brief" model is the weakly trained kind a user
# brings from a notebook; "normalized-adam" is the model on which the entropy calibrator
# (before it ignored histogram spikes) clipped the first conv's output at its background
# spikes: 18% relative error of the next layer's output, 1.3 points of top-1.
MODELS = {
    "scaled": ("scaled", "cnn", 0.5, 0.05),
    "normalized": ("normalized", "cnn-bn", 0.5, 0.05),
    "normalized-brief": ("normalized", "cnn", 0.15, 0.02),
    "scaled-nhwc": ("scaled-nhwc", "cnn", 0.5, 0.05),
    "normalized-adam": ("normalized", "cnn-wide", 0.3, 0.001, "adam"),
}
SEED = 20261125


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    import numpy as np
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, prefix):
    def find(stem):
        for name in (stem + ".gz", stem):
            p = os.path.join(data_dir, name)
            if os.path.exists(p):
                return p
        sys.exit(f"train_fmnist_torch: {stem} not found in {data_dir}")
    x = read_idx(find(f"{prefix}-images-idx3-ubyte"))
    y = read_idx(find(f"{prefix}-labels-idx1-ubyte"))
    return x, y


def to_input(torch, x_u8, convention):
    x = torch.from_numpy(x_u8.astype("float32") / 255.0)
    if convention == "normalized":
        x = (x - MEAN) / STD
    if convention == "scaled-nhwc":
        return x.unsqueeze(3)  # N,H,W,1
    return x.unsqueeze(1)      # N,1,H,W


def build(torch, arch, nhwc):
    nn = torch.nn
    if arch == "cnn":
        body = [nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(32 * 7 * 7, 10)]
    elif arch == "cnn-wide":
        body = [nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(32 * 7 * 7, 256), nn.ReLU(), nn.Linear(256, 10)]
    else:
        body = [nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10)]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(*body)

        def forward(self, x):
            if nhwc:
                x = x.permute(0, 3, 1, 2)
            return self.body(x)
    return Net()


def script_hash():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return
    names = [m for m in a.models.split(",") if m]
    for n in names:
        if n not in MODELS:
            sys.exit(f"train_fmnist_torch: unknown model '{n}' (known: {', '.join(MODELS)})")
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    # Tests run in parallel and each asks for the models: the first trains them, the others
    # wait here and then find them up to date.
    lock = open(os.path.join(a.out, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    stamp = {"script": script_hash(), "torch": torch.__version__}
    data = None
    for name in names:
        rec_path = os.path.join(a.out, name + ".json")
        onnx_path = os.path.join(a.out, name + ".onnx")
        if not a.force and os.path.exists(rec_path) and os.path.exists(onnx_path):
            with open(rec_path) as f:
                old = json.load(f)
            if all(old.get(k) == v for k, v in stamp.items()) and old.get("status") == "ok":
                continue
        if data is None:
            data = (load_split(a.data, "train"), load_split(a.data, "t10k"))
        (xtr, ytr), (xte, yte) = data
        convention, arch, epochs, lr = MODELS[name][:4]
        optimizer = MODELS[name][4] if len(MODELS[name]) > 4 else "sgd"
        torch.manual_seed(SEED)
        rng = np.random.default_rng(SEED)
        net = build(torch, arch, convention == "scaled-nhwc")
        if optimizer == "adam":
            opt = torch.optim.Adam(net.parameters(), lr=lr)
        else:
            opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        t0 = time.time()
        net.train()
        batch = 128
        steps = int(epochs * len(xtr) / batch)
        order = rng.permutation(len(xtr))
        for s in range(steps):
            idx = order[(s * batch) % len(xtr):(s * batch) % len(xtr) + batch]
            if len(idx) == 0:
                continue
            xb = to_input(torch, xtr[idx], convention)
            yb = torch.from_numpy(ytr[idx].astype("int64"))
            opt.zero_grad()
            loss_fn(net(xb), yb).backward()
            opt.step()
        train_s = time.time() - t0
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(xte), 1000):
                xb = to_input(torch, xte[i:i + 1000], convention)
                pred = net(xb).argmax(1).numpy()
                correct += int((pred == yte[i:i + 1000]).sum())
        example = to_input(torch, xte[:1], convention)
        tmp = onnx_path + ".tmp"
        torch.onnx.export(net, example, tmp, opset_version=13, input_names=["input"],
                          output_names=["logits"])
        os.replace(tmp, onnx_path)
        rec = dict(stamp)
        rec.update({
            "status": "ok", "convention": convention, "arch": arch, "epochs": epochs,
            "optimizer": optimizer,
            "scale": 255.0,
            "mean": MEAN if convention == "normalized" else 0.0,
            "std": STD if convention == "normalized" else 1.0,
            "layout": "nhwc" if convention == "scaled-nhwc" else "nchw",
            "torch_top1": 100.0 * correct / len(xte), "correct": correct, "n": int(len(xte)),
            "train_seconds": round(train_s, 2),
        })
        with open(rec_path + ".tmp", "w") as f:
            json.dump(rec, f, indent=1)
        os.replace(rec_path + ".tmp", rec_path)
        print(f"{name}: top-1 {rec['torch_top1']:.2f}% ({convention}, {arch}, {optimizer}, "
              f"{epochs} epochs, {train_s:.1f} s)")


if __name__ == "__main__":
    main()
