"""The PyTorch models and data of test/train/check_training.py (also
check_plans.py's, check_export.py's and bench/run_training_bench.py's, through
check_training): small members of the families weft trains, each built by
make_data(NAME, rng) with N = 20 rows. WeftDropout and WeftNoise export as
ONNX Dropout and RandomNormalLike / RandomUniformLike and, in the reference
loop, draw weft's numbers."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from weft_tools import weft_dropout_mask, weft_random  # noqa: E402


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 4)

    def forward(self, x, y):
        return torch.mean(torch.square(self.l2(F.gelu(self.l1(x))) - y))


class CausalLm(torch.nn.Module):
    VOCAB, SEQ, DIM = 48, 12, 32

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


class Seq2Seq(torch.nn.Module):
    """An encoder-decoder transformer (nn.Transformer, one layer each) over
    sources and targets of different lengths: the decoder's cross-attention
    reads the encoder's output, so under sequence parallelism its queries
    are split by the targets' sequence and its keys by the sources'."""
    VOCAB, SRC, SEQ, DIM = 40, 12, 8, 32

    def __init__(self):
        super().__init__()
        self.src_embed = torch.nn.Embedding(self.VOCAB, self.DIM)
        self.tgt_embed = torch.nn.Embedding(self.VOCAB, self.DIM)
        self.pos = torch.nn.Parameter(torch.randn(1, self.SRC, self.DIM) * 0.1)
        self.core = torch.nn.Transformer(
            self.DIM, 4, num_encoder_layers=1, num_decoder_layers=1,
            dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(self.DIM, self.VOCAB)

    def forward(self, src, tokens, targets):
        mask = torch.triu(torch.full((self.SEQ, self.SEQ), float("-inf")), 1)
        h = self.core(self.src_embed(src) + self.pos,
                      self.tgt_embed(tokens) + self.pos[:, :self.SEQ],
                      tgt_mask=mask)
        logits = self.head(h)
        return F.cross_entropy(logits.reshape(-1, self.VOCAB), targets.reshape(-1))


class TiedLm(CausalLm):
    """CausalLm whose output layer reads the embedding's weights (GPT-2's
    tied embeddings): one initializer that the first and the last layer
    read, and whose gradient sums both."""

    def __init__(self):
        super().__init__()
        # GPT-2's small initialization (N(0, 0.02) there): with
        # nn.Embedding's N(0, 1) each token's logit of itself would be about
        # DIM, the softmax saturated (loss ~35), and the gradients of the
        # saturated classes rounding noise that AdamW's first steps turn
        # into +-lr-sized moves.
        torch.nn.init.normal_(self.embed.weight, std=0.1)
        self.head.weight = self.embed.weight


class DropoutLm(CausalLm):
    """CausalLm with PyTorch's dropout 0.1 in its encoder layer: on the
    attention weights (inside multi-head attention), after attention and in
    the feed-forward block. Its masks are PyTorch's own in a torch loop, so
    only check_plans.py uses it (every plan against weft's single device)."""

    def __init__(self):
        super().__init__()
        self.block = torch.nn.TransformerEncoderLayer(
            self.DIM, 4, 64, dropout=0.1, batch_first=True, norm_first=True,
            activation="gelu")


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


class BnCnn(torch.nn.Module):
    """A ResNet-style block trained with batch statistics (exported in
    training mode: BatchNormalization with training_mode = 1): BatchNorm2d
    after each convolution, a residual add, BatchNorm1d before the head.
    Its running statistics must follow PyTorch's too. The layers before the
    norms have no bias, as usual: a bias there has a zero gradient (the
    norm removes it), whose rounding noise AdamW would turn into +-lr steps
    that the running means would record."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn0 = torch.nn.BatchNorm2d(8)
        self.c1 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8, momentum=0.3)
        self.fc1 = torch.nn.Linear(8, 16, bias=False)
        self.bn2 = torch.nn.BatchNorm1d(16, eps=1e-3)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x, labels):
        h = F.relu(self.bn0(self.stem(x)))
        h = F.relu(h + self.bn1(self.c1(h)))
        h = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        return F.cross_entropy(self.fc(F.relu(self.bn2(self.fc1(h)))), labels)


class QatCnn(torch.nn.Module):
    """Quantization-aware training as torch.ao.quantization prepares it
    (prepare_qat with fbgemm's FakeQuantize qconfig): per-channel int8
    weights and reduce-range uint8 activations, exported as QuantizeLinear,
    a Clip to 127 for the activations, DequantizeLinear. The observers see
    the data once and are then disabled, so the scales stay fixed, as the
    export has them; the weights' perturbation (export_model) pushes some
    past their channel's range, so the saturated gradients are tested too.
    PyTorch's fake-quantize passes the gradient straight through where the
    rounded value is in range: weft must train the same. The second
    convolution, its BatchNorm and ReLU are fused into one QAT module
    (fuse_modules_qat), which scales the weights by gamma / sqrt(running_var
    + eps) before quantizing them: the loss reads the running variance the
    BatchNorm updates, which must stay a buffer (never trained)."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.relu2 = torch.nn.ReLU()
        self.fc = torch.nn.Linear(8 * 3 * 3, 5)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x, labels):
        h = self.relu(self.conv(self.quant(x)))
        h = F.max_pool2d(self.relu2(self.bn2(self.conv2(h))), 2)
        logits = self.dequant(self.fc(torch.flatten(h, 1)))
        return F.cross_entropy(logits, labels)


def prepared_qat(model, calibration, fuse=()):
    """MODEL prepared for QAT (the module name lists in FUSE fused first),
    its observers run on CALIBRATION's rows and then disabled."""
    tq = torch.ao.quantization
    model.qconfig = tq.get_default_qat_qconfig("fbgemm", version=0)
    model.train()
    if fuse:
        tq.fuse_modules_qat(model, list(fuse), inplace=True)
    tq.prepare_qat(model, inplace=True)
    with torch.no_grad():
        model(*calibration)
    model.apply(tq.disable_observer)
    return model


class DropoutMlp(torch.nn.Module):
    """An MLP with two training-mode dropouts (ONNX Dropout, exported in
    training mode). The reference loop applies weft's masks (WeftDropout),
    so the trajectories must agree as closely as without dropout."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self.l1 = torch.nn.Linear(16, 32)
        self.d1 = WeftDropout(0.25, self.calls)
        self.l2 = torch.nn.Linear(32, 32)
        self.d2 = WeftDropout(0.1, self.calls)
        self.l3 = torch.nn.Linear(32, 4)

    def forward(self, x, y):
        self.calls.clear()
        h = self.d1(F.gelu(self.l1(x)))
        h = self.d2(F.relu(self.l2(h)))
        return torch.mean(torch.square(self.l3(h) - y))


class Vae(torch.nn.Module):
    """A variational autoencoder: the reparameterization mu + sigma * eps
    draws eps with torch.randn_like (ONNX RandomNormalLike, weft.random) and
    the encoder's input is corrupted by torch.rand_like noise
    (RandomUniformLike); the reference loop draws weft's numbers
    (WeftNoise), so the trajectories must agree as closely as without
    noise. Loss: reconstruction MSE plus the KL term."""
    IN, HIDDEN, LATENT = 16, 32, 6

    def __init__(self):
        super().__init__()
        self.calls = []
        self.jitter = WeftNoise("uniform", -0.05, 0.05, self.calls)
        self.eps = WeftNoise("normal", 0.0, 1.0, self.calls)
        self.enc = torch.nn.Linear(self.IN, self.HIDDEN)
        self.mu = torch.nn.Linear(self.HIDDEN, self.LATENT)
        self.logvar = torch.nn.Linear(self.HIDDEN, self.LATENT)
        self.dec1 = torch.nn.Linear(self.LATENT, self.HIDDEN)
        self.dec2 = torch.nn.Linear(self.HIDDEN, self.IN)

    def forward(self, x):
        self.calls.clear()
        h = torch.tanh(self.enc(x + self.jitter(x)))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.exp(0.5 * logvar) * self.eps(mu)
        recon = self.dec2(F.relu(self.dec1(z)))
        kl = -0.5 * torch.mean(1 + logvar - mu * mu - torch.exp(logvar))
        return torch.mean(torch.square(recon - x)) + 0.1 * kl


class TinyLlama(torch.nn.Module):
    """A LLaMA-style LM: RMSNorm (rsqrt: Sqrt + Reciprocal), rotary position
    tables (Range, Einsum, Sin, Cos: folded at import), a SiLU-gated MLP,
    no biases."""
    VOCAB, SEQ, DIM, HEADS = 40, 8, 32, 4

    class RmsNorm(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    def __init__(self):
        super().__init__()
        d, f = self.DIM, 2 * self.DIM
        self.embed = torch.nn.Embedding(self.VOCAB, d)
        self.norm1, self.norm2, self.norm3 = (self.RmsNorm(d) for _ in range(3))
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.out = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, f, bias=False)
        self.up = torch.nn.Linear(d, f, bias=False)
        self.down = torch.nn.Linear(f, d, bias=False)
        self.head = torch.nn.Linear(d, self.VOCAB, bias=False)

    def rope(self, x):
        hd = x.shape[-1]
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        angles = torch.einsum("i,j->ij", torch.arange(self.SEQ, dtype=torch.float32), inv)
        angles = torch.cat((angles, angles), -1)
        half = hd // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), -1)
        return x * angles.cos() + rotated * angles.sin()

    def forward(self, tokens, targets):
        b, s, d, h = tokens.shape[0], self.SEQ, self.DIM, self.HEADS
        x = self.embed(tokens)
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k = self.rope(q), self.rope(k)
        mask = torch.triu(torch.full((s, s), float("-inf")), 1)
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // h) ** 0.5 + mask, -1) @ v
        x = x + self.out(att.transpose(1, 2).reshape(b, s, d))
        y = self.norm2(x)
        x = x + self.down(F.silu(self.gate(y)) * self.up(y))
        logits = self.head(self.norm3(x))
        return F.cross_entropy(logits.reshape(-1, self.VOCAB), targets.reshape(-1))


class MobileCnn(torch.nn.Module):
    """The activations and padding of mobile CNNs: ReLU6 (Clip), a depthwise
    convolution, reflect padding (Pad), HardSwish, a squeeze-excite gate
    (HardSigmoid), LeakyReLU, ELU and Softplus."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, groups=8)
        self.pointwise = torch.nn.Conv2d(8, 12, 1)
        self.se_down = torch.nn.Linear(12, 4)
        self.se_up = torch.nn.Linear(4, 12)
        self.fc1 = torch.nn.Linear(12, 16)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x, labels):
        h = F.relu6(self.stem(x) * 3)
        h = self.depthwise(F.pad(h, (1, 1, 1, 1), mode="reflect"))
        h = F.hardswish(self.pointwise(h))
        pooled = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        gate = F.hardsigmoid(self.se_up(F.leaky_relu(self.se_down(pooled), 0.1)))
        h = h * gate[:, :, None, None]
        h = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        return F.cross_entropy(self.fc(F.softplus(F.elu(self.fc1(h)))), labels)


