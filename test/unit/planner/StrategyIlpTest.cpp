//===- StrategyIlpTest.cpp - The strategy integer program -----------------===//
//
// solveStrategies (presolve + CBC) on hand-computed cases, on bad input, and
// against solveStrategiesExhaustive on random small problems; a 2000-node
// chain against dynamic programming and the clock.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/StrategyIlp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <random>

using namespace weft::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

IlpNode node(std::string name, std::vector<double> cost,
             std::vector<double> memory = {}) {
  if (memory.empty())
    memory.assign(cost.size(), 0.0);
  return IlpNode{std::move(name), std::move(cost), std::move(memory)};
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Cheapest per node (0, 1, 0) costs 3 but pays 5 + 5 for resharding; the
// consistent (0, 0, 0) costs 1 + 2 + 1 = 4.
IlpProblem threeNodeChain() {
  IlpProblem p;
  p.nodes = {node("a", {1, 2}), node("b", {2, 1}), node("c", {1, 2})};
  std::vector<double> r = {0, 5, 5, 0};
  p.edges = {{0, 1, r}, {1, 2, r}};
  return p;
}

TEST(StrategyIlp, ReshardingBeatsCheapestPerNode) {
  IlpProblem p = threeNodeChain();
  IlpSolution s = solveStrategies(p);
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_EQ(s.choice, (std::vector<int>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(s.objective, 4.0);
  EXPECT_TRUE(contains(s.message, "optimal")) << s.message;
  EXPECT_DOUBLE_EQ(strategyObjective(p, {0, 1, 0}), 13.0);
  IlpSolution e = solveStrategiesExhaustive(p);
  ASSERT_TRUE(e.feasible);
  EXPECT_DOUBLE_EQ(e.objective, 4.0);
}

// Replicated (cost 1, 100 bytes) or sharded; a resharding cost of 1 when the
// two differ. Unbounded: both replicated, 2. Under 150 bytes: (0, 1) costs
// 1 + 2 + 1 = 4 at exactly 150 bytes; (1, 0) 5, (1, 1) 5.
IlpProblem memoryPair(double bound) {
  IlpProblem p;
  p.nodes = {node("a", {1, 3}, {100, 25}), node("b", {1, 2}, {100, 50})};
  p.edges = {{0, 1, {0, 1, 1, 0}}};
  p.memoryBound = bound;
  return p;
}

TEST(StrategyIlp, MemoryBoundForcesCostlierStrategy) {
  IlpSolution free = solveStrategies(memoryPair(kInf));
  ASSERT_TRUE(free.feasible) << free.message;
  EXPECT_EQ(free.choice, (std::vector<int>{0, 0}));
  EXPECT_DOUBLE_EQ(free.objective, 2.0);
  EXPECT_DOUBLE_EQ(free.memory, 200.0);

  IlpSolution bounded = solveStrategies(memoryPair(150));
  ASSERT_TRUE(bounded.feasible) << bounded.message;
  EXPECT_EQ(bounded.choice, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(bounded.objective, 4.0);
  EXPECT_DOUBLE_EQ(bounded.memory, 150.0);

  IlpSolution tight = solveStrategies(memoryPair(100));
  ASSERT_TRUE(tight.feasible) << tight.message;
  EXPECT_EQ(tight.choice, (std::vector<int>{1, 1}));
  EXPECT_DOUBLE_EQ(tight.objective, 5.0);
  EXPECT_DOUBLE_EQ(tight.memory, 75.0);
}

TEST(StrategyIlp, InfeasibleBoundNamesSmallestMemory) {
  for (bool exhaustive : {false, true}) {
    IlpProblem p = memoryPair(74);
    IlpSolution s =
        exhaustive ? solveStrategiesExhaustive(p) : solveStrategies(p);
    EXPECT_FALSE(s.feasible);
    EXPECT_TRUE(s.choice.empty());
    // 25 + 50: each node at its least-memory strategy.
    EXPECT_TRUE(contains(s.message, "smallest achievable memory is 75 bytes"))
        << s.message;
    EXPECT_TRUE(contains(s.message, "74")) << s.message;
  }
  // Exactly at the minimum is feasible.
  IlpSolution s = solveStrategies(memoryPair(75));
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_DOUBLE_EQ(s.memory, 75.0);
}

TEST(StrategyIlp, InvalidInputIsReported) {
  struct Case {
    const char *what;
    IlpProblem problem;
    const char *expect;
  };
  std::vector<Case> cases;
  {
    IlpProblem p = threeNodeChain();
    p.nodes[1].memory = {0};
    cases.push_back({"memory size", p,
                     "node 1 ('b') has 2 strategy costs "
                     "but 1 memory entries"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.nodes[2].cost = {};
    p.nodes[2].memory = {};
    cases.push_back({"no strategies", p, "node 2 ('c') has no strategies"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.nodes[0].cost[1] = -1;
    cases.push_back({"negative cost", p, "cost of strategy 1 is -1"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.nodes[0].cost[0] = std::nan("");
    cases.push_back({"NaN cost", p, "node 0 ('a'): cost of strategy 0"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.nodes[0].memory[0] = kInf;
    cases.push_back({"infinite memory", p, "memory of strategy 0 is inf"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.edges[1].to = 3;
    cases.push_back({"missing node", p, "target node 3 does not exist"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.edges[0].from = -1;
    cases.push_back({"negative node", p, "source node -1 does not exist"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.edges[1].from = 2;
    cases.push_back({"self-edge", p, "self-edge on node 2"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.edges[0].cost = {0, 1, 2};
    cases.push_back({"edge size", p, "3 resharding costs, expected 2 x 2"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.edges[1].cost[3] = kInf;
    cases.push_back({"infinite edge", p, "resharding cost [1][1] is inf"});
  }
  {
    IlpProblem p = threeNodeChain();
    p.memoryBound = std::nan("");
    cases.push_back({"NaN bound", p, "memory bound is NaN"});
  }
  for (const Case &c : cases) {
    for (bool exhaustive : {false, true}) {
      IlpSolution s = exhaustive ? solveStrategiesExhaustive(c.problem)
                                 : solveStrategies(c.problem);
      EXPECT_FALSE(s.feasible) << c.what;
      EXPECT_TRUE(contains(s.message, "invalid strategy problem")) << c.what;
      EXPECT_TRUE(contains(s.message, c.expect)) << c.what << ": " << s.message;
    }
  }
  IlpSolution s = solveStrategies(threeNodeChain(), 0.0);
  EXPECT_FALSE(s.feasible);
  EXPECT_TRUE(contains(s.message, "time limit")) << s.message;
}

TEST(StrategyIlp, EmptyProblem) {
  IlpSolution s = solveStrategies(IlpProblem{});
  EXPECT_TRUE(s.feasible) << s.message;
  EXPECT_TRUE(s.choice.empty());
  EXPECT_EQ(s.objective, 0.0);
}

// A single-strategy node's edges fold into its neighbours, and edges given
// twice (once reversed) add up.
TEST(StrategyIlp, FixedNodesAndParallelEdges) {
  IlpProblem p;
  p.nodes = {node("fixed", {1}), node("x", {0, 0, 0}), node("y", {0, 0})};
  p.edges = {{0, 1, {5, 0, 3}},
             // x -> y and y -> x: together [[0 + 0, 4 + 1], [2 + 2, 0 + 9],
             // [1 + 7, 1 + 1]] in [x][y].
             {1, 2, {0, 4, 2, 0, 1, 1}},
             {2, 1, {0, 2, 7, 1, 9, 1}}};
  // (x, y): (0,0) 5+0, (0,1) 5+5, (1,0) 0+4, (1,1) 0+9, (2,0) 3+8, (2,1)
  // 3+2: x = 1, y = 0 costs 1 + 4 = 5.
  IlpSolution s = solveStrategies(p);
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_EQ(s.choice, (std::vector<int>{0, 1, 0}));
  EXPECT_DOUBLE_EQ(s.objective, 5.0);
  EXPECT_DOUBLE_EQ(solveStrategiesExhaustive(p).objective, 5.0);
}

// Strategy 0 of "b" is dominated by its strategy 2 (cheaper, less memory,
// no worse resharding), as is "a"'s 1 by its 0; the answer names the
// caller's indices.
TEST(StrategyIlp, DominatedStrategiesMapBack) {
  IlpProblem p;
  p.nodes = {node("a", {1, 1}, {10, 20}), node("b", {2.5, 5, 2}, {30, 5, 20})};
  p.edges = {{0, 1, {1, 0, 1, 3, 1, 2}}};
  p.memoryBound = 45;
  // (a, b): (0,0) 1+2.5+1 = 4.5 at 40 B, (0,1) 1+5+0 = 6, (0,2) 1+2+1 = 4
  // at 30 B, (1,0) over at 50 B, (1,1) 1+5+1 = 7, (1,2) 1+2+2 = 5 at 40 B.
  IlpSolution s = solveStrategies(p);
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_EQ(s.choice, (std::vector<int>{0, 2}));
  EXPECT_DOUBLE_EQ(s.objective, 4.0);
  EXPECT_DOUBLE_EQ(s.memory, 30.0);
}

// Small integers for ties and dominance, sometimes fractions.
double randomValue(std::mt19937_64 &rng, int range) {
  double v = static_cast<double>(rng() % (range + 1));
  if (rng() % 3 == 0)
    v += static_cast<double>(rng() % 1000) / 1000.0;
  return v;
}

IlpProblem randomProblem(std::mt19937_64 &rng) {
  IlpProblem p;
  int n = 1 + static_cast<int>(rng() % 7);
  for (int v = 0; v < n; ++v) {
    int k = 1 + static_cast<int>(rng() % 4);
    IlpNode nd;
    nd.name = "n" + std::to_string(v);
    for (int i = 0; i < k; ++i) {
      nd.cost.push_back(randomValue(rng, 10));
      nd.memory.push_back(randomValue(rng, 20));
    }
    p.nodes.push_back(nd);
  }
  auto addEdge = [&](int a, int b) {
    IlpEdge e{a, b, {}};
    size_t size = p.nodes[a].cost.size() * p.nodes[b].cost.size();
    bool zeroDiagonal =
        rng() % 2 == 0 && p.nodes[a].cost.size() == p.nodes[b].cost.size();
    for (size_t k = 0; k < size; ++k) {
      bool diagonal = k / p.nodes[b].cost.size() == k % p.nodes[b].cost.size();
      e.cost.push_back(zeroDiagonal && diagonal ? 0.0 : randomValue(rng, 8));
    }
    p.edges.push_back(e);
  };
  // A tree (each node to an earlier one, either direction), then a few extra
  // edges: cycles, parallel and reversed edges.
  for (int v = 1; v < n; ++v) {
    int u = static_cast<int>(rng() % v);
    if (rng() % 2)
      addEdge(u, v);
    else
      addEdge(v, u);
  }
  if (n > 1) {
    int extra = static_cast<int>(rng() % 4);
    for (int k = 0; k < extra; ++k) {
      int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
      if (a != b)
        addEdge(a, b);
    }
  }
  double minMem = 0, maxMem = 0;
  for (const IlpNode &nd : p.nodes) {
    minMem += *std::min_element(nd.memory.begin(), nd.memory.end());
    maxMem += *std::max_element(nd.memory.begin(), nd.memory.end());
  }
  switch (rng() % 6) {
  case 0:
    p.memoryBound = kInf;
    break;
  case 1:
    p.memoryBound = minMem; // Exactly the least.
    break;
  case 2:
    p.memoryBound = minMem - 1; // Infeasible.
    break;
  default: // Somewhere between, an integer so some choices hit it exactly.
    p.memoryBound =
        std::floor(minMem + (maxMem - minMem) *
                                static_cast<double>(rng() % 1000) / 1000.0);
    break;
  }
  return p;
}

TEST(StrategyIlp, MatchesExhaustiveOnRandomProblems) {
  std::mt19937_64 rng(20221011);
  int feasible = 0, infeasible = 0, byCbc = 0;
  IlpOptions plain;
  plain.presolve = false;
  for (int trial = 0; trial < 200; ++trial) {
    IlpProblem p = randomProblem(rng);
    IlpSolution ref = solveStrategiesExhaustive(p);
    for (bool presolve : {true, false}) {
      IlpSolution s = presolve ? solveStrategies(p) : solveStrategies(p, plain);
      std::string where = "trial " + std::to_string(trial) +
                          (presolve ? "" : " without presolve") + ": " +
                          s.message + " / " + ref.message;
      ASSERT_EQ(s.feasible, ref.feasible) << where;
      if (!ref.feasible) {
        EXPECT_TRUE(contains(s.message, "smallest achievable memory")) << where;
        EXPECT_TRUE(s.choice.empty()) << where;
        continue;
      }
      EXPECT_NEAR(s.objective, ref.objective,
                  1e-6 * std::max(1.0, std::fabs(ref.objective)))
          << where;
      ASSERT_EQ(s.choice.size(), p.nodes.size()) << where;
      EXPECT_DOUBLE_EQ(s.objective, strategyObjective(p, s.choice)) << where;
      EXPECT_DOUBLE_EQ(s.memory, strategyMemory(p, s.choice)) << where;
      EXPECT_LE(s.memory, p.memoryBound) << where;
      EXPECT_TRUE(contains(s.message, "optimal")) << where;
      EXPECT_FALSE(contains(s.message, "not proven")) << where;
      if (presolve && contains(s.message, "CBC on"))
        ++byCbc;
    }
    ++(ref.feasible ? feasible : infeasible);
  }
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 10);
  // Presolve settles many alone; enough are left to CBC to test it too.
  EXPECT_GT(byCbc, 10);
}

// Layers of ops, each consuming one to `fanIn` of the `window` ops before it
// (residual-like cycles when fanIn > 1). Strategy i shards 2^i ways: less
// compute and memory, some communication; resharding costs in proportion to
// the tensor.
IlpProblem randomDag(int n, int maxStrategies, int fanIn, int window,
                     uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() % 1000000) / 1e6; };
  IlpProblem p;
  std::vector<double> bytes(n);
  for (int v = 0; v < n; ++v) {
    int k = 1 + static_cast<int>(rng() % maxStrategies);
    bytes[v] = std::pow(10.0, 5 + 3 * uniform());
    double flops = bytes[v] * (1 + 100 * uniform());
    IlpNode nd;
    nd.name = "op" + std::to_string(v);
    for (int i = 0; i < k; ++i) {
      double ways = static_cast<double>(1 << i);
      nd.cost.push_back(flops / ways / 1e12 +
                        (i ? bytes[v] / 1e10 * uniform() : 0.0));
      nd.memory.push_back(bytes[v] * (1 + 3 * uniform()) / ways);
    }
    p.nodes.push_back(nd);
    if (v == 0)
      continue;
    int inputs = 1 + static_cast<int>(rng() % fanIn);
    for (int e = 0; e < inputs; ++e) {
      int u = v - 1 - static_cast<int>(rng() % std::min(v, window));
      IlpEdge edge{u, v, {}};
      for (size_t i = 0; i < p.nodes[u].cost.size(); ++i)
        for (int j = 0; j < k; ++j)
          edge.cost.push_back(static_cast<int>(i) == j
                                  ? 0.0
                                  : bytes[u] / 1e10 * (0.5 + uniform()));
      p.edges.push_back(edge);
    }
  }
  return p;
}

double leastMemory(const IlpProblem &p) {
  double sum = 0;
  for (const IlpNode &nd : p.nodes)
    sum += *std::min_element(nd.memory.begin(), nd.memory.end());
  return sum;
}

// Presolve (eliminations, merges, Lagrangian bounds) against CBC on the
// whole program, on problems too big to enumerate.
TEST(StrategyIlp, PresolveMatchesPlainCbc) {
  IlpOptions plain;
  plain.presolve = false;
  plain.timeLimitSeconds = 60;
  for (int seed = 1; seed <= 12; ++seed) {
    IlpProblem p = randomDag(20 + 3 * seed, 2 + seed % 5, 1 + seed % 3,
                             2 + seed % 5, seed);
    IlpSolution unbounded = solveStrategies(p);
    ASSERT_TRUE(unbounded.feasible) << unbounded.message;
    double least = leastMemory(p);
    for (double fraction : {2.0, 0.7, 0.3, 0.05}) {
      p.memoryBound = least + fraction * (unbounded.memory - least);
      IlpSolution a = solveStrategies(p);
      IlpSolution b = solveStrategies(p, plain);
      std::string where = "seed " + std::to_string(seed) + " fraction " +
                          std::to_string(fraction) + ": " + a.message + " / " +
                          b.message;
      ASSERT_TRUE(a.feasible && b.feasible) << where;
      EXPECT_NEAR(a.objective, b.objective, 1e-6 * b.objective) << where;
      EXPECT_LE(a.memory, p.memoryBound) << where;
      EXPECT_FALSE(contains(a.message, "not proven")) << where;
      EXPECT_FALSE(contains(b.message, "not proven")) << where;
    }
  }
}

// Min-cost over a chain by dynamic programming: the reference when there is
// no memory bound.
double chainOptimum(const IlpProblem &p) {
  std::vector<double> best = p.nodes[0].cost;
  for (size_t v = 1; v < p.nodes.size(); ++v) {
    const std::vector<double> &r = p.edges[v - 1].cost;
    size_t k = p.nodes[v].cost.size();
    std::vector<double> next(k, kInf);
    for (size_t j = 0; j < k; ++j)
      for (size_t i = 0; i < best.size(); ++i)
        next[j] = std::min(next[j], best[i] + r[i * k + j]);
    for (size_t j = 0; j < k; ++j)
      next[j] += p.nodes[v].cost[j];
    best = next;
  }
  return *std::min_element(best.begin(), best.end());
}

IlpProblem randomChain(int n, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() % 1000000) / 1e6; };
  IlpProblem p;
  for (int v = 0; v < n; ++v) {
    IlpNode nd;
    nd.name = "op" + std::to_string(v);
    for (int i = 0; i < k; ++i) {
      // Sharding more ways: less compute and memory, communication varies.
      nd.cost.push_back(1e-3 * (1.0 / (i + 1) + uniform()));
      nd.memory.push_back(1e8 * (1.0 / (i + 1)) * (1 + uniform()));
    }
    p.nodes.push_back(nd);
    if (v > 0) {
      IlpEdge e{v - 1, v, {}};
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j)
          e.cost.push_back(i == j ? 0.0 : 1e-3 * uniform());
      p.edges.push_back(e);
    }
  }
  return p;
}

// The solver runs on one thread: its CPU time, unlike wall-clock time, does
// not grow when other tests share the cores (CI runs two at once here).
std::clock_t cpuNow() { return std::clock(); }
double secondsSince(std::clock_t t0) {
  return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
}

TEST(StrategyIlp, LongChainIsFast) {
  IlpProblem p = randomChain(2000, 4, 7);
  auto t0 = cpuNow();
  IlpSolution s = solveStrategies(p);
  double seconds = secondsSince(t0);
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_TRUE(contains(s.message, "optimal")) << s.message;
  EXPECT_NEAR(s.objective, chainOptimum(p), 1e-9 * chainOptimum(p));
  EXPECT_LT(seconds, 2.0);
  std::printf("[ timing   ] 2000-node chain, 4 strategies, no bound: %.3f s "
              "(%s)\n",
              seconds, s.message.c_str());

  // Halfway between the least memory and the unbounded optimum's: the
  // memory row binds.
  p.memoryBound = 0.5 * (leastMemory(p) + s.memory);
  t0 = cpuNow();
  IlpSolution b = solveStrategies(p);
  seconds = secondsSince(t0);
  ASSERT_TRUE(b.feasible) << b.message;
  EXPECT_TRUE(contains(b.message, "optimal")) << b.message;
  EXPECT_FALSE(contains(b.message, "not proven")) << b.message;
  EXPECT_LE(b.memory, p.memoryBound);
  EXPECT_GT(b.objective, s.objective);
  EXPECT_LT(seconds, 2.0);
  std::printf("[ timing   ] 2000-node chain, 4 strategies, bound binding: "
              "%.3f s (%s)\n",
              seconds, b.message.c_str());
}

// A 3000-op tree-like graph (each op reads one of the ten before it) with
// up to 8 strategies, with and without a binding memory bound.
TEST(StrategyIlp, LargeTreeIsFast) {
  IlpProblem p = randomDag(3000, 8, 1, 10, 11);
  auto t0 = cpuNow();
  IlpSolution s = solveStrategies(p);
  double seconds = secondsSince(t0);
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_TRUE(contains(s.message, "optimal")) << s.message;
  EXPECT_LT(seconds, 2.0);
  std::printf("[ timing   ] 3000-node tree, <= 8 strategies, no bound: %.3f s "
              "(%s)\n",
              seconds, s.message.c_str());
  for (double fraction : {0.5, 0.1}) {
    p.memoryBound = leastMemory(p) + fraction * (s.memory - leastMemory(p));
    t0 = cpuNow();
    IlpSolution b = solveStrategies(p);
    seconds = secondsSince(t0);
    ASSERT_TRUE(b.feasible) << b.message;
    EXPECT_FALSE(contains(b.message, "not proven")) << b.message;
    EXPECT_LE(b.memory, p.memoryBound);
    // The 10% bound leaves CBC ~400 nodes: 1.6-2.0 s here, so the budget
    // is 5 s (half the planner's default time limit), not 2 s.
    EXPECT_LT(seconds, 5.0);
    std::printf(
        "[ timing   ] 3000-node tree, <= 8 strategies, bound at %.0f%%: "
        "%.3f s (%s)\n",
        fraction * 100, seconds, b.message.c_str());
  }
}

// When CBC cannot finish in time the best choice found so far comes back,
// within the bound and marked as not proven.
TEST(StrategyIlp, TimeLimitReturnsBestKnown) {
  IlpProblem p = randomDag(3000, 8, 2, 10, 1);
  IlpSolution unbounded = solveStrategies(p);
  ASSERT_TRUE(unbounded.feasible) << unbounded.message;
  p.memoryBound = leastMemory(p) + 0.5 * (unbounded.memory - leastMemory(p));
  auto t0 = cpuNow();
  IlpSolution s = solveStrategies(p, 0.5);
  double seconds = secondsSince(t0);
  ASSERT_TRUE(s.feasible) << s.message;
  EXPECT_LE(s.memory, p.memoryBound);
  EXPECT_GE(s.objective, unbounded.objective);
  EXPECT_TRUE(contains(s.message, "time limit of 0.5 s reached") ||
              !contains(s.message, "not proven"))
      << s.message;
  EXPECT_LT(seconds, 5.0);
  std::printf("[ timing   ] 3000-node DAG with cycles, bound binding, 0.5 s "
              "limit: %.3f s (%s)\n",
              seconds, s.message.c_str());
}

} // namespace
