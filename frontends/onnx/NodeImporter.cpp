//===- NodeImporter.cpp - What an op importer sees of one node ------------===//
#include "frontends/onnx/NodeImporter.h"
#include "frontends/onnx/OnnxModelLoader.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ElementTypes.h"
#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// Parameters up to this many elements may be read as constants (e.g. a
/// float initializer feeding Range or ConstantOfShape).
static constexpr int64_t kMaxParamElementsRead = 1 << 16;

NodeImporter::NodeImporter(GraphState &state, const onnx::NodeProto &node,
                           int index, StringRef scope)
    : state(state), node(node), index(index), scope(scope.str()),
      loc(NameLoc::get(StringAttr::get(
          &state.ctx, node.name().empty() ? node.op_type() : node.name()))) {}

std::string NodeImporter::describe() const {
  std::string where = node.name().empty() ? "node #" + std::to_string(index)
                                          : "node '" + node.name() + "'";
  where += " (" + node.op_type() + ")";
  return scope.empty() ? where : where + " in " + scope;
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

bool NodeImporter::hasInput(unsigned i) const {
  return i < static_cast<unsigned>(node.input_size()) && !node.input(i).empty();
}

Value NodeImporter::getOptionalInput(unsigned i) {
  if (!hasInput(i))
    return {};
  // The graph walk checked that every input is defined.
  Value value = state.values.lookup(node.input(i));
  if (!value)
    (void)emitError("input '" + node.input(i) + "' is " +
                    (state.emptyOptionals.contains(node.input(i))
                         ? "an empty optional"
                         : "a sequence") +
                    "; " + getOpType() + " takes tensors here");
  return value;
}

std::optional<SmallVector<Value>>
NodeImporter::getSequenceInput(unsigned i, StringRef what) {
  if (!hasInput(i)) {
    (void)emitError("missing required input '" + what + "'");
    return std::nullopt;
  }
  auto it = state.sequences.find(node.input(i));
  if (it == state.sequences.end()) {
    (void)emitError("input '" + what + "' ('" + node.input(i) +
                    "') is a tensor, not a sequence");
    return std::nullopt;
  }
  return it->second;
}

GraphValue NodeImporter::getGraphValueInput(unsigned i) {
  if (!hasInput(i))
    return {};
  auto it = state.sequences.find(node.input(i));
  if (it != state.sequences.end())
    return {Value(), it->second};
  return {state.values.lookup(node.input(i)), std::nullopt};
}

Value NodeImporter::getInput(unsigned i, StringRef what) {
  if (!hasInput(i)) {
    (void)emitError("missing required input '" + what + "'");
    return {};
  }
  return getOptionalInput(i);
}

LogicalResult NodeImporter::checkSameElementType(Value lhs, Value rhs,
                                                 StringRef lhsName,
                                                 StringRef rhsName) {
  if (getElementType(lhs) == getElementType(rhs))
    return success();
  return emitError("inputs '" + lhsName + "' (" + formatType(lhs.getType()) +
                   ") and '" + rhsName + "' (" + formatType(rhs.getType()) +
                   ") have different element types");
}

std::string onnx_import::describeUnloadedInitializer(llvm::StringRef name) {
  return "initializer '" + name.str() +
         "' is stored as external data, which a structure-only import does "
         "not load";
}

std::optional<DenseElementsAttr> NodeImporter::matchConstant(Value value) {
  Attribute attr;
  if (matchPattern(value, m_Constant(&attr)))
    if (auto dense = dyn_cast<DenseElementsAttr>(attr))
      return dense;
  if (auto param = value.getDefiningOp<weft::ParamOp>()) {
    const ParamEntry *entry = state.params.lookup(param.getName());
    if (entry && entry->numElements() <= kMaxParamElementsRead) {
      if (!entry->hasData()) {
        (void)emitError(describeUnloadedInitializer(entry->name) +
                        "; weft needs its value at import time");
        return std::nullopt;
      }
      return DenseElementsAttr::getFromRawBuffer(
          entry->getTensorType(state.ctx),
          ArrayRef<char>(reinterpret_cast<const char *>(entry->data.data()),
                         entry->data.size()));
    }
  }
  return std::nullopt;
}

Value NodeImporter::getNumberInput(unsigned i, StringRef what) {
  Value value = getInput(i, what);
  if (!value)
    return Value();
  Type type = getElementTypeOrSelf(value.getType());
  if (type.isInteger(1)) {
    (void)emitError(getOpType() + " takes numbers, not " + formatType(type));
    return Value();
  }
  return value;
}

std::optional<DenseElementsAttr>
NodeImporter::getConstantInput(unsigned i, StringRef what, StringRef why) {
  Value value = getInput(i, what);
  if (!value)
    return std::nullopt;
  if (std::optional<DenseElementsAttr> attr = matchConstant(value))
    return attr;
  (void)emitError("input '" + what + "' is not a constant; " + why);
  return std::nullopt;
}

std::optional<SmallVector<int64_t>>
NodeImporter::getConstantInts(unsigned i, StringRef what, StringRef why) {
  std::optional<DenseElementsAttr> attr = getConstantInput(i, what, why);
  if (!attr)
    return std::nullopt;
  auto intType = dyn_cast<IntegerType>(attr->getElementType());
  if (!intType) {
    (void)emitError("input '" + what + "' must be an integer tensor, not " +
                    formatType(attr->getType()));
    return std::nullopt;
  }
  SmallVector<int64_t> values;
  values.reserve(attr->getNumElements());
  bool zeroExtend = intType.isUnsigned() || intType.getWidth() == 1;
  for (const APInt &v : attr->getValues<APInt>())
    values.push_back(zeroExtend ? static_cast<int64_t>(v.getZExtValue())
                                : v.getSExtValue());
  return values;
}

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

bool NodeImporter::isOutputUsed(unsigned i) const {
  return i < static_cast<unsigned>(node.output_size()) &&
         !node.output(i).empty() && state.usedNames.contains(node.output(i));
}

void NodeImporter::setOutput(unsigned i, Value value) {
  if (i >= static_cast<unsigned>(node.output_size()) ||
      node.output(i).empty() || !value)
    return;
  if (state.sequences.count(node.output(i)) ||
      !state.values.try_emplace(node.output(i), value).second)
    (void)emitError("output '" + node.output(i) +
                    "' is already defined elsewhere in the graph");
}

void NodeImporter::setSequenceOutput(unsigned i, ArrayRef<Value> tensors) {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return;
  if (state.values.count(node.output(i)) ||
      !state.sequences.try_emplace(node.output(i), SmallVector<Value>(tensors))
           .second)
    (void)emitError("output '" + node.output(i) +
                    "' is already defined elsewhere in the graph");
}

void NodeImporter::setEmptyOptionalOutput(unsigned i) {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return;
  if (state.values.count(node.output(i)) ||
      state.sequences.count(node.output(i)) ||
      !state.emptyOptionals.insert(node.output(i)).second)
    (void)emitError("output '" + node.output(i) +
                    "' is already defined elsewhere in the graph");
}

bool NodeImporter::isEmptyOptionalInput(unsigned i) const {
  return !hasInput(i) || state.emptyOptionals.contains(node.input(i));
}

void NodeImporter::setGraphValueOutput(unsigned i, const GraphValue &value) {
  if (value.sequence)
    setSequenceOutput(i, *value.sequence);
  else
    setOutput(i, value.tensor);
}

Value NodeImporter::getDrawStep() {
  if (isTrainingStep())
    return getStepCounter();
  auto type = RankedTensorType::get({}, getBuilder().getI64Type());
  return createConstant(
      DenseElementsAttr::get(type, getBuilder().getI64IntegerAttr(0)));
}

Value NodeImporter::getStepCounter() {
  if (!state.stepCounter) {
    auto type = RankedTensorType::get({}, getBuilder().getI64Type());
    auto param = ParamOp::create(getBuilder(), loc, type, "weft.step");
    param->setAttr("weft.role", getBuilder().getStringAttr("step"));
    state.stepCounter = param;
  }
  return state.stepCounter;
}

LogicalResult NodeImporter::createParamUpdate(Value param, Value value,
                                              StringRef what) {
  auto source = param.getDefiningOp<ParamOp>();
  if (!source || !value)
    return failure();
  if (!state.updatedParams.insert(source.getName()).second)
    return emitError("input '" + what + "' ('" + source.getName() +
                     "') is updated by another node too; weft keeps one "
                     "running statistic per parameter");
  // A parameter the forward updates is a buffer (PyTorch's running
  // statistics): never trained, even where the loss reads it (the
  // running_var that a fused Conv-BN QAT module folds into its weights).
  source.setFrozen(true);
  ParamUpdateOp::create(getBuilder(), loc, source.getName(), value);
  return success();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

static const char *getAttrTypeName(int type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return "float";
  case onnx::AttributeProto::INT:
    return "int";
  case onnx::AttributeProto::STRING:
    return "string";
  case onnx::AttributeProto::TENSOR:
    return "tensor";
  case onnx::AttributeProto::GRAPH:
    return "graph";
  case onnx::AttributeProto::FLOATS:
    return "floats";
  case onnx::AttributeProto::INTS:
    return "ints";
  case onnx::AttributeProto::STRINGS:
    return "strings";
  default:
    return "other";
  }
}

const onnx::AttributeProto *NodeImporter::findAttr(StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool NodeImporter::hasAttr(StringRef name) const {
  return findAttr(name) != nullptr;
}

const onnx::AttributeProto *
NodeImporter::getTypedAttr(StringRef name,
                           onnx::AttributeProto::AttributeType type) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return nullptr;
  // Old exporters leave `type` unset; trust the field that is filled then.
  if (attr->type() != type && attr->type() != onnx::AttributeProto::UNDEFINED) {
    (void)emitError("attribute '" + name + "' should be of type " +
                    getAttrTypeName(type) + ", not " +
                    getAttrTypeName(attr->type()));
    return nullptr;
  }
  return attr;
}

Type NodeImporter::getElementTypeAttr(StringRef name) {
  int32_t code = static_cast<int32_t>(getIntAttr(name, 0));
  WeftDType dtype;
  if (!convertOnnxDataType(code, dtype)) {
    (void)emitUnsupportedAttr(name, getOnnxDataTypeName(code),
                              "weft has no such element type");
    return {};
  }
  return getElementTypeOf(getContext(), dtype);
}

std::optional<int64_t> NodeImporter::getAxisAttr(Value of,
                                                 int64_t defaultAxis) {
  int64_t axis = getIntAttr("axis", defaultAxis);
  std::optional<int64_t> normalized = normalizeAxis(axis, getRank(of));
  if (!normalized)
    (void)emitError("attribute 'axis' = " + Twine(axis) +
                    " is out of range for " + formatType(of.getType()));
  return normalized;
}

int64_t NodeImporter::getIntAttr(StringRef name, int64_t defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::INT);
  return attr ? attr->i() : defaultValue;
}

