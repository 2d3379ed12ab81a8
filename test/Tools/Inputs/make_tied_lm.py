"""Writes OUT/tied.onnx and OUT/untied.onnx: a language model of a large
vocabulary (4096 x 64 embedding) and a small batch (2 x 8 tokens), whose
LM head reads the embedding's matrix (tied) or a matrix of its own of the
same shape (untied), behind four 64-512-64 layers that make the head's
stage a pipeline's last. The loss is the mean square of the logits."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB, DIM, HIDDEN, LAYERS = 4096, 64, 512, 4


def build(tied):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(
        (rng.standard_normal((VOCAB, DIM)) * 0.02).astype(np.float32),
        "embed")]
    nodes = [helper.make_node("Gather", ["embed", "tokens"], ["h0"],
                              name="embed/Gather")]
    h = "h0"
    for i in range(LAYERS):
        for j, shape in enumerate([(DIM, HIDDEN), (HIDDEN, DIM)]):
            w = f"w{i}_{j}"
            inits.append(numpy_helper.from_array(
                (rng.standard_normal(shape) * 0.05).astype(np.float32), w))
            nodes.append(helper.make_node("MatMul", [h, w], [f"{w}_out"],
                                          name=f"layer{i}/MatMul{j}"))
            nodes.append(helper.make_node("Tanh", [f"{w}_out"], [f"{w}_act"],
                                          name=f"layer{i}/Tanh{j}"))
            h = f"{w}_act"
    head = "embed"
    if not tied:
        head = "head"
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((VOCAB, DIM)) * 0.02).astype(np.float32),
            "head"))
    nodes += [
        helper.make_node("Transpose", [head], ["head_t"], perm=[1, 0],
                         name="head/Transpose"),
        helper.make_node("MatMul", [h, "head_t"], ["logits"],
                         name="head/MatMul"),
        helper.make_node("Mul", ["logits", "logits"], ["sq"], name="loss/Mul"),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0,
                         name="loss/Mean"),
    ]
    graph = helper.make_graph(
        nodes, "tied" if tied else "untied",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [2, 8])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    onnx.save(build(True), os.path.join(out, "tied.onnx"))
    onnx.save(build(False), os.path.join(out, "untied.onnx"))


if __name__ == "__main__":
    main()
