"""Compares the per-step losses of two `weft train --metrics` files.

usage: python3 compare_metrics.py REFERENCE.jsonl OTHER.jsonl [--rtol R]
       [--atol A] [--steps K]

Every step of REFERENCE (or its first K) must be in OTHER with a loss within
atol + rtol * |reference| (default rtol 1e-4, atol 0). Prints one line per
step and exits 1 on the first mismatch or a missing step (2 on bad usage).
Used by the GPU tests (train-mlp-cuda.test, scripts/device-check.sh) to
compare a cuda run with the cpu run of the same model; needs no numpy.
"""
import argparse
import json
import math
import sys


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                record = json.loads(line)
                out[int(record["step"])] = record["loss"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=0.0)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    ref, other = losses(a.reference), losses(a.other)
    steps = sorted(ref)
    if a.steps:
        steps = steps[:a.steps]
    if not steps:
        print(f"{a.reference}: no steps")
        return 1
    worst = 0.0
    for step in steps:
        if step not in other:
            print(f"step {step}: missing in {a.other}")
            return 1
        r, o = ref[step], other[step]
        if r is None or o is None or not math.isfinite(r) or not math.isfinite(o):
            print(f"step {step}: non-finite loss ({r} vs {o})")
            return 1
        diff = abs(o - r)
        rel = diff / abs(r) if r else diff
        worst = max(worst, rel)
        ok = diff <= a.atol + a.rtol * abs(r)
        print(f"step {step}: {r:.8g} vs {o:.8g} (relative {rel:.2e})"
              f"{'' if ok else '  MISMATCH'}")
        if not ok:
            return 1
    print(f"{len(steps)} steps match (worst relative difference {worst:.2e}, "
          f"rtol {a.rtol:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
