//===- NodeImporter.h - What an op importer sees of one node ----*- C++ -*-===//
//
// Internal to the ONNX frontend. The graph walk (OnnxImporter.cpp) hands each
// ONNX node to the import function registered for its op type
// (OpImporters.h) through a NodeImporter: typed access to the node's inputs,
// constant inputs, attributes and outputs, error reporting that names the
// node, and op creation that infers result types, verifies and folds every
// op as it is built (so shape computations collapse into constants).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FRONTENDS_ONNX_NODEIMPORTER_H
#define WEFT_FRONTENDS_ONNX_NODEIMPORTER_H

#include "frontends/onnx/ParamTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <string>

namespace weft::onnx_import {

/// State of one graph import, shared by all nodes.
struct GraphState {
  GraphState(mlir::MLIRContext &ctx, ParamTable &params, std::string modelDir,
             int64_t opset)
      : ctx(ctx), builder(&ctx), params(params), modelDir(std::move(modelDir)),
        opset(opset) {}

  mlir::MLIRContext &ctx;
  mlir::OpBuilder builder;
  ParamTable &params;
  std::string modelDir;
  /// Opset version of the default domain.
  int64_t opset;
  /// ONNX value name -> its value in the function being built.
  llvm::StringMap<mlir::Value> values;
  /// ONNX sequence name -> its tensors: sequences (SequenceEmpty,
  /// SequenceInsert, ConcatFromSequence, ...) exist only at import, where
  /// their lengths are known.
  llvm::StringMap<llvm::SmallVector<mlir::Value>> sequences;
  /// Names of empty optionals (Optional without an input); an optional that
  /// holds something is that tensor or sequence itself.
  llvm::StringSet<> emptyOptionals;
  /// Names read by some node or listed as graph outputs.
  llvm::StringSet<> usedNames;
  /// Integer and bool initializers stored as external data that a
  /// structure-only import did not read: they have no value (weft makes
  /// constants of them), so any use of one is an error.
  llvm::StringSet<> unloadedInitializers;
  /// Whether the import is a training step's (OnnxImportOptions).
  bool trainingStep = false;
  /// Training-mode Dropouts met so far: each draws from its own stream.
  int64_t dropoutStreams = 0;
  /// The step counter the dropouts read ("weft.step"), made at the first.
  mlir::Value stepCounter;
  /// Quantized tensors -> float tensors with their values whose gradient is
  /// the straight-through estimator's (QuantizeLinear's, kept through a
  /// Clip): a DequantizeLinear of one reads its float form, so that the QDQ
  /// pairs of PyTorch's fake-quantize pass gradients as PyTorch does.
  llvm::DenseMap<mlir::Value, mlir::Value> floatForms;
  /// The parameters some node updates already (a second update is an error).
  llvm::StringSet<> updatedParams;
  /// The first error met; empty while all goes well.
  std::string error;
};

/// What a subgraph takes or gives: a tensor, or a sequence of tensors.
struct GraphValue {
  mlir::Value tensor;
  std::optional<llvm::SmallVector<mlir::Value>> sequence;
};

class NodeImporter {
public:
  /// `scope`, when not empty, names the subgraph the node belongs to in
  /// describe() ("then_branch of node 'x' (If)").
  NodeImporter(GraphState &state, const onnx::NodeProto &node, int index,
               llvm::StringRef scope = "");

  //===--- The node ------------------------------------------------------===//
  const onnx::NodeProto &getNode() const { return node; }
  llvm::StringRef getOpType() const { return node.op_type(); }
  /// Opset version of the default domain.
  int64_t getOpset() const { return state.opset; }
  mlir::Location getLoc() const { return loc; }
  mlir::OpBuilder &getBuilder() { return state.builder; }
  mlir::MLIRContext &getContext() { return state.ctx; }
  /// The directory external tensor data is read from.
  llvm::StringRef getModelDir() const { return state.modelDir; }
  /// "node 'name' (OpType)", or "node #index (OpType)" for unnamed nodes,
  /// followed by " in <scope>" for a subgraph's node.
  std::string describe() const;