class TinyVit(torch.nn.Module):
    """torchvision's VisionTransformer, small: patches from a strided
    convolution, a learned class token broadcast over the batch and joined
    to the patches (Expand, Concat), learned positions, two encoder layers,
    the class token's row into the head."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.vit = torchvision.models.VisionTransformer(
            image_size=16, patch_size=4, num_layers=2, num_heads=4,
            hidden_dim=32, mlp_dim=64, num_classes=5)

    def forward(self, x, labels):
        return F.cross_entropy(self.vit(x), labels)


class TinyUnet(torch.nn.Module):
    """A U-Net: GroupNorm (exported as InstanceNormalization), a strided
    ConvTranspose and a bilinear upsampling (Resize) back up, a skip
    connection, MSE against a target."""

    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Conv2d(2, 6, 3, padding=1)
        self.norm = torch.nn.GroupNorm(3, 6)
        self.down = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.mid = torch.nn.Conv2d(12, 4, 3, padding=1)
        self.out = torch.nn.Conv2d(4, 2, 1)

    def forward(self, x, target):
        skip = F.silu(self.norm(self.enc(x)))
        h = F.silu(self.down(skip))
        h = torch.cat([F.silu(self.up(h)), skip], 1)
        h = F.max_pool2d(F.silu(self.mid(h)), 2)
        h = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        h = h + F.interpolate(h, scale_factor=1, mode="nearest")
        return torch.mean(torch.square(self.out(h) - target))


class RnnLm(torch.nn.Module):
    """A recurrent LM: a bidirectional nn.LSTM (batch_first), an nn.GRU on
    it (exported as ONNX LSTM and GRU, unrolled at import), cross-entropy
    of the next token."""
    VOCAB, SEQ, DIM, HIDDEN = 30, 6, 16, 12

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(self.VOCAB, self.DIM)
        self.lstm = torch.nn.LSTM(self.DIM, self.HIDDEN, batch_first=True,
                                  bidirectional=True)
        self.gru = torch.nn.GRU(2 * self.HIDDEN, self.HIDDEN, batch_first=True)
        self.head = torch.nn.Linear(self.HIDDEN, self.VOCAB)

    def forward(self, tokens, targets):
        h, _ = self.lstm(self.embed(tokens))
        h, _ = self.gru(h)
        logits = self.head(h)
        return F.cross_entropy(logits.reshape(-1, self.VOCAB), targets.reshape(-1))


class PackedLm(RnnLm):
    """RnnLm over packed sequences: each row's length is an input, and the
    LSTM runs pack_padded_sequence (exported as ONNX LSTM's sequence_lens;
    sorted by length only while exporting, which PyTorch requires there)."""

    def enforce_sorted(self):
        return torch.onnx.is_in_onnx_export()

    def forward(self, tokens, lengths, targets):
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            self.embed(tokens), lengths, batch_first=True,
            enforce_sorted=self.enforce_sorted())
        h, _ = self.lstm(packed)
        h, _ = torch.nn.utils.rnn.pad_packed_sequence(
            h, batch_first=True, total_length=self.SEQ)
        h, _ = self.gru(h)
        logits = self.head(h)
        return F.cross_entropy(logits.reshape(-1, self.VOCAB), targets.reshape(-1))


class UnsortedLm(PackedLm):
    """PackedLm with pack_padded_sequence(enforce_sorted=False) in the
    export too: the ONNX graph sorts the rows by length (TopK, Gather) and
    puts them back (ScatterElements' inverse permutation, Gather), so the
    gradients flow through both gathers."""

    def enforce_sorted(self):
        return False


def next_token_data(rng, n, vocab, seq):
    """n rows of random tokens and, as targets, each row's next tokens."""
    toks = rng.integers(0, vocab, (n, seq + 1))
    return {"tokens": toks[:, :-1].astype(np.int64),
            "targets": toks[:, 1:].astype(np.int64)}


# Language models trained on next_token_data alone.
NEXT_TOKEN_MODELS = {"dropout_lm": DropoutLm, "causal_lm": CausalLm,
                     "tied_lm": TiedLm, "llama": TinyLlama, "rnn_lm": RnnLm}


def make_data(name, rng):
    """Inputs of N=20 rows (so steps wrap around) with a batch of 8."""
    n = 20
    if name == "mlp":
        return Mlp(), {"x": rng.standard_normal((n, 16)).astype(np.float32),
                       "y": rng.standard_normal((n, 4)).astype(np.float32)}
    if name in NEXT_TOKEN_MODELS:
        model = NEXT_TOKEN_MODELS[name]
        return model(), next_token_data(rng, n, model.VOCAB, model.SEQ)
    if name == "seq2seq":
        # The ONNX inputs in this order: src, tokens, targets.
        data = next_token_data(rng, n, Seq2Seq.VOCAB, Seq2Seq.SEQ)
        return Seq2Seq(), {"src": rng.integers(0, Seq2Seq.VOCAB, (n, Seq2Seq.SRC)),
                           "tokens": data["tokens"], "targets": data["targets"]}
    if name in ("unsorted_lm", "packed_lm"):
        data = next_token_data(rng, n, RnnLm.VOCAB, RnnLm.SEQ)
        if name == "unsorted_lm":
            lengths = rng.integers(1, RnnLm.SEQ + 1, n)
        else:
            # Rows 0-7 (step 0's batch, which the export traces) by
            # decreasing length; the others in any order.
            lengths = np.concatenate([[6, 6, 5, 4, 4, 3, 2, 1],
                                      rng.integers(1, 7, n - 8)])
        model = UnsortedLm() if name == "unsorted_lm" else PackedLm()
        # The ONNX inputs in this order: tokens, lengths, targets.
        return model, {"tokens": data["tokens"],
                       "lengths": lengths.astype(np.int64),
                       "targets": data["targets"]}
    if name == "mobile_cnn":
        return MobileCnn(), {"x": rng.standard_normal((n, 3, 10, 10)).astype(np.float32),
                             "labels": rng.integers(0, 5, n).astype(np.int64)}
    if name == "vit":
        return TinyVit(), {"x": rng.standard_normal((n, 3, 16, 16)).astype(np.float32),
                           "labels": rng.integers(0, 5, n).astype(np.int64)}
    if name == "unet":
        return TinyUnet(), {"x": rng.standard_normal((n, 2, 8, 8)).astype(np.float32),
                            "target": rng.standard_normal((n, 2, 8, 8)).astype(np.float32)}
    if name == "dropout_mlp":
        return DropoutMlp(), {"x": rng.standard_normal((n, 16)).astype(np.float32),
                              "y": rng.standard_normal((n, 4)).astype(np.float32)}
    if name == "vae":
        return Vae(), {"x": rng.standard_normal((n, Vae.IN)).astype(np.float32)}
    if name == "bn_cnn":
        return BnCnn(), {"x": rng.standard_normal((n, 3, 6, 6)).astype(np.float32),
                         "labels": rng.integers(0, 5, n).astype(np.int64)}
    if name == "qat_cnn":
        data = {"x": rng.standard_normal((n, 3, 6, 6)).astype(np.float32),
                "labels": rng.integers(0, 5, n).astype(np.int64)}
        calibration = (torch.from_numpy(data["x"]), torch.from_numpy(data["labels"]))
        return prepared_qat(QatCnn(), calibration,
                            fuse=[["conv2", "bn2", "relu2"]]), data
    if name == "cnn":
        return Cnn(), {"x": rng.standard_normal((n, 3, 12, 12)).astype(np.float32),
                       "labels": rng.integers(0, 5, n).astype(np.int64)}
    raise SystemExit(f"unknown model {name}")


class WeftDropout(torch.nn.Module):
    """nn.Dropout that exports as ONNX Dropout; in the reference loop it
    applies weft's masks instead of PyTorch's (set `step` and count the
    model's dropouts with a shared `calls` list, reset per forward)."""

    def __init__(self, p, calls):
        super().__init__()
        self.p, self.calls, self.step = p, calls, None

    def forward(self, x):
        if torch.onnx.is_in_onnx_export() or self.step is None:
            return F.dropout(x, self.p, self.training)
        stream = len(self.calls)
        self.calls.append(self)
        mask = torch.from_numpy(weft_dropout_mask(tuple(x.shape), self.p,
                                                  self.step, stream))
        return x * mask / (1 - self.p)


class WeftNoise(torch.nn.Module):
    """torch.randn_like / torch.rand_like (scaled to [low, high) or to mean
    and deviation) that export as ONNX RandomNormalLike /
    RandomUniformLike; in the reference loop it draws weft.random's numbers
    (set `step`; the stream is the module's place among the model's draws,
    counted in `calls` with its dropouts)."""

    def __init__(self, distribution, a, b, calls):
        super().__init__()
        self.distribution, self.a, self.b = distribution, a, b
        self.calls, self.step = calls, None

    def forward(self, like):
        if torch.onnx.is_in_onnx_export() or self.step is None:
            if self.distribution == "normal":
                return self.a + self.b * torch.randn_like(like)
            return self.a + (self.b - self.a) * torch.rand_like(like)
        stream = len(self.calls)
        self.calls.append(self)
        # weft draws the standard numbers scaled by the exported Mul/Add, so
        # the reference scales the same standard draws.
        standard = weft_random(tuple(like.shape), self.distribution, 0.0, 1.0,
                               self.step, stream).astype(np.float32)
        standard = torch.from_numpy(standard)
        if self.distribution == "normal":
            return self.a + self.b * standard
        return self.a + (self.b - self.a) * standard
