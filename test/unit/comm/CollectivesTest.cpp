//===- CollectivesTest.cpp - The collective kernels on real MPI ranks -----===//
//
// Run under mpirun with the mesh as argument (`mpirun -n 4 CommTests 2x2`).
// Every rank fills its operand with values that depend on its rank, calls a
// kernel over the group of some mesh axes, and checks the result against
// what it computes itself from the group's members (found here from the
// mesh coordinates, independently of the runtime). Every kernel and dtype,
// every axis set (both orders of two axes), gathers, scatters and
// all-to-alls along leading and inner dims, in-place all_reduce and
// broadcast, started collectives finished by comm_wait, groups of one rank,
// and the Communicator interface itself (send/recv, avg, barrier).
//
//===----------------------------------------------------------------------===//
#include "weft/runtime/Comm.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<int64_t> gMesh;

const int64_t kDTypes[] = {WEFT_F32, WEFT_F64, WEFT_BF16, WEFT_I64, WEFT_I32};

int64_t myRank() { return weft::comm::rank(); }

std::vector<int64_t> coords(int64_t rank) {
  std::vector<int64_t> c(gMesh.size());
  for (size_t i = gMesh.size(); i-- > 0;) {
    c[i] = rank % gMesh[i];
    rank /= gMesh[i];
  }
  return c;
}

/// The ranks of this rank's group over `axes`, in group-index order.
std::vector<int64_t> members(const std::vector<int64_t> &axes) {
  std::vector<int64_t> mine = coords(myRank());
  std::vector<std::pair<int64_t, int64_t>> found; // (index, rank)
  for (int64_t r = 0; r < weft::comm::size(); ++r) {
    std::vector<int64_t> c = coords(r);
    bool same = true;
    for (size_t a = 0; a < c.size(); ++a) {
      bool in = std::count(axes.begin(), axes.end(), int64_t(a)) > 0;
      same &= in || c[a] == mine[a];
    }
    if (!same)
      continue;
    int64_t index = 0;
    for (int64_t x : axes)
      index = index * gMesh[x] + c[x];
    found.push_back({index, r});
  }
  std::sort(found.begin(), found.end());
  std::vector<int64_t> out;
  for (auto &f : found)
    out.push_back(f.second);
  return out;
}

int64_t myIndex(const std::vector<int64_t> &group) {
  return std::find(group.begin(), group.end(), myRank()) - group.begin();
}

/// Every subset of mesh axes, in both orders for pairs.
std::vector<std::vector<int64_t>> axisSets() {
  std::vector<std::vector<int64_t>> sets = {{}};
  for (int64_t a = 0; a < static_cast<int64_t>(gMesh.size()); ++a)
    sets.push_back({a});
  if (gMesh.size() == 2) {
    sets.push_back({0, 1});
    sets.push_back({1, 0});
  }
  return sets;
}

/// The value element `i` of rank `r`'s operand holds (small integers, exact
/// in every dtype, sums too).
double fill(int64_t r, int64_t i) { return double((r + 1) * 10 + i % 7); }

/// A tensor of any dtype, read and written as doubles.
struct Buffer {
  int64_t dtype;
  std::vector<uint8_t> bytes;
  Buffer(int64_t dtype, int64_t n)
      : dtype(dtype), bytes(static_cast<size_t>(n * weftDTypeSize(dtype))) {}
  void *data() { return bytes.data(); }
  void set(int64_t i, double v) {
    void *p = bytes.data() + i * weftDTypeSize(dtype);
    switch (dtype) {
    case WEFT_F32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case WEFT_F64:
      std::memcpy(p, &v, 8);
      break;
    case WEFT_BF16: {
      uint16_t h = weft::floatToBFloat16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case WEFT_I64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    default: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
    }
    }
  }
  double get(int64_t i) const {
    const void *p = bytes.data() + i * weftDTypeSize(dtype);
    switch (dtype) {
    case WEFT_F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case WEFT_F64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case WEFT_BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return weft::bfloat16ToFloat(h);
    }
    case WEFT_I64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    default: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    }
  }
};

/// The desc of an x -> y call: `attrs`, then the mesh axes.
std::vector<int64_t> desc(int64_t dtype, const std::vector<int64_t> &xs,
                          const std::vector<int64_t> &ys,
                          std::vector<int64_t> attrs,
                          const std::vector<int64_t> &axes) {
  std::vector<int64_t> d = {2, dtype, static_cast<int64_t>(xs.size())};
  d.insert(d.end(), xs.begin(), xs.end());
  d.push_back(dtype);
  d.push_back(static_cast<int64_t>(ys.size()));
  d.insert(d.end(), ys.begin(), ys.end());
  attrs.push_back(static_cast<int64_t>(axes.size()));
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
}

/// comm_wait's desc: y (and y2 when `two`), then the slot.
std::vector<int64_t> waitDesc(int64_t dtype, const std::vector<int64_t> &ys,
                              int64_t slot, bool two) {
  std::vector<int64_t> d = {two ? 2 : 1};
  for (int t = 0; t < (two ? 2 : 1); ++t) {
    d.push_back(dtype);
    d.push_back(static_cast<int64_t>(ys.size()));
    d.insert(d.end(), ys.begin(), ys.end());
  }
  d.push_back(1);
  d.push_back(slot);
  return d;
}

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Row-major index <-> coordinates.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}
int64_t ravel(const std::vector<int64_t> &c, const std::vector<int64_t> &s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + c[d];
  return i;
}

double reduce(int64_t op, const std::vector<int64_t> &group, int64_t i,
              int64_t dtype) {
  double want = op == 1 ? -1e300 : op == 2 ? 1e300 : 0;
  for (int64_t r : group) {
    double v = fill(r, i);
    want = op == 1 ? std::max(want, v) : op == 2 ? std::min(want, v) : want + v;
  }
  if (op == 3) {
    want /= static_cast<double>(group.size());
    if (dtype == WEFT_I64 || dtype == WEFT_I32)
      want = static_cast<double>(static_cast<int64_t>(want));
    else if (dtype == WEFT_BF16)
      want = weft::bfloat16ToFloat(
          weft::floatToBFloat16(static_cast<float>(want)));
    else if (dtype == WEFT_F32)
      want = static_cast<float>(want);
  }
  return want;
}

std::string label(int64_t dtype, const std::vector<int64_t> &axes) {
  std::string s = std::string(weftDTypeName(dtype)) + " axes [";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? "," : "") + std::to_string(axes[i]);
  return s + "]";
}

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
  std::vector<int64_t> d = {1, dtype, static_cast<int64_t>(shape.size())};
  d.insert(d.end(), shape.begin(), shape.end());
  attrs.push_back(static_cast<int64_t>(axes.size()));
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
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

/// The desc of a call on several tensors of one dtype (each flat): `attrs`,
/// then the mesh axes.
std::vector<int64_t> bucketDesc(int64_t dtype,
                                const std::vector<int64_t> &numels,
                                std::vector<int64_t> attrs,
                                const std::vector<int64_t> &axes) {
  std::vector<int64_t> d = {static_cast<int64_t>(numels.size())};
  for (int64_t n : numels)
    d.insert(d.end(), {dtype, 1, n});
  attrs.push_back(static_cast<int64_t>(axes.size()));
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
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
