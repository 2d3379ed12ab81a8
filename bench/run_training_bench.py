#!/usr/bin/python3
"""CPU training benchmark: weft vs PyTorch 1.13, time per training step.

    /usr/bin/python3 bench/run_training_bench.py [--model NAME ...]
        [--steps 60] [--warmup 10] [--rounds 3] [--threads T]
        [--torch-configs T/T,T/1,1/T] [--work-dir DIR]
        [--json bench/results/training-cpu.json]

For each model: seed and build it (the small models are those of
test/train/check_training.py, imported from there; the larger ones reuse its
classes with wider layers), export the training forward (which returns the
loss) with torch.onnx.export, compile it with `weftc compile --train` (AdamW;
weft's defaults are torch.optim.AdamW's) and run `weft train --steps N
--metrics FILE`; then run the PyTorch loop (batch gather, zero_grad, forward,
backward, optimizer.step with torch.optim.AdamW) from the same initial weights
on the same rows (step s uses rows [s*B, (s+1)*B) modulo the row count, as
weft train does). Each run is a fresh process.

Threads: weft gets WEFT_NUM_THREADS=T (T = --threads, else $WEFT_NUM_THREADS,
else 2); its pool pins OpenBLAS to one thread and splits the gemms itself.
Debian's PyTorch has two pools that do not know of each other: ATen's OpenMP
pool (torch.set_num_threads, OMP_NUM_THREADS) and OpenBLAS's pthread pool,
which runs every float gemm (OPENBLAS_NUM_THREADS; torch.set_num_threads does
not touch it). With both at T they oversubscribe the cores, and spinning idle
threads of one pool can starve the other. So PyTorch is timed under each
OpenMP/OpenBLAS configuration of --torch-configs (default T/T, T/1 and 1/T:
never more than T threads busy at once in the last two) and its headline time
is the fastest of them; all are recorded.

The time per step is the median over the steps after the first W (warm-up) of
each run, pooled over R rounds; a round is one weft run and one PyTorch run per
configuration, in turn, so that drifting machine load hits all alike. weft's
step time is the metrics' step_time_s (row gather + forward + backward +
update, measured in the trainer); PyTorch's is perf_counter around the same
work.

Prints a table (model, weft ms/step, torch ms/step, ratio = weft / torch, the
final losses of both and the largest per-step relative loss difference) and
writes the JSON results file. Benchmarks are never part of the test pass/fail;
the exit status is 1 only if a tool could not run at all.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "test", "tools"))
sys.path.insert(0, os.path.join(REPO, "test", "train"))
import weft_tools  # noqa: E402

import numpy as np  # noqa: E402

# torch and check_training (which imports torch) are imported in main(), after
# the thread-count environment variables are set.
torch = None
ct = None

DEFAULT_MODELS = ["mlp", "causal_lm", "cnn", "mlp_wide", "causal_lm_d128", "rnn_lm_h256"]
# Run only when named with --model (slower).
EXTRA_MODELS = ["resnet18_bn", "mobilenet_v2_bn", "efficientnet_b0_bn"]


def model_specs():
    """name -> (description, batch, make(rng) -> (module, {input: rows}))."""
    import torch.nn as nn

    class MlpWide(ct.Mlp):
        """check_training's Mlp (Linear-GELU-Linear, MSE) at 512-2048-512."""
        IN, HIDDEN, OUT = 512, 2048, 512

        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(self.IN, self.HIDDEN)
            self.l2 = nn.Linear(self.HIDDEN, self.OUT)

    class Blocks(nn.Module):
        """A stack of encoder layers called like one (h, src_mask=...)."""

        def __init__(self, layers):
            super().__init__()
            self.layers = nn.ModuleList(layers)

        def forward(self, h, src_mask=None):
            for layer in self.layers:
                h = layer(h, src_mask=src_mask)
            return h

    class CausalLmD128(ct.CausalLm):
        """check_training's CausalLm (pre-norm GELU encoder, causal mask,
        cross-entropy) with d=128, 4 heads, FF 512, 2 layers, seq 64."""
        VOCAB, SEQ, DIM = 256, 64, 128
        HEADS, FF, LAYERS = 4, 512, 2

        def __init__(self):
            super().__init__()
            self.block = Blocks([
                nn.TransformerEncoderLayer(self.DIM, self.HEADS, self.FF, dropout=0.0,
                                           batch_first=True, norm_first=True,
                                           activation="gelu")
                for _ in range(self.LAYERS)])

    class RnnLmH256(ct.RnnLm):
        """check_training's RnnLm (bidirectional LSTM, GRU, cross-entropy)
        with vocabulary 1000, embedding 128, hidden 256, sequence 35."""
        VOCAB, SEQ, DIM, HIDDEN = 1000, 35, 128, 256

    def make_rnn_lm(rng):
        n = 4 * 16
        toks = rng.integers(0, RnnLmH256.VOCAB, (n, RnnLmH256.SEQ + 1))
        return RnnLmH256(), {"tokens": toks[:, :-1].astype(np.int64),
                             "targets": toks[:, 1:].astype(np.int64)}

    def make_mlp_wide(rng):
        n = 4 * 64
        return MlpWide(), {
            "x": rng.standard_normal((n, MlpWide.IN)).astype(np.float32),
            "y": rng.standard_normal((n, MlpWide.OUT)).astype(np.float32)}

    def make_lm_d128(rng):
        n = 4 * 16
        toks = rng.integers(0, CausalLmD128.VOCAB, (n, CausalLmD128.SEQ + 1))
        return CausalLmD128(), {"tokens": toks[:, :-1].astype(np.int64),
                                "targets": toks[:, 1:].astype(np.int64)}

    class Classifier(nn.Module):
        """A torchvision classifier (10 classes) with cross-entropy, trained
        with batch statistics (training-mode BatchNorm)."""

        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x, labels):
            return nn.functional.cross_entropy(self.net(x), labels)

    def make_classifier(build_net):
        def make(rng):
            import torchvision
            n = 4 * 16
            return Classifier(build_net(torchvision.models)), {
                "x": rng.standard_normal((n, 3, 32, 32)).astype(np.float32),
                "labels": rng.integers(0, 10, n).astype(np.int64)}
        return make

    make_resnet18 = make_classifier(lambda tv: tv.resnet18(num_classes=10))
    # Without dropout or stochastic depth, whose random masks no two
    # implementations share.
    make_mobilenet = make_classifier(
        lambda tv: tv.mobilenet_v2(num_classes=10, dropout=0.0))
    def efficientnet_b0(tv):
        # efficientnet_b0() fixes its dropout at 0.2: zero the classifier's.
        net = tv.efficientnet_b0(num_classes=10, stochastic_depth_prob=0.0)
        for m in net.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        return net

    make_efficientnet = make_classifier(efficientnet_b0)

    return {
        "resnet18_bn": ("torchvision resnet18, 32x32, 10 classes, training-mode BatchNorm "
                        "(losses drift apart chaotically after a few steps: so do PyTorch's "
                        "own f32 and f64 runs)", 16, make_resnet18),
        "mobilenet_v2_bn": ("torchvision mobilenet_v2 (no dropout), 32x32, 10 classes, "
                            "training-mode BatchNorm, depthwise convs, ReLU6", 16,
                            make_mobilenet),
        "efficientnet_b0_bn": ("torchvision efficientnet_b0 (no dropout or stochastic depth), "
                               "32x32, 10 classes, training-mode BatchNorm, SiLU, "
                               "squeeze-excitation", 16, make_efficientnet),
        "mlp": ("check_training Mlp 16-32-4, GELU, MSE", 8,
                lambda rng: ct.make_data("mlp", rng)),
        "causal_lm": ("check_training CausalLm d=32, 1 layer, seq 12, vocab 50", 8,
                      lambda rng: ct.make_data("causal_lm", rng)),
        "cnn": ("check_training Cnn conv3-8, conv8-16/s2, 12x12, 5 classes", 8,
                lambda rng: ct.make_data("cnn", rng)),
        "mlp_wide": ("Mlp 512-2048-512, GELU, MSE", 64, make_mlp_wide),
        "causal_lm_d128": ("CausalLm d=128, 4 heads, FF 512, 2 layers, seq 64, vocab 256", 16,
                           make_lm_d128),
        "rnn_lm_h256": ("RnnLm: bidirectional LSTM + GRU, hidden 256, seq 35, vocab 1000", 16,
                        make_rnn_lm),
    }


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def openblas_threads():
    """OpenBLAS's thread count in this process (None if it cannot be asked)."""
    import ctypes
    try:
        return int(ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads())
    except (OSError, AttributeError):
        return None


