//===- DataKernelsCommon.h - What the data kernel tests share ---*- C++ -*-===//
//
// The failure count and case helpers of DataKernelsTest.cpp (elementwise,
// data movement, gathers, reductions) and DataKernelsDrawTest.cpp (topk,
// dropout), one executable: the GPU data kernels against their CPU twins.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_CUDA_DATAKERNELSCOMMON_H
#define WEFT_TEST_CUDA_DATAKERNELSCOMMON_H

#include "KernelCheck.h"

#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace weft::test::data {

using Dims = std::vector<int64_t>;

inline int failures = 0;

inline void expect(const KernelCase &c) {
  if (!runCase(c))
    ++failures;
}

inline std::string dimsName(const Dims &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s + "]";
}

inline std::string name(const char *kernel, int64_t dtype,
                        const std::string &what) {
  return std::string(kernel) + " " + weftDTypeName(dtype) + " " + what;
}

/// Integer values drawn uniformly from [lo, hi), clipped to the range of
/// `dtype` (bool: 0/1 at random), stored as `dtype`.
inline HostTensor smallInts(int64_t dtype, Dims dims, int lo, int hi,
                            uint32_t seed) {
  if (dtype == WEFT_U8) {
    lo = std::max(lo, 0);
    hi = std::min(hi, 256);
  } else if (dtype == WEFT_I8) {
    lo = std::max(lo, -128);
    hi = std::min(hi, 128);
  }
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi - 1);
  std::vector<double> values(static_cast<size_t>(n));
  for (double &v : values)
    v = dtype == WEFT_BOOL ? (dist(gen) & 1) : dist(gen);
  return tensorOf(dtype, std::move(dims), values);
}

/// Like smallInts but never 0 (divisors).
inline HostTensor nonZeroInts(int64_t dtype, Dims dims, int lo, int hi,
                              uint32_t seed) {
  HostTensor t = smallInts(dtype, dims, lo, hi, seed);
  std::vector<double> values;
  for (int64_t i = 0; i < t.numel(); ++i)
    values.push_back(t.at(i) == 0 ? 1 : t.at(i));
  return tensorOf(dtype, std::move(dims), values);
}

inline bool isFloat(int64_t dtype) {
  return dtype == WEFT_F32 || dtype == WEFT_F64 || dtype == WEFT_F16 ||
         dtype == WEFT_BF16;
}

/// Random contents suited to the dtype: floats in [lo, hi), integers in
/// [lo, hi) (bool 0/1).
inline HostTensor input(int64_t dtype, Dims dims, double lo, double hi,
                        uint32_t seed) {
  if (isFloat(dtype))
    return randomTensor(dtype, std::move(dims), lo, hi, seed);
  return smallInts(dtype, std::move(dims), static_cast<int>(lo),
                   static_cast<int>(hi), seed);
}

inline const int64_t kAllTypes[] = {WEFT_F32, WEFT_F16, WEFT_BF16,
                                    WEFT_F64, WEFT_I64, WEFT_I32,
                                    WEFT_I8,  WEFT_U8,  WEFT_BOOL};
/// Dtypes for case i of a kernel that only moves elements: every dtype for
/// the first case, one per element size for the rest.
inline std::vector<int64_t> typesFor(size_t i) {
  if (i == 0)
    return std::vector<int64_t>(std::begin(kAllTypes), std::end(kAllTypes));
  return {WEFT_U8, WEFT_BF16, WEFT_F32, WEFT_I64};
}

/// The cases of DataKernelsDrawTest.cpp.
void testTopK();
void testDropout();
void testRandom();

} // namespace weft::test::data

#endif // WEFT_TEST_CUDA_DATAKERNELSCOMMON_H
