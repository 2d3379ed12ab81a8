"""Builds the example model: a 2-layer MLP (MatMul, Add, Tanh, Softmax) as
ONNX, an input batch, and NumPy's answer for it.

usage: /usr/bin/python3 make_model.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out_dir):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(32).astype(np.float32) * 0.1
    w2 = rng.standard_normal((32, 4)).astype(np.float32) * 0.3
    b2 = rng.standard_normal(4).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Tanh", ["h1"], ["h2"], name="act"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
        helper.make_node("Add", ["h3", "b2"], ["logits"], name="fc2_bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(a, n) for a, n in
         [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    # The batch dimension is fixed at 8 so the example compiles as is.
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 8
    onnx.save(model, os.path.join(out_dir, "mlp.onnx"))

    x = rng.standard_normal((8, 16)).astype(np.float32)
    logits = np.tanh(x @ w1 + b1) @ w2 + b2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    np.save(os.path.join(out_dir, "x.npy"), x)
    np.save(os.path.join(out_dir, "expected.npy"), e / e.sum(axis=-1, keepdims=True))


if __name__ == "__main__":
    main(sys.argv[1])
