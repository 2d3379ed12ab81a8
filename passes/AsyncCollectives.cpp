//===- AsyncCollectives.cpp - Start early, wait late ----------------------===//
//
// Splits each shard.all_reduce with ops between it and its first user into
// weft.all_reduce_start (where it stood: its operand is complete there) and
// weft.comm_wait (right before the first user), so the ops in between run
// while the reduction travels. Each pair gets its own slot. The splits and
// reshapes that unpack a bucket are moved down to their users first.
// shard.reduce_scatter (ZeRO's gradients) becomes weft.reduce_scatter_start
// and weft.comm_wait the same way. shard.all_gather becomes
// weft.all_gather_start and weft.comm_wait the same way, except that the
// gathers of parameters (ZeRO-3) are prefetched: each starts as soon as the
// previous one is waited for, and that the backward's gathers of forward
// activations (sequence parallelism's norm outputs, gathered again for a
// weight gradient) start one product ahead: before the product that
// precedes them (the input gradient's), so they travel while it computes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/Sharding.h"

namespace weft {
#define GEN_PASS_DEF_ASYNCCOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The earliest op of `block` that uses a result of `op`, or null.
Operation *firstUser(Operation *op, Block *block) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *at = block->findAncestorOpInBlock(*user);
    if (at && (!first || at->isBeforeInBlock(first)))
      first = at;
  }
  return first;
}

/// Moves the splits and reshapes that unpack a reduction's result (a
/// bucket's pieces) down to just before their first real user, so they do
/// not pin the wait right after the start.
void sinkUnpacking(Operation *op) {
  Block *block = op->getBlock();
  SmallVector<Operation *> views;
  for (Operation *user : op->getUsers())
    if (isa<SplitOp, ReshapeOp>(user) && user->getBlock() == block)
      views.push_back(user);
  for (Operation *view : views) {
    sinkUnpacking(view);
    Operation *first = firstUser(view, block);
    if (first && view->isBeforeInBlock(first))
      view->moveBefore(first);
  }
}

/// `v` before the reshapes (a strided split's view) that make it.
Value behindViews(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

/// The parameter `v` is, possibly through reshapes, or null.
ParamOp paramBehind(Value v) { return behindViews(v).getDefiningOp<ParamOp>(); }

/// Moves the reshapes that make `v` (a strided split's view) that stand
/// after `at` to just before it, in order.
void moveViewsBefore(Value v, Operation *at) {
  SmallVector<Operation *> views;
  while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
    views.push_back(reshape);
    v = reshape.getInput();
  }
  for (Operation *view : llvm::reverse(views))
    if (at->isBeforeInBlock(view))
      view->moveBefore(at);
}

/// For a gather of a value complete before the product above it (the
/// backward's gather of a forward activation), that product, to start the
/// gather ahead of: the nearest weft.matmul above it that comes after its
/// operand and after `notBefore` (null: none).
Operation *productAhead(shard::AllGatherOp op, Operation *notBefore) {
  Value source = behindViews(op.getInput());
  Operation *def = source.getDefiningOp();
  if (def && def->getBlock() != op->getBlock())
    return nullptr;
  for (Operation *at = op->getPrevNode(); at; at = at->getPrevNode()) {
    if (at == def || at == notBefore)
      return nullptr;
    if (isa<MatMulOp>(at))
      return at;
  }
  return nullptr;
}

