"""PyTorch reference for bench/gpu: the training step of the GPT-2 style
model examples/gpt/make_gpt.py writes (same blocks: pre-norm, packed q/k/v,
explicit causal-masked softmax attention, exact erf GELU, untied LM head,
mean cross-entropy), in bf16 autocast with fp32 master weights and
torch.optim.AdamW, timed in eager mode and under torch.compile on the same
GPU. Prints one JSON line per mode: step seconds, tokens/s and MFU
(6 x parameters x tokens/s over the peak given).

usage: python3 torch_gpt_step.py --layers 12 --hidden 768 --heads 12
           --seq 1024 --vocab 50257 --batch 8 [--steps 10] [--warmup 3]
           [--modes eager,compile] [--peak-tflops 989]
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)
        mask = torch.triu(torch.full((seq, seq), -1e9), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(self.ln_1(x)).split(h, dim=-1)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).permute(0, 2, 3, 1)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        scores = (q @ k) * (1.0 / math.sqrt(d)) + self.mask
        ctx = torch.softmax(scores, dim=-1) @ v
        ctx = ctx.transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(ctx)
        m = self.fc(self.ln_2(x))
        g = m * (torch.erf(m / math.sqrt(2.0)) + 1.0) * 0.5
        return x + self.mlp_proj(g)


class Gpt(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.hidden)
        self.wpe = nn.Parameter(torch.randn(1, a.seq, a.hidden) * 0.01)
        self.blocks = nn.ModuleList(
            Block(a.hidden, a.heads, a.seq) for _ in range(a.layers))
        self.ln_f = nn.LayerNorm(a.hidden, eps=1e-5)
        self.lm_head = nn.Linear(a.hidden, a.vocab, bias=False)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe
        for blk in self.blocks:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]),
                               targets.view(-1))


def run(mode, a, tokens, targets):
    torch.manual_seed(0)
    model = Gpt(a).cuda()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    fn = torch.compile(step) if mode == "compile" else step
    start = time.perf_counter()
    for _ in range(a.warmup):
        loss = fn()
    torch.cuda.synchronize()
    warm = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = fn()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / a.steps
    tokens_per_s = a.batch * a.seq / seconds
    return {"mode": mode, "params": params, "step_s": seconds,
            "tokens_per_s": tokens_per_s,
            "mfu": 6 * params * tokens_per_s / (a.peak_tflops * 1e12),
            "warmup_s": warm, "loss": float(loss),
            "peak_memory_bytes": torch.cuda.max_memory_allocated()}


def main():
    p = argparse.ArgumentParser()
    for name in ("layers", "hidden", "heads", "seq", "vocab", "batch"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="dense bf16 peak of the GPU (H100/H200 SXM: 989)")
    a = p.parse_args()
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).cuda()
    targets = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).cuda()
    for mode in a.modes.split(","):
        torch.cuda.reset_peak_memory_stats()
        print(json.dumps(run(mode, a, tokens, targets)), flush=True)


if __name__ == "__main__":
    main()
