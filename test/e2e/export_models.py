#!/usr/bin/python3
"""Export weft's end-to-end models from PyTorch and write reference data.

Run with Debian's python (torch 1.13, torchvision 0.14, onnx):

    /usr/bin/python3 test/e2e/export_models.py --out DIR [--model NAME ...]
        [--resnet-size 224] [--list]

For each model NAME this writes

    DIR/NAME/model.onnx           torch.onnx.export, opset 17, constant folding,
                                  fixed input shapes, eval mode
    DIR/NAME/inputs/<input>.npy   reference inputs (seeded)
    DIR/NAME/outputs/<output>.npy PyTorch's outputs for them
    DIR/NAME/meta.json            input/output names, shapes, dtypes, notes

Models (all with random weights, torch.manual_seed(0) before building each):
  resnet18              torchvision resnet18, batch 1 x 3 x S x S (S = --resnet-size,
                        default 224); BatchNorm statistics and affine params randomized
                        so eval-mode BN is not the identity
  vit_tiny              torchvision VisionTransformer(image_size=32, patch_size=8,
                        num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128,
                        num_classes=10), its zero-initialized head randomized; batch 2
  encoder_postnorm_relu nn.TransformerEncoder, batch_first, d_model 64, 4 heads, ffn 128,
                        2 layers, ReLU, post-norm; batch 2 x seq 16
  encoder_prenorm_gelu  same with norm_first=True, GELU
  mlp                   Linear(32,64)-GELU-Linear(64,64)-ReLU-Linear(64,10); batch 8
  causal_lm_loss        Embedding(vocab 50, 64) + learned positions + 2-layer causal
                        TransformerEncoder (mask from torch.triu in forward) + Linear to
                        vocab; forward(tokens, targets) -> F.cross_entropy (scalar);
                        batch 2 x seq 16
  causal_lm_logits      the same network returning the logits
  mobilenet_v2          torchvision mobilenet_v2 (ReLU6 exported as Clip), BatchNorm
                        randomized; batch 2 x 3 x 64 x 64
  mobilenet_v3_small    torchvision mobilenet_v3_small (HardSwish, HardSigmoid in its
                        squeeze-excite blocks), BatchNorm randomized; batch 2 x 3 x 64 x 64
  densenet_small        torchvision DenseNet(growth_rate=8, block_config=(2, 2, 2),
                        num_init_features=16, num_classes=10) (its transitions export
                        Pad before AveragePool), BatchNorm randomized; batch 2 x 3 x 32 x 32
  swin_tiny             torchvision SwinTransformer(patch 4, embed 16, depths (2, 2),
                        heads (2, 4), window 4 x 4, 10 classes): shifted windows (the
                        attention mask built with ScatterND, the padding with Mod and
                        Pad); batch 2 x 3 x 40 x 40 (windows that need padding)
  recurrent_tagger      Embedding(vocab 40, 16) + 2-layer bidirectional nn.LSTM
                        (batch_first, hidden 12) + nn.GRU (hidden 10, initial state from a
                        learned parameter) + nn.RNN (ReLU, hidden 8) + Linear to 5 tags;
                        batch 3 x seq 7
  packed_tagger         Embedding(vocab 40, 16) + pack_padded_sequence (sorted lengths
                        7, 5, 2 given as an input) + bidirectional nn.LSTM (hidden 12) +
                        pad_packed_sequence + Linear to 5 tags: ONNX LSTM with sequence_lens
                        from the graph input; batch 3 x seq 7
  unsorted_tagger       the same LSTM over pack_padded_sequence(enforce_sorted=False),
                        lengths 2, 7, 5, 3: the export sorts the rows with TopK and
                        Gather, and puts them back (outputs and the last hidden
                        state) through an inverse permutation made by
                        ScatterElements; batch 4 x seq 7
  alexnet_style         conv, nn.LocalResponseNorm (exported with an If on the input's
                        rank), nn.LPPool2d, F.normalize, torch.prod over channels,
                        torch.atan / asin / acos; batch 2 x 3 x 8 x 8
  flow_warp             an image warped by a flow a conv predicts: F.grid_sample (ONNX
                        GridSample, opset 17) bilinear with border padding, then bicubic
                        with reflection; batch 2 x 3 x 8 x 8
  scripted_loop         torch.jit.script of a Python loop over x.size(0) that appends
                        each step's output to a list and stacks it: ONNX Loop carrying a
                        sequence (SequenceEmpty, SequenceInsert, ConcatFromSequence);
                        5 x 2 x 6
  pool_indices          nn.MaxPool2d(return_indices=True), 2x2 and 3x3 padded: ONNX
                        MaxPool's Indices output; batch 2 x 3 x 8 x 8
  inplace_index         in-place assignments (x[:, 0] = y, x[1] = x[1] * 2: ScatterND of
                        computed tensors) and advanced indexing (x[arange(2), idx]: a
                        flattened Gather) on a 2 x 3 x 4 input, with a linear layer before
"""

