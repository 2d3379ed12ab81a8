"""Pipeline bubble and activation memory, measured from `weft train --trace`.

A balanced model (an MLP of LAYERS Linear+Tanh layers of WIDTH, the MSE loss
in the last one; the first layer's input is 1.5 x WIDTH wide, because its
backward computes no input gradient: so every layer costs the same to train)
is cut into P = 2 stages, one rank each (this machine has 2
cores: one rank per core), and trained STEPS steps under GPipe, 1F1B,
interleaved 1F1B (2 chunks per stage) and ZB-H1 with M microbatches. From each trace:
the measured bubble (1 - a stage's compute on microbatches / the span from
the first microbatch launch on any rank to the last one's end, averaged
over stages; the median over the steps after the first) against the theory, (p-1)/(m+p-1)
for GPipe and 1F1B and (p-1)/(v m + p - 1) interleaved (ZB-H1 is compared
with the 1F1B figure it improves on); and each rank's
allocated activation arena (its stage's part of the static plan).

usage: /usr/bin/python3 bench/run_pipeline_bench.py [--out FILE.json]
       [--layers 8] [--width 512] [--batch 256] [--steps 30]
Needs build/bin on PATH (weftc, weft) and mpirun.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch


def export(work, layers, width, batch):
    torch.manual_seed(0)

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(
                [torch.nn.Linear(width * 3 // 2 if i == 0 else width, width)
                 for i in range(layers)])

        def forward(self, x, y):
            for layer in self.layers:
                x = torch.tanh(layer(x))
            return ((x - y) ** 2).mean()

    x = torch.randn(batch, width * 3 // 2)
    y = torch.randn(batch, width)
    path = os.path.join(work, "mlp.onnx")
    torch.onnx.export(Mlp(), (x, y), path, input_names=["x", "y"],
                      output_names=["loss"], opset_version=17)
    np.save(os.path.join(work, "x.npy"), x.numpy())
    np.save(os.path.join(work, "y.npy"), y.numpy())
    return path


def run(work, model, name, flags, steps):
    bundle = os.path.join(work, name)
    subprocess.run(["weftc", "compile", model, "-o", bundle, "--train",
                    "--optimizer", "sgd", "--lr", "0.01", *flags], check=True)
    trace = os.path.join(work, name + ".trace.json")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(
        ["weft", "train", bundle, "-n", "2", "--steps", str(steps),
         "--data", "x=" + os.path.join(work, "x.npy"),
         "--data", "y=" + os.path.join(work, "y.npy"), "--trace", trace],
        check=True, env=env, capture_output=True, text=True)
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    other = json.load(open(trace))["otherData"]
    time = summary["time_per_step"]
    return {
        "plan": name, "flags": " ".join(flags),
        "bubble_measured": round(other["bubble_measured"], 4),
        "bubble_theory": round(other["bubble_theory"], 4),
        "relative_gap": round(other["bubble_measured"] /
                              other["bubble_theory"] - 1, 4),
        "step_ms": round(time["step_ms"], 3),
        "compute_ms": round(time["compute_ms"], 3),
        "arena_bytes_per_rank": time["arena_bytes_per_rank"],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        model = export(work, args.layers, args.width, args.batch)
        for m in (2, 4, 8):
            for schedule, extra in (("gpipe", []), ("1f1b", []),
                                    ("interleaved", ["--virtual-stages", "2"]),
                                    ("zb-h1", [])):
                name = f"{schedule}_m{m}"
                flags = ["--pp", "2", "--microbatches", str(m),
                         "--schedule", schedule, *extra]
                row = run(work, model, name, flags, args.steps)
                rows.append(row)
                print(f"{name:16s} bubble {100 * row['bubble_measured']:5.1f}% "
                      f"(theory {100 * row['bubble_theory']:5.1f}%, "
                      f"{100 * row['relative_gap']:+.1f}%)  step "
                      f"{row['step_ms']:7.2f} ms  arena per rank "
                      f"{[round(b / 2**20, 2) for b in row['arena_bytes_per_rank']]} MiB",
                      flush=True)
    result = {
        "benchmark": "pipeline bubble and arena, 2 CPU ranks (weft train --trace)",
        "model": f"MLP {args.layers} x Linear({args.width},{args.width})+Tanh, "
                 f"MSE, batch {args.batch}",
        "steps": args.steps, "rows": rows,
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
