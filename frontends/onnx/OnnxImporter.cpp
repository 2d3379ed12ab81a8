//===- OnnxImporter.cpp - ONNX graph to func.func @main of weft ops -------===//
//
// The graph walk: checks that need no op semantics come first (every
// unsupported op listed at once, the opset, the input shapes), then the
// function is built: arguments for the graph inputs, weft.param /
// weft.constant for the initializers, one import function per node (which
// folds what it can as it goes), and the graph outputs returned. Ops left
// unused by folding are erased, and so are the parameters they read.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"

#include "frontends/onnx/OnnxModelLoader.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {

/// Imports one ModelProto into a module.
class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const onnx::ModelProto &model,
                const OnnxImportOptions &opts, std::string modelDir)
      : ctx(ctx), model(model), graph(model.graph()), opts(opts),
        modelDir(std::move(modelDir)) {}

  std::optional<OnnxImportResult> run(std::string &error);

private:
  /// Everything that needs no graph walk: ops, opset, inputs.
  LogicalResult checkModel();
  LogicalResult checkOps();
  LogicalResult checkOpset();
  LogicalResult resolveInputTypes();
  void createFunction(GraphState &state, mlir::ModuleOp module);
  LogicalResult importInitializers(GraphState &state);
  LogicalResult importNodes(GraphState &state);
  LogicalResult finishFunction(GraphState &state);
  void eraseDeadOps(ParamTable &params);
  LogicalResult verifyModule(mlir::ModuleOp module);
  LogicalResult fail(const Twine &message) {
    if (error.empty())
      error = message.str();
    return failure();
  }

  MLIRContext &ctx;
  const onnx::ModelProto &model;
  const onnx::GraphProto &graph;
  const OnnxImportOptions &opts;
  std::string modelDir;
  std::string error;

  llvm::StringSet<> initializerNames;
  /// Graph inputs that become arguments, with their types.
  SmallVector<std::pair<std::string, RankedTensorType>> arguments;
  func::FuncOp func;
};

} // namespace

/// "[1,?,3]"-style text of a declared ONNX shape.
static std::string describeDims(const onnx::TensorShapeProto &shape) {
  std::string text = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension &dim = shape.dim(i);
    text += i ? "," : "";
    if (dim.has_dim_value())
      text += std::to_string(dim.dim_value());
    else if (dim.has_dim_param() && !dim.dim_param().empty())
      text += dim.dim_param();
    else
      text += "?";
  }
  return text + "]";
}

/// Lists the nodes of `graph` and of its subgraphs (If branches, Loop
/// bodies) whose ops weft lacks, as "  node 'x': Op" lines; `scope` names
/// the subgraph (" in then_branch of node 'y'").
static void listUnsupportedOps(const onnx::GraphProto &graph,
                               const std::string &scope,
                               std::vector<std::string> &unsupported) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    std::string where = node.name().empty() ? "node #" + std::to_string(i)
                                            : "node '" + node.name() + "'";
    bool known =
        isDefaultDomain(node.domain()) && lookupOpImporter(node.op_type());
    if (!known) {
      std::string op = isDefaultDomain(node.domain())
                           ? node.op_type()
                           : node.domain() + ":" + node.op_type();
      unsupported.push_back("  " + where + scope + ": " + op);
    }
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::string inner = " in " + attr.name() + " of " + where + " (" +
                          node.op_type() + ")" + scope;
      if (attr.has_g())
        listUnsupportedOps(attr.g(), inner, unsupported);
      for (const onnx::GraphProto &sub : attr.graphs())
        listUnsupportedOps(sub, inner, unsupported);
    }
  }
}

LogicalResult GraphImporter::checkOps() {
  std::vector<std::string> unsupported;
  listUnsupportedOps(graph, "", unsupported);
  if (unsupported.empty())
    return success();
  std::string message =
      "unsupported ONNX ops (" + std::to_string(unsupported.size()) + "):";
  for (const std::string &line : unsupported)
    message += "\n" + line;
  return fail(message);
}

LogicalResult GraphImporter::checkOpset() {
  int64_t opset = getDefaultOpsetVersion(model);
  if (opset < 0)
    return fail("the model imports no opset of the default ONNX domain");
  if (opset < kMinOpset || opset > kMaxOpset)
    return fail("the model uses opset " + Twine(opset) +
                " of the default ONNX domain; weft supports opsets " +
                Twine(kMinOpset) + " to " + Twine(kMaxOpset) +
                " (re-export it, e.g. with torch.onnx.export(..., "
                "opset_version=17))");
  return success();
}

