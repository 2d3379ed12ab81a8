//===- CommTestUtil.h - What the CommTests files share -----------------===//
//
// The mesh of the run (main() in CollectivesTest.cpp sets it), every rank's
// operand values and the reductions they give, found from the mesh
// coordinates independently of the runtime, and kernel descriptors.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_COMM_COMMTESTUTIL_H
#define WEFT_TEST_UNIT_COMM_COMMTESTUTIL_H

#include "weft/runtime/Comm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace commtest {

inline std::vector<int64_t> gMesh;

inline const int64_t kDTypes[] = {WEFT_F32, WEFT_F64, WEFT_BF16, WEFT_I64,
                                  WEFT_I32};

inline int64_t myRank() { return weft::comm::rank(); }

inline std::vector<int64_t> coords(int64_t rank) {
  std::vector<int64_t> c(gMesh.size());
  for (size_t i = gMesh.size(); i-- > 0;) {
    c[i] = rank % gMesh[i];
    rank /= gMesh[i];
  }
  return c;
}

/// The ranks of this rank's group over `axes`, in group-index order.
inline std::vector<int64_t> members(const std::vector<int64_t> &axes) {
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

inline int64_t myIndex(const std::vector<int64_t> &group) {
  return std::find(group.begin(), group.end(), myRank()) - group.begin();
}

/// Every subset of mesh axes, in both orders for pairs.
inline std::vector<std::vector<int64_t>> axisSets() {
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
inline double fill(int64_t r, int64_t i) {
  return double((r + 1) * 10 + i % 7);
}

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

/// The desc of a call on tensors of `shapes` (one dtype): `attrs`, then
/// the mesh axes.
inline std::vector<int64_t>
tensorsDesc(int64_t dtype, const std::vector<std::vector<int64_t>> &shapes,
            std::vector<int64_t> attrs, const std::vector<int64_t> &axes) {
  std::vector<int64_t> d = {static_cast<int64_t>(shapes.size())};
  for (const std::vector<int64_t> &shape : shapes) {
    d.push_back(dtype);
    d.push_back(static_cast<int64_t>(shape.size()));
    d.insert(d.end(), shape.begin(), shape.end());
  }
  attrs.push_back(static_cast<int64_t>(axes.size()));
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
}

/// The desc of an x -> y call.
inline std::vector<int64_t> desc(int64_t dtype, const std::vector<int64_t> &xs,
                                 const std::vector<int64_t> &ys,
                                 std::vector<int64_t> attrs,
                                 const std::vector<int64_t> &axes) {
  return tensorsDesc(dtype, {xs, ys}, std::move(attrs), axes);
}

/// comm_wait's desc: y (and y2 when `two`), then the slot.
inline std::vector<int64_t> waitDesc(int64_t dtype,
                                     const std::vector<int64_t> &ys,
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

inline int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Row-major index <-> coordinates.
inline std::vector<int64_t> unravel(int64_t i,
                                    const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}
inline int64_t ravel(const std::vector<int64_t> &c,
                     const std::vector<int64_t> &s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + c[d];
  return i;
}

inline double reduce(int64_t op, const std::vector<int64_t> &group, int64_t i,
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

inline std::string label(int64_t dtype, const std::vector<int64_t> &axes) {
  std::string s = std::string(weftDTypeName(dtype)) + " axes [";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? "," : "") + std::to_string(axes[i]);
  return s + "]";
}

} // namespace commtest

#endif // WEFT_TEST_UNIT_COMM_COMMTESTUTIL_H
