//===- KernelCheck.cpp - Runs a kernel on the CPU and the GPU, compares ---===//

#include "KernelCheck.h"

#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace weft {
namespace test {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

double HostTensor::at(int64_t i) const {
  const unsigned char *p = bytes.data() + i * weftDTypeSize(dtype);
  switch (dtype) {
  case WEFT_F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case WEFT_F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case WEFT_F16:
  case WEFT_BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return dtype == WEFT_F16 ? halfToFloat(v) : bfloat16ToFloat(v);
  }
  case WEFT_I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  case WEFT_I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case WEFT_I8:
    return static_cast<int8_t>(*p);
  default: // u8, bool
    return *p;
  }
}

static void store(HostTensor &t, int64_t i, double value) {
  unsigned char *p = t.bytes.data() + i * weftDTypeSize(t.dtype);
  switch (t.dtype) {
  case WEFT_F32: {
    float v = static_cast<float>(value);
    std::memcpy(p, &v, 4);
    break;
  }
  case WEFT_F64:
    std::memcpy(p, &value, 8);
    break;
  case WEFT_F16:
  case WEFT_BF16: {
    float f = static_cast<float>(value);
    uint16_t v = t.dtype == WEFT_F16 ? floatToHalf(f) : floatToBFloat16(f);
    std::memcpy(p, &v, 2);
    break;
  }
  case WEFT_I64: {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(p, &v, 8);
    break;
  }
  case WEFT_I32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(p, &v, 4);
    break;
  }
  case WEFT_I8:
    *p = static_cast<unsigned char>(static_cast<int8_t>(value));
    break;
  default:
    *p = static_cast<unsigned char>(value);
    break;
  }
}

HostTensor zeroTensor(int64_t dtype, std::vector<int64_t> dims) {
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.assign(t.numel() * weftDTypeSize(dtype), 0);
  return t;
}

HostTensor randomTensor(int64_t dtype, std::vector<int64_t> dims, double lo,
                        double hi, uint32_t seed) {
  HostTensor t = zeroTensor(dtype, std::move(dims));
  std::mt19937 gen(seed);
  bool integral = dtype == WEFT_I64 || dtype == WEFT_I32 || dtype == WEFT_I8 ||
                  dtype == WEFT_U8 || dtype == WEFT_BOOL;
  std::uniform_real_distribution<double> real(lo, hi);
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    double v = real(gen);
    if (dtype == WEFT_BOOL)
      v = v < (lo + hi) / 2 ? 0 : 1;
    else if (integral)
      v = std::floor(v);
    store(t, i, v);
  }
  return t;
}

