#!/usr/bin/env python3
"""The ONNX peers (bench/peers/onnx_peers.py) on a tiny model: every peer installed in
.venv-peers serves it, returns the statistics keys of `dlas bench --json`, and its output
agrees with dlas's reference interpreter within 1e-4 of the output scale. run_peers.py's
own accuracy check (a dlas variant against the reference) runs too. The same model quantized
to int8 QDQ (`run_peers.py --compress int8`): dlas and every peer that runs QDQ agree with the
reference interpreter on that file within the quantization tolerance.

Skipped, not failed, when .venv-peers is absent or holds no peer (scripts/peers-setup.sh
makes it): run as a script, the exit code is then 77, which CTest reports as skipped.
Environment: DLAS_CLI (the dlas binary; default build/bin/dlas), DLAS_PEERS_VENV (default
.venv-peers), DLAS_PEERS_TEST_TRIALS (tvm-tuned's trial budget; default 2).
Standard library only (the peers run in the venv's interpreters).
"""
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import run_peers  # noqa: E402  (stdlib only: the server class and the .npy helpers)

DLAS = os.environ.get("DLAS_CLI") or os.path.join(ROOT, "build", "bin", "dlas")
VENV = os.environ.get("DLAS_PEERS_VENV") or os.path.join(ROOT, ".venv-peers")
TRIALS = int(os.environ.get("DLAS_PEERS_TEST_TRIALS", "2"))
THREADS = 2
# The statistics every peer must report, named as `dlas bench --json` names them.
STAT_KEYS = ["median_ms", "mean_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "std_ms", "cv",
             "first_ms", "compile_ms", "repeat", "number", "warmup", "threads", "backend",
             "batch"]


def options(compress=None):
    return types.SimpleNamespace(venv=VENV, dlas=DLAS, timeout=600, prefix=[],
                                 tvm_trials=TRIALS, onnx_cache=None, model_files={},
                                 compress=compress,
                                 tolerance=run_peers.QUANT_TOLERANCE if compress
                                 else run_peers.TOLERANCE)


def skip_reason():
    if not os.path.isdir(VENV):
        return f"{VENV} is absent (scripts/peers-setup.sh makes it)"
    if not os.access(DLAS, os.X_OK):
        return f"no dlas binary at {DLAS} (set DLAS_CLI)"
    if not run_peers.installed_peers(options()):
        return f"no peer installed in {VENV}"
    return None


