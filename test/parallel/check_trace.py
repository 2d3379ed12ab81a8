"""Makes a small model for `weft train --trace` and reads the traces back.

usage: /usr/bin/python3 check_trace.py make OUT_DIR
         writes OUT_DIR/mlp.onnx (4 Linear+Tanh layers of width 32 and a
         mean-square loss against input y) and OUT_DIR/{x,y}.npy (16 rows)
       /usr/bin/python3 check_trace.py read TRACE.json
         checks the trace's structure (every rank a process with its stage,
         launches in the compute / p2p / wait categories, compute ones naming
         their tensors' types, each step's span) and prints the first matmul's
         tensors and, for the last traced step of each rank, the order of its
         schedule units (F3 = microbatch 3's forward, B = backward, .c1 =
         interleaved chunk 1), and the measured and theoretical bubble.
"""
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make(out):
    rng = np.random.default_rng(0)
    width, rows, layers = 32, 16, 4
    nodes, inits, h = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) * 0.3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"l{i}.weight"))
        nodes += [helper.make_node("MatMul", [h, f"l{i}.weight"], [f"m{i}"],
                                   name=f"l{i}/MatMul"),
                  helper.make_node("Tanh", [f"m{i}"], [f"h{i}"],
                                   name=f"l{i}/Tanh")]
        h = f"h{i}"
    nodes += [helper.make_node("Sub", [h, "y"], ["d"], name="loss/Sub"),
              helper.make_node("Mul", ["d", "d"], ["d2"], name="loss/Mul"),
              helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0,
                               name="loss/Mean")]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, "mlp.onnx"))
    for name in ("x", "y"):
        np.save(os.path.join(out, name + ".npy"),
                rng.standard_normal((rows, width)).astype(np.float32))


def read(path):
    trace = json.load(open(path))
    other = trace["otherData"]
    events = trace["traceEvents"]
    ranks = other["ranks"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(names) == list(range(ranks)), f"processes {sorted(names)}"
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        assert e["dur"] >= 0 and e["ts"] >= 0, f"negative time in {e}"
    print(f"ranks {ranks}, pipeline stages {other['pipeline_stages']}, "
          f"microbatches {other['microbatches']}, virtual stages "
          f"{other['virtual_stages']}, steps {other['steps_traced']}")
    for pid in range(ranks):
        mine = [e for e in spans if e["pid"] == pid]
        cats = sorted({e["cat"] for e in mine if e["tid"] == 0})
        steps = [e for e in mine if e["cat"] == "step"]
        assert len(steps) == other["steps_traced"], \
            f"rank {pid}: {len(steps)} step spans"
        last = steps[-1]
        begin, end = last["ts"], last["ts"] + last["dur"]
        # Launches of a step lie in its span, one after the other.
        launches = sorted((e for e in mine if e["tid"] == 0 and
                           begin <= e["ts"] < end), key=lambda e: e["ts"])
        for a, b in zip(launches, launches[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, \
                f"rank {pid}: launches overlap: {a} {b}"
        units = []
        for e in sorted((e for e in mine if e["tid"] == 1 and
                         begin <= e["ts"] < end), key=lambda e: e["ts"]):
            if not units or units[-1] != e["name"]:
                units.append(e["name"])
        # Every compute launch names its tensors' types (operands, then
        # results).
        for e in launches:
            if e["cat"] != "compute":
                continue
            types = e["args"].get("tensors")
            assert types and all(re.fullmatch(r"(\d+x)*[a-z0-9]+", t)
                                 for t in types), f"launch tensors: {e}"
        first = next(e for e in launches if e["name"] == "matmul")
        print(f"{names[pid]}: first matmul {' '.join(first['args']['tensors'])}")
        print(f"{names[pid]}: categories {' '.join(cats)}")
        print(f"{names[pid]} units: {' '.join(units)}")
    measured, theory = other["bubble_measured"], other["bubble_theory"]
    assert 0 <= measured < 1, f"bubble {measured}"
    print(f"bubble measured in [0, 1): yes; theory {theory:.4f}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "read"):
        sys.exit(__doc__)
    (make if sys.argv[1] == "make" else read)(sys.argv[2])
