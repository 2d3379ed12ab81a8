"""Helpers for gpt.test (examples/gpt/make_gpt.py's models).

    gpt_check.py data OUT_DIR --vocab V --seq S --rows N [--seed K]
        writes OUT_DIR/tokens.npy and OUT_DIR/targets.npy: N rows of random
        tokens and the next token of each (int64 [N, S]).
    gpt_check.py losses MODEL.onnx DATA_DIR METRICS.jsonl
        requires every loss in METRICS (weft train --metrics) to be finite,
        the last below the first, and the first equal (1e-5 relative) to a
        NumPy forward pass of MODEL's weights on the first batch of DATA_DIR.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def write_data(args):
    rng = np.random.default_rng(args.seed)
    seq = rng.integers(0, args.vocab, (args.rows, args.seq + 1), dtype=np.int64)
    os.makedirs(args.out_dir, exist_ok=True)
    np.save(os.path.join(args.out_dir, "tokens.npy"), seq[:, :-1])
    np.save(os.path.join(args.out_dir, "targets.npy"), seq[:, 1:])


def reference_loss(model_path, tokens, targets):
    """The loss of make_gpt.py's graph, in float64 NumPy, from the weights
    by name (the model's directory holds its external data)."""
    model = onnx.load(model_path)
    w = {t.name: numpy_helper.to_array(t).astype(np.float64)
         for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    heads = [n for n in model.graph.initializer if n.name == "shape.heads"]
    batch, seq, n_heads, head_dim = numpy_helper.to_array(heads[0]).tolist()
    layers = sum(1 for name in w if name.endswith(".attn.qkv.weight"))
    tokens, targets = tokens[:batch], targets[:batch]
    erf = np.vectorize(math.erf)

    def layer_norm(x, p):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * w[p + ".weight"] + w[p + ".bias"]

    x = w["wte.weight"][tokens] + w["wpe.weight"]
    hidden = x.shape[-1]
    mask = np.triu(np.full((seq, seq), -1e9), 1)
    for i in range(layers):
        p = f"h.{i}"
        qkv = layer_norm(x, p + ".ln_1") @ w[p + ".attn.qkv.weight"] + w[p + ".attn.qkv.bias"]
        q, k, v = [t.reshape(batch, seq, n_heads, head_dim).transpose(0, 2, 1, 3)
                   for t in np.split(qkv, 3, axis=-1)]
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = x + ctx @ w[p + ".attn.proj.weight"] + w[p + ".attn.proj.bias"]
        m = layer_norm(x, p + ".ln_2") @ w[p + ".mlp.fc.weight"] + w[p + ".mlp.fc.bias"]
        m = 0.5 * m * (1 + erf(m / math.sqrt(2)))
        x = x + m @ w[p + ".mlp.proj.weight"] + w[p + ".mlp.proj.bias"]
    logits = layer_norm(x, "ln_f") @ w["lm_head.weight"]
    logits = logits.reshape(-1, logits.shape[-1])
    top = logits.max(-1)
    lse = np.log(np.exp(logits - top[:, None]).sum(-1)) + top
    return float((lse - logits[np.arange(len(logits)), targets.reshape(-1)]).mean())


def check_losses(args):
    losses = [json.loads(line)["loss"] for line in open(args.metrics)]
    if not losses or not all(math.isfinite(l) for l in losses):
        sys.exit(f"losses not all finite: {losses}")
    if not losses[-1] < losses[0]:
        sys.exit(f"the loss did not decrease: {losses}")
    tokens = np.load(os.path.join(args.data_dir, "tokens.npy"))
    targets = np.load(os.path.join(args.data_dir, "targets.npy"))
    ref = reference_loss(args.model, tokens, targets)
    rel = abs(losses[0] - ref) / abs(ref)
    if rel > 1e-5:
        sys.exit(f"first loss {losses[0]} differs from NumPy's {ref} (relative {rel:.2e})")
    print(f"losses {' '.join(f'{l:.6f}' for l in losses)}; NumPy first loss "
          f"{ref:.6f} (relative difference {rel:.1e})")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("out_dir")
    d.add_argument("--vocab", type=int, required=True)
    d.add_argument("--seq", type=int, required=True)
    d.add_argument("--rows", type=int, required=True)
    d.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("losses")
    c.add_argument("model")
    c.add_argument("data_dir")
    c.add_argument("metrics")
    args = p.parse_args()
    write_data(args) if args.cmd == "data" else check_losses(args)


if __name__ == "__main__":
    main()