/// Types of the graph inputs that are not initializers, with --input-shape
/// applied. Every problem with every input is reported at once.
LogicalResult GraphImporter::resolveInputTypes() {
  std::vector<std::string> problems;
  llvm::StringSet<> inputNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    const std::string &name = input.name();
    if (initializerNames.contains(name))
      continue;
    inputNames.insert(name);
    if (!input.type().has_tensor_type()) {
      problems.push_back("graph input '" + name +
                         "' is not a tensor; weft supports tensor inputs only");
      continue;
    }
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    WeftDType dtype;
    if (!convertOnnxDataType(tensor.elem_type(), dtype)) {
      problems.push_back("graph input '" + name + "' has element type " +
                         getOnnxDataTypeName(tensor.elem_type()) +
                         ", which weft does not support");
      continue;
    }
    Type elementType = getElementTypeOf(ctx, dtype);
    auto given = opts.inputShapes.find(name);
    if (given != opts.inputShapes.end()) {
      if (tensor.has_shape() &&
          static_cast<size_t>(tensor.shape().dim_size()) !=
              given->second.size()) {
        problems.push_back("--input-shape " + name + " has rank " +
                           std::to_string(given->second.size()) +
                           " but the input has rank " +
                           std::to_string(tensor.shape().dim_size()) + " " +
                           describeDims(tensor.shape()));
        continue;
      }
      arguments.push_back(
          {name, RankedTensorType::get(given->second, elementType)});
      continue;
    }
    if (!tensor.has_shape()) {
      problems.push_back("graph input '" + name +
                         "' has no shape; give one with --input-shape " + name +
                         "=D0xD1x...");
      continue;
    }
    SmallVector<int64_t> shape;
    for (int i = 0; i < tensor.shape().dim_size(); ++i) {
      const onnx::TensorShapeProto::Dimension &dim = tensor.shape().dim(i);
      if (dim.has_dim_value() && dim.dim_value() >= 0) {
        shape.push_back(dim.dim_value());
        continue;
      }
      std::string what = dim.has_dim_param() && !dim.dim_param().empty()
                             ? "symbolic dim " + std::to_string(i) + " ('" +
                                   dim.dim_param() + "')"
                             : "unknown dim " + std::to_string(i);
      problems.push_back("graph input '" + name + "' " +
                         describeDims(tensor.shape()) + " has " + what +
                         "; fix it with --input-shape " + name + "=D0xD1x...");
      break;
    }
    if (shape.size() == static_cast<size_t>(tensor.shape().dim_size()))
      arguments.push_back({name, RankedTensorType::get(shape, elementType)});
  }
  for (const auto &[name, shape] : opts.inputShapes) {
    if (inputNames.contains(name))
      continue;
    std::string inputs;
    for (const onnx::ValueInfoProto &input : graph.input())
      if (inputNames.contains(input.name()))
        inputs += (inputs.empty() ? "" : ", ") + input.name();
    std::string why = initializerNames.contains(name) ? "it is an initializer"
                      : inputs.empty() ? "the graph has no inputs"
                                       : "inputs: " + inputs;
    problems.push_back("--input-shape names '" + name +
                       "', which is not an input of the graph (" + why + ")");
  }
  if (problems.empty())
    return success();
  std::string message = problems.front();
  for (size_t i = 1; i < problems.size(); ++i)
    message += "\n" + problems[i];
  return fail(message);
}

/// Float initializers become weft.param (data in the ParamTable), the others
/// weft.constant. A structure-only import reads no external data: float
/// initializers stored so get data-less entries, the others no value at all
/// (a node that reads one fails).
LogicalResult GraphImporter::importInitializers(GraphState &state) {
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    const std::string &name = tensor.name();
    std::string what = "initializer '" + name + "'";
    TensorData data;
    std::string message;
    bool loaded = opts.loadExternalData || !isExternalTensor(tensor);
    if (loaded ? !decodeTensor(tensor, modelDir, what, data, message)
               : !decodeExternalTensorType(tensor, what, data, message))
      return fail(message);
    Location loc = NameLoc::get(StringAttr::get(&ctx, name));
    Value value;
    Type elementType = getElementTypeOf(ctx, data.dtype);
    if (!loaded && !isa<FloatType>(elementType)) {
      if (state.values.count(name) ||
          !state.unloadedInitializers.insert(name).second)
        return fail(what + " is defined twice");
      continue;
    }
    if (isa<FloatType>(elementType)) {
      ParamEntry entry =
          loaded
              ? ParamEntry{name, data.dtype, data.shape, std::move(data.bytes)}
              : ParamEntry::withoutData(name, data.dtype, data.shape);
      RankedTensorType type = entry.getTensorType(ctx);
      if (!state.params.add(std::move(entry)))
        return fail(what + " is defined twice");
      value = weft::ParamOp::create(state.builder, loc, type, name);
    } else {
      value = weft::ConstantOp::create(state.builder, loc, data.toAttr(ctx));
    }
    if (state.unloadedInitializers.contains(name) ||
        !state.values.try_emplace(name, value).second)
      return fail(what + " is defined twice");
  }
  return success();
}

