#!/usr/bin/python3
"""Sweeps torchvision's model zoo through weft: export, compile, run, compare.

    /usr/bin/python3 bench/run_zoo_sweep.py [--model NAME ...] [--work-dir DIR]
        [--tol T] [--timeout 900] [--out FILE.json]
        [--train [--steps 3] [--batch 4] [--optimizer sgd|adamw]]

Every model is built with random weights (eval-mode BatchNorm statistics
randomized, as test/e2e does), exported by torch.onnx.export at opset 17 on a
small input, compiled with `weftc compile` and run with `weft run`; each output
is compared with PyTorch's (relative L2 <= --tol). A model PyTorch cannot
export is reported as such, with PyTorch's message: weft never sees it. The
table (model, input, status, compile and run seconds, worst error, the first
line of any error) is printed and written as JSON. With --train each
model's training step is checked instead (train_one): its gradients against
float64 autograd, then a few steps of `weft train`. Detection models need
data-dependent shapes (NonZero, NonMaxSuppression), which weft's static
graphs cannot hold: `--model det:NAME` shows what weft says about them.

`--model qat:NAME` prepares one of torchvision's quantizable models for
quantization-aware training (Conv-BN(-ReLU) fused into QAT modules, fbgemm's
fake quantization). Its function is a staircase: wherever a convolution's
float sum lands within rounding of a quantization step, weft's summation
order and PyTorch's round it to different steps, a quantum apart, and every
layer after carries that on. Such models are not in the default list: their
comparison with PyTorch measures those flips (qat:resnet18's layers agree
bit for bit up to the first one), not weft's semantics, which the small
QAT models of test/train check exactly.
"""
import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "test", "tools"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import check_model  # noqa: E402
import weft_tools  # noqa: E402
from export_models import _randomize_batchnorm, write_model_dir  # noqa: E402

# name -> input shape (batch 1); the sizes are the smallest each model's
# strides, pools and fixed-size layers accept, or 224 where it needs that.
CLASSIFIERS = {
    "alexnet": 224, "vgg11_bn": 224, "resnet18": 64, "resnet50": 64,
    "resnext50_32x4d": 64, "wide_resnet50_2": 64, "squeezenet1_1": 64,
    "densenet121": 64, "googlenet": 64, "inception_v3": 96,
    "mobilenet_v2": 64, "mobilenet_v3_large": 64, "mnasnet0_5": 64,
    "shufflenet_v2_x0_5": 64, "efficientnet_b0": 64, "efficientnet_v2_s": 64,
    "regnet_x_400mf": 64, "regnet_y_400mf": 64, "convnext_tiny": 64,
    "vit_b_16": 224, "swin_t": 224, "swin_v2_t": 224, "maxvit_t": 224,
}
SEGMENTATION = ["fcn_resnet50", "deeplabv3_mobilenet_v3_large",
                "lraspp_mobilenet_v3_large"]
VIDEO = ["r3d_18", "mc3_18", "r2plus1d_18"]
DETECTION = ["fasterrcnn_mobilenet_v3_large_fpn", "retinanet_resnet50_fpn",
             "ssdlite320_mobilenet_v3_large", "fcos_resnet50_fpn"]
# torchvision's quantizable models, for --model qat:NAME.
QAT = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large",
       "googlenet", "shufflenet_v2_x0_5"]
DEFAULT = (list(CLASSIFIERS) + ["seg:" + n for n in SEGMENTATION] +
           ["video:" + n for n in VIDEO])


