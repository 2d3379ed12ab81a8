"""Writes an MLP training model for planning tests: LAYERS x (MatMul by a
WIDTH x WIDTH weight, Add bias, Tanh) on ROWS rows, with an MSE loss
against `y` as its scalar output `loss`.

usage: python3 make_mlp.py OUT.onnx --layers L --width W --rows R
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--rows", type=int, default=64)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    nodes, inits, h = [], [], "x"
    for i in range(a.layers):
        w = (rng.standard_normal((a.width, a.width)) / np.sqrt(a.width))
        inits += [numpy_helper.from_array(w.astype(np.float32), f"l{i}.weight"),
                  numpy_helper.from_array(
                      np.full(a.width, 0.01 * (i + 1), np.float32), f"l{i}.bias")]
        nodes += [helper.make_node("MatMul", [h, f"l{i}.weight"], [f"m{i}"],
                                   name=f"l{i}/MatMul"),
                  helper.make_node("Add", [f"m{i}", f"l{i}.bias"], [f"a{i}"],
                                   name=f"l{i}/Add"),
                  helper.make_node("Tanh", [f"a{i}"], [f"h{i}"],
                                   name=f"l{i}/Tanh")]
        h = f"h{i}"
    nodes += [helper.make_node("Sub", [h, "y"], ["d"], name="loss/Sub"),
              helper.make_node("Mul", ["d", "d"], ["d2"], name="loss/Mul"),
              helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0,
                               name="loss/Mean")]
    shape = [a.rows, a.width]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