import argparse
import json
from typing import List
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17
MODEL_NAMES = ["resnet18", "vit_tiny", "encoder_postnorm_relu", "encoder_prenorm_gelu",
               "mlp", "causal_lm_loss", "causal_lm_logits", "mobilenet_v2", "mobilenet_v3_small",
               "densenet_small", "swin_tiny", "recurrent_tagger", "packed_tagger",
               "unsorted_tagger", "inplace_index", "alexnet_style", "flow_warp",
               "scripted_loop", "pool_indices"]


def _randomize_batchnorm(model, gen):
    """Make eval-mode BatchNorm non-trivial (torchvision inits it to the identity)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.2 * torch.randn(c, generator=gen))
                m.bias.copy_(0.1 * torch.randn(c, generator=gen))
                m.running_mean.copy_(0.1 * torch.randn(c, generator=gen))
                m.running_var.copy_(1.0 + 0.5 * torch.rand(c, generator=gen))


def build_resnet18(args):
    import torchvision
    model = torchvision.models.resnet18(weights=None)
    _randomize_batchnorm(model, torch.Generator().manual_seed(1))
    s = args.resnet_size
    x = torch.randn(1, 3, s, s)
    return model, {"input": x}, ["logits"], "torchvision resnet18, random weights, 1x3x%dx%d" % (s, s)


def build_vit_tiny(args):
    import torchvision
    model = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64,
        mlp_dim=128, num_classes=10)
    with torch.no_grad():  # torchvision zero-initializes the head
        for p in model.heads.parameters():
            p.copy_(0.1 * torch.randn_like(p))
    x = torch.randn(2, 3, 32, 32)
    return model, {"input": x}, ["logits"], "torchvision VisionTransformer 32/8, 2 layers, head randomized"


def _torchvision_cnn(model, size, note):
    _randomize_batchnorm(model, torch.Generator().manual_seed(1))
    x = torch.randn(2, 3, size, size)
    return model, {"input": x}, ["logits"], note


def build_mobilenet_v2(args):
    import torchvision
    return _torchvision_cnn(torchvision.models.mobilenet_v2(weights=None), 64,
                            "torchvision mobilenet_v2, random weights, 2x3x64x64")


def build_mobilenet_v3_small(args):
    import torchvision
    return _torchvision_cnn(torchvision.models.mobilenet_v3_small(weights=None), 64,
                            "torchvision mobilenet_v3_small, random weights, 2x3x64x64")


def build_densenet_small(args):
    import torchvision
    model = torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2, 2),
                                        num_init_features=16, num_classes=10)
    return _torchvision_cnn(model, 32, "torchvision DenseNet g8 (2,2,2), 2x3x32x32")


def build_swin_tiny(args):
    import torchvision
    model = torchvision.models.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
        window_size=[4, 4], num_classes=10)
    _perturb_all(model)
    x = torch.randn(2, 3, 40, 40)
    return model, {"input": x}, ["logits"], "torchvision SwinTransformer e16 d(2,2) w4, 2x3x40x40"


class EncoderModel(nn.Module):
    def __init__(self, norm_first, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                           dropout=0.1, activation=activation,
                                           batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2,
                                             enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def _perturb_all(model, scale=0.02):
    """Deep-copied layers and LayerNorm ones/zeros would otherwise share values."""
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen))


def build_encoder_postnorm_relu(args):
    model = EncoderModel(norm_first=False, activation="relu")
    _perturb_all(model)
    x = torch.randn(2, 16, 64)
    return model, {"input": x}, ["output"], "TransformerEncoder post-norm ReLU, d64 h4 L2, 2x16"


def build_encoder_prenorm_gelu(args):
    model = EncoderModel(norm_first=True, activation="gelu")
    _perturb_all(model)
    x = torch.randn(2, 16, 64)
    return model, {"input": x}, ["output"], "TransformerEncoder pre-norm GELU, d64 h4 L2, 2x16"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.gelu(self.fc1(x)))))


def build_mlp(args):
    model = MLP()
    x = torch.randn(8, 32)
    return model, {"input": x}, ["output"], "MLP Linear-GELU-Linear-ReLU-Linear, 8x32"


VOCAB, D_MODEL, SEQ, BATCH = 50, 64, 16, 2


class CausalLM(nn.Module):
    def __init__(self, return_loss):
        super().__init__()
        self.return_loss = return_loss
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(0.02 * torch.randn(SEQ, D_MODEL))
        layer = nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=4, dim_feedforward=128,
                                           dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens, targets=None):
        s = tokens.shape[1]
        # causal mask built in forward: -inf above the diagonal
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        h = self.tok(tokens) + self.pos[:s]
        h = self.encoder(h, mask=mask)
        logits = self.head(self.norm(h))
        if not self.return_loss:
            return logits
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def _lm_inputs():
    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    targets = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    return tokens, targets


def build_causal_lm_loss(args):
    model = CausalLM(return_loss=True)
    _perturb_all(model)
    tokens, targets = _lm_inputs()
    return (model, {"tokens": tokens, "targets": targets}, ["loss"],
            "causal LM (vocab 50, d64, 2 layers, triu mask) -> cross-entropy loss")


def build_causal_lm_logits(args):
    model = CausalLM(return_loss=False)
    _perturb_all(model)
    tokens, _ = _lm_inputs()
    return model, {"tokens": tokens}, ["logits"], "causal LM (vocab 50, d64, 2 layers) -> logits"


class RecurrentTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(40, 16)
        self.lstm = nn.LSTM(16, 12, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(24, 10)
        self.h0 = nn.Parameter(0.5 * torch.randn(1, 1, 10))
        self.rnn = nn.RNN(10, 8, nonlinearity="relu")
        self.head = nn.Linear(8, 5)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))             # [batch, seq, 24]
        h = h.transpose(0, 1)                            # [seq, batch, 24]
        h, _ = self.gru(h, self.h0.expand(1, h.shape[1], 10).contiguous())
        h, _ = self.rnn(h)
        return self.head(h).transpose(0, 1)              # [batch, seq, 5]


def build_recurrent_tagger(args):
    model = RecurrentTagger()
    tokens = torch.randint(0, 40, (3, 7), generator=torch.Generator().manual_seed(5))
    return (model, {"tokens": tokens}, ["tags"],
            "embedding + 2-layer bidirectional LSTM + GRU + ReLU RNN + linear, 3x7")


class PackedTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(40, 16)
        self.lstm = nn.LSTM(16, 12, batch_first=True, bidirectional=True)
        self.head = nn.Linear(24, 5)

    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths,
                                                   batch_first=True, enforce_sorted=True)
        h, _ = self.lstm(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True,
                                                total_length=tokens.shape[1])
        return self.head(h)


def build_packed_tagger(args):
    model = PackedTagger()
    tokens = torch.randint(0, 40, (3, 7), generator=torch.Generator().manual_seed(6))
    lengths = torch.tensor([7, 5, 2])
    return (model, {"tokens": tokens, "lengths": lengths}, ["tags"],
            "embedding + packed (lengths 7, 5, 2) bidirectional LSTM + linear, 3x7")


class UnsortedTagger(PackedTagger):
    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths,
                                                   batch_first=True, enforce_sorted=False)
        h, (last, _) = self.lstm(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True,
                                                total_length=tokens.shape[1])
        return self.head(h), last


def build_unsorted_tagger(args):
    model = UnsortedTagger()
    tokens = torch.randint(0, 40, (4, 7), generator=torch.Generator().manual_seed(7))
    lengths = torch.tensor([2, 7, 5, 3])
    return (model, {"tokens": tokens, "lengths": lengths}, ["tags", "last"],
            "embedding + packed (unsorted lengths 2, 7, 5, 3) bidirectional LSTM + linear, 4x7")


class InplaceIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, y, idx):
        x = self.proj(x)
        x[:, 0] = y
        x[1] = x[1] * 2
        return x, x[torch.arange(2), idx]


def build_inplace_index(args):
    g = torch.Generator().manual_seed(8)
    return (InplaceIndex(), {"x": torch.randn(2, 3, 4, generator=g),
                             "y": torch.randn(2, 4, generator=g),
                             "idx": torch.tensor([2, 0])}, ["x_out", "picked"],
            "in-place row assignments and advanced indexing, 2x3x4")


class AlexNetStyle(nn.Module):
    """Exports that need If and the ops built on weft.atan, pools and
    products: nn.LocalResponseNorm (an If on the input's rank),
    nn.LPPool2d, F.normalize, torch.prod, torch.atan / asin / acos."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(3, alpha=0.5, beta=0.75, k=2.0)
        self.lp = nn.LPPool2d(2, 2)
        self.conv2 = nn.Conv2d(8, 6, 3, padding=1)
        self.fc = nn.Linear(6 * 4 * 4, 5)

    def forward(self, x):
        h = self.lp(self.lrn(torch.relu(self.conv1(x))))
        h = torch.tanh(self.conv2(h))
        angles = torch.atan(h) + torch.asin(0.9 * h) - torch.acos(0.9 * h)
        feats = F.normalize(angles.flatten(1), dim=1)
        gate = torch.prod(torch.sigmoid(h), dim=1).mean(dim=(1, 2))
        return self.fc(feats) * gate.unsqueeze(1)


def build_alexnet_style(args):
    g = torch.Generator().manual_seed(9)
    return (AlexNetStyle(), {"x": torch.randn(2, 3, 8, 8, generator=g)}, ["y"],
            "LocalResponseNorm (If), LPPool2d, normalize, prod, atan/asin/acos; 2x3x8x8")


class FlowWarp(nn.Module):
    """Warps an image by a flow field a conv predicts from it (optical-flow
    and deformable-registration networks): the identity grid plus the flow
    into F.grid_sample (ONNX GridSample), bilinear with border padding, then
    a bicubic resample with reflection."""

    def __init__(self):
        super().__init__()
        self.flow = nn.Conv2d(3, 2, 3, padding=1)
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 8), torch.linspace(-1, 1, 8),
                                indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys], dim=-1).unsqueeze(0))

    def forward(self, x):
        grid = self.base + 0.3 * torch.tanh(self.flow(x)).permute(0, 2, 3, 1)
        warped = F.grid_sample(x, grid, mode="bilinear", padding_mode="border",
                               align_corners=True)
        return F.grid_sample(warped, grid * 1.2, mode="bicubic", padding_mode="reflection",
                             align_corners=False)


