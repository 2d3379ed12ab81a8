//===- SharedCoresTest.cpp - Ranks taking turns on cores, by hand ---------===//
//
// sharedCoresStepTime against schedules worked out by hand: alone on a core
// a pipeline takes its textbook time ((M + P - 1)(F + B) for GPipe and
// 1F1B); ranks that outnumber the cores share them; a rank waiting for its
// input lends its core; ranks pinned to one core share only that one, in
// the runtime's placement (CorePlacement.h).
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/SharedCores.h"
#include "weft/runtime/CorePlacement.h"

#include <gtest/gtest.h>

using namespace weft::planner;

namespace {

PipelineWork uniform(const std::string &schedule, int64_t p, int64_t m,
                     double f, double b, double tail = 0, int64_t v = 1) {
  PipelineWork w;
  w.schedule = schedule;
  w.stages = p;
  w.virtualStages = v;
  w.microbatches = m;
  w.forward.assign(p * v, f);
  w.backward.assign(p * v, b);
  w.weight.assign(p * v, 0.0);
  w.transfer.assign(p * v - 1, 0.0);
  w.tail.assign(p, tail);
  return w;
}

TEST(SharedCores, OneRankRunsItsWorkInTurn) {
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform("none", 1, 1, 1, 2, 0.5), 1, 1),
                   3.5);
}

TEST(SharedCores, RanksBeyondTheCoresShareThem) {
  // Four identical ranks of 2 x (1 + 2) + 0.5 on two cores: twice as long.
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform("none", 1, 2, 1, 2, 0.5), 4, 2),
                   13.0);
  // Three ranks on two cores: each at 2/3 speed.
  EXPECT_NEAR(sharedCoresStepTime(uniform("none", 1, 1, 1, 2), 3, 2), 4.5,
              1e-12);
}

TEST(SharedCores, AlonePipelinesTakeTheirTextbookTime) {
  // (M + P - 1)(F + B) = 3 x 3 for P = 2, M = 2, GPipe and 1F1B.
  for (const char *schedule : {"gpipe", "1f1b"})
    EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform(schedule, 2, 2, 1, 2), 2, 2),
                     9.0)
        << schedule;
  // P = 4, M = 8: (8 + 3)(1 + 2).
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform("1f1b", 4, 8, 1, 2), 4, 4),
                   33.0);
  // A transfer delays each hop of the critical path: P = 2, M = 1, GPipe:
  // F0, wait 0.25, F1 + B1, wait 0.25, B0.
  PipelineWork w = uniform("gpipe", 2, 1, 1, 2);
  w.transfer = {0.25};
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(w, 2, 2), 6.5);
}

TEST(SharedCores, AWaitingRankLendsItsCore) {
  // P = 2, M = 1 on one core: nothing overlaps, the work in turn (4).
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform("gpipe", 2, 1, 1, 1), 2, 1),
                   4.0);
  // 1F1B, P = 2, M = 2, F = B = 1 on one core: stage 0's F0 alone [0, 1];
  // its F1 and stage 1's F0 at half speed [1, 3]; stage 1's B0 alone
  // [3, 4]; its F1 and stage 0's B0 shared [4, 6]; then B1 on each stage
  // alone [6, 7] and [7, 8]: the 8 units of work, no core idle.
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform("1f1b", 2, 2, 1, 1), 2, 1), 8.0);
  // Two replicas of P = 2, M = 1 on two cores: each pair of like stages
  // shares the two cores, so the step is the alone one.
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(uniform("gpipe", 2, 1, 1, 1), 4, 2),
                   4.0);
  // P = 4, M = 4, 1F1B on two cores: at least the work over the cores
  // (4 stages x 4 x 3 / 2 = 24) and at least the alone step (7 x 3 = 21).
  double shared = sharedCoresStepTime(uniform("1f1b", 4, 4, 1, 2), 4, 2);
  EXPECT_GE(shared, 24.0);
  EXPECT_LT(shared, 4 * 4 * 3.0); // less than one core doing everything
}

