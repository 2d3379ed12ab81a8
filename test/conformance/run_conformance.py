#!/usr/bin/python3
"""ONNX conformance for weft over Debian's libonnx-testdata.

Run with Debian's python (numpy + onnx):

    /usr/bin/python3 test/conformance/run_conformance.py [--filter REGEX]
        [--jobs N] [--keep-going] [--verbose] [--work-dir DIR] [--keep]
        [--keep-failed] [--no-variants] [--suites node,...] [--data-dir DIR]

For every test under DATA/{node,pytorch-converted,pytorch-operator}/<test>/
whose graph uses only ops listed in claimed_ops.txt, the script compiles
model.onnx with `weftc compile`, converts each test_data_set_N/input_K.pb to
.npy, runs the bundle with `weft run`, and compares every output with
output_K.pb (float: rtol = atol = 1e-4, NaN positions must match; ints and
bools: exact; dtype and shape must match).

Classification
  PASS  every output of every data set matches. (Training-mode Dropout with
        a ratio above 0 is random: there every output element must be 0 or
        x / (1 - ratio), the mask must say which, and the kept count must be
        plausible; RANDOM_DROPOUT_RE. Bernoulli is random as well: 0s and 1s
        in a plausible count; BERNOULLI_RE.)
  SKIP  weftc exits 2 with a message naming an unsupported feature
        ("unsupported", "not supported", "not implemented", "does not
        support", "supports opsets N to M": a dtype, an attribute value, an
        opset), unless that message lists a claimed op as an unsupported op;
        or the data cannot be fed (fewer input files than model inputs,
        non-tensor inputs, data contradicting the model's declared shapes).
        The reason is printed.
  FAIL  anything else: weftc exit 1 or crash, exit 2 without such a message,
        a claimed op reported as unsupported, `weft run` failing, a missing
        output, wrong dtype/shape/values.
Tests using ops outside the claimed list are not counted for any op (listed
with --verbose).

Variants: when weftc rejects a test (exit 2) for a reason that lies in how
the test is packaged rather than in the op, the runner derives a model that
still tests the op, compiles that, and classifies the variant (the summary
counts them; failures name the variant):
  - shape operands fed as graph inputs (Reshape's shape, Unsqueeze's axes,
    Trilu's k, ...: "input '...' is not a constant"): those graph inputs become
    initializers holding the data set's values (SHAPE_OPERANDS);
  - an opset below weft's range ("uses opset N ...; weft supports opsets A to
    B"): the model is upgraded to opset A with onnx.version_converter;
  - optional outputs weft does not produce ("outputs 'Mean' and 'InvStdDev'
    are not supported"): they are removed from the graph and not compared.
If the variant is rejected again, that rejection is classified as above.
--no-variants turns this off (weftc's first answer is classified; "input
'...' is not a constant" then counts as a named unsupported feature).
Inputs whose declaration is not static are compiled with --input-shape
NAME=<data shape>; data contradicting a static declaration is a SKIP
("test data inconsistent with the model"). bfloat16 outputs are compared
within 1 ulp (see compare_bf16).

Output: a per-op table (passed/failed/skipped over the counted tests that use
the op), the failures and skips with their reasons, timing, and a final line
`conformance: N passed, M failed, K skipped`. Exit status 1 if any test
failed (or could not be run), 0 otherwise.

Without --keep-going the script stops starting new tests after the first
failure (tests not started are reported as not run and the exit status is 1).
"""

import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import weft_tools  # noqa: E402
sys.path.insert(0, HERE)
from compare_outputs import (BERNOULLI_RE, RANDOM_DROPOUT_RE, compare_bernoulli,  # noqa: E402
                             compare_bf16, compare_random_dropout)

import numpy as np  # noqa: E402
import onnx  # noqa: E402

DEFAULT_DATA = "/usr/share/libonnx-testdata/data"
DEFAULT_SUITES = ("node", "pytorch-converted", "pytorch-operator")

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"

# weftc's wording for "this feature is outside what weft supports".
UNSUPPORTED_RE = re.compile(
    r"unsupported|not supported|not implemented|does not support|supports opsets? \d+|"
    r"weft needs static shapes|is not a constant", re.I)
# "unsupported ONNX ops (N):" followed by lines "  node 'x': OpType".
UNSUPPORTED_OPS_HEADER_RE = re.compile(r"unsupported ONNX ops", re.I)
UNSUPPORTED_OP_LINE_RE = re.compile(r"node\s+'[^']*'\s*:\s*([A-Za-z0-9_]+)")


