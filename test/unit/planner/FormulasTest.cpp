//===- FormulasTest.cpp - The cost model's formulas and cluster files -----===//
//
// Each formula of DESIGN.md's cost model against values computed by hand,
// and the cluster presets and files: sizes, links, and the errors a bad
// file gets.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/Formulas.h"
#include "tools/weftc/planner/Cluster.h"

#include <gtest/gtest.h>

using namespace weft::planner;

namespace {

const Link kLink{/*bandwidth=*/1e9, /*latency=*/1e-5};

TEST(Formulas, AllReduceIsTwoRingPasses) {
  // 2 (p-1) a + 2 (p-1)/p n/B = 6e-5 + 1.5e-3.
  EXPECT_NEAR(allReduceTime(4, 1e6, kLink), 1.56e-3, 1e-12);
  EXPECT_NEAR(allReduceTime(2, 1e6, kLink), 2e-5 + 1e-3, 1e-12);
  EXPECT_EQ(allReduceTime(1, 1e6, kLink), 0.0);
  EXPECT_EQ(allReduceTime(4, 0, kLink), 0.0);
}

TEST(Formulas, GatherAndScatterAreOnePass) {
  // (p-1) a + (p-1)/p n/B = 3e-5 + 7.5e-4.
  EXPECT_NEAR(allGatherTime(4, 1e6, kLink), 7.8e-4, 1e-12);
  EXPECT_NEAR(reduceScatterTime(4, 1e6, kLink), 7.8e-4, 1e-12);
  // Reduce-scatter + all-gather moves what one all-reduce moves.
  EXPECT_NEAR(reduceScatterTime(8, 3e7, kLink) + allGatherTime(8, 3e7, kLink),
              allReduceTime(8, 3e7, kLink), 1e-12);
  EXPECT_NEAR(sendRecvTime(1e6, kLink), 1.01e-3, 1e-12);
}

TEST(Formulas, Bubbles) {
  EXPECT_NEAR(bubbleFraction("1f1b", 4, 8), 3.0 / 11.0, 1e-12);
  EXPECT_NEAR(bubbleFraction("gpipe", 2, 2), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(bubbleFraction("interleaved", 4, 8, 2), 3.0 / 19.0, 1e-12);
  EXPECT_EQ(bubbleFraction("1f1b", 1, 8), 0.0);
  // 1F1B idles (p-1)(F+B+W); ZB-H1 fills W into it: (p-1)(F+B-W).
  EXPECT_NEAR(bubbleTime("1f1b", 4, 1, 1.0, 1.0, 1.0), 9.0, 1e-12);
  EXPECT_NEAR(bubbleTime("zb-h1", 4, 1, 1.0, 1.0, 1.0), 3.0, 1e-12);
  EXPECT_NEAR(bubbleTime("zb-h1", 4, 1, 1.0, 1.0, 3.0), 0.0, 1e-12);
  // The bubble time over the step time is the fraction when balanced.
  double f = 1, b = 2, m = 8, p = 4;
  EXPECT_NEAR(bubbleTime("1f1b", 4, 1, f, b, 0) /
                  (m * (f + b) + bubbleTime("1f1b", 4, 1, f, b, 0)),
              bubbleFraction("1f1b", 4, 8), 1e-12);
  (void)p;
}

TEST(Formulas, InFlightMicrobatches) {
  EXPECT_EQ(inFlightMicrobatches("gpipe", 4, 0, 8, 1), 8.0);
  EXPECT_EQ(inFlightMicrobatches("1f1b", 4, 0, 8, 1), 4.0);
  EXPECT_EQ(inFlightMicrobatches("1f1b", 4, 3, 8, 1), 1.0);
  EXPECT_EQ(inFlightMicrobatches("1f1b", 4, 0, 2, 1), 2.0);
  EXPECT_EQ(inFlightMicrobatches("zb-h1", 4, 1, 8, 1), 3.0);
  // Interleaved, p=4, v=2, stage 0: (1*4 + 2*3 + 1) chunks / 2 = 5.5.
  EXPECT_EQ(inFlightMicrobatches("interleaved", 4, 0, 8, 2), 5.5);
}

TEST(Formulas, ZeroStages) {
  StateBytes full{100, 100, 200};
  StateBytes z0 = zeroStateBytes(full, 0, 4, false);
  EXPECT_EQ(z0.total(), 400.0);
  StateBytes z1 = zeroStateBytes(full, 1, 4, false);
  EXPECT_EQ(z1.optimizer, 50.0);
  EXPECT_EQ(z1.gradients, 100.0);
  StateBytes z2 = zeroStateBytes(full, 2, 4, false);
  EXPECT_EQ(z2.gradients, 25.0);
  EXPECT_EQ(z2.params, 100.0);
  StateBytes z3 = zeroStateBytes(full, 3, 4, false);
  EXPECT_EQ(z3.total(), 100.0);
  // Accumulating microbatches keeps whole gradients.
  EXPECT_EQ(zeroStateBytes(full, 2, 4, true).gradients, 100.0);
  // One data-parallel rank keeps everything.
  EXPECT_EQ(zeroStateBytes(full, 3, 1, false).total(), 400.0);
}

TEST(Formulas, CollectivesHideBehindTheKernelsBetweenStartAndWait) {
  const std::vector<double> kernels{1, 1, 1, 1};
  // Started before kernel 0, waited for before kernel 2: 1.5 s of
  // transfer under 2 s of kernels costs nothing when it overlaps fully,
  // and half of its time at overlap 0.5 (the kernels it slows).
  EXPECT_EQ(overlappedCommTimes(kernels, {{0, 2, 1.5}}, 1.0)[0], 0.0);
  EXPECT_EQ(overlappedCommTimes(kernels, {{0, 2, 1.5}}, 0.5)[0], 0.75);
  // 3 s of transfer: the kernels wait 1 s for it; of the 2 s under
  // kernels, overlap 0.5 charges 1 s.
  EXPECT_EQ(overlappedCommTimes(kernels, {{0, 2, 3.0}}, 1.0)[0], 1.0);
  EXPECT_EQ(overlappedCommTimes(kernels, {{0, 2, 3.0}}, 0.5)[0], 2.0);
  // A blocking collective (waited for where it starts) costs its time.
  EXPECT_EQ(overlappedCommTimes(kernels, {{3, 3, 0.25}}, 1.0)[0], 0.25);
  // Without overlap every collective costs its time.
  std::vector<double> none =
      overlappedCommTimes(kernels, {{0, 4, 2.0}, {1, 1, 1.0}}, 0.0);
  EXPECT_EQ(none, (std::vector<double>{2.0, 1.0}));
}

TEST(Formulas, CollectivesRunOneAtATime) {
  // A (2 s, waited for at the end) holds the link when blocking B (1 s)
  // starts after kernel 0: B runs from 2 s to 3 s and the kernels stand
  // still from 1 s to 3 s, which B is charged; A then ends long before its
  // wait. At overlap 0.5, A's second under the kernels costs half.
  const std::vector<double> kernels{1, 1, 1, 1};
  std::vector<double> full =
      overlappedCommTimes(kernels, {{0, 4, 2.0}, {1, 1, 1.0}}, 1.0);
  EXPECT_EQ(full, (std::vector<double>{0.0, 2.0}));
  std::vector<double> half =
      overlappedCommTimes(kernels, {{0, 4, 2.0}, {1, 1, 1.0}}, 0.5);
  EXPECT_EQ(half, (std::vector<double>{0.5, 2.0}));
  // Two waited for before kernel 2: the one started first (at 0 s) is done
  // by then; the other queued behind it (2 s to 5 s) and is charged the
  // whole wait.
  std::vector<double> both =
      overlappedCommTimes(kernels, {{1, 2, 3.0}, {0, 2, 2.0}}, 1.0);
  EXPECT_EQ(both, (std::vector<double>{3.0, 0.0}));
}

TEST(Cluster, PresetsGrowByNodes) {
  Cluster c;
  std::string error;
  ASSERT_TRUE(loadCluster("h100-sxm", 16, c, error)) << error;
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.devicesPerNode, 8);
  EXPECT_EQ(c.devices(), 16);
  EXPECT_DOUBLE_EQ(c.rankPeakFlops("bf16", 16), 9.89e14);
  EXPECT_DOUBLE_EQ(c.rankMemoryBytes(16), 8.0e10);
  // A ring over 8 ranks 2 apart spans both nodes; 8 adjacent ones do not.
  EXPECT_DOUBLE_EQ(c.linkFor(8, 2, "all_reduce", 16).bandwidth, 5.0e10);
  EXPECT_DOUBLE_EQ(c.linkFor(8, 1, "all_reduce", 16).bandwidth, 4.5e11);
  ASSERT_TRUE(loadCluster("a100-sxm", 4, c, error)) << error;
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.devicesPerNode, 4);
  EXPECT_FALSE(loadCluster("h100-sxm", 12, c, error));
  EXPECT_NE(error.find("whole nodes of 8"), std::string::npos) << error;
  EXPECT_FALSE(loadCluster("tpu-v9", 4, c, error));
  EXPECT_NE(error.find("neither a preset"), std::string::npos) << error;
}

