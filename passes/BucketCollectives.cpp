//===- BucketCollectives.cpp - Few large collectives instead of many ------===//
//
// Each collective call pays a latency (and MPI/NCCL launch costs) however
// small its tensor; data parallelism reduces one gradient per parameter,
// and ZeRO reduce-scatters one gradient and all-gathers one parameter per
// parameter. Walking the program in order, all_reduces, reduce_scatters and
// all_gathers over the same mesh axes are packed into buckets of at most
// `bucket-mb` MiB (one open bucket per kind, mesh axes, reduction and
// element type): their operands are concatenated, moved by one collective
// and split back. The packed collective stands where the bucket's first
// member was when every member's operand is ready there (ZeRO-1's
// reduce_scatters, each just before its parameter's update, all read
// gradients the backward finished), else where its last member was when no
// member's result is needed before that (the backward's gradients, last
// layer first); a bucket closes when neither holds, so no use moves above
// its value.
//
// A reduce_scatter or all_gather joins only when the blocks of its axis are
// contiguous (the dims before it are 1): each member becomes [g, n / g]
// (g ranks), the members are concatenated along dim 1, scattered or
// gathered along dim 0, and split back along dim 1.
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

/// The collectives the pass packs.
enum class Kind { AllReduce, ReduceScatter, AllGather };

std::optional<Kind> kindOf(Operation *op) {
  if (isa<shard::AllReduceOp>(op))
    return Kind::AllReduce;
  if (isa<shard::ReduceScatterOp>(op))
    return Kind::ReduceScatter;
  if (isa<shard::AllGatherOp>(op))
    return Kind::AllGather;
  return std::nullopt;
}

/// Whether the blocks along `axis` of `full` are contiguous in memory.
bool contiguousBlocks(RankedTensorType full, int64_t axis) {
  return full.hasStaticShape() &&
         llvm::all_of(full.getShape().take_front(axis),
                      [](int64_t d) { return d == 1; });
}

