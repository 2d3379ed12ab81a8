//===- RecomputeElementwise.cpp - Fused ops recompute what they read ------===//
//
// After weft-fuse-elementwise, a fused op often reads values that another
// fused op computed, elementwise, from fewer bytes than it stored. GELU is
// the common case: its forward group keeps the pre-activation, x / sqrt(2)
// and 1 + erf(x / sqrt(2)) in f32 for the gradient, three functions of one
// bf16 product and a bias; its gradient group reads all three. Recomputing
// them inside the gradient group reads the product instead: fewer bytes
// moved, and the forward group stops writing (and the step stops keeping)
// the f32 values. PyTorch's compiler makes the same trade when it
// partitions a joint graph; this pass makes it group by group.
//
// For a fused op C and an operand v that a fused op P of the same iteration
// shape and the same place in the step yields, the ops of P's body that
// compute v are cloned into C's body, which then reads P's operands that
// those ops use instead of v. The change is made when the bytes moved go
// down: C's new operands against v, less v's write when C was its last
// reader, less P's reads when P has nothing left to compute; a change that
// moves as many bytes but removes P's launch is made too. It repeats until
// nothing changes. The recomputed values are bitwise the ones P stored: the
// same ops run on the same inputs in the same kernel.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_RECOMPUTEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// The ops of `body` (a fused op's block) that `value` needs, in block
/// order.
SmallVector<Operation *> sliceOf(Block &body, Value value) {
  llvm::SmallPtrSet<Operation *, 16> needed;
  SmallVector<Value> work = {value};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !needed.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : body.without_terminator())
    if (needed.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// Drops the results of `op` that nothing reads, then the body ops and
/// operands that no remaining result needs. Erases `op` when no result is
/// read.
void pruneFused(FusedOp op) {
  if (llvm::all_of(op->getResults(), [](Value r) { return r.use_empty(); })) {
    op->erase();
    return;
  }
  Block &body = op.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (llvm::any_of(op->getResults(), [](Value r) { return r.use_empty(); })) {
    SmallVector<Value> kept, keptYields;
    SmallVector<Type> types;
    for (auto [result, yielded] :
         llvm::zip(op->getResults(), yield.getValues()))
      if (!result.use_empty()) {
        kept.push_back(result);
        keptYields.push_back(yielded);
        types.push_back(result.getType());
      }
    OpBuilder b(op);
    auto pruned = FusedOp::create(b, op.getLoc(), types, op.getInputs());
    pruned->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    pruned.getBody().takeBody(op.getBody());
    Block &moved = pruned.getBody().front();
    b.setInsertionPoint(moved.getTerminator());
    YieldOp::create(b, yield.getLoc(), keptYields);
    yield.erase();
    for (auto [old, now] : llvm::zip(kept, pruned.getResults()))
      old.replaceAllUsesWith(now);
    op->erase();
    op = pruned;
  }
  // Last op first, so an op's readers go before it. (A reverse iterator
  // refers to the op after the one it names: erasing while iterating one
  // would invalidate it, so the ops are listed first.)
  Block &block = op.getBody().front();
  SmallVector<Operation *> inner;
  for (Operation &o : block.without_terminator())
    inner.push_back(&o);
  for (Operation *o : llvm::reverse(inner))
    if (o->use_empty())
      o->erase();
  for (int64_t i = block.getNumArguments() - 1; i >= 0; --i)
    if (block.getArgument(i).use_empty()) {
      block.eraseArgument(i);
      op->eraseOperand(i);
    }
}

/// Merges the ops of a fused body that repeat an earlier one (same op,
/// operands, attributes and type): recomputing several values of one
/// producer clones their shared ops once each.
void mergeRepeats(Block &body) {
  SmallVector<Operation *> seen;
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto same = llvm::find_if(seen, [&](Operation *prev) {
      return prev->getName() == op.getName() &&
             prev->getOperands() == op.getOperands() &&
             prev->getAttrDictionary() == op.getAttrDictionary() &&
             prev->getResultTypes() == op.getResultTypes();
    });
    if (same == seen.end()) {
      seen.push_back(&op);
      continue;
    }
    op.replaceAllUsesWith(*same);
    op.erase();
  }
}

class Recomputer {
public:
  Recomputer(Block &block, bool ignoreStage, int64_t maxOps)
      : block(block), ignoreStage(ignoreStage), maxOps(maxOps) {}

