"""Trains real PyTorch models with weft and with torch.optim, step for step.

For each model: export the training forward (which returns the loss) with
torch.onnx.export, run 10 steps of a PyTorch loop from the same initial
weights on the same rows (DESIGN.md: step s uses rows [s*B, (s+1)*B) modulo
N), compile with `weftc compile --train`, run `weft train`, and compare the
per-step losses (relative error <= 1e-4). With --resume-check, also train 5
steps, resume to 10, and require the final state to equal an uninterrupted
run bit for bit.

With --dtype bf16 the bundle is compiled with `--dtype bf16` and the
reference is the PyTorch loop with weft's mixed-precision products emulated
(bf16_reference.py), limit 1e-3. At step 1 the f32 loss must also be at
least ten times (and 1e-5) farther from weft's than that reference is, so
the bf16 products really ran; the distance to torch.autocast's bf16 loop is
printed beside it. With --fuse as well, the bundle compiled with
--fold-norm-casts off must give bitwise the same losses with one cast
launch more per layer norm.

usage: /usr/bin/python3 check_training.py MODEL OPTIMIZER WORKDIR [--resume-check]
           [--clip NORM] [--dtype bf16] [--lr-schedule KIND,WARMUP,DECAY,MIN_LR]
           [--shuffle SEED]
  MODEL: mlp | dropout_mlp | vae | causal_lm | tied_lm | cnn | bn_cnn | qat_cnn | llama | mobile_cnn
         | unet
         | rnn_lm | packed_lm | unsorted_lm | seq2seq | vit
  OPTIMIZER: adamw | sgd
       /usr/bin/python3 check_training.py export MODEL WORKDIR [BATCH]
  only exports MODEL with a global batch of BATCH rows (default 8) to
  WORKDIR/MODEL.onnx and its rows to WORKDIR/<input>.npy.
"""
import contextlib
import copy
import json
import math
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import torch

from bf16_reference import autocast_bf16, weft_bf16_products

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from weft_tools import shuffled_row  # noqa: E402
from train_models import (  # noqa: E402,F401  (re-exported for check_plans and the benches)
    Mlp, CausalLm, TiedLm, DropoutLm, Cnn, BnCnn, QatCnn, DropoutMlp, Vae, TinyLlama, MobileCnn, TinyUnet, RnnLm, PackedLm, UnsortedLm, WeftDropout, WeftNoise, prepared_qat, make_data)

STEPS = 10
TOLERANCE = 1e-4
TOLERANCE_BF16 = 1e-3


NP_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64,
             "I32": np.int32, "F16": np.float16, "U8": np.uint8,
             "I8": np.int8, "BOOL": np.bool_, "BF16": np.uint16}


def read_safetensors(path):
    """name -> numpy array of a safetensors file (bf16 as its uint16 bits)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], NP_DTYPES[info["dtype"]]) \
            .reshape(info["shape"])
    return out


def running_stats(model):
    """BatchNorm's running statistics: name -> tensor (as exported)."""
    return {k: v.detach().numpy() for k, v in model.named_buffers()
            if k.endswith(("running_mean", "running_var"))}


# `weft train --shuffle SEED` (None: rows in order); set by main().
SHUFFLE = None


def rows(data, step, batch):
    n = next(iter(data.values())).shape[0]
    if SHUFFLE is None:
        idx = [(step * batch + i) % n for i in range(batch)]
    else:
        idx = [shuffled_row(SHUFFLE, step * batch + i, n) for i in range(batch)]
    return {k: torch.from_numpy(v[idx]) for k, v in data.items()}


def schedule_factor(schedule, s):
    """The factor of the base rate at update s + 1 (s updates done), as Hugging
    Face's get_{constant,linear,cosine}_schedule_with_warmup (cosine with
    its min_lr_rate) define it; held at its end after the decay steps."""
    kind, warmup, decay, min_ratio = schedule
    if s < warmup:
        return s / warmup
    if kind == "constant":
        return 1.0
    progress = min(1.0, (s - warmup) / max(1, decay - warmup))
    g = 1.0 - progress if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
    return min_ratio + (1.0 - min_ratio) * g