/// The bucket `op` may join ("" when it joins none): its kind, mesh axes,
/// reduction, element type and pipeline stage.
std::string bucketKey(Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
    os << "all_reduce/";
    llvm::interleaveComma(reduce.getGridAxes(), os);
    os << "/" << static_cast<int>(reduce.getReduction());
  } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    auto in = cast<RankedTensorType>(scatter.getInput().getType());
    if (!contiguousBlocks(in, scatter.getScatterAxis().getSExtValue()))
      return "";
    os << "reduce_scatter/";
    llvm::interleaveComma(scatter.getGridAxes(), os);
    os << "/" << static_cast<int>(scatter.getReduction());
  } else {
    auto gather = cast<shard::AllGatherOp>(op);
    if (!contiguousBlocks(type, gather.getGatherAxis().getSExtValue()))
      return "";
    os << "all_gather/";
    llvm::interleaveComma(gather.getGridAxes(), os);
  }
  os << "/" << type.getElementType();
  // A pipeline stage's collectives run on its ranks only.
  if (auto stage = op->getAttrOfType<IntegerAttr>("weft.stage"))
    os << "/stage " << stage.getInt();
  return key;
}

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

  /// An open bucket: its members in program order and where the packed
  /// collective may stand.
  struct Bucket {
    Kind kind = Kind::AllReduce;
    SmallVector<Operation *> members;
    double bytes = 0;
    /// Every member's operand is ready before the first member.
    bool atFirst = true;
    /// No member's result is used before the last member.
    bool atLast = true;
    int64_t earliestUse = INT64_MAX;
  };

  void bucketBlock(Block &block) {
    DenseMap<Operation *, int64_t> position;
    int64_t index = 0;
    for (Operation &op : block)
      position[&op] = index++;
    // A parameter's update may move down (it only records the value the
    // next step starts from), so it does not hold a bucket back.
    auto firstUse = [&](Operation *op) {
      int64_t first = INT64_MAX;
      for (Operation *user : op->getUsers())
        if (!isa<ParamUpdateOp>(user))
          first = std::min(first,
                           position.lookup(block.findAncestorOpInBlock(*user)));
      return first;
    };
    auto ready = [&](Operation *op) -> int64_t {
      Operation *def = op->getOperand(0).getDefiningOp();
      return def && def->getBlock() == &block ? position.lookup(def) : -1;
    };
    const double limit = bucketMb * 1024.0 * 1024.0;
    std::map<std::string, Bucket> open;
    SmallVector<Bucket> full;
    auto close = [&](Bucket &bucket) {
      if (bucket.members.size() > 1)
        full.push_back(bucket);
      bucket = Bucket();
    };
    for (Operation &op : block) {
      std::optional<Kind> kind = kindOf(&op);
      if (!kind)
        continue;
      std::string key = bucketKey(&op);
      if (key.empty())
        continue;
      Bucket &bucket = open[key];
      const int64_t at = position[&op];
      const double size = static_cast<double>(
          getTensorBytes(cast<RankedTensorType>(op.getOperand(0).getType())));
      if (!bucket.members.empty()) {
        // All_gathers never move up: ZeRO-3 gathers each parameter just
        // before its use, so that few are whole at once.
        const bool atFirst = bucket.atFirst && *kind != Kind::AllGather &&
                             ready(&op) < position[bucket.members.front()];
        const bool atLast = bucket.atLast && bucket.earliestUse > at;
        if (bucket.bytes + size > limit || !(atFirst || atLast))
          close(bucket);
        else {
          bucket.atFirst = atFirst;
          bucket.atLast = atLast;
        }
      }
      bucket.kind = *kind;
      bucket.members.push_back(&op);
      bucket.bytes += size;
      bucket.earliestUse = std::min(bucket.earliestUse, firstUse(&op));
    }
    for (auto &entry : open)
      close(entry.second);
    for (Bucket &bucket : full)
      fuse(bucket);
  }

  /// One collective of the members' concatenation, where the bucket says.
  void fuse(const Bucket &bucket) {
    ArrayRef<Operation *> members = bucket.members;
    Operation *anchor = bucket.atFirst ? members.front() : members.back();
    OpBuilder b(anchor);
    Operation *before = anchor->getPrevNode();
    Attribute stage = anchor->getAttr("weft.stage");
    Location loc = anchor->getLoc();
    Type element =
        cast<RankedTensorType>(anchor->getResult(0).getType()).getElementType();
    // Each member flattened (an all_reduce's operand), or as [rows, n]: one
    // row for an all_gather's block, g rows (the ranks' blocks) for a
    // reduce_scatter's operand; concatenated along their last dim.
    const bool flat = bucket.kind == Kind::AllReduce;
    const int64_t dim = flat ? 0 : 1;
    auto shaped = [&](int64_t r, int64_t w) {
      return flat ? SmallVector<int64_t>{w} : SmallVector<int64_t>{r, w};
    };
    SmallVector<Value> pieces;
    SmallVector<int64_t> widths;
    int64_t rows = 1, total = 0;
    for (Operation *m : members) {
      auto in = cast<RankedTensorType>(m->getOperand(0).getType());
      auto out = cast<RankedTensorType>(m->getResult(0).getType());
      int64_t r = bucket.kind == Kind::ReduceScatter
                      ? in.getNumElements() / out.getNumElements()
                      : 1;
      rows = r;
      widths.push_back(in.getNumElements() / r);
      total += widths.back();
      pieces.push_back(gradient::reshape(b, loc, m->getOperand(0),
                                         shaped(r, widths.back())));
    }
    auto joinedType = RankedTensorType::get(shaped(rows, total), element);
    Value joined =
        ConcatOp::create(b, loc, joinedType, pieces, b.getI64IntegerAttr(dim));
    Operation *last = members.back();
    Value moved;
    int64_t outRows = rows;
    if (auto reduce = dyn_cast<shard::AllReduceOp>(last)) {
      moved = shard::AllReduceOp::create(
          b, loc, joinedType, reduce.getGridAttr(), reduce.getGridAxesAttr(),
          joined, reduce.getReductionAttr());
    } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(last)) {
      outRows = 1;
      moved = shard::ReduceScatterOp::create(
          b, loc, RankedTensorType::get({1, total}, element),
          scatter.getGridAttr(), scatter.getGridAxesAttr(), joined,
          scatter.getReductionAttr(), b.getIndexAttr(0));
    } else {
      auto gather = cast<shard::AllGatherOp>(last);
      auto out = cast<RankedTensorType>(gather.getType());
      outRows =
          out.getNumElements() /
          cast<RankedTensorType>(gather.getInput().getType()).getNumElements();
      moved = shard::AllGatherOp::create(
          b, loc, RankedTensorType::get({outRows, total}, element),
          gather.getGridAttr(), gather.getGridAxesAttr(), joined,
          b.getIndexAttr(0));
    }
    SmallVector<Type> pieceTypes;
    for (int64_t w : widths)
      pieceTypes.push_back(RankedTensorType::get(shaped(outRows, w), element));
    auto split =
        SplitOp::create(b, loc, pieceTypes, moved, b.getI64IntegerAttr(dim));
    SmallVector<Value> results;
    for (auto [member, piece] : llvm::zip(members, split.getResults()))
      results.push_back(gradient::reshape(
          b, loc, piece,
          cast<RankedTensorType>(member->getResult(0).getType()).getShape()));
    if (stage)
      for (Operation *op = before ? before->getNextNode()
                                  : &anchor->getBlock()->front();
           op != anchor; op = op->getNextNode())
        op->setAttr("weft.stage", stage);
    for (auto [member, result] : llvm::zip(members, results)) {
      member->getResult(0).replaceAllUsesWith(result);
      member->erase();
    }
    // Updates of parameters that now stand above their value move to the
    // end of the block.
    for (Value result : results)
      for (Operation *user : llvm::make_early_inc_range(result.getUsers()))
        if (isa<ParamUpdateOp>(user) &&
            user->getBlock() == result.getDefiningOp()->getBlock() &&
            user->isBeforeInBlock(result.getDefiningOp()))
          user->moveBefore(user->getBlock()->getTerminator());
  }
};

} // namespace
