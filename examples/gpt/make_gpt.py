"""Writes a GPT-2 style causal language model with its own loss as ONNX,
built node by node with onnx.helper (no PyTorch: a GPT-3 175B graph takes
seconds and a few MB when its weights are left out).

usage: /usr/bin/python3 make_gpt.py --layers L --hidden H --heads A --seq S
           --vocab V --batch B -o OUT.onnx [--data random|none] [--seed N]
           [--opset 17]

The graph (inputs `tokens` and `targets`, int64 [B, S]; one output, the scalar
`loss`) is what `weftc compile OUT.onnx -o BUNDLE --train` trains:

    x = wte[tokens] + wpe                          token and learned positions
    L times (h.I):                                 pre-norm blocks
        a = LayerNorm(x) @ qkv.weight + qkv.bias   packed [H, 3H]
        q, k, v = a sliced in 3, in A heads of H/A Slice, Reshape, Transpose
        p = softmax(q k^T / sqrt(H/A) + causal mask)
        x = x + merge_heads(p v) @ proj.weight + proj.bias
        m = LayerNorm(x) @ fc.weight + fc.bias     H -> 4H
        x = x + gelu(m) @ proj.weight + proj.bias  4H -> H, exact (erf) GELU
    loss = cross_entropy(LayerNorm(x) @ lm_head.weight, targets)
                                                   mean over the B*S tokens

Node and initializer names carry the layer (`h.3.attn.qkv`,
`h.3.attn.qkv.weight`, `h.3.mlp.fc.bias`, ...; `wte`, `wpe`, `ln_f`,
`lm_head` around them), so pipeline stage boundaries can be given by name
prefix. The causal mask is computed in each block (ConstantOfShape + Trilu)
rather than stored, so that it is no trainable initializer, costs no bytes in
the file, and each block depends on the one before through the residual
stream only (a clean cut for pipeline stages).

Weights: every float initializer of at least 1 KiB is stored as ONNX external
data in OUT.onnx.data (location relative to the model, with offset and
length); smaller ones are inline. `--data random` (the default) writes that
file with GPT-2's initialization (seeded): weights N(0, 0.02), the residual
projections N(0, 0.02 / sqrt(2 L)), positions N(0, 0.01), biases 0, LayerNorm
scales 1. `--data none` writes the references only, no data file: such a model
can be imported and planned (`weftc import --structure-only`, `weftc plan`),
not compiled.

Prints one line: the parameter count and the sizes of the files.
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EXTERNAL_MIN_BYTES = 1024
ALIGN = 64  # offsets of external tensors in the data file
LN_EPS = 1e-5
MASK_VALUE = -1e9  # added above the diagonal; finite, so no inf - inf


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Write a GPT-2 style causal LM with its loss as ONNX.")
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    p.add_argument("--data", choices=["random", "none"], default="random")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--opset", type=int, default=17)
    args = p.parse_args(argv)
    for name in ("layers", "hidden", "heads", "seq", "vocab", "batch"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.hidden % args.heads:
        p.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    if not 17 <= args.opset <= 21:
        p.error("--opset must be 17 to 21 (LayerNormalization needs 17)")
    return args


class Writer:
    """Collects nodes and initializers; float initializers of at least
    EXTERNAL_MIN_BYTES go to the external data file (or only their
    references, with data 'none')."""

    def __init__(self, data_path, location, mode, seed):
        self.nodes, self.inits = [], []
        self.location, self.mode = location, mode
        self.rng = np.random.default_rng(seed)
        self.offset = 0
        self.params = 0
        self.data = open(data_path, "wb") if mode == "random" else None

    def close(self):
        if self.data:
            self.data.close()

    def node(self, op, inputs, name, outputs=None, **attrs):
        """Adds a node named `name`; its (single) output is named `name` too
        unless `outputs` says otherwise. Returns the output name(s)."""
        outs = [name] if outputs is None else outputs
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs is None else outs

    def constant(self, name, value):
        """A float scalar as a Constant node (a float initializer would be a
        trainable parameter)."""
        t = numpy_helper.from_array(np.array(value, dtype=np.float32), name)
        return self.node("Constant", [], name, value=t)

    def ints(self, name, values):
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def param(self, name, shape, init, std=0.0):
        """A float32 parameter: init is 'normal' (std), 'zeros' or 'ones'."""
        shape = list(shape)
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * 4
        self.params += count
        external = nbytes >= EXTERNAL_MIN_BYTES

        def values():
            if init == "normal":
                return (self.rng.standard_normal(shape, dtype=np.float32)
                        * np.float32(std)).astype(np.float32)
            return np.full(shape, 1.0 if init == "ones" else 0.0, dtype=np.float32)

        if not external:
            self.inits.append(numpy_helper.from_array(values(), name))
            return name
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
        t.data_location = TensorProto.EXTERNAL
        self.offset = (self.offset + ALIGN - 1) // ALIGN * ALIGN
        for key, value in (("location", self.location), ("offset", self.offset),
                           ("length", nbytes)):
            e = t.external_data.add()
            e.key, e.value = key, str(value)
        if self.data:
            self.data.seek(self.offset)
            self.data.write(values().tobytes())
        self.offset += nbytes
        self.inits.append(t)
        return name


def linear(w, x, name, d_in, d_out, std):
    """x @ name.weight + name.bias (nodes `name` and `name.bias_add`)."""
    weight = w.param(name + ".weight", [d_in, d_out], "normal", std)
    bias = w.param(name + ".bias", [d_out], "zeros")
    y = w.node("MatMul", [x, weight], name)
    return w.node("Add", [y, bias], name + ".bias_add")


def layer_norm(w, x, name, hidden):
    scale = w.param(name + ".weight", [hidden], "ones")
    bias = w.param(name + ".bias", [hidden], "zeros")
    return w.node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=LN_EPS)


def block(w, x, i, a):
    """One pre-norm transformer block h.i; returns the residual stream."""
    H, A, S, B = a.hidden, a.heads, a.seq, a.batch
    p = f"h.{i}"
    std, proj_std = 0.02, 0.02 / math.sqrt(2 * a.layers)
    # Attention.
    h = layer_norm(w, x, p + ".ln_1", H)
    qkv = linear(w, h, p + ".attn.qkv", H, 3 * H, std)
    heads = {}
    for j, name in enumerate("qkv"):
        # Slices rather than one Split: weft partitions them along the batch
        # (data parallelism, microbatches) and along the heads.
        t = w.node("Slice", [qkv, f"slice.{name}.start", f"slice.{name}.end", "slice.axes"],
                   f"{p}.attn.{name}")
        r = w.node("Reshape", [t, "shape.heads"], f"{p}.attn.{name}_heads")
        # q, v: [B, A, S, D]; k: [B, A, D, S]
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]
        heads[name] = w.node("Transpose", [r], f"{p}.attn.{name}_transpose", perm=perm)
    scores = w.node("MatMul", [heads["q"], heads["k"]], p + ".attn.scores")
    scaled = w.node("Mul", [scores, "const.attn_scale"], p + ".attn.scale")
    fill = w.node("ConstantOfShape", ["shape.mask"], p + ".attn.mask_fill",
                  value=numpy_helper.from_array(np.array([MASK_VALUE], np.float32)))
    mask = w.node("Trilu", [fill, "const.one"], p + ".attn.mask", upper=1)
    masked = w.node("Add", [scaled, mask], p + ".attn.masked")
    probs = w.node("Softmax", [masked], p + ".attn.softmax", axis=-1)
    ctx = w.node("MatMul", [probs, heads["v"]], p + ".attn.context")
    ctx = w.node("Transpose", [ctx], p + ".attn.merge_transpose", perm=[0, 2, 1, 3])
    ctx = w.node("Reshape", [ctx, "shape.hidden"], p + ".attn.merge")
    out = linear(w, ctx, p + ".attn.proj", H, H, proj_std)
    x = w.node("Add", [x, out], p + ".attn.residual")
    # MLP.
    h = layer_norm(w, x, p + ".ln_2", H)
    m = linear(w, h, p + ".mlp.fc", H, 4 * H, std)
    g = w.node("Div", [m, "const.sqrt2"], p + ".mlp.gelu.div")
    g = w.node("Erf", [g], p + ".mlp.gelu.erf")
    g = w.node("Add", [g, "const.one_f"], p + ".mlp.gelu.add")
    g = w.node("Mul", [m, g], p + ".mlp.gelu.mul")
    g = w.node("Mul", [g, "const.half"], p + ".mlp.gelu")
    out = linear(w, g, p + ".mlp.proj", 4 * H, H, proj_std)
    return w.node("Add", [x, out], p + ".mlp.residual")


def build(a, w):
    H, A, S, B, V = a.hidden, a.heads, a.seq, a.batch, a.vocab
    D = H // A
    # Constants shared by the blocks.
    w.constant("const.attn_scale", 1.0 / math.sqrt(D))
    w.constant("const.sqrt2", math.sqrt(2.0))
    w.constant("const.one_f", 1.0)
    w.constant("const.half", 0.5)
    w.ints("const.one", 1)  # Trilu k: strictly above the diagonal
    for j, name in enumerate("qkv"):
        w.ints(f"slice.{name}.start", [j * H])
        w.ints(f"slice.{name}.end", [(j + 1) * H])
    w.ints("slice.axes", [2])
    w.ints("shape.heads", [B, S, A, D])
    w.ints("shape.hidden", [B, S, H])
    w.ints("shape.mask", [S, S])
    w.ints("shape.logits", [B * S, V])
    w.ints("shape.targets", [B * S])
    # Embeddings.
    wte = w.param("wte.weight", [V, H], "normal", 0.02)
    wpe = w.param("wpe.weight", [S, H], "normal", 0.01)
    x = w.node("Gather", [wte, "tokens"], "wte", axis=0)
    x = w.node("Add", [x, wpe], "wpe")
    for i in range(a.layers):
        x = block(w, x, i, a)
    x = layer_norm(w, x, "ln_f", H)
    head = w.param("lm_head.weight", [H, V], "normal", 0.02)
    logits = w.node("MatMul", [x, head], "lm_head")
    logits = w.node("Reshape", [logits, "shape.logits"], "loss.logits")
    labels = w.node("Reshape", ["targets", "shape.targets"], "loss.targets")
    w.node("SoftmaxCrossEntropyLoss", [logits, labels], "loss", reduction="mean")

    graph = helper.make_graph(
        w.nodes, "gpt",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [B, S]),
         helper.make_tensor_value_info("targets", TensorProto.INT64, [B, S])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        initializer=w.inits)
    model = helper.make_model(graph, producer_name="weft-make-gpt",
                              opset_imports=[helper.make_opsetid("", a.opset)])
    model.ir_version = 8
    return model


def human(n, unit="B"):
    for prefix in ("", "Ki", "Mi", "Gi", "Ti"):
        if abs(n) < 1024 or prefix == "Ti":
            return f"{n:.1f} {prefix}{unit}" if prefix else f"{n} {unit}"
        n /= 1024


def short_count(n):
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.2f}{suffix}"
    return str(n)


def main(argv):
    a = parse_args(argv)
    out = os.path.abspath(a.output)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    location = os.path.basename(out) + ".data"
    data_path = os.path.join(os.path.dirname(out), location)
    if a.data == "none" and os.path.exists(data_path):
        os.remove(data_path)  # a stale file would not match the references
    w = Writer(data_path, location, a.data, a.seed)
    try:
        model = build(a, w)
    finally:
        w.close()
    with open(out, "wb") as f:
        f.write(model.SerializeToString())
    model_bytes = os.path.getsize(out)
    if a.data == "random":
        data = f"{location} {human(os.path.getsize(data_path))}"
    else:
        data = f"{location} not written ({human(w.offset)} referenced)"
    print(f"{os.path.basename(out)}: GPT L={a.layers} H={a.hidden} A={a.heads} "
          f"S={a.seq} V={a.vocab} B={a.batch}, {w.params:,} parameters "
          f"({short_count(w.params)}), model {human(model_bytes)}, data {data}")


if __name__ == "__main__":
    main(sys.argv[1:])