class OnnxPeers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = skip_reason()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.TemporaryDirectory(prefix="dlas-peers-test-")
        cls.a = options()
        cls.a.onnx_cache = cls.tmp.name
        cls.peers = run_peers.installed_peers(cls.a)
        # A tiny model with the zoo's ops (Conv, BatchNormalization, Relu, Add, pooling,
        # Gemm): ResNet-18 for CIFAR at a quarter of the width on 16x16 inputs.
        cls.onnx = os.path.join(cls.tmp.name, "tiny.onnx")
        subprocess.run([DLAS, "export", "resnet18-cifar", "--width-mult", "0.25",
                        "--image-size", "16", "-o", cls.onnx], check=True, capture_output=True)
        cls.files = run_peers.prepare_model(cls.a, cls.onnx)
        cls.a.model_files[cls.onnx] = cls.files
        p = subprocess.run([DLAS, "bench", cls.onnx, "--json", "--repeat", "2"],
                           check=True, capture_output=True, text=True)
        cls.dlas_keys = set(json.loads(p.stdout))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_stat_keys_are_dlas_bench_keys(self):
        missing = [k for k in STAT_KEYS if k not in self.dlas_keys]
        self.assertEqual(missing, [], "dlas bench --json no longer reports these")

    def test_reference_files(self):
        self.assertEqual(len(self.files["inputs"]), 1)
        self.assertEqual(len(run_peers.read_npy(self.files["inputs"][0])), 3 * 16 * 16)
        self.assertEqual(len(run_peers.read_npy(self.files["references"][0])), 10)

    def test_dlas_agrees_with_reference(self):
        acc = run_peers.check_dlas(self.a, self.onnx, "auto", THREADS)
        self.assertTrue(acc["ok"], acc)
        self.assertGreater(acc["scale"], 0)

    def test_int8_qdq_agrees_within_the_quantization_tolerance(self):
        q = options("int8")
        q.onnx_cache = os.path.join(self.tmp.name, "int8")
        files = run_peers.prepare_model(q, self.onnx)
        q.model_files[self.onnx] = files
        self.assertTrue(files["onnx"].endswith("-int8.onnx"))
        info = json.loads(subprocess.run([DLAS, "info", files["onnx"], "--json"], check=True,
                                         capture_output=True, text=True).stdout)
        self.assertIn("QuantizeLinear", json.dumps(info))  # the file every engine runs is QDQ
        acc = run_peers.check_dlas(q, self.onnx, "auto", THREADS)
        self.assertTrue(acc["ok"], acc)
        self.assertEqual(acc["tol"], run_peers.QUANT_TOLERANCE)
        # Peers with QDQ kernels on CPU; TVM's and DeepSparse's are checked by hand (docs).
        for peer in [p for p in ("onnxruntime", "openvino") if p in self.peers]:
            with self.subTest(peer=peer):
                server = run_peers.start_onnx_peer(q, peer, THREADS)
                try:
                    server.ask({"cmd": "load", "model": files["onnx"]})
                    acc = server.ask({"cmd": "check", "model": files["onnx"],
                                      "input": files["inputs"],
                                      "reference": files["references"],
                                      "tol": run_peers.QUANT_TOLERANCE})
                    self.assertTrue(acc["ok"], acc)
                    self.assertEqual(acc["tol"], run_peers.QUANT_TOLERANCE)
                    self.assertIn("top1", acc)
                finally:
                    server.close()

    def test_each_installed_peer(self):
        for peer in self.peers:
            with self.subTest(peer=peer):
                self.a.peer_errors = {}
                server = run_peers.start_onnx_peer(self.a, peer, THREADS)
                try:
                    self.assertEqual(server.ready.get("threads"), THREADS)
                    load = server.ask({"cmd": "load", "model": self.onnx})
                    self.assertGreater(load["compile_ms"], 0)
                    if peer == "tvm-tuned":
                        self.assertGreater(load["tune_ms"], 0)
                    stats = server.ask({"cmd": "run", "model": self.onnx, "repeat": 3,
                                        "warmup": 1})
                    for k in STAT_KEYS:
                        self.assertIn(k, stats)
                    self.assertEqual(len(stats["times_ms"]), 3)
                    self.assertEqual((stats["repeat"], stats["warmup"]), (3, 1))
                    self.assertEqual(stats["threads"], THREADS)
                    self.assertLessEqual(stats["p10_ms"], stats["median_ms"])
                    self.assertLessEqual(stats["median_ms"], stats["p90_ms"])
                    acc = server.ask({"cmd": "check", "model": self.onnx,
                                      "input": self.files["inputs"],
                                      "reference": self.files["references"]})
                    self.assertTrue(acc["ok"], acc)
                    self.assertLessEqual(acc["rel_err"], 1e-4)
                    if peer == "openvino":
                        self.assertEqual(acc.get("peer"), "openvino")
                        self.assertIn("default_precision", server.ready)
                    with self.assertRaises(RuntimeError):  # an error answers, the loop goes on
                        server.ask({"cmd": "load", "model": self.onnx + ".missing"})
                    self.assertIn("median_ms", server.ask({"cmd": "run", "model": self.onnx,
                                                           "repeat": 1}))
                finally:
                    server.close()


if __name__ == "__main__":
    why = skip_reason()
    if why:
        print(f"SKIPPED: {why}")
        sys.exit(77)
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
