#!/usr/bin/python3
"""torch.multinomial (ONNX Multinomial) through weft against the draws it
must make.

    check_multinomial.py WORKDIR

Exports torch.multinomial(softmax(logits), 4096, replacement=True) for 2
rows of 6 classes, compiles it with weftc, runs it with weft, and checks the
indices two ways: against the inverse transform of weft's own uniform draws
(weft_tools.weft_random: stream 0, step 0), where at least 99.9% must agree
(a draw within float32 rounding of a running sum may land on either side),
and against the probabilities: every class's count within 5 standard
deviations of 4096 p. Prints one line per check and exits 1 when one fails.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from weft_tools import compile_bundle, read_outputs, run_bundle, weft_random  # noqa: E402

SAMPLES = 4096


class Sampler(torch.nn.Module):
    def forward(self, logits):
        return torch.multinomial(torch.softmax(logits, -1), SAMPLES, replacement=True)


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0, 1.0, -3.0],
                           [0.0, 0.0, 0.0, 0.0, 0.0, 4.0]])
    onnx_path = os.path.join(work, "multinomial.onnx")
    torch.onnx.export(Sampler(), (logits,), onnx_path, opset_version=17,
                      input_names=["logits"], output_names=["indices"])
    np.save(os.path.join(work, "logits.npy"), logits.numpy())
    bundle = os.path.join(work, "bundle")
    out = os.path.join(work, "out")
    for step in (compile_bundle(onnx_path, bundle),
                 run_bundle(bundle, {"logits": os.path.join(work, "logits.npy")}, out)):
        if not step.ok:
            sys.exit(f"{step.command_line()} failed: {step.message()}")
    got = read_outputs(out, ["indices"])[0]["indices"]
    ok = True
    shape_ok = got.shape == (2, SAMPLES) and got.dtype == np.int64 and \
        got.min() >= 0 and got.max() <= 5
    print(f"indices: {got.dtype}{list(got.shape)}, in [{got.min()}, {got.max()}] "
          f"({'ok' if shape_ok else 'FAILED'})")
    ok = ok and shape_ok
    p = torch.softmax(logits.double(), -1).numpy()
    u = weft_random((2, SAMPLES), "uniform", 0.0, 1.0, 0, 0).reshape(2, SAMPLES)
    cdf = np.cumsum(p, axis=1)
    expected = np.minimum((cdf[:, None, :] < u[:, :, None]).sum(axis=2), 5)
    agree = float(np.mean(expected == got))
    print(f"inverse transform of weft's draws: {agree:.4%} agree "
          f"({'ok' if agree >= 0.999 else 'FAILED'}, need 99.9%)")
    ok = ok and agree >= 0.999
    for row in range(2):
        counts = np.bincount(got[row], minlength=6)
        sigma = np.sqrt(SAMPLES * p[row] * (1 - p[row]))
        z = np.abs(counts - SAMPLES * p[row]) / np.maximum(sigma, 1e-9)
        row_ok = bool(np.all(z <= 5))
        print(f"row {row}: counts {counts.tolist()}, expected "
              f"{np.round(SAMPLES * p[row]).astype(int).tolist()}, max |z| "
              f"{z.max():.2f} ({'ok' if row_ok else 'FAILED'})")
        ok = ok and row_ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
