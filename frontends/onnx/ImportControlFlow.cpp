//===- ImportControlFlow.cpp - If and Loop, decided at import
//--------------===//
//
// weft compiles one static graph, so ONNX's control flow is resolved while
// importing: an If whose condition is known takes its branch's nodes in its
// place, and a Loop whose trip count and condition are known is unrolled,
// its body imported once per iteration (as RNNs are unrolled over their
// sequence). A condition that depends on the data is an error naming it.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// Whether a one-element constant is non-zero (true).
static bool isTrue(DenseElementsAttr value) {
  if (isa<FloatType>(value.getElementType()))
    return !(*value.getValues<APFloat>().begin()).isZero();
  return !(*value.getValues<APInt>().begin()).isZero();
}

/// If whose condition is known at import time (a constant, or computed from
/// shapes: what torch.onnx.export emits for `if x.dim() == 3`): the branch
/// it takes is imported in its place, and the other is never looked at
/// beyond the op check. weft compiles one static graph, so a condition that
/// depends on the data is an error.
LogicalResult onnx_import::importIf(NodeImporter &imp) {
  std::optional<DenseElementsAttr> cond = imp.getConstantInput(
      0, "cond",
      "weft compiles one static graph, so it imports an If only when its "
      "condition is known at compile time (from shapes or constants)");
  if (!cond)
    return failure();
  if (cond->getNumElements() != 1)
    return imp.emitError("input 'cond' must hold one element, not " +
                         formatType(cond->getType()));
  StringRef name = isTrue(*cond) ? "then_branch" : "else_branch";
  const onnx::GraphProto *branch = imp.getGraphAttr(name);
  if (!branch)
    return imp.hasError()
               ? failure()
               : imp.emitError("missing graph attribute '" + name + "'");
  if (branch->output_size() != static_cast<int>(imp.getNumOutputs()))
    return imp.emitError(name + " has " + Twine(branch->output_size()) +
                         " outputs but the node has " +
                         Twine(imp.getNumOutputs()));
  SmallVector<GraphValue> outputs;
  if (failed(imp.importSubgraph(*branch, name, {}, outputs)))
    return failure();
  for (auto [i, value] : llvm::enumerate(outputs))
    imp.setGraphValueOutput(i, value);
  return success();
}

/// The iterations' values of a scan output (`name`), each given a dim of 1
/// at `axis` and concatenated along it; they must share one type.
static Value stackIterations(NodeImporter &imp, ArrayRef<Value> values,
                             int64_t axis, StringRef name) {
  RankedTensorType first = getTensorType(values.front());
  if (axis < 0 || axis > first.getRank()) {
    (void)imp.emitError("scan output axis " + Twine(axis) +
                        " is out of range for " + formatType(first));
    return {};
  }
  SmallVector<Value> rows;
  for (Value v : values) {
    if (getTensorType(v) != first) {
      (void)imp.emitError("scan output '" + name + "' changes from " +
                          formatType(first) + " to " + formatType(v.getType()) +
                          " between iterations");
      return {};
    }
    SmallVector<int64_t> shape(first.getShape());
    shape.insert(shape.begin() + axis, 1);
    rows.push_back(imp.createReshape(v, shape));
  }
  if (rows.size() == 1)
    return rows.front();
  return imp.createInferred<ConcatOp>(rows,
                                      imp.getBuilder().getI64IntegerAttr(axis));
}

/// At most this many body nodes are imported for one Loop, all iterations
/// together.
static constexpr int64_t kMaxUnrolledNodes = 1 << 16;

static constexpr const char *kLoopNeedsKnownCount =
    "weft compiles one static graph, so it unrolls a Loop at import and needs "
    "its trip count and condition at compile time (from shapes or "
    "constants)";

