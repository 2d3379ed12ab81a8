//===- AssignBuffers.cpp - Static liveness-based arena placement ----------===//
//
// Every weftrt.alloc lives from its position to its last use in the
// function's single block. Buffers are placed largest first, each at the
// lowest aligned offset where it overlaps no placed buffer whose lifetime
// overlaps its own. The arena size is the planned peak memory of the rank's
// intermediates. In a pipeline, a buffer only one stage's launches use
// (weftrt.stage) never meets another stage's on any rank, so the two may
// share memory whatever their lifetimes: the arena is the largest stage's,
// and weftrt.stage_arena_bytes gives each stage's extent (its ranks
// allocate that much).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "llvm/ADT/STLExtras.h"

namespace weft {
#define GEN_PASS_DEF_ASSIGNBUFFERS
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

constexpr int64_t kAlignment = 64;

struct Lifetime {
  rt::AllocOp alloc;
  int64_t bytes;
  int64_t first;
  int64_t last;
  int64_t offset = -1;
  int64_t stage = -1; ///< the one pipeline stage using it; -1: any rank
  /// A piece placed inside another buffer (a contiguous concat's input or
  /// split's result): that buffer's index and the piece's offset in it.
  int64_t whole = -1;
  int64_t within = 0;
  bool hasPieces = false;
};

int64_t alignUp(int64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

/// The pieces of a concat or split that lie one after the other in the
/// whole (weftrt.piece_offsets, from the lowering) are placed inside the
/// whole's buffer, which then lives as long as any of them, and the launch
/// goes away: a bucket of gradients is filled where each gradient is made,
/// and read in place after its reduction. A concat qualifies when it is
/// each piece's last reader, a split when it is the whole's; a piece is
/// an intermediate of its own (not one that is already a piece or has
/// pieces, nor the whole itself).
void placeInWhole(Block &block, DenseMap<Operation *, int64_t> &position,
                  DenseMap<Operation *, size_t> &indexOf,
                  std::vector<Lifetime> &buffers) {
  auto lifetimeOf = [&](Value v) -> Lifetime * {
    auto alloc = v.getDefiningOp<rt::AllocOp>();
    auto it = alloc ? indexOf.find(alloc) : indexOf.end();
    return it == indexOf.end() ? nullptr : &buffers[it->second];
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto launch = dyn_cast<rt::LaunchOp>(op);
    auto offsets =
        launch
            ? launch->getAttrOfType<DenseI64ArrayAttr>("weftrt.piece_offsets")
            : DenseI64ArrayAttr();
    if (!offsets)
      continue;
    const bool concat = launch.getKernel() == "concat";
    if (!concat && launch.getKernel() != "split")
      continue;
    const size_t n = offsets.size();
    ValueRange bufs = launch.getBuffers();
    if (bufs.size() != n + 1)
      continue;
    Value whole = concat ? bufs[n] : bufs[0];
    ValueRange pieces = concat ? bufs.take_front(n) : bufs.drop_front(1);
    Lifetime *w = lifetimeOf(whole);
    if (!w || w->whole >= 0)
      continue;
    const int64_t at = position[launch];
    bool ok = concat || w->last == at;
    SmallVector<Lifetime *> parts;
    DenseSet<Value> seen;
    for (Value piece : pieces) {
      Lifetime *p = lifetimeOf(piece);
      ok = ok && p && p != w && seen.insert(piece).second && p->whole < 0 &&
           !p->hasPieces && (!concat || p->last == at);
      parts.push_back(p);
    }
    if (!ok)
      continue;
    const int64_t wIndex = w - buffers.data();
    for (auto [p, offset] : llvm::zip(parts, offsets.asArrayRef())) {
      p->whole = wIndex;
      p->within = offset;
      w->first = std::min(w->first, p->first);
      w->last = std::max(w->last, p->last);
      if (p->stage != w->stage)
        w->stage = -1;
    }
    w->hasPieces = true;
    launch.erase();
  }
}

struct AssignBuffersPass
    : public weft::impl::AssignBuffersBase<AssignBuffersPass> {
  using AssignBuffersBase::AssignBuffersBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!llvm::hasSingleElement(func.getBody())) {
      func.emitError("weftrt-assign-buffers expects a single block");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    int64_t index = 0;
    for (Operation &op : block)
      position[&op] = index++;

    std::vector<Lifetime> buffers;
    DenseMap<Operation *, size_t> indexOf;
    for (Operation &op : block) {
      auto alloc = dyn_cast<rt::AllocOp>(op);
      if (!alloc)
        continue;
      if (alloc.getBytes() <= 0) {
        alloc.emitError("allocates ") << alloc.getBytes() << " bytes";
        return signalPassFailure();
      }
      int64_t last = position[alloc];
      std::optional<int64_t> stage;
      bool shared = false;
      for (Operation *user : alloc.getBuffer().getUsers()) {
        if (user->getBlock() != &block) {
          user->emitError("uses a buffer outside the function's block");
          return signalPassFailure();
        }
        last = std::max(last, position[user]);
        auto s = user->getAttrOfType<IntegerAttr>("weftrt.stage");
        if (!s || (stage && *stage != s.getInt()))
          shared = true;
        else
          stage = s.getInt();
      }
      Lifetime l{alloc, alignUp(alloc.getBytes()), position[alloc], last};
      if (stage && !shared)
        l.stage = *stage;
      indexOf[alloc] = buffers.size();
      buffers.push_back(l);
    }
    if (placePieces)
      placeInWhole(block, position, indexOf, buffers);

    // The pipeline's stages (weftrt.pipeline_axis of weftrt.mesh_shape).
    SmallVector<int64_t> stageBytes;
    auto axis = func->getAttrOfType<IntegerAttr>("weftrt.pipeline_axis");
    auto mesh = func->getAttrOfType<DenseI64ArrayAttr>("weftrt.mesh_shape");
    if (axis && mesh && axis.getInt() >= 0 &&
        axis.getInt() < static_cast<int64_t>(mesh.size()))
      stageBytes.resize(mesh[axis.getInt()], 0);
    for (Lifetime &l : buffers)
      if (l.stage >= static_cast<int64_t>(stageBytes.size())) {
        l.alloc.emitError("is used by pipeline stage ")
            << l.stage << " of a function with " << stageBytes.size()
            << " pipeline stages";
        return signalPassFailure();
      }

    // Largest first; ties by earlier start so the result is deterministic.
    std::vector<Lifetime *> order;
    for (Lifetime &l : buffers)
      if (l.whole < 0)
        order.push_back(&l);
    llvm::stable_sort(order, [](const Lifetime *a, const Lifetime *b) {
      if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
      return a->first < b->first;
    });

    int64_t arenaBytes = 0;
    // The placed buffers by offset: a buffer takes the first gap, in offset
    // order, between the placed buffers alive at the same time. (Kept sorted
    // as they are placed rather than sorting each buffer's live set: a model
    // unrolled over many steps has tens of thousands of buffers, most alive
    // together.)
    std::vector<Lifetime *> placed;
    for (Lifetime *l : order) {
      int64_t offset = 0;
      for (Lifetime *p : placed) {
        if (p->first > l->last || l->first > p->last ||
            (p->stage >= 0 && l->stage >= 0 && p->stage != l->stage))
          continue;
        if (offset + l->bytes <= p->offset)
          break;
        offset = std::max(offset, p->offset + p->bytes);
      }
      l->offset = offset;
      arenaBytes = std::max(arenaBytes, offset + l->bytes);
      auto at =
          llvm::upper_bound(placed, offset, [](int64_t off, const Lifetime *p) {
            return off < p->offset;
          });
      placed.insert(at, l);
    }

    for (Lifetime &l : buffers)
      if (l.whole >= 0)
        l.offset = buffers[l.whole].offset + l.within;
    for (Lifetime &l : buffers) {
      OpBuilder b(l.alloc);
      Value slice = rt::ArenaSliceOp::create(b, l.alloc.getLoc(),
                                             l.alloc.getBuffer().getType(),
                                             l.offset, l.alloc.getBytes());
      l.alloc.getBuffer().replaceAllUsesWith(slice);
      l.alloc.erase();
    }
    Builder b(func.getContext());
    func->setAttr("weftrt.arena_bytes", b.getI64IntegerAttr(arenaBytes));
    // Each stage's extent: what its ranks allocate.

    for (Lifetime &l : buffers)
      for (int64_t s = 0; s < static_cast<int64_t>(stageBytes.size()); ++s)
        if (l.stage < 0 || l.stage == s)
          stageBytes[s] = std::max(stageBytes[s], l.offset + l.bytes);
    if (!stageBytes.empty())
      func->setAttr("weftrt.stage_arena_bytes",
                    b.getDenseI64ArrayAttr(stageBytes));
  }
};

} // namespace
