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
};

int64_t alignUp(int64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

struct AssignBuffersPass
    : public weft::impl::AssignBuffersBase<AssignBuffersPass> {
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
      buffers.push_back(l);
    }

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