  //===--- Inputs --------------------------------------------------------===//
  /// Whether input `i` is given (listed, and not the empty name).
  bool hasInput(unsigned i) const;
  unsigned getNumInputs() const { return node.input_size(); }
  /// Input `i`; records an error naming it `what` when it is absent.
  mlir::Value getInput(unsigned i, llvm::StringRef what);
  /// Input `i` holding numbers: records "<OpType> takes numbers, not i1"
  /// (and returns null) for a bool tensor, as getInput does when absent.
  mlir::Value getNumberInput(unsigned i, llvm::StringRef what);
  /// Input `i`, or null when it is absent (or a sequence: an error then).
  mlir::Value getOptionalInput(unsigned i);
  /// Input `i` as a sequence's tensors; records an error naming it `what`
  /// when it is absent or a tensor.
  std::optional<llvm::SmallVector<mlir::Value>>
  getSequenceInput(unsigned i, llvm::StringRef what);
  /// Input `i` as a subgraph value (a tensor or a sequence); null tensor and
  /// no sequence when absent.
  GraphValue getGraphValueInput(unsigned i);

  /// The value of input `i`, which must be known at import time: an
  /// initializer, a Constant, or something that folded to a constant.
  /// Records "input 'what' is not a constant; why" (and returns nullopt)
  /// otherwise.
  std::optional<mlir::DenseElementsAttr>
  getConstantInput(unsigned i, llvm::StringRef what,
                   llvm::StringRef why = kNeedsStaticShapes);
  /// Like getConstantInput, for an integer tensor read as int64 values.
  std::optional<llvm::SmallVector<int64_t>>
  getConstantInts(unsigned i, llvm::StringRef what,
                  llvm::StringRef why = kNeedsStaticShapes);
  static constexpr const char *kNeedsStaticShapes = "weft needs static shapes";
  static constexpr const char *kNeedsImportTimeValue =
      "weft needs its value at import time";
  /// The constant value of `value` if it has one (constants, and parameters
  /// small enough to read), else nullopt. A parameter small enough to read
  /// whose data a structure-only import did not load records an error naming
  /// it (and yields nullopt): a full import would have used its value.
  std::optional<mlir::DenseElementsAttr> matchConstant(mlir::Value value);

  //===--- Outputs -------------------------------------------------------===//
  unsigned getNumOutputs() const { return node.output_size(); }
  /// Whether output `i` exists and a later node or a graph output reads it.
  bool isOutputUsed(unsigned i) const;
  /// Binds output `i` (ignored when the node leaves it unnamed).
  void setOutput(unsigned i, mlir::Value value);
  /// Binds output `i` to a sequence of `tensors`.
  void setSequenceOutput(unsigned i, llvm::ArrayRef<mlir::Value> tensors);
  /// Binds output `i` to a tensor or a sequence.
  void setGraphValueOutput(unsigned i, const GraphValue &value);
  /// Binds output `i` to an empty optional.
  void setEmptyOptionalOutput(unsigned i);
  /// Whether input `i` is absent or an empty optional.
  bool isEmptyOptionalInput(unsigned i) const;
  /// Whether the import is a training step's: statistics persist from step
  /// to step, random draws change (GraphState::trainingStep).
  bool isTrainingStep() const { return state.trainingStep; }
  /// A new stream number for a dropout's draws (0, 1, ... in node order).
  int64_t takeDropoutStream() { return state.dropoutStreams++; }
  /// The training step counter (weft.param "weft.step", role "step"), one
  /// op for the whole graph.
  mlir::Value getStepCounter();
  /// The step random draws count with: the step counter in a training
  /// step's import (new draws every step), else a constant 0.
  mlir::Value getDrawStep();
  /// A weft.param_update storing `value` into the parameter `param` is
  /// (a weft.param), which becomes frozen (a buffer, not trained); records
  /// an error naming it (`what`) when another node updates it already (two
  /// nodes sharing one running statistic).
  mlir::LogicalResult createParamUpdate(mlir::Value param, mlir::Value value,
                                        llvm::StringRef what);
  /// The float form of the quantized tensor `v` (GraphState::floatForms),
  /// or null.
  mlir::Value getFloatForm(mlir::Value v) const {
    return v ? state.floatForms.lookup(v) : mlir::Value();
  }
  void setFloatForm(mlir::Value quantized, mlir::Value floatForm) {
    if (quantized && floatForm)
      state.floatForms[quantized] = floatForm;
  }
  /// Binds output 0 to `value`; fails when it is null (after an error).
  mlir::LogicalResult setResult(mlir::Value value) {
    if (!value)
      return mlir::failure();
    setOutput(0, value);
    return mlir::success();
  }

