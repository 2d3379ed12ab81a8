//===- Autodiff.cpp - Reverse-mode differentiation of the loss ------------===//
//
// weft-autodiff: @main's loss differentiated with respect to the trainable
// parameters, by the ops' own GradientOpInterface rules
// (dialects/weft/GradientRules*.cpp). The pass only orders the work: which
// values carry gradients, the reverse walk, accumulation over several uses
// and tied parameters, and the new signature.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/GradientRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

namespace weft {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// One trainable parameter: every weft.param op of that name (torch.onnx
/// ties identical initializers by giving them one name).
struct TrainableParam {
  StringRef name;
  RankedTensorType type;
  SmallVector<ParamOp> uses;
  /// Position of the first op reading the parameter; unused parameters sort
  /// last, in the order of their weft.param ops.
  uint64_t firstUse;
};

/// Differentiates one single-block function.
class LossDifferentiator {
public:
  LossDifferentiator(func::FuncOp func, ArrayRef<llvm::GlobPattern> frozen)
      : func(func), frozen(frozen) {}

  LogicalResult run(unsigned lossIndex) {
    if (!llvm::hasSingleElement(func.getBody()))
      return func.emitError("weft-autodiff expects @main to have one block");
    Block &block = func.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
    if (!ret)
      return func.emitError("weft-autodiff expects @main to end in a return");
    FailureOr<Value> loss = getLoss(ret, lossIndex);
    if (failed(loss) || failed(collectTrainable(block)))
      return failure();
    markActive(block);
    OpBuilder b(ret);
    if (failed(backpropagate(b, block, *loss)))
      return failure();
    if (failed(rewriteSignature(b, ret, *loss)))
      return failure();
    eraseDeadOps(block);
    return success();
  }

private:
  FailureOr<Value> getLoss(func::ReturnOp ret, unsigned lossIndex) {
    if (lossIndex >= ret.getNumOperands())
      return ret.emitError()
             << "loss-index " << lossIndex << " is out of range: @main has "
             << ret.getNumOperands() << " results";
    Value loss = ret.getOperand(lossIndex);
    auto type = dyn_cast<RankedTensorType>(loss.getType());
    if (!type || !type.hasStaticShape() || type.getNumElements() != 1)
      return ret.emitError()
             << "the loss must be a scalar, got " << loss.getType();
    if (!isa<FloatType>(type.getElementType()))
      return ret.emitError() << "the loss must be a floating-point scalar, got "
                             << loss.getType();
    return loss;
  }

  bool isFrozen(StringRef name) const {
    return llvm::any_of(frozen, [&](const llvm::GlobPattern &glob) {
      return glob.match(name);
    });
  }

  /// The float parameters no freeze glob matches and no use marks frozen,
  /// ordered by first use.
  LogicalResult collectTrainable(Block &block) {
    DenseMap<Operation *, uint64_t> position;
    uint64_t next = 0;
    for (Operation &op : block)
      position[&op] = next++;
    llvm::StringSet<> marked;
    for (ParamOp param : block.getOps<ParamOp>())
      if (param.getFrozen())
        marked.insert(param.getName());
    llvm::MapVector<StringRef, TrainableParam> byName;
    for (ParamOp param : block.getOps<ParamOp>()) {
      auto type = dyn_cast<RankedTensorType>(param.getType());
      if (!type || !isa<FloatType>(type.getElementType()) ||
          isFrozen(param.getName()) || marked.contains(param.getName()))
        continue;
      TrainableParam &entry = byName[param.getName()];
      if (entry.uses.empty()) {
        entry.name = param.getName();
        entry.type = type;
        entry.firstUse = UINT64_MAX;
      } else if (entry.type != type) {
        return param.emitError()
               << "parameter '" << param.getName() << "' is used as " << type
               << " here but as " << entry.type << " before";
      }
      entry.uses.push_back(param);
      for (Operation *user : param->getUsers())
        if (user->getBlock() == &block)
          entry.firstUse = std::min(entry.firstUse, position[user]);
    }
    if (byName.empty())
      return func.emitError("the model has no trainable parameters");
    for (auto &entry : byName)
      trainable.push_back(std::move(entry.second));
    llvm::stable_sort(trainable,
                      [](const TrainableParam &a, const TrainableParam &b) {
                        return a.firstUse < b.firstUse;
                      });
    return success();
  }

