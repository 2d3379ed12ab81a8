//===- TensorParallelPlan.cpp - Megatron-style splits found by trial ------===//
//
// Which weights to split over the tensor-parallel axis, found by running the
// sharding rules (ShardingRules.h) over the whole training step without
// building anything. Each product whose right operand is a 2-D parameter is
// tried, in program order, as a column-parallel half: its output features
// are split (in `outer` blocks for packed projections: self-attention's q,
// k, v in 3, a cross-attention's k, v in 2). The propagation then splits what
// has to follow: biases and optimizer state of split parameters, and the weight
// of a later product that contracts the split features (the row-parallel half,
// whose partial sums one all_reduce completes). A trial is kept when no op ever
// needs a tensor-parallel split joined again (no all_gather over the axis), so
// the pairs that survive are exactly Megatron's: MLP up/down projections and
// attention's QKV/output projections with whole heads per rank. A
// vocabulary projection feeding a cross-entropy splits by class and an
// embedding table by rows (the vocabulary-parallel lookups of
// passes/VocabParallel.h need no gather either).
//
// With costs (TensorParallelCosts) the choice is an integer program in
// Alpa's formulation instead (tools/weftc/planner/StrategyIlp.h): one node
// per weight a product or an embedding lookup reads, with the strategies
// replicated, column-parallel (only where the trial above finds the split
// needs no gather, in the blocks it found) and row-parallel (only for the
// partners a column split's trial splits by contraction); each priced in
// seconds (its products' FLOPs, divided by tp when split, plus the
// collectives the split adds: the all_reduce of a row-parallel output, of a
// column-parallel input's gradient, of a vocabulary-parallel lookup) and in
// bytes per rank (the weight with its gradient and optimizer state). Edges
// join a column-parallel weight to its row-parallel partners: a column
// split without the partner's, or the reverse, is not a layout the
// partition builds well, and is priced out of reach. The program minimizes
// the sum under the memory bound, so small layers whose all_reduces cost
// more than their split saves stay whole unless memory forces the split.
// The chosen splits seed one more trial, which adds what must follow
// (biases, optimizer state).
//
//===----------------------------------------------------------------------===//
#include "passes/TensorParallelPlan.h"

#include "dialects/weft/ShardingRules.h"
#include "tools/weftc/planner/StrategyIlp.h"

using namespace mlir;
using namespace weft;

namespace {

/// The parameter a product's operand reads, directly or through a 2-D
/// transpose, and the parameter dim the operand's dim `d` is; or a window
/// of it (PyTorch's cross-attention reads its q and its k, v as rows of one
/// packed in_proj_weight).
struct ParamView {
  ParamOp param;
  SmallVector<int64_t, 2> perm; // operand dim -> parameter dim
  SmallVector<bool, 2> cut;     // per parameter dim: the window cuts it
};

/// `v` without the casts mixed precision puts before products.
Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v;
}

/// The unit-step slice of a parameter `v` is (through casts), or null.
SliceOp windowOfParam(Value v) {
  auto slice = throughCasts(v).getDefiningOp<SliceOp>();
  if (!slice || !throughCasts(slice.getInput()).getDefiningOp<ParamOp>() ||
      llvm::any_of(slice.getSteps(), [](int64_t s) { return s != 1; }))
    return SliceOp();
  return slice;
}

/// The 2-D parameter `v` is, or is a window of, with the dims the window
/// cuts.
ParamOp paramOrWindow(Value v, SmallVector<bool, 2> &cut) {
  cut.assign(2, false);
  ParamOp p = throughCasts(v).getDefiningOp<ParamOp>();
  SliceOp slice = p ? SliceOp() : windowOfParam(v);
  if (slice)
    p = throughCasts(slice.getInput()).getDefiningOp<ParamOp>();
  if (!p || p.getType().getRank() != 2)
    return ParamOp();
  if (slice)
    for (int64_t d = 0; d < 2; ++d)
      cut[d] = slice.getType().getDimSize(d) != p.getType().getDimSize(d);
  return p;
}

std::optional<ParamView> viewParam(Value v) {
  SmallVector<bool, 2> cut;
  if (ParamOp p = paramOrWindow(v, cut))
    return ParamView{p, {0, 1}, cut};
  if (auto t = throughCasts(v).getDefiningOp<TransposeOp>())
    if (ParamOp p = paramOrWindow(t.getInput(), cut))
      return ParamView{p, SmallVector<int64_t, 2>(t.getPermutation()), cut};
  return std::nullopt;
}