  //===--- Attributes ----------------------------------------------------===//
  // A present attribute of the wrong type records an error and yields the
  // default, so importers may read attributes without checking each one.
  bool hasAttr(llvm::StringRef name) const;
  int64_t getIntAttr(llvm::StringRef name, int64_t defaultValue);
  /// The 'axis' attribute (default `defaultAxis`) made non-negative for a
  /// tensor like `of`; records "attribute 'axis' = N is out of range for
  /// <type>" (and returns nullopt) when it does not fit.
  std::optional<int64_t> getAxisAttr(mlir::Value of, int64_t defaultAxis);
  /// The weft element type of the ONNX data type attribute `name` (Cast's
  /// 'to', EyeLike's 'dtype'); records "attribute ... is not supported: weft
  /// has no such element type" (and returns null) when weft lacks it.
  mlir::Type getElementTypeAttr(llvm::StringRef name);
  /// ONNX float attributes are f32; the value comes back as the shortest
  /// decimal that round-trips as f32 (1e-5f gives 1e-5, not 9.99999974e-6).
  double getFloatAttr(llvm::StringRef name, double defaultValue);
  std::string getStringAttr(llvm::StringRef name, llvm::StringRef defaultValue);
  llvm::SmallVector<int64_t>
  getIntsAttr(llvm::StringRef name, llvm::ArrayRef<int64_t> defaultValue = {});
  llvm::SmallVector<float> getFloatsAttr(llvm::StringRef name);
  llvm::SmallVector<std::string> getStringsAttr(llvm::StringRef name);
  /// The tensor attribute `name`, or null when absent (or of another type).
  const onnx::TensorProto *getTensorAttr(llvm::StringRef name);
  /// The graph attribute `name` (an If's branch), or null when absent (or
  /// of another type).
  const onnx::GraphProto *getGraphAttr(llvm::StringRef name);

  //===--- Subgraphs -----------------------------------------------------===//
  /// Imports the initializers and nodes of `graph`, a subgraph of this node
  /// named `what` (an If's "then_branch", a Loop's "body"), into the
  /// function being built, its inputs bound to `inputs`: its nodes read the
  /// outer graph's values by name, as ONNX scopes them, and the names it
  /// defines leave the scope after it. `outputs` receives the values of the
  /// subgraph's outputs.
  mlir::LogicalResult
  importSubgraph(const onnx::GraphProto &graph, llvm::StringRef what,
                 llvm::ArrayRef<GraphValue> inputs,
                 llvm::SmallVectorImpl<GraphValue> &outputs);

  //===--- Errors --------------------------------------------------------===//
  /// Records "node 'n' (Op): message" unless an error is recorded already.
  mlir::LogicalResult emitError(const llvm::Twine &message);
  /// "node 'n' (Op): attribute 'name' = value is not supported[: reason]".
  mlir::LogicalResult emitUnsupportedAttr(llvm::StringRef name,
                                          const llvm::Twine &value,
                                          const llvm::Twine &reason = "");
  bool hasError() const { return !state.error.empty(); }
  /// Records "inputs 'lhsName' (type) and 'rhsName' (type) have different
  /// element types" unless `lhs` and `rhs` share an element type.
  mlir::LogicalResult checkSameElementType(mlir::Value lhs, mlir::Value rhs,
                                           llvm::StringRef lhsName,
                                           llvm::StringRef rhsName);

  //===--- Building ops --------------------------------------------------===//
  // Each creates the op at the end of the function, verifies it and folds
  // it. They return null (or an empty vector) after recording an error.