def build(name):
    """(model, example inputs, output names, input description)."""
    import torchvision.models as tvm
    kind, _, base = name.rpartition(":")
    if kind == "seg":
        model = tvm.segmentation.__dict__[base](
            weights=None, weights_backbone=None, num_classes=3, aux_loss=False)
        inputs = (torch.randn(1, 3, 64, 64),)
        outputs = ["out"]
    elif kind == "video":
        model = tvm.video.__dict__[base](weights=None)
        size = (16, 112) if base == "s3d" else (4, 32)
        inputs = (torch.randn(1, 3, size[0], size[1], size[1]),)
        outputs = ["logits"]
    elif kind == "qat":
        # Quantization-aware training as torchvision's quantizable models
        # do it: Conv-BN(-ReLU) fused into QAT modules, fbgemm's fake
        # quantization, the observers run once and then disabled.
        tq = torch.ao.quantization
        model = tvm.quantization.__dict__[base](weights=None, quantize=False,
                                                **({"aux_logits": False, "init_weights": False}
                                                   if base in ("googlenet", "inception_v3")
                                                   else {}))
        model.train()
        model.fuse_model(is_qat=True)
        model.qconfig = tq.get_default_qat_qconfig("fbgemm", version=0)
        tq.prepare_qat(model, inplace=True)
        size = CLASSIFIERS[base]
        inputs = (torch.randn(1, 3, size, size),)
        with torch.no_grad():
            model(torch.randn(4, 3, size, size))
        model.apply(tq.disable_observer)
        outputs = ["logits"]
    elif kind == "det":
        model = tvm.detection.__dict__[base](
            weights=None, weights_backbone=None, num_classes=3)
        inputs = ([torch.randn(3, 64, 64)],)
        outputs = ["boxes", "scores", "labels"]
    else:
        extra = {}
        if base in ("googlenet", "inception_v3"):
            extra = {"aux_logits": False, "init_weights": False}
        model = tvm.__dict__[base](weights=None, **extra)
        size = CLASSIFIERS[base]
        inputs = (torch.randn(1, 3, size, size),)
        outputs = ["logits"]
    _randomize_batchnorm(model, torch.Generator().manual_seed(1))
    # torchvision zero-initializes some heads (ViT's): all-zero logits would
    # compare equal whatever weft computed.
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and not p.any():
                p.normal_(0.0, 0.05)
    shape = "x".join(str(d) for d in (inputs[0][0].shape if kind == "det"
                                      else inputs[0].shape))
    return model, inputs, outputs, shape


def first_error(text):
    """The first line naming what failed (weftc's or PyTorch's message)."""
    for line in text.splitlines():
        if "FAIL" in line or "error" in line.lower():
            return line.strip()[:300]
    return text.strip().splitlines()[-1][:300] if text.strip() else ""


def sweep_one(name, work, tol, timeout):
    row = {"model": name}
    model_dir = os.path.join(work, name.replace(":", "_"))
    shutil.rmtree(model_dir, ignore_errors=True)
    torch.manual_seed(0)
    try:
        model, inputs, outputs, shape = build(name)
        row["input"] = shape
        row["parameters"] = sum(p.numel() for p in model.parameters())
        write_model_dir(name.replace(":", "_"), model,
                        {"input%d" % i: t for i, t in enumerate(inputs)},
                        outputs, "random weights, " + shape, model_dir, opset=17)
    except Exception as e:  # PyTorch's own limits: reported, not weft's
        row["status"] = "torch export fails"
        row["error"] = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        return row
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        ok = check_model.check(model_dir, tol, os.path.join(work, "runs"), timeout)
    text = log.getvalue()
    row["log"] = text
    times = dict(re.findall(r"(weftc compile|weft run) ([0-9.]+) s", text))
    row["compile_s"] = float(times["weftc compile"]) if "weftc compile" in times else None
    row["run_s"] = float(times["weft run"]) if "weft run" in times else None
    errors = [float(e) for e in re.findall(r"rel L2 error ([0-9.e+-]+)", text)]
    row["worst_rel_l2"] = max(errors) if errors else None
    if ok:
        row["status"] = "ok"
    else:
        row["status"] = ("weftc fails" if "weftc failed" in text else
                         "weft run fails" if "weft run failed" in text else
                         "mismatch")
        row["error"] = first_error(text)
    return row