/// Loop whose trip count M and condition are known at import, unrolled:
/// iteration i imports the body with the iteration number i, the condition
/// and the carried values bound to its inputs; its carried outputs feed
/// the next iteration, and each scan output is stacked along a new leading
/// dim. The condition the body computes must fold to a constant (it
/// usually compares the iteration number with a bound).
LogicalResult onnx_import::importLoop(NodeImporter &imp) {
  const onnx::GraphProto *body = imp.getGraphAttr("body");
  if (!body)
    return imp.hasError() ? failure()
                          : imp.emitError("missing graph attribute 'body'");
  std::optional<int64_t> tripCount;
  if (imp.hasInput(0)) {
    std::optional<SmallVector<int64_t>> m =
        imp.getConstantInts(0, "M", kLoopNeedsKnownCount);
    if (!m)
      return failure();
    if (m->size() != 1)
      return imp.emitError("input 'M' must hold one element");
    tripCount = std::max<int64_t>(m->front(), 0);
  }
  std::optional<bool> cond;
  if (imp.hasInput(1)) {
    std::optional<DenseElementsAttr> c =
        imp.getConstantInput(1, "cond", kLoopNeedsKnownCount);
    if (!c)
      return failure();
    if (c->getNumElements() != 1)
      return imp.emitError("input 'cond' must hold one element");
    cond = isTrue(*c);
  }
  if (!tripCount && !cond)
    return imp.emitError("a Loop with neither a trip count 'M' nor a "
                         "condition 'cond' never ends");
  int64_t carriedCount = static_cast<int64_t>(imp.getNumInputs()) - 2;
  // Carried values may be sequences (a scripted loop appending to a list).
  SmallVector<GraphValue> carried;
  for (int64_t i = 0; i < carriedCount; ++i) {
    GraphValue v = imp.getGraphValueInput(2 + i);
    if (!v.tensor && !v.sequence)
      return imp.emitError("missing loop-carried input " + Twine(i));
    carried.push_back(v);
  }
  int64_t bodyOutputs = body->output_size();
  int64_t scanCount = bodyOutputs - 1 - carriedCount;
  if (body->input_size() != 2 + carriedCount || scanCount < 0)
    return imp.emitError(
        "body has " + Twine(body->input_size()) + " inputs and " +
        Twine(bodyOutputs) + " outputs; with " + Twine(carriedCount) +
        " loop-carried values it needs " + Twine(2 + carriedCount) +
        " inputs and at least " + Twine(1 + carriedCount) + " outputs");
  if (static_cast<int64_t>(imp.getNumOutputs()) > carriedCount + scanCount)
    return imp.emitError("the node has " + Twine(imp.getNumOutputs()) +
                         " outputs; its body gives " +
                         Twine(carriedCount + scanCount));

  auto tooLong = [&](int64_t iterations) {
    return iterations * std::max(body->node_size(), 1) > kMaxUnrolledNodes;
  };
  auto refuseLength = [&]() {
    return imp.emitError("unrolling this Loop takes more than " +
                         Twine(kMaxUnrolledNodes) + " body nodes (" +
                         Twine(body->node_size()) + " per iteration)");
  };
  // A known trip count is checked before any work.
  if (tripCount && !cond && tooLong(*tripCount))
    return refuseLength();
  OpBuilder &b = imp.getBuilder();
  auto i64Scalar = RankedTensorType::get({}, b.getI64Type());
  auto boolScalar = RankedTensorType::get({}, b.getI1Type());
  std::vector<SmallVector<Value>> scans(scanCount);
  bool running = cond.value_or(true);
  int64_t iteration = 0;
  for (; running && (!tripCount || iteration < *tripCount); ++iteration) {
    if (tooLong(iteration + 1))
      return refuseLength();
    SmallVector<GraphValue> inputs = {
        {imp.createConstant(
             DenseElementsAttr::get(i64Scalar, b.getI64IntegerAttr(iteration))),
         std::nullopt},
        {imp.createConstant(DenseElementsAttr::get(boolScalar, running)),
         std::nullopt}};
    inputs.append(carried);
    SmallVector<GraphValue> outputs;
    if (failed(imp.importSubgraph(*body, "body", inputs, outputs)))
      return failure();
    if (cond) {
      std::optional<DenseElementsAttr> next =
          outputs[0].tensor ? imp.matchConstant(outputs[0].tensor)
                            : std::nullopt;
      if (!next || next->getNumElements() != 1)
        return imp.emitError("the body's condition output '" +
                             body->output(0).name() +
                             "' depends on the data (iteration " +
                             Twine(iteration) + "); " + kLoopNeedsKnownCount);
      running = isTrue(*next);
    }
    carried.assign(outputs.begin() + 1, outputs.begin() + 1 + carriedCount);
    for (int64_t k = 0; k < scanCount; ++k) {
      if (!outputs[1 + carriedCount + k].tensor)
        return imp.emitError("scan output '" +
                             body->output(1 + carriedCount + k).name() +
                             "' is a sequence; scan outputs are tensors");
      scans[k].push_back(outputs[1 + carriedCount + k].tensor);
    }
  }
  for (int64_t i = 0; i < carriedCount; ++i)
    imp.setGraphValueOutput(i, carried[i]);
  for (int64_t k = 0; k < scanCount; ++k) {
    if (!imp.isOutputUsed(carriedCount + k))
      continue;
    if (scans[k].empty())
      return imp.emitError("scan output '" +
                           body->output(1 + carriedCount + k).name() +
                           "' of a Loop that runs no iteration has no shape");
    Value stacked = stackIterations(imp, scans[k], 0,
                                    body->output(1 + carriedCount + k).name());
    if (!stacked)
      return failure();
    imp.setOutput(carriedCount + k, stacked);
  }
  return success();
}

