"""Exports small PyTorch models to ONNX for the frontend's lit tests (Debian's
python3-torch 1.13 under /usr/bin/python3).

    torch_models.py OUTDIR mlp|cnn|transformer...

writes OUTDIR/NAME.onnx, exported with opset 17 the way users do it, and
OUTDIR/NAME_dynamic.onnx with a symbolic batch dim (and sequence dim for the
transformer), which keeps torch's Shape/Gather/Concat/Reshape chains in the
graph instead of folding them.
"""
import os
import sys

import torch

torch.manual_seed(0)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 32)
        self.fc2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        # x.flatten(1) and x.view(x.size(0), -1) give Flatten and a
        # Shape/Gather/Unsqueeze/Concat/Reshape chain.
        h = torch.relu(self.fc1(x.view(x.size(0), -1)))
        return torch.log_softmax(self.fc2(h), dim=-1)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = self.pool(torch.relu(self.bn(self.conv(x))))
        h = torch.nn.functional.adaptive_avg_pool2d(h, 1).flatten(1)
        return self.fc(h)


def transformer():
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                             dropout=0.1, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2)


MODELS = {
    "mlp": (Mlp, (2, 3, 4), {0: "batch"}),
    "cnn": (Cnn, (2, 3, 8, 8), {0: "batch"}),
    "transformer": (transformer, (2, 5, 16), {0: "batch", 1: "seq"}),
}


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in sys.argv[2:]:
        make, shape, dynamic = MODELS[name]
        module = make().eval()
        x = torch.randn(*shape)
        torch.onnx.export(module, (x,), os.path.join(outdir, name + ".onnx"),
                          opset_version=17, input_names=["x"], output_names=["y"])
        torch.onnx.export(module, (x,), os.path.join(outdir, name + "_dynamic.onnx"),
                          opset_version=17, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": dynamic})


if __name__ == "__main__":
    main()
