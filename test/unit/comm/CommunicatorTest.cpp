//===- CommunicatorTest.cpp - The Communicator and the ranks' agreement ---===//
//
// Part of CommTests (CollectivesTest.cpp): the Communicator interface
// directly, and how ranks agree on a failure before anything is written.
//
//===----------------------------------------------------------------------===//
#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include "weft/runtime/Executor.h"

using namespace commtest;

namespace {

// Ranks agree on failures before anything is written: a failure every rank
// has alike is reported by rank 0 alone; one marked every-rank that only
// rank 0 has is still reported by it, and the others exit quietly with
// its code; a failure of the last rank alone is reported by it.
TEST(Agreement, FailuresAreReportedByTheRanksThatHaveThem) {
  const int64_t n = weft::comm::size(), me = weft::comm::rank();
  weft::Status all = weft::agreeAcrossRanks(weft::Status::badInput("bad data"));
  EXPECT_EQ(all.code, 2);
  EXPECT_TRUE(all.sameOnEveryRank || n == 1);
  EXPECT_FALSE(all.quiet);
  weft::Status one = weft::agreeAcrossRanks(
      me == 0 ? weft::Status::badInput("rank 0's").everyRank()
              : weft::Status::success());
  EXPECT_EQ(one.code, 2);
  if (me == 0) {
    EXPECT_FALSE(one.sameOnEveryRank && n > 1) << "rank 0 would not print";
    EXPECT_FALSE(one.quiet);
  } else {
    EXPECT_TRUE(one.quiet);
  }
  weft::Status last = weft::agreeAcrossRanks(
      me == n - 1 ? weft::Status::failure("the last rank's").everyRank()
                  : weft::Status::success());
  EXPECT_EQ(last.code, 1);
  if (me == n - 1)
    EXPECT_TRUE(!last.sameOnEveryRank || n == 1)
        << "it must report its failure itself";
  else
    EXPECT_TRUE(last.quiet);
}

// The Communicator interface directly: the mesh's groups have the members
// and indices computed here; send/recv around a ring; all-to-all; avg.
TEST(Communicator, MeshGroupsAndPointToPoint) {
  weft::comm::Mesh &mesh = weft::comm::context().mesh();
  for (const auto &axes : axisSets()) {
    SCOPED_TRACE(label(WEFT_F32, axes));
    std::vector<int64_t> group = members(axes);
    weft::comm::Communicator &comm =
        mesh.group(axes.data(), static_cast<int64_t>(axes.size()));
    ASSERT_EQ(comm.size(), static_cast<int64_t>(group.size()));
    ASSERT_EQ(comm.rank(), myIndex(group));
    ASSERT_EQ(comm.worldRanks(), group);
    ASSERT_EQ(&comm, &mesh.group(axes.data(), axes.size())) << "cached";
    const int64_t g = comm.size(), me = comm.rank();
    if (g > 1) {
      // Ring: send to the next index, receive from the previous one.
      int64_t out[3] = {myRank(), me, 42}, in[3] = {0, 0, 0};
      weft::comm::Request r = comm.recvStart(in, 3, WEFT_I64, (me + g - 1) % g);
      comm.send(out, 3, WEFT_I64, (me + 1) % g, 0);
      comm.wait(r);
      EXPECT_EQ(in[0], group[(me + g - 1) % g]);
      EXPECT_EQ(in[1], (me + g - 1) % g);
      EXPECT_EQ(in[2], 42);
    }
    std::vector<int32_t> send(static_cast<size_t>(2 * g)),
        recv(static_cast<size_t>(2 * g));
    for (int64_t j = 0; j < 2 * g; ++j)
      send[j] = static_cast<int32_t>(100 * me + j);
    comm.allToAll(send.data(), recv.data(), 2, WEFT_I32);
    for (int64_t i = 0; i < g; ++i)
      for (int64_t k = 0; k < 2; ++k)
        EXPECT_EQ(recv[2 * i + k], 100 * i + 2 * me + k);
    double v = static_cast<double>(me), avg = 0;
    comm.allReduce(&v, &avg, 1, WEFT_F64, weft::comm::Reduction::Avg);
    EXPECT_EQ(avg, (g - 1) / 2.0);
    comm.barrier();
  }
}

} // namespace