double onnx_import::widenFloat(float f) {
  if (!std::isfinite(f))
    return f;
  char buffer[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, f);
    if (std::strtof(buffer, nullptr) == f)
      return std::strtod(buffer, nullptr);
  }
  return f;
}

double NodeImporter::getFloatAttr(StringRef name, double defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::FLOAT);
  return attr ? widenFloat(attr->f()) : defaultValue;
}

std::string NodeImporter::getStringAttr(StringRef name,
                                        StringRef defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::STRING);
  return attr ? attr->s() : defaultValue.str();
}

SmallVector<int64_t> NodeImporter::getIntsAttr(StringRef name,
                                               ArrayRef<int64_t> defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::INTS);
  if (!attr)
    return SmallVector<int64_t>(defaultValue);
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

SmallVector<float> NodeImporter::getFloatsAttr(StringRef name) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::FLOATS);
  if (!attr)
    return {};
  return SmallVector<float>(attr->floats().begin(), attr->floats().end());
}

SmallVector<std::string> NodeImporter::getStringsAttr(StringRef name) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::STRINGS);
  if (!attr)
    return {};
  return SmallVector<std::string>(attr->strings().begin(),
                                  attr->strings().end());
}

const onnx::TensorProto *NodeImporter::getTensorAttr(StringRef name) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::TENSOR);
  return attr ? &attr->t() : nullptr;
}