struct AsyncCollectivesPass
    : public weft::impl::AsyncCollectivesBase<AsyncCollectivesPass> {
  int64_t slot = 0;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      SmallVector<shard::AllReduceOp> reduces;
      func.walk([&](shard::AllReduceOp op) { reduces.push_back(op); });
      for (shard::AllReduceOp op : reduces)
        splitReduce(op);
      SmallVector<shard::ReduceScatterOp> scatters;
      func.walk([&](shard::ReduceScatterOp op) { scatters.push_back(op); });
      for (shard::ReduceScatterOp op : scatters)
        splitScatter(op);
      SmallVector<shard::AllGatherOp> gathers;
      func.walk([&](shard::AllGatherOp op) { gathers.push_back(op); });
      prefetchGathers(gathers);
    });
  }

  /// Replaces collective `op` by the wait for `pending` (started on the
  /// current slot) right before `first`, and takes the next slot.
  CommWaitOp waitBefore(Operation *op, Value pending, Operation *first) {
    OpBuilder b(first);
    auto wait = CommWaitOp::create(b, op->getLoc(), pending.getType(), pending,
                                   b.getI64IntegerAttr(slot));
    // A pipeline stage's collective stays on that stage.
    if (Attribute stage = op->getAttr("weft.stage")) {
      wait->setAttr("weft.stage", stage);
      pending.getDefiningOp()->setAttr("weft.stage", stage);
    }
    op->getResult(0).replaceAllUsesWith(wait.getResult());
    op->erase();
    ++slot;
    return wait;
  }

  /// Splits reduction `op` (an all_reduce or a reduce_scatter) into the
  /// start `makeStart(builder, runtime reduction code)` makes where it
  /// stands and a wait right before its first user, when anything lies
  /// between them.
  template <typename OpT, typename MakeStart>
  void splitReduction(OpT op, MakeStart makeStart) {
    Operation *first = firstUser(op, op->getBlock());
    if (!first || first == op->getNextNode())
      return; // nothing to overlap
    std::optional<int64_t> reduction = runtimeReductionCode(op.getReduction());
    if (!reduction)
      return; // the lowering reports it
    OpBuilder b(op);
    waitBefore(op, makeStart(b, *reduction), first);
  }

  void splitReduce(shard::AllReduceOp op) {
    sinkUnpacking(op);
    splitReduction(op, [&](OpBuilder &b, int64_t reduction) {
      return AllReduceStartOp::create(
                 b, op.getLoc(), op.getType(), op.getInput(), op.getGridAttr(),
                 op.getGridAxesAttr(), b.getI64IntegerAttr(reduction),
                 b.getI64IntegerAttr(slot))
          .getPending();
    });
  }

  /// A reduce_scatter (ZeRO-2's gradients) the same way as an all_reduce.
  void splitScatter(shard::ReduceScatterOp op) {
    sinkUnpacking(op);
    splitReduction(op, [&](OpBuilder &b, int64_t reduction) {
      return ReduceScatterStartOp::create(
                 b, op.getLoc(), op.getType(), op.getInput(), op.getGridAttr(),
                 op.getGridAxesAttr(), b.getI64IntegerAttr(reduction),
                 b.getI64IntegerAttr(op.getScatterAxis().getSExtValue()),
                 b.getI64IntegerAttr(slot))
          .getPending();
    });
  }

  /// Gathers of parameters (ZeRO-3 gathers one at each use) are started one
  /// ahead: the first where its parameter is read, each next one right
  /// after the previous one is waited for, so the next use's parameters
  /// travel while this use computes and at most two gathered copies are
  /// alive. Other gathers start where they stand and are waited for where
  /// first needed.
  void prefetchGathers(ArrayRef<shard::AllGatherOp> gathers) {
    Operation *previousWait = nullptr, *previousAhead = nullptr;
    for (shard::AllGatherOp op : gathers) {
      Block *block = op->getBlock();
      Operation *first = firstUser(op, block);
      if (!first)
        continue;
      ParamOp param = paramBehind(op.getInput());
      bool prefetch = param && param->getBlock() == block;
      Operation *ahead = prefetch ? nullptr : productAhead(op, previousAhead);
      if (!prefetch && !ahead && first == op->getNextNode())
        continue; // nothing to overlap
      OpBuilder b(op);
      if (ahead) {
        // The views of the operand move up with the start.
        moveViewsBefore(op.getInput(), ahead);
        b.setInsertionPoint(ahead);
      }
      if (prefetch) {
        // Hoist the view of the parameter (if any) with the start.
        // Not before the parameter itself (with ZeRO-1 and tensor
        // parallelism a later parameter can follow the previous wait).
        Operation *at = param->getNextNode();
        if (previousWait && at->isBeforeInBlock(previousWait->getNextNode()))
          at = previousWait->getNextNode();
        if (at->isBeforeInBlock(op)) {
          moveViewsBefore(op.getInput(), at);
          b.setInsertionPoint(at);
        }
      }
      auto start = AllGatherStartOp::create(
          b, op.getLoc(), op.getType(), op.getInput(), op.getGridAttr(),
          op.getGridAxesAttr(),
          b.getI64IntegerAttr(op.getGatherAxis().getSExtValue()),
          b.getI64IntegerAttr(slot));
      CommWaitOp wait = waitBefore(op, start.getPending(), first);
      if (prefetch)
        previousWait = wait;
      if (ahead)
        previousAhead = wait;
    }
  }
};

} // namespace