def load_claimed_ops(path):
    ops = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                ops.append(line)
    return ops


class Test:
    """One test directory and what the runner learned about it."""

    def __init__(self, suite, name, directory):
        self.suite = suite
        self.name = name
        self.dir = directory
        self.id = "%s/%s" % (suite, name)
        self.ops = set()
        self.unclaimed = set()
        self.inputs = []       # graph inputs that are not initializers (ValueInfoProto)
        self.outputs = []      # graph output names
        self.output_types = {}  # output name -> TensorProto elem_type
        self.variants = []     # harness variants applied (see _derive_and_compile)
        self.data_sets = []
        self.load_error = None
        # results
        self.status = None
        self.reason = ""
        self.details = ""
        self.compile_s = 0.0
        self.run_s = 0.0


def discover(data_root, suites, claimed, filter_re):
    tests = []
    for suite in suites:
        suite_dir = os.path.join(data_root, suite)
        if not os.path.isdir(suite_dir):
            raise SystemExit("error: no test suite at %s (install libonnx-testdata "
                             "or pass --data-dir)" % suite_dir)
        for name in sorted(os.listdir(suite_dir)):
            directory = os.path.join(suite_dir, name)
            model_path = os.path.join(directory, "model.onnx")
            if not os.path.isfile(model_path):
                continue
            t = Test(suite, name, directory)
            if filter_re and not filter_re.search(t.id):
                continue
            try:
                model = onnx.load(model_path)
            except Exception as exc:  # a broken file is a finding, not a crash
                t.load_error = "cannot parse model.onnx: %s" % exc
                tests.append(t)
                continue
            for node in model.graph.node:
                op = node.op_type
                if node.domain not in ("", "ai.onnx"):
                    op = "%s:%s" % (node.domain, node.op_type)
                t.ops.add(op)
            t.unclaimed = t.ops - claimed
            init_names = {i.name for i in model.graph.initializer}
            t.inputs = [i for i in model.graph.input if i.name not in init_names]
            t.outputs = [o.name for o in model.graph.output]
            t.output_types = {o.name: o.type.tensor_type.elem_type for o in model.graph.output
                              if o.type.HasField("tensor_type")}
            t.data_sets = sorted(
                os.path.join(directory, d) for d in os.listdir(directory)
                if d.startswith("test_data_set") and
                os.path.isdir(os.path.join(directory, d)))
            tests.append(t)
    return tests


def numbered_files(directory, prefix):
    files = []
    k = 0
    while os.path.exists(os.path.join(directory, "%s_%d.pb" % (prefix, k))):
        files.append(os.path.join(directory, "%s_%d.pb" % (prefix, k)))
        k += 1
    return files


def declared_shape(value_info):
    """Static dims of a graph input, or None if its shape is not fully known."""
    tt = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return tuple(dims)


def first_lines(text, n=4, width=300):
    lines = [l.rstrip() for l in text.strip().splitlines() if l.strip()]
    out = " | ".join(l.strip()[:width] for l in lines[:n])
    if len(lines) > n:
        out += " | ..."
    return out


def classify_compile_failure(result, claimed, model_path):
    """(status, reason) for a weftc invocation that did not succeed."""
    msg = result.message().replace(model_path, "model.onnx")
    if result.timed_out:
        return FAIL, "weftc timed out after %.0f s" % result.seconds
    if result.returncode == 2 and UNSUPPORTED_RE.search(msg):
        if UNSUPPORTED_OPS_HEADER_RE.search(msg):
            named = UNSUPPORTED_OP_LINE_RE.findall(msg)
            wrongly = sorted(set(op for op in named if op in claimed))
            if wrongly:
                return FAIL, ("weftc rejects claimed op(s) %s: %s" %
                              (", ".join(wrongly), first_lines(msg)))
        return SKIP, first_lines(msg)
    if result.returncode == 2:
        return FAIL, "weftc exit 2 without naming an unsupported feature: " + first_lines(msg)
    if result.returncode < 0:
        return FAIL, "weftc killed by signal %d: %s" % (-result.returncode, first_lines(msg))
    return FAIL, "weftc exit %d: %s" % (result.returncode, first_lines(msg))


