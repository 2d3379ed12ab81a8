//===- StartedCollectivesTest.cpp - Started and bucket collectives --------===//
//
// Part of CommTests (CollectivesTest.cpp): collectives started and
// finished by comm_wait, several in flight at once, polled after they
// finished, and the bucket kernels (reduce_scatter_pieces,
// all_gather_pieces) in their blocking and started forms.
//
//===----------------------------------------------------------------------===//
#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace commtest;

namespace {

// A large reduce-scatter (around the MPI world's ring) that one rank polls
// (comm_progress) long after it finished, the other not at all: it stays
// finished, and the next collective on the group still matches.
TEST(Collectives, FinishedReduceScatterStaysFinishedWhenPolled) {
  for (const auto &axes : axisSets()) {
    SCOPED_TRACE(label(WEFT_F32, axes));
    std::vector<int64_t> group = members(axes);
    int64_t g = static_cast<int64_t>(group.size());
    int64_t index = myIndex(group);
    std::vector<int64_t> small = {4, 4096}, big = {4 * g, 4096};
    const int64_t n = 4 * 4096;
    Buffer x(WEFT_F32, n * g), y(WEFT_F32, n), y2(WEFT_F32, n);
    for (int64_t i = 0; i < n * g; ++i)
      x.set(i, fill(myRank(), i));
    void *bufs[] = {x.data(), y.data()};
    auto d = desc(WEFT_F32, big, small, {11, 0, 0}, axes);
    weft_k_reduce_scatter_start(bufs, d.data());
    // Polled by every rank for 200 ms (it finishes), then by one rank only.
    const int64_t progress[] = {0, 0};
    for (int i = 0; i < 20; ++i) {
      weft_k_comm_progress(nullptr, progress);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (index == 0)
      for (int i = 0; i < 50; ++i)
        weft_k_comm_progress(nullptr, progress);
    void *w[] = {y.data(), y2.data()};
    weft_k_comm_wait(w, waitDesc(WEFT_F32, small, 11, true).data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y.get(i), reduce(0, group, index * n + i, WEFT_F32))
          << "reduce_scatter element " << i;
    weft_k_reduce_scatter(bufs,
                          desc(WEFT_F32, big, small, {0, 0}, axes).data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y.get(i), reduce(0, group, index * n + i, WEFT_F32))
          << "the next reduce_scatter, element " << i;
  }
}

// Four collectives in flight at once on different slots; the operands are
// overwritten right after the starts (allowed), and the waits come in
// another order than the starts.
TEST(Collectives, StartedCollectivesFinishAtCommWait) {
  for (int64_t dtype : {WEFT_F32, WEFT_BF16, WEFT_I32})
    for (const auto &axes : axisSets())
      for (int64_t dim = 0; dim < 2; ++dim) {
        SCOPED_TRACE(label(dtype, axes) + " dim " + std::to_string(dim));
        std::vector<int64_t> group = members(axes);
        int64_t g = static_cast<int64_t>(group.size());
        int64_t index = myIndex(group);
        // all_reduce_start: [3, 4]; all_gather_start: [3, 4] -> joined
        // along dim; reduce_scatter_start: joined along dim -> [3, 4].
        std::vector<int64_t> small = {3, 4}, big = small;
        big[dim] *= g;
        Buffer ax(dtype, 12), ay(dtype, 12), gx(dtype, 12), gy(dtype, 12 * g),
            rx(dtype, 12 * g), ry(dtype, 12), ry2(dtype, 12);
        for (int64_t i = 0; i < 12; ++i) {
          ax.set(i, fill(myRank(), i));
          gx.set(i, fill(myRank(), i + 1));
        }
        for (int64_t i = 0; i < 12 * g; ++i)
          rx.set(i, fill(myRank(), i));
        void *abufs[] = {ax.data(), ay.data()};
        auto ad = desc(dtype, small, small, {7, 0}, axes);
        weft_k_all_reduce_start(abufs, ad.data());
        void *gbufs[] = {gx.data(), gy.data()};
        auto gd = desc(dtype, small, big, {8, dim}, axes);
        weft_k_all_gather_start(gbufs, gd.data());
        void *rbufs[] = {rx.data(), ry.data()};
        auto rd = desc(dtype, big, small, {9, 0, dim}, axes);
        weft_k_reduce_scatter_start(rbufs, rd.data());
        // A second all-reduce in flight on the same group (max), finished
        // before the first.
        Buffer mx(dtype, 12), my(dtype, 12);
        for (int64_t i = 0; i < 12; ++i)
          mx.set(i, fill(myRank(), i + 3));
        void *mbufs[] = {mx.data(), my.data()};
        auto md = desc(dtype, small, small, {10, 1}, axes);
        weft_k_all_reduce_start(mbufs, md.data());
        void *w10[] = {my.data()};
        weft_k_comm_wait(w10, waitDesc(dtype, small, 10, false).data());
        for (int64_t i = 0; i < 12; ++i)
          ASSERT_EQ(my.get(i), reduce(1, group, i + 3, dtype)) << "max";
        // The operands may be reused now.
        for (int64_t i = 0; i < 12; ++i) {
          ax.set(i, -1);
          gx.set(i, -1);
        }
        for (int64_t i = 0; i < 12 * g; ++i)
          rx.set(i, -1);
        void *w9[] = {ry.data(), ry2.data()};
        weft_k_comm_wait(w9, waitDesc(dtype, small, 9, true).data());
        void *w7[] = {ay.data()};
        weft_k_comm_wait(w7, waitDesc(dtype, small, 7, false).data());
        void *w8[] = {gy.data(), gy.data()};
        weft_k_comm_wait(w8, waitDesc(dtype, big, 8, true).data());
        EXPECT_EQ(weft::comm::context().pendingSlots(), "");
        for (int64_t i = 0; i < 12; ++i)
          ASSERT_EQ(ay.get(i), reduce(0, group, i, dtype)) << "all_reduce";
        for (int64_t i = 0; i < 12 * g; ++i) {
          std::vector<int64_t> c = unravel(i, big);
          int64_t block = c[dim] / small[dim];
          c[dim] %= small[dim];
          ASSERT_EQ(gy.get(i), fill(group[block], ravel(c, small) + 1))
              << "all_gather element " << i;
        }
        for (int64_t i = 0; i < 12; ++i) {
          std::vector<int64_t> c = unravel(i, small);
          c[dim] += index * small[dim];
          double want = reduce(0, group, ravel(c, big), dtype);
          ASSERT_EQ(ry.get(i), want) << "reduce_scatter element " << i;
          ASSERT_EQ(ry2.get(i), want) << "comm_wait's copy, element " << i;
        }
      }
}

/// The desc of a call on flat tensors of `numels` elements.
std::vector<int64_t> bucketDesc(int64_t dtype,
                                const std::vector<int64_t> &numels,
                                std::vector<int64_t> attrs,
                                const std::vector<int64_t> &axes) {
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t n : numels)
    shapes.push_back({n});
  return tensorsDesc(dtype, shapes, std::move(attrs), axes);
}

// A bucket of pieces of 3, 5 and 1 elements per block (then 8192, 5000
// and 1: past 64 KiB, around the MPI rings where they lie). Piece i holds
// the group's blocks; element e of piece i has the global index
// (start of piece i) + e in `fill`. reduce_scatter_pieces gives each rank
// its block of every piece one after the other; all_gather_pieces puts
// them back; the started forms finish at comm_wait (the gather's x is
// overwritten right after its start, which is allowed).
TEST(Collectives, BucketPiecesWithoutPacking) {
  for (const std::vector<int64_t> &counts :
       {std::vector<int64_t>{3, 5, 1}, std::vector<int64_t>{8192, 5000, 1}})
    for (int64_t dtype : kDTypes)
      for (const auto &axes : axisSets())
        for (int64_t op : {0, 1, 3})
          for (bool started : {false, true}) {
            SCOPED_TRACE(label(dtype, axes) + " reduction " +
                         std::to_string(op) + (started ? " started" : "") +
                         " block " + std::to_string(counts[0]));
            std::vector<int64_t> group = members(axes);
            const int64_t g = static_cast<int64_t>(group.size());
            const int64_t index = myIndex(group);
            std::vector<Buffer> pieces;
            std::vector<int64_t> numels, starts;
            int64_t total = 0, global = 0;
            for (int64_t k : counts) {
              pieces.emplace_back(dtype, g * k);
              for (int64_t e = 0; e < g * k; ++e)
                pieces.back().set(e, fill(myRank(), global + e));
              numels.push_back(g * k);
              starts.push_back(global);
              global += g * k;
              total += k;
            }
            Buffer y(dtype, total);
            std::vector<void *> bufs;
            for (Buffer &piece : pieces)
              bufs.push_back(piece.data());
            bufs.push_back(y.data());
            numels.push_back(total);
            const int64_t slot = 12;
            if (started) {
              auto d = bucketDesc(dtype, numels, {slot, op}, axes);
              weft_k_reduce_scatter_pieces_start(bufs.data(), d.data());
              const int64_t progress[] = {0, 0};
              weft_k_comm_progress(nullptr, progress);
              void *w[] = {y.data()};
              weft_k_comm_wait(w, waitDesc(dtype, {total}, slot, false).data());
            } else {
              auto d = bucketDesc(dtype, numels, {op}, axes);
              weft_k_reduce_scatter_pieces(bufs.data(), d.data());
            }
            int64_t at = 0;
            for (size_t i = 0; i < counts.size(); ++i)
              for (int64_t e = 0; e < counts[i]; ++e, ++at)
                ASSERT_EQ(
                    y.get(at),
                    reduce(op, group, starts[i] + index * counts[i] + e, dtype))
                    << "reduce_scatter_pieces piece " << i << " element " << e;
            if (op != 0)
              continue;
            // Gather each rank's slice (its fill at the same positions).
            Buffer x(dtype, total);
            at = 0;
            for (size_t i = 0; i < counts.size(); ++i)
              for (int64_t e = 0; e < counts[i]; ++e, ++at)
                x.set(at, fill(myRank(), starts[i] + index * counts[i] + e));
            for (size_t i = 0; i < counts.size(); ++i)
              for (int64_t e = 0; e < g * counts[i]; ++e)
                pieces[i].set(e, -1);
            std::vector<void *> gbufs = {x.data()};
            std::vector<int64_t> gnumels = {total};
            for (size_t i = 0; i < counts.size(); ++i) {
              gbufs.push_back(pieces[i].data());
              gnumels.push_back(g * counts[i]);
            }
            if (started) {
              auto d = bucketDesc(dtype, gnumels, {slot}, axes);
              weft_k_all_gather_pieces_start(gbufs.data(), d.data());
              for (int64_t e = 0; e < total; ++e)
                x.set(e, -2);
              void *w[] = {pieces[0].data()};
              weft_k_comm_wait(
                  w, waitDesc(dtype, {gnumels[1]}, slot, false).data());
            } else {
              auto d = bucketDesc(dtype, gnumels, {}, axes);
              weft_k_all_gather_pieces(gbufs.data(), d.data());
            }
            for (size_t i = 0; i < counts.size(); ++i)
              for (int64_t e = 0; e < g * counts[i]; ++e) {
                const int64_t j = e / counts[i];
                ASSERT_EQ(pieces[i].get(e), fill(group[j], starts[i] + e))
                    << "all_gather_pieces piece " << i << " element " << e;
              }
          }
}

} // namespace
