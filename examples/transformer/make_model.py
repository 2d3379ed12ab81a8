"""Builds the example transformer: a one-block causal language model (token
embedding, learned positions, pre-norm self-attention with 4 heads, a GELU
MLP, a vocabulary head and the cross-entropy of next-token prediction),
exported by PyTorch to ONNX with its loss, and 64 rows of a toy corpus (each
row counts up by a stride, wrapping around the vocabulary) as tokens.npy and
targets.npy.

usage: /usr/bin/python3 make_model.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

VOCAB, SEQ, DIM, BATCH = 48, 16, 64, 16


class CausalLm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.pos = torch.nn.Parameter(torch.randn(1, SEQ, DIM) * 0.1)
        self.block = torch.nn.TransformerEncoderLayer(
            DIM, 4, 4 * DIM, dropout=0.0, batch_first=True, norm_first=True,
            activation="gelu")
        self.head = torch.nn.Linear(DIM, VOCAB)

    def forward(self, tokens, targets):
        h = self.embed(tokens) + self.pos
        mask = torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1)
        h = self.block(h, src_mask=mask)
        logits = self.head(h)
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def main(out_dir):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    rows = 64
    start = rng.integers(0, VOCAB, (rows, 1))
    stride = rng.integers(1, 4, (rows, 1))
    seq = (start + stride * np.arange(SEQ + 1)) % VOCAB
    tokens, targets = seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)
    np.save(os.path.join(out_dir, "tokens.npy"), tokens)
    np.save(os.path.join(out_dir, "targets.npy"), targets)
    model = CausalLm()
    # torch.onnx.export merges initializers with equal values (the zero
    # biases, the LayerNorm ones), which would tie them in training; a
    # little noise keeps every parameter its own.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    example = (torch.from_numpy(tokens[:BATCH]), torch.from_numpy(targets[:BATCH]))
    torch.onnx.export(model, example, os.path.join(out_dir, "transformer.onnx"),
                      input_names=["tokens", "targets"], output_names=["loss"],
                      opset_version=17)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