LogicalResult GraphImporter::importNodes(GraphState &state) {
  collectUsedNames(graph, state.usedNames);
  for (const onnx::ValueInfoProto &output : graph.output())
    state.usedNames.insert(output.name());
  if (failed(importGraphNodes(state, graph)))
    return fail(state.error.empty() ? "import failed" : state.error);
  return success();
}

LogicalResult GraphImporter::finishFunction(GraphState &state) {
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    if (state.unloadedInitializers.contains(output.name()))
      return fail("graph output '" + output.name() +
                  "': " + describeUnloadedInitializer(output.name()));
    Value value = state.values.lookup(output.name());
    if (!value && state.emptyOptionals.count(output.name()))
      return fail("graph output '" + output.name() +
                  "' is an empty optional; weft's bundles return tensors");
    if (!value && state.sequences.count(output.name()))
      return fail("graph output '" + output.name() +
                  "' is a sequence; weft's bundles return tensors (join it "
                  "with ConcatFromSequence, e.g. torch.stack in the model)");
    if (!value)
      return fail("graph output '" + output.name() +
                  "' is not produced by any node, initializer or input");
    results.push_back(value);
  }
  if (results.empty())
    return fail("the graph has no outputs");
  func::ReturnOp::create(state.builder, func.getLoc(), results);
  SmallVector<Type> argTypes(func.getArgumentTypes());
  func.setType(FunctionType::get(&ctx, argTypes, TypeRange(results)));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "weft.name", StringAttr::get(&ctx, output.name()));
  return success();
}

/// Erases ops nothing reads any more (constants folded into others,
/// unused initializers), then the parameters no weft.param names.
void GraphImporter::eraseDeadOps(ParamTable &params) {
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  llvm::StringSet<> used;
  func.walk([&](weft::ParamOp param) { used.insert(param.getName()); });
  params.retainIf(
      [&](const ParamEntry &entry) { return used.contains(entry.name); });
}

LogicalResult GraphImporter::checkModel() {
  if (failed(checkOps()) || failed(checkOpset()))
    return failure();
  if (graph.sparse_initializer_size() > 0)
    return fail("sparse initializer '" +
                graph.sparse_initializer(0).values().name() +
                "' is not supported");
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializerNames.insert(tensor.name());
  return resolveInputTypes();
}

/// Creates `func.func @main` with one argument per non-initializer input.
void GraphImporter::createFunction(GraphState &state, ModuleOp module) {
  OpBuilder &builder = state.builder;
  builder.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> argTypes;
  for (const auto &arg : arguments)
    argTypes.push_back(arg.second);
  func = func::FuncOp::create(builder, module.getLoc(), "main",
                              builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(arguments)) {
    func.setArgAttr(i, "weft.name", builder.getStringAttr(arg.first));
    state.values[arg.first] = entry->getArgument(i);
  }
  builder.setInsertionPointToEnd(entry);
}

LogicalResult GraphImporter::verifyModule(ModuleOp module) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    diagnostics += (diagnostics.empty() ? "" : "\n") + diag.str();
    return success();
  });
  if (failed(mlir::verify(module)))
    return fail("the imported module does not verify (a weft bug):\n" +
                diagnostics);
  return success();
}

std::optional<OnnxImportResult> GraphImporter::run(std::string &errorOut) {
  OnnxImportResult result;
  Location loc = NameLoc::get(
      StringAttr::get(&ctx, graph.name().empty() ? "main" : graph.name()));
  result.module = ModuleOp::create(loc);
  GraphState state(ctx, result.params, modelDir, getDefaultOpsetVersion(model));
  state.trainingStep = opts.trainingStep;
  if (failed(checkModel())) {
    errorOut = error;
    return std::nullopt;
  }
  createFunction(state, *result.module);
  if (failed(importInitializers(state)) || failed(importNodes(state)) ||
      failed(finishFunction(state))) {
    errorOut = error;
    return std::nullopt;
  }
  eraseDeadOps(result.params);
  if (failed(verifyModule(*result.module))) {
    errorOut = error;
    return std::nullopt;
  }
  return result;
}

std::optional<OnnxImportResult>
weft::importOnnxFile(MLIRContext &ctx, StringRef path,
                     const OnnxImportOptions &opts, std::string &error) {
  ctx.loadDialect<weft::WeftDialect, func::FuncDialect>();
  auto withPath = [&](const std::string &message) {
    error = path.str() + ": " + message;
    return std::nullopt;
  };
  onnx::ModelProto model;
  std::string message;
  if (!loadOnnxModel(path, model, message))
    return withPath(message);
  std::string modelDir = llvm::sys::path::parent_path(path).str();
  if (modelDir.empty())
    modelDir = ".";
  GraphImporter importer(ctx, model, opts, modelDir);
  std::optional<OnnxImportResult> result = importer.run(message);
  if (!result)
    return withPath(message);
  return result;
}
