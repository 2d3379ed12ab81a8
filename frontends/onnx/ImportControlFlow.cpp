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
  SmallVector<Value> outputs;
  if (failed(imp.importSubgraph(*branch, name, {}, outputs)))
    return failure();
  for (auto [i, value] : llvm::enumerate(outputs))
    imp.setOutput(i, value);
  return success();
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
  SmallVector<Value> carried;
  for (int64_t i = 0; i < carriedCount; ++i) {
    Value v = imp.getInput(2 + i, "v_initial");
    if (!v)
      return failure();
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
    SmallVector<Value> inputs = {
        imp.createConstant(
            DenseElementsAttr::get(i64Scalar, b.getI64IntegerAttr(iteration))),
        imp.createConstant(DenseElementsAttr::get(boolScalar, running))};
    inputs.append(carried);
    SmallVector<Value> outputs;
    if (failed(imp.importSubgraph(*body, "body", inputs, outputs)))
      return failure();
    if (cond) {
      std::optional<DenseElementsAttr> next = imp.matchConstant(outputs[0]);
      if (!next || next->getNumElements() != 1)
        return imp.emitError("the body's condition output '" +
                             body->output(0).name() +
                             "' depends on the data (iteration " +
                             Twine(iteration) + "); " + kLoopNeedsKnownCount);
      running = isTrue(*next);
    }
    carried.assign(outputs.begin() + 1, outputs.begin() + 1 + carriedCount);
    for (int64_t k = 0; k < scanCount; ++k)
      scans[k].push_back(outputs[1 + carriedCount + k]);
  }
  for (int64_t i = 0; i < carriedCount; ++i)
    imp.setOutput(i, carried[i]);
  for (int64_t k = 0; k < scanCount; ++k) {
    if (!imp.isOutputUsed(carriedCount + k))
      continue;
    if (scans[k].empty())
      return imp.emitError("scan output '" +
                           body->output(1 + carriedCount + k).name() +
                           "' of a Loop that runs no iteration has no shape");
    SmallVector<Value> rows;
    RankedTensorType first = getTensorType(scans[k].front());
    for (Value v : scans[k]) {
      if (getTensorType(v) != first)
        return imp.emitError("scan output '" +
                             body->output(1 + carriedCount + k).name() +
                             "' changes from " + formatType(first) + " to " +
                             formatType(v.getType()) + " between iterations");
      SmallVector<int64_t> shape = {1};
      shape.append(first.getShape().begin(), first.getShape().end());
      rows.push_back(imp.createReshape(v, shape));
    }
    Value stacked =
        rows.size() == 1
            ? rows.front()
            : imp.createInferred<ConcatOp>(rows, b.getI64IntegerAttr(0));
    if (!stacked)
      return failure();
    imp.setOutput(carriedCount + k, stacked);
  }
  return success();
}
