//===- KernelTestUtil.h - Building kernel calls and references in tests ---===//
//
// HostTensor owns a tensor's dims and data; KernelCall encodes tensors and
// attributes into the (bufs, desc) pair of KernelABI.h exactly as the
// compiler's lowering does, then calls a weft_k_* function. The index
// helpers serve the naive reference implementations in the tests.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_KERNELS_KERNELTESTUTIL_H
#define WEFT_TEST_UNIT_KERNELS_KERNELTESTUTIL_H

#include "weft/runtime/KernelABI.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

namespace weft {
namespace test {

using Dims = std::vector<int64_t>;
using KernelFn = void (*)(void *const *, const int64_t *);

inline int64_t numelOf(const Dims &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

template <class T> constexpr int64_t dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return WEFT_F32;
  else if constexpr (std::is_same_v<T, double>)
    return WEFT_F64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return WEFT_I64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return WEFT_I32;
  else if constexpr (std::is_same_v<T, int8_t>)
    return WEFT_I8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return WEFT_U8;
  else if constexpr (std::is_same_v<T, bool>)
    return WEFT_BOOL;
  else
    return -1;
}

/// A dense row-major tensor. `dtype` defaults from T; 16-bit floats and
/// bools use uint16_t / uint8_t storage with the dtype given explicitly.
template <class T> struct HostTensor {
  Dims dims;
  std::vector<T> data;
  int64_t dtype = dtypeOf<T>();

  HostTensor() = default;
  explicit HostTensor(Dims d)
      : HostTensor(std::move(d), dtypeOf<T>(), RawTag()) {}
  HostTensor(Dims d, WeftDType dt)
      : HostTensor(std::move(d), int64_t(dt), RawTag()) {}
  HostTensor(Dims d, std::vector<T> values)
      : HostTensor(std::move(d), std::move(values), dtypeOf<T>(), RawTag()) {}
  HostTensor(Dims d, std::vector<T> values, WeftDType dt)
      : HostTensor(std::move(d), std::move(values), int64_t(dt), RawTag()) {}
  /// Zero-filled, with the dtype code of another tensor.
  static HostTensor like(Dims d, int64_t dt) {
    return HostTensor(std::move(d), dt, RawTag());
  }

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  T &operator[](int64_t i) { return data[static_cast<size_t>(i)]; }
  const T &operator[](int64_t i) const { return data[static_cast<size_t>(i)]; }

private:
  // The tag keeps these out of the overload resolution of public calls.
  struct RawTag {
    explicit RawTag() = default;
  };
  HostTensor(Dims d, int64_t dt, RawTag)
      : dims(std::move(d)), data(static_cast<size_t>(numelOf(dims))),
        dtype(dt) {}
  HostTensor(Dims d, std::vector<T> values, int64_t dt, RawTag)
      : dims(std::move(d)), data(std::move(values)), dtype(dt) {
    EXPECT_EQ(static_cast<int64_t>(data.size()), numelOf(dims));
  }
};

/// Bool tensors are stored one byte per element.
using BoolTensor = HostTensor<uint8_t>;
inline BoolTensor makeBool(Dims d, std::vector<uint8_t> v = {}) {
  if (v.empty())
    return BoolTensor(std::move(d), WEFT_BOOL);
  return BoolTensor(std::move(d), std::move(v), WEFT_BOOL);
}

class KernelCall {
public:
  template <class T> KernelCall &tensor(HostTensor<T> &t) {
    return raw(t.dtype, t.dims, t.data.data());
  }
  KernelCall &raw(int64_t dtype, const Dims &dims, void *data) {
    bufs_.push_back(data);
    tensors_.push_back(dtype);
    tensors_.push_back(static_cast<int64_t>(dims.size()));
    tensors_.insert(tensors_.end(), dims.begin(), dims.end());
    ++count_;
    return *this;
  }
  KernelCall &attr(int64_t v) {
    attrs_.push_back(v);
    return *this;
  }
  KernelCall &attrs(const std::vector<int64_t> &vs) {
    attrs_.insert(attrs_.end(), vs.begin(), vs.end());
    return *this;
  }
  KernelCall &attrDouble(double v) { return attr(weftDoubleToAttr(v)); }

  std::vector<int64_t> desc() const {
    std::vector<int64_t> d;
    d.push_back(count_);
    d.insert(d.end(), tensors_.begin(), tensors_.end());
    d.push_back(static_cast<int64_t>(attrs_.size()));
    d.insert(d.end(), attrs_.begin(), attrs_.end());
    return d;
  }
  void run(KernelFn fn) const {
    std::vector<int64_t> d = desc();
    fn(bufs_.data(), d.data());
  }

private:
  std::vector<void *> bufs_;
  std::vector<int64_t> tensors_;
  std::vector<int64_t> attrs_;
  int64_t count_ = 0;
};

inline std::mt19937 &rng() {
  static std::mt19937 gen(12345);
  return gen;
}

template <class T>
HostTensor<T> randomTensor(Dims dims, double lo = -1.0, double hi = 1.0) {
  HostTensor<T> t(std::move(dims));
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (T &v : t.data)
      v = static_cast<T>(dist(rng()));
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo),
                                                static_cast<int64_t>(hi));
    for (T &v : t.data)
      v = static_cast<T>(dist(rng()));
  }
  return t;
}

inline Dims unravel(int64_t flat, const Dims &dims) {
  Dims idx(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    idx[i] = flat % dims[i];
    flat /= dims[i];
  }
  return idx;
}

inline int64_t ravel(const Dims &idx, const Dims &dims) {
  int64_t flat = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    flat = flat * dims[i] + idx[i];
  return flat;
}

/// Flat index into a tensor of `inDims` of the element numpy broadcasting
/// maps to output index `outIdx`.
inline int64_t broadcastIndex(const Dims &outIdx, const Dims &inDims) {
  size_t lead = outIdx.size() - inDims.size();
  int64_t flat = 0;
  for (size_t i = 0; i < inDims.size(); ++i)
    flat = flat * inDims[i] + (inDims[i] == 1 ? 0 : outIdx[lead + i]);
  return flat;
}

/// Expects |actual - expected| <= atol + rtol * |expected| element-wise;
/// NaN must match NaN.
template <class T>
void expectClose(const std::vector<T> &actual, const std::vector<T> &expected,
                 double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 10; ++i) {
    double a = static_cast<double>(actual[i]);
    double e = static_cast<double>(expected[i]);
    if (std::isnan(e)) {
      if (!std::isnan(a)) {
        ADD_FAILURE() << "at " << i << ": expected NaN, got " << a;
        ++failures;
      }
      continue;
    }
    if (std::isinf(e) && a == e)
      continue;
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      ADD_FAILURE() << "at " << i << ": got " << a << ", expected " << e;
      ++failures;
    }
  }
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_UNIT_KERNELS_KERNELTESTUTIL_H
