//===- StrategyIlp.h - One sharding strategy per op, by ILP ----*- C++ -*-===//
//
// The intra-operator pass of Alpa ("Alpa: Automating Inter- and
// Intra-Operator Parallelism", OSDI'22): every op (node) has a list of
// sharding strategies, each with a cost (compute + communication seconds) and
// a memory footprint (bytes per rank); every data edge has a resharding cost
// for each pair of strategies of its endpoints. The integer program
//
//   s_v[i] in {0,1}, sum_i s_v[i] = 1                      (one per node)
//   e_uv[i][j] >= 0, sum_j e_uv[i][j] = s_u[i],
//                    sum_i e_uv[i][j] = s_v[j]              (e = s_u s_v^T)
//   minimize   sum_v cost_v . s_v + sum_uv R_uv . e_uv
//   subject to sum_v memory_v . s_v <= memoryBound
//
// is solved with COIN-OR CBC after an exact presolve (every reduction keeps
// the optimum and its value; choices are mapped back to the caller's
// indices):
//   - parallel edges (either direction) are summed;
//   - edges whose cost separates into a part per endpoint (every edge at a
//     node with one strategy is such) are folded into the node costs;
//   - strategies dominated by another of the same node (no worse in cost,
//     memory and every incident edge row) are dropped;
//   - while the memory bound cannot bind (the worst case fits), nodes with
//     one neighbour are eliminated into it and nodes with two become an
//     edge between them (dynamic programming), which solves trees and
//     series-parallel graphs outright;
//   - while it can, leaves are merged into their neighbour keeping only the
//     cost-memory Pareto front, and Lagrangian bounds (memory priced, the
//     graph relaxed to a spanning forest, min-sum dynamic programming) drop
//     every strategy that no choice better than the best known can use; the
//     same pass finds good choices and may prove one optimal.
// CBC gets what is left, with the best known choice as cutoff. The e
// variables are integral whenever the s variables are, so CBC branches on s
// only.
//
// No MLIR here: the library is plain C++17, usable with -fno-exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILP_H
#define WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILP_H

#include <limits>
#include <string>
#include <vector>

namespace weft::planner {

struct IlpNode {
  std::string name;
  /// Per strategy: compute + communication seconds.
  std::vector<double> cost;
  /// Per strategy: bytes per rank.
  std::vector<double> memory;
};

struct IlpEdge {
  int from = 0, to = 0;
  /// Resharding seconds, row-major [strategy of from][strategy of to].
  std::vector<double> cost;
};

struct IlpProblem {
  std::vector<IlpNode> nodes;
  std::vector<IlpEdge> edges;
  /// Bytes per rank that the chosen strategies may use together.
  double memoryBound = std::numeric_limits<double>::infinity();
};

struct IlpSolution {
  /// A choice exists that fits the memory bound (and the input was valid).
  bool feasible = false;
  /// Per node, the index of its chosen strategy (empty unless feasible).
  std::vector<int> choice;
  /// Seconds of the choice (node plus edge costs) and its bytes per rank.
  double objective = 0, memory = 0;
  /// What happened: "optimal", a time-limit note, or why there is no choice.
  std::string message;
};

struct IlpOptions {
  /// Wall-clock seconds CBC may spend (presolve included).
  double timeLimitSeconds = 10.0;
  /// The exact reductions and Lagrangian bounds before CBC; off, CBC gets
  /// the whole program (for tests of the formulation itself).
  bool presolve = true;
};

/// Chooses one strategy per node minimizing the total cost under the memory
/// bound (optimal to a relative 1e-9). Invalid input (mismatched sizes,
/// negative or non-finite costs, edges to missing nodes, self-edges, nodes
/// without strategies) and an unreachable memory bound give feasible = false
/// with a message saying why. When the time limit stops CBC, the best choice
/// found so far is returned (feasible, with a message saying it is not proven
/// optimal and the lower bound known); CBC may overrun the limit by about a
/// second on large programs. The CBC calls of concurrent solves are
/// serialized: its driver keeps global state.
IlpSolution solveStrategies(const IlpProblem &problem,
                            double timeLimitSeconds = 10.0);
IlpSolution solveStrategies(const IlpProblem &problem,
                            const IlpOptions &options);

/// The same problem solved by enumerating every assignment: a reference for
/// tests on tiny problems. Refuses (feasible = false) beyond 10^7 assignments.
IlpSolution solveStrategiesExhaustive(const IlpProblem &problem);

/// The total cost and memory of `choice` on a valid problem; NaN unless the
/// choice has one in-range strategy index per node.
double strategyObjective(const IlpProblem &problem,
                         const std::vector<int> &choice);
double strategyMemory(const IlpProblem &problem,
                      const std::vector<int> &choice);

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILP_H
