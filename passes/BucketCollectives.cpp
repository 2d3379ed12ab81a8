//===- BucketCollectives.cpp - Few large all_reduces instead of many ------===//
//
// Each collective call pays a latency (and MPI/NCCL launch costs) however
// small its tensor; data parallelism all-reduces one gradient per
// parameter. Walking the program in order (the backward pass produces the
// last layer's gradients first), all_reduces over the same mesh axes are
// packed into buckets of at most `bucket-mb` MiB (one open bucket per mesh
// axes, reduction and element type): their operands are flattened and
// concatenated, reduced by one all_reduce placed where the bucket's last member
// was, and split back. A bucket closes early when a member's result is needed
// before that point (a label count the forward pass divides by, say), so no use
// moves.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/GradientRules.h"

#include <map>

namespace weft {
#define GEN_PASS_DEF_BUCKETCOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct BucketCollectivesPass
    : public weft::impl::BucketCollectivesBase<BucketCollectivesPass> {
  using BucketCollectivesBase::BucketCollectivesBase;

  void runOnOperation() override {
    if (bucketMb <= 0) {
      getOperation().emitError("bucket-mb must be positive, got ")
          << static_cast<double>(bucketMb);
      return signalPassFailure();
    }
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody())
        bucketBlock(block);
    });
  }

  void bucketBlock(Block &block) {
    DenseMap<Operation *, int64_t> position;
    int64_t index = 0;
    for (Operation &op : block)
      position[&op] = index++;
    auto firstUse = [&](shard::AllReduceOp op) {
      int64_t first = INT64_MAX;
      for (Operation *user : op->getUsers())
        first = std::min(first,
                         position.lookup(block.findAncestorOpInBlock(*user)));
      return first;
    };
    const double limit = bucketMb * 1024.0 * 1024.0;
    // One open bucket per (mesh axes, reduction, element type).
    struct Open {
      SmallVector<shard::AllReduceOp> members;
      double bytes = 0;
      int64_t earliestUse = INT64_MAX;
    };
    std::map<std::string, Open> open;
    SmallVector<SmallVector<shard::AllReduceOp>> buckets;
    auto close = [&](Open &bucket) {
      if (bucket.members.size() > 1)
        buckets.push_back(bucket.members);
      bucket = Open();
    };
    for (Operation &op : block) {
      auto reduce = dyn_cast<shard::AllReduceOp>(op);
      if (!reduce)
        continue;
      auto type = cast<RankedTensorType>(reduce.getType());
      std::string key;
      llvm::raw_string_ostream os(key);
      llvm::interleaveComma(reduce.getGridAxes(), os);
      os << "/" << static_cast<int>(reduce.getReduction()) << "/"
         << type.getElementType();
      // A pipeline stage's reductions run on its ranks only.
      if (auto stage = op.getAttrOfType<IntegerAttr>("weft.stage"))
        os << "/stage " << stage.getInt();
      Open &bucket = open[key];
      double size = static_cast<double>(getTensorBytes(type));
      if (!bucket.members.empty() &&
          (bucket.bytes + size > limit || bucket.earliestUse <= position[&op]))
        close(bucket);
      bucket.members.push_back(reduce);
      bucket.bytes += size;
      bucket.earliestUse = std::min(bucket.earliestUse, firstUse(reduce));
    }
    for (auto &entry : open)
      close(entry.second);
    for (auto &members : buckets)
      fuse(members);
  }

  /// One all_reduce of the members' concatenation, at the last member.
  void fuse(ArrayRef<shard::AllReduceOp> members) {
    shard::AllReduceOp last = members.back();
    OpBuilder b(last);
    Operation *before = last->getPrevNode();
    Operation *after = last->getNextNode(); // the fused ops go before it
    Attribute stage = last->getAttr("weft.stage");
    Location loc = last.getLoc();
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    int64_t total = 0;
    for (shard::AllReduceOp m : members) {
      auto t = cast<RankedTensorType>(m.getInput().getType());
      sizes.push_back(t.getNumElements());
      total += sizes.back();
      flat.push_back(gradient::reshape(b, loc, m.getInput(), {sizes.back()}));
    }
    Type element = cast<RankedTensorType>(last.getType()).getElementType();
    auto flatType = RankedTensorType::get({total}, element);
    Value joined =
        ConcatOp::create(b, loc, flatType, flat, b.getI64IntegerAttr(0));
    Value reduced = shard::AllReduceOp::create(
        b, loc, flatType, last.getGridAttr(), last.getGridAxesAttr(), joined,
        last.getReductionAttr());
    SmallVector<Type> pieceTypes;
    for (int64_t n : sizes)
      pieceTypes.push_back(RankedTensorType::get({n}, element));
    auto split =
        SplitOp::create(b, loc, pieceTypes, reduced, b.getI64IntegerAttr(0));
    for (auto [member, piece] : llvm::zip(members, split.getResults())) {
      shard::AllReduceOp m = member;
      auto t = cast<RankedTensorType>(m.getType());
      m.getResult().replaceAllUsesWith(
          gradient::reshape(b, loc, piece, t.getShape()));
      m.erase();
    }
    if (stage)
      for (Operation *op = before ? before->getNextNode()
                                  : &after->getBlock()->front();
           op != after; op = op->getNextNode())
        op->setAttr("weft.stage", stage);
  }
};

} // namespace