/// The blockings a column-parallel split is tried in: plain blocks, and
/// the `outer` blocks of a packed projection (a cross-attention's k, v;
/// a self-attention's q, k, v), each block split by heads.
constexpr int64_t kBlockings[] = {1, 2, 3};

/// For `v`, a unit-step window of a parameter wanted split as `want`, the
/// parameter and its split that gives it (fullSplitOfWindow per dim the
/// window cuts); none where the window is no run of whole blocks.
std::optional<std::pair<ParamOp, TensorSharding>>
paramOfWindow(Value v, const TensorSharding &want) {
  SliceOp slice = windowOfParam(v);
  if (!slice)
    return std::nullopt;
  auto p = throughCasts(slice.getInput()).getDefiningOp<ParamOp>();
  TensorSharding s = TensorSharding::replicated(p.getType().getRank());
  for (int64_t d = 0; d < p.getType().getRank(); ++d) {
    int64_t n = p.getType().getDimSize(d);
    int64_t size = slice.getType().getDimSize(d);
    if (want.dims[d].empty() || n == size) {
      s.dims[d] = want.dims[d];
      continue;
    }
    std::optional<DimSharding> full =
        fullSplitOfWindow(n, slice.getStarts()[d], size, 1, want.dims[d]);
    if (!full)
      return std::nullopt;
    s.dims[d] = *full;
  }
  return std::make_pair(p, s);
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
        if (w && mm.getRhs().getType().getRank() == 2 && !w->cut[w->perm[bK]] &&
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
          // A whole parameter the op wants split (a bias, optimizer state),
          // or a window of one (the q or k, v rows of PyTorch's packed
          // in_proj_bias): the parameter split in the blocks the window is
          // a run of.
          if (dim.empty() && !want.dims[d].empty()) {
            if (auto p = operand.getDefiningOp<ParamOp>())
              adopt(p, want);
            else if (auto window = paramOfWindow(operand, want))
              adopt(window->first, window->second);
          }
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

/// Megatron's splits: each candidate in program order, kept when it needs no
/// gather.
static llvm::StringMap<TensorSharding>
planGreedy(func::FuncOp func, const Mesh &mesh, MeshAxis axis) {
  int64_t tp = mesh.shape[axis];
  llvm::StringMap<TensorSharding> accepted;
  int baseline = Trial(func, mesh, axis, accepted).run();
  if (baseline < 0)
    return accepted;
  // Candidates in program order: the output features of each product with
  // a 2-D parameter on the right (column-parallel, plain or in the blocks
  // of a packed projection), and the rows of each embedding table a gather
  // reads (vocabulary-parallel).
  struct Candidate {
    ParamOp param;
    int64_t dim;
    SmallVector<int64_t, 3> outers;
  };
  SmallVector<Candidate> candidates;
  func.walk([&](Operation *op) {
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      std::optional<ParamView> w = viewParam(mm.getRhs());
      if (mm.getRhs().getType().getRank() == 2 && w)
        candidates.push_back({w->param, w->perm[mm.getTransposeB() ? 0 : 1],
                              SmallVector<int64_t, 3>(std::begin(kBlockings),
                                                      std::end(kBlockings))});
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      if (auto p = gather.getData().getDefiningOp<ParamOp>())
        candidates.push_back({p, static_cast<int64_t>(gather.getAxis()), {1}});
    }
  });
  for (Candidate &c : candidates) {
    if (accepted.count(c.param.getName()))
      continue;
    int64_t n = c.param.getType().getDimSize(c.dim);
    // Of the blockings that need no more gathers than none, the one that
    // needs fewest (under sequence parallelism a packed q, k, v split in
    // plain blocks also passes, its gathers offset by the sequence's
    // gathers a column-parallel product saves; in 3 blocks it needs none).
    // A tie keeps the first: plain blocks where they do.
    std::optional<int> best;
    llvm::StringMap<TensorSharding> chosen;
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
      if (gathers >= 0 && gathers <= baseline && (!best || gathers < *best)) {
        best = gathers;
        chosen = trial.result();
      }
    }
    if (best)
      accepted = std::move(chosen);
  }
  return accepted;
}