def run_one(t, work_root, claimed, args):
    """Compile and run one test; sets t.status / t.reason / t.details."""
    if t.load_error:
        t.status, t.reason = FAIL, t.load_error
        return t
    if not t.data_sets:
        t.status, t.reason = SKIP, "no test_data_set directory"
        return t
    work = os.path.join(work_root, t.suite, t.name)
    os.makedirs(work, exist_ok=True)
    try:
        _run_one(t, work, claimed, args)
    except Exception as exc:  # never lose a test to a harness error
        t.status, t.reason = FAIL, "harness error: %r" % (exc,)
    if not args.keep and (t.status != FAIL or not args.keep_failed):
        shutil.rmtree(work, ignore_errors=True)
    return t


# Node inputs that fix output shapes (or, for Dropout, the mode). ONNX node
# tests feed them as graph inputs; weft compiles static shapes and rejects them
# ("input 'x' is not a constant"). The runner then binds those graph inputs to
# the data set's values as initializers and compiles that variant, so the op
# itself is still tested (reported as "bound": see the summary).
SHAPE_OPERANDS = {
    "Reshape": (1,), "Expand": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,),
    "Slice": (1, 2, 3, 4), "Trilu": (1,), "ReduceSum": (1,), "ReduceMean": (1,),
    "ReduceMax": (1,), "Dropout": (1, 2), "ConstantOfShape": (0,), "Range": (0, 1, 2),
    "Pad": (1, 3), "ScatterND": (0, 1, 2), "Resize": (1, 2, 3), "Tile": (1,),
    "ReduceMin": (1,), "ReduceSumSquare": (1,), "ReduceL1": (1,), "ReduceL2": (1,),
    "ReduceLogSum": (1,), "ReduceLogSumExp": (1,),
    "RNN": (4,), "GRU": (4,), "LSTM": (4,), "TopK": (1,),
    "CumSum": (1,), "OneHot": (1,), "If": (0,), "Loop": (0, 1), "HannWindow": (0,), "HammingWindow": (0,),
    "BlackmanWindow": (0,), "MelWeightMatrix": (0, 1, 2, 3, 4), "STFT": (1, 3), "DFT": (1,),
    "Compress": (1,), "MaxUnpool": (2,),
}
NOT_CONSTANT_RE = re.compile(r"is not a constant", re.I)


def shape_operand_inputs(model, input_names):
    """Graph inputs (names) that feed a shape operand of some node."""
    names = set()
    for node in model.graph.node:
        for pos in SHAPE_OPERANDS.get(node.op_type, ()):
            if pos < len(node.input) and node.input[pos] in input_names:
                names.add(node.input[pos])
    return [n for n in input_names if n in names]


def bind_inputs(model, values):
    """Copy of model with graph inputs in `values` (name -> ndarray) as initializers."""
    from onnx import numpy_helper
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    keep = [vi for vi in bound.graph.input if vi.name not in values]
    del bound.graph.input[:]
    bound.graph.input.extend(keep)
    for name, arr in values.items():
        bound.graph.initializer.append(numpy_helper.from_array(np.asarray(arr), name))
    return bound


BF16 = onnx.TensorProto.BFLOAT16


def _shapes_for(inputs, arrays):
    """--input-shape for inputs whose declared shape is not static or differs from the data."""
    shapes = {}
    for vi, arr in zip(inputs, arrays):
        if declared_shape(vi) != tuple(arr.shape):
            shapes[vi.name] = arr.shape
    return shapes


def _compile(t, model_path, bundle, inputs, arrays, args):
    comp = weft_tools.compile_bundle(model_path, bundle, input_shapes=_shapes_for(inputs, arrays),
                                     timeout=args.compile_timeout, weftc=args.weftc)
    t.compile_s += comp.seconds
    return comp


