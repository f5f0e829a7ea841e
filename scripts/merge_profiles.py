#!/usr/bin/env python3
"""Merge several `dlas hw --calibrate` profiles of one CPU into one table by vote.

One calibration is a draw: its search spends a few seconds over every shape class, and the
knobs it reaches differ from run to run. The built-in tables (data/profiles/) therefore
take, per class, the algorithm and layout most runs agree on (ties: the group with the
fastest measurement), at the knobs of the fastest run of that group.

    python3 scripts/merge_profiles.py A.json B.json C.json -o data/profiles/NAME.json

With --base OLD.json --replace REGEX, the table keeps OLD's entries but for the classes
that match REGEX or that OLD lacks (e.g. after a change to how some classes are surveyed,
only those are measured again; the others keep the vote of the runs before).

Every input must be a profile of the same CPU model, ISA path and thread count; exit 2
with one line otherwise.
"""
import argparse
import json
import os
import re
import sys


def fail(msg):
    print(f"merge_profiles: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            p = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if not isinstance(p, dict) or p.get("format") != "dlas-machine-profile" or not isinstance(
            p.get("entries"), list):
        fail(f"{path}: not a dlas machine profile")
    return p


def merge(profiles):
    head = profiles[0]
    for key in ("cpu", "isa", "threads", "version"):
        values = {json.dumps(p.get(key)) for p in profiles}
        if len(values) > 1:
            fail(f"the profiles differ in \"{key}\": {', '.join(sorted(values))}")
    order, by_class = [], {}
    for p in profiles:
        for e in p["entries"]:
            c = e["class"]
            if c not in by_class:
                order.append(c)
                by_class[c] = []
            by_class[c].append(e)
    entries, agreed = [], 0
    for c in order:
        groups = {}
        for e in by_class[c]:
            groups.setdefault((e["algo"], e["layout"]), []).append(e)
        # Most runs first, then the fastest measurement among them.
        best = min(groups.values(), key=lambda g: (-len(g), min(x["us"] for x in g)))
        agreed += len(best) >= 2
        entries.append(min(best, key=lambda x: x["us"]))
    out = {k: v for k, v in head.items() if k != "entries"}
    out["source"] = (f"{len(profiles)} `dlas hw --calibrate` runs merged by "
                     "scripts/merge_profiles.py (per class: the algorithm and layout most runs "
                     "agree on, at the fastest run's knobs)")
    out["entries"] = entries
    return out, agreed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", nargs="+", help="profiles from `dlas hw --calibrate --profile F`")
    ap.add_argument("-o", "--out", required=True, help="the merged profile")
    ap.add_argument("--base", help="keep this profile's entries but for --replace's classes")
    ap.add_argument("--replace", help="regular expression: the classes the vote replaces in --base")
    a = ap.parse_args()
    if (a.base is None) != (a.replace is None):
        fail("--base and --replace go together")
    merged, agreed = merge([load(p) for p in a.profiles])
    if a.base:
        try:
            pattern = re.compile(a.replace)
        except re.error as e:
            fail(f"--replace: {e}")
        base = load(a.base)
        if base.get("cpu") != merged.get("cpu") or base.get("isa") != merged.get("isa"):
            fail(f"{a.base}: another CPU or ISA path than the runs")
        voted = {e["class"]: e for e in merged["entries"]}
        kept = {e["class"] for e in base["entries"]}
        entries, replaced = [], 0
        for e in base["entries"]:
            take = pattern.search(e["class"]) and e["class"] in voted
            replaced += bool(take)
            entries.append(voted[e["class"]] if take else e)
        added = [e for e in merged["entries"] if e["class"] not in kept]
        merged = dict(base, entries=entries + added)
        merged["source"] = (f"{base.get('source', '')}; then {replaced} classes matching "
                            f"'{a.replace}' and {len(added)} new ones from {len(a.profiles)} "
                            "runs merged by scripts/merge_profiles.py")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
    os.replace(tmp, a.out)
    print(f"{a.out}: {len(merged['entries'])} classes, {agreed} with at least two runs agreeing")


if __name__ == "__main__":
    main()
