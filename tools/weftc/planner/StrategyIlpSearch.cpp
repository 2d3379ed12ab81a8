//===- StrategyIlpSearch.cpp - Choices and bounds for StrategyIlp ---------===//
//
// The search half of Work (StrategyIlpPresolve.h): evaluating a choice of the
// reduced problem and mapping it back to the caller's indices, a first choice
// within the memory bound, combining a priced choice over the bound with one
// within it, single-node local search, and the Lagrangian bound (memory
// priced, the live graph relaxed to a spanning forest, min-sum dynamic
// programming) that StrategyIlp.cpp searches the price of.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/StrategyIlpPresolve.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace weft::planner::presolve {

double Work::objective(const std::vector<int> &local) const {
  double total = 0;
  for (size_t v = 0; v < nodes.size(); ++v)
    if (nodes[v].alive)
      total += nodes[v].cost[local[v]];
  for (const WorkEdge &edge : edges)
    if (edge.alive)
      total += edge.r[local[edge.u] * nodes[edge.v].size() + local[edge.v]];
  return total;
}

std::vector<int> Work::toOriginal(std::vector<int> choice) const {
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

std::vector<int> Work::initialChoice() const {
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

double Work::memory(const std::vector<int> &local) const {
  double total = 0;
  for (size_t v = 0; v < nodes.size(); ++v)
    if (nodes[v].alive)
      total += nodes[v].mem[local[v]];
  return total;
}

double Work::nodeCost(int x, size_t i, const std::vector<int> &local) const {
  double total = nodes[x].cost[i];
  for (int id : nodes[x].edges)
    total += at(edges[id], x, i, local[other(x, edges[id])]);
  return total;
}

std::vector<int> Work::combine(const std::vector<int> &over,
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

std::vector<int> Work::localSearch(std::vector<int> local) const {
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

//===----------------------------------------------------------------------===//
// Lagrangian bound (see StrategyIlpPresolve.h).
//===----------------------------------------------------------------------===//

Work::Forest Work::buildForest() const {
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

Work::Priced Work::price(const Forest &forest, double lambda,
                         bool marginals) const {
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

} // namespace weft::planner::presolve