class WithLoss(torch.nn.Module):
    """The model's cross-entropy loss against integer labels (per pixel for
    segmentation)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, labels):
        out = self.model(x)
        if isinstance(out, dict):
            out = out["out"]
        return torch.nn.functional.cross_entropy(out, labels)


def train_one(name, work, steps, batch, tol, optimizer):
    """NAME's training step against PyTorch's: the gradients of step 0's
    loss (`weftc compile --emit-gradients`, `weft run`) against float64
    autograd's, all parameters' as one vector, within max(TOL, 10 x PyTorch's
    float32 error); the worst single tensor is reported (parameters whose
    gradient is below 1e-6 of the largest one's are rounding noise on both
    sides, such as a BatchNorm bias the next BatchNorm cancels, and are only
    counted); then STEPS steps of `weft train` with OPTIMIZER (adamw, or sgd with lr
    0.01 and momentum 0.9) beside torch.optim's, on the same rows
    (check_training.py's rules), whose worst relative loss difference is
    reported but not judged: small batches through BatchNorm make the later
    steps amplify float rounding."""
    import copy
    sys.path.insert(0, os.path.join(HERE, "..", "test", "train"))
    from check_training import rows, train_weft
    row = {"model": name, "mode": "train"}
    model_dir = os.path.join(work, "train", name.replace(":", "_"))
    shutil.rmtree(model_dir, ignore_errors=True)
    os.makedirs(model_dir)
    torch.manual_seed(0)
    try:
        model, inputs, _, _ = build(name)
        x = inputs[0]
        n = 2 * batch
        data = {"x": torch.randn(n, *x.shape[1:]).numpy()}
        classes = {"seg": 3, "video": 400}.get(name.partition(":")[0], 1000)
        label_shape = (n, *x.shape[2:]) if name.startswith("seg:") else (n,)
        data["labels"] = np.random.default_rng(0).integers(
            0, classes, label_shape).astype(np.int64)
        # No dropout and no stochastic depth: their draws are not PyTorch's.
        for m in model.modules():
            if hasattr(m, "p") and isinstance(getattr(m, "p"), float):
                m.p = 0.0
        # torch.onnx.export merges equal initializers (LayerNorm's ones),
        # which would tie parameters PyTorch trains apart.
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.01)
        net = WithLoss(model).train()
        example = rows(data, 0, batch)
        path = os.path.join(model_dir, "model.onnx")
        # The export's trace runs a training forward, which moves the
        # running statistics it then stores: the references start from the
        # model as exported.
        with torch.enable_grad():
            torch.onnx.export(net, (example["x"], example["labels"]),
                              path, opset_version=17, input_names=["x", "labels"],
                              output_names=["loss"],
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False)
    except Exception as e:
        row["status"] = "torch export fails"
        row["error"] = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        return row
    row["input"] = "x".join(str(d) for d in (batch, *x.shape[1:]))
    row["parameters"] = sum(p.numel() for p in net.parameters())
    data_args, feeds = [], []
    for k, v in data.items():
        np.save(os.path.join(model_dir, k + ".npy"), v)
        np.save(os.path.join(model_dir, k + "-step0.npy"), example[k].numpy())
        data_args += ["--data", "%s=%s" % (k, os.path.join(model_dir, k + ".npy"))]
        feeds.append((k, os.path.join(model_dir, k + "-step0.npy")))

    # Step 0's gradients, in f32 and in f64.
    grad_net = copy.deepcopy(net)
    grad_net(example["x"], example["labels"]).backward()
    ref = {"grad:" + k: p.grad.numpy() for k, p in grad_net.named_parameters()}
    try:
        exact_net = copy.deepcopy(net).double()
        exact_net(example["x"].double(), example["labels"]).backward()
        exact = {"grad:" + k: p.grad.numpy() for k, p in exact_net.named_parameters()}
        row["gradient_reference"] = "float64"
    except RuntimeError:
        # PyTorch's fake quantization has no float64 kernels: float32
        # autograd is the reference, whose own error is then taken as 0.
        exact = ref
        row["gradient_reference"] = "float32"
    bundle = os.path.join(model_dir, "grad-bundle")
    start = time.monotonic()
    comp = weft_tools.compile_bundle(path, bundle, extra_args=["--emit-gradients"])
    row["compile_s"] = time.monotonic() - start
    if not comp.ok:
        row["status"] = "weftc fails"
        row["error"] = first_error(comp.message())
        return row
    out_dir = os.path.join(model_dir, "grads")
    run = weft_tools.run_bundle(bundle, feeds, out_dir)
    if not run.ok:
        row["status"] = "weft run fails"
        row["error"] = first_error(run.message())
        return row
    got, missing = weft_tools.read_outputs(out_dir, list(ref))
    largest = max(float(np.linalg.norm(g)) for g in exact.values())
    worst, worst_name, noise = 0.0, "", 0
    sq = {"weft": 0.0, "torch": 0.0, "norm": 0.0}
    per_tensor = []
    for k, g in exact.items():
        if k not in got:
            continue
        norm = float(np.linalg.norm(g))
        weft_err = float(np.linalg.norm(got[k].astype(np.float64) - g))
        torch_err = float(np.linalg.norm(ref[k].astype(np.float64) - g))
        sq["weft"] += weft_err ** 2
        sq["torch"] += torch_err ** 2
        sq["norm"] += norm ** 2
        if norm < 1e-6 * largest:
            noise += 1
            continue
        per_tensor.append((weft_err / norm, k[5:]))
        if weft_err / norm > worst:
            worst, worst_name = weft_err / norm, k[5:]
    # All gradients as one vector against float64 autograd: weft's error and
    # PyTorch's own float32 error.
    row["gradient_error"] = (sq["weft"] / sq["norm"]) ** 0.5
    row["torch_f32_gradient_error"] = (sq["torch"] / sq["norm"]) ** 0.5
    row["worst_rel_l2"] = worst
    row["worst_gradient"] = worst_name
    row["noise_only_gradients"] = noise
    row["worst_tensors"] = [[n, e] for e, n in sorted(per_tensor, reverse=True)[:8]]
    row["missing_gradients"] = missing

    # Training steps, reported.
    ref_net = copy.deepcopy(net)
    if optimizer == "adamw":
        opt, flags = torch.optim.AdamW(ref_net.parameters()), []
    else:
        opt = torch.optim.SGD(ref_net.parameters(), lr=0.01, momentum=0.9)
        flags = ["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"]
    losses = []
    for step in range(steps):
        opt.zero_grad()
        r = rows(data, step, batch)
        loss = ref_net(r["x"], r["labels"])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    train_bundle = os.path.join(model_dir, "bundle")
    comp = weft_tools.compile_bundle(path, train_bundle, extra_args=["--train", *flags])
    trained = None
    if comp.ok:
        start = time.monotonic()
        try:
            trained = train_weft(train_bundle, data_args, model_dir, steps)
            row["run_s"] = time.monotonic() - start
        except SystemExit as e:
            row["error"] = first_error(str(e))
    else:
        row["error"] = first_error(comp.message())
    if trained:
        row["losses"] = {"weft": trained, "torch": losses}
        row["loss_rel_diff"] = max(abs(a - b) / max(abs(b), 1e-12)
                                   for a, b in zip(trained, losses))
    # Kinks make single tensors a poor judge: a ReLU input or a max-pool
    # tie within rounding of its switch point (ceil-mode pools duplicate
    # edge values, which later convolutions may round apart) sends a few
    # elements' gradient elsewhere in either float32 run, and everything
    # upstream moves by that. So the judge is the whole gradient vector's
    # error against float64, next to PyTorch's own float32 error.
    limit = max(tol, 10 * row["torch_f32_gradient_error"])
    if missing or row["gradient_error"] > limit:
        row["status"] = "gradient mismatch"
        row.setdefault("error", "missing %s; all gradients %.2e from f64 (limit %.1e)" % (
            missing, row["gradient_error"], limit))
    elif trained is None or len(trained) != steps:
        row["status"] = "weft train fails"
    else:
        row["status"] = "ok"
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append",
                    help="NAME, seg:NAME, video:NAME, qat:NAME or det:NAME (repeatable; "
                         "default: every classifier, segmentation and video model)")
    ap.add_argument("--work-dir", default=os.path.join(HERE, "results", "tmp", "zoo"))
    ap.add_argument("--tol", type=float, default=None,
                    help="outputs' (gradients' with --train) relative L2 limit "
                         "(default 1e-4, 1e-3 with --train)")
    ap.add_argument("--train", action="store_true",
                    help="check each model's training step instead (cross-entropy on "
                         "random labels): gradients against autograd, then STEPS "
                         "steps beside torch.optim")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--optimizer", choices=("adamw", "sgd"), default="sgd")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", help="JSON results (default bench/results/"
                    "zoo-torchvision-cpu.json, zoo-torchvision-train-cpu.json with --train)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.tol is None:
        args.tol = 1e-3 if args.train else 1e-4
    if args.out is None:
        args.out = os.path.join(HERE, "results", "zoo-torchvision-%scpu.json" % (
            "train-" if args.train else ""))
    torch.set_num_threads(max(1, int(os.environ.get("WEFT_NUM_THREADS", "2"))))
    os.makedirs(args.work_dir, exist_ok=True)
    rows = []
    print("%-36s %-14s %-18s %9s %7s %10s" % ("model", "input", "status",
                                              "compile s", "run s",
                                              "grad err" if args.train else "rel L2"))
    for name in args.model or DEFAULT:
        if args.train:
            row = train_one(name, args.work_dir, args.steps, args.batch, args.tol,
                            args.optimizer)
        else:
            row = sweep_one(name, args.work_dir, args.tol, args.timeout)
        rows.append(row)
        fmt = lambda v, f: (f % v) if v is not None else "-"
        print("%-36s %-14s %-18s %9s %7s %10s" % (
            name, row.get("input", "-"), row["status"],
            fmt(row.get("compile_s"), "%.1f"), fmt(row.get("run_s"), "%.2f"),
            fmt(row.get("gradient_error" if args.train else "worst_rel_l2"),
                "%.1e")), flush=True)
        if row.get("mode") == "train" and row.get("worst_rel_l2") is not None:
            print("    all gradients vs %s: weft %.1e, torch f32 %.1e; worst %s; "
                  "%d noise-only; %d steps: losses within %s" % (
                      row["gradient_reference"], row["gradient_error"],
                      row["torch_f32_gradient_error"],
                      row["worst_gradient"], row["noise_only_gradients"], args.steps,
                      fmt(row.get("loss_rel_diff"), "%.1e")), flush=True)
        if row.get("error"):
            print("    " + row["error"], flush=True)
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print("zoo: " + ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())))
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "tol": args.tol,
                   "rows": [{k: v for k, v in r.items() if k != "log"} for r in rows]},
                  f, indent=1)
    return 0 if all(r["status"] in ("ok", "torch export fails") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
