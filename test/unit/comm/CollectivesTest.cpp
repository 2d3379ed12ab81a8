//===- CollectivesTest.cpp - The collective kernels on real MPI ranks -----===//
//
// Run under mpirun with the mesh as argument (`mpirun -n 4 CommTests 2x2`).
// Every rank fills its operand with values that depend on its rank, calls a
// kernel over the group of some mesh axes, and checks the result against
// what it computes itself from the group's members (CommTestUtil.h). Here
// the blocking kernels: every kernel and dtype, every axis set (both orders
// of two axes), gathers, scatters and all-to-alls along leading and inner
// dims, in-place all_reduce and broadcast, groups of one rank, send/recv.
// StartedCollectivesTest.cpp has the started forms and the bucket kernels,
// CommunicatorTest.cpp the Communicator interface and the ranks' agreement.
//
//===----------------------------------------------------------------------===//
#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace commtest;

namespace {

// 13 elements, then 65537 (256 KiB and more, in blocks of uneven sizes
// over 2, 3 and 4 ranks: the MPI world all-reduces that around a ring).
TEST(Collectives, AllReduceEveryDTypeAndReduction) {
  for (const int64_t n : {13, 65537})
    for (int64_t dtype : kDTypes)
      for (const auto &axes : axisSets())
        for (int64_t op : {0, 1, 2, 3})
          for (bool inPlace : {false, true}) {
            SCOPED_TRACE(label(dtype, axes) + " reduction " +
                         std::to_string(op) + (inPlace ? " in place" : "") +
                         " n " + std::to_string(n));
            Buffer x(dtype, n), y(dtype, n);
            for (int64_t i = 0; i < n; ++i)
              x.set(i, fill(myRank(), i));
            void *bufs[] = {x.data(), inPlace ? x.data() : y.data()};
            auto d = desc(dtype, {n}, {n}, {op}, axes);
            weft_k_all_reduce(bufs, d.data());
            const Buffer &got = inPlace ? x : y;
            for (int64_t i = 0; i < n; ++i)
              ASSERT_EQ(got.get(i), reduce(op, members(axes), i, dtype))
                  << "element " << i;
          }
}

// x [2, 3, 4]; the group's blocks joined along `dim` in group-index order.
TEST(Collectives, AllGatherAlongEachDim) {
  const std::vector<int64_t> xs = {2, 3, 4};
  for (int64_t dtype : kDTypes)
    for (const auto &axes : axisSets())
      for (int64_t dim = 0; dim < 3; ++dim) {
        SCOPED_TRACE(label(dtype, axes) + " dim " + std::to_string(dim));
        std::vector<int64_t> group = members(axes);
        int64_t g = static_cast<int64_t>(group.size());
        std::vector<int64_t> ys = xs;
        ys[dim] *= g;
        Buffer x(dtype, 24), y(dtype, 24 * g);
        for (int64_t i = 0; i < 24; ++i)
          x.set(i, fill(myRank(), i));
        void *bufs[] = {x.data(), y.data()};
        auto d = desc(dtype, xs, ys, {dim}, axes);
        weft_k_all_gather(bufs, d.data());
        for (int64_t i = 0; i < 24 * g; ++i) {
          std::vector<int64_t> c = unravel(i, ys);
          int64_t block = c[dim] / xs[dim];
          c[dim] %= xs[dim];
          ASSERT_EQ(y.get(i), fill(group[block], ravel(c, xs)))
              << "element " << i;
        }
      }
}

// x [4, 2, 6] with the split dim a multiple of every group size; each rank
// keeps its block of the group's reduction (and all_slice its own block).
// Then x [4, 2, 2048] (at least 64 KiB in all): the MPI world reduce-scatters
// that around a ring of point-to-point messages.
TEST(Collectives, ReduceScatterAndSliceAlongEachDim) {
  for (int64_t inner : {6, 2048})
    for (int64_t dtype : kDTypes)
      for (const auto &axes : axisSets())
        for (int64_t dim = 0; dim < 3; ++dim)
          for (int64_t op : {0, 1, 3}) {
            SCOPED_TRACE(label(dtype, axes) + " dim " + std::to_string(dim) +
                         " reduction " + std::to_string(op) + " inner " +
                         std::to_string(inner));
            std::vector<int64_t> group = members(axes);
            int64_t g = static_cast<int64_t>(group.size());
            std::vector<int64_t> xs = {4, 2, inner};
            xs[dim] *= g;
            std::vector<int64_t> ys = xs;
            ys[dim] /= g;
            int64_t nx = numel(xs), ny = nx / g;
            Buffer x(dtype, nx), y(dtype, ny), s(dtype, ny);
            for (int64_t i = 0; i < nx; ++i)
              x.set(i, fill(myRank(), i));
            void *bufs[] = {x.data(), y.data()};
            auto d = desc(dtype, xs, ys, {op, dim}, axes);
            weft_k_reduce_scatter(bufs, d.data());
            void *sbufs[] = {x.data(), s.data()};
            auto sd = desc(dtype, xs, ys, {dim}, axes);
            weft_k_all_slice(sbufs, sd.data());
            int64_t index = myIndex(group);
            for (int64_t i = 0; i < ny; ++i) {
              std::vector<int64_t> c = unravel(i, ys);
              c[dim] += index * ys[dim];
              int64_t src = ravel(c, xs);
              ASSERT_EQ(y.get(i), reduce(op, group, src, dtype))
                  << "reduce_scatter element " << i;
              ASSERT_EQ(s.get(i), fill(myRank(), src))
                  << "all_slice element " << i;
            }
          }
}

// mesh_offset: this rank's index in the group times the block, which is
// where all_slice's block of the same group starts.
TEST(Collectives, MeshOffsetIsTheGroupIndexTimesTheBlock) {
  for (const auto &axes : axisSets()) {
    SCOPED_TRACE(label(WEFT_I64, axes));
    int64_t got = -1;
    std::vector<int64_t> d = {1, WEFT_I64, 0}; // one rank-0 i64
    std::vector<int64_t> attrs = {5, static_cast<int64_t>(axes.size())};
    attrs.insert(attrs.end(), axes.begin(), axes.end());
    d.push_back(static_cast<int64_t>(attrs.size()));
    d.insert(d.end(), attrs.begin(), attrs.end());
    void *bufs[] = {&got};
    weft_k_mesh_offset(bufs, d.data());
    EXPECT_EQ(got, 5 * myIndex(members(axes)));
  }
}

/// A point-to-point desc: one tensor of `shape`, then attrs and axes.
std::vector<int64_t> p2pDesc(int64_t dtype, const std::vector<int64_t> &shape,
                             std::vector<int64_t> attrs,
                             const std::vector<int64_t> &axes) {
  return tensorsDesc(dtype, {shape}, std::move(attrs), axes);
}

// Every group passes a message around its ring with send_start/recv_start
// (tags 7 and 8 both ways, posted in opposite orders), then index 0 sends
// to index 1 with the blocking kernels.
TEST(Collectives, SendAndRecvAroundEachGroup) {
  for (int64_t dtype : {WEFT_F32, WEFT_BF16, WEFT_I64})
    for (const auto &axes : axisSets()) {
      SCOPED_TRACE(label(dtype, axes));
      std::vector<int64_t> group = members(axes);
      int64_t g = static_cast<int64_t>(group.size());
      if (g < 2)
        continue;
      int64_t me = myIndex(group);
      int64_t next = (me + 1) % g, prev = (me + g - 1) % g;
      std::vector<int64_t> shape = {3, 5};
      int64_t n = numel(shape);
      Buffer out(dtype, n), back(dtype, n), in(dtype, n), inBack(dtype, n);
      for (int64_t i = 0; i < n; ++i) {
        out.set(i, fill(myRank(), i));
        back.set(i, fill(myRank(), i + 100));
      }
      void *recvBufs[] = {in.data()};
      void *recvBackBufs[] = {inBack.data()};
      void *sendBufs[] = {out.data()};
      void *sendBackBufs[] = {back.data()};
      auto r1 = p2pDesc(dtype, shape, {10, prev, 7}, axes);
      auto r2 = p2pDesc(dtype, shape, {11, next, 8}, axes);
      auto s1 = p2pDesc(dtype, shape, {12, next, 7}, axes);
      auto s2 = p2pDesc(dtype, shape, {13, prev, 8}, axes);
      if (me % 2 == 0) {
        weft_k_recv_start(recvBufs, r1.data());
        weft_k_recv_start(recvBackBufs, r2.data());
        weft_k_send_start(sendBufs, s1.data());
        weft_k_send_start(sendBackBufs, s2.data());
      } else {
        weft_k_send_start(sendBackBufs, s2.data());
        weft_k_send_start(sendBufs, s1.data());
        weft_k_recv_start(recvBackBufs, r2.data());
        weft_k_recv_start(recvBufs, r1.data());
      }
      // The sends copied their operands: overwriting them is harmless.
      for (int64_t i = 0; i < n; ++i)
        out.set(i, 0), back.set(i, 0);
      for (auto [slot, buf] : {std::pair<int64_t, Buffer *>{10, &in},
                               {11, &inBack},
                               {12, &out},
                               {13, &back}}) {
        auto w = waitDesc(dtype, shape, slot, false);
        void *waitBufs[] = {buf->data()};
        weft_k_comm_wait(waitBufs, w.data());
      }
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(in.get(i), fill(group[prev], i)) << "from the previous";
        ASSERT_EQ(inBack.get(i), fill(group[next], i + 100)) << "from the next";
      }
      if (me == 0) {
        for (int64_t i = 0; i < n; ++i)
          out.set(i, fill(myRank(), i + 7));
        auto d = p2pDesc(dtype, shape, {1, 3}, axes);
        weft_k_send(sendBufs, d.data());
      } else if (me == 1) {
        auto d = p2pDesc(dtype, shape, {0, 3}, axes);
        weft_k_recv(recvBufs, d.data());
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(in.get(i), fill(group[0], i + 7)) << "blocking recv";
      }
      EXPECT_EQ(weft::comm::context().pendingSlots(), "");
    }
}