  /// Float values that depend on a trainable parameter: only they need
  /// gradients, and only ops reading them need a rule.
  void markActive(Block &block) {
    for (const TrainableParam &param : trainable)
      for (ParamOp use : param.uses)
        active.insert(use.getResult());
    for (Operation &op : block.without_terminator()) {
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return active.contains(v); }))
        continue;
      for (Value result : op.getResults())
        if (gradient::isFloatTensor(result.getType()))
          active.insert(result);
    }
  }

  /// The reverse walk. Gradient ops go before the return, so every forward
  /// value they read is in scope.
  LogicalResult backpropagate(OpBuilder &b, Block &block, Value loss) {
    SmallVector<Operation *> forward;
    for (Operation &op : block.without_terminator())
      forward.push_back(&op);
    grads[loss] = gradient::splat(b, loss.getLoc(),
                                  cast<RankedTensorType>(loss.getType()), 1.0);
    if (Operation *def = loss.getDefiningOp())
      if (Attribute stage = def->getAttr("weft.stage")) {
        grads[loss].getDefiningOp()->setAttr("weft.stage", stage);
        grads[loss].getDefiningOp()->setAttr("weft.backward", b.getUnitAttr());
      }
    for (Operation *opPtr : llvm::reverse(forward)) {
      Operation &op = *opPtr;
      SmallVector<Value> resultGrads;
      for (Value result : op.getResults())
        resultGrads.push_back(grads.lookup(result));
      if (llvm::none_of(resultGrads, [](Value g) { return bool(g); }) ||
          llvm::none_of(op.getOperands(),
                        [&](Value v) { return active.contains(v); }))
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op.emitOpError()
               << "has no gradient rule, but the loss depends on a trainable "
                  "parameter through it";
      // The ops the rule builds go before the insertion point; they join
      // the pipeline stage of the op they differentiate (if any).
      Operation *end = &*b.getInsertionPoint();
      Operation *last = end->getPrevNode();
      SmallVector<Value> operandGrads;
      if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
        return failure();
      if (operandGrads.size() != op.getNumOperands())
        return op.emitOpError()
               << "gradient rule gave " << operandGrads.size()
               << " gradients for " << op.getNumOperands() << " operands";
      markWeightGradients(last, end, op, operandGrads);
      for (auto [index, operand, grad] :
           llvm::enumerate(op.getOperands(), operandGrads)) {
        if (!grad || !active.contains(operand))
          continue;
        if (grad.getType() != operand.getType())
          return op.emitOpError()
                 << "gradient rule gave " << grad.getType() << " for operand #"
                 << index << " of type " << operand.getType();
        Value before = grads.lookup(operand);
        accumulate(b, op.getLoc(), operand, grad);
        if (before && operand.getDefiningOp<ParamOp>() &&
            op.hasAttr("weft.stage"))
          grads[operand].getDefiningOp()->setAttr(
              "weft.weight_grad", UnitAttr::get(op.getContext()));
      }
      // In a pipeline (weft-pipeline-stages ran), gradient ops join the
      // stage of the op they differentiate and are marked as backward work,
      // which the schedule orders apart from the forward.
      if (Attribute stage = op.getAttr("weft.stage"))
        for (Operation *g = last ? last->getNextNode() : &block.front();
             g != end; g = g->getNextNode()) {
          g->setAttr("weft.stage", stage);
          g->setAttr("weft.backward", UnitAttr::get(g->getContext()));
        }
    }
    return success();
  }

  /// Marks the ops a gradient rule built (after `last`, before `end`) that
  /// only compute parameters' gradients (a product's weight gradient, a
  /// bias's reduction) with weft.weight_grad: the rest carries the
  /// gradient on to earlier activations. In a pipeline only (the op has a
  /// stage): a zero-bubble schedule runs the former later, in the bubbles.
  void markWeightGradients(Operation *last, Operation *end, Operation &op,
                           ArrayRef<Value> operandGrads) {
    if (!op.hasAttr("weft.stage"))
      return; // only pipelines schedule them apart
    Block *block = end->getBlock();
    DenseSet<Operation *> built;
    for (Operation *g = last ? last->getNextNode() : &block->front(); g != end;
         g = g->getNextNode())
      built.insert(g);
    // What the activations' gradients need, then what the parameters' do.
    auto ancestors = [&](bool ofParams) {
      DenseSet<Operation *> seen;
      SmallVector<Operation *> work;
      for (auto [operand, grad] : llvm::zip(op.getOperands(), operandGrads))
        if (grad && active.contains(operand) &&
            isParameter(operand) == ofParams)
          if (Operation *def = grad.getDefiningOp())
            work.push_back(def);
      while (!work.empty()) {
        Operation *g = work.pop_back_val();
        if (!built.contains(g) || !seen.insert(g).second)
          continue;
        for (Value v : g->getOperands())
          if (Operation *def = v.getDefiningOp())
            work.push_back(def);
      }
      return seen;
    };
    DenseSet<Operation *> carried = ancestors(/*ofParams=*/false);
    for (Operation *g : ancestors(/*ofParams=*/true))
      if (!carried.contains(g))
        g->setAttr("weft.weight_grad", UnitAttr::get(g->getContext()));
  }

  /// A parameter, or one cast to another dtype (mixed precision narrows
  /// weights right before their products).
  static bool isParameter(Value v) {
    if (auto cast = v.getDefiningOp<CastOp>())
      v = cast.getInput();
    return bool(v.getDefiningOp<ParamOp>());
  }

  /// Adds `grad` to the gradient `value` has collected from its other uses.
  void accumulate(OpBuilder &b, Location loc, Value value, Value grad) {
    Value &sum = grads[value];
    sum = sum ? gradient::add(b, loc, sum, grad) : grad;
  }

  /// @main now returns the loss and the parameters' gradients. A parameter
  /// the loss does not depend on (a BatchNorm running statistic, a layer the
  /// loss never reaches) is not trained at all: PyTorch leaves its .grad None
  /// and its optimizers skip it, weight decay included.
  LogicalResult rewriteSignature(OpBuilder &b, func::ReturnOp ret, Value loss) {
    MLIRContext *ctx = func.getContext();
    SmallVector<Value> results{loss};
    SmallVector<DictionaryAttr> resultAttrs;
    auto named = [&](StringRef name) {
      return DictionaryAttr::get(
          ctx, {b.getNamedAttr("weft.name", b.getStringAttr(name))});
    };
    resultAttrs.push_back(named("loss"));
    SmallVector<StringRef> names;
    for (const TrainableParam &param : trainable) {
      // Tied uses summed in the order of their weft.param ops.
      Value total;
      for (ParamOp use : param.uses)
        if (Value g = grads.lookup(use.getResult()))
          total = total ? gradient::add(b, use.getLoc(), total, g) : g;
      if (!total)
        continue;
      results.push_back(total);
      resultAttrs.push_back(named(("grad:" + param.name).str()));
      names.push_back(param.name);
    }
    if (names.empty())
      return ret.emitError("the loss depends on none of the model's "
                           "trainable parameters");
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(),
                                   ValueRange(results).getTypes()));
    func.setAllResultAttrs(resultAttrs);
    func->setAttr("weft.trainable", b.getStrArrayAttr(names));
    return success();
  }

  /// Forward ops only the dropped results needed, and gradients of operands
  /// nothing trains (rules compute all operands' gradients).
  static void eraseDeadOps(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    // Users before their operands, so that chains go at once.
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
  }

  func::FuncOp func;
  ArrayRef<llvm::GlobPattern> frozen;
  SmallVector<TrainableParam> trainable;
  DenseSet<Value> active;
  DenseMap<Value, Value> grads;
};

struct AutodiffPass : public weft::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<llvm::GlobPattern> globs;
    for (const std::string &pattern : freeze) {
      // Brace expansion ({a,b}) on, with a bound on the expansion.
      llvm::Expected<llvm::GlobPattern> glob =
          llvm::GlobPattern::create(pattern, /*MaxSubPatterns=*/1024);
      if (!glob) {
        module.emitError() << "invalid freeze pattern '" << pattern
                           << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      globs.push_back(std::move(*glob));
    }
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("weft-autodiff: no function @main to differentiate");
      return signalPassFailure();
    }
    if (failed(LossDifferentiator(func, globs).run(lossIndex)))
      signalPassFailure();
  }
};

} // namespace
