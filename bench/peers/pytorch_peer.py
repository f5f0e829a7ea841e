#!/usr/bin/python3
"""PyTorch peer for dlas benchmarks: the zoo's models built in PyTorch itself, timed in
PyTorch's best CPU inference mode.

Models (dlas zoo names): the ImageNet ones come from torchvision (resnet50, mobilenet_v2,
densenet161, efficientnet_b0; random weights), the CIFAR-10 ones are written here after
kuangliu/pytorch-cifar's definitions (resnet18, mobilenet, mobilenetv2, vgg16 for 32x32
inputs and 10 classes) -- the same topology and parameter counts as src/model/zoo/*.cc
(`--check` verifies the counts against tests/model/zoo_test.cc's table).

Mode: torch.jit.optimize_for_inference(torch.jit.script(model.eval())) under
torch.no_grad(), which freezes the module, folds BatchNorm into convolutions and routes them
through oneDNN (mkldnn) with prepacked weights. Plain eager mode in Debian's build falls back
to a slow reference BLAS for many layers and is not a fair peer.

usage:
  pytorch_peer.py [--threads T] [--repeat N] [--warmup W] [--batch B] [--image-size S] MODEL...
      one JSON line per model: {model, threads, batch, median_ms, mean_ms, min_ms, max_ms,
      times_ms: [...], ...}
  pytorch_peer.py --serve [--threads T] [--batch B]
      the peer of an interleaved A/B loop: reads commands from stdin, one per line, and
      answers each with one JSON line (flushed):
        load MODEL        build, optimise and warm up (answers {"model", "loaded", "build_s"})
        run MODEL N       N timed runs (loads first if needed): {"model", "threads",
                          "median_ms", "times_ms", ...}
        threads T         torch.set_num_threads(T): {"threads": T}
        quit              exit
      A first line {"ready": true, ...} announces the peer; a failing command answers
      {"error": "..."} and the loop goes on.
  pytorch_peer.py --list | --check
Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision).
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- CIFAR-10 models (kuangliu/pytorch-cifar structure, written for dlas) --------------


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 conv-BN, identity or 1x1 conv-BN shortcut, ReLU."""

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet18Cifar(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layer = []
            for s in (stride, 1):
                layer.append(BasicBlock(cin, planes, s))
                cin = planes
            blocks.append(nn.Sequential(*layer))
        self.layer1, self.layer2, self.layer3, self.layer4 = blocks
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = F.avg_pool2d(x, 4)
        return self.linear(x.view(x.size(0), -1))


class DepthwiseSeparable(nn.Module):
    """MobileNet (v1) block: depthwise 3x3 conv-BN-ReLU, pointwise 1x1 conv-BN-ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv2 = nn.Conv2d(cin, cout, 1, 1, 0, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(x)))


class MobileNetV1Cifar(nn.Module):
    CFG = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        layers, cin = [], 32
        for cout, stride in self.CFG:
            layers.append(DepthwiseSeparable(cin, cout, stride))
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        x = F.avg_pool2d(x, 2)
        return self.linear(x.view(x.size(0), -1))


class InvertedResidualCifar(nn.Module):
    """MobileNetV2 (CIFAR) block: expand 1x1, depthwise 3x3, project 1x1; residual when
    stride 1 (through a 1x1 conv-BN when the width changes)."""

    def __init__(self, cin, cout, expansion, stride):
        super().__init__()
        self.stride = stride
        planes = expansion * cin
        self.conv1 = nn.Conv2d(cin, planes, 1, 1, 0, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, groups=planes, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, cout, 1, 1, 0, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride == 1 and cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, 1, 0, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        if self.stride == 1:
            y = y + self.shortcut(x)
        return y


class MobileNetV2Cifar(nn.Module):
    # (expansion, out, blocks, stride); stride 1 in conv1 and the second row for 32x32.
    CFG = ((1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        layers, cin = [], 32
        for expansion, cout, blocks, stride in self.CFG:
            for k in range(blocks):
                layers.append(InvertedResidualCifar(cin, cout, expansion, stride if k == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.conv2 = nn.Conv2d(320, 1280, 1, 1, 0, bias=False)
        self.bn2 = nn.BatchNorm2d(1280)
        self.linear = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.avg_pool2d(x, 4)
        return self.linear(x.view(x.size(0), -1))


class Vgg16Cifar(nn.Module):
    CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")

    def __init__(self, num_classes=10):
        super().__init__()
        layers, cin = [], 3
        for v in self.CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                cin = v
        layers.append(nn.AvgPool2d(1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.view(x.size(0), -1))


# ---- the model table ----------------------------------------------------------------------


def torchvision_model(name):
    def build():
        import torchvision
        return getattr(torchvision.models, name)(weights=None)
    return build


# dlas zoo name -> (builder, default image size, trainable parameters of the reference
# model, as in tests/model/zoo_test.cc)
MODELS = {
    "resnet18-cifar": (ResNet18Cifar, 32, 11_173_962),
    "mobilenetv1-cifar": (MobileNetV1Cifar, 32, 3_217_226),
    "mobilenetv2-cifar": (MobileNetV2Cifar, 32, 2_296_922),
    "vgg16-cifar": (Vgg16Cifar, 32, 14_728_266),
    "resnet50": (torchvision_model("resnet50"), 224, 25_557_032),
    "mobilenetv2": (torchvision_model("mobilenet_v2"), 224, 3_504_872),
    "densenet161": (torchvision_model("densenet161"), 224, 28_681_000),
    "efficientnetb0": (torchvision_model("efficientnet_b0"), 224, 5_288_548),
}


def param_count(model):
    return sum(p.numel() for p in model.parameters())


class Peer:
    """Builds, optimises and times models; keeps the optimised modules for the A/B loop."""

    def __init__(self, threads, batch, image_size, warmup):
        self.batch, self.image_size, self.warmup = batch, image_size, warmup
        self.loaded = {}
        self.set_threads(threads)

    def set_threads(self, threads):
        torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()

    def load(self, name):
        if name in self.loaded:
            return self.loaded[name][2]
        if name not in MODELS:
            raise ValueError(f"unknown model '{name}'; known: {', '.join(MODELS)}")
        builder, size, _ = MODELS[name]
        size = self.image_size or size
        t0 = time.perf_counter()
        torch.manual_seed(0)
        model = builder().eval()
        x = torch.randn(self.batch, 3, size, size)
        with torch.no_grad():
            module = torch.jit.optimize_for_inference(torch.jit.script(model))
            # The profiling executor specialises on the first runs: warm up past it.
            for _ in range(max(self.warmup, 1)):
                module(x)
        build_s = time.perf_counter() - t0
        self.loaded[name] = (module, x, build_s)
        return build_s

    def run(self, name, repeat):
        self.load(name)
        module, x, _ = self.loaded[name]
        times = []
        with torch.no_grad():
            for _ in range(repeat):
                t0 = time.perf_counter()
                module(x)
                times.append((time.perf_counter() - t0) * 1e3)
        return {
            "model": name,
            "peer": "pytorch",
            "mode": "jit.optimize_for_inference",
            "torch": torch.__version__,
            "threads": self.threads,
            "batch": self.batch,
            "image_size": tuple(x.shape)[-1],
            "repeat": repeat,
            "median_ms": statistics.median(times),
            "mean_ms": statistics.fmean(times),
            "min_ms": min(times),
            "max_ms": max(times),
            "times_ms": [round(t, 4) for t in times],
        }


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(peer):
    emit({"ready": True, "peer": "pytorch", "torch": torch.__version__, "threads": peer.threads})
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            cmd = words[0]
            if cmd == "quit":
                break
            if cmd == "load" and len(words) == 2:
                emit({"model": words[1], "loaded": True, "build_s": peer.load(words[1])})
            elif cmd == "run" and len(words) == 3:
                n = int(words[2])
                if n < 1:
                    raise ValueError("run count must be >= 1")
                emit(peer.run(words[1], n))
            elif cmd == "threads" and len(words) == 2:
                peer.set_threads(int(words[1]))
                emit({"threads": peer.threads})
            else:
                raise ValueError(f"bad command '{line.strip()}' (expected: load MODEL | run MODEL N"
                                 " | threads T | quit)")
        except Exception as e:  # one bad command must not end the A/B loop
            emit({"error": f"{type(e).__name__}: {e}"})


def check():
    ok = True
    for name, (builder, _, want) in MODELS.items():
        got = param_count(builder())
        ok &= got == want
        print(f"{name:18s} params {got:>11,d} {'ok' if got == want else f'!= {want:,d}'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", help="zoo model names")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5,
                    help="untimed runs after optimisation (the JIT specialises on the first)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--image-size", type=int, default=0, help="0: the model's default")
    ap.add_argument("--serve", action="store_true", help="answer commands from stdin")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true", help="verify parameter counts")
    a = ap.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return 0
    if a.check:
        return check()
    if a.threads < 1 or a.repeat < 1 or a.batch < 1:
        ap.error("--threads, --repeat and --batch must be >= 1")
    peer = Peer(a.threads, a.batch, a.image_size, a.warmup)
    if a.serve:
        serve(peer)
        return 0
    if not a.models:
        ap.error("give at least one model (see --list)")
    for name in a.models:
        if name not in MODELS:
            ap.error(f"unknown model '{name}'; known: {', '.join(MODELS)}")
    for name in a.models:
        emit(peer.run(name, a.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