def _run_and_compare(t, bundle, inputs, arrays, outputs, expected, k, work, args):
    """Run one data set; returns a list of problems ([] = all outputs match).

    Sets t.status = FAIL itself (and returns None) when `weft run` fails."""
    ds_dir = os.path.join(work, "ds%d" % k)
    out_dir = os.path.join(ds_dir, "out")
    shutil.rmtree(ds_dir, ignore_errors=True)
    os.makedirs(out_dir)
    feeds = []
    for j, (vi, arr) in enumerate(zip(inputs, arrays)):
        path = os.path.join(ds_dir, "input_%d.npy" % j)
        np.save(path, arr)
        feeds.append((vi.name, path))
    run = weft_tools.run_bundle(bundle, feeds, out_dir, timeout=args.run_timeout, weft=args.weft)
    t.run_s += run.seconds
    if not run.ok:
        if run.timed_out:
            why = "weft run timed out after %.0f s" % run.seconds
        elif run.returncode < 0:
            why = "weft run killed by signal %d" % -run.returncode
        else:
            why = "weft run exit %d" % run.returncode
        t.status = FAIL
        t.reason = "%s: %s" % (why, first_lines(run.message().replace(work, "<work>")))
        t.details = run.command_line() + "\n" + run.message()
        return None
    label = os.path.basename(t.data_sets[k])
    problems = []
    got, missing = weft_tools.read_outputs(out_dir, outputs)
    if missing:
        problems.append("%s: missing output file(s) for %s" % (
            label, ", ".join("'%s'" % m for m in missing)))
    if RANDOM_DROPOUT_RE.match(t.name):
        return problems + compare_random_dropout(arrays[0], got, outputs, expected)
    if BERNOULLI_RE.match(t.name):
        return problems + compare_bernoulli(arrays[0], got, outputs, expected)
    for name, exp in zip(outputs, expected):
        if name not in got:
            continue
        if t.output_types.get(name) == BF16:
            ok, msg = compare_bf16(got[name], exp)
        else:
            ok, msg = weft_tools.compare_exact_or_close(got[name], exp, rtol=args.rtol,
                                                        atol=args.atol)
        if not ok:
            problems.append("output '%s' (%s%s): %s" % (name, exp.dtype, list(exp.shape), msg))
    return problems


OPSET_RE = re.compile(r"uses opset (\d+) of the default ONNX domain; weft supports opsets? (\d+)")
OUTPUTS_RE = re.compile(r"node #(\d+) \(([A-Za-z0-9_]+)\): (?:the )?outputs? .* (?:is|are) not supported")


def default_opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def upgrade_opset(model, target):
    """The model converted by ONNX's own version converter to opset `target`."""
    from onnx import version_converter
    return version_converter.convert_version(model, target)


def drop_optional_outputs(model, node_index):
    """Copy of model with node #node_index's outputs 1.. removed, or None.

    Only when those outputs are graph outputs no other node consumes (e.g.
    LayerNormalization's Mean/InvStdDev, MaxPool's Indices)."""
    if node_index >= len(model.graph.node):
        return None, []
    node = model.graph.node[node_index]
    extra = [o for o in node.output[1:] if o]
    if not extra:
        return None, []
    used = {i for n in model.graph.node for i in n.input}
    if any(o in used for o in extra):
        return None, []
    m = onnx.ModelProto()
    m.CopyFrom(model)
    n = m.graph.node[node_index]
    for i in range(1, len(n.output)):
        n.output[i] = ""
    while n.output and n.output[-1] == "":
        del n.output[-1]
    keep = [o for o in m.graph.output if o.name not in extra]
    del m.graph.output[:]
    m.graph.output.extend(keep)
    return m, extra


