//===- SingleRankTest.cpp - Communicators and kernels on one rank ---------===//
//
// No mpirun: the collective kernels called before any context is set up
// (mesh [], every group one rank) copy; the Communicator of one rank; the
// mesh arithmetic on shapes no test runs ranks for; launcher detection and
// the start-up refusals; kernels called with shapes that do not fit their
// group fail naming the kernel.
//
//===----------------------------------------------------------------------===//
#include "weft/runtime/Comm.h"
#include "weft/runtime/KernelABI.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {

using weft::comm::Mesh;

std::vector<int64_t> desc(int64_t dtype, const std::vector<int64_t> &xs,
                          const std::vector<int64_t> &ys,
                          std::vector<int64_t> attrs) {
  std::vector<int64_t> d = {2, dtype, static_cast<int64_t>(xs.size())};
  d.insert(d.end(), xs.begin(), xs.end());
  d.push_back(dtype);
  d.push_back(static_cast<int64_t>(ys.size()));
  d.insert(d.end(), ys.begin(), ys.end());
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
}

TEST(SingleRank, KernelsWithoutAContextCopy) {
  ASSERT_FALSE(weft::comm::active());
  std::vector<float> x(6), y(6, -1.0f);
  std::iota(x.begin(), x.end(), 1.0f);
  void *bufs[] = {x.data(), y.data()};
  // Mesh axes 0 and 1 of the (absent) mesh: groups of one rank.
  auto check = [&](void (*kernel)(void *const *, const int64_t *),
                   std::vector<int64_t> attrs) {
    std::fill(y.begin(), y.end(), -1.0f);
    auto d = desc(WEFT_F32, {2, 3}, {2, 3}, attrs);
    kernel(bufs, d.data());
    EXPECT_EQ(y, x);
  };
  check(weft_k_all_reduce, {0, 2, 0, 1});
  check(weft_k_all_gather, {1, 1, 0});
  check(weft_k_reduce_scatter, {0, 1, 1, 0});
  check(weft_k_all_to_all, {0, 1, 1, 0});
  check(weft_k_broadcast, {0, 1, 0});
  check(weft_k_all_slice, {0, 1, 1});
  std::fill(y.begin(), y.end(), -1.0f);
  auto start = desc(WEFT_F32, {2, 3}, {2, 3}, {4, 3, 1, 0});
  weft_k_all_reduce_start(bufs, start.data());
  std::vector<int64_t> wait = {1, WEFT_F32, 2, 2, 3, 1, 4};
  void *waitBufs[] = {y.data()};
  weft_k_comm_wait(waitBufs, wait.data());
  EXPECT_EQ(y, x);
  EXPECT_EQ(weft::comm::context().pendingSlots(), "");
}

TEST(SingleRank, SelfCommunicator) {
  weft::comm::Communicator &world = weft::comm::context().world();
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.size(), 1);
  int64_t in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
  world.allReduce(in, out, 3, WEFT_I64, weft::comm::Reduction::Avg);
  EXPECT_EQ(out[2], 3);
  weft::comm::Request r = world.allGatherStart(in, out, 3, WEFT_I64);
  EXPECT_TRUE(r.pending());
  bool ran = false;
  r.then([&] { ran = true; });
  world.wait(r);
  EXPECT_TRUE(ran);
  EXPECT_FALSE(r.pending());
  world.barrier();
  EXPECT_EQ(weft::comm::maxOverRanks(5), 5);
  std::vector<uint8_t> all = weft::comm::allGatherBytes("ab", 2);
  EXPECT_EQ(std::string(all.begin(), all.end()), "ab");
}