const onnx::GraphProto *NodeImporter::getGraphAttr(StringRef name) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::GRAPH);
  return attr && attr->has_g() ? &attr->g() : nullptr;
}

//===----------------------------------------------------------------------===//
// Graphs and subgraphs
//===----------------------------------------------------------------------===//

/// Records `message` as the graph's error unless one is recorded already.
static LogicalResult failWith(GraphState &state, const Twine &message) {
  if (state.error.empty())
    state.error = message.str();
  return failure();
}

LogicalResult onnx_import::importGraphNodes(GraphState &state,
                                            const onnx::GraphProto &graph,
                                            StringRef where) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    NodeImporter imp(state, node, i, where);
    for (const std::string &input : node.input()) {
      if (state.unloadedInitializers.contains(input))
        return failWith(state, imp.describe() + ": input " +
                                   describeUnloadedInitializer(input) +
                                   "; weft needs the values of integer and "
                                   "bool initializers at import time (they "
                                   "become constants)");
      if (!input.empty() && !state.values.count(input) &&
          !state.sequences.count(input) && !state.emptyOptionals.count(input))
        return failWith(state, imp.describe() + ": input '" + input +
                                   "' is not produced by an earlier node, an "
                                   "initializer or a graph input (is the graph "
                                   "topologically sorted?)");
    }
    OpImportFn import = lookupOpImporter(node.op_type());
    if (!import)
      return failWith(state, imp.describe() + ": unsupported ONNX op");
    if (failed(import(imp)) || imp.hasError())
      return failWith(state, imp.describe() + ": import failed");
    for (int j = 0; j < node.output_size(); ++j)
      if (imp.isOutputUsed(j) && !state.values.count(node.output(j)) &&
          !state.sequences.count(node.output(j)) &&
          !state.emptyOptionals.count(node.output(j)))
        return failWith(state, imp.describe() + ": output '" + node.output(j) +
                                   "' is not supported");
  }
  return success();
}

