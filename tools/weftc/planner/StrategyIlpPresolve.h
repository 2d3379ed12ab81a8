//===- StrategyIlpPresolve.h - The exact presolve of StrategyIlp -*- C++
//-*-===//
//
// The working copy of an IlpProblem that StrategyIlp.cpp's solver reduces
// before CBC sees it (see StrategyIlp.h for the reductions) and the records
// that map a choice of the reduced problem back to the caller's nodes.
// Private to StrategyIlp.cpp, which includes it once.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILPPRESOLVE_H
#define WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILPPRESOLVE_H

#include "tools/weftc/planner/StrategyIlp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace weft::planner::presolve {

/// Memory within the bound, with a relative slack for rounding: the CBC
/// solver and the exhaustive one share this test.
bool fitsMemory(double memory, double bound) {
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

class Work {
public:
  std::vector<WorkNode> nodes;
  std::vector<WorkEdge> edges;
  std::vector<Record> records;
  double bound;
  bool memActive = false;
  int foldedEdges = 0, droppedStrategies = 0, eliminatedNodes = 0,
      mergedNodes = 0;

  explicit Work(const IlpProblem &problem) : bound(problem.memoryBound) {
    const size_t n = problem.nodes.size();
    nodes.resize(n);
    for (size_t v = 0; v < n; ++v) {
      nodes[v].cost = problem.nodes[v].cost;
      nodes[v].mem = problem.nodes[v].memory;
    }
    // Parallel edges, in either direction, become one.
    for (const IlpEdge &edge : problem.edges) {
      size_t nf = nodes[edge.from].size(), nt = nodes[edge.to].size();
      std::vector<double> r(edge.cost);
      if (edge.from > edge.to) { // Stored as [strategy of u][strategy of v].
        for (size_t i = 0; i < nf; ++i)
          for (size_t j = 0; j < nt; ++j)
            r[j * nf + i] = edge.cost[i * nt + j];
      }
      addEdge(std::min(edge.from, edge.to), std::max(edge.from, edge.to), r);
    }
    updateMemActive();
  }

  int other(int x, const WorkEdge &edge) const {
    return edge.u == x ? edge.v : edge.u;
  }

  /// Edge cost with node x at strategy i and its neighbour at strategy j.
  double at(const WorkEdge &edge, int x, size_t i, size_t j) const {
    return edge.u == x ? edge.r[i * nodes[edge.v].size() + j]
                       : edge.r[j * nodes[edge.v].size() + i];
  }

  /// Adds r ([u][v], u < v) to the u-v edge, creating it when missing.
  void addEdge(int u, int v, const std::vector<double> &r) {
    for (int id : nodes[u].edges)
      if (other(u, edges[id]) == v) {
        for (size_t k = 0; k < r.size(); ++k)
          edges[id].r[k] += r[k];
        return;
      }
    WorkEdge edge;
    edge.u = u;
    edge.v = v;
    edge.r = r;
    int id = static_cast<int>(edges.size());
    edges.push_back(std::move(edge));
    nodes[u].edges.push_back(id);
    nodes[v].edges.push_back(id);
  }

  void removeEdge(int id) {
    WorkEdge &edge = edges[id];
    for (int x : {edge.u, edge.v}) {
      std::vector<int> &list = nodes[x].edges;
      list.erase(std::find(list.begin(), list.end(), id));
    }
    edge.alive = false;
    edge.r.clear();
    edge.r.shrink_to_fit();
  }

  /// The memory row matters only while the worst case exceeds the bound.
  /// Returns whether it just stopped mattering.
  bool updateMemActive() {
    double maxSum = 0;
    for (const WorkNode &node : nodes)
      if (node.alive)
        maxSum += *std::max_element(node.mem.begin(), node.mem.end());
    bool was = memActive;
    memActive = !fitsMemory(maxSum, bound);
    return was && !memActive;
  }

  /// Folds the edge into its endpoints' costs when r[i][j] = a[i] + b[j]
  /// (every edge at a single-strategy node is such).
  bool foldIfSeparable(int id) {
    WorkEdge &edge = edges[id];
    WorkNode &u = nodes[edge.u], &v = nodes[edge.v];
    size_t nu = u.size(), nv = v.size();
    const std::vector<double> &r = edge.r;
    double scale = 0;
    for (double x : r)
      scale = std::max(scale, std::fabs(x));
    double tol = 1e-12 * scale;
    for (size_t i = 1; i < nu; ++i)
      for (size_t j = 1; j < nv; ++j)
        if (std::fabs(r[i * nv + j] - r[i * nv] - r[j] + r[0]) > tol)
          return false;
    for (size_t i = 0; i < nu; ++i)
      u.cost[i] += r[i * nv];
    for (size_t j = 0; j < nv; ++j)
      v.cost[j] += r[j] - r[0];
    removeEdge(id);
    ++foldedEdges;
    return true;
  }

  /// Whether strategy k of node x is no worse than strategy i in every
  /// respect the objective and the memory row see.
  bool dominates(int x, size_t k, size_t i) const {
    const WorkNode &node = nodes[x];
    if (node.cost[k] > node.cost[i])
      return false;
    if (memActive && node.mem[k] > node.mem[i])
      return false;
    for (int id : node.edges) {
      const WorkEdge &edge = edges[id];
      size_t no = nodes[other(x, edge)].size();
      for (size_t j = 0; j < no; ++j)
        if (at(edge, x, k, j) > at(edge, x, i, j))
          return false;
    }
    return true;
  }

  /// Keeps the strategies of node x that keep[] marks, renumbered in order.
  void keepStrategies(int x, const std::vector<char> &keep) {
    WorkNode &node = nodes[x];
    size_t n = node.size();
    for (int id : node.edges) {
      WorkEdge &edge = edges[id];
      size_t nu = nodes[edge.u].size(), nv = nodes[edge.v].size();
      std::vector<double> r;
      r.reserve(edge.r.size());
      for (size_t i = 0; i < nu; ++i)
        for (size_t j = 0; j < nv; ++j)
          if (edge.u == x ? keep[i] : keep[j])
            r.push_back(edge.r[i * nv + j]);
      edge.r = std::move(r);
    }
    Record record(Record::Keep);
    record.x = x;
    size_t out = 0;
    for (size_t i = 0; i < n; ++i)
      if (keep[i]) {
        record.a.push_back(static_cast<int>(i));
        node.cost[out] = node.cost[i];
        node.mem[out] = node.mem[i];
        ++out;
      }
    node.cost.resize(out);
    node.mem.resize(out);
    records.push_back(std::move(record));
  }

  /// Drops dominated strategies of node x; true when any went.
  bool dropDominated(int x) {
    size_t n = nodes[x].size();
    if (n < 2)
      return false;
    std::vector<char> keep(n, 1);
    size_t kept = n;
    for (size_t i = 0; i < n && kept > 1; ++i)
      for (size_t k = 0; k < n; ++k)
        if (k != i && keep[k] && dominates(x, k, i)) {
          keep[i] = 0;
          --kept;
          break;
        }
    if (kept == n)
      return false;
    droppedStrategies += static_cast<int>(n - kept);
    keepStrategies(x, keep);
    return true;
  }

  /// Without the memory row: a node with one neighbour takes, for each
  /// strategy of the neighbour, its best answer to it.
  void eliminateLeaf(int v) {
    int id = nodes[v].edges[0];
    int u = other(v, edges[id]);
    Record record(Record::Leaf);
    record.x = v;
    record.y = u;
    for (size_t i = 0; i < nodes[u].size(); ++i) {
      size_t best = 0;
      double bestCost = std::numeric_limits<double>::infinity();
      for (size_t j = 0; j < nodes[v].size(); ++j) {
        double c = nodes[v].cost[j] + at(edges[id], u, i, j);
        if (c < bestCost) {
          bestCost = c;
          best = j;
        }
      }
      nodes[u].cost[i] += bestCost;
      record.a.push_back(static_cast<int>(best));
    }
    removeEdge(id);
    nodes[v].alive = false;
    records.push_back(std::move(record));
    ++eliminatedNodes;
  }

  /// Without the memory row: a node with two neighbours becomes an edge
  /// between them, its best answer to each pair of their strategies.
  void eliminateSeries(int v) {
    int e1 = nodes[v].edges[0], e2 = nodes[v].edges[1];
    int a = other(v, edges[e1]), b = other(v, edges[e2]);
    if (a > b) {
      std::swap(a, b);
      std::swap(e1, e2);
    }
    size_t na = nodes[a].size(), nb = nodes[b].size(), nv = nodes[v].size();
    Record record(Record::Series);
    record.x = v;
    record.y = a;
    record.z = b;
    record.stride = static_cast<int>(nb);
    record.a.resize(na * nb);
    std::vector<double> r(na * nb);
    for (size_t i = 0; i < na; ++i)
      for (size_t k = 0; k < nb; ++k) {
        size_t best = 0;
        double bestCost = std::numeric_limits<double>::infinity();
        for (size_t j = 0; j < nv; ++j) {
          double c = nodes[v].cost[j] + at(edges[e1], a, i, j) +
                     at(edges[e2], b, k, j);
          if (c < bestCost) {
            bestCost = c;
            best = j;
          }
        }
        r[i * nb + k] = bestCost;
        record.a[i * nb + k] = static_cast<int>(best);
      }
    removeEdge(e1);
    removeEdge(e2);
    nodes[v].alive = false;
    addEdge(a, b, r);
    records.push_back(std::move(record));
    ++eliminatedNodes;
  }

  /// With the memory row: a node with one neighbour is merged into it, the
  /// neighbour's strategies becoming pairs; per strategy of the neighbour
  /// only the leaf's answers on the cost-memory Pareto front stay. Refused
  /// (false) when the neighbour would exceed kMergeCap strategies.
  bool mergeLeaf(int v) {
    int id = nodes[v].edges[0];
    int u = other(v, edges[id]);
    const WorkNode &leaf = nodes[v];
    size_t nu = nodes[u].size(), nv = leaf.size();
    std::vector<int> pairU, pairV;
    std::vector<size_t> order(nv);
    for (size_t i = 0; i < nu; ++i) {
      auto cost = [&](size_t j) {
        return leaf.cost[j] + at(edges[id], u, i, j);
      };
      for (size_t j = 0; j < nv; ++j)
        order[j] = j;
      std::sort(order.begin(), order.end(), [&](size_t p, size_t q) {
        double cp = cost(p), cq = cost(q);
        return cp < cq || (cp == cq && leaf.mem[p] < leaf.mem[q]);
      });
      double bestMem = std::numeric_limits<double>::infinity();
      for (size_t j : order)
        if (leaf.mem[j] < bestMem) {
          bestMem = leaf.mem[j];
          pairU.push_back(static_cast<int>(i));
          pairV.push_back(static_cast<int>(j));
        }
      if (pairU.size() > std::max(kMergeCap, nu))
        return false;
    }
    size_t nt = pairU.size();
    std::vector<double> cost(nt), mem(nt);
    for (size_t t = 0; t < nt; ++t) {
      cost[t] = nodes[u].cost[pairU[t]] + leaf.cost[pairV[t]] +
                at(edges[id], u, pairU[t], pairV[t]);
      mem[t] = nodes[u].mem[pairU[t]] + leaf.mem[pairV[t]];
    }
    removeEdge(id);
    for (int eid : nodes[u].edges) {
      WorkEdge &edge = edges[eid];
      size_t nw = nodes[other(u, edge)].size();
      std::vector<double> r(nt * nw);
      for (size_t t = 0; t < nt; ++t)
        for (size_t k = 0; k < nw; ++k) {
          double c = at(edge, u, pairU[t], k);
          if (edge.u == u)
            r[t * nw + k] = c;
          else
            r[k * nt + t] = c;
        }
      edge.r = std::move(r);
    }
    nodes[u].cost = std::move(cost);
    nodes[u].mem = std::move(mem);
    nodes[v].alive = false;
    Record record(Record::Merge);
    record.x = u;
    record.y = v;
    record.a = std::move(pairU);
    record.b = std::move(pairV);
    records.push_back(std::move(record));
    ++mergedNodes;
    return true;
  }

  /// Applies the reductions until none applies.
  void presolve() {
    const int n = static_cast<int>(nodes.size());
    std::deque<int> queue;
    std::vector<char> queued(n, 1);
    for (int v = 0; v < n; ++v)
      queue.push_back(v);
    auto push = [&](int v) {
      if (!queued[v] && nodes[v].alive) {
        queued[v] = 1;
        queue.push_back(v);
      }
    };
    auto pushAll = [&] {
      for (int v = 0; v < n; ++v)
        push(v);
    };
    auto pushNeighbours = [&](int x) {
      for (int id : nodes[x].edges)
        push(other(x, edges[id]));
    };
    while (!queue.empty()) {
      int x = queue.front();
      queue.pop_front();
      queued[x] = 0;
      if (!nodes[x].alive)
        continue;
      std::vector<int> incident = nodes[x].edges;
      for (int id : incident) {
        int y = other(x, edges[id]);
        if (foldIfSeparable(id))
          push(y);
      }
      if (dropDominated(x)) {
        pushNeighbours(x);
        // A smaller worst case may retire the memory row, which loosens
        // dominance everywhere and allows eliminations.
        if (memActive && updateMemActive())
          pushAll();
      }
      if (nodes[x].size() < 2)
        continue;
      size_t degree = nodes[x].edges.size();
      if (!memActive && degree == 1) {
        int u = other(x, edges[nodes[x].edges[0]]);
        eliminateLeaf(x);
        push(u);
      } else if (!memActive && degree == 2) {
        int a = other(x, edges[nodes[x].edges[0]]);
        int b = other(x, edges[nodes[x].edges[1]]);
        eliminateSeries(x);
        push(a);
        push(b);
      } else if (memActive && degree == 1) {
        int u = other(x, edges[nodes[x].edges[0]]);
        if (mergeLeaf(x)) {
          push(u);
          pushNeighbours(u);
          if (updateMemActive())
            pushAll();
        }
      }
    }
  }

  /// The total cost of a choice of the live nodes, in presolved terms.
  double objective(const std::vector<int> &local) const {
    double total = 0;
    for (size_t v = 0; v < nodes.size(); ++v)
      if (nodes[v].alive)
        total += nodes[v].cost[local[v]];
    for (const WorkEdge &edge : edges)
      if (edge.alive)
        total += edge.r[local[edge.u] * nodes[edge.v].size() + local[edge.v]];
    return total;
  }

  /// Extends a choice of the live nodes to every node, in the caller's
  /// strategy indices.
  std::vector<int> toOriginal(std::vector<int> choice) const {
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
      const Record &record = *it;
      switch (record.kind) {
      case Record::Keep:
        choice[record.x] = record.a[choice[record.x]];
        break;
      case Record::Leaf:
        choice[record.x] = record.a[choice[record.y]];
        break;
      case Record::Series:
        choice[record.x] =
            record.a[choice[record.y] * record.stride + choice[record.z]];
        break;
      case Record::Merge: {
        int t = choice[record.x];
        choice[record.x] = record.a[t];
        choice[record.y] = record.b[t];
        break;
      }
      }
    }
    return choice;
  }

  /// Least memory per node (least cost without a memory row): within the
  /// bound whenever the bound can be met.
  std::vector<int> initialChoice() const {
    std::vector<int> local(nodes.size(), 0);
    for (size_t v = 0; v < nodes.size(); ++v) {
      const WorkNode &node = nodes[v];
      if (!node.alive)
        continue;
      int best = 0;
      for (size_t i = 1; i < node.size(); ++i) {
        bool better = memActive ? (node.mem[i] < node.mem[best] ||
                                   (node.mem[i] == node.mem[best] &&
                                    node.cost[i] < node.cost[best]))
                                : node.cost[i] < node.cost[best];
        if (better)
          best = static_cast<int>(i);
      }
      local[v] = best;
    }
    return local;
  }

  double memory(const std::vector<int> &local) const {
    double total = 0;
    for (size_t v = 0; v < nodes.size(); ++v)
      if (nodes[v].alive)
        total += nodes[v].mem[local[v]];
    return total;
  }

  /// Cost of node x at strategy i given its neighbours' choices.
  double nodeCost(int x, size_t i, const std::vector<int> &local) const {
    double total = nodes[x].cost[i];
    for (int id : nodes[x].edges)
      total += at(edges[id], x, i, local[other(x, edges[id])]);
    return total;
  }

  /// Between a priced choice over the bound and one within it: the nodes
  /// where they differ fall into connected groups whose switches change
  /// cost and memory independently; switch groups from `over` to `within`,
  /// the least extra cost per byte saved first, until the bound holds, then
  /// switch back any group that still fits and saves cost.
  std::vector<int> combine(const std::vector<int> &over,
                           const std::vector<int> &within) const {
    const int n = static_cast<int>(nodes.size());
    std::vector<int> group(n, -1);
    std::vector<std::vector<int>> groups;
    for (int s = 0; s < n; ++s) {
      if (!nodes[s].alive || over[s] == within[s] || group[s] >= 0)
        continue;
      int g = static_cast<int>(groups.size());
      groups.push_back({s});
      group[s] = g;
      for (size_t head = 0; head < groups[g].size(); ++head) {
        int x = groups[g][head];
        for (int id : nodes[x].edges) {
          int y = other(x, edges[id]);
          if (over[y] != within[y] && group[y] < 0) {
            group[y] = g;
            groups[g].push_back(y);
          }
        }
      }
    }
    // Cost and memory of switching each group alone, from `over`.
    struct Switch {
      double cost, mem;
      int g;
    };
    std::vector<Switch> switches;
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      Switch sw{0, 0, g};
      for (int x : groups[g]) {
        sw.mem += nodes[x].mem[within[x]] - nodes[x].mem[over[x]];
        sw.cost += nodes[x].cost[within[x]] - nodes[x].cost[over[x]];
        for (int id : nodes[x].edges) {
          const WorkEdge &edge = edges[id];
          int y = other(x, edge);
          if (group[y] == g && y < x)
            continue; // Counted from y's side.
          int yWithin = group[y] == g ? within[y] : over[y];
          sw.cost +=
              at(edge, x, within[x], yWithin) - at(edge, x, over[x], over[y]);
        }
      }
      switches.push_back(sw);
    }
    auto ratio = [](const Switch &sw) {
      return sw.mem < 0 ? sw.cost / -sw.mem
                        : -std::numeric_limits<double>::infinity();
    };
    std::sort(
        switches.begin(), switches.end(),
        [&](const Switch &a, const Switch &b) { return ratio(a) < ratio(b); });
    std::vector<int> local = over;
    std::vector<char> done(switches.size(), 0);
    double memory = this->memory(local);
    for (size_t k = 0; k < switches.size(); ++k) {
      const Switch &sw = switches[k];
      bool costless = sw.mem <= 0 && sw.cost <= 0;
      if (!costless && (sw.mem >= 0 || fitsMemory(memory, bound)))
        continue;
      for (int x : groups[sw.g])
        local[x] = within[x];
      memory += sw.mem;
      done[k] = 1;
    }
    // Undo switches that cost more than they are needed for.
    for (size_t k = switches.size(); k-- > 0;) {
      const Switch &sw = switches[k];
      if (!done[k] || sw.cost <= 0 || !fitsMemory(memory - sw.mem, bound))
        continue;
      for (int x : groups[sw.g])
        local[x] = over[x];
      memory -= sw.mem;
    }
    if (!fitsMemory(memory, bound))
      return within;
    return local;
  }

  /// Sweeps of single-node moves that lower the cost and keep the bound,
  /// from a choice within the bound.
  std::vector<int> localSearch(std::vector<int> local) const {
    const size_t n = nodes.size();
    double memory = this->memory(local);
    for (int sweep = 0; sweep < 20; ++sweep) {
      bool improved = false;
      for (size_t x = 0; x < n; ++x) {
        const WorkNode &node = nodes[x];
        if (!node.alive || node.size() < 2)
          continue;
        auto localCost = [&](size_t i) {
          return nodeCost(static_cast<int>(x), i, local);
        };
        size_t current = local[x];
        double bestCost = localCost(current);
        size_t best = current;
        for (size_t i = 0; i < node.size(); ++i) {
          if (i == current)
            continue;
          double memAfter = memory - node.mem[current] + node.mem[i];
          if (memActive && !fitsMemory(memAfter, bound))
            continue;
          double c = localCost(i);
          if (c < bestCost - 1e-12 * std::max(1.0, std::fabs(bestCost))) {
            bestCost = c;
            best = i;
          }
        }
        if (best != current) {
          memory += node.mem[best] - node.mem[current];
          local[x] = static_cast<int>(best);
          improved = true;
        }
      }
      if (!improved)
        break;
    }
    return local;
  }

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

  Forest buildForest() const {
    const int n = static_cast<int>(nodes.size());
    Forest forest;
    forest.parentEdge.assign(n, -1);
    forest.root.assign(n, -1);
    forest.extra.resize(n);
    std::vector<char> seen(n, 0), treeEdge(edges.size(), 0);
    for (int root = 0; root < n; ++root) {
      if (!nodes[root].alive || seen[root])
        continue;
      seen[root] = 1;
      size_t head = forest.order.size();
      forest.order.push_back(root);
      while (head < forest.order.size()) {
        int x = forest.order[head++];
        forest.root[x] = root;
        for (int id : nodes[x].edges) {
          int y = other(x, edges[id]);
          if (seen[y])
            continue;
          seen[y] = 1;
          treeEdge[id] = 1;
          forest.parentEdge[y] = id;
          forest.order.push_back(y);
        }
      }
    }
    for (int v = 0; v < n; ++v)
      if (nodes[v].alive)
        forest.extra[v].assign(nodes[v].size(), 0.0);
    for (size_t id = 0; id < edges.size(); ++id) {
      const WorkEdge &edge = edges[id];
      if (!edge.alive || treeEdge[id])
        continue;
      size_t nv = nodes[edge.v].size();
      for (size_t i = 0; i < nodes[edge.u].size(); ++i)
        forest.extra[edge.u][i] += *std::min_element(
            edge.r.begin() + i * nv, edge.r.begin() + (i + 1) * nv);
    }
    return forest;
  }

  struct Priced {
    double bound = 0;       ///< min over choices of priced cost - lambda B.
    std::vector<int> local; ///< A choice reaching it (on the forest).
    /// Per node and strategy, the least priced cost of a choice using it,
    /// minus lambda B (filled when asked for).
    std::vector<std::vector<double>> marginal;
  };

  Priced price(const Forest &forest, double lambda, bool marginals) const {
    const size_t n = nodes.size();
    std::vector<std::vector<double>> f(n), up(n);
    std::vector<std::vector<int>> arg(n);
    for (int v : forest.order) {
      f[v] = forest.extra[v];
      for (size_t i = 0; i < nodes[v].size(); ++i)
        f[v][i] += nodes[v].cost[i] + lambda * nodes[v].mem[i];
    }
    Priced result;
    result.local.assign(n, 0);
    double total = 0;
    // Upward: a child's best answer to each strategy of its parent.
    std::vector<double> treeMin(n, 0.0);
    for (auto it = forest.order.rbegin(); it != forest.order.rend(); ++it) {
      int v = *it;
      int id = forest.parentEdge[v];
      if (id < 0) {
        treeMin[v] = *std::min_element(f[v].begin(), f[v].end());
        total += treeMin[v];
        continue;
      }
      int p = other(v, edges[id]);
      size_t np = nodes[p].size(), nv = nodes[v].size();
      up[v].assign(np, 0.0);
      arg[v].assign(np, 0);
      for (size_t i = 0; i < np; ++i) {
        double best = std::numeric_limits<double>::infinity();
        for (size_t j = 0; j < nv; ++j) {
          double c = f[v][j] + at(edges[id], p, i, j);
          if (c < best) {
            best = c;
            arg[v][i] = static_cast<int>(j);
          }
        }
        up[v][i] = best;
        f[p][i] += best;
      }
    }
    result.bound = total - lambda * bound;
    for (int v : forest.order) {
      int id = forest.parentEdge[v];
      if (id < 0)
        result.local[v] = static_cast<int>(
            std::min_element(f[v].begin(), f[v].end()) - f[v].begin());
      else
        result.local[v] = arg[v][result.local[other(v, edges[id])]];
    }
    if (!marginals)
      return result;
    // Downward: f becomes the full min-marginal, parents first.
    for (int v : forest.order) {
      int id = forest.parentEdge[v];
      if (id < 0)
        continue;
      int p = other(v, edges[id]);
      size_t np = nodes[p].size(), nv = nodes[v].size();
      std::vector<double> down(nv, std::numeric_limits<double>::infinity());
      for (size_t i = 0; i < np; ++i) {
        double rest = f[p][i] - up[v][i];
        for (size_t j = 0; j < nv; ++j)
          down[j] = std::min(down[j], rest + at(edges[id], p, i, j));
      }
      for (size_t j = 0; j < nv; ++j)
        f[v][j] += down[j];
    }
    // Other trees contribute their own minima.
    result.marginal.resize(n);
    for (int v : forest.order) {
      result.marginal[v] = f[v];
      double rest = total - treeMin[forest.root[v]] - lambda * bound;
      for (double &m : result.marginal[v])
        m += rest;
    }
    return result;
  }

  /// Drops every strategy whose bound exceeds `cutoff`; true when any went.
  bool dropByBound(const Priced &priced, double cutoff) {
    bool any = false;
    for (size_t v = 0; v < nodes.size(); ++v) {
      if (!nodes[v].alive || nodes[v].size() < 2)
        continue;
      const std::vector<double> &m = priced.marginal[v];
      size_t keepAnyway = std::min_element(m.begin(), m.end()) - m.begin();
      std::vector<char> keep(m.size());
      size_t kept = 0;
      for (size_t i = 0; i < m.size(); ++i) {
        keep[i] = i == keepAnyway || !(m[i] > cutoff);
        kept += keep[i];
      }
      if (kept == m.size())
        continue;
      boundDropped += static_cast<int>(m.size() - kept);
      keepStrategies(static_cast<int>(v), keep);
      any = true;
    }
    return any;
  }

  int boundDropped = 0;
};

} // namespace weft::planner::presolve

#endif // WEFT_TOOLS_WEFTC_PLANNER_STRATEGYILPPRESOLVE_H
