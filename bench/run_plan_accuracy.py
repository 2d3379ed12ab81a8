"""The cost model against this machine: every feasible 4-rank plan of the
MLP and the transformer language model is compiled (its predicted step time
comes from the manifest), trained for a few steps on CPU ranks (the median
step after the first is the measurement), and compared; then `weftc compile
--auto` picks its plan, which must be within 10% of the fastest measured,
and each prediction within 25% of its measurement.

usage: /usr/bin/python3 bench/run_plan_accuracy.py [--steps K] [--ranks N]
           [--cluster cpu-local|FILE.json] [--models mlp,lm] [--repeat R]
           [--paired P] [--out FILE.json]

Each plan is trained R times (default 3) in rotating order and measured by
the fastest of its runs' median steps: on this shared machine one run of a
plan can be 1.5-2x another.

With --paired P (default 16), `--auto` is then compared with each pinned
plan that measured faster than it (or within 10% of the fastest) in P
back-to-back pairs, alternating which runs first: each pair's two runs meet
the same spell of the machine, so the median of the pairs' ratios says
which plan is faster where the fastest-of-R numbers are the spells'
(bench/README.md: in run 6 one plan moved by a third between runs; run 8
showed 6 pairs too few). The 10% target is then judged on that median
ratio against the rival `--auto` trails most.

Needs weftc and weft on PATH (build/bin). Timings on this shared 2-core
machine vary with load: run it idle.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

MAKE_MLP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "test", "tools", "make_mlp.py")


def make_mlp(out, layers=8, width=512, rows=256):
    """An MLP of `layers` Linear+Tanh layers with an MSE loss (the model of
    test/tools/make_mlp.py) and twice its batch of rows as data."""
    path = os.path.join(out, "mlp.onnx")
    subprocess.run([sys.executable, MAKE_MLP, path, "--layers", str(layers),
                    "--width", str(width), "--rows", str(rows)], check=True)
    rng = np.random.default_rng(0)
    data = []
    for name in ("x", "y"):
        p = os.path.join(out, f"mlp_{name}.npy")
        np.save(p, rng.standard_normal((rows * 2, width)).astype(np.float32))
        data += ["--data", f"{name}={p}"]
    return path, data


def make_lm(out, dim=128, heads=4, layers=2, seq=32, vocab=256, batch=32):
    """A pre-norm causal transformer LM exported by PyTorch with its loss."""
    import torch
    import torch.nn.functional as F

    class Lm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, dim)
            self.pos = torch.nn.Parameter(torch.randn(1, seq, dim) * 0.1)
            self.blocks = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(
                    dim, heads, 4 * dim, dropout=0.0, batch_first=True,
                    norm_first=True, activation="gelu")
                for _ in range(layers))
            self.head = torch.nn.Linear(dim, vocab)

        def forward(self, tokens, targets):
            h = self.embed(tokens) + self.pos
            mask = torch.triu(torch.full((seq, seq), float("-inf")), 1)
            for b in self.blocks:
                h = b(h, src_mask=mask)
            return F.cross_entropy(self.head(h).reshape(-1, vocab),
                                   targets.reshape(-1))

    torch.manual_seed(0)
    model = Lm()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    rng = np.random.default_rng(0)
    toks = rng.integers(0, vocab, (batch * 2, seq + 1))
    tokens, targets = toks[:, :-1].astype(np.int64), toks[:, 1:].astype(np.int64)
    path = os.path.join(out, "lm.onnx")
    torch.onnx.export(model, (torch.from_numpy(tokens[:batch]),
                              torch.from_numpy(targets[:batch])), path,
                      input_names=["tokens", "targets"], output_names=["loss"],
                      opset_version=17)
    data = []
    for name, arr in (("tokens", tokens), ("targets", targets)):
        p = os.path.join(out, f"lm_{name}.npy")
        np.save(p, arr)
        data += ["--data", f"{name}={p}"]
    return path, data


# The plans of 4 ranks the issue names, with ZeRO variants.
PLANS = [
    "--dp 4", "--dp 4 --zero 1", "--dp 4 --zero 2", "--dp 4 --zero 3",
    "--tp 4", "--dp 2 --tp 2", "--dp 2 --tp 2 --zero 1",
    "--pp 2 --dp 2 --microbatches 4", "--pp 2 --dp 2 --microbatches 4 --zero 1",
    "--pp 2 --tp 2 --microbatches 4", "--pp 4 --microbatches 8",
]


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def compile_plan(model, flags, bundle, ranks, cluster):
    """Compiles one plan; its predicted step time comes from the manifest."""
    subprocess.run(["rm", "-rf", bundle])
    rc, out, err = run(["weftc", "compile", model, "-o", bundle, "--train",
                        "--devices", str(ranks), "--cluster", cluster,
                        *flags.split()])
    if rc != 0:
        return {"flags": flags, "error": err.strip().splitlines()[-1]}
    auto_line = [l for l in err.splitlines() if "--auto chose" in l]
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    predicted = manifest["predicted"]["cost_model"]
    return {"flags": flags, "plan": manifest["plan"], "bundle": bundle,
            "predicted_s": predicted["step_time_s"],
            "predicted_parts": {k: predicted[k] for k in
                                ("compute_s", "exposed_comm_s", "bubble_s")},
            "measured_runs_s": [], "mean_runs_s": [],
            "auto": auto_line[0] if auto_line else None}


def train_once(r, data, steps, ranks):
    """One `weft train` of a compiled plan: its median step after the first."""
    rc, out, err = run(["weft", "train", r["bundle"], "-n", str(ranks), *data,
                        "--steps", str(steps)])
    if rc != 0:
        r["error"] = err.strip().splitlines()[-1]
        return
    summary = json.loads(out.strip().splitlines()[-1])
    r["measured_runs_s"].append(summary["median_step_time_s"])
    r["mean_runs_s"].append(summary["mean_step_time_s"])


def measure_all(model, data, work, steps, ranks, cluster, repeat, pairs=0):
    """Every plan compiled, then trained `repeat` times in rotating order
    (so a slow spell of this shared machine hits different plans each
    round); a plan's measurement is the fastest of its runs' medians."""
    rows = [compile_plan(model, flags, os.path.join(work, f"b{i}"), ranks,
                         cluster)
            for i, flags in enumerate(PLANS + ["--auto"])]
    live = [r for r in rows if "error" not in r]
    for rep in range(repeat):
        shift = rep % max(1, len(live))
        for r in live[shift:] + live[:shift]:
            if "error" not in r:
                train_once(r, data, steps, ranks)
    for r in rows:
        if "error" not in r:
            r["measured_s"] = min(r["measured_runs_s"])
            r["mean_s"] = min(r["mean_runs_s"])
    paired = compare_paired(rows, data, steps, ranks, pairs) if pairs else []
    for r in rows:
        r.pop("bundle", None)
    return rows, paired


def paired_ratio(auto, other, data, steps, ranks, pairs):
    """The median over `pairs` back-to-back pairs of auto's median step over
    the other plan's, the order alternating pair by pair."""
    ratios = []
    for k in range(pairs):
        a, b = {"bundle": auto["bundle"], "measured_runs_s": [],
                "mean_runs_s": []}, {"bundle": other["bundle"],
                                     "measured_runs_s": [], "mean_runs_s": []}
        for r in ((a, b) if k % 2 == 0 else (b, a)):
            train_once(r, data, steps, ranks)
        if "error" in a or "error" in b:
            return None, ratios
        ratios.append(a["measured_runs_s"][0] / b["measured_runs_s"][0])
    return float(np.median(ratios)), ratios


