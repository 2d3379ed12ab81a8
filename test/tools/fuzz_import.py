#!/usr/bin/python3
"""Bad-input fuzzing of weftc's ONNX importer.

Takes the models of Debian's libonnx-testdata (node suite), applies random
mutations to each (a dropped or duplicated input, inputs reversed, an
attribute set to a strange value or removed, a branch's or body's node or
output removed, a graph input's element type or one of its dims changed, an
extra output), and runs `weftc import` (or `weftc compile` with
--compile) on every mutant. weftc must answer each with exit 0 (the mutant
is still a valid model) or 2 (a clear error); anything else (a signal, exit
1 for an internal failure, a timeout) is a failure, and the mutant is kept
in --keep-dir.

    fuzz_import.py [--seed N] [--per-model K] [--filter REGEX] [--compile]
                   [--keep-dir DIR] [--data-dir DIR]

Prints one line per failure and `fuzz: N mutants, M failures`; exits 1 when
any mutant failed.
"""
import argparse
import copy
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import weft_tools  # noqa: E402

STRANGE_INTS = [-5, -1, 0, 1, 2, 7, 1 << 40]
STRANGE_FLOATS = [0.0, -1.0, float("inf"), float("nan"), 1e30]
STRANGE_STRINGS = [b"", b"bogus", b"linear"]
TYPES = [1, 6, 7, 9, 2, 3, 11]  # f32, i32, i64, bool, u8, i8, f64


def all_nodes(graph):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(a.g)


def mutate(model, rng):
    g = model.graph
    nodes = list(all_nodes(g))
    if not nodes:
        return
    n = rng.choice(nodes)
    r = rng.randrange(8)
    if r == 0 and n.input:
        del n.input[rng.randrange(len(n.input))]
    elif r == 1 and n.attribute:
        a = rng.choice(n.attribute)
        if a.type == onnx.AttributeProto.INT:
            a.i = rng.choice(STRANGE_INTS)
        elif a.type == onnx.AttributeProto.INTS and a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice([-3, 0, 9, 1 << 33])
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = rng.choice(STRANGE_FLOATS)
        elif a.type == onnx.AttributeProto.STRING:
            a.s = rng.choice(STRANGE_STRINGS)
        elif a.type == onnx.AttributeProto.GRAPH:
            if a.g.node:
                del a.g.node[rng.randrange(len(a.g.node))]
            elif a.g.output:
                del a.g.output[0]
    elif r == 2 and n.attribute:
        del n.attribute[rng.randrange(len(n.attribute))]
    elif r == 3 and g.input:
        rng.choice(g.input).type.tensor_type.elem_type = rng.choice(TYPES)
    elif r == 4 and g.input:
        dims = rng.choice(g.input).type.tensor_type.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1, 3, 17])
    elif r == 5 and n.input:
        n.input.append(rng.choice(list(n.input)))
    elif r == 6 and n.output:
        n.output.append("fuzz_extra_output")
    elif r == 7:
        n.input[:] = list(reversed(n.input))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-model", type=int, default=1)
    ap.add_argument("--filter", default="", help="regex on the test names")
    ap.add_argument("--compile", action="store_true", help="weftc compile, not import")
    ap.add_argument("--keep-dir", help="where failing mutants are kept")
    ap.add_argument("--data-dir", default="/usr/share/libonnx-testdata/data/node")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    weftc = weft_tools.find_tool("weftc")
    work = tempfile.mkdtemp(prefix="weft-fuzz-")
    keep = args.keep_dir or os.path.join(work, "failures")
    pattern = re.compile(args.filter)
    mutants = failures = 0
    try:
        for test in sorted(os.listdir(args.data_dir)):
            path = os.path.join(args.data_dir, test, "model.onnx")
            if not pattern.search(test) or not os.path.exists(path):
                continue
            try:
                base = onnx.load(path)
            except Exception:  # noqa: BLE001 (a test file onnx cannot read)
                continue
            for k in range(args.per_model):
                m = copy.deepcopy(base)
                mutate(m, rng)
                if rng.random() < 0.5:
                    mutate(m, rng)
                # Old opsets would stop at the opset check: let the importers
                # see the mutants.
                for o in m.opset_import:
                    if o.domain in ("", "ai.onnx") and o.version < 13:
                        o.version = 17
                out = os.path.join(work, "mutant.onnx")
                onnx.save(m, out)
                cmd = [weftc, "compile", out, "-o", os.path.join(work, "b")] \
                    if args.compile else [weftc, "import", out]
                mutants += 1
                try:
                    rc = subprocess.run(cmd, capture_output=True, text=True,
                                        timeout=120).returncode
                    what = "exit %d" % rc if rc >= 0 else "signal %d" % -rc
                except subprocess.TimeoutExpired:
                    rc, what = None, "timeout"
                if rc in (0, 2):
                    continue
                failures += 1
                os.makedirs(keep, exist_ok=True)
                kept = os.path.join(keep, "%s.%d.onnx" % (test, k))
                shutil.copy(out, kept)
                print("FAIL %s mutant %d: %s (kept as %s)" % (test, k, what, kept))
    finally:
        if not args.keep_dir and failures == 0:
            shutil.rmtree(work, ignore_errors=True)
    print("fuzz: %d mutants, %d failures" % (mutants, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
