"""PyTorch references for `weftc compile --dtype bf16`.

`weft_bf16_products()` makes torch compute what weft's mixed precision
computes (passes/MixedPrecision.cpp): every matrix product and convolution,
forward and backward, takes its operands rounded to bf16, accumulates in f32
and rounds its result to bf16 once; a conv's bias is added after, in f32;
everything else stays f32, parameters and optimizer state included. It
patches F.linear, F.conv2d, torch.bmm and torch.baddbmm, which nn.Linear,
nn.Conv2d and nn.MultiheadAttention call.

torch.autocast("cpu", dtype=torch.bfloat16) is the other reference: the same
products in bf16, but their results stay bf16 for the elementwise ops after
them, so it agrees with weft only to bf16's precision.
"""
import contextlib

import torch
import torch.nn.functional as F


def bf16(t):
    """t rounded to bf16 (nearest even) and widened back to f32."""
    return t.to(torch.bfloat16).to(torch.float32)


class _Product(torch.autograd.Function):
    """a @ b with bf16 operands and result, f32 accumulation, both ways."""

    @staticmethod
    def forward(ctx, a, b):
        a16, b16 = bf16(a), bf16(b)
        ctx.save_for_backward(a16, b16)
        return bf16(a16 @ b16)

    @staticmethod
    def backward(ctx, g):
        a16, b16 = ctx.saved_tensors
        g16 = bf16(g)
        return (bf16(g16 @ b16.transpose(-1, -2)),
                bf16(a16.transpose(-1, -2) @ g16))


class _Conv2d(torch.autograd.Function):
    """conv2d without bias, with bf16 operands and result, both ways."""

    @staticmethod
    def forward(ctx, x, w, stride, padding, dilation, groups, conv):
        x16, w16 = bf16(x), bf16(w)
        ctx.save_for_backward(x16, w16)
        ctx.geometry = (stride, padding, dilation, groups)
        return bf16(conv(x16, w16, None, stride, padding, dilation, groups))

    @staticmethod
    def backward(ctx, g):
        x16, w16 = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.geometry
        g16 = bf16(g)
        dx = torch.nn.grad.conv2d_input(x16.shape, w16, g16, stride, padding,
                                        dilation, groups)
        dw = torch.nn.grad.conv2d_weight(x16, w16.shape, g16, stride, padding,
                                         dilation, groups)
        return bf16(dx), bf16(dw), None, None, None, None, None


@contextlib.contextmanager
def weft_bf16_products():
    originals = (F.linear, F.conv2d, torch.bmm, torch.baddbmm)
    conv = F.conv2d

    def linear(x, w, b=None):
        # weft folds a weight's batch into the product: one [rows, K] x [K, N].
        y = _Product.apply(x.reshape(-1, x.shape[-1]), w.t())
        y = y.reshape(*x.shape[:-1], w.shape[0])
        return y if b is None else y + b

    def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        y = _Conv2d.apply(x, w, stride, padding, dilation, groups, conv)
        return y if b is None else y + b.reshape(1, -1, 1, 1)

    def baddbmm(c, a, b, beta=1, alpha=1):
        assert beta == 1 and alpha == 1
        return c + _Product.apply(a, b)

    F.linear, F.conv2d = linear, conv2d
    torch.bmm, torch.baddbmm = _Product.apply, baddbmm
    try:
        yield
    finally:
        F.linear, F.conv2d, torch.bmm, torch.baddbmm = originals


def autocast_bf16():
    return torch.autocast("cpu", dtype=torch.bfloat16)
