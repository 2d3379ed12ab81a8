//===- AsyncCollectives.cpp - Start early, wait late ----------------------===//
//
// Splits each shard.all_reduce with ops between it and its first user into
// weft.all_reduce_start (where it stood: its operand is complete there) and
// weft.comm_wait (right before the first user), so the ops in between run
// while the reduction travels. Each pair gets its own slot. The splits and
// reshapes that unpack a bucket are moved down to their users first.
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

struct AsyncCollectivesPass
    : public weft::impl::AsyncCollectivesBase<AsyncCollectivesPass> {
  void runOnOperation() override {
    int64_t slot = 0;
    getOperation().walk([&](func::FuncOp func) {
      SmallVector<shard::AllReduceOp> reduces;
      func.walk([&](shard::AllReduceOp op) { reduces.push_back(op); });
      for (shard::AllReduceOp op : reduces) {
        Block *block = op->getBlock();
        sinkUnpacking(op);
        Operation *first = firstUser(op, block);
        if (!first || first == op->getNextNode())
          continue; // nothing to overlap
        std::optional<int64_t> reduction =
            runtimeReductionCode(op.getReduction());
        if (!reduction)
          continue; // the lowering reports it
        OpBuilder b(op);
        auto start = AllReduceStartOp::create(
            b, op.getLoc(), op.getType(), op.getInput(), op.getGridAttr(),
            op.getGridAxesAttr(), b.getI64IntegerAttr(*reduction),
            b.getI64IntegerAttr(slot));
        b.setInsertionPoint(first);
        auto wait =
            CommWaitOp::create(b, op.getLoc(), op.getType(), start.getPending(),
                               b.getI64IntegerAttr(slot));
        op.getResult().replaceAllUsesWith(wait.getResult());
        op.erase();
        ++slot;
      }
    });
  }
};

} // namespace