// x [2g, g, 2g]: block j along split_dim goes to index j; y joins the
// received blocks along concat_dim.
TEST(Collectives, AllToAllEverySplitAndConcatDim) {
  for (int64_t dtype : {WEFT_F32, WEFT_BF16, WEFT_I64})
    for (const auto &axes : axisSets())
      for (int64_t split = 0; split < 3; ++split)
        for (int64_t concat = 0; concat < 3; ++concat) {
          SCOPED_TRACE(label(dtype, axes) + " split " + std::to_string(split) +
                       " concat " + std::to_string(concat));
          std::vector<int64_t> group = members(axes);
          int64_t g = static_cast<int64_t>(group.size());
          std::vector<int64_t> xs = {2 * g, g, 2 * g};
          std::vector<int64_t> bs = xs; // one block
          bs[split] /= g;
          std::vector<int64_t> ys = bs;
          ys[concat] *= g;
          Buffer x(dtype, numel(xs)), y(dtype, numel(ys));
          for (int64_t i = 0; i < numel(xs); ++i)
            x.set(i, fill(myRank(), i));
          void *bufs[] = {x.data(), y.data()};
          auto d = desc(dtype, xs, ys, {split, concat}, axes);
          weft_k_all_to_all(bufs, d.data());
          // all_to_all_start into another buffer; x overwritten at once.
          Buffer z(dtype, numel(ys));
          void *zbufs[] = {x.data(), z.data()};
          auto sd = desc(dtype, xs, ys, {21, split, concat}, axes);
          weft_k_all_to_all_start(zbufs, sd.data());
          for (int64_t i = 0; i < numel(xs); ++i)
            x.set(i, -1);
          auto w = waitDesc(dtype, ys, 21, false);
          void *wbufs[] = {z.data()};
          weft_k_comm_wait(wbufs, w.data());
          int64_t index = myIndex(group);
          for (int64_t i = 0; i < numel(ys); ++i) {
            std::vector<int64_t> c = unravel(i, ys);
            int64_t from = c[concat] / bs[concat]; // the sender's index
            c[concat] %= bs[concat];
            c[split] += index * bs[split]; // my block of the sender's x
            ASSERT_EQ(y.get(i), fill(group[from], ravel(c, xs)))
                << "element " << i;
            ASSERT_EQ(z.get(i), y.get(i)) << "all_to_all_start element " << i;
          }
        }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  for (int64_t dtype : {WEFT_F64, WEFT_I32, WEFT_BF16})
    for (const auto &axes : axisSets()) {
      std::vector<int64_t> group = members(axes);
      for (int64_t root = 0; root < static_cast<int64_t>(group.size()); ++root)
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE(label(dtype, axes) + " root " + std::to_string(root));
          const int64_t n = 9;
          Buffer x(dtype, n), y(dtype, n);
          for (int64_t i = 0; i < n; ++i)
            x.set(i, fill(myRank(), i));
          void *bufs[] = {x.data(), inPlace ? x.data() : y.data()};
          auto d = desc(dtype, {3, 3}, {3, 3}, {root}, axes);
          weft_k_broadcast(bufs, d.data());
          const Buffer &got = inPlace ? x : y;
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(got.get(i), fill(group[root], i)) << "element " << i;
          // broadcast_start, waited for on its slot.
          Buffer a(dtype, n), b(dtype, n);
          for (int64_t i = 0; i < n; ++i)
            a.set(i, fill(myRank(), i + 3));
          void *sbufs[] = {a.data(), b.data()};
          auto sd = desc(dtype, {3, 3}, {3, 3}, {22, root}, axes);
          weft_k_broadcast_start(sbufs, sd.data());
          auto w = waitDesc(dtype, {3, 3}, 22, false);
          void *wbufs[] = {b.data()};
          weft_k_comm_wait(wbufs, w.data());
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(b.get(i), fill(group[root], i + 3))
                << "broadcast_start element " << i;
        }
    }
}

} // namespace

int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  std::stringstream shape(argc > 1 ? argv[1] : "1");
  std::string part;
  int64_t world = 1;
  while (std::getline(shape, part, 'x')) {
    gMesh.push_back(std::atoll(part.c_str()));
    world *= gMesh.back();
  }
  std::string error;
  if (!weft::comm::init(world, gMesh, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  int rc = RUN_ALL_TESTS();
  int worst = static_cast<int>(weft::comm::maxOverRanks(rc));
  weft::comm::finalize();
  return worst;
}