def build(name, spec, work):
    """Seeded model + data; exports WORK/NAME.onnx and saves what the PyTorch
    worker needs (NAME.init.pt, NAME.<input>.npy, NAME.torch.json).

    Returns (model, data, --data args for weft train)."""
    desc, batch, make = spec
    torch.manual_seed(0)
    model, data = make(np.random.default_rng(0))
    # As check_training: torch.onnx.export merges initializers with equal
    # values (LayerNorm's ones and zeros), which would tie weights apart.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.train()
    torch.save(model.state_dict(), os.path.join(work, name + ".init.pt"))
    names = list(data)
    example = ct.rows(data, 0, batch)
    onnx_path = os.path.join(work, name + ".onnx")
    with torch.enable_grad():
        torch.onnx.export(model, tuple(example[k] for k in names), onnx_path,
                          opset_version=17, input_names=names, output_names=["loss"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    data_args, files = [], {}
    for k, v in data.items():
        path = os.path.join(work, "%s.%s.npy" % (name, k))
        np.save(path, v)
        files[k] = path
        data_args += ["--data", "%s=%s" % (k, path)]
    with open(os.path.join(work, name + ".torch.json"), "w") as f:
        json.dump({"batch": batch, "inputs": names, "files": files}, f)
    return model, data, data_args


def torch_worker(name, work, steps):
    """--torch-worker: the PyTorch loop in a fresh process; prints a JSON line."""
    with open(os.path.join(work, name + ".torch.json")) as f:
        cfg = json.load(f)
    torch.manual_seed(0)
    model, _ = model_specs()[name][2](np.random.default_rng(0))
    model.load_state_dict(torch.load(os.path.join(work, name + ".init.pt")))
    model.train()
    data = {k: np.load(cfg["files"][k]) for k in cfg["inputs"]}
    names, batch = cfg["inputs"], cfg["batch"]
    opt = torch.optim.AdamW(model.parameters())
    times, losses = [], []
    for s in range(steps):
        t0 = time.perf_counter()
        b = ct.rows(data, s, batch)
        opt.zero_grad()
        loss = model(*(b[k] for k in names))
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        losses.append(loss.item())
    print(json.dumps({"step_time_s": times, "loss": losses,
                      "torch_threads": torch.get_num_threads(),
                      "openblas_threads": openblas_threads()}))


def last_json_line(text):
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def weft_round(bundle, data_args, metrics, steps, env, timeout):
    """One `weft train` run -> ((per-step seconds, losses, summary), error)."""
    if os.path.exists(metrics):
        os.remove(metrics)
    argv = [weft_tools.find_tool("weft"), "train", bundle] + data_args + [
        "--steps", str(steps), "--metrics", metrics]
    r = weft_tools.run_tool(argv, timeout=timeout, env=env)
    if not r.ok:
        return None, "weft train exit %d: %s" % (r.returncode, r.message(400))
    with open(metrics) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    return ([x["step_time_s"] for x in recs], [x["loss"] for x in recs],
            last_json_line(r.stdout)), None


def torch_round(name, work, steps, omp, blas, timeout, base_env):
    """One PyTorch worker run with OMP/OpenBLAS thread counts -> (result, error)."""
    env = dict(base_env, OMP_NUM_THREADS=str(omp), OPENBLAS_NUM_THREADS=str(blas),
               MKL_NUM_THREADS=str(omp))
    argv = [sys.executable, os.path.abspath(__file__), "--torch-worker", name,
            "--work-dir", work, "--steps", str(steps), "--threads", str(omp)]
    r = weft_tools.run_tool(argv, timeout=timeout, env=env)
    got = last_json_line(r.stdout) if r.ok else None
    if not got:
        return None, "torch worker exit %d: %s" % (r.returncode, r.message(400))
    return got, None


def timing(rounds, warmup):
    """Median/mean/min over the post-warm-up steps of all rounds."""
    pooled = [t for r in rounds for t in r[warmup:]]
    if not pooled:
        return None
    return {"median_s": statistics.median(pooled), "mean_s": statistics.fmean(pooled),
            "min_s": min(pooled), "samples": len(pooled),
            "round_medians_s": [statistics.median(r[warmup:]) for r in rounds]}


def rel_diff(a, b):
    if a is None or b is None:
        return None
    return abs(a - b) / max(abs(b), 1e-12)


def parse_torch_configs(text, threads):
    """'T/T,T/1,1/T' -> [(omp, blas), ...] without duplicates."""
    out = []
    for item in text.split(","):
        omp, _, blas = item.strip().partition("/")
        pair = tuple(threads if v.strip().upper() == "T" else int(v) for v in (omp, blas or omp))
        if pair not in out:
            out.append(pair)
    return out


def cfg_label(pair):
    return "%d/%d" % pair


def bench_model(name, spec, work, args, env, configs):
    desc, batch, _ = spec
    row = {"model": name, "note": desc, "batch": batch}
    model, data, data_args = build(name, spec, work)
    row["parameters"] = int(sum(p.numel() for p in model.parameters()))
    row["data_rows"] = int(next(iter(data.values())).shape[0])

    bundle = os.path.join(work, name + ".bundle")
    shutil.rmtree(bundle, ignore_errors=True)
    comp = weft_tools.compile_bundle(os.path.join(work, name + ".onnx"), bundle,
                                     extra_args=["--train", "--optimizer", "adamw",
                                                 *args.weftc_arg],
                                     timeout=args.timeout)
    row["weft_compile_s"] = comp.seconds
    if args.weftc_arg:
        row["weftc_args"] = list(args.weftc_arg)
    if not comp.ok:
        row["weft_error"] = "weftc exit %d: %s" % (comp.returncode, comp.message(400))

    metrics = os.path.join(work, name + ".metrics.jsonl")
    weft_times, weft_losses = [], None
    torch_times = {c: [] for c in configs}
    torch_losses, torch_info = {}, {}
    for _ in range(args.rounds):
        if "weft_error" not in row:
            got, err = weft_round(bundle, data_args, metrics, args.steps, env, args.timeout)
            if err:
                row["weft_error"] = err
            else:
                weft_times.append(got[0])
                weft_losses = got[1]
                row["weft_summary"] = got[2]
        for c in configs:
            got, err = torch_round(name, work, args.steps, c[0], c[1], args.timeout, env)
            if err:
                row.setdefault("torch_errors", {})[cfg_label(c)] = err
                continue
            torch_times[c].append(got["step_time_s"])
            torch_losses[c] = got["loss"]
            torch_info[c] = {"torch_threads": got["torch_threads"],
                             "openblas_threads": got["openblas_threads"]}

    if weft_times:
        row["weft"] = timing(weft_times, args.warmup)
        row["weft_final_loss"] = weft_losses[-1]
    row["torch_configs"] = {}
    for c in configs:
        if torch_times[c]:
            row["torch_configs"][cfg_label(c)] = dict(timing(torch_times[c], args.warmup),
                                                      final_loss=torch_losses[c][-1],
                                                      **torch_info[c])
    if not row["torch_configs"]:
        return row
    best = min((c for c in configs if torch_times[c]),
               key=lambda c: row["torch_configs"][cfg_label(c)]["median_s"])
    row["torch_best_config"] = cfg_label(best)
    row["torch"] = {k: v for k, v in row["torch_configs"][cfg_label(best)].items()}
    row["torch_final_loss"] = torch_losses[best][-1]
    if weft_losses is not None:
        diffs = [rel_diff(a, b) for a, b in zip(weft_losses, torch_losses[best])]
        diffs = [d for d in diffs if d is not None]
        row["max_rel_loss_diff"] = max(diffs) if diffs else None
        row["final_rel_loss_diff"] = rel_diff(weft_losses[-1], torch_losses[best][-1])
        # The first steps' relative differences: for chaotic models (the
        # CNNs) these show that the runs start together.
        row["first_rel_loss_diffs"] = diffs[:8]
    if row.get("weft") and row["torch"]["median_s"] > 0:
        row["ratio_weft_over_torch"] = row["weft"]["median_s"] / row["torch"]["median_s"]
    return row


def ms(t):
    return "%.3f" % (t["median_s"] * 1e3) if t else "error"


def main(argv=None):
    global torch, ct
    ap = argparse.ArgumentParser(description="weft vs PyTorch CPU training-step benchmark")
    ap.add_argument("--model", action="append", choices=DEFAULT_MODELS + EXTRA_MODELS,
                    help="model (repeatable; default all)")
    ap.add_argument("--steps", type=int, default=60, help="training steps per run")
    ap.add_argument("--warmup", type=int, default=10,
                    help="leading steps of each run left out of the timing")
    ap.add_argument("--rounds", type=int, default=3,
                    help="weft / PyTorch runs per model, in turn")
    ap.add_argument("--threads", type=int,
                    default=int(os.environ.get("WEFT_NUM_THREADS", "2") or 2))
    ap.add_argument("--torch-configs", default="T/T,T/1,1/T",
                    help="PyTorch OpenMP/OpenBLAS thread counts to time, T = --threads "
                         "(default T/T,T/1,1/T); the fastest is the headline")
    ap.add_argument("--work-dir", default=os.path.join(HERE, "results", "tmp", "training"),
                    help="exported models, data and bundles (default bench/results/tmp/training)")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "training-cpu.json"))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--weftc-arg", action="append", default=[], metavar="ARG",
                    help="one more weftc compile argument (repeatable), e.g. "
                         "--weftc-arg=--merge-products --weftc-arg=off")
    ap.add_argument("--torch-worker", metavar="MODEL", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.warmup >= args.steps:
        ap.error("--warmup must be smaller than --steps")

    clean_env = dict(os.environ)
    if not args.torch_worker:
        # The parent only exports; keep its pools small and out of the way.
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, str(args.threads))
    import torch as torch_module  # after the thread-count variables are set
    import check_training as ct_module
    torch, ct = torch_module, ct_module
    torch.set_num_threads(args.threads)
    if args.torch_worker:
        torch_worker(args.torch_worker, args.work_dir, args.steps)
        return 0

    start = time.monotonic()
    load_at_start = os.getloadavg()
    if load_at_start[0] > 0.5 * (os.cpu_count() or 1):
        print("bench: warning: load average %.1f on %d cores; timings will be noisy" % (
            load_at_start[0], os.cpu_count() or 1))
    try:
        weft_tools.find_tool("weftc")
        weft_tools.find_tool("weft")
    except FileNotFoundError as exc:
        print("bench: %s" % exc, file=sys.stderr)
        return 1

    specs = model_specs()
    models = args.model or DEFAULT_MODELS
    configs = parse_torch_configs(args.torch_configs, args.threads)
    os.makedirs(args.work_dir, exist_ok=True)
    env = dict(clean_env, WEFT_NUM_THREADS=str(args.threads))
    rows = []
    for m in models:
        row = bench_model(m, specs[m], args.work_dir, args, env, configs)
        rows.append(row)
        print("bench: %-16s weft %s ms/step, torch %s ms/step (%s)" % (
            m, ms(row.get("weft")), ms(row.get("torch")), ", ".join(
                "%s %s" % (k, ms(v)) for k, v in row.get("torch_configs", {}).items())))
        sys.stdout.flush()
    load_at_end = os.getloadavg()

    print()
    print("CPU training (AdamW), %d threads, median ms/step over %d rounds x %d steps after "
          "%d warm-up; torch %s; %s" % (args.threads, args.rounds, args.steps - args.warmup,
                                         args.warmup, torch.__version__, cpu_model()))
    tt = cfg_label((args.threads, args.threads))
    hdr = "%-16s %5s %9s %9s %6s %6s %9s %11s %11s %8s" % (
        "model", "batch", "weft ms", "torch ms", "cfg", "ratio", "torch " + tt, "weft loss",
        "torch loss", "max diff")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print("%-16s %5d %9s %9s %6s %6s %9s %11s %11s %8s" % (
            r["model"], r["batch"], ms(r.get("weft")), ms(r.get("torch")),
            r.get("torch_best_config", "-"),
            "%.2f" % r["ratio_weft_over_torch"] if "ratio_weft_over_torch" in r else "-",
            ms(r.get("torch_configs", {}).get(tt)),
            "%.6f" % r["weft_final_loss"] if "weft_final_loss" in r else "-",
            "%.6f" % r["torch_final_loss"] if "torch_final_loss" in r else "-",
            "%.1e" % r["max_rel_loss_diff"] if r.get("max_rel_loss_diff") is not None
            else "-"))
    print("(ratio = weft / torch, > 1 means weft is slower. torch ms is the fastest of the "
          "OpenMP/OpenBLAS")
    print(" thread configurations %s (cfg = the one that won); torch %s = both pools at %d "
          "threads." % (", ".join(cfg_label(c) for c in configs), tt, args.threads))
    print(" Losses after step %d; max diff = largest per-step relative loss difference.)" %
          args.steps)
    print("(load average at start %.2f, at end %.2f, on %d cores)" % (
        load_at_start[0], load_at_end[0], os.cpu_count() or 1))
    for r in rows:
        if "weft_error" in r:
            print("%s: weft_error: %s" % (r["model"], r["weft_error"]))
        for k, v in r.get("torch_errors", {}).items():
            print("%s: torch_error (%s): %s" % (r["model"], k, v))

    result = {
        "benchmark": "training-cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_start": load_at_start, "loadavg_at_end": load_at_end},
        "threads": args.threads,
        "steps": args.steps,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "optimizer": "adamw (torch.optim.AdamW defaults: lr 1e-3, betas (0.9, 0.999), "
                     "eps 1e-8, weight_decay 1e-2)",
        "torch_version": torch.__version__,
        "torch_configs": [cfg_label(c) for c in configs],
        "torch_config_note": "OMP_NUM_THREADS (= torch.set_num_threads) / OPENBLAS_NUM_THREADS "
                             "of the PyTorch worker; the headline torch time is the fastest",
        "weftc": weft_tools.find_tool("weftc"),
        "timing_stat": "median_s over the post-warm-up steps of all rounds is the headline; "
                       "mean_s, min_s and each round's median also recorded",
        "timing_note": "weft: step_time_s from `weft train --metrics` (row gather + forward + "
                       "backward + AdamW update); torch: perf_counter around row gather, "
                       "zero_grad, forward, backward, optimizer.step",
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
