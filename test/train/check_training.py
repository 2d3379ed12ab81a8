"""Trains real PyTorch models with weft and with torch.optim, step for step.

For each model: export the training forward (which returns the loss) with
torch.onnx.export, run 10 steps of a PyTorch loop from the same initial
weights on the same rows (DESIGN.md: step s uses rows [s*B, (s+1)*B) modulo
N), compile with `weftc compile --train`, run `weft train`, and compare the
per-step losses (relative error <= 1e-4). With --resume-check, also train 5
steps, resume to 10, and require the final state to equal an uninterrupted
run bit for bit.

usage: /usr/bin/python3 check_training.py MODEL OPTIMIZER WORKDIR [--resume-check]
           [--clip NORM]
  MODEL: mlp | causal_lm | cnn        OPTIMIZER: adamw | sgd
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

STEPS = 10
TOLERANCE = 1e-4


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 4)

    def forward(self, x, y):
        return torch.mean(torch.square(self.l2(F.gelu(self.l1(x))) - y))


class CausalLm(torch.nn.Module):
    VOCAB, SEQ, DIM = 50, 12, 32

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(self.VOCAB, self.DIM)
        self.pos = torch.nn.Parameter(torch.randn(1, self.SEQ, self.DIM) * 0.1)
        self.block = torch.nn.TransformerEncoderLayer(
            self.DIM, 4, 64, dropout=0.0, batch_first=True, norm_first=True,
            activation="gelu")
        self.head = torch.nn.Linear(self.DIM, self.VOCAB)

    def forward(self, tokens, targets):
        h = self.embed(tokens) + self.pos
        mask = torch.triu(torch.full((self.SEQ, self.SEQ), float("-inf")), 1)
        h = self.block(h, src_mask=mask)
        logits = self.head(h)
        return F.cross_entropy(logits.reshape(-1, self.VOCAB), targets.reshape(-1))


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x, labels):
        h = F.max_pool2d(F.relu(self.c1(x)), 2)
        h = F.relu(self.c2(h))
        h = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        return F.cross_entropy(self.fc(h), labels)


def make_data(name, rng):
    """Inputs of N=20 rows (so steps wrap around) with a batch of 8."""
    n = 20
    if name == "mlp":
        return Mlp(), {"x": rng.standard_normal((n, 16)).astype(np.float32),
                       "y": rng.standard_normal((n, 4)).astype(np.float32)}
    if name == "causal_lm":
        toks = rng.integers(0, CausalLm.VOCAB, (n, CausalLm.SEQ + 1))
        return CausalLm(), {"tokens": toks[:, :-1].astype(np.int64),
                            "targets": toks[:, 1:].astype(np.int64)}
    if name == "cnn":
        return Cnn(), {"x": rng.standard_normal((n, 3, 12, 12)).astype(np.float32),
                       "labels": rng.integers(0, 5, n).astype(np.int64)}
    raise SystemExit(f"unknown model {name}")


def rows(data, step, batch):
    n = next(iter(data.values())).shape[0]
    idx = [(step * batch + i) % n for i in range(batch)]
    return {k: torch.from_numpy(v[idx]) for k, v in data.items()}


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
    if ckpt:
        cmd += ["--checkpoint-dir", ckpt]
    if resume:
        cmd += ["--resume"]
    run(cmd)
    return [json.loads(line)["loss"] for line in open(metrics)]


def main():
    name, optimizer, work = sys.argv[1], sys.argv[2], sys.argv[3]
    resume_check = "--resume-check" in sys.argv
    clip = None
    if "--clip" in sys.argv:
        clip = float(sys.argv[sys.argv.index("--clip") + 1])
    os.makedirs(work, exist_ok=True)
    for sub in ("full", "split"):
        os.makedirs(os.path.join(work, sub), exist_ok=True)
    torch.manual_seed(0)
    model, data = make_data(name, np.random.default_rng(0))
    # torch.onnx.export merges initializers with equal values (LayerNorm's
    # ones and zeros, say), which would tie weights PyTorch trains apart.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.train()
    batch = 8
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

    opt, flags = make_optimizer(optimizer, model.parameters())
    ref = []
    for s in range(STEPS):
        opt.zero_grad()
        loss = model(*(rows(data, s, batch)[k] for k in names))
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        ref.append(loss.item())

    bundle = os.path.join(work, "bundle")
    if clip is not None:
        flags += ["--clip-grad-norm", str(clip)]
    run(["weftc", "compile", onnx_path, "-o", bundle, "--train", *flags])
    shutil.rmtree(os.path.join(work, "ckpt-full"), ignore_errors=True)
    got = train_weft(bundle, data_args, os.path.join(work, "full"), STEPS,
                     ckpt=os.path.join(work, "ckpt-full") if resume_check else None)
    worst = 0.0
    for s, (a, b) in enumerate(zip(got, ref)):
        err = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, err)
        print(f"step {s + 1:2d}  weft {a:.7f}  torch {b:.7f}  rel {err:.1e}")
    ok = len(got) == STEPS and worst <= TOLERANCE
    print(f"{name}/{optimizer}: max relative loss error {worst:.2e} "
          f"({'ok' if ok else 'FAILED'}, limit {TOLERANCE})")

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
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
