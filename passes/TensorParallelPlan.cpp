//===- TensorParallelPlan.cpp - Megatron-style splits found by trial ------===//
//
// Which weights to split over the tensor-parallel axis, found by running the
// sharding rules (ShardingRules.h) over the whole training step without
// building anything. Each product whose right operand is a 2-D parameter is
// tried, in program order, as a column-parallel half: its output features
// are split (in `outer` blocks for packed projections such as attention's
// q, k, v). The propagation then splits what has to follow: biases and
// optimizer state of split parameters, and the weight of a later product
// that contracts the split features (the row-parallel half, whose partial
// sums one all_reduce completes). A trial is kept when no op ever needs a
// tensor-parallel split joined again (no all_gather over the axis), so the
// pairs that survive are exactly Megatron's: MLP up/down projections and
// attention's QKV/output projections with whole heads per rank. A
// vocabulary projection feeding a cross-entropy splits by class and an
// embedding table by rows (the vocabulary-parallel lookups of
// passes/VocabParallel.h need no gather either).
//
//===----------------------------------------------------------------------===//
#include "passes/TensorParallelPlan.h"

#include "dialects/weft/ShardingRules.h"

using namespace mlir;
using namespace weft;

namespace {

/// The parameter a product's operand reads, directly or through a 2-D
/// transpose, and the parameter dim the operand's dim `d` is.
struct ParamView {
  ParamOp param;
  SmallVector<int64_t, 2> perm; // operand dim -> parameter dim
};

/// `v` without the casts mixed precision puts before products.
Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v;
}

std::optional<ParamView> viewParam(Value v) {
  v = throughCasts(v);
  if (auto p = v.getDefiningOp<ParamOp>())
    if (p.getType().getRank() == 2)
      return ParamView{p, {0, 1}};
  if (auto t = v.getDefiningOp<TransposeOp>())
    if (auto p = throughCasts(t.getInput()).getDefiningOp<ParamOp>())
      if (p.getType().getRank() == 2)
        return ParamView{p, SmallVector<int64_t, 2>(t.getPermutation())};
  return std::nullopt;
}

bool splitOver(const DimSharding &dim, MeshAxis axis) {
  return llvm::is_contained(dim.allAxes(), axis);
}

class Trial {
public:
  Trial(func::FuncOp func, const Mesh &mesh, MeshAxis axis,
        llvm::StringMap<TensorSharding> params)
      : func(func), mesh(mesh), axis(axis), params(std::move(params)) {}

  /// Propagates to a fixed point; returns the number of times an op needed
  /// a split over `axis` joined (or -1 for an op without a rule).
  int run() {
    for (int round = 0; round < 16; ++round) {
      changed = false;
      int gathers = pass();
      if (gathers < 0 || !changed)
        return gathers;
    }
    return -1;
  }

  const llvm::StringMap<TensorSharding> &result() const { return params; }

private:
  TensorSharding of(Value v) {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    return TensorSharding::replicated(
        cast<RankedTensorType>(v.getType()).getRank());
  }

  /// Splits parameter `p` as `s` (partial sums dropped) if it is not split
  /// yet; the propagation then runs again from the start.
  void adopt(ParamOp p, TensorSharding s) {
    s.partial.clear();
    if (s.isReplicated() || params.count(p.getName()))
      return;
    // A parameter is stored in plain or strided blocks of one split.
    if (llvm::any_of(s.dims,
                     [](const DimSharding &d) { return !d.outerAxes.empty(); }))
      return;
    params[p.getName()] = s;
    changed = true;
  }