  /// Recomputes until no fused op of the block gains from it. A change
  /// may replace or erase the producer, so the scan starts over after it.
  void run() {
    while (scanOnce()) {
    }
  }

private:
  bool scanOnce() {
    for (Operation &op : block)
      if (auto consumer = dyn_cast<FusedOp>(op))
        for (unsigned i = 0; i < consumer->getNumOperands(); ++i)
          if (tryRecompute(consumer, i))
            return true;
    return false;
  }

  /// Recomputes operand `index` of `consumer` inside it when that pays;
  /// whether it did.
  bool tryRecompute(FusedOp consumer, unsigned index) {
    Value value = consumer->getOperand(index);
    auto producer = value.getDefiningOp<FusedOp>();
    if (!producer || producer->getBlock() != &block ||
        producer.getIterationShape() != consumer.getIterationShape() ||
        !samePlace(producer, consumer, ignoreStage))
      return false;
    Block &from = producer.getBody().front();
    unsigned resultIndex = cast<OpResult>(value).getResultNumber();
    Value yielded = from.getTerminator()->getOperand(resultIndex);
    SmallVector<Operation *> slice = sliceOf(from, yielded);
    int64_t computing = llvm::count_if(
        slice, [](Operation *op) { return !isa<ConstantOp>(op); });
    if (computing > maxOps)
      return false;

    // The producer's operands the slice reads, and which the consumer
    // does not read yet.
    llvm::SetVector<unsigned> argsUsed;
    for (Operation *op : slice)
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand);
            arg && arg.getOwner() == &from)
          argsUsed.insert(arg.getArgNumber());
    if (auto arg = dyn_cast<BlockArgument>(yielded);
        arg && arg.getOwner() == &from)
      argsUsed.insert(arg.getArgNumber());
    SmallVector<Value> added;
    for (unsigned a : argsUsed) {
      Value outer = producer->getOperand(a);
      if (!llvm::is_contained(consumer->getOperands(), outer) &&
          !llvm::is_contained(added, outer))
        added.push_back(outer);
    }

    // The runtime's limits on one fused kernel.
    Block &into = consumer.getBody().front();
    int64_t operands = consumer->getNumOperands() - 1 + added.size();
    int64_t registers = operands + slice.size();
    for (Operation &op : into.without_terminator()) {
      (void)op;
      ++registers;
    }
    if (operands == 0 || operands > WEFT_FUSED_MAX_OPERANDS ||
        registers > WEFT_FUSED_MAX_REGISTERS)
      return false;

    // Bytes moved, after against before.
    int64_t delta = -bytesOf(value);
    for (Value v : added)
      delta += bytesOf(v);
    const bool lastReader = value.hasOneUse();
    bool producerGone = false;
    if (lastReader) {
      delta -= bytesOf(value);
      producerGone = llvm::all_of(producer->getResults(), [&](Value r) {
        return r == value || r.use_empty();
      });
      if (producerGone)
        for (Value v : producer->getOperands())
          delta -= bytesOf(v);
    }
    if (delta > 0 || (delta == 0 && !producerGone))
      return false;

    // The consumer reads the producer's operands (existing or added) and
    // computes the value at the top of its body.
    IRMapping mapping;
    for (Value v : added) {
      consumer->insertOperands(consumer->getNumOperands(), v);
      into.addArgument(v.getType(), v.getLoc());
    }
    for (unsigned a : argsUsed) {
      Value outer = producer->getOperand(a);
      unsigned at = llvm::find(consumer->getOperands(), outer) -
                    consumer->operand_begin();
      mapping.map(from.getArgument(a), into.getArgument(at));
    }
    OpBuilder b(&into, into.begin());
    for (Operation *op : slice)
      b.clone(*op, mapping);
    into.getArgument(index).replaceAllUsesWith(
        mapping.lookupOrDefault(yielded));
    into.eraseArgument(index);
    consumer->eraseOperand(index);
    mergeRepeats(into);

    pruneFused(producer);
    return true;
  }

  Block &block;
  const bool ignoreStage;
  const int64_t maxOps;
};

struct RecomputeElementwisePass
    : public weft::impl::RecomputeElementwiseBase<RecomputeElementwisePass> {
  using RecomputeElementwiseBase::RecomputeElementwiseBase;
  void runOnOperation() override {
    if (maxOps < 0) {
      getOperation().emitError("weft-recompute-elementwise: max-ops must "
                               "not be negative, got ")
          << static_cast<int64_t>(maxOps);
      return signalPassFailure();
    }
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) {
      if (!isa<FusedOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    for (Block *block : blocks)
      Recomputer(*block, ignoreStage, maxOps).run();
  }
};

} // namespace
