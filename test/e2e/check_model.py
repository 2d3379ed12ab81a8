#!/usr/bin/python3
"""Compile an exported e2e model with weftc, run it with weft, compare to PyTorch.

    /usr/bin/python3 test/e2e/check_model.py MODEL_DIR [MODEL_DIR ...]
        [--tol 1e-4] [--work-dir DIR] [--keep] [--weftc-arg ARG]...

MODEL_DIR is what export_models.py wrote (model.onnx, inputs/, outputs/,
meta.json). For every output the relative L2 error ||y - ref|| / ||ref|| is
printed; the check passes when every output's error is <= --tol (default 1e-4)
and its shape and dtype match the reference. Exit status: 0 all pass, 1 a
mismatch or a tool failure.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import weft_tools  # noqa: E402

import numpy as np  # noqa: E402


def check(model_dir, tol, work, timeout, weftc_args=()):
    with open(os.path.join(model_dir, "meta.json")) as f:
        meta = json.load(f)
    name = meta["name"]
    bundle = os.path.join(work, name + ".bundle")
    out_dir = os.path.join(work, name + ".out")
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)

    comp = weft_tools.compile_bundle(os.path.join(model_dir, "model.onnx"), bundle,
                                     extra_args=weftc_args,
                                     timeout=timeout)
    print("%s: weftc compile %.2f s (exit %d)" % (name, comp.seconds, comp.returncode))
    if not comp.ok:
        print("%s: FAIL: weftc failed: %s\n  %s" % (name, comp.message(), comp.command_line()))
        return False
    feeds = [(i["name"], os.path.join(model_dir, "inputs", i["name"] + ".npy"))
             for i in meta["inputs"]]
    run = weft_tools.run_bundle(bundle, feeds, out_dir, timeout=timeout)
    print("%s: weft run %.2f s (exit %d)" % (name, run.seconds, run.returncode))
    if not run.ok:
        print("%s: FAIL: weft run failed: %s\n  %s" % (name, run.message(), run.command_line()))
        return False
    names = [o["name"] for o in meta["outputs"]]
    got, missing = weft_tools.read_outputs(out_dir, names)
    ok = True
    for m in missing:
        print("%s: FAIL: output '%s' missing" % (name, m))
        ok = False
    for o in meta["outputs"]:
        if o["name"] not in got:
            continue
        ref = np.load(os.path.join(model_dir, "outputs", o["name"] + ".npy"))
        y = got[o["name"]]
        if y.shape != ref.shape or y.dtype != ref.dtype:
            print("%s: FAIL: output '%s' is %s%s, expected %s%s" % (
                name, o["name"], y.dtype, list(y.shape), ref.dtype, list(ref.shape)))
            ok = False
            continue
        err = weft_tools.relative_l2(y, ref)
        max_abs = float(np.max(np.abs(y.astype(np.float64) - ref))) if ref.size else 0.0
        verdict = "ok" if err <= tol else "FAIL"
        print("%s: output '%s' %s%s rel L2 error %.3e (max abs %.3e, tol %.0e) %s" % (
            name, o["name"], ref.dtype, list(ref.shape), err, max_abs, tol, verdict))
        ok = ok and err <= tol
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description="check weft against PyTorch on exported models")
    ap.add_argument("model_dirs", nargs="+")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--work-dir", help="where bundles and outputs go (default: temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--weftc-arg", action="append", default=[],
                    help="extra argument for weftc compile (repeatable)")
    args = ap.parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="weft-e2e-")
    os.makedirs(work, exist_ok=True)
    start = time.monotonic()
    try:
        results = [check(d, args.tol, work, args.timeout, args.weftc_arg) for d in args.model_dirs]
    finally:
        if not args.work_dir and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("e2e: %d of %d models within tolerance (%.1f s)" % (
        sum(results), len(results), time.monotonic() - start))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