  int pass() {
    values.clear();
    int gathers = 0;
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      FailureOr<TensorSharding> s = shardingFromAttr(
          func.getArgAttr(arg.getArgNumber(), "weft.shard"), type.getRank());
      values[arg] =
          succeeded(s) ? *s : TensorSharding::replicated(type.getRank());
    }
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (auto p = dyn_cast<ParamOp>(op)) {
        auto it = params.find(p.getName());
        values[p] = it != params.end()
                        ? it->second
                        : TensorSharding::replicated(p.getType().getRank());
        continue;
      }
      if (isa<ConstantOp>(op))
        continue;
      if (auto update = dyn_cast<ParamUpdateOp>(op)) {
        // The new value of a parameter decides how it is stored.
        for (ParamOp p : paramsNamed(update.getName()))
          adopt(p, of(update.getValue()));
        continue;
      }
      SmallVector<TensorSharding, 2> in;
      for (Value v : op.getOperands())
        in.push_back(of(v));
      // A product contracting split features with a whole parameter: split
      // the parameter the same way (the row-parallel half).
      if (auto mm = dyn_cast<MatMulOp>(op)) {
        int64_t ra = mm.getLhs().getType().getRank();
        int64_t aK = mm.getTransposeA() ? ra - 2 : ra - 1;
        int64_t bK = mm.getTransposeB() ? 1 : 0;
        std::optional<ParamView> w = viewParam(mm.getRhs());
        if (w && mm.getRhs().getType().getRank() == 2 &&
            splitOver(in[0].dims[aK], axis) && in[1].dims[bK].empty()) {
          TensorSharding s = TensorSharding::replicated(2);
          s.dims[w->perm[bK]] = in[0].dims[aK];
          adopt(w->param, s);
        }
      }
      std::string error;
      FailureOr<ShardingPlan> plan = planSharding(&op, in, mesh, error);
      if (failed(plan))
        return -1;
      // Rows split over the axis joined before a column-parallel product
      // are sequence parallelism's all_gather, which is the plan, not a
      // cost of the trial.
      bool columnParallel = false;
      if (auto mm = dyn_cast<MatMulOp>(op))
        if (std::optional<ParamView> w = viewParam(mm.getRhs()))
          columnParallel = llvm::any_of(in[1].dims, [&](const DimSharding &d) {
            return splitOver(d, axis);
          });
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        const TensorSharding &want = plan->operands[i];
        for (auto [d, dim] : llvm::enumerate(in[i].dims)) {
          if (splitOver(dim, axis) && !splitOver(want.dims[d], axis) &&
              !(columnParallel && i == 0))
            ++gathers;
          // A whole parameter the op wants split (a bias, optimizer state).
          if (dim.empty() && !want.dims[d].empty())
            if (auto p = operand.getDefiningOp<ParamOp>())
              adopt(p, want);
        }
      }
      for (auto [r, s] : llvm::zip(op.getResults(), plan->results))
        values[r] = s;
    }
    return gathers;
  }

  /// The param ops reading parameter `name` (indexed on first use).
  ArrayRef<ParamOp> paramsNamed(StringRef name) {
    if (byName.empty())
      func.walk([&](ParamOp p) { byName[p.getName()].push_back(p); });
    auto it = byName.find(name);
    return it == byName.end() ? ArrayRef<ParamOp>() : ArrayRef(it->second);
  }

  func::FuncOp func;
  const Mesh &mesh;
  MeshAxis axis;
  llvm::StringMap<TensorSharding> params;
  llvm::StringMap<SmallVector<ParamOp, 1>> byName;
  DenseMap<Value, TensorSharding> values;
  bool changed = false;
};

} // namespace

llvm::StringMap<TensorSharding>
weft::planTensorParallel(func::FuncOp func, const Mesh &mesh, MeshAxis axis) {
  int64_t tp = mesh.shape[axis];
  llvm::StringMap<TensorSharding> accepted;
  int baseline = Trial(func, mesh, axis, accepted).run();
  if (baseline < 0)
    return accepted;
  // Candidates in program order: the output features of each product with
  // a 2-D parameter on the right (column-parallel, plain or in 3 blocks for
  // a packed q, k, v), and the rows of each embedding table a gather reads
  // (vocabulary-parallel).
  struct Candidate {
    ParamOp param;
    int64_t dim;
    SmallVector<int64_t, 2> outers;
  };
  SmallVector<Candidate> candidates;
  func.walk([&](Operation *op) {
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      std::optional<ParamView> w = viewParam(mm.getRhs());
      if (mm.getRhs().getType().getRank() == 2 && w)
        candidates.push_back(
            {w->param, w->perm[mm.getTransposeB() ? 0 : 1], {1, 3}});
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      if (auto p = gather.getData().getDefiningOp<ParamOp>())
        candidates.push_back({p, static_cast<int64_t>(gather.getAxis()), {1}});
    }
  });
  for (Candidate &c : candidates) {
    if (accepted.count(c.param.getName()))
      continue;
    int64_t n = c.param.getType().getDimSize(c.dim);
    for (int64_t outer : c.outers) {
      if (n % (outer * tp) != 0)
        continue;
      llvm::StringMap<TensorSharding> seeded = accepted;
      TensorSharding s =
          TensorSharding::replicated(c.param.getType().getRank());
      s.dims[c.dim] = DimSharding(MeshAxes{axis}, outer);
      seeded[c.param.getName()] = s;
      Trial trial(func, mesh, axis, seeded);
      int gathers = trial.run();
      if (gathers >= 0 && gathers <= baseline) {
        accepted = trial.result();
        break;
      }
    }
  }
  return accepted;
}