// Groups of a 2x3x2 mesh seen from rank 7 = (1, 0, 1).
TEST(SingleRank, MeshGroupArithmetic) {
  auto world = weft::comm::makeSelfCommunicator(7, "test");
  Mesh mesh(*world, {2, 3, 2}, {"dp", "tp", "sp"});
  EXPECT_EQ(mesh.coordinates(7), (std::vector<int64_t>{1, 0, 1}));
  const int64_t a0[] = {0}, a12[] = {1, 2}, a21[] = {2, 1}, a20[] = {2, 0};
  EXPECT_EQ(mesh.groupMembers(a0, 1), (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(mesh.groupIndex(a0, 1), 1);
  EXPECT_EQ(mesh.groupMembers(a12, 2),
            (std::vector<int64_t>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(mesh.groupIndex(a12, 2), 1);
  // First listed axis major: (sp, tp) orders the ranks sp-major.
  EXPECT_EQ(mesh.groupMembers(a21, 2),
            (std::vector<int64_t>{6, 8, 10, 7, 9, 11}));
  EXPECT_EQ(mesh.groupIndex(a21, 2), 3);
  EXPECT_EQ(mesh.groupMembers(a20, 2), (std::vector<int64_t>{0, 6, 1, 7}));
  EXPECT_EQ(mesh.groupIndex(a20, 2), 3);
  EXPECT_EQ(mesh.groupSize(a12, 2), 6);
  EXPECT_EQ(mesh.groupName(a0, 1), "mesh axes [0] (ranks 1,7)");
  EXPECT_EQ(mesh.groupName(a12, 2), "mesh axes [1,2] (ranks 6-11)");
  std::string why;
  const int64_t bad[] = {3}, twice[] = {1, 1};
  EXPECT_FALSE(mesh.validAxes(bad, 1, why));
  EXPECT_NE(why.find("not an axis of the mesh"), std::string::npos);
  EXPECT_FALSE(mesh.validAxes(twice, 2, why));
  EXPECT_NE(why.find("listed twice"), std::string::npos);
}

void clearLaunchVars() {
  for (const char *v :
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS",
        "SLURM_LOCALID", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "RANK",
        "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(v);
}

TEST(SingleRank, LaunchDetection) {
  using Kind = weft::comm::LaunchInfo::Kind;
  clearLaunchVars();
  EXPECT_EQ(weft::comm::detectLaunch().kind, Kind::None);
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("MASTER_ADDR", "node0", 1);
  weft::comm::LaunchInfo info = weft::comm::detectLaunch();
  EXPECT_EQ(info.kind, Kind::Torchrun);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_NE(info.variables.find("MASTER_ADDR=node0"), std::string::npos);
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("SLURM_LOCALID", "0", 1);
  info = weft::comm::detectLaunch();
  EXPECT_EQ(info.kind, Kind::Srun);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 8);
  setenv("OMPI_COMM_WORLD_RANK", "x", 1);
  info = weft::comm::detectLaunch();
  EXPECT_NE(info.error.find("invalid OMPI_COMM_WORLD_RANK='x'"),
            std::string::npos);
  clearLaunchVars();
}

TEST(SingleRank, MultiRankStartNeedsALauncher) {
  clearLaunchVars();
  weft::comm::Context context;
  std::string error;
  EXPECT_FALSE(context.init(2, {2}, {}, error));
  EXPECT_NE(error.find("start it with 'weft run|train BUNDLE -n 2'"),
            std::string::npos)
      << error;
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  EXPECT_FALSE(context.init(2, {2}, {}, error));
  EXPECT_NE(error.find("a torchrun-style launch (RANK, WORLD_SIZE) needs "
                       "MASTER_ADDR and MASTER_PORT"),
            std::string::npos)
      << error;
  EXPECT_FALSE(context.active());
  clearLaunchVars();
  EXPECT_FALSE(context.init(4, {3}, {}, error));
  EXPECT_NE(error.find("the mesh has 3 devices"), std::string::npos) << error;
  EXPECT_FALSE(context.active());
  EXPECT_TRUE(context.init(1, {1, 1}, {"dp", "tp"}, error)) << error;
  EXPECT_FALSE(context.active());
  EXPECT_EQ(context.mesh().shape(), (std::vector<int64_t>{1, 1}));
}

using SingleRankDeathTest = testing::Test;

TEST(SingleRankDeathTest, ShapesThatDoNotFitTheGroupFail) {
  std::vector<float> x(12), y(12);
  void *bufs[] = {x.data(), y.data()};
  auto gather = desc(WEFT_F32, {2, 6}, {3, 4}, {1, 1, 0});
  EXPECT_EXIT(weft_k_all_gather(bufs, gather.data()),
              testing::ExitedWithCode(1),
              "kernel all_gather over mesh axes \\[0\\] \\(ranks 0\\): y "
              "f32\\[3,4\\] is not 1 blocks of x f32\\[2,6\\]");
  auto reduce = desc(WEFT_F32, {2, 6}, {2, 6}, {5, 1, 0});
  EXPECT_EXIT(weft_k_all_reduce(bufs, reduce.data()),
              testing::ExitedWithCode(1),
              "kernel all_reduce over .*unknown reduction code 5");
  auto axes = desc(WEFT_F32, {2, 6}, {2, 6}, {0, 2, 1, 1});
  EXPECT_EXIT(weft_k_all_reduce(bufs, axes.data()), testing::ExitedWithCode(1),
              "kernel all_reduce over .*mesh axis 1 is listed twice");
  std::vector<int64_t> wait = {1, WEFT_F32, 1, 12, 1, 3};
  EXPECT_EXIT(weft_k_comm_wait(bufs, wait.data()), testing::ExitedWithCode(1),
              "kernel comm_wait: no collective in flight on slot 3");
  auto start = desc(WEFT_F32, {12}, {12}, {3, 0, 0});
  EXPECT_EXIT(
      {
        weft_k_all_reduce_start(bufs, start.data());
        weft_k_all_reduce_start(bufs, start.data());
      },
      testing::ExitedWithCode(1), "slot 3 already has a collective in flight");
}

} // namespace
