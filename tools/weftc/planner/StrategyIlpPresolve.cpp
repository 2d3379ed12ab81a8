//===- StrategyIlpPresolve.cpp - StrategyIlp's exact presolve -------------===//
//
// The reductions of Work (StrategyIlpPresolve.h), StrategyIlp's working copy
// of the problem: parallel edges summed, separable edges folded, dominated
// strategies dropped, leaves and series nodes eliminated by dynamic
// programming while the memory row cannot bind, leaves merged into their
// neighbour on the cost-memory Pareto front while it can, and strategies
// dropped by a Lagrangian bound. Each leaves a Record to map choices back.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/StrategyIlpPresolve.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

namespace weft::planner::presolve {

Work::Work(const IlpProblem &problem) : bound(problem.memoryBound) {
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

void Work::addEdge(int u, int v, const std::vector<double> &r) {
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

void Work::removeEdge(int id) {
  WorkEdge &edge = edges[id];
  for (int x : {edge.u, edge.v}) {
    std::vector<int> &list = nodes[x].edges;
    list.erase(std::find(list.begin(), list.end(), id));
  }
  edge.alive = false;
  edge.r.clear();
  edge.r.shrink_to_fit();
}

bool Work::updateMemActive() {
  double maxSum = 0;
  for (const WorkNode &node : nodes)
    if (node.alive)
      maxSum += *std::max_element(node.mem.begin(), node.mem.end());
  bool was = memActive;
  memActive = !fitsMemory(maxSum, bound);
  return was && !memActive;
}

bool Work::foldIfSeparable(int id) {
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

bool Work::dominates(int x, size_t k, size_t i) const {
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

void Work::keepStrategies(int x, const std::vector<char> &keep) {
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

bool Work::dropDominated(int x) {
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

void Work::eliminateLeaf(int v) {
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

void Work::eliminateSeries(int v) {
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
        double c =
            nodes[v].cost[j] + at(edges[e1], a, i, j) + at(edges[e2], b, k, j);
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

bool Work::mergeLeaf(int v) {
  int id = nodes[v].edges[0];
  int u = other(v, edges[id]);
  const WorkNode &leaf = nodes[v];
  size_t nu = nodes[u].size(), nv = leaf.size();
  std::vector<int> pairU, pairV;
  std::vector<size_t> order(nv);
  for (size_t i = 0; i < nu; ++i) {
    auto cost = [&](size_t j) { return leaf.cost[j] + at(edges[id], u, i, j); };
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

void Work::presolve() {
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

//===----------------------------------------------------------------------===//
// Dropping by the Lagrangian bound (see Work::price in StrategyIlpSearch.cpp).
//===----------------------------------------------------------------------===//

bool Work::dropByBound(const Priced &priced, double cutoff) {
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

} // namespace weft::planner::presolve