void onnx_import::collectUsedNames(const onnx::GraphProto &graph,
                                   llvm::StringSet<> &names) {
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &input : node.input())
      if (!input.empty())
        names.insert(input);
    for (const onnx::AttributeProto &attr : node.attribute()) {
      auto visit = [&](const onnx::GraphProto &sub) {
        collectUsedNames(sub, names);
        for (const onnx::ValueInfoProto &output : sub.output())
          names.insert(output.name());
      };
      if (attr.has_g())
        visit(attr.g());
      for (const onnx::GraphProto &sub : attr.graphs())
        visit(sub);
    }
  }
}

LogicalResult
NodeImporter::importSubgraph(const onnx::GraphProto &graph, StringRef what,
                             ArrayRef<GraphValue> inputs,
                             SmallVectorImpl<GraphValue> &outputs) {
  std::string scope = what.str() + " of " + describe();
  if (graph.input_size() != static_cast<int>(inputs.size()))
    return emitError(what + " has " + Twine(graph.input_size()) +
                     " inputs, expected " + Twine(inputs.size()));
  // The names the subgraph defines are its own: they leave the scope when
  // it is done (a loop body defines them again in its next iteration).
  SmallVector<std::string> local;
  auto define = [&](const std::string &name, const GraphValue &value,
                    const Twine &what) -> LogicalResult {
    bool taken = state.values.count(name) || state.sequences.count(name);
    if (!taken) {
      if (value.sequence)
        state.sequences[name] = *value.sequence;
      else
        state.values[name] = value.tensor;
    }
    if (taken)
      return emitError(what + " is already defined elsewhere in the graph");
    local.push_back(name);
    return success();
  };
  llvm::scope_exit leaveScope([&] {
    auto forget = [&](const std::string &name) {
      state.values.erase(name);
      state.sequences.erase(name);
      state.emptyOptionals.erase(name);
    };
    for (const std::string &name : local)
      forget(name);
    for (const onnx::NodeProto &node : graph.node())
      for (const std::string &name : node.output())
        forget(name);
  });
  for (auto [input, value] : llvm::zip(graph.input(), inputs))
    if (failed(define(input.name(), value,
                      "input '" + input.name() + "' of " + scope)))
      return failure();
  // A subgraph's initializers are constants of it (whatever their type:
  // nothing trains them, as nothing outside it can name them).
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    std::string name = "initializer '" + tensor.name() + "' in " + scope;
    TensorData data;
    std::string message;
    if (!decodeTensor(tensor, state.modelDir, name, data, message))
      return emitError(message);
    Value value = ConstantOp::create(
        getBuilder(), NameLoc::get(StringAttr::get(&state.ctx, tensor.name())),
        data.toAttr(state.ctx));
    if (failed(define(tensor.name(), {value, std::nullopt}, name)))
      return failure();
  }
  if (failed(importGraphNodes(state, graph, scope)))
    return failure();
  for (const onnx::ValueInfoProto &output : graph.output()) {
    if (Value value = state.values.lookup(output.name())) {
      outputs.push_back({value, std::nullopt});
      continue;
    }
    auto sequence = state.sequences.find(output.name());
    if (sequence == state.sequences.end())
      return emitError("output '" + output.name() + "' of " + what +
                       " is not produced by any of its nodes, its "
                       "initializers or the outer graph");
    outputs.push_back({Value(), sequence->second});
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

LogicalResult NodeImporter::emitError(const Twine &message) {
  if (state.error.empty())
    state.error = describe() + ": " + message.str();
  return failure();
}

LogicalResult NodeImporter::emitUnsupportedAttr(StringRef name,
                                                const Twine &value,
                                                const Twine &reason) {
  std::string why = reason.str();
  return emitError("attribute '" + name + "' = " + value + " is not supported" +
                   (why.empty() ? "" : ": " + why));
}

//===----------------------------------------------------------------------===//
// Building ops
//===----------------------------------------------------------------------===//

Type NodeImporter::getPlaceholderType() { return NoneType::get(&state.ctx); }

/// When `diagnostics` is an ODS type-constraint failure ("'weft.x' op
/// operand #1 must be ... of ... values, but got '...'"), the element type
/// the op refused.
static std::optional<std::string>
getRejectedElementType(Operation *op, StringRef diagnostics) {
  if (!diagnostics.contains(" must be ") ||
      !diagnostics.contains(", but got '"))
    return std::nullopt;
  for (bool isOperand : {true, false}) {
    StringRef tail = diagnostics;
    if (!tail.consume_front(("'" + op->getName().getStringRef() + "' op " +
                             (isOperand ? "operand #" : "result #"))
                                .str()))
      continue;
    unsigned index;
    if (tail.consumeInteger(10, index))
      continue;
    unsigned count = isOperand ? op->getNumOperands() : op->getNumResults();
    if (index >= count)
      continue;
    Type type = isOperand ? op->getOperand(index).getType()
                          : op->getResult(index).getType();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << getElementTypeOrSelf(type);
    return text;
  }
  return std::nullopt;
}

SmallVector<Value> NodeImporter::finishOp(Operation *op, bool inferTypes) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&state.ctx, [&](Diagnostic &diag) {
    if (!diagnostics.empty())
      diagnostics += "; ";
    diagnostics += diag.str();
    for (Diagnostic &note : diag.getNotes())
      if (!StringRef(note.str()).starts_with("see current operation"))
        diagnostics += " (" + note.str() + ")";
    return success();
  });
  auto fail = [&](StringRef what) {
    std::string opName = op->getName().getStringRef().str();
    std::optional<std::string> badType =
        getRejectedElementType(op, diagnostics);
    op->erase();
    std::string detail = diagnostics.empty() ? what.str() : diagnostics;
    if (badType)
      (void)emitError("element type " + *badType + " is not supported by " +
                      opName + " (" + detail + ")");
    else
      (void)emitError("cannot build " + opName + ": " + detail);
    return SmallVector<Value>();
  };
  if (hasError())
    return fail("an earlier error");

  if (inferTypes) {
    auto inferable = cast<InferTypeOpInterface>(op);
    SmallVector<Type> types;
    if (failed(inferable.inferReturnTypes(
            &state.ctx, op->getLoc(), op->getOperands(),
            op->getAttrDictionary(), op->getPropertiesStorage(),
            op->getRegions(), types)) ||
        types.size() != op->getNumResults())
      return fail("its shape rule rejects the operands");
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
  }
  for (Type type : op->getResultTypes()) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return fail("the result type " + formatType(type) + " is not static");
  }
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return fail("the op does not verify");

  SmallVector<Value> results;
  if (succeeded(state.builder.tryFold(op, results)) && !results.empty()) {
    op->erase();
    return results;
  }
  return SmallVector<Value>(op->getResults());
}