/// Scan (opset 9 and later), unrolled over the sequence: step t imports the
/// body with the states and each scan input's slice t (T - 1 - t when its
/// direction is 1) along its axis; the body's state outputs feed step t + 1,
/// and its scan outputs are stacked along their axes (in reverse for
/// direction 1).
LogicalResult onnx_import::importScan(NodeImporter &imp) {
  const onnx::GraphProto *body = imp.getGraphAttr("body");
  if (!body)
    return imp.hasError() ? failure()
                          : imp.emitError("missing graph attribute 'body'");
  int64_t scanInputs = imp.getIntAttr("num_scan_inputs", -1);
  if (scanInputs < 1 || scanInputs > static_cast<int64_t>(imp.getNumInputs()))
    return imp.emitError("attribute 'num_scan_inputs' must be between 1 and "
                         "the node's input count");
  int64_t states = static_cast<int64_t>(imp.getNumInputs()) - scanInputs;
  int64_t scanOutputs = body->output_size() - states;
  if (body->input_size() != states + scanInputs || scanOutputs < 0)
    return imp.emitError("body has " + Twine(body->input_size()) +
                         " inputs and " + Twine(body->output_size()) +
                         " outputs; with " + Twine(states) + " states and " +
                         Twine(scanInputs) + " scan inputs it needs " +
                         Twine(states + scanInputs) + " inputs and at least " +
                         Twine(states) + " outputs");
  auto listAttr = [&](StringRef name, int64_t count) {
    SmallVector<int64_t> values =
        imp.getIntsAttr(name, SmallVector<int64_t>(count, 0));
    if (static_cast<int64_t>(values.size()) != count) {
      (void)imp.emitError("attribute '" + name + "' should hold " +
                          Twine(count) + " values");
      return SmallVector<int64_t>();
    }
    return values;
  };
  SmallVector<int64_t> inAxes = listAttr("scan_input_axes", scanInputs);
  SmallVector<int64_t> inDirs = listAttr("scan_input_directions", scanInputs);
  SmallVector<int64_t> outAxes = listAttr("scan_output_axes", scanOutputs);
  SmallVector<int64_t> outDirs =
      listAttr("scan_output_directions", scanOutputs);
  if (imp.hasError())
    return failure();
  SmallVector<GraphValue> carried;
  SmallVector<Value> sequences;
  for (int64_t i = 0; i < states + scanInputs; ++i) {
    Value v = imp.getInput(i, i < states ? "initial_state" : "scan_input");
    if (!v)
      return failure();
    if (i < states)
      carried.push_back({v, std::nullopt});
    else
      sequences.push_back(v);
  }
  int64_t length = -1;
  for (auto [j, seq] : llvm::enumerate(sequences)) {
    std::optional<int64_t> axis = normalizeAxis(inAxes[j], getRank(seq));
    if (!axis)
      return imp.emitError("scan_input_axes value " + Twine(inAxes[j]) +
                           " is out of range for " + formatType(seq.getType()));
    inAxes[j] = *axis;
    int64_t size = getShape(seq)[*axis];
    if (length >= 0 && size != length)
      return imp.emitError("the scan inputs have different lengths (" +
                           Twine(length) + " and " + Twine(size) + ")");
    length = size;
  }
  if (length * std::max(body->node_size(), 1) > kMaxUnrolledNodes)
    return imp.emitError("unrolling this Scan takes more than " +
                         Twine(kMaxUnrolledNodes) + " body nodes (" +
                         Twine(body->node_size()) + " per step)");
  OpBuilder &b = imp.getBuilder();
  std::vector<SmallVector<Value>> scans(scanOutputs);
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<GraphValue> inputs(carried);
    for (auto [j, seq] : llvm::enumerate(sequences)) {
      RankedTensorType type = getTensorType(seq);
      SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
      starts[inAxes[j]] = inDirs[j] ? length - 1 - t : t;
      SmallVector<int64_t> shape(type.getShape());
      shape[inAxes[j]] = 1;
      Value slice = imp.create<SliceOp>(type.clone(shape), seq,
                                        b.getDenseI64ArrayAttr(starts),
                                        b.getDenseI64ArrayAttr(steps));
      shape.erase(shape.begin() + inAxes[j]);
      inputs.push_back({imp.createReshape(slice, shape), std::nullopt});
    }
    SmallVector<GraphValue> outputs;
    if (failed(imp.importSubgraph(*body, "body", inputs, outputs)))
      return failure();
    carried.assign(outputs.begin(), outputs.begin() + states);
    for (int64_t k = 0; k < scanOutputs; ++k) {
      if (!outputs[states + k].tensor)
        return imp.emitError("scan output '" + body->output(states + k).name() +
                             "' is a sequence; scan outputs are tensors");
      scans[k].push_back(outputs[states + k].tensor);
    }
  }
  for (int64_t i = 0; i < states; ++i)
    imp.setGraphValueOutput(i, carried[i]);
  for (int64_t k = 0; k < scanOutputs; ++k) {
    if (!imp.isOutputUsed(states + k))
      continue;
    if (scans[k].empty())
      return imp.emitError("scan output '" + body->output(states + k).name() +
                           "' of an empty scan has no shape");
    if (outDirs[k])
      std::reverse(scans[k].begin(), scans[k].end());
    int64_t rank = getRank(scans[k].front()) + 1;
    int64_t axis = outAxes[k] < 0 ? outAxes[k] + rank : outAxes[k];
    Value stacked =
        stackIterations(imp, scans[k], axis, body->output(states + k).name());
    if (!stacked)
      return failure();
    imp.setOutput(states + k, stacked);
  }
  return success();
}