TEST(SharedCores, ZeroBubbleAndInterleavedRunEveryUnit) {
  // ZB-H1 with the weight gradients split off: alone, the step is at least
  // the critical path and at most every unit of a stage plus the fill.
  PipelineWork zb = uniform("zb-h1", 4, 8, 1, 1);
  zb.weight.assign(4, 1.0);
  double alone = sharedCoresStepTime(zb, 4, 4);
  EXPECT_GE(alone, 8 * 3.0);
  EXPECT_LE(alone, 8 * 3.0 + 3 * 3.0);
  // The same work in 1F1B (B does W) takes longer: its bubble is F + B + W.
  PipelineWork ofb = zb;
  ofb.schedule = "1f1b";
  EXPECT_LT(alone, sharedCoresStepTime(ofb, 4, 4));
  // Interleaved, 2 chunks per stage of half the work each.
  PipelineWork il = uniform("interleaved", 2, 4, 0.5, 1.0, 0, 2);
  double t = sharedCoresStepTime(il, 2, 2);
  EXPECT_GE(t, 4 * 2 * 1.5);
  EXPECT_LT(t, sharedCoresStepTime(uniform("1f1b", 2, 4, 1, 2), 2, 2));
}

TEST(SharedCores, PinnedRanksShareOnlyTheirCore) {
  // Two ranks of (1 + 2) + 0.5 each: one core each, or both on core 0.
  PipelineWork w = uniform("none", 1, 1, 1, 2, 0.5);
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(w, 2, 2, {0, 1}), 3.5);
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(w, 2, 2, {0, 0}), 7.0);
  // 1F1B, P = 2, M = 2, F = B = 1. Stage 0 runs F0 F1 B0 B1, stage 1 F0 B0
  // F1 B1. Both on core 0: F0 alone [0, 1]; F1 and stage 1's F0 at half
  // speed [1, 3]; stage 1's B0 alone [3, 4]; B0 and F1 at half [4, 6];
  // stage 1's B1 [6, 7], stage 0's B1 [7, 8]. With a core each it is the
  // textbook (M + P - 1)(F + B) = 6.
  PipelineWork p = uniform("1f1b", 2, 2, 1, 1);
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(p, 2, 2, {0, 0}), 8.0);
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(p, 2, 2, {0, 1}), 6.0);
  EXPECT_DOUBLE_EQ(sharedCoresStepTime(p, 2, 2), 6.0);
  // A core out of range, or not one entry per rank.
  EXPECT_LT(sharedCoresStepTime(p, 2, 2, {0, 2}), 0);
  EXPECT_LT(sharedCoresStepTime(p, 2, 2, {0}), 0);
}

TEST(CorePlacement, SnakesOverTheCores) {
  // 0 1 | 1 0 on two cores: a 4-stage pipeline's first and last stages
  // share a core, and so do the middle two.
  const int64_t two[] = {0, 1, 1, 0, 0, 1, 1, 0};
  for (int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(weft::coreOfLocalRank(r, 2), two[r]) << "rank " << r;
  const int64_t three[] = {0, 1, 2, 2, 1, 0, 0};
  for (int64_t r = 0; r < 7; ++r)
    EXPECT_EQ(weft::coreOfLocalRank(r, 3), three[r]) << "rank " << r;
  EXPECT_EQ(weft::coreOfLocalRank(5, 1), 0);
}

TEST(SharedCores, InconsistentInputIsRefused) {
  PipelineWork w = uniform("1f1b", 2, 2, 1, 1);
  EXPECT_LT(sharedCoresStepTime(w, 3, 2), 0); // ranks not a multiple of P
  EXPECT_LT(sharedCoresStepTime(w, 2, 0), 0); // no cores
  w.transfer.clear();
  EXPECT_LT(sharedCoresStepTime(w, 2, 2), 0); // sizes do not match
}

} // namespace