Value NodeImporter::createConstant(DenseElementsAttr value) {
  auto op = weft::ConstantOp::create(getBuilder(), loc, value);
  return single(finishOp(op.getOperation(), /*inferTypes=*/false));
}

Value NodeImporter::createScalar(Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat v(value);
    bool losesInfo;
    v.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &losesInfo);
    return createConstant(DenseElementsAttr::get(type, ArrayRef<APFloat>(v)));
  }
  auto intType = cast<IntegerType>(elementType);
  APInt v(intType.getWidth(), static_cast<int64_t>(value),
          /*isSigned=*/!intType.isUnsigned() && intType.getWidth() > 1);
  return createConstant(DenseElementsAttr::get(type, ArrayRef<APInt>(v)));
}

Value NodeImporter::createReshape(Value value, ArrayRef<int64_t> shape) {
  if (!value)
    return {};
  RankedTensorType type = getTensorType(value);
  if (type.getShape() == shape)
    return value;
  return create<weft::ReshapeOp>(type.clone(shape), value);
}

Value NodeImporter::createCast(Value value, Type elementType) {
  if (!value)
    return {};
  RankedTensorType type = getTensorType(value);
  if (type.getElementType() == elementType)
    return value;
  return create<weft::CastOp>(type.clone(elementType), value);
}

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

RankedTensorType onnx_import::getTensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

std::string onnx_import::formatType(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    for (int64_t d : tensor.getShape())
      os << d << "x";
    os << tensor.getElementType();
  } else {
    os << type;
  }
  return text;
}

std::string onnx_import::formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

std::optional<SmallVector<int64_t>>
onnx_import::normalizeAxes(NodeImporter &imp, ArrayRef<int64_t> axes,
                           int64_t rank, StringRef what) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    std::optional<int64_t> normalized = weft::normalizeAxis(axis, rank);
    if (!normalized) {
      (void)imp.emitError(what + " value " + std::to_string(axis) +
                          " is out of range for rank " + std::to_string(rank));
      return std::nullopt;
    }
    result.push_back(*normalized);
  }
  llvm::sort(result);
  if (std::adjacent_find(result.begin(), result.end()) != result.end()) {
    (void)imp.emitError(what + " " + formatShape(axes) + " name an axis twice");
    return std::nullopt;
  }
  return result;
}