// SequenceMap: the body imported once per element of input_sequence, each
// additional input given as its element at the same position (a sequence
// of the same length) or whole (a tensor); each body output collected into
// a sequence of its own.
LogicalResult onnx_import::importSequenceMap(NodeImporter &imp) {
  const onnx::GraphProto *body = imp.getGraphAttr("body");
  if (!body)
    return imp.hasError() ? failure()
                          : imp.emitError("missing graph attribute 'body'");
  std::optional<SmallVector<Value>> first =
      imp.getSequenceInput(0, "input_sequence");
  if (!first)
    return failure();
  const int64_t length = static_cast<int64_t>(first->size());
  const int64_t inputs = imp.getNumInputs();
  if (body->input_size() != inputs)
    return imp.emitError("body has " + Twine(body->input_size()) +
                         " inputs; it needs one per input of the node (" +
                         Twine(inputs) + ")");
  if (static_cast<int64_t>(imp.getNumOutputs()) > body->output_size())
    return imp.emitError("the node has " + Twine(imp.getNumOutputs()) +
                         " outputs; its body gives " +
                         Twine(body->output_size()));
  SmallVector<GraphValue> extra;
  for (int64_t i = 1; i < inputs; ++i) {
    GraphValue v = imp.getGraphValueInput(i);
    if (!v.tensor && !v.sequence)
      return imp.emitError("additional input " + Twine(i - 1) + " is missing");
    if (v.sequence && static_cast<int64_t>(v.sequence->size()) != length)
      return imp.emitError("additional input " + Twine(i - 1) + " holds " +
                           Twine(v.sequence->size()) +
                           " tensors; input_sequence holds " + Twine(length));
    extra.push_back(v);
  }
  if (length * std::max(body->node_size(), 1) > kMaxUnrolledNodes)
    return imp.emitError("unrolling this SequenceMap takes more than " +
                         Twine(kMaxUnrolledNodes) + " body nodes (" +
                         Twine(body->node_size()) + " per element)");
  std::vector<SmallVector<Value>> mapped(body->output_size());
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<GraphValue> args = {{(*first)[t], std::nullopt}};
    for (const GraphValue &v : extra)
      args.push_back(v.sequence ? GraphValue{(*v.sequence)[t], std::nullopt}
                                : v);
    SmallVector<GraphValue> outputs;
    if (failed(imp.importSubgraph(*body, "body", args, outputs)))
      return failure();
    for (auto [j, out] : llvm::enumerate(outputs)) {
      if (!out.tensor)
        return imp.emitError("body output " + Twine(j) +
                             " is a sequence; SequenceMap's body maps "
                             "tensors to tensors");
      mapped[j].push_back(out.tensor);
    }
  }
  for (unsigned j = 0; j < imp.getNumOutputs(); ++j)
    imp.setSequenceOutput(j, mapped[j]);
  return success();
}
