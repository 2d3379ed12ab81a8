//===- MathKernelsCommon.h - What the math kernel tests share ---*- C++ -*-===//
//
// The failure count and case helpers of MathKernelsTest.cpp (the GPU math
// kernels against their CPU twins) and MathKernelsRepeatTest.cpp (bitwise
// repetition, device errors, throughput), one executable.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_CUDA_MATHKERNELSCOMMON_H
#define WEFT_TEST_CUDA_MATHKERNELSCOMMON_H

#include "KernelCheck.h"

#include "weft/runtime/KernelABI.h"

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace weft::test::math {

inline int failures = 0;
inline uint32_t nextSeed = 1;

using Dims = std::vector<int64_t>;

inline HostTensor rnd(int64_t dtype, Dims dims, double lo = -1.0,
                      double hi = 1.0) {
  return randomTensor(dtype, std::move(dims), lo, hi, nextSeed++);
}

inline int64_t bits(double v) { return weftDoubleToAttr(v); }

inline void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("FAIL %s\n", what.c_str());
    ++failures;
  }
}

inline void check(const std::string &name, KernelFn cpu, KernelFn gpu,
                  std::vector<HostTensor> operands,
                  std::vector<HostTensor> results, std::vector<int64_t> attrs,
                  double rtol, double atol, std::vector<int> inPlace = {}) {
  KernelCase c;
  c.name = name;
  c.cpu = cpu;
  c.gpu = gpu;
  c.operands = std::move(operands);
  c.results = std::move(results);
  c.attrs = std::move(attrs);
  c.rtol = rtol;
  c.atol = atol;
  c.inPlace = std::move(inPlace);
  if (!runCase(c))
    ++failures;
}

inline std::string dimsName(const Dims &d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "x" : "") + std::to_string(d[i]);
  return s + "]";
}

inline Dims concat(Dims a, const Dims &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Labels in [0, classes), every `ignoreEvery`-th one ignoreIndex.
inline HostTensor labelsOf(int64_t dtype, Dims dims, int64_t classes,
                           int64_t ignoreIndex, int ignoreEvery) {
  std::mt19937 gen(nextSeed++);
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  std::vector<double> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = ignoreEvery > 0 && i % ignoreEvery == 1
               ? static_cast<double>(ignoreIndex)
               : static_cast<double>(gen() % classes);
  return tensorOf(dtype, std::move(dims), v);
}

/// Bitwise repetition of the reductions, the device error word, and the
/// throughput lines (MathKernelsRepeatTest.cpp).
void determinismTests();
void deviceErrorTests();
void throughput();

} // namespace weft::test::math

#endif // WEFT_TEST_CUDA_MATHKERNELSCOMMON_H
