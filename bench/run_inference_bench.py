#!/usr/bin/python3
"""CPU inference benchmark: weft vs onnxruntime-node on the e2e models.

    /usr/bin/python3 bench/run_inference_bench.py [--model NAME ...]
        [--repeat 20] [--warmup 3] [--threads T] [--resnet-size 224]
        [--work-dir DIR] [--json bench/results/inference-cpu.json]

Steps: install onnxruntime-node into bench/node_modules if it is missing
(`npm install --ignore-scripts onnxruntime-node`); export the models with
test/e2e/export_models.py (opset 17, fixed shapes, seeded inputs and PyTorch
references); for each model compile a bundle with `weftc compile`, time it with
`weft run --repeat N --warmup W` and time the same .onnx on the same inputs
with bench/ort_bench.js. Both get the same thread count: WEFT_NUM_THREADS for
weft, intraOpNumThreads = interOpNumThreads for onnxruntime (T = --threads, else
$WEFT_NUM_THREADS, else 2). The outputs of both are checked against PyTorch
(relative L2 error, reported, not enforced).

Prints a table (model, weft ms, ort ms, ratio = weft / ort, median of N runs)
and writes the JSON results file. The ort time is measured around
session.run() in node, so it includes onnxruntime-node's per-call overhead
(tens of microseconds), which dominates the smallest models. Benchmarks are never part of the test
pass/fail; the exit status is 1 only if a tool could not run at all.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "test", "tools"))
import weft_tools  # noqa: E402

import numpy as np  # noqa: E402

EXPORT = os.path.join(REPO, "test", "e2e", "export_models.py")
ORT_BENCH = os.path.join(HERE, "ort_bench.js")
DEFAULT_MODELS = ["mlp", "encoder_postnorm_relu", "encoder_prenorm_gelu", "causal_lm_logits",
                  "causal_lm_loss", "vit_tiny", "resnet18"]


def ensure_ort(node):
    """Make `require('onnxruntime-node')` work from bench/; install it if needed."""
    check = [node, "-e", "require(require('path').join(%r,'node_modules','onnxruntime-node'))"
             % HERE]
    if subprocess.run(check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        return True
    npm = shutil.which("npm")
    if not npm:
        print("bench: npm not found; cannot install onnxruntime-node", file=sys.stderr)
        return False
    print("bench: installing onnxruntime-node into %s/node_modules ..." % HERE)
    rc = subprocess.run([npm, "install", "--prefix", HERE, "--ignore-scripts", "--no-save",
                         "--no-package-lock", "--no-audit", "--no-fund",
                         "onnxruntime-node"]).returncode
    if rc != 0:
        return False
    return subprocess.run(check).returncode == 0


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def err_vs_ref(out_dir, model_dir, meta):
    errs = {}
    for o in meta["outputs"]:
        path = os.path.join(out_dir, weft_tools.sanitize_name(o["name"]) + ".npy")
        if not os.path.exists(path):
            errs[o["name"]] = None
            continue
        ref = np.load(os.path.join(model_dir, "outputs", o["name"] + ".npy"))
        errs[o["name"]] = weft_tools.relative_l2(np.load(path), ref)
    return errs


def fmt_err(errs):
    vals = [e for e in errs.values()]
    if not vals or any(v is None for v in vals):
        return "n/a"
    return "%.1e" % max(vals)


def ort_call_overhead(work, args, node):
    """Median time of session.run() on a 1-element Identity model (the fixed
    per-call cost of onnxruntime-node that every ort time includes)."""
    import onnx
    from onnx import TensorProto, helper
    path = os.path.join(work, "identity.onnx")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = os.path.join(work, "identity_x.npy")
    np.save(x, np.zeros([1], np.float32))
    r = weft_tools.run_tool([node, ORT_BENCH, "--model", path, "--input", "x=" + x,
                             "--repeat", "200", "--warmup", "20",
                             "--threads", str(args.threads)], timeout=120)
    t = r.timing() if r.ok else None
    return t["median_s"] if t else None


def bench_model(name, models_dir, work, args, node):
    model_dir = os.path.join(models_dir, name)
    with open(os.path.join(model_dir, "meta.json")) as f:
        meta = json.load(f)
    onnx_path = os.path.join(model_dir, "model.onnx")
    feeds = [(i["name"], os.path.join(model_dir, "inputs", i["name"] + ".npy"))
             for i in meta["inputs"]]
    row = {"model": name, "note": meta.get("note", ""),
           "inputs": meta["inputs"], "outputs": meta["outputs"]}
    env = dict(os.environ, WEFT_NUM_THREADS=str(args.threads))

    bundle = os.path.join(work, name + ".bundle")
    shutil.rmtree(bundle, ignore_errors=True)
    comp = weft_tools.compile_bundle(onnx_path, bundle, timeout=600)
    row["weft_compile_s"] = comp.seconds
    if comp.ok:
        out = os.path.join(work, name + ".weft-out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        run = weft_tools.run_bundle(bundle, feeds, out, repeat=args.repeat, warmup=args.warmup,
                                    timeout=args.timeout, env=env)
        timing = run.timing() if run.ok else None
        if timing:
            row["weft"] = timing
            row["weft_rel_l2"] = err_vs_ref(out, model_dir, meta)
        else:
            row["weft_error"] = "weft run exit %d: %s" % (run.returncode, run.message(400))
    else:
        row["weft_error"] = "weftc exit %d: %s" % (comp.returncode, comp.message(400))

    out = os.path.join(work, name + ".ort-out")
    shutil.rmtree(out, ignore_errors=True)
    argv = [node, ORT_BENCH, "--model", onnx_path, "--repeat", str(args.repeat),
            "--warmup", str(args.warmup), "--threads", str(args.threads), "--output-dir", out]
    for n, p in feeds:
        argv += ["--input", "%s=%s" % (n, p)]
    ort = weft_tools.run_tool(argv, timeout=args.timeout, env=env)
    timing = ort.timing() if ort.ok else None
    if timing:
        row["ort"] = timing
        row["ort_rel_l2"] = err_vs_ref(out, model_dir, meta)
    else:
        row["ort_error"] = "ort_bench exit %d: %s" % (ort.returncode, ort.message(400))
    if "weft" in row and "ort" in row and row["ort"]["median_s"] > 0:
        row["ratio_weft_over_ort"] = row["weft"]["median_s"] / row["ort"]["median_s"]
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description="weft vs onnxruntime-node CPU inference benchmark")
    ap.add_argument("--model", action="append", help="model (repeatable; default all)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int,
                    default=int(os.environ.get("WEFT_NUM_THREADS", "2") or 2))
    ap.add_argument("--resnet-size", type=int, default=224)
    ap.add_argument("--work-dir", default=os.path.join(HERE, "results", "tmp"),
                    help="exported models and bundles (default bench/results/tmp)")
    ap.add_argument("--reuse-models", action="store_true",
                    help="do not re-export models already in the work dir")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "inference-cpu.json"))
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)

    start = time.monotonic()
    load_at_start = os.getloadavg()
    if load_at_start[0] > 0.5 * (os.cpu_count() or 1):
        print("bench: warning: load average %.1f on %d cores; timings will be noisy" % (
            load_at_start[0], os.cpu_count() or 1))
    node = shutil.which("node")
    if not node:
        print("bench: node not found", file=sys.stderr)
        return 1
    if not ensure_ort(node):
        print("bench: onnxruntime-node is not usable", file=sys.stderr)
        return 1
    try:
        weft_tools.find_tool("weftc")
        weft_tools.find_tool("weft")
    except FileNotFoundError as exc:
        print("bench: %s" % exc, file=sys.stderr)
        return 1

    models = args.model or DEFAULT_MODELS
    models_dir = os.path.join(args.work_dir, "models")
    os.makedirs(models_dir, exist_ok=True)
    to_export = [m for m in models if not (
        args.reuse_models and os.path.exists(os.path.join(models_dir, m, "meta.json")))]
    if to_export:
        cmd = [sys.executable, EXPORT, "--out", models_dir,
               "--resnet-size", str(args.resnet_size)]
        for m in to_export:
            cmd += ["--model", m]
        if subprocess.run(cmd).returncode != 0:
            print("bench: exporting the models failed", file=sys.stderr)
            return 1

    overhead = ort_call_overhead(args.work_dir, args, node)
    rows = []
    for m in models:
        row = bench_model(m, models_dir, args.work_dir, args, node)
        rows.append(row)
        w = "%.3f" % (row["weft"]["median_s"] * 1e3) if "weft" in row else "error"
        o = "%.3f" % (row["ort"]["median_s"] * 1e3) if "ort" in row else "error"
        print("bench: %-22s weft %s ms, ort %s ms" % (m, w, o))
        sys.stdout.flush()

    print()
    print("CPU inference, %d threads, median of %d runs after %d warm-up (ms); %s" % (
        args.threads, args.repeat, args.warmup, cpu_model()))
    hdr = "%-22s %10s %10s %8s %10s %10s" % ("model", "weft ms", "ort ms", "ratio",
                                               "weft err", "ort err")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print("%-22s %10s %10s %8s %10s %10s" % (
            r["model"],
            "%.3f" % (r["weft"]["median_s"] * 1e3) if "weft" in r else "error",
            "%.3f" % (r["ort"]["median_s"] * 1e3) if "ort" in r else "error",
            "%.2f" % r["ratio_weft_over_ort"] if "ratio_weft_over_ort" in r else "-",
            fmt_err(r.get("weft_rel_l2", {})), fmt_err(r.get("ort_rel_l2", {}))))
    print("(ratio = weft / ort, > 1 means weft is slower; err = max relative L2 vs PyTorch)")
    print("(ort times are measured around session.run() in node and include onnxruntime-node's")
    print(" per-call JS/N-API overhead; weft times come from the bundle's own --repeat loop.")
    print(" Measured overhead, session.run() of a 1-element Identity model: %s ms.)" % (
        "%.3f" % (overhead * 1e3) if overhead is not None else "n/a"))
    for r in rows:
        for k in ("weft_error", "ort_error"):
            if k in r:
                print("%s: %s: %s" % (r["model"], k, r[k]))

    ort_version = subprocess.run(
        [node, "-e", "console.log(require(require('path').join(%r,'node_modules',"
         "'onnxruntime-node')).env.versions.node)" % HERE],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().strip()
    result = {
        "benchmark": "inference-cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_start": load_at_start},
        "threads": args.threads,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "resnet_size": args.resnet_size,
        "onnxruntime_node": ort_version,
        "weftc": weft_tools.find_tool("weftc"),
        "timing_stat": "median_s is the headline; mean_s and min_s also recorded",
        "timing_note": "ort: wall time of session.run() in node (includes onnxruntime-node's "
                       "per-call JS/N-API overhead); weft: the bundle's own --repeat loop",
        "ort_call_overhead_s": overhead,
        "models": rows,
        "wall_s": time.monotonic() - start,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print("wrote %s (%.1f s)" % (args.json, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
