//===- Recompute.cpp - Activations recomputed for the backward ------------===//
//
// weft-recompute (Passes.td). On the training step (after weft-microbatch,
// before weft-pipeline): the forward ops are those the loss (@main's first
// result) depends on, in groups of one pipeline stage (or interleaved
// chunk) and one microbatch. Each group is cut into segments of about
// sqrt(n) layers (Chen et al. 2016): a segment boundary is a layer
// boundary, where a single activation crosses, and that activation is kept
// (a checkpoint), as are the group's inputs (what another stage or
// microbatch made, the step's inputs, parameters, constants). A forward
// value the backward reads is, per mode:
//   - none: kept from the forward (nothing changes);
//   - selective: recomputed within its segment unless a matmul or a
//     convolution made it (the costly products stay, the cheap and often
//     large element-wise, normalization and softmax results are made
//     again);
//   - full: recomputed within its segment from the segment's checkpoint.
// A segment's clones go right before its first backward op that reads a
// recomputed value, in forward order, marked weft.backward (a pipeline
// schedules them with the backward) and weft.recompute; the backward reads
// the clones, so the forward's own results die once the forward is done
// with them, and the backward holds one segment's activations at a time.
// Only kernels (pure compute ops) are recomputed: collectives, transfers
// and constants are read as they are.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <tuple>

#include <map>

namespace weft {
#define GEN_PASS_DEF_RECOMPUTE
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

int64_t intAttr(Operation *op, StringRef name) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return -1;
}

/// The (stage or chunk, microbatch, segment) of a forward op.
using Group = std::tuple<int64_t, int64_t, int64_t>;

