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

#include "KernelDesc.h"

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

/// One tensor of a desc: its dtype and dims.
using Shape = std::pair<int64_t, std::vector<int64_t>>;

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
  run(weft_k_comm_wait, bufs, kernelDesc(tensors, {slot}));
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
  auto widen = [](const auto &v) {
    return std::vector<double>(v.begin(), v.end());
  };
  switch (dtype) {
  case WEFT_F32:
    return widen(b.download<float>(count));
  case WEFT_F64:
    return b.download<double>(count);
  case WEFT_BF16: {
    std::vector<double> out;
    for (uint16_t x : b.download<uint16_t>(count))
      out.push_back(weft::bfloat16ToFloat(x));
    return out;
  }
  case WEFT_I64:
    return widen(b.download<int64_t>(count));
  case WEFT_I32:
    return widen(b.download<int32_t>(count));
  default:
    return widen(b.download<uint8_t>(count));
  }
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
  case WEFT_I64:
    b.upload(std::vector<int64_t>(values.begin(), values.end()));
    break;
  case WEFT_I32:
    b.upload(std::vector<int32_t>(values.begin(), values.end()));
    break;
  default:
    b.upload(std::vector<uint8_t>(values.begin(), values.end()));
    break;
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