TEST(Cluster, CpuRanksShareCores) {
  Cluster c;
  std::string error;
  ASSERT_TRUE(loadCluster("cpu-local", 4, c, error)) << error;
  EXPECT_EQ(c.devices(), 4);
  EXPECT_EQ(c.coresPerNode, 2);
  // Four ranks take turns on two cores; one rank gets both.
  EXPECT_DOUBLE_EQ(c.rankShare(4), 1.0);
  EXPECT_DOUBLE_EQ(c.oversubscription(4), 2.0);
  EXPECT_DOUBLE_EQ(c.rankShare(2), 1.0);
  EXPECT_DOUBLE_EQ(c.oversubscription(2), 1.0);
  EXPECT_DOUBLE_EQ(c.rankShare(1), 2.0);
  // Memory bandwidth: the node's, over the ranks running at once.
  EXPECT_DOUBLE_EQ(c.rankMemoryBandwidth(4), c.memoryBandwidth / 2);
  EXPECT_DOUBLE_EQ(c.rankMemoryBandwidth(1), c.memoryBandwidth);
  EXPECT_DOUBLE_EQ(c.rankMemoryBytes(4), c.memoryBytes / 4);
}

TEST(Cluster, KernelRatesMeetTheMemoryBeyondTheCache) {
  Cluster c;
  std::string error;
  ASSERT_TRUE(loadCluster("cpu-local", 4, c, error)) << error;
  const double cached = c.cacheBytes / 8; // within a rank's share
  const double beyond = c.cacheBytes;     // beyond it
  // In the cache a rated kernel runs at its own rate, the node's over the
  // ranks running at once.
  const double softmax = c.kernelBandwidth.at("softmax");
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(cached, "softmax", 4), softmax / 2);
  // Beyond it the memory caps a fast kernel, not a slow one.
  c.kernelBandwidth["binary"] = 10 * c.memoryBandwidth;
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(beyond, "binary", 4),
                   c.rankMemoryBandwidth(4));
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(cached, "binary", 4),
                   5 * c.memoryBandwidth);
  c.kernelBandwidth["softmax"] = c.memoryBandwidth / 10;
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(beyond, "softmax", 4),
                   c.memoryBandwidth / 20);
  // With a private cache size, a rated kernel's data beyond it meets the
  // shared cache's bandwidth.
  c.privateCacheBytes = cached / 4;
  c.kernelBandwidth["binary"] = 10 * c.cacheBandwidth * c.rankShare(4);
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(cached / 8, "binary", 4),
                   5 * c.cacheBandwidth * c.rankShare(4));
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(cached, "binary", 4),
                   c.cacheBandwidth * c.rankShare(4));
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(beyond, "binary", 4),
                   c.rankMemoryBandwidth(4));
  // A kernel without a rate: the cache's, else the memory's.
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(cached, "gather", 4),
                   c.cacheBandwidth * c.rankShare(4));
  EXPECT_DOUBLE_EQ(c.rankStreamBandwidth(beyond, "gather", 4),
                   c.rankMemoryBandwidth(4));
}

