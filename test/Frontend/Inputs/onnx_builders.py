"""The builders of the frontend's lit-test models (onnx_models.py and the
group modules it imports): value infos, initializers, nodes, models, and the
@group registry that `onnx_models.py OUTDIR GROUP...` writes from."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
I64 = TensorProto.INT64
I32 = TensorProto.INT32
BOOL = TensorProto.BOOL
INT_MAX = 2**63 - 1

GROUPS = {}


def group(fn):
    GROUPS[fn.__name__] = fn
    return fn


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def floats(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def node(op, inputs, outputs, name=None, domain=None, **attrs):
    name = outputs[0] if name is None else name
    return helper.make_node(op, inputs, outputs, name=name, domain=domain, **attrs)


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="weft-lit")
    m.ir_version = 8
    return m


def unary_model(op, shape=(2, 3), dtype=F32, opset=17, **attrs):
    return model([node(op, ["x"], ["y"], **attrs)], [vi("x", dtype, shape)],
                 [vi("y", dtype, None)], opset=opset)


def binary_model(op, a=(2, 3), b=(3,), dtype=F32, out=None, opset=17):
    return model([node(op, ["a", "b"], ["y"])], [vi("a", dtype, a), vi("b", dtype, b)],
                 [vi("y", out or dtype, None)], opset=opset)
