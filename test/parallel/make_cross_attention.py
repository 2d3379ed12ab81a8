"""Exports a decoder's cross-attention as a user exporting for inference
would (torch.onnx.export with constant folding): the q projection and the
packed k, v projection become separate initializers, not rows of one
in_proj_weight. Weights are perturbed so that equal initial values (zero
biases) are not merged into one initializer; with --fresh they are not,
and the export ties the attention's zero biases (q's and the output
projection's) into one initializer, as it does for an untrained model.
Writes MODEL.onnx and its inputs src.npy, tokens.npy, targets.npy beside
it.

usage: /usr/bin/python3 make_cross_attention.py OUT.onnx [--fresh]
"""
import os
import sys

import numpy as np
import torch

VOCAB, SRC, SEQ, DIM, BATCH = 32, 12, 8, 32, 4


class CrossAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = torch.nn.Embedding(VOCAB, DIM)
        self.tgt_embed = torch.nn.Embedding(VOCAB, DIM)
        self.attn = torch.nn.MultiheadAttention(DIM, 4, batch_first=True)
        self.head = torch.nn.Linear(DIM, VOCAB)

    def forward(self, src, tokens, targets):
        memory = self.src_embed(src)
        h = self.tgt_embed(tokens)
        h = h + self.attn(h, memory, memory, need_weights=False)[0]
        logits = self.head(h)
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), targets.reshape(-1))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = CrossAttention()
    if "--fresh" not in sys.argv:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.05)
    rng = np.random.default_rng(0)
    data = {"src": rng.integers(0, VOCAB, (BATCH, SRC)),
            "tokens": rng.integers(0, VOCAB, (BATCH, SEQ)),
            "targets": rng.integers(0, VOCAB, (BATCH, SEQ))}
    torch.onnx.export(model, tuple(torch.from_numpy(v) for v in data.values()),
                      out, input_names=list(data), output_names=["loss"],
                      opset_version=17, do_constant_folding=True)
    for k, v in data.items():
        np.save(os.path.join(os.path.dirname(out), k + ".npy"), v)


if __name__ == "__main__":
    main()