TEST(Cluster, EfficiencyInterpolatesLogLinearly) {
  Cluster c;
  c.gemmEfficiency = {{1e3, 0.02}, {1e5, 0.2}};
  EXPECT_NEAR(c.gemmEfficiencyAt(1e4), 0.11, 1e-12);
  EXPECT_EQ(c.gemmEfficiencyAt(1.0), 0.02);
  EXPECT_EQ(c.gemmEfficiencyAt(1e9), 0.2);
}

const char *kGood = R"({"format": "weft-cluster/1", "name": "two",
  "nodes": 2, "devices_per_node": 4,
  "device": {"kind": "gpu", "peak_flops": {"fp32": 1e13, "bf16": 1e14},
             "memory_bytes": 4e10, "memory_bandwidth": 1e12},
  "links": {"intra_node": {"bandwidth": 1e11, "latency": 2e-6,
                           "measured": [{"collective": "all_reduce",
                                         "ranks": 2, "bandwidth": 5e10,
                                         "latency": 1e-6}]},
            "inter_node": {"bandwidth": 1e10, "latency": 5e-6}}})";

TEST(Cluster, ReadsFiles) {
  Cluster c;
  std::string error;
  ASSERT_TRUE(parseCluster(kGood, "good.json", c, error)) << error;
  EXPECT_EQ(c.devices(), 8);
  EXPECT_EQ(c.name, "two");
  EXPECT_DOUBLE_EQ(c.rankPeakFlops("bf16", 8), 1e14);
  // tf32 is not given: products fall back to fp32.
  EXPECT_DOUBLE_EQ(c.rankPeakFlops("tf32", 8), 1e13);
  // The measured fit replaces the headline figures inside a node.
  EXPECT_DOUBLE_EQ(c.linkFor(2, 1, "all_reduce", 8).bandwidth, 5e10);
  EXPECT_DOUBLE_EQ(c.linkFor(2, 1, "all_gather", 8).bandwidth, 1e11);
  EXPECT_DOUBLE_EQ(c.linkFor(4, 4, "all_reduce", 8).bandwidth, 1e10);
}