def compare_paired(rows, data, steps, ranks, pairs):
    """`--auto` against every pinned plan measured faster than it or within
    10% of the fastest pinned plan, in pairs (paired_ratio). Returns the
    comparisons, best pinned plan (lowest ratio) first."""
    pinned = [r for r in rows if "error" not in r and r["flags"] != "--auto"]
    auto = [r for r in rows if "error" not in r and r["flags"] == "--auto"]
    if not auto or not pinned:
        return []
    auto = auto[0]
    fastest = min(r["measured_s"] for r in pinned)
    rivals = [r for r in pinned if r["measured_s"] < auto["measured_s"] or
              r["measured_s"] <= 1.10 * fastest]
    out = []
    for r in rivals:
        median, ratios = paired_ratio(auto, r, data, steps, ranks, pairs)
        if median is None:
            continue
        out.append({"flags": r["flags"], "auto_over_plan": median,
                    "ratios": ratios})
        print(f"  paired: --auto / {r['flags']}: median {median:.3f} over "
              f"{len(ratios)} pairs ({min(ratios):.2f} .. {max(ratios):.2f})",
              flush=True)
    return sorted(out, key=lambda c: -c["auto_over_plan"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--cluster", default="cpu-local")
    ap.add_argument("--models", default="mlp,lm")
    ap.add_argument("--repeat", type=int, default=3,
                    help="trainings per plan; the fastest median counts")
    ap.add_argument("--paired", type=int, default=16,
                    help="pairs of back-to-back runs of --auto and each "
                         "rival plan; judges the 10%% target (0: the "
                         "fastest runs judge it)")
    ap.add_argument("--out")
    args = ap.parse_args()
    results = {}
    ok = True
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            model, data = (make_mlp if name == "mlp" else make_lm)(work)
            rows, paired = measure_all(model, data, work, args.steps,
                                       args.ranks, args.cluster, args.repeat,
                                       args.paired)
            for r in rows:
                flags = r["flags"]
                if "error" in r:
                    print(f"{name:4s} {flags:42s} error: {r['error']}")
                    continue
                err = r["measured_s"] / r["predicted_s"] - 1
                print(f"{name:4s} {flags:42s} predicted {r['predicted_s']*1e3:8.2f} ms "
                      f"measured {r['measured_s']*1e3:8.2f} ms ({err:+5.0%})",
                      flush=True)
            good = [r for r in rows if "error" not in r]
            pinned = [r for r in good if r["flags"] != "--auto"]
            auto = [r for r in good if r["flags"] == "--auto"]
            fastest = min(pinned, key=lambda r: r["measured_s"])
            within = [abs(r["measured_s"] / r["predicted_s"] - 1) <= 0.25
                      for r in good]
            summary = {"rows": rows, "fastest": fastest["flags"],
                       "fastest_s": fastest["measured_s"],
                       "predictions_within_25pct": sum(within),
                       "plans": len(good)}
            if auto:
                a = auto[0]
                summary["auto_plan"] = a["plan"]
                summary["auto_s"] = a["measured_s"]
                summary["auto_vs_fastest"] = a["measured_s"] / fastest["measured_s"] - 1
                print(f"{name}: --auto chose {a['auto']}\n"
                      f"  measured {a['measured_s']*1e3:.2f} ms, fastest pinned "
                      f"{fastest['flags']} {fastest['measured_s']*1e3:.2f} ms "
                      f"({summary['auto_vs_fastest']:+.0%})")
                if paired:
                    # The rival auto trails most, by the pairs' medians.
                    worst = paired[0]
                    summary["paired"] = paired
                    summary["auto_vs_fastest_paired"] = (
                        worst["auto_over_plan"] - 1)
                    summary["fastest_paired"] = worst["flags"]
                    print(f"  paired: --auto {worst['auto_over_plan'] - 1:+.1%} "
                          f"against {worst['flags']}, the most")
                    ok = ok and summary["auto_vs_fastest_paired"] <= 0.10
                else:
                    ok = ok and summary["auto_vs_fastest"] <= 0.10
            print(f"{name}: {sum(within)}/{len(good)} predictions within 25%")
            ok = ok and all(within)
            results[name] = summary
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"ranks": args.ranks, "steps": args.steps,
                       "repeat": args.repeat, "paired": args.paired,
                       "cluster": args.cluster, "models": results}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
