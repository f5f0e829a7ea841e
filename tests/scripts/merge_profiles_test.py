#!/usr/bin/env python3
"""scripts/merge_profiles.py, the vote that builds the built-in machine profiles: per class
the algorithm and layout most runs agree on (ties: the fastest), at the fastest agreeing
run's knobs; --base/--replace re-measures only some classes; bad input is one line on
stderr, exit 2, and no output file. Standard library only."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "merge_profiles.py")


def entry(cls, algo, layout, us, **knobs):
    return {"class": cls, "algo": algo, "layout": layout, "knobs": knobs, "us": us}


def profile(entries, cpu="AMD EPYC"):
    return {"format": "dlas-machine-profile", "version": 2, "cpu": cpu,
            "cpuid": "family 26 model 2", "isa": "avx512-bf16", "threads": 2,
            "source": "test", "entries": entries}


class MergeProfiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, obj):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def merged(self, *args):
        out = os.path.join(self.dir.name, "out.json")
        r = self.run_script(*args, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            whole = json.load(f)
        return {e["class"]: e for e in whole["entries"]}, whole

    def test_majority_then_fastest_knobs(self):
        a = self.write("a.json", profile([entry("c1", "direct", "nchw16c", 12.0, nv=2, pw=8),
                                          entry("c2", "gemm", "nchw", 5.0, kc=64)]))
        b = self.write("b.json", profile([entry("c1", "direct", "nchw16c", 10.0, nv=3, pw=8),
                                          entry("c2", "winograd", "nchw16c", 4.0, nv=1)]))
        c = self.write("c.json", profile([entry("c1", "gemm", "nchw", 8.0, kc=256),
                                          entry("c2", "gemm", "nchw", 6.0, kc=256)]))
        got, whole = self.merged(a, b, c)
        # Two runs agree on direct/nchw16c: the faster of them, although gemm timed faster.
        self.assertEqual((got["c1"]["algo"], got["c1"]["knobs"], got["c1"]["us"]),
                         ("direct", {"nv": 3, "pw": 8}, 10.0))
        self.assertEqual((got["c2"]["algo"], got["c2"]["knobs"]), ("gemm", {"kc": 64}))
        self.assertEqual(whole["cpu"], "AMD EPYC")
        self.assertEqual(whole["format"], "dlas-machine-profile")
        # One run each: the fastest group.
        got, _ = self.merged(a, b)
        self.assertEqual(got["c2"]["algo"], "winograd")

    def test_base_keeps_all_but_the_replaced_and_adds_the_new(self):
        base = self.write("base.json",
                          profile([entry("dense-1x1-a", "direct", "nchw16c", 9.0, nv=4),
                                   entry("dense-3x3-a", "winograd", "nchw16c", 7.0)]))
        runs = [self.write(f"r{i}.json",
                           profile([entry("dense-1x1-a", "direct", "nchw16c", 8.0 + i, nv=2),
                                    entry("dense-3x3-a", "direct", "nchw16c", 3.0),
                                    entry("dw-5x5-a", "depthwise", "nchw16c", 1.0 + i)]))
                for i in range(2)]
        got, whole = self.merged(*runs, "--base", base, "--replace", "^dense-1x1-")
        self.assertEqual(got["dense-1x1-a"]["knobs"], {"nv": 2})  # replaced by the vote
        self.assertEqual(got["dense-3x3-a"]["algo"], "winograd")  # kept from the base
        self.assertEqual(got["dw-5x5-a"]["us"], 1.0)  # new: from the vote
        self.assertEqual(list(got), ["dense-1x1-a", "dense-3x3-a", "dw-5x5-a"])
        self.assertIn("1 classes matching", whole["source"])

    def test_bad_input_is_one_line_exit_2_and_no_output(self):
        good = self.write("good.json", profile([entry("c1", "gemm", "nchw", 1.0)]))
        cases = [
            [good, self.write("other.json", profile([entry("c1", "gemm", "nchw", 1.0)],
                                                     cpu="Intel Xeon"))],
            [good, self.write("corrupt.json", "{not json")],
            [good, self.write("notprofile.json", {"entries": 3})],
            [good, "--base", good],
            [good, "--base", good, "--replace", "("],
        ]
        for args in cases:
            out = os.path.join(self.dir.name, "never.json")
            r = self.run_script(*args, "-o", out)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