def _derive_and_compile(t, model_path, bundle, ins, work, claimed, args, k):
    """Compile the test's model; on a rejection the harness can work around
    (shape operands fed as inputs, an opset below weft's range, optional
    outputs weft does not produce) derive a variant and compile that.

    Returns (feed value infos, feed arrays, output names) on success; sets
    t.status / t.reason and returns None otherwise. Records the variants
    applied in t.variants."""
    model = None
    path = model_path
    feed_vi, feed_arr = list(t.inputs), list(ins)
    outputs = list(t.outputs)
    applied = []
    for attempt in range(5):
        comp = _compile(t, path, bundle, feed_vi, feed_arr, args)
        if comp.ok:
            t.variants = applied
            return feed_vi, feed_arr, outputs
        msg = comp.message()
        if comp.returncode == 2 and not args.no_variants:
            if model is None:
                model = onnx.load(model_path)
            derived = None
            names = [vi.name for vi in feed_vi]
            bind = shape_operand_inputs(model, names) if NOT_CONSTANT_RE.search(msg) else []
            m_opset = OPSET_RE.search(msg)
            m_outs = OUTPUTS_RE.search(msg)
            if bind and not any(a.startswith("bound") for a in applied):
                values = {vi.name: a for vi, a in zip(feed_vi, feed_arr) if vi.name in bind}
                derived = bind_inputs(model, values)
                keep = [i for i, vi in enumerate(feed_vi) if vi.name not in bind]
                feed_vi = [feed_vi[i] for i in keep]
                feed_arr = [feed_arr[i] for i in keep]
                applied.append("bound %s as constants" % ", ".join("'%s'" % b for b in bind))
            elif m_opset and not any(a.startswith("opset") for a in applied):
                old, target = int(m_opset.group(1)), int(m_opset.group(2))
                try:
                    derived = upgrade_opset(model, target)
                except Exception as exc:
                    t.status = SKIP
                    t.reason = "%s; onnx.version_converter to opset %d failed: %s" % (
                        first_lines(msg.replace(model_path, "model.onnx")), target,
                        first_lines(str(exc), 1))
                    return None
                applied.append("opset %d->%d" % (old, target))
                # An upgrade can change what the op takes (Scan 8 -> 9 drops
                # the batch dim): data for the old model no longer fits.
                arrays = {vi.name: a for vi, a in zip(feed_vi, feed_arr)}
                for vi in derived.graph.input:
                    decl = declared_shape(vi)
                    if vi.name in arrays and decl is not None and \
                            decl != tuple(arrays[vi.name].shape):
                        t.status = SKIP
                        t.reason = ("test data inconsistent with the model: "
                                    "onnx.version_converter to opset %d declares input "
                                    "'%s' %s, the data has %s" % (
                                        target, vi.name, list(decl),
                                        list(arrays[vi.name].shape)))
                        return None
            elif m_outs and not any(a.startswith("dropped") for a in applied):
                derived, extra = drop_optional_outputs(model, int(m_outs.group(1)))
                if derived is not None:
                    outputs = [o for o in outputs if o not in extra]
                    applied.append("dropped outputs %s of %s" % (
                        ", ".join("'%s'" % e for e in extra), m_outs.group(2)))
            if derived is not None:
                model = derived
                path = os.path.join(work, "variant%d.%d.onnx" % (k, attempt))
                onnx.save(model, path)
                continue
        t.variants = applied
        t.status, t.reason = classify_compile_failure(comp, claimed, path)
        t.reason = t.reason.replace(path, "model.onnx")
        if applied:
            t.reason = "(variant: %s) %s" % ("; ".join(applied), t.reason)
        t.details = comp.command_line() + "\n" + msg
        return None
    t.status, t.reason = FAIL, "harness: too many variants (%s)" % "; ".join(applied)
    return None


def _run_one(t, work, claimed, args):
    # Feedability of the data, checked before compiling: inputs must be tensors
    # and every data set must provide one file per model input whose shape
    # agrees with the model's static declaration.
    data = []  # per data set: ([input arrays], [expected arrays])
    for ds in t.data_sets:
        label = os.path.basename(ds)
        in_files = numbered_files(ds, "input")
        out_files = numbered_files(ds, "output")
        if len(in_files) < len(t.inputs):
            t.status = SKIP
            t.reason = "model has %d inputs but %s gives %d" % (
                len(t.inputs), label, len(in_files))
            return
        if len(in_files) > len(t.inputs):
            t.status = FAIL
            t.reason = "data set %s has %d inputs for %d model inputs" % (
                label, len(in_files), len(t.inputs))
            return
        for vi in t.inputs:
            if not vi.type.HasField("tensor_type"):
                t.status = SKIP
                t.reason = "input '%s' is a %s, not a tensor: not supported" % (
                    vi.name, vi.type.WhichOneof("value"))
                return
        if len(out_files) != len(t.outputs):
            t.status = FAIL
            t.reason = "data set %s has %d outputs for %d model outputs" % (
                label, len(out_files), len(t.outputs))
            return
        try:
            ins = [weft_tools.pb_to_array(f) for f in in_files]
            outs = [weft_tools.pb_to_array(f) for f in out_files]
        except Exception as exc:
            t.status = SKIP
            t.reason = "test data is not plain tensors (%s): not supported" % exc
            return
        for vi, arr in zip(t.inputs, ins):
            decl = declared_shape(vi)
            if decl is not None and decl != tuple(arr.shape):
                t.status = SKIP
                t.reason = ("test data inconsistent with the model: %s gives input '%s' "
                            "shape %s, the model declares %s" % (
                                label, vi.name, list(arr.shape), list(decl)))
                return
        data.append((ins, outs))

    model_path = os.path.join(t.dir, "model.onnx")
    bundle = os.path.join(work, "bundle")
    problems = []
    prepared = None
    for k, (ins, outs) in enumerate(data):
        # Recompile per data set only when a variant bound that set's values.
        if prepared is None or any(a.startswith("bound") for a in t.variants):
            prepared = _derive_and_compile(t, model_path, bundle, ins, work, claimed, args, k)
            if prepared is None:
                return
        feed_vi, _, outputs = prepared
        feed_names = {vi.name for vi in feed_vi}
        feed_arr = [a for vi, a in zip(t.inputs, ins) if vi.name in feed_names]
        expected = dict(zip(t.outputs, outs))
        p = _run_and_compare(t, bundle, feed_vi, feed_arr, outputs,
                             [expected[o] for o in outputs], k, work, args)
        if p is None:
            return
        problems += p
    if problems:
        t.status = FAIL
        t.reason = "wrong result: " + "; ".join(problems)
    else:
        t.status = PASS


