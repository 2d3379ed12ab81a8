//===- StrategyIlpPresolve.h - StrategyIlp's working problem ----*- C++ -*-===//
//
// The working copy of an IlpProblem that StrategyIlp.cpp's solver reduces
// before CBC sees it (see StrategyIlp.h for the reductions), the records
// that map a choice of the reduced problem back to the caller's nodes, and
// the search for good choices and Lagrangian bounds on it. Private to the
// WeftStrategyIlp library: StrategyIlpPresolve.cpp defines the reductions,
// StrategyIlpSearch.cpp the choice search and the bounds.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILPPRESOLVE_H
#define WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILPPRESOLVE_H

#include "tools/weftc/planner/StrategyIlp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace weft::planner::presolve {

/// Memory within the bound, with a relative slack for rounding: the CBC
/// solver and the exhaustive one share this test.
inline bool fitsMemory(double memory, double bound) {
  if (bound == std::numeric_limits<double>::infinity())
    return true;
  return memory <= bound + 1e-9 * std::max(1.0, std::fabs(bound));
}

//===----------------------------------------------------------------------===//
// The working problem and its presolve.
//
// Every reduction keeps the optimum and its value: an assignment of the
// reduced problem extends to the eliminated nodes (Records, replayed
// backwards) with the same total cost and memory.
//===----------------------------------------------------------------------===//

struct WorkNode {
  std::vector<double> cost, mem;
  std::vector<int> edges; ///< Live incident edges.
  bool alive = true;
  size_t size() const { return cost.size(); }
};

struct WorkEdge {
  int u = 0, v = 0;      ///< u < v.
  std::vector<double> r; ///< [local strategy of u][local strategy of v].
  bool alive = true;
};

/// How to map a choice of the reduced problem back one step.
struct Record {
  enum Kind {
    Keep,   ///< x's strategies were renumbered: old index = a[new].
    Leaf,   ///< x was eliminated: its strategy = a[choice of y].
    Series, ///< x was eliminated: a[choice of y * stride + choice of z].
    Merge,  ///< y was merged into x: x's old index = a[t], y's = b[t].
  } kind;
  int x = -1, y = -1, z = -1, stride = 0;
  std::vector<int> a, b;

  explicit Record(Kind kind) : kind(kind) {}
};

/// Largest strategy count a node may reach by absorbing leaves while the
/// memory row is active.
constexpr size_t kMergeCap = 16;

/// The working problem. Construction and the reductions are defined in
/// StrategyIlpPresolve.cpp; choices, local search and the Lagrangian bound in
/// StrategyIlpSearch.cpp.
class Work {
public:
  std::vector<WorkNode> nodes;
  std::vector<WorkEdge> edges;
  std::vector<Record> records;
  double bound;
  bool memActive = false;
  int foldedEdges = 0, droppedStrategies = 0, eliminatedNodes = 0,
      mergedNodes = 0;

  explicit Work(const IlpProblem &problem);

  int other(int x, const WorkEdge &edge) const {
    return edge.u == x ? edge.v : edge.u;
  }

  /// Edge cost with node x at strategy i and its neighbour at strategy j.
  double at(const WorkEdge &edge, int x, size_t i, size_t j) const {
    return edge.u == x ? edge.r[i * nodes[edge.v].size() + j]
                       : edge.r[j * nodes[edge.v].size() + i];
  }

  /// Adds r ([u][v], u < v) to the u-v edge, creating it when missing.
  void addEdge(int u, int v, const std::vector<double> &r);

  void removeEdge(int id);

  /// The memory row matters only while the worst case exceeds the bound.
  /// Returns whether it just stopped mattering.
  bool updateMemActive();

  /// Folds the edge into its endpoints' costs when r[i][j] = a[i] + b[j]
  /// (every edge at a single-strategy node is such).
  bool foldIfSeparable(int id);

  /// Whether strategy k of node x is no worse than strategy i in every
  /// respect the objective and the memory row see.
  bool dominates(int x, size_t k, size_t i) const;

  /// Keeps the strategies of node x that keep[] marks, renumbered in order.
  void keepStrategies(int x, const std::vector<char> &keep);

  /// Drops dominated strategies of node x; true when any went.
  bool dropDominated(int x);

  /// Without the memory row: a node with one neighbour takes, for each
  /// strategy of the neighbour, its best answer to it.
  void eliminateLeaf(int v);

  /// Without the memory row: a node with two neighbours becomes an edge
  /// between them, its best answer to each pair of their strategies.
  void eliminateSeries(int v);

  /// With the memory row: a node with one neighbour is merged into it, the
  /// neighbour's strategies becoming pairs; per strategy of the neighbour
  /// only the leaf's answers on the cost-memory Pareto front stay. Refused
  /// (false) when the neighbour would exceed kMergeCap strategies.
  bool mergeLeaf(int v);

  /// Applies the reductions until none applies.
  void presolve();

  /// The total cost of a choice of the live nodes, in presolved terms.
  double objective(const std::vector<int> &local) const;

  /// Extends a choice of the live nodes to every node, in the caller's
  /// strategy indices.
  std::vector<int> toOriginal(std::vector<int> choice) const;

  /// Least memory per node (least cost without a memory row): within the
  /// bound whenever the bound can be met.
  std::vector<int> initialChoice() const;

  double memory(const std::vector<int> &local) const;

  /// Cost of node x at strategy i given its neighbours' choices.
  double nodeCost(int x, size_t i, const std::vector<int> &local) const;

  /// Between a priced choice over the bound and one within it: the nodes
  /// where they differ fall into connected groups whose switches change
  /// cost and memory independently; switch groups from `over` to `within`,
  /// the least extra cost per byte saved first, until the bound holds, then
  /// switch back any group that still fits and saves cost.
  std::vector<int> combine(const std::vector<int> &over,
                           const std::vector<int> &within) const;

  /// Sweeps of single-node moves that lower the cost and keep the bound,
  /// from a choice within the bound.
  std::vector<int> localSearch(std::vector<int> local) const;

  //===--------------------------------------------------------------------===//
  // Lagrangian bound: with the memory row priced at lambda >= 0 and the live
  // graph relaxed to a spanning forest (each other edge replaced by its row
  // minima on one endpoint, never more than the edge costs), min-sum dynamic
  // programming gives, for every strategy, the least priced cost of any
  // choice using it. A strategy whose bound exceeds a known choice's cost is
  // in no better choice and goes.
  //===--------------------------------------------------------------------===//

  struct Forest {
    std::vector<int> order;      ///< Live nodes, parents before children.
    std::vector<int> parentEdge; ///< Per node, -1 at roots.
    std::vector<int> root;       ///< Per node, the root of its tree.
    std::vector<std::vector<double>> extra; ///< Bounds of non-tree edges.
  };

  Forest buildForest() const;

  struct Priced {
    double bound = 0;       ///< min over choices of priced cost - lambda B.
    std::vector<int> local; ///< A choice reaching it (on the forest).
    /// Per node and strategy, the least priced cost of a choice using it,
    /// minus lambda B (filled when asked for).
    std::vector<std::vector<double>> marginal;
  };

  Priced price(const Forest &forest, double lambda, bool marginals) const;

  /// Drops every strategy whose bound exceeds `cutoff`; true when any went.
  bool dropByBound(const Priced &priced, double cutoff);

  int boundDropped = 0;
};

} // namespace weft::planner::presolve

#endif // WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILPPRESOLVE_H