def build_flow_warp(args):
    g = torch.Generator().manual_seed(10)
    return (FlowWarp(), {"x": torch.randn(2, 3, 8, 8, generator=g)}, ["y"],
            "conv-predicted flow warping with GridSample (bilinear, bicubic); 2x3x8x8")


class ScriptedLoop(nn.Module):
    """A recurrence written as a Python loop that appends to a list, exported
    through torch.jit.script: ONNX Loop (trip count x.size(0)) carrying a
    sequence (SequenceEmpty, SequenceInsert), joined by ConcatFromSequence
    (torch.stack)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(6, 6)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        h = torch.zeros_like(x[0])
        outs: List[torch.Tensor] = []
        for t in range(x.size(0)):
            h = torch.tanh(self.cell(h) + x[t])
            outs.append(self.head(h))
        return torch.stack(outs)


def build_scripted_loop(args):
    g = torch.Generator().manual_seed(11)
    return (torch.jit.script(ScriptedLoop()), {"x": torch.randn(5, 2, 6, generator=g)},
            ["y"], "torch.jit.script loop appending to a list (Loop, sequences); 5x2x6")


class PoolIndices(nn.Module):
    """nn.MaxPool2d(return_indices=True), plain and padded: ONNX MaxPool's
    Indices output (which the export turns into PyTorch's per-plane
    indices with a second MaxPool, a Slice and a Sub)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.padded = nn.MaxPool2d(3, 2, padding=1, return_indices=True)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        p, i = self.pool(h)
        q, j = self.padded(h)
        return p + q, i.float(), j.float()


