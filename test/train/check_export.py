"""weft export: trained weights back into the source ONNX model.

  check_export.py train WORK [--external]
      Exports check_training.py's MLP (plus an unused FLOAT and an unused
      INT64 initializer, and l1.bias stored in float_data rather than
      raw_data; with --external every initializer in data/mlp.bin), compiles
      it with `weftc compile --train`, checks the bundle's copy of the source,
      trains 5 steps with a checkpoint directory and runs `weft export` (from
      the directory and from its step-* directory). Then checks that
        - every trained initializer equals the checkpoint's tensor of the same
          name (state.safetensors, parsed with NumPy) bit for bit, and differs
          from the initial value;
        - every other initializer is unchanged;
        - onnx.checker.check_model passes;
        - the exported model's loss on a batch, compiled with `weftc compile`
          and run with `weft run`, equals PyTorch's loss with the exported
          weights loaded by name (and onnxruntime-node's, when
          bench/node_modules/onnxruntime-node is installed).
      Leaves WORK/bundle, WORK/ck and WORK/trained.onnx for the error cases.
  check_export.py other WORK
      Another model's bundle (the MLP compiled with SGD) and a checkpoint of it.
  check_export.py flip FILE | truncate FILE
      Corrupts a checkpoint file (one byte of tensor data flipped / the last
      16 bytes dropped).
  check_export.py mismatch BUNDLE OUT
      Copies BUNDLE to OUT with l2.bias of source.onnx reshaped to [2, 2].
  check_export.py old BUNDLE OUT
      Copies BUNDLE to OUT as an older weftc wrote it (no source.onnx).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_training import Mlp, rows  # noqa: E402

SRC_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PARAMS = ["l1.weight", "l1.bias", "l2.weight", "l2.bias"]
STEPS = 5
BATCH = 8
TOLERANCE = 1e-5

SAFETENSORS_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8",
                      "I32": "<i4", "I8": "i1", "U8": "u1", "BOOL": "?"}


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def fail(message):
    raise SystemExit(f"FAILED: {message}")


def read_safetensors(path):
    """name -> (dtype string, shape, raw bytes)."""
    blob = open(path, "rb").read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], blob[8 + n + begin:8 + n + end])
    return out


def make_source(work, external):
    torch.manual_seed(0)
    model = Mlp()
    rng = np.random.default_rng(0)
    data = {"x": rng.standard_normal((20, 16)).astype(np.float32),
            "y": rng.standard_normal((20, 4)).astype(np.float32)}
    example = rows(data, 0, BATCH)
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    path = os.path.join(src, "mlp.onnx")
    torch.onnx.export(model, (example["x"], example["y"]), path,
                      opset_version=17, input_names=["x", "y"],
                      output_names=["loss"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    m = onnx.load(path)
    # Initializers that are not trained: the export keeps them as they are.
    m.graph.initializer.append(numpy_helper.from_array(
        np.arange(6, dtype=np.float32).reshape(2, 3), "unused.buffer"))
    m.graph.initializer.append(numpy_helper.from_array(
        np.array([3, -1], dtype=np.int64), "unused.shape"))
    # One parameter in the typed field: the export writes raw_data.
    for init in m.graph.initializer:
        if init.name == "l1.bias":
            values = numpy_helper.to_array(init)
            init.ClearField("raw_data")
            init.float_data.extend(values.tolist())
    if external:
        os.makedirs(os.path.join(src, "data"), exist_ok=True)
        onnx.save_model(m, path, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location="data/mlp.bin", size_threshold=0)
    else:
        onnx.save_model(m, path)
    data_args = []
    for k, v in data.items():
        f = os.path.join(work, f"{k}.npy")
        np.save(f, v)
        data_args += ["--data", f"{k}={f}"]
    return path, data, data_args


def initializers(path):
    m = onnx.load(path)  # loads external data too
    return m, {t.name: t for t in m.graph.initializer}


def check_bundle_source(src_path, bundle, external):
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    if manifest.get("source_model_file") != "source.onnx":
        fail(f"manifest.json: source_model_file is "
             f"{manifest.get('source_model_file')!r}")
    same = (open(src_path, "rb").read() ==
            open(os.path.join(bundle, "source.onnx"), "rb").read())
    print(f"bundle: source.onnx is a byte copy: {same}")
    if not same:
        fail("source.onnx differs from the model")
    if external:
        src_data = os.path.join(os.path.dirname(src_path), "data", "mlp.bin")
        copy = os.path.join(bundle, "data", "mlp.bin")
        same = os.path.exists(copy) and open(src_data, "rb").read() == open(copy, "rb").read()
        print(f"bundle: data/mlp.bin is a byte copy: {same}")
        if not same:
            fail("the external data file was not copied into the bundle")


def weft_loss(work, onnx_path, batch):
    bundle = os.path.join(work, "infer")
    run(["weftc", "compile", onnx_path, "-o", bundle])
    args = []
    for k, v in batch.items():
        f = os.path.join(work, f"batch_{k}.npy")
        np.save(f, v.numpy())
        args += ["--input", f"{k}={f}"]
    out = os.path.join(work, "infer-out")
    run(["weft", "run", bundle, *args, "--output-dir", out])
    return float(np.load(os.path.join(out, "loss.npy"))), args


def ort_loss(work, onnx_path, input_args):
    ort = os.path.join(SRC_ROOT, "bench", "node_modules", "onnxruntime-node")
    if not os.path.isdir(ort) or shutil.which("node") is None:
        print("onnxruntime-node: skipped (bench/node_modules/onnxruntime-node "
              "or node is not installed)")
        return None
    out = os.path.join(work, "ort-out")
    run(["node", os.path.join(SRC_ROOT, "bench", "ort_bench.js"), "--model",
         onnx_path, *input_args, "--repeat", "1", "--warmup", "0",
         "--output-dir", out])
    return float(np.load(os.path.join(out, "loss.npy")))


def train(work, external):
    os.makedirs(work, exist_ok=True)
    src_path, data, data_args = make_source(work, external)
    bundle = os.path.join(work, "bundle")
    run(["weftc", "compile", src_path, "-o", bundle, "--train"])
    check_bundle_source(src_path, bundle, external)
    ckpt = os.path.join(work, "ck")
    shutil.rmtree(ckpt, ignore_errors=True)
    run(["weft", "train", bundle, *data_args, "--steps", str(STEPS),
         "--checkpoint-dir", ckpt])
    out = os.path.join(work, "trained.onnx")
    print(run(["weft", "export", bundle, "--checkpoint", ckpt, "-o", out]),
          end="")
    step_dir = os.path.join(ckpt, f"step-{STEPS:08d}")
    out2 = os.path.join(work, "trained-step.onnx")
    run(["weft", "export", bundle, "--checkpoint", step_dir + "/", "-o", out2])

    state = read_safetensors(os.path.join(step_dir, "state.safetensors"))
    _, source = initializers(src_path)
    model, exported = initializers(out)
    _, exported2 = initializers(out2)
    if list(exported) != list(source):
        fail(f"initializers {list(exported)} != source's {list(source)}")
    for name, tensor in exported.items():
        array = numpy_helper.to_array(tensor)
        before = numpy_helper.to_array(source[name])
        if array.tobytes() != numpy_helper.to_array(exported2[name]).tobytes():
            fail(f"'{name}': exports from ck and ck/step-* differ")
        if name in PARAMS:
            dtype, shape, raw = state[name]
            ok = (list(array.shape) == shape and
                  array.dtype == np.dtype(SAFETENSORS_DTYPES[dtype]) and
                  array.tobytes() == raw)
            if not external and (not tensor.HasField("raw_data") or
                                 len(tensor.float_data) or
                                 len(tensor.external_data)):
                fail(f"'{name}': not stored as raw_data")
            changed = array.tobytes() != before.tobytes()
            print(f"{name}: equals the checkpoint bitwise: {ok}; "
                  f"trained (differs from the source): {changed}")
            if not ok or not changed:
                fail(f"'{name}' does not hold the trained values")
        else:
            ok = (array.dtype == before.dtype and array.shape == before.shape
                  and array.tobytes() == before.tobytes()
                  and tensor.data_type == source[name].data_type)
            print(f"{name}: unchanged: {ok}")
            if not ok:
                fail(f"'{name}' changed")
    onnx.checker.check_model(out)
    print("onnx.checker: ok")

    # The exported model's loss against PyTorch with the exported weights.
    torch_model = Mlp()
    torch_model.load_state_dict({n: torch.from_numpy(numpy_helper.to_array(
        exported[n]).copy()) for n in PARAMS})
    batch = rows(data, 1, BATCH)
    with torch.no_grad():
        ref = torch_model(batch["x"], batch["y"]).item()
    got, input_args = weft_loss(work, out, batch)
    err = abs(got - ref) / max(abs(ref), 1e-12)
    print(f"loss: weft {got:.7f}  torch {ref:.7f}  relative error {err:.1e} "
          f"({'ok' if err <= TOLERANCE else 'FAILED'})")
    if err > TOLERANCE:
        fail("weft's loss of the exported model differs from PyTorch's")
    got_ort = ort_loss(work, out, input_args)
    if got_ort is not None:
        err = abs(got_ort - ref) / max(abs(ref), 1e-12)
        print(f"loss: onnxruntime-node {got_ort:.7f}  relative error {err:.1e} "
              f"({'ok' if err <= TOLERANCE else 'FAILED'})")
        if err > TOLERANCE:
            fail("onnxruntime's loss of the exported model differs from PyTorch's")
    print("export: ok")


def other(work):
    """The same MLP compiled with SGD: another signature, another model."""
    os.makedirs(work, exist_ok=True)
    src_path, _, data_args = make_source(work, False)
    bundle = os.path.join(work, "bundle")
    run(["weftc", "compile", src_path, "-o", bundle, "--train", "--optimizer",
         "sgd", "--lr", "0.1"])
    run(["weft", "train", bundle, *data_args, "--steps", "1",
         "--checkpoint-dir", os.path.join(work, "ck")])


def flip(path):
    blob = bytearray(open(path, "rb").read())
    blob[len(blob) - 3] ^= 0x40  # inside the tensor data
    open(path, "wb").write(bytes(blob))


def truncate(path):
    blob = open(path, "rb").read()
    open(path, "wb").write(blob[:-16])


def mismatch(bundle, out):
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(bundle, out)
    path = os.path.join(out, "source.onnx")
    m = onnx.load(path)
    for i, init in enumerate(m.graph.initializer):
        if init.name == "l2.bias":
            values = numpy_helper.to_array(init).reshape(2, 2)
            m.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(values, "l2.bias"))
    onnx.save_model(m, path)


def old(bundle, out):
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(bundle, out)
    os.remove(os.path.join(out, "source.onnx"))
    path = os.path.join(out, "manifest.json")
    manifest = json.load(open(path))
    del manifest["source_model_file"]
    json.dump(manifest, open(path, "w"), indent=2)


def main():
    command = sys.argv[1]
    if command == "train":
        train(sys.argv[2], "--external" in sys.argv)
    elif command == "other":
        other(sys.argv[2])
    elif command == "flip":
        flip(sys.argv[2])
    elif command == "truncate":
        truncate(sys.argv[2])
    elif command == "mismatch":
        mismatch(sys.argv[2], sys.argv[3])
    elif command == "old":
        old(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
