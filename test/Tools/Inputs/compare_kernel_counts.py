"""Compares the kernels the cost model counts with those a bundle runs.

usage: compare_kernel_counts.py EXPLAIN.txt PLAN.txt

EXPLAIN.txt is `weftc plan --explain` pinned to the bundle's plan: its
"by kernel:" table lists each compute kernel with its launches per step
(xN). PLAN.txt is the bundle's plan.txt, whose "kernel launches per run"
lists every kernel the rank calls, collectives included. The compute
kernels of both must agree one for one (collectives and the runtime's
communication kernels are priced apart and left out). Plans without ZeRO
or microbatches only: the cost model prices the gradient sums of
microbatches and ZeRO's shard slices apart, not as launches. Prints "kernels
agree: N kinds, M launches"; exits 1 naming every difference otherwise.
"""
import re
import sys

# Kernels of the plan that the cost model prices as communication.
COMMUNICATION = re.compile(
    r"^(all_reduce|all_gather|reduce_scatter|all_to_all|send|recv|"
    r"broadcast|comm_|.*_start$|.*_wait$)")


def model_counts(path):
    counts, inside = {}, False
    for line in open(path):
        if line.strip() == "by kernel:":
            inside = True
            continue
        if inside:
            m = re.match(r"^\s+(\S+)\s+x(\d+)\s", line)
            if not m:
                break
            counts[m.group(1)] = int(m.group(2))
    if not counts:
        sys.exit(f"compare_kernel_counts: no 'by kernel:' table in {path}")
    return counts


def bundle_counts(path):
    counts, inside = {}, False
    for line in open(path):
        if line.startswith("kernel launches per run"):
            inside = True
            continue
        if inside:
            m = re.match(r"^\s+(\S+): (\d+)$", line)
            if not m:
                break
            if not COMMUNICATION.match(m.group(1)):
                counts[m.group(1)] = int(m.group(2))
    if not counts:
        sys.exit(f"compare_kernel_counts: no kernel launches in {path}")
    return counts


def main():
    model, bundle = model_counts(sys.argv[1]), bundle_counts(sys.argv[2])
    problems = [f"{k}: cost model {model.get(k, 0)}, bundle {bundle.get(k, 0)}"
                for k in sorted(set(model) | set(bundle))
                if model.get(k, 0) != bundle.get(k, 0)]
    if problems:
        print("compare_kernel_counts: kernels differ:\n  " +
              "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"kernels agree: {len(model)} kinds, {sum(model.values())} launches")


main()