def make_optimizer(name, params):
    if name == "adamw":
        return torch.optim.AdamW(params), []
    return (torch.optim.SGD(params, lr=0.05, momentum=0.9),
            ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"])


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def train_weft(bundle, data_args, work, steps, ckpt=None, resume=False):
    metrics = os.path.join(work, "metrics.jsonl")
    cmd = ["weft", "train", bundle, *data_args, "--steps", str(steps),
           "--metrics", metrics]
    if SHUFFLE is not None:
        cmd += ["--shuffle", str(SHUFFLE)]
    if ckpt:
        cmd += ["--checkpoint-dir", ckpt]
    if resume:
        cmd += ["--resume"]
    run(cmd)
    return [json.loads(line)["loss"] for line in open(metrics)]


def launches(bundle, kernel):
    """The launches of `kernel` per run that the bundle's plan.txt lists."""
    with open(os.path.join(bundle, "plan.txt")) as f:
        for line in f:
            if line.strip().startswith(kernel + ":"):
                return int(line.split(":")[1])
    return 0


def export_model(name, work, batch=8):
    """Seeds and builds MODEL, exports its training forward (returning the
    loss) to WORK/NAME.onnx and its rows to WORK/<input>.npy; returns the
    model, the data, the input names, the ONNX path and the --data flags."""
    torch.manual_seed(0)
    model, data = make_data(name, np.random.default_rng(0))
    # torch.onnx.export merges initializers with equal values (LayerNorm's
    # ones and zeros, say), which would tie weights PyTorch trains apart.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.train()
    example = rows(data, 0, batch)
    onnx_path = os.path.join(work, f"{name}.onnx")
    names = list(data)
    with torch.enable_grad():
        torch.onnx.export(model, tuple(example[k] for k in names), onnx_path,
                          opset_version=17, input_names=names,
                          output_names=["loss"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    data_args = []
    for k, v in data.items():
        path = os.path.join(work, f"{k}.npy")
        np.save(path, v)
        data_args += ["--data", f"{k}={path}"]
    return model, data, names, onnx_path, data_args


def main():
    if sys.argv[1] == "export":
        work = sys.argv[3]
        os.makedirs(work, exist_ok=True)
        batch = int(sys.argv[4]) if len(sys.argv) > 4 else 8
        export_model(sys.argv[2], work, batch)
        return
    name, optimizer, work = sys.argv[1], sys.argv[2], sys.argv[3]
    resume_check = "--resume-check" in sys.argv
    clip = None
    dtype = "fp32"
    if "--dtype" in sys.argv:
        dtype = sys.argv[sys.argv.index("--dtype") + 1]
    fuse = "--fuse" in sys.argv
    if "--clip" in sys.argv:
        clip = float(sys.argv[sys.argv.index("--clip") + 1])
    global SHUFFLE
    if "--shuffle" in sys.argv:
        SHUFFLE = int(sys.argv[sys.argv.index("--shuffle") + 1])
    schedule = None
    if "--lr-schedule" in sys.argv:
        # KIND,WARMUP,DECAY,MIN_LR (MIN_LR absolute, as weftc's --min-lr).
        kind, warmup, decay, min_lr = sys.argv[sys.argv.index("--lr-schedule") + 1].split(",")
        probe, _ = make_optimizer(optimizer, [torch.zeros(1, requires_grad=True)])
        # The reference scales by the ratio weft takes: --min-lr over --lr.
        schedule = (kind, int(warmup), int(decay),
                    float(min_lr) / probe.param_groups[0]["lr"])
        schedule_flags = ["--lr-schedule", kind, "--warmup-steps", warmup]
        if kind != "constant":
            schedule_flags += ["--decay-steps", decay, "--min-lr", min_lr]
    os.makedirs(work, exist_ok=True)
    for sub in ("full", "split"):
        os.makedirs(os.path.join(work, sub), exist_ok=True)
    batch = 8
    model, data, names, onnx_path, data_args = export_model(name, work, batch)

    trained = {}

    def reference(context):
        # context: a function returning a fresh context manager per step.
        """Per-step losses of a torch.optim loop from the initial weights
        (the trained model goes to trained[context])."""
        m = copy.deepcopy(model)
        trained[context] = m
        opt, _ = make_optimizer(optimizer, m.parameters())
        base_lr = opt.param_groups[0]["lr"]
        losses = []
        for s in range(STEPS):
            opt.zero_grad()
            for module in m.modules():
                if isinstance(module, (WeftDropout, WeftNoise)):
                    module.step = s
            with context():
                loss = m(*(rows(data, s, batch)[k] for k in names))
            loss.float().backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
            if schedule is not None:
                for group in opt.param_groups:
                    group["lr"] = base_lr * schedule_factor(schedule, s)
            opt.step()
            losses.append(loss.item())
        return losses

    _, flags = make_optimizer(optimizer, [torch.zeros(1)])
    f32_ref = reference(contextlib.nullcontext)
    ref, limit = f32_ref, TOLERANCE
    if dtype == "bf16":
        ref, limit = reference(weft_bf16_products), TOLERANCE_BF16
        flags += ["--dtype", "bf16"]

    bundle = os.path.join(work, "bundle")
    if clip is not None:
        flags += ["--clip-grad-norm", str(clip)]
    if schedule is not None:
        flags += schedule_flags
    run(["weftc", "compile", onnx_path, "-o", bundle, "--train", *flags,
         *(["--fuse", "elementwise"] if fuse else [])])
    shutil.rmtree(os.path.join(work, "ckpt-full"), ignore_errors=True)
    stats = running_stats(model)
    keep_state = resume_check or stats
    got = train_weft(bundle, data_args, os.path.join(work, "full"), STEPS,
                     ckpt=os.path.join(work, "ckpt-full") if keep_state else None)
    fused_ok = True
    # The rate each update took, as weft train reports it ("lr" in the
    # metrics), against the reference loop's.
    probe, _ = make_optimizer(optimizer, [torch.zeros(1, requires_grad=True)])
    base = probe.param_groups[0]["lr"]
    want = [base * (schedule_factor(schedule, s) if schedule else 1.0) for s in range(STEPS)]
    reported = [json.loads(line).get("lr") for line in
                open(os.path.join(work, "full", "metrics.jsonl"))]
    rates_ok = all(r is not None and abs(r - w) <= 1e-12 * max(1.0, abs(w))
                   for r, w in zip(reported, want)) and len(reported) == STEPS
    print(f"reported learning rates: {'as the reference' if rates_ok else 'FAILED'}"
          f" ({reported[:3]}...)")
    if fuse:
        # The same step without weft-fuse-elementwise: in f32 the fused
        # kernels must compute exactly what the unfused ones do; in bf16 the
        # products that now return f32 skip a rounding, so only the
        # reference's limit applies.
        plain = os.path.join(work, "bundle-unfused")
        run(["weftc", "compile", onnx_path, "-o", plain, "--train", *flags,
             "--fuse", "none"])
        os.makedirs(os.path.join(work, "unfused"), exist_ok=True)
        unfused = train_weft(plain, data_args, os.path.join(work, "unfused"),
                             STEPS)
        if dtype == "fp32":
            fused_ok = got == unfused
        print(f"fused against unfused: {'bitwise equal' if got == unfused else 'differ'}"
              f" (max relative {max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, unfused)):.1e};"
              f" {'ok' if fused_ok else 'FAILED'})")
        # weft-recompute-elementwise recomputes kept values with the same
        # ops in the same kernels: bitwise equal in every dtype.
        kept = os.path.join(work, "bundle-no-recompute")
        run(["weftc", "compile", onnx_path, "-o", kept, "--train", *flags,
             "--fuse", "elementwise", "--fuse-recompute", "off"])
        os.makedirs(os.path.join(work, "no-recompute"), exist_ok=True)
        stored = train_weft(kept, data_args, os.path.join(work, "no-recompute"),
                            STEPS)
        same = got == stored
        fused_ok = fused_ok and same
        print(f"recomputed against kept: {'bitwise equal' if same else 'differ'}"
              f" ({'ok' if same else 'FAILED'})")
        if dtype == "bf16":
            # A layer norm writing the bf16 its cast made (the default on
            # the CPU) rounds the same f32 values once: bitwise equal, and
            # the bundle has that many cast launches fewer.
            unfolded = os.path.join(work, "bundle-unfolded")
            run(["weftc", "compile", onnx_path, "-o", unfolded, "--train",
                 *flags, "--fuse", "elementwise", "--fold-norm-casts", "off"])
            os.makedirs(os.path.join(work, "unfolded"), exist_ok=True)
            cast_f32 = train_weft(unfolded, data_args,
                                  os.path.join(work, "unfolded"), STEPS)
            norms = launches(bundle, "layer_norm")
            casts = launches(unfolded, "cast") - launches(bundle, "cast")
            same = (got == cast_f32 and casts == norms and
                    (norms > 0 or name != "causal_lm"))
            fused_ok = fused_ok and same
            print(f"layer norms writing bf16 against their casts: "
                  f"{'bitwise equal' if got == cast_f32 else 'differ'}, "
                  f"{casts} casts fewer for {norms} layer norms "
                  f"({'ok' if same else 'FAILED'})")
    def worst_error(a, b):
        return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))

    for s, (a, b) in enumerate(zip(got, ref)):
        err = abs(a - b) / max(abs(b), 1e-12)
        print(f"step {s + 1:2d}  weft {a:.7f}  torch {b:.7f}  rel {err:.1e}")
    worst = worst_error(got, ref)
    ok = len(got) == STEPS and worst <= limit and fused_ok
    print(f"{name}/{optimizer}/{dtype}: max relative loss error {worst:.2e} "
          f"({'ok' if ok else 'FAILED'}, limit {limit})")
    if stats:
        # BatchNorm's running statistics: stored back every step with
        # PyTorch's rule, they end as PyTorch's do (and differ from the
        # initial ones, which the check would otherwise pass on).
        state = read_safetensors(os.path.join(
            work, "ckpt-full", f"step-{STEPS:08d}", "state.safetensors"))
        final = running_stats(trained[contextlib.nullcontext])
        stat_err, moved = 0.0, True
        for k, v in final.items():
            if k not in state:
                print(f"  {k}: not in the checkpoint")
                stat_err = float("inf")
                continue
            scale = max(float(np.max(np.abs(v))), 1e-12)
            stat_err = max(stat_err, float(np.max(np.abs(state[k] - v))) / scale)
            moved = moved and not np.allclose(v, stats[k])
        stats_ok = stat_err <= limit and moved
        print(f"running statistics of {len(final)} tensors after {STEPS} steps: "
              f"max error {stat_err:.2e} relative to each tensor's largest "
              f"({'ok' if stats_ok else 'FAILED'}"
              f"{'' if moved else ': some never moved'})")
        ok = ok and stats_ok
    if dtype == "bf16":
        # Step 1 runs the initial weights, before a rare rounding flip (f32
        # sums in another order land on the other side of a bf16 tie) can
        # compound: there the f32 loss must be far from weft's, or this test
        # could not tell bf16 products from f32 ones.
        step1 = abs(got[0] - ref[0]) / abs(ref[0])
        f32_gap = abs(got[0] - f32_ref[0]) / abs(f32_ref[0])
        distinct = f32_gap >= max(10 * step1, 1e-5)
        autocast_gap = worst_error(got, reference(autocast_bf16))
        print(f"bf16, step 1: weft {step1:.1e} from the emulation, "
              f"{f32_gap:.1e} from f32 ({'ok' if distinct else 'FAILED'}: "
              f"must be >= 10x and >= 1e-5); all steps: "
              f"{worst_error(got, f32_ref):.2e} from f32, "
              f"{autocast_gap:.2e} from torch.autocast(bf16)")
        ok = ok and distinct
    if resume_check:
        ckpt = os.path.join(work, "ckpt-split")
        shutil.rmtree(ckpt, ignore_errors=True)
        split_work = os.path.join(work, "split")
        os.makedirs(split_work, exist_ok=True)
        first = train_weft(bundle, data_args, split_work, 5, ckpt=ckpt)
        rest = train_weft(bundle, data_args, split_work, STEPS, ckpt=ckpt,
                          resume=True)
        final_full = os.path.join(work, "ckpt-full", f"step-{STEPS:08d}",
                                  "state.safetensors")
        final_split = os.path.join(ckpt, f"step-{STEPS:08d}", "state.safetensors")
        same_state = open(final_full, "rb").read() == open(final_split, "rb").read()
        same_losses = rest == got and first == got[:5]
        print(f"resume: losses identical {same_losses}, final state bitwise "
              f"identical {same_state}")
        ok = ok and same_state and same_losses
    ok = ok and rates_ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