namespace {

/// A weight the tensor-parallel program may split: what its products and
/// lookups cost, and the splits it may take.
struct Weight {
  ParamOp param;
  bool lookup = false;    // first read by a gather (an embedding table)
  int64_t outDim = 0;     // the output features' dim (rows of a table)
  int64_t inDim = 0;      // the contracted dim (products only)
  double flops = 0;       // every product reading it, forward
  double inputBytes = 0;  // the first product's left operand
  double outputBytes = 0; // the first product's (or lookup's) result
  double bytes = 0;       // the weight itself
  std::optional<TensorSharding> column; // a split needing no gather
  SmallVector<size_t, 2> partners;      // row-parallel weights it splits
  int64_t partnerOf = 0;                // how many weights split this one
};

int64_t bytesOf(Type type) {
  auto t = cast<RankedTensorType>(type);
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

} // namespace

/// The integer program of the file comment; an empty optional when it has
/// no answer (the caller falls back to Megatron's splits).
static std::optional<llvm::StringMap<TensorSharding>>
planByIlp(func::FuncOp func, const Mesh &mesh, MeshAxis axis,
          const TensorParallelCosts &costs, std::string &summary) {
  const int64_t tp = mesh.shape[axis];
  int baseline = Trial(func, mesh, axis, {}).run();
  if (baseline < 0) {
    summary = "no sharding rule for some op: nothing split";
    return llvm::StringMap<TensorSharding>();
  }
  bool train = false;
  std::vector<Weight> weights;
  llvm::StringMap<size_t> index;
  func.walk([&](Operation *op) {
    if (isa<ParamUpdateOp>(op))
      train = true;
    ParamOp param;
    bool lookup = false;
    std::optional<ParamView> view;
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      view = viewParam(mm.getRhs());
      if (!view || mm.getRhs().getType().getRank() != 2)
        return;
      param = view->param;
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      param = gather.getData().getDefiningOp<ParamOp>();
      if (!param || gather.getAxis() != 0)
        return;
      lookup = true;
    } else {
      return;
    }
    auto [it, fresh] = index.try_emplace(param.getName(), weights.size());
    if (fresh) {
      Weight w;
      w.param = param;
      w.lookup = lookup;
      w.bytes = bytesOf(param.getType());
      w.outputBytes = bytesOf(op->getResult(0).getType());
      if (auto mm = dyn_cast<MatMulOp>(op)) {
        bool tb = mm.getTransposeB();
        w.outDim = view->perm[tb ? 0 : 1];
        w.inDim = view->perm[tb ? 1 : 0];
        w.inputBytes = bytesOf(mm.getLhs().getType());
      }
      weights.push_back(w);
    }
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      auto lhs = mm.getLhs().getType();
      int64_t k = lhs.getDimSize(mm.getTransposeA() ? lhs.getRank() - 2
                                                    : lhs.getRank() - 1);
      weights[it->second].flops +=
          2.0 * mm.getResult().getType().getNumElements() * k;
    }
  });
  if (weights.empty()) {
    summary = "no weight to split";
    return llvm::StringMap<TensorSharding>();
  }

  // The column (or row-of-table) split each weight takes alone, and the
  // partners its trial splits by contraction.
  for (Weight &w : weights) {
    int64_t n = w.param.getType().getDimSize(w.outDim);
    for (int64_t outer : w.lookup
                             ? SmallVector<int64_t, 3>{1}
                             : SmallVector<int64_t, 3>(std::begin(kBlockings),
                                                       std::end(kBlockings))) {
      if (n % (outer * tp) != 0)
        continue;
      TensorSharding s = TensorSharding::replicated(2);
      s.dims[w.outDim] = DimSharding(MeshAxes{axis}, outer);
      llvm::StringMap<TensorSharding> seeded;
      seeded[w.param.getName()] = s;
      Trial trial(func, mesh, axis, seeded);
      int gathers = trial.run();
      if (gathers < 0 || gathers > baseline)
        continue;
      w.column = s;
      for (const auto &entry : trial.result()) {
        auto other = index.find(entry.getKey());
        if (other == index.end() || &weights[other->second] == &w)
          continue;
        Weight &partner = weights[other->second];
        if (!partner.lookup &&
            splitOver(entry.getValue().dims[partner.inDim], axis))
          w.partners.push_back(other->second);
      }
      break;
    }
  }
  for (Weight &w : weights)
    for (size_t p : w.partners)
      ++weights[p].partnerOf;

  // Seconds of the collectives over the tensor-parallel group.
  const double share = double(tp - 1) / double(tp);
  auto allReduce = [&](double n) {
    return 2 * share * n * costs.byteSeconds + 2 * (tp - 1) * costs.latency;
  };
  const double workFactor = train ? 3.0 : 1.0;  // forward, dX and dW
  const double stateFactor = train ? 4.0 : 1.0; // weight, grad, 2 moments

  enum Strategy { Whole, Column, Row };
  // A column-parallel weight without its row-parallel partner, or the
  // partner without it, is not a layout the partition builds well (the
  // trial splits the partner of a column split; a row split alone gathers
  // the weight for every product): such pairs are priced out of reach.
  constexpr double kExcluded = 1e9;
  planner::IlpProblem problem;
  SmallVector<SmallVector<Strategy, 3>> strategies;
  double otherState = 0;
  for (Weight &w : weights) {
    planner::IlpNode node;
    node.name = w.param.getName().str();
    SmallVector<Strategy, 3> options;
    double work = w.flops * workFactor * costs.flopSeconds;
    double state = w.bytes * stateFactor;
    options.push_back(Whole);
    node.cost.push_back(work);
    node.memory.push_back(state);
    if (w.column) {
      options.push_back(Column);
      double comm = w.lookup ? allReduce(w.outputBytes)
                             : (train ? allReduce(w.inputBytes) : 0.0);
      node.cost.push_back(work / tp + comm);
      node.memory.push_back(state / tp);
    }
    if (w.partnerOf > 0) {
      options.push_back(Row);
      node.cost.push_back(work / tp + allReduce(w.outputBytes));
      node.memory.push_back(state / tp);
    }
    strategies.push_back(options);
    problem.nodes.push_back(std::move(node));
  }
  for (auto [u, w] : llvm::enumerate(weights)) {
    for (size_t v : w.partners) {
      const SmallVector<Strategy, 3> &from = strategies[u], &to = strategies[v];
      planner::IlpEdge edge;
      edge.from = static_cast<int>(u);
      edge.to = static_cast<int>(v);
      for (Strategy a : from)
        for (Strategy b : to) {
          edge.cost.push_back((a == Column) != (b == Row) ? kExcluded : 0.0);
        }
      problem.edges.push_back(std::move(edge));
    }
  }
  // The bound covers the weights above; the other parameters (norms,
  // biases) are whole on every rank.
  func.walk([&](ParamOp p) {
    if (!index.count(p.getName()) && !p->hasAttr("weft.role"))
      otherState += bytesOf(p.getType()) * stateFactor;
  });
  if (costs.memoryBytes > 0)
    problem.memoryBound = std::max(costs.memoryBytes - otherState, 0.0);
  planner::IlpSolution solution = planner::solveStrategies(problem, 5.0);
  if (!solution.feasible) {
    summary = "the integer program has no answer (" + solution.message +
              "): Megatron's splits";
    return std::nullopt;
  }
  llvm::StringMap<TensorSharding> seeds;
  int columns = 0, rows = 0;
  for (auto [i, w] : llvm::enumerate(weights)) {
    Strategy chosen = strategies[i][solution.choice[i]];
    if (chosen == Column) {
      seeds[w.param.getName()] = *w.column;
      ++columns;
    } else if (chosen == Row) {
      TensorSharding s = TensorSharding::replicated(2);
      s.dims[w.inDim] = DimSharding(MeshAxes{axis});
      seeds[w.param.getName()] = s;
      ++rows;
    }
  }
  Trial trial(func, mesh, axis, seeds);
  if (trial.run() < 0) {
    summary = "the chosen splits have no sharding rule: Megatron's splits";
    return std::nullopt;
  }
  summary =
      std::to_string(columns) + " column- and " + std::to_string(rows) +
      " row-parallel of " + std::to_string(weights.size()) +
      " weights (integer program: " + std::to_string(solution.objective * 1e3) +
      " ms, " + solution.message + ")";
  return trial.result();
}

llvm::StringMap<TensorSharding>
weft::planTensorParallel(func::FuncOp func, const Mesh &mesh, MeshAxis axis,
                         const TensorParallelCosts &costs,
                         std::string *summary) {
  std::string note;
  if (costs.enabled())
    if (std::optional<llvm::StringMap<TensorSharding>> plan =
            planByIlp(func, mesh, axis, costs, note)) {
      if (summary)
        *summary = note;
      return std::move(*plan);
    }
  if (summary)
    *summary = note.empty() ? "Megatron's splits" : note;
  return planGreedy(func, mesh, axis);
}