def build_pool_indices(args):
    g = torch.Generator().manual_seed(12)
    return (PoolIndices(), {"x": torch.randn(2, 3, 8, 8, generator=g)}, ["y", "i", "j"],
            "MaxPool2d(return_indices=True), plain and padded; 2x3x8x8")


BUILDERS = {name: globals()["build_" + name] for name in MODEL_NAMES}


def write_model_dir(name, model, inputs, output_names, note, d, opset=OPSET):
    """Exports MODEL (put in eval mode) on INPUTS (name -> tensor) to
    D/model.onnx and writes what check_model.py reads: inputs/ and PyTorch's
    outputs/ as .npy, meta.json. A dict result (torchvision's segmentation
    models) gives its 'out' entry. Returns meta."""
    model.eval()
    input_names = list(inputs.keys())
    example = tuple(inputs[n] for n in input_names)
    with torch.no_grad():
        ref = model(*example)
    if isinstance(ref, dict):
        ref = [ref["out"]] if "out" in ref else list(ref.values())
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)

    os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(d, "outputs"), exist_ok=True)
    onnx_path = os.path.join(d, "model.onnx")
    # Exported with grad enabled: under no_grad torch 1.13 takes the fused
    # TransformerEncoderLayer fast path, which has no ONNX export.
    for p in model.parameters():
        p.requires_grad_(True)
    with torch.enable_grad():
        torch.onnx.export(model, example, onnx_path, opset_version=opset,
                          do_constant_folding=True, input_names=input_names,
                          output_names=output_names[:len(refs)],
                          training=torch.onnx.TrainingMode.EVAL)
    meta = {"name": name, "note": note, "opset": opset, "inputs": [], "outputs": []}
    for n in input_names:
        a = inputs[n].detach().numpy()
        np.save(os.path.join(d, "inputs", n + ".npy"), a)
        meta["inputs"].append({"name": n, "shape": list(a.shape), "dtype": str(a.dtype)})
    for n, t in zip(output_names, refs):
        a = t.detach().numpy()
        np.save(os.path.join(d, "outputs", n + ".npy"), a)
        meta["outputs"].append({"name": n, "shape": list(a.shape), "dtype": str(a.dtype)})
    import onnx
    m = onnx.load(onnx_path, load_external_data=False)
    meta["ops"] = sorted({nd.op_type for nd in m.graph.node})
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def export_one(name, out_root, args):
    torch.manual_seed(0)
    np.random.seed(0)
    model, inputs, output_names, note = BUILDERS[name](args)
    d = os.path.join(out_root, name)
    return d, write_model_dir(name, model, inputs, output_names, note, d)


def main(argv=None):
    ap = argparse.ArgumentParser(description="export weft's e2e models + references")
    ap.add_argument("--out", required=False, help="output directory")
    ap.add_argument("--model", action="append", choices=MODEL_NAMES,
                    help="model to export (repeatable; default all)")
    ap.add_argument("--resnet-size", type=int, default=224,
                    help="spatial size of resnet18's input (default 224)")
    ap.add_argument("--list", action="store_true", help="print the model names")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(MODEL_NAMES))
        return 0
    if not args.out:
        ap.error("--out is required")
    warnings.filterwarnings("ignore")  # TracerWarnings from torchvision asserts
    torch.set_num_threads(max(1, int(os.environ.get("WEFT_NUM_THREADS", "2"))))
    for name in args.model or MODEL_NAMES:
        d, meta = export_one(name, args.out, args)
        print("exported %-22s -> %s  ops: %s" % (name, d, " ".join(meta["ops"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
