//===- GradTestUtil.h - Checking backward kernels -------------------------===//
//
// A backward kernel is checked against central finite differences of the
// forward kernel it differentiates: with a random projection r, the loss
// L(v) = sum(forward(v) * r) (in double) has gradient backward(r), so each
// element of the analytic gradient is compared with
// (L(v + e_i) - L(v - e_i)) / (2 eps). Linear forwards (conv, pools,
// slice, gather) are exact for any eps; smooth ones need a small eps.
//
// sameSerialAndPooled runs a kernel once on the thread pool and once
// inside a pool task, where nested loops run inline (one thread), and
// expects bitwise-equal results.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_KERNELS_GRADTESTUTIL_H
#define WEFT_TEST_UNIT_KERNELS_GRADTESTUTIL_H

#include "KernelTestUtil.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace weft {
namespace test {

using Forward = std::function<std::vector<float>(const std::vector<float> &)>;

/// Random values in [-1, 1], each exactly a float (so kernels given them
/// as f32 see the same projection).
inline std::vector<double> randomProjection(int64_t n) {
  std::vector<double> r(static_cast<size_t>(n));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (double &v : r)
    v = static_cast<float>(dist(rng()));
  return r;
}

inline std::vector<float> asFloats(const std::vector<double> &v) {
  return std::vector<float>(v.begin(), v.end());
}

inline double project(const std::vector<float> &y,
                      const std::vector<double> &r) {
  EXPECT_EQ(y.size(), r.size());
  double s = 0.0;
  for (size_t i = 0; i < y.size() && i < r.size(); ++i)
    s += static_cast<double>(y[i]) * r[i];
  return s;
}

/// dL/dv[i] by central differences of L(v) = project(f(v), r).
inline std::vector<double> numericGrad(std::vector<float> v, const Forward &f,
                                       const std::vector<double> &r,
                                       double eps) {
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float saved = v[i];
    const float hi = static_cast<float>(saved + eps);
    const float lo = static_cast<float>(saved - eps);
    v[i] = hi;
    const double lHi = project(f(v), r);
    v[i] = lo;
    const double lLo = project(f(v), r);
    v[i] = saved;
    g[i] = (lHi - lLo) / (static_cast<double>(hi) - static_cast<double>(lo));
  }
  return g;
}

/// Expects |a - e| <= atol + rtol * |e| element-wise.
inline void expectGradClose(const std::vector<float> &analytic,
                            const std::vector<double> &numeric, double rtol,
                            double atol) {
  ASSERT_EQ(analytic.size(), numeric.size());
  int failures = 0;
  for (size_t i = 0; i < analytic.size() && failures < 10; ++i) {
    const double a = analytic[i], e = numeric[i];
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      ADD_FAILURE() << "at " << i << ": analytic " << a << ", numeric " << e;
      ++failures;
    }
  }
}

/// Checks the gradient `analytic` of project(f(v), r) at v.
inline void checkAgainstForward(const std::vector<float> &analytic,
                                const std::vector<float> &v, const Forward &f,
                                const std::vector<double> &r, double eps,
                                double rtol = 1e-2, double atol = 1e-3) {
  expectGradClose(analytic, numericGrad(v, f, r, eps), rtol, atol);
}

/// Distinct values spaced `gap` apart in random order (no ties or near
/// ties, so max pooling's finite differences do not cross a kink).
inline std::vector<float> distinctValues(int64_t n, double gap = 0.05) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i - n / 2) * gap);
  std::shuffle(v.begin(), v.end(), rng());
  return v;
}

/// Runs `run` (which calls a kernel and returns its results, concatenated)
/// on the pool and on one thread; expects the same bits.
inline void
expectSameSerialAndPooled(const std::function<std::vector<float>()> &run) {
  const std::vector<float> pooled = run();
  std::vector<float> serial;
  cpu::parallelFor(2, 1, [&](int64_t begin, int64_t) {
    if (begin == 0)
      serial = run(); // nested: every loop inside runs inline
  });
  ASSERT_EQ(pooled.size(), serial.size());
  EXPECT_EQ(0, std::memcmp(pooled.data(), serial.data(),
                           pooled.size() * sizeof(float)))
      << "results differ between " << cpu::numThreads() << " threads and one";
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_UNIT_KERNELS_GRADTESTUTIL_H