  /// An op whose result types are given.
  template <typename OpTy, typename... Args>
  mlir::Value create(mlir::Type resultType, Args &&...args) {
    auto op = OpTy::create(getBuilder(), loc, resultType,
                           std::forward<Args>(args)...);
    return single(finishOp(op.getOperation(), /*inferTypes=*/false));
  }
  /// An op whose result types its shape rule infers (InferTypeOpInterface).
  template <typename OpTy, typename... Args>
  mlir::Value createInferred(Args &&...args) {
    static_assert(OpTy::template hasTrait<mlir::InferTypeOpInterface::Trait>(),
                  "the op does not infer its result types");
    auto op = OpTy::create(getBuilder(), loc, getPlaceholderType(),
                           std::forward<Args>(args)...);
    return single(finishOp(op.getOperation(), /*inferTypes=*/true));
  }
  /// A multi-result op whose result types are given.
  template <typename OpTy, typename... Args>
  llvm::SmallVector<mlir::Value> createMulti(mlir::TypeRange resultTypes,
                                             Args &&...args) {
    auto op = OpTy::create(getBuilder(), loc, resultTypes,
                           std::forward<Args>(args)...);
    return finishOp(op.getOperation(), /*inferTypes=*/false);
  }

  /// weft.constant holding `value`.
  mlir::Value createConstant(mlir::DenseElementsAttr value);
  /// A rank-0 weft.constant of a float or integer element type.
  mlir::Value createScalar(mlir::Type elementType, double value);
  /// weft.reshape to `shape`, or `value` itself when it has that shape.
  mlir::Value createReshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// weft.cast to `elementType`, or `value` itself when it has that type.
  mlir::Value createCast(mlir::Value value, mlir::Type elementType);

private:
  mlir::Type getPlaceholderType();
  llvm::SmallVector<mlir::Value> finishOp(mlir::Operation *op, bool inferTypes);
  mlir::Value single(llvm::ArrayRef<mlir::Value> values) {
    return values.empty() ? mlir::Value() : values.front();
  }
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  /// The attribute `name` if present with type `type`; records an error when
  /// present with another type.
  const onnx::AttributeProto *
  getTypedAttr(llvm::StringRef name, onnx::AttributeProto::AttributeType type);

  GraphState &state;
  const onnx::NodeProto &node;
  int index;
  std::string scope;
  mlir::Location loc;
};

/// Imports the nodes of `graph` in order, each through its op's import
/// function; records the first error in `state` and fails. `where`, when not
/// empty, says which subgraph the nodes belong to in error messages ("in
/// then_branch of node 'x' (If)").
mlir::LogicalResult importGraphNodes(GraphState &state,
                                     const onnx::GraphProto &graph,
                                     llvm::StringRef where = "");

/// Every name a node of `graph` or of its subgraphs reads, and the outputs
/// of the subgraphs (which their If reads), added to `names`.
void collectUsedNames(const onnx::GraphProto &graph, llvm::StringSet<> &names);

/// "initializer 'NAME' is stored as external data, which a structure-only
/// import does not load" (the start of every error about such data).
std::string describeUnloadedInitializer(llvm::StringRef name);

//===--- Shape helpers
//-----------------------------------------------------===//

/// The ranked tensor type of `value` (every imported value has one).
mlir::RankedTensorType getTensorType(mlir::Value value);
inline llvm::ArrayRef<int64_t> getShape(mlir::Value value) {
  return getTensorType(value).getShape();
}
inline int64_t getRank(mlir::Value value) {
  return getTensorType(value).getRank();
}
inline mlir::Type getElementType(mlir::Value value) {
  return getTensorType(value).getElementType();
}
/// An ONNX float attribute (an f32) as the double of the shortest decimal
/// that reads back as it: 1e-5f gives 1e-5, not 9.99999974e-6.
double widenFloat(float f);
/// "2x3xf32"-style text for messages.
std::string formatType(mlir::Type type);
std::string formatShape(llvm::ArrayRef<int64_t> shape);
/// Normalizes, sorts and checks `axes` for duplicates against `rank`; records
/// an error on `imp` naming the axes `what` when they are invalid.
std::optional<llvm::SmallVector<int64_t>>
normalizeAxes(NodeImporter &imp, llvm::ArrayRef<int64_t> axes, int64_t rank,
              llvm::StringRef what);

} // namespace weft::onnx_import

#endif // WEFT_FRONTENDS_ONNX_NODEIMPORTER_H
