//===- ScheduleCollectives.cpp - Start reductions as soon as possible -----===//
//
// The partitioner places each collective where the value is first needed;
// for a gradient that is the optimizer update at the end of the step, so
// every full-size partial gradient stays live through the whole backward
// pass. Moving each all_reduce / reduce_scatter right after the op that
// completes its operand frees that buffer (ZeRO-2: only the reduce-
// scattered shard outlives it) and lets a communication start while the
// rest of the backward pass still runs. A scalar reduced only for the
// step's outputs (the loss averaged over the data-parallel ranks) stays
// where it is: there is no buffer to free, and started early it would be
// polled after every kernel of the backward pass for nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

namespace weft {
#define GEN_PASS_DEF_SCHEDULECOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct ScheduleCollectivesPass
    : public weft::impl::ScheduleCollectivesBase<ScheduleCollectivesPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      SmallVector<Operation *> reductions;
      func.walk([&](Operation *op) {
        if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(op))
          reductions.push_back(op);
      });
      for (Operation *op : reductions) {
        Value input = op->getOperand(0);
        auto type = dyn_cast<RankedTensorType>(input.getType());
        if (type && type.getRank() == 0 &&
            llvm::all_of(op->getUsers(), [](Operation *user) {
              return user->hasTrait<OpTrait::IsTerminator>();
            }))
          continue;
        if (Operation *def = input.getDefiningOp()) {
          if (def->getBlock() == op->getBlock())
            op->moveAfter(def);
        } else {
          op->moveBefore(&op->getBlock()->front());
        }
      }
    });
  }
};

} // namespace
