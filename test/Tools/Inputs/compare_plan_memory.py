"""Compares a bundle's predicted memory with its static buffer plan.

usage: compare_plan_memory.py PLAN.txt [PLAN.txt ...] --within FRACTION
       compare_plan_memory.py SMALLER.txt LARGER.txt --less

Each plan.txt holds the compiler's own per-rank peak ("peak", from the
liveness-based buffer plan plus parameters, optimizer state and I/O) and
the cost model's prediction for the same plan ("predicted memory"). The
prediction must be within FRACTION of the planned peak. Prints one line per
plan, then "memory ok"; exits 1 naming the plans outside.

With --less, the first plan's peak and its prediction must both be below
the second's: prints "peak A < B" and "predicted memory A < B" (MiB), or
exits 1 saying which is not.
"""
import re
import sys

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def size(text, what, path):
    m = re.search(what + r"\s+([0-9.]+) (B|KiB|MiB|GiB|TiB)", text)
    if not m:
        sys.exit(f"compare_plan_memory: no '{what}' in {path}")
    return float(m.group(1)) * UNITS[m.group(2)]


def less(smaller, larger):
    texts = [open(p).read() for p in (smaller, larger)]
    ok = True
    for label, what in (("peak", r"\n  peak"),
                        ("predicted memory", "predicted memory")):
        a, b = (size(t, what, p) for t, p in zip(texts, (smaller, larger)))
        rel = "<" if a < b else ">="
        print(f"{label} {a / 2**20:.3f} {rel} {b / 2**20:.3f} MiB")
        ok = ok and a < b
    if not ok:
        print(f"compare_plan_memory: {smaller} does not hold less than "
              f"{larger}", file=sys.stderr)
        sys.exit(1)


def main():
    args = sys.argv[1:]
    if "--less" in args:
        paths = [a for a in args if a != "--less"]
        if len(paths) != 2:
            sys.exit("compare_plan_memory: --less compares two plans")
        less(*paths)
        return
    within = float(args[args.index("--within") + 1])
    paths = [a for i, a in enumerate(args)
             if a != "--within" and (i == 0 or args[i - 1] != "--within")]
    bad = []
    for path in paths:
        text = open(path).read()
        planned = size(text, r"\n  peak", path)
        predicted = size(text, "predicted memory", path)
        error = predicted / planned - 1
        print(f"{path}: planned {planned / 2**20:.2f} MiB, predicted "
              f"{predicted / 2**20:.2f} MiB ({error:+.0%})")
        if abs(error) > within:
            bad.append(path)
    if bad:
        print("compare_plan_memory: outside " + f"{within:.0%}: " +
              ", ".join(bad), file=sys.stderr)
        sys.exit(1)
    print("memory ok")


main()