HostTensor tensorOf(int64_t dtype, std::vector<int64_t> dims,
                    const std::vector<double> &values) {
  HostTensor t = zeroTensor(dtype, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    std::fprintf(stderr, "tensorOf: %zu values for %lld elements\n",
                 values.size(), static_cast<long long>(t.numel()));
    std::exit(1);
  }
  for (size_t i = 0; i < values.size(); ++i)
    store(t, static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<int64_t> kernelDesc(const KernelCase &c) {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> tensors;
  for (const std::vector<HostTensor> *list : {&c.operands, &c.results})
    for (const HostTensor &t : *list)
      tensors.emplace_back(t.dtype, t.dims);
  return kernelDesc(tensors, c.attrs);
}

void *uploadTensor(const HostTensor &t) {
  void *p = nullptr;
  cuda::check(cudaMalloc(&p, std::max<size_t>(t.bytes.size(), 1)),
              "test allocation");
  cuda::check(
      cudaMemcpy(p, t.bytes.data(), t.bytes.size(), cudaMemcpyHostToDevice),
      "test upload");
  return p;
}

bool runCase(const KernelCase &c) {
  std::vector<int64_t> desc = kernelDesc(c);
  size_t numOperands = c.operands.size();
  size_t total = numOperands + c.results.size();
  auto aliasOf = [&](size_t r) {
    return r < c.inPlace.size() ? c.inPlace[r] : -1;
  };

  // CPU: 64-byte aligned copies (the kernels' contract).
  std::vector<HostTensor> cpu(c.operands);
  for (const HostTensor &t : c.results)
    cpu.push_back(t);
  std::vector<void *> cpuBufs(total);
  std::vector<void *> aligned(total);
  for (size_t i = 0; i < total; ++i) {
    size_t bytes = std::max<size_t>(cpu[i].bytes.size(), 1);
    aligned[i] = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    std::memcpy(aligned[i], cpu[i].bytes.data(), cpu[i].bytes.size());
  }
  for (size_t i = 0; i < total; ++i) {
    int alias = i >= numOperands ? aliasOf(i - numOperands) : -1;
    cpuBufs[i] = alias >= 0 ? aligned[alias] : aligned[i];
  }
  c.cpu(cpuBufs.data(), desc.data());

  // GPU.
  std::vector<void *> device(total, nullptr);
  std::vector<void *> gpuBufs(total);
  for (size_t i = 0; i < total; ++i)
    device[i] = uploadTensor(i < numOperands ? c.operands[i]
                                             : c.results[i - numOperands]);
  for (size_t i = 0; i < total; ++i) {
    int alias = i >= numOperands ? aliasOf(i - numOperands) : -1;
    gpuBufs[i] = alias >= 0 ? device[alias] : device[i];
  }
  c.gpu(gpuBufs.data(), desc.data());
  cuda::checkLaunch(c.name.c_str());
  cuda::synchronize();
  cuda::checkDeviceErrors();

  bool ok = true;
  double worst = 0;
  int64_t worstIndex = -1;
  size_t worstResult = 0;
  double worstCpu = 0, worstGpu = 0;
  for (size_t r = 0; r < c.results.size(); ++r) {
    size_t slot = numOperands + r;
    int alias = aliasOf(r);
    size_t buffer = alias >= 0 ? static_cast<size_t>(alias) : slot;
    HostTensor want = c.results[r];
    HostTensor got = c.results[r];
    std::memcpy(want.bytes.data(), aligned[buffer], want.bytes.size());
    cuda::check(cudaMemcpy(got.bytes.data(), device[buffer], got.bytes.size(),
                           cudaMemcpyDeviceToHost),
                "test download");
    for (int64_t i = 0, n = want.numel(); i < n; ++i) {
      double a = want.at(i), b = got.at(i);
      double tol = c.atol + c.rtol * std::fabs(a);
      double err = std::fabs(a - b);
      bool pass = a == b || (std::isnan(a) && std::isnan(b)) || err <= tol;
      double score = pass ? (a == b ? 0 : err / tol) : INFINITY;
      ok = ok && pass;
      if (worstIndex < 0 || score > worst) {
        worst = score;
        worstIndex = i;
        worstResult = r;
        worstCpu = a;
        worstGpu = b;
      }
    }
  }
  std::printf("%s %s", ok ? "PASS" : "FAIL", c.name.c_str());
  if (worstIndex >= 0)
    std::printf(" (worst: result %zu element %lld cpu %.9g gpu %.9g)",
                worstResult, static_cast<long long>(worstIndex), worstCpu,
                worstGpu);
  std::printf("\n");
  for (size_t i = 0; i < total; ++i) {
    std::free(aligned[i]);
    cuda::check(cudaFree(device[i]), "test free");
  }
  return ok;
}

double gpuMilliseconds(const std::function<void()> &fn, int iters) {
  fn();
  cudaEvent_t begin, end;
  cuda::check(cudaEventCreate(&begin), "creating a timing event");
  cuda::check(cudaEventCreate(&end), "creating a timing event");
  cuda::check(cudaEventRecord(begin, cuda::computeStream()), "timing");
  for (int i = 0; i < iters; ++i)
    fn();
  cuda::check(cudaEventRecord(end, cuda::computeStream()), "timing");
  cuda::check(cudaEventSynchronize(end), "timing");
  float ms = 0;
  cuda::check(cudaEventElapsedTime(&ms, begin, end), "timing");
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  return ms / iters;
}

} // namespace test
} // namespace weft