def print_table(counted, claimed_list, out):
    per_op = {op: collections.Counter() for op in claimed_list}
    for t in counted:
        for op in t.ops:
            if op in per_op:
                per_op[op][t.status or "NOT RUN"] += 1
    w = max(len(op) for op in claimed_list)
    out.write("%-*s  %6s  %6s  %7s  %5s\n" % (w, "op", "passed", "failed", "skipped", "tests"))
    out.write("-" * (w + 32) + "\n")
    for op in claimed_list:
        c = per_op[op]
        total = sum(c.values())
        out.write("%-*s  %6d  %6d  %7d  %5d%s\n" % (
            w, op, c[PASS], c[FAIL], c[SKIP], total,
            "   (no test)" if total == 0 else ""))
    out.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", metavar="REGEX",
                    help="only tests whose 'suite/name' matches REGEX (re.search)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="parallel tests (default 2)")
    ap.add_argument("--keep-going", "-k", action="store_true",
                    help="run every test even after a failure")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print every result as it finishes, the details of failures "
                         "and the tests not counted (ops outside the claimed list)")
    ap.add_argument("--data-dir", default=DEFAULT_DATA, help="libonnx-testdata data/ directory")
    ap.add_argument("--suites", default=",".join(DEFAULT_SUITES),
                    help="comma-separated suites under --data-dir (default %(default)s)")
    ap.add_argument("--claimed-ops", default=os.path.join(HERE, "claimed_ops.txt"))
    ap.add_argument("--work-dir", help="scratch directory (default: a fresh temp dir, removed)")
    ap.add_argument("--keep", action="store_true", help="keep every test's bundle and files")
    ap.add_argument("--keep-failed", action="store_true",
                    help="keep the bundles and files of failed tests")
    ap.add_argument("--no-variants", action="store_true",
                    help="classify weftc's first answer only (no derived models; see Variants)")
    ap.add_argument("--rtol", type=float, default=None, help="float rtol (default 1e-4)")
    ap.add_argument("--atol", type=float, default=None, help="float atol (default 1e-4)")
    ap.add_argument("--compile-timeout", type=float, default=120)
    ap.add_argument("--run-timeout", type=float, default=60)
    args = ap.parse_args(argv)

    start = time.monotonic()
    claimed_list = load_claimed_ops(args.claimed_ops)
    claimed = set(claimed_list)
    filter_re = re.compile(args.filter) if args.filter else None
    try:
        args.weftc = weft_tools.find_tool("weftc")
        args.weft = weft_tools.find_tool("weft")
    except FileNotFoundError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2

    # Preflight: a tool that cannot start (e.g. being re-linked) would turn
    # every test into a FAIL; say so once instead.
    for tool in (args.weftc, args.weft):
        pre = weft_tools.run_tool([tool, "--version"], timeout=60)
        if pre.returncode != 0:
            print("error: '%s --version' failed (exit %d): %s" % (
                tool, pre.returncode, pre.message(300)), file=sys.stderr)
            return 2

    suites = [s for s in args.suites.split(",") if s]
    tests = discover(args.data_dir, suites, claimed, filter_re)
    counted = [t for t in tests if not t.unclaimed]
    others = [t for t in tests if t.unclaimed]
    print("weft conformance: %d tests found, %d use only claimed ops, %d not counted "
          "(ops outside the claimed list); weftc = %s; %d jobs" % (
              len(tests), len(counted), len(others), args.weftc, args.jobs))
    sys.stdout.flush()
    if args.verbose and others:
        print("\nnot counted (unclaimed ops):")
        for t in others:
            print("  %-60s %s" % (t.id, " ".join(sorted(t.unclaimed))))
        print()

    own_tmp = args.work_dir is None
    work_root = tempfile.mkdtemp(prefix="weft-conformance-") if own_tmp else args.work_dir
    os.makedirs(work_root, exist_ok=True)

    lock = threading.Lock()
    stop = threading.Event()
    done = [0]

    def task(t):
        if stop.is_set():
            return t  # status stays None: not run
        run_one(t, work_root, claimed, args)
        with lock:
            done[0] += 1
            if t.status == FAIL and not args.keep_going:
                stop.set()
            if args.verbose or t.status == FAIL:
                print("%s: %s%s" % (t.status, t.id,
                                    "" if t.status == PASS else "  -- " + t.reason))
                if args.verbose and t.status == FAIL and t.details:
                    for line in t.details.splitlines()[:20]:
                        print("    " + line)
                sys.stdout.flush()
        return t

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(task, counted))
    except KeyboardInterrupt:
        stop.set()
        print("interrupted", file=sys.stderr)
    finally:
        if own_tmp and not args.keep and not args.keep_failed:
            shutil.rmtree(work_root, ignore_errors=True)

    elapsed = time.monotonic() - start
    passed = [t for t in counted if t.status == PASS]
    failed = [t for t in counted if t.status == FAIL]
    skipped = [t for t in counted if t.status == SKIP]
    not_run = [t for t in counted if t.status is None]

    out = sys.stdout
    out.write("\n")
    print_table(counted, claimed_list, out)

    if failed:
        out.write("failures (%d):\n" % len(failed))
        for t in failed:
            out.write("  FAIL %s [%s]%s\n      %s\n" % (
                t.id, " ".join(sorted(t.ops)),
                " (variant: %s)" % "; ".join(t.variants) if t.variants and
                not t.reason.startswith("(variant") else "", t.reason))
        out.write("\n")
    if skipped:
        out.write("skips (%d):\n" % len(skipped))
        for t in skipped:
            out.write("  SKIP %s [%s]\n      %s\n" % (t.id, " ".join(sorted(t.ops)), t.reason))
        out.write("\n")
        reasons = collections.Counter(re.sub(r"'[^']*'", "'...'", t.reason)[:160]
                                      for t in skipped)
        out.write("skip reasons (grouped):\n")
        for reason, n in reasons.most_common():
            out.write("  %4d  %s\n" % (n, reason))
        out.write("\n")
    if not_run:
        out.write("not run (stopped after the first failure; use --keep-going): %d tests\n\n"
                  % len(not_run))
    kinds = collections.OrderedDict([
        ("bound", "shape operands fed as inputs, bound to the data set's values"),
        ("opset", "opset below weft's range, upgraded by onnx.version_converter"),
        ("dropped", "optional outputs weft does not produce, removed")])
    varied = [t for t in counted if t.variants]
    if varied:
        out.write("variants (the harness compiled a derived model; the op is still tested):\n")
        for key, what in kinds.items():
            ts = [t for t in varied if any(v.startswith(key) for v in t.variants)]
            if ts:
                out.write("  %-62s %3d tests: %d passed, %d failed, %d skipped\n" % (
                    what, len(ts), sum(t.status == PASS for t in ts),
                    sum(t.status == FAIL for t in ts), sum(t.status == SKIP for t in ts)))
        if args.verbose:
            for t in varied:
                out.write("    %s %s: %s\n" % (t.status, t.id, "; ".join(t.variants)))
        out.write("\n")
    ran = [t for t in counted if t.status is not None]
    compile_total = sum(t.compile_s for t in ran)
    run_total = sum(t.run_s for t in ran)
    compiled = [t for t in ran if t.compile_s > 0]
    out.write("time: %.1f s wall with %d jobs; weftc %.1f s total (%.2f s mean over %d "
              "compiles), weft run %.1f s total\n" % (
                  elapsed, args.jobs, compile_total,
                  compile_total / max(1, len(compiled)), len(compiled), run_total))
    if own_tmp and (args.keep or args.keep_failed):
        out.write("work dir kept: %s\n" % work_root)
    out.write("conformance: %d passed, %d failed, %d skipped\n" % (
        len(passed), len(failed), len(skipped)))
    out.flush()
    return 1 if failed or not_run else 0


if __name__ == "__main__":
    sys.exit(main())