struct RecomputePass : public weft::impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "none" && mode != "selective" && mode != "full") {
      module.emitError("unknown recompute mode '")
          << mode << "' (none, selective or full)";
      return signalPassFailure();
    }
    if (mode == "none")
      return;
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || !llvm::hasSingleElement(func.getBody())) {
      module.emitError("no single-block function 'main' to recompute in");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() == 0 ||
        !isa<FloatType>(getElementTypeOrSelf(ret.getOperand(0).getType()))) {
      func.emitError("recomputation needs a training step: @main's first "
                     "result is not a loss");
      return signalPassFailure();
    }
    run(body, ret.getOperand(0));
  }

  /// Whether `op` may be run again for the backward (and is worth it).
  bool recomputable(Operation *op) const {
    if (!isa<KernelOpInterface>(op) || isa<ConstantOp, ParamOp>(op) ||
        op->getNumRegions() != 0 || !isMemoryEffectFree(op))
      return false;
    if (mode == "selective" && isa<MatMulOp, ConvOp>(op))
      return false;
    return true;
  }

  Group groupOf(Operation *op) const {
    return {intAttr(op, "weft.stage"), intAttr(op, "weft.microbatch"),
            segment.lookup(op)};
  }

  /// Cuts each (stage, microbatch)'s forward ops into segments.
  void cutSegments(Block &body, const DenseSet<Operation *> &forward) {
    std::map<std::pair<int64_t, int64_t>, SmallVector<Operation *>> groups;
    for (Operation &op : body.without_terminator())
      if (forward.contains(&op) && !isa<ParamOp, ConstantOp>(op))
        groups[{intAttr(&op, "weft.stage"), intAttr(&op, "weft.microbatch")}]
            .push_back(&op);
    for (auto &[key, ops] : groups) {
      const int64_t n = ops.size();
      DenseMap<Operation *, int64_t> index;
      for (int64_t i = 0; i < n; ++i)
        index[ops[i]] = i;
      // crossing[c]: values made at or before op c, read after it.
      SmallVector<int64_t> crossing(n + 1, 0);
      for (int64_t i = 0; i < n; ++i)
        for (Value v : ops[i]->getResults()) {
          int64_t last = i;
          for (Operation *user : v.getUsers())
            if (auto it = index.find(user); it != index.end())
              last = std::max(last, it->second);
          ++crossing[i];
          --crossing[last];
        }
      SmallVector<int64_t> layers; // cuts a single activation crosses
      for (int64_t c = 0, live = 0; c + 1 < n; ++c) {
        live += crossing[c];
        if (live == 1)
          layers.push_back(c);
      }
      // Every k-th layer boundary, k about sqrt(boundaries).
      int64_t k = std::max<int64_t>(
          1, static_cast<int64_t>(
                 std::lround(std::sqrt(static_cast<double>(layers.size())))));
      int64_t seg = 0;
      size_t next = 0;
      for (int64_t i = 0; i < n; ++i) {
        segment[ops[i]] = seg;
        while (next < layers.size() && layers[next] < i)
          ++next;
        if (next < layers.size() && layers[next] == i &&
            (static_cast<int64_t>(next) + 1) % k == 0) {
          ++seg;
        }
      }
      // The activation crossing a chosen cut is the next segment's
      // checkpoint: kept, never recomputed.
      for (int64_t i = 0; i < n; ++i)
        for (Value v : ops[i]->getResults())
          for (Operation *user : v.getUsers())
            if (auto it = index.find(user);
                it != index.end() && segment[user] != segment[ops[i]])
              checkpoints.insert(v);
    }
  }

  void run(Block &body, Value loss) {
    // The forward: what the loss depends on.
    DenseSet<Operation *> forward;
    SmallVector<Operation *> work;
    if (Operation *def = loss.getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (op->getBlock() != &body || !forward.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          work.push_back(def);
    }
    cutSegments(body, forward);
    // Per group: the forward values its backward reads, and where that
    // backward starts.
    std::map<Group, SetVector<Value>> needed;
    std::map<Group, Operation *> first;
    for (Operation &op : body.without_terminator()) {
      if (forward.contains(&op))
        continue;
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !forward.contains(def) || !recomputable(def) ||
            checkpoints.contains(v))
          continue;
        // Pipeline stages recompute their own work only.
        int64_t stage = intAttr(&op, "weft.stage");
        if (stage >= 0 && intAttr(def, "weft.stage") != stage)
          continue;
        Group g = groupOf(def);
        needed[g].insert(v);
        if (!first.count(g))
          first[g] = &op;
      }
    }
    for (auto &[group, values] : needed)
      recompute(group, values, first[group], forward);
  }

  /// Clones what `values` need of `group`'s forward before `at`, and points
  /// the backward's reads at the clones.
  void recompute(Group group, const SetVector<Value> &values, Operation *at,
                 const DenseSet<Operation *> &forward) {
    // The ops to run again: the needed values' makers and, recursively,
    // their operands' makers of the same group that may be recomputed.
    DenseSet<Operation *> again;
    SmallVector<Operation *> work;
    for (Value v : values)
      work.push_back(v.getDefiningOp());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!again.insert(op).second)
        continue;
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && forward.contains(def) && recomputable(def) &&
            !checkpoints.contains(v) && groupOf(def) == group)
          work.push_back(def);
      }
    }
    SmallVector<Operation *> ordered(again.begin(), again.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    IRMapping map;
    OpBuilder b(at);
    for (Operation *op : ordered) {
      Operation *copy = b.clone(*op, map);
      copy->setAttr("weft.backward", b.getUnitAttr());
      copy->setAttr("weft.recompute", b.getUnitAttr());
    }
    // Readers after the clones (the backward) take them; the forward keeps
    // the originals.
    for (Operation *op : ordered)
      for (Value v : op->getResults()) {
        Value copy = map.lookup(v);
        v.replaceUsesWithIf(copy, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          return !forward.contains(user) && !again.contains(user) &&
                 user->getBlock() == at->getBlock() &&
                 !user->isBeforeInBlock(at) && user != copy.getDefiningOp() &&
                 !isa<func::ReturnOp>(user);
        });
      }
  }

  DenseMap<Operation *, int64_t> segment;
  DenseSet<Value> checkpoints;
};

} // namespace