/// kGood with `from` replaced by `to`.
std::string edited(const std::string &from, const std::string &to) {
  std::string text = kGood;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Cluster, BadFilesSayWhatIsWrong) {
  struct Case {
    std::string text, message;
  } cases[] = {
      {edited("\"memory_bytes\": 4e10, ", ""),
       "'device.memory_bytes' is missing"},
      {edited("\"memory_bandwidth\": 1e12", "\"memory_bandwidth\": -3"),
       "'device.memory_bandwidth' must be a finite number > 0"},
      {edited("\"nodes\": 2", "\"nodes\": 0"),
       "'nodes' must be a whole number"},
      {edited("\"fp32\": 1e13, ", ""), "'device.peak_flops.fp32' is missing"},
      {edited("\"bf16\"", "\"fp8\""), "not a dtype weft knows"},
      {edited("\"latency\": 5e-6", "\"latency\": 5"), "must be below 1 s"},
      {edited("\"inter_node\": {\"bandwidth\": 1e10, \"latency\": 5e-6}",
              "\"other\": {}"),
       "'links.inter_node' is missing"},
      {edited("\"format\": \"weft-cluster/1\"", "\"format\": \"x/2\""),
       "this weftc reads 'weft-cluster/1'"},
      {"{\"nodes\": ", "not valid JSON"},
  };
  for (const Case &c : cases) {
    Cluster cluster;
    std::string error;
    EXPECT_FALSE(parseCluster(c.text, "bad.json", cluster, error)) << c.text;
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << error;
    EXPECT_EQ(error.rfind("bad.json", 0), 0u) << error;
  }
}

} // namespace
