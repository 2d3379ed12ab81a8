//===- StageCuts.cpp - Where a forward model may be cut into stages -------===//
#include "passes/StageCuts.h"

#include "dialects/weft/WeftOps.h"

#include "llvm/ADT/DenseSet.h"

#include <limits>
#include <vector>

using namespace mlir;
using namespace weft;

static int64_t bytesOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(1, bits / 8);
}

bool weft::isStageHolder(Operation *op) { return isa<ParamOp, ConstantOp>(op); }

ForwardOps weft::analyzeForwardOps(func::FuncOp func) {
  Block &block = func.getBody().front();
  ForwardOps f;
  SmallVector<Operation *> &ops = f.ops;
  DenseMap<Operation *, int64_t> &position = f.position;
  for (Operation &op : block.without_terminator())
    if (!isStageHolder(&op)) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
  const int64_t n = ops.size();
  // Per cut i (between ops i and i + 1): the values crossing it.
  f.crossing.assign(n + 1, 0);
  f.crossingBytes.assign(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    for (Value v : ops[i]->getResults()) {
      int64_t last = i;
      for (Operation *user : v.getUsers()) {
        Operation *at = block.findAncestorOpInBlock(*user);
        if (!at)
          continue;
        last =
            std::max(last, isa<func::ReturnOp>(at) ? n : position.lookup(at));
      }
      for (int64_t c = i; c < last && c < n; ++c) {
        ++f.crossing[c];
        f.crossingBytes[c] += bytesOf(v.getType());
      }
    }
  // An op's cost: its forward work, plus about as much again for each
  // operand whose gradient the backward computes (one that depends on a
  // parameter): the first layer, whose input needs no gradient, is
  // cheaper to train than the others.
  DenseSet<Value> active;
  for (Operation &op : block.without_terminator())
    if (isa<ParamOp>(op) || llvm::any_of(op.getOperands(), [&](Value v) {
          return active.contains(v);
        }))
      for (Value r : op.getResults())
        if (isa<FloatType>(getElementTypeOrSelf(r.getType())))
          active.insert(r);
  f.cost.assign(n + 1, 0); // prefix sums of op costs
  for (int64_t i = 0; i < n; ++i) {
    int64_t flops = 0;
    if (auto c = dyn_cast<CostOpInterface>(ops[i]))
      flops = c.getFlops();
    int64_t backward = llvm::count_if(
        ops[i]->getOperands(), [&](Value v) { return active.contains(v); });
    f.cost[i + 1] = f.cost[i] + std::max<int64_t>(1, flops * (1 + backward));
  }
  for (int64_t c = 0; c + 1 < n; ++c)
    if (f.crossing[c] == 1)
      f.layerBoundaries.push_back(c);
  return f;
}

SmallVector<int64_t> weft::balancedStageCuts(ArrayRef<int64_t> layers,
                                             ArrayRef<int64_t> cost,
                                             ArrayRef<int64_t> crossingBytes,
                                             int64_t p) {
  if (p <= 1)
    return {};
  const int64_t n = static_cast<int64_t>(cost.size()) - 1;
  using Score = std::pair<int64_t, int64_t>; // (max stage cost, bytes)
  const Score worst{std::numeric_limits<int64_t>::max(), 0};
  const int64_t m = layers.size();
  // best[k][j]: stages 0..k with stage k ending at layers[j].
  std::vector<std::vector<Score>> best(p, std::vector<Score>(m, worst));
  std::vector<std::vector<int64_t>> from(p, std::vector<int64_t>(m, -1));
  for (int64_t j = 0; j < m; ++j)
    best[0][j] = {cost[layers[j] + 1], crossingBytes[layers[j]]};
  for (int64_t k = 1; k + 1 < p; ++k)
    for (int64_t j = k; j < m; ++j)
      for (int64_t i = k - 1; i < j; ++i) {
        if (best[k - 1][i] == worst)
          continue;
        Score s{std::max(best[k - 1][i].first,
                         cost[layers[j] + 1] - cost[layers[i] + 1]),
                best[k - 1][i].second + crossingBytes[layers[j]]};
        if (s < best[k][j]) {
          best[k][j] = s;
          from[k][j] = i;
        }
      }
  Score total = worst;
  int64_t end = -1;
  for (int64_t j = p - 2; j < m; ++j) {
    if (best[p - 2][j] == worst)
      continue;
    Score s{std::max(best[p - 2][j].first, cost[n] - cost[layers[j] + 1]),
            best[p - 2][j].second};
    if (s < total) {
      total = s;
      end = j;
    }
  }
  SmallVector<int64_t> cuts(p - 1);
  for (int64_t k = p - 2, j = end; k >= 0; j = from[k][j], --k)
    cuts[k] = layers[j];
  return cuts;
}
