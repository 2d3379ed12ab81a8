//===- StrategyIlp.cpp - One sharding strategy per op, by ILP -------------===//
//
// Validation, an exact presolve on a working copy of the problem, a
// local-search start, and the integer program handed to CBC through its C
// interface. Every answer is re-evaluated on the caller's problem, so the
// objective and memory reported never carry presolve arithmetic.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/StrategyIlp.h"
#include "tools/weftc/planner/StrategyIlpPresolve.h"

#include <Cbc_C_Interface.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>
#include <utility>

namespace weft::planner {
namespace {

using namespace presolve;

using Clock = std::chrono::steady_clock;

std::string fmt(double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.10g", value);
  return buf;
}

std::string nodeLabel(const IlpProblem &problem, size_t v) {
  std::string label = "node " + std::to_string(v);
  if (!problem.nodes[v].name.empty())
    label += " ('" + problem.nodes[v].name + "')";
  return label;
}

/// Empty when the problem is well formed, else what is wrong with it.
std::string validate(const IlpProblem &problem) {
  if (std::isnan(problem.memoryBound))
    return "memory bound is NaN";
  const size_t n = problem.nodes.size();
  if (n > static_cast<size_t>(std::numeric_limits<int>::max()))
    return "too many nodes";
  for (size_t v = 0; v < n; ++v) {
    const IlpNode &node = problem.nodes[v];
    if (node.cost.empty())
      return nodeLabel(problem, v) + " has no strategies";
    if (node.memory.size() != node.cost.size())
      return nodeLabel(problem, v) + " has " +
             std::to_string(node.cost.size()) + " strategy costs but " +
             std::to_string(node.memory.size()) + " memory entries";
    for (size_t i = 0; i < node.cost.size(); ++i) {
      if (!std::isfinite(node.cost[i]) || node.cost[i] < 0)
        return nodeLabel(problem, v) + ": cost of strategy " +
               std::to_string(i) + " is " + fmt(node.cost[i]) +
               " (must be finite and >= 0)";
      if (!std::isfinite(node.memory[i]) || node.memory[i] < 0)
        return nodeLabel(problem, v) + ": memory of strategy " +
               std::to_string(i) + " is " + fmt(node.memory[i]) +
               " (must be finite and >= 0)";
    }
  }
  for (size_t k = 0; k < problem.edges.size(); ++k) {
    const IlpEdge &edge = problem.edges[k];
    std::string label = "edge " + std::to_string(k) + " (" +
                        std::to_string(edge.from) + " -> " +
                        std::to_string(edge.to) + ")";
    if (edge.from < 0 || static_cast<size_t>(edge.from) >= n)
      return label + ": source node " + std::to_string(edge.from) +
             " does not exist (" + std::to_string(n) + " nodes)";
    if (edge.to < 0 || static_cast<size_t>(edge.to) >= n)
      return label + ": target node " + std::to_string(edge.to) +
             " does not exist (" + std::to_string(n) + " nodes)";
    if (edge.from == edge.to)
      return label + ": self-edge on " + nodeLabel(problem, edge.from);
    size_t rows = problem.nodes[edge.from].cost.size();
    size_t cols = problem.nodes[edge.to].cost.size();
    if (edge.cost.size() != rows * cols)
      return label + " has " + std::to_string(edge.cost.size()) +
             " resharding costs, expected " + std::to_string(rows) + " x " +
             std::to_string(cols) + " = " + std::to_string(rows * cols);
    for (size_t i = 0; i < edge.cost.size(); ++i)
      if (!std::isfinite(edge.cost[i]) || edge.cost[i] < 0)
        return label + ": resharding cost [" + std::to_string(i / cols) + "][" +
               std::to_string(i % cols) + "] is " + fmt(edge.cost[i]) +
               " (must be finite and >= 0)";
  }
  return "";
}

double minMemorySum(const IlpProblem &problem) {
  double sum = 0;
  for (const IlpNode &node : problem.nodes)
    sum += *std::min_element(node.memory.begin(), node.memory.end());
  return sum;
}

std::string infeasibleMessage(const IlpProblem &problem, double minMemory) {
  return "memory bound of " + fmt(problem.memoryBound) +
         " bytes cannot be met: the smallest achievable memory is " +
         fmt(minMemory) + " bytes (every node at its least-memory strategy, " +
         std::to_string(problem.nodes.size()) + " nodes)";
}

IlpSolution finish(const IlpProblem &problem, std::vector<int> choice,
                   std::string message) {
  IlpSolution solution;
  solution.feasible = true;
  solution.objective = strategyObjective(problem, choice);
  solution.memory = strategyMemory(problem, choice);
  solution.choice = std::move(choice);
  solution.message = std::move(message);
  return solution;
}

IlpSolution failure(std::string message) {
  IlpSolution solution;
  solution.message = std::move(message);
  return solution;
}

/// CBC's driver (CbcMain) keeps static state: one solve at a time.
std::mutex cbcMutex;

struct CbcModelDeleter {
  Cbc_Model *model;
  ~CbcModelDeleter() { Cbc_deleteModel(model); }
};

/// Clp factorizes through LAPACK, which is OpenBLAS here. Its matrices are
/// tiny, and OpenBLAS's worker threads spin on sched_yield between calls:
/// measured on a 3000-op problem, 1.6 s of wall-clock time cost 2.7 s of CPU
/// (1.7 s with one thread), and slower still when other processes want the
/// cores. So CBC runs with one BLAS thread; the caller's setting comes back
/// afterwards. Looked up at run time: another LAPACK has no such call.
class SingleBlasThread {
public:
  SingleBlasThread() {
    set_ = reinterpret_cast<void (*)(int)>(
        dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    auto get = reinterpret_cast<int (*)()>(
        dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (!set_ || !get) {
      set_ = nullptr;
      return;
    }
    previous_ = get();
    if (previous_ != 1)
      set_(1);
  }
  ~SingleBlasThread() {
    if (set_ && previous_ != 1)
      set_(previous_);
  }
  SingleBlasThread(const SingleBlasThread &) = delete;
  SingleBlasThread &operator=(const SingleBlasThread &) = delete;

private:
  void (*set_)(int) = nullptr;
  int previous_ = 1;
};

/// Searches the price of memory that maximizes the Lagrangian bound, by
/// bisection on the sign of (memory of the priced choice - bound). Every
/// priced choice within the bound goes to `consider`.
template <typename Consider>
double searchPrice(const Work &work, const Work::Forest &forest,
                   Consider &&consider, double &bestBound) {
  Work::Priced zero = work.price(forest, 0.0, false);
  bestBound = zero.bound;
  if (fitsMemory(work.memory(zero.local), work.bound)) {
    consider(zero.local);
    return 0.0;
  }
  double costSpread = 0, memSpread = 0;
  for (int v : forest.order) {
    const WorkNode &node = work.nodes[v];
    auto [cmin, cmax] = std::minmax_element(node.cost.begin(), node.cost.end());
    auto [mmin, mmax] = std::minmax_element(node.mem.begin(), node.mem.end());
    costSpread = std::max(costSpread, *cmax - *cmin);
    memSpread = std::max(memSpread, *mmax - *mmin);
  }
  double bestLambda = 0;
  // The priced choice at the largest price so far still over the bound:
  // combined with each one within it, often the best choice known.
  std::vector<int> over = zero.local;
  auto probe = [&](double lambda) {
    Work::Priced priced = work.price(forest, lambda, false);
    if (priced.bound > bestBound) {
      bestBound = priced.bound;
      bestLambda = lambda;
    }
    bool fits = fitsMemory(work.memory(priced.local), work.bound);
    if (fits) {
      consider(work.combine(over, priced.local));
      consider(priced.local);
    } else {
      over = std::move(priced.local);
    }
    return fits;
  };
  double lo = 0, hi = 0;
  double lambda = costSpread > 0 && memSpread > 0 ? costSpread / memSpread : 1;
  for (int i = 0; i < 200 && hi == 0; ++i, lambda *= 4) {
    if (probe(lambda))
      hi = lambda;
    else
      lo = lambda;
  }
  if (hi == 0)
    return bestLambda;
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    double mid = lo == 0       ? hi / 4
                 : hi > 4 * lo ? std::sqrt(lo * hi)
                               : 0.5 * (lo + hi);
    if (probe(mid))
      hi = mid;
    else
      lo = mid;
  }
  return bestLambda;
}

} // namespace

double strategyObjective(const IlpProblem &problem,
                         const std::vector<int> &choice) {
  if (choice.size() != problem.nodes.size())
    return std::numeric_limits<double>::quiet_NaN();
  double total = 0;
  for (size_t v = 0; v < choice.size(); ++v) {
    if (choice[v] < 0 ||
        static_cast<size_t>(choice[v]) >= problem.nodes[v].cost.size())
      return std::numeric_limits<double>::quiet_NaN();
    total += problem.nodes[v].cost[choice[v]];
  }
  for (const IlpEdge &edge : problem.edges)
    total += edge.cost[static_cast<size_t>(choice[edge.from]) *
                           problem.nodes[edge.to].cost.size() +
                       choice[edge.to]];
  return total;
}

double strategyMemory(const IlpProblem &problem,
                      const std::vector<int> &choice) {
  if (choice.size() != problem.nodes.size())
    return std::numeric_limits<double>::quiet_NaN();
  double total = 0;
  for (size_t v = 0; v < choice.size(); ++v) {
    if (choice[v] < 0 ||
        static_cast<size_t>(choice[v]) >= problem.nodes[v].memory.size())
      return std::numeric_limits<double>::quiet_NaN();
    total += problem.nodes[v].memory[choice[v]];
  }
  return total;
}

IlpSolution solveStrategies(const IlpProblem &problem,
                            double timeLimitSeconds) {
  IlpOptions options;
  options.timeLimitSeconds = timeLimitSeconds;
  return solveStrategies(problem, options);
}

IlpSolution solveStrategies(const IlpProblem &problem,
                            const IlpOptions &options) {
  Clock::time_point start = Clock::now();
  if (std::string error = validate(problem); !error.empty())
    return failure("invalid strategy problem: " + error);
  if (!(options.timeLimitSeconds > 0))
    return failure("invalid time limit " + fmt(options.timeLimitSeconds) +
                   " s (must be > 0)");
  if (problem.nodes.empty())
    return finish(problem, {}, "optimal (no nodes)");
  double minMemory = minMemorySum(problem);
  if (!fitsMemory(minMemory, problem.memoryBound))
    return failure(infeasibleMessage(problem, minMemory));

  Work work(problem);
  if (options.presolve)
    work.presolve();

  // The best choice known, in the caller's indices; every choice offered is
  // judged on the caller's problem.
  std::vector<int> best;
  double bestObjective = std::numeric_limits<double>::infinity();
  auto consider = [&](const std::vector<int> &local) {
    std::vector<int> refined = work.localSearch(local);
    for (const std::vector<int> *candidate :
         {&local, static_cast<const std::vector<int> *>(&refined)}) {
      std::vector<int> choice = work.toOriginal(*candidate);
      if (!fitsMemory(strategyMemory(problem, choice), problem.memoryBound))
        continue;
      double objective = strategyObjective(problem, choice);
      if (objective < bestObjective) {
        bestObjective = objective;
        best = std::move(choice);
      }
    }
  };
  consider(work.initialChoice());
  auto tolerance = [&] { return 1e-9 * std::fabs(bestObjective); };

  // With the memory row: Lagrangian bounds drop strategies no better choice
  // uses, and may prove the best choice optimal outright.
  double lowerBound = -std::numeric_limits<double>::infinity();
  int rounds = 0;
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  while (options.presolve && work.memActive && rounds < 4 &&
         elapsed() < 0.5 * options.timeLimitSeconds) {
    ++rounds;
    Work::Forest forest = work.buildForest();
    double bound = 0;
    double lambda = searchPrice(work, forest, consider, bound);
    lowerBound = std::max(lowerBound, bound);
    if (bestObjective - lowerBound <= tolerance())
      break;
    Work::Priced priced = work.price(forest, lambda, true);
    if (!work.dropByBound(priced, bestObjective + tolerance()))
      break;
    work.updateMemActive();
    work.presolve();
    consider(work.initialChoice());
  }

  // What CBC sees: nodes with a choice left that an edge or the memory row
  // ties to others. The rest take their cheapest strategy.
  const int n = static_cast<int>(work.nodes.size());
  std::vector<int> local = work.initialChoice();
  std::vector<int> firstCol(n, -1);
  int cols = 0, freeNodes = 0;
  for (int v = 0; v < n; ++v) {
    const WorkNode &node = work.nodes[v];
    if (!node.alive || (node.edges.empty() && node.size() < 2))
      continue;
    if (node.edges.empty() && !work.memActive) {
      local[v] = static_cast<int>(
          std::min_element(node.cost.begin(), node.cost.end()) -
          node.cost.begin());
      continue;
    }
    firstCol[v] = cols;
    cols += static_cast<int>(node.size());
    ++freeNodes;
  }
  std::string note =
      std::to_string(problem.nodes.size()) +
      " nodes; presolve: " + std::to_string(work.foldedEdges) +
      " edges folded, " + std::to_string(work.droppedStrategies) +
      " dominated and " + std::to_string(work.boundDropped) +
      " bounded strategies dropped, " + std::to_string(work.eliminatedNodes) +
      " nodes eliminated, " + std::to_string(work.mergedNodes) + " merged";
  if (freeNodes == 0) {
    consider(local);
    return finish(problem, std::move(best),
                  "optimal (presolve decided every node; " + note + ")");
  }
  if (bestObjective - lowerBound <= tolerance())
    return finish(problem, std::move(best),
                  "optimal (Lagrangian bound " + fmt(lowerBound) +
                      " meets the best choice; " + note + ")");

  if (elapsed() >= options.timeLimitSeconds)
    return finish(problem, std::move(best),
                  "time limit of " + fmt(options.timeLimitSeconds) +
                      " s reached before CBC ran; not proven optimal (lower "
                      "bound " +
                      fmt(lowerBound) + "; " + note + ")");

  // Columns: s per free node, then e per live edge. Rows: one-hot per free
  // node; per edge, the marginals over u (all) and over v (all but the last,
  // which the others and the one-hot rows imply); the memory row last.
  struct Entry {
    int row;
    double value;
  };
  std::vector<std::vector<Entry>> colEntries(cols);
  std::vector<double> obj(cols), colUpper(cols, 1.0);
  std::vector<double> rowLower, rowUpper;
  for (int v = 0; v < n; ++v) {
    if (firstCol[v] < 0)
      continue;
    int row = static_cast<int>(rowLower.size());
    rowLower.push_back(1.0);
    rowUpper.push_back(1.0);
    const WorkNode &node = work.nodes[v];
    for (size_t i = 0; i < node.size(); ++i) {
      obj[firstCol[v] + i] = node.cost[i];
      colEntries[firstCol[v] + i].push_back({row, 1.0});
    }
  }
  // Costs of nodes that CBC does not see: their choices are fixed.
  double offset = 0;
  for (int v = 0; v < n; ++v)
    if (work.nodes[v].alive && firstCol[v] < 0)
      offset += work.nodes[v].cost[local[v]];
  int liveEdges = 0;
  for (const WorkEdge &edge : work.edges) {
    if (!edge.alive)
      continue;
    ++liveEdges;
    size_t nu = work.nodes[edge.u].size(), nv = work.nodes[edge.v].size();
    int uRows = static_cast<int>(rowLower.size());
    int vRows = uRows + static_cast<int>(nu);
    rowLower.resize(rowLower.size() + nu + nv - 1, 0.0);
    rowUpper.resize(rowUpper.size() + nu + nv - 1, 0.0);
    for (size_t i = 0; i < nu; ++i)
      colEntries[firstCol[edge.u] + i].push_back(
          {uRows + static_cast<int>(i), -1.0});
    for (size_t j = 0; j + 1 < nv; ++j)
      colEntries[firstCol[edge.v] + j].push_back(
          {vRows + static_cast<int>(j), -1.0});
    for (size_t i = 0; i < nu; ++i)
      for (size_t j = 0; j < nv; ++j) {
        std::vector<Entry> entries{{uRows + static_cast<int>(i), 1.0}};
        if (j + 1 < nv)
          entries.push_back({vRows + static_cast<int>(j), 1.0});
        colEntries.push_back(std::move(entries));
        obj.push_back(edge.r[i * nv + j]);
        colUpper.push_back(1.0);
      }
  }
  if (work.memActive) {
    // Memory above each node's least, scaled to the largest such excess, so
    // the row's coefficients are O(1) whatever the unit.
    double fixedMem = 0, scale = 0;
    for (int v = 0; v < n; ++v) {
      const WorkNode &node = work.nodes[v];
      if (!node.alive)
        continue;
      double least = *std::min_element(node.mem.begin(), node.mem.end());
      fixedMem += firstCol[v] < 0 ? node.mem[local[v]] : least;
      if (firstCol[v] >= 0)
        for (double m : node.mem)
          scale = std::max(scale, m - least);
    }
    if (scale > 0) {
      int row = static_cast<int>(rowLower.size());
      double slack = problem.memoryBound +
                     1e-9 * std::max(1.0, std::fabs(problem.memoryBound)) -
                     fixedMem;
      rowLower.push_back(-std::numeric_limits<double>::max());
      rowUpper.push_back(std::max(0.0, slack) / scale);
      for (int v = 0; v < n; ++v) {
        if (firstCol[v] < 0)
          continue;
        const WorkNode &node = work.nodes[v];
        double least = *std::min_element(node.mem.begin(), node.mem.end());
        for (size_t i = 0; i < node.size(); ++i)
          if (node.mem[i] > least)
            colEntries[firstCol[v] + i].push_back(
                {row, (node.mem[i] - least) / scale});
      }
    }
  }
  const int totalCols = static_cast<int>(colEntries.size());
  const int totalRows = static_cast<int>(rowLower.size());
  std::vector<CoinBigIndex> starts(totalCols + 1, 0);
  std::vector<int> index;
  std::vector<double> value;
  for (int c = 0; c < totalCols; ++c) {
    for (const Entry &entry : colEntries[c]) {
      index.push_back(entry.row);
      value.push_back(entry.value);
    }
    starts[c + 1] = static_cast<CoinBigIndex>(index.size());
  }
  colEntries.clear();
  std::vector<double> colLower(totalCols, 0.0);
  // Costs in seconds can be tiny: scale the largest to 1 so that CBC's
  // absolute tolerances are relative ones.
  double objScale = 0;
  for (double c : obj)
    objScale = std::max(objScale, std::fabs(c));
  if (!(objScale > 0))
    objScale = 1;
  for (double &c : obj)
    c /= objScale;

  std::string outcome;
  {
    std::lock_guard<std::mutex> lock(cbcMutex);
    SingleBlasThread singleBlasThread;
    CbcModelDeleter model{Cbc_newModel()};
    Cbc_loadProblem(model.model, totalCols, totalRows, starts.data(),
                    index.data(), value.data(), colLower.data(),
                    colUpper.data(), obj.data(), rowLower.data(),
                    rowUpper.data());
    for (int c = 0; c < cols; ++c)
      Cbc_setInteger(model.model, c);
    Cbc_setObjSense(model.model, 1.0);
    Cbc_setLogLevel(model.model, 0);
    Cbc_setParameter(model.model, "timeMode", "elapsed");
    Cbc_setMaximumSeconds(
        model.model,
        std::min(1e7, std::max(0.01, options.timeLimitSeconds - elapsed())));
    // Only choices better than the best known are of interest, and any
    // improvement counts: CBC's default increment (1e-5) and gaps would
    // stop short of the optimum.
    double tol = std::max(tolerance() / objScale, 1e-12);
    Cbc_setCutoff(model.model, (bestObjective - offset) / objScale + tol);
    Cbc_setParameter(model.model, "increment", fmt(tol).c_str());
    Cbc_setParameter(model.model, "allowableGap", fmt(tol).c_str());
    Cbc_setParameter(model.model, "ratioGap", "1e-9");
    Cbc_solve(model.model);
    const double *solution = Cbc_bestSolution(model.model);
    if (solution) {
      std::vector<int> cbcLocal = local;
      for (int v = 0; v < n; ++v) {
        if (firstCol[v] < 0)
          continue;
        size_t k = work.nodes[v].size();
        int arg = 0;
        for (size_t i = 1; i < k; ++i)
          if (solution[firstCol[v] + i] > solution[firstCol[v] + arg])
            arg = static_cast<int>(i);
        cbcLocal[v] = arg;
      }
      consider(cbcLocal);
    }
    if (Cbc_isProvenOptimal(model.model) ||
        Cbc_isProvenInfeasible(model.model)) {
      // Infeasible under the cutoff: nothing beats the best known choice.
      outcome = "optimal";
    } else if (Cbc_isSecondsLimitReached(model.model)) {
      outcome =
          "time limit of " + fmt(options.timeLimitSeconds) +
          " s reached; not proven optimal (lower bound " +
          fmt(std::max(lowerBound,
                       Cbc_getBestPossibleObjValue(model.model) * objScale +
                           offset)) +
          ")";
    } else {
      outcome = "CBC stopped with status " +
                std::to_string(Cbc_status(model.model)) + "/" +
                std::to_string(Cbc_secondaryStatus(model.model)) +
                "; not proven optimal";
    }
  }
  return finish(problem, std::move(best),
                outcome + " (CBC on " + std::to_string(freeNodes) + " nodes, " +
                    std::to_string(liveEdges) + " edges, " +
                    std::to_string(totalCols) + " columns, " +
                    std::to_string(totalRows) + " rows; " + note + ")");
}

IlpSolution solveStrategiesExhaustive(const IlpProblem &problem) {
  if (std::string error = validate(problem); !error.empty())
    return failure("invalid strategy problem: " + error);
  double minMemory = minMemorySum(problem);
  if (!fitsMemory(minMemory, problem.memoryBound))
    return failure(infeasibleMessage(problem, minMemory));
  const size_t n = problem.nodes.size();
  double count = 1;
  for (const IlpNode &node : problem.nodes)
    count *= static_cast<double>(node.cost.size());
  if (count > 1e7)
    return failure("exhaustive search refused: " + fmt(count) +
                   " assignments (more than 10^7)");
  std::vector<int> choice(n, 0), best;
  double bestObjective = std::numeric_limits<double>::infinity();
  while (true) {
    if (fitsMemory(strategyMemory(problem, choice), problem.memoryBound)) {
      double objective = strategyObjective(problem, choice);
      if (objective < bestObjective) {
        bestObjective = objective;
        best = choice;
      }
    }
    size_t v = 0;
    while (v < n &&
           ++choice[v] == static_cast<int>(problem.nodes[v].cost.size()))
      choice[v++] = 0;
    if (v == n)
      break;
  }
  return finish(problem, std::move(best), "optimal (exhaustive)");
}

} // namespace weft::planner
