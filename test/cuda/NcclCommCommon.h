//===- NcclCommCommon.h - What the NCCL collective tests share -*- C++ -*-===//
//
// Pass/fail counts, device buffers, kernel calls and value conversions for
// NcclCommTest.cpp (one rank, and main) and NcclTwoRankTest.cpp (two ranks),
// one executable.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_CUDA_NCCLCOMMCOMMON_H
#define WEFT_TEST_CUDA_NCCLCOMMCOMMON_H

#include "runtime/comm/CollectiveCall.h"
#include "runtime/comm/nccl/NcclComm.h"
#include "runtime/comm/nccl/NcclKernels.h"
#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/Comm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" void weft_rt_device_comm_start(void);
extern "C" void weft_rt_device_comm_finish(void);

namespace weft::test::nccl {

using Kernel = void (*)(void *const *, const int64_t *);

inline int gPassed = 0, gFailed = 0;
inline int64_t gRank = 0;

inline void expect(bool ok, const std::string &what) {
  if (ok) {
    ++gPassed;
    return;
  }
  ++gFailed;
  std::printf("FAIL (rank %lld): %s\n", static_cast<long long>(gRank),
              what.c_str());
  std::fflush(stdout);
}

inline void check(cudaError_t err, const char *what) {
  if (err != cudaSuccess) {
    std::printf("FAIL (rank %lld): %s: %s\n", static_cast<long long>(gRank),
                what, cudaGetErrorString(err));
    std::exit(1);
  }
}

/// Device memory; the copies go through the compute stream, so they are
/// ordered with the kernels (and with the waits of the collectives).
class Buffer {
public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc");
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { cudaFree(ptr_); }

  void *get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  template <class T> void upload(const std::vector<T> &values) {
    check(cudaMemcpyAsync(ptr_, values.data(), values.size() * sizeof(T),
                          cudaMemcpyHostToDevice, weft::cuda::computeStream()),
          "upload");
    check(cudaStreamSynchronize(weft::cuda::computeStream()), "upload");
  }
  template <class T> std::vector<T> download(size_t count) const {
    std::vector<T> values(count);
    check(cudaMemcpyAsync(values.data(), ptr_, count * sizeof(T),
                          cudaMemcpyDeviceToHost, weft::cuda::computeStream()),
          "download");
    check(cudaStreamSynchronize(weft::cuda::computeStream()), "download");
    return values;
  }
  /// Enqueues a fill with byte `value` on the compute stream (a kernel
  /// after a *_start overwriting its operand).
  void scribble(int value) {
    check(cudaMemsetAsync(ptr_, value, bytes_, weft::cuda::computeStream()),
          "memset");
  }

private:
  void *ptr_ = nullptr;
  size_t bytes_;
};

struct Shape {
  int64_t dtype;
  std::vector<int64_t> dims;
};

inline std::vector<int64_t> desc(const std::vector<Shape> &tensors,
                                 const std::vector<int64_t> &attrs) {
  std::vector<int64_t> d = {static_cast<int64_t>(tensors.size())};
  for (const Shape &t : tensors) {
    d.push_back(t.dtype);
    d.push_back(static_cast<int64_t>(t.dims.size()));
    d.insert(d.end(), t.dims.begin(), t.dims.end());
  }
  d.push_back(static_cast<int64_t>(attrs.size()));
  d.insert(d.end(), attrs.begin(), attrs.end());
  return d;
}

inline void run(Kernel kernel, std::vector<void *> bufs,
                const std::vector<int64_t> &d) {
  kernel(bufs.data(), d.data());
}

inline int64_t numel(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// comm_wait on `slot` for y (and y2 when given).
inline void commWait(int64_t slot, const Shape &shape, void *y,
                     void *y2 = nullptr) {
  std::vector<Shape> tensors = {shape};
  std::vector<void *> bufs = {y};
  if (y2) {
    tensors.push_back(shape);
    bufs.push_back(y2);
  }
  run(weft_k_comm_wait, bufs, desc(tensors, {slot}));
}

inline std::string join(const std::vector<double> &v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 8; ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() > 8 ? ",..." : "");
}

/// Device values of any dtype as doubles.
inline std::vector<double> readAs(const Buffer &b, int64_t dtype,
                                  int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  switch (dtype) {
  case WEFT_F32: {
    auto v = b.download<float>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  case WEFT_F64: {
    auto v = b.download<double>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  case WEFT_BF16: {
    auto v = b.download<uint16_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = weft::bfloat16ToFloat(v[i]);
    break;
  }
  case WEFT_I64: {
    auto v = b.download<int64_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<double>(v[i]);
    break;
  }
  case WEFT_I32: {
    auto v = b.download<int32_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  default: {
    auto v = b.download<uint8_t>(count);
    for (int64_t i = 0; i < count; ++i)
      out[i] = v[i];
    break;
  }
  }
  return out;
}

/// Uploads doubles as `dtype`.
inline void writeAs(Buffer &b, int64_t dtype,
                    const std::vector<double> &values) {
  switch (dtype) {
  case WEFT_F32:
    b.upload(std::vector<float>(values.begin(), values.end()));
    break;
  case WEFT_F64:
    b.upload(values);
    break;
  case WEFT_BF16: {
    std::vector<uint16_t> v;
    for (double x : values)
      v.push_back(weft::floatToBFloat16(static_cast<float>(x)));
    b.upload(v);
    break;
  }
  case WEFT_I64: {
    std::vector<int64_t> v;
    for (double x : values)
      v.push_back(static_cast<int64_t>(x));
    b.upload(v);
    break;
  }
  case WEFT_I32: {
    std::vector<int32_t> v;
    for (double x : values)
      v.push_back(static_cast<int32_t>(x));
    b.upload(v);
    break;
  }
  default: {
    std::vector<uint8_t> v;
    for (double x : values)
      v.push_back(static_cast<uint8_t>(x));
    b.upload(v);
    break;
  }
  }
}

inline void expectValues(const Buffer &b, int64_t dtype,
                         const std::vector<double> &want,
                         const std::string &what, double tolerance = 0) {
  std::vector<double> got = readAs(b, dtype, static_cast<int64_t>(want.size()));
  bool ok = true;
  for (size_t i = 0; i < want.size() && ok; ++i)
    ok = std::fabs(got[i] - want[i]) <= tolerance * (1 + std::fabs(want[i]));
  expect(ok, what + ": got [" + join(got) + "], want [" + join(want) + "]");
}

inline std::vector<double> iota(int64_t n, double start = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = start + static_cast<double>(i);
  return v;
}

//===----------------------------------------------------------------------===//
// One rank
//===----------------------------------------------------------------------===//

/// The two-rank modes (NcclTwoRankTest.cpp): two-ranks, order-mismatch or
/// dead-peer; 77 where two ranks cannot run.
int twoRanks(const std::string &mode);

} // namespace weft::test::nccl

#endif // WEFT_TEST_CUDA_NCCLCOMMCOMMON_H
