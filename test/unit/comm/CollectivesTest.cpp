//===- CollectivesTest.cpp - The collective kernels on real MPI ranks -----===//
//
// Run under mpirun with the mesh as argument (`mpirun -n 4 CommTests 2x2`).
// Every rank fills its operand with values that depend on its rank, calls a
// kernel over the group of some mesh axes, and checks the result against
// what it computes itself from the group's members (found here from the
// mesh coordinates, independently of the runtime). Every dtype the kernels
// take, gathers and scatters along leading and inner dims, in-place
// all_reduce, max/min, and groups of one rank.
//
//===----------------------------------------------------------------------===//
#include "weft/runtime/Comm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

extern "C" void weft_k_all_reduce(void *const *, const int64_t *);
extern "C" void weft_k_all_gather(void *const *, const int64_t *);
extern "C" void weft_k_reduce_scatter(void *const *, const int64_t *);
extern "C" void weft_k_all_slice(void *const *, const int64_t *);

namespace {

std::vector<int64_t> gMesh;

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
  std::vector<int64_t> mine = coords(weft::comm::rank());
  std::vector<std::pair<int64_t, int64_t>> found; // (index, rank)
  for (int64_t r = 0; r < weft::comm::size(); ++r) {
    std::vector<int64_t> c = coords(r);
    bool same = true;
    for (size_t a = 0; a < c.size(); ++a) {
      bool in = false;
      for (int64_t x : axes)
        in |= x == static_cast<int64_t>(a);
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
/// in every dtype).
double fill(int64_t r, int64_t i) { return double((r + 1) * 10 + i % 7); }

template <class T> T cast(double v, int64_t dtype) {
  if (dtype == WEFT_BF16)
    return static_cast<T>(weft::floatToBFloat16(static_cast<float>(v)));
  return static_cast<T>(v);
}

template <class T> double value(T v, int64_t dtype) {
  if (dtype == WEFT_BF16)
    return weft::bfloat16ToFloat(static_cast<uint16_t>(v));
  return static_cast<double>(v);
}

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

template <class T> void checkAllReduce(int64_t dtype) {
  const int64_t n = 13;
  for (const auto &axes : axisSets())
    for (int64_t reduction : {0, 1, 2})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "dtype " << dtype << " reduction " << reduction
                     << " in place " << inPlace << " axes " << axes.size());
        std::vector<T> x(n), y(n);
        for (int64_t i = 0; i < n; ++i)
          x[i] = cast<T>(fill(weft::comm::rank(), i), dtype);
        void *bufs[] = {x.data(), inPlace ? x.data() : y.data()};
        auto d = desc(dtype, {n}, {n}, {reduction}, axes);
        weft_k_all_reduce(bufs, d.data());
        const std::vector<T> &got = inPlace ? x : y;
        for (int64_t i = 0; i < n; ++i) {
          double want = reduction == 1 ? -1e300 : reduction == 2 ? 1e300 : 0;
          for (int64_t r : members(axes)) {
            double v = fill(r, i);
            want = reduction == 0   ? want + v
                   : reduction == 1 ? std::max(want, v)
                                    : std::min(want, v);
          }
          ASSERT_EQ(value(got[i], dtype), want) << "element " << i;
        }
      }
}

TEST(Collectives, AllReduceEveryDType) {
  checkAllReduce<float>(WEFT_F32);
  checkAllReduce<double>(WEFT_F64);
  checkAllReduce<int64_t>(WEFT_I64);
  checkAllReduce<int32_t>(WEFT_I32);
  checkAllReduce<uint16_t>(WEFT_BF16);
}

// x [2, 3, 4]; the group's blocks joined along `dim` in group-index order.
TEST(Collectives, AllGatherAlongEachDim) {
  const std::vector<int64_t> xs = {2, 3, 4};
  for (const auto &axes : axisSets())
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> group = members(axes);
      int64_t g = static_cast<int64_t>(group.size());
      std::vector<int64_t> ys = xs;
      ys[dim] *= g;
      std::vector<float> x(24), y(24 * g);
      for (int64_t i = 0; i < 24; ++i)
        x[i] = static_cast<float>(fill(weft::comm::rank(), i));
      void *bufs[] = {x.data(), y.data()};
      auto d = desc(WEFT_F32, xs, ys, {dim}, axes);
      weft_k_all_gather(bufs, d.data());
      for (int64_t i = 0; i < 24 * g; ++i) {
        int64_t c[3] = {i / (ys[1] * ys[2]), (i / ys[2]) % ys[1], i % ys[2]};
        int64_t block = c[dim] / xs[dim];
        c[dim] %= xs[dim];
        int64_t src = (c[0] * xs[1] + c[1]) * xs[2] + c[2];
        ASSERT_EQ(y[i], fill(group[block], src))
            << "dim " << dim << " element " << i;
      }
    }
}

// x [4, 2, 6] with the split dim a multiple of every group size; each rank
// keeps its block of the group's sum.
TEST(Collectives, ReduceScatterAndSliceAlongEachDim) {
  for (const auto &axes : axisSets())
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> group = members(axes);
      int64_t g = static_cast<int64_t>(group.size());
      std::vector<int64_t> xs = {4, 2, 6};
      xs[dim] *= g;
      std::vector<int64_t> ys = xs;
      ys[dim] /= g;
      int64_t nx = xs[0] * xs[1] * xs[2], ny = nx / g;
      std::vector<float> x(nx), y(ny), s(ny);
      for (int64_t i = 0; i < nx; ++i)
        x[i] = static_cast<float>(fill(weft::comm::rank(), i));
      void *bufs[] = {x.data(), y.data()};
      auto d = desc(WEFT_F32, xs, ys, {0, dim}, axes);
      weft_k_reduce_scatter(bufs, d.data());
      void *sbufs[] = {x.data(), s.data()};
      auto sd = desc(WEFT_F32, xs, ys, {dim}, axes);
      weft_k_all_slice(sbufs, sd.data());
      int64_t index = 0;
      for (size_t k = 0; k < group.size(); ++k)
        if (group[k] == weft::comm::rank())
          index = static_cast<int64_t>(k);
      for (int64_t i = 0; i < ny; ++i) {
        int64_t c[3] = {i / (ys[1] * ys[2]), (i / ys[2]) % ys[1], i % ys[2]};
        c[dim] += index * ys[dim];
        int64_t src = (c[0] * xs[1] + c[1]) * xs[2] + c[2];
        double want = 0;
        for (int64_t r : group)
          want += fill(r, src);
        ASSERT_EQ(y[i], want) << "reduce_scatter dim " << dim << " " << i;
        ASSERT_EQ(s[i], fill(weft::comm::rank(), src))
            << "all_slice dim " << dim << " " << i;
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
