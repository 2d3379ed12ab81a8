//===- AttentionKernelTest.cpp - GPU attention against its CPU twin -------===//
//
// Runs weft_cuda_k_attention / weft_cuda_k_attention_grad and the CPU's
// weft_k_attention / weft_k_attention_grad on the same inputs and compares:
// the SIMT fallback (f32, odd feature dims, Sq != Sk, causal with queries
// that see no key, empty sequences) and the tensor-core path (bf16 / f16,
// D and Dv multiples of 16 up to 128, tile tails). The backward's o and lse
// are the CPU forward's. Each GPU call runs twice, on result buffers filled
// with different garbage, and must give the same bits (no atomics, and
// every element written). Tolerances: |gpu - cpu| <= rtol |cpu| + atol *
// max|cpu| per result tensor. Ends with throughput lines for GPT-2-sized
// attention. Exits 77 without a GPU, 1 on any failure.
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace weft;
using namespace weft::test;

namespace {

int failures = 0;
uint32_t nextSeed = 1;

using Dims = std::vector<int64_t>;

Dims concat(Dims a, const Dims &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string dimsName(const Dims &d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "x" : "") + std::to_string(d[i]);
  return s + "]";
}

const char *dtypeName(int64_t dtype) {
  return dtype == WEFT_F32 ? "f32" : dtype == WEFT_BF16 ? "bf16" : "f16";
}

std::vector<int64_t> descOf(const std::vector<HostTensor> &tensors,
                            const std::vector<int64_t> &attrs) {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> t;
  for (const HostTensor &h : tensors)
    t.emplace_back(h.dtype, h.dims);
  return kernelDesc(t, attrs);
}

/// Runs the CPU kernel on 64-byte aligned copies of `tensors` (operands,
/// then results); returns the results.
std::vector<HostTensor> runCpu(KernelFn fn, const std::vector<HostTensor> &all,
                               size_t operands,
                               const std::vector<int64_t> &attrs) {
  const std::vector<int64_t> desc = descOf(all, attrs);
  std::vector<void *> bufs;
  for (const HostTensor &t : all) {
    const size_t bytes = std::max<size_t>(t.bytes.size(), 1);
    void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    std::memcpy(p, t.bytes.data(), t.bytes.size());
    bufs.push_back(p);
  }
  fn(bufs.data(), desc.data());
  std::vector<HostTensor> results;
  for (size_t i = operands; i < all.size(); ++i) {
    HostTensor r = all[i];
    std::memcpy(r.bytes.data(), bufs[i], r.bytes.size());
    results.push_back(std::move(r));
  }
  for (void *p : bufs)
    std::free(p);
  return results;
}

/// Runs the GPU kernel; result buffers start as `fill` bytes.
std::vector<HostTensor> runGpu(KernelFn fn, const std::vector<HostTensor> &all,
                               size_t operands,
                               const std::vector<int64_t> &attrs, int fill) {
  const std::vector<int64_t> desc = descOf(all, attrs);
  std::vector<void *> bufs;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < operands) {
      bufs.push_back(uploadTensor(all[i]));
    } else {
      void *p = nullptr;
      cuda::check(cudaMalloc(&p, std::max<size_t>(all[i].bytes.size(), 1)),
                  "test allocation");
      cuda::check(cudaMemset(p, fill, all[i].bytes.size()), "test fill");
      bufs.push_back(p);
    }
  }
  fn(bufs.data(), desc.data());
  cuda::checkLaunch("attention test");
  cuda::synchronize();
  cuda::checkDeviceErrors();
  std::vector<HostTensor> results;
  for (size_t i = operands; i < all.size(); ++i) {
    HostTensor r = all[i];
    cuda::check(cudaMemcpy(r.bytes.data(), bufs[i], r.bytes.size(),
                           cudaMemcpyDeviceToHost),
                "test download");
    results.push_back(std::move(r));
  }
  for (void *p : bufs)
    cuda::check(cudaFree(p), "test free");
  return results;
}

/// Compares one result tensor; prints a line, counts a failure.
void compare(const std::string &name, const char *what, const HostTensor &want,
             const HostTensor &got, double rtol, double atolFrac) {
  double maxAbs = 0;
  const int64_t n = want.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double a = want.at(i);
    if (std::isfinite(a))
      maxAbs = std::max(maxAbs, std::fabs(a));
  }
  const double atol = atolFrac * maxAbs + 1e-30;
  bool ok = true;
  double worst = -1, worstCpu = 0, worstGpu = 0;
  int64_t worstIndex = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double a = want.at(i), b = got.at(i);
    double score;
    if (a == b || (std::isnan(a) && std::isnan(b)))
      score = 0;
    else if (!std::isfinite(a) || !std::isfinite(b))
      score = INFINITY;
    else
      score = std::fabs(a - b) / (atol + rtol * std::fabs(a));
    if (!(score <= 1.0))
      ok = false;
    if (worstIndex < 0 || score > worst || std::isnan(score)) {
      worst = score;
      worstIndex = i;
      worstCpu = a;
      worstGpu = b;
    }
  }
  std::printf("%s %s %s", ok ? "PASS" : "FAIL", name.c_str(), what);
  if (worstIndex >= 0)
    std::printf(" (worst: element %lld cpu %.9g gpu %.9g, %.3g of the "
                "tolerance)",
                static_cast<long long>(worstIndex), worstCpu, worstGpu, worst);
  std::printf("\n");
  if (!ok)
    ++failures;
}

bool sameBits(const std::vector<HostTensor> &a,
              const std::vector<HostTensor> &b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes != b[i].bytes)
      return false;
  return true;
}

struct AttnCase {
  int64_t dtype;
  Dims lead;
  int64_t sq, sk, d, dv;
  bool causal;
  double rtol, atolFrac;
  /// > 0: seq-major, q [lead..., Sq, heads, D] (lse [lead..., heads, Sq]).
  int64_t heads = 0;
};

void runAttention(const AttnCase &c) {
  // Rows of `cols`: [lead..., rows, cols], or seq-major [lead..., rows,
  // heads, cols].
  auto shaped = [&](int64_t rows, int64_t cols) {
    return c.heads ? concat(c.lead, {rows, c.heads, cols})
                   : concat(c.lead, {rows, cols});
  };
  const Dims qd = shaped(c.sq, c.d), kd = shaped(c.sk, c.d);
  const Dims vd = shaped(c.sk, c.dv), od = shaped(c.sq, c.dv);
  const Dims ld =
      c.heads ? concat(c.lead, {c.heads, c.sq}) : concat(c.lead, {c.sq});
  const double scale = c.d > 0 ? 1.0 / std::sqrt(static_cast<double>(c.d)) : 1;
  std::vector<int64_t> attrs = {weftDoubleToAttr(scale), c.causal};
  if (c.heads)
    attrs.push_back(1);
  const std::string name = std::string("attention ") + dtypeName(c.dtype) +
                           (c.heads ? " seq-major" : "") + " q" + dimsName(qd) +
                           " k" + dimsName(kd) + " v" + dimsName(vd) +
                           (c.causal ? " causal" : "");

  const HostTensor q = randomTensor(c.dtype, qd, -2, 2, nextSeed++);
  const HostTensor k = randomTensor(c.dtype, kd, -2, 2, nextSeed++);
  const HostTensor v = randomTensor(c.dtype, vd, -1, 1, nextSeed++);
  const HostTensor dout = randomTensor(c.dtype, od, -1, 1, nextSeed++);

  // Forward.
  const std::vector<HostTensor> fwd = {q, k, v, zeroTensor(c.dtype, od),
                                       zeroTensor(WEFT_F32, ld)};
  const std::vector<HostTensor> want = runCpu(weft_k_attention, fwd, 3, attrs);
  const std::vector<HostTensor> got =
      runGpu(weft_cuda_k_attention, fwd, 3, attrs, 0x11);
  compare(name, "o", want[0], got[0], c.rtol, c.atolFrac);
  compare(name, "lse", want[1], got[1], c.rtol, c.atolFrac);
  const bool fwdRepeats =
      sameBits(got, runGpu(weft_cuda_k_attention, fwd, 3, attrs, 0x7f));
  std::printf("%s %s forward repeats bitwise\n", fwdRepeats ? "PASS" : "FAIL",
              name.c_str());
  failures += fwdRepeats ? 0 : 1;

  // Backward, from the CPU's o and lse.
  const std::vector<HostTensor> bwd = {q,
                                       k,
                                       v,
                                       want[0],
                                       want[1],
                                       dout,
                                       zeroTensor(c.dtype, qd),
                                       zeroTensor(c.dtype, kd),
                                       zeroTensor(c.dtype, vd)};
  const std::vector<HostTensor> gwant =
      runCpu(weft_k_attention_grad, bwd, 6, attrs);
  const std::vector<HostTensor> ggot =
      runGpu(weft_cuda_k_attention_grad, bwd, 6, attrs, 0x11);
  compare(name, "dq", gwant[0], ggot[0], c.rtol, c.atolFrac);
  compare(name, "dk", gwant[1], ggot[1], c.rtol, c.atolFrac);
  compare(name, "dv", gwant[2], ggot[2], c.rtol, c.atolFrac);
  const bool bwdRepeats =
      sameBits(ggot, runGpu(weft_cuda_k_attention_grad, bwd, 6, attrs, 0x7f));
  std::printf("%s %s backward repeats bitwise\n", bwdRepeats ? "PASS" : "FAIL",
              name.c_str());
  failures += bwdRepeats ? 0 : 1;
}

void comparisons() {
  const double f32r = 1e-5, f32a = 1e-5; // f32: rtol, atol (x max|cpu|)
  const double lowr = 2e-2, lowa = 1e-2; // bf16 / f16
  // SIMT fallback, f32.
  for (bool causal : {false, true})
    runAttention({WEFT_F32, {2, 3}, 37, 37, 24, 24, causal, f32r, f32a});
  runAttention({WEFT_F32, {2}, 5, 9, 16, 12, true, f32r, f32a});
  runAttention({WEFT_F32, {3}, 9, 5, 8, 6, true, f32r, f32a}); // no key seen
  runAttention({WEFT_F32, {2}, 20, 33, 200, 3, true, f32r, f32a});
  runAttention({WEFT_F32, {2, 2}, 11, 11, 1, 1, false, f32r, f32a});
  runAttention({WEFT_F32, {1, 2}, 256, 256, 64, 64, true, f32r, f32a});
  // SIMT fallback, 16-bit (D not a multiple of 16).
  runAttention({WEFT_BF16, {2, 2}, 70, 70, 40, 40, true, lowr, lowa});
  runAttention({WEFT_F16, {2}, 33, 17, 24, 8, false, lowr, lowa});
  // Tensor cores.
  for (bool causal : {false, true})
    runAttention({WEFT_BF16, {2, 4}, 256, 256, 64, 64, causal, lowr, lowa});
  runAttention({WEFT_BF16, {1, 2}, 200, 200, 128, 128, true, lowr, lowa});
  runAttention({WEFT_BF16, {2}, 130, 130, 128, 128, false, lowr, lowa});
  runAttention({WEFT_F16, {2, 3}, 100, 130, 64, 64, true, lowr, lowa});
  runAttention({WEFT_BF16, {2, 2}, 150, 90, 64, 64, true, lowr, lowa});
  runAttention({WEFT_BF16, {3}, 77, 77, 64, 32, false, lowr, lowa});
  runAttention({WEFT_BF16, {2}, 65, 129, 32, 128, true, lowr, lowa});
  runAttention({WEFT_F16, {2}, 1, 200, 16, 48, true, lowr, lowa});
  // Seq-major ([B, S, H, D], as a GPT's projections leave q, k and v): the
  // SIMT and tensor-core kernels, causal or not, Sq != Sk.
  runAttention({WEFT_F32, {2}, 37, 41, 24, 16, true, f32r, f32a, 3});
  for (bool causal : {false, true})
    runAttention({WEFT_BF16, {2}, 256, 256, 64, 64, causal, lowr, lowa, 4});
  runAttention({WEFT_F16, {2}, 100, 130, 64, 64, true, lowr, lowa, 3});
  runAttention({WEFT_BF16, {1}, 200, 200, 128, 128, true, lowr, lowa, 2});
  runAttention({WEFT_BF16, {2}, 70, 70, 40, 40, true, lowr, lowa, 2});
}

/// Empty sequences: no keys (o = 0, lse = -inf, dq = 0) and no queries
/// (dk = dv = 0). Run last: a crash of either kernel here leaves the lines
/// above intact.
void emptySequences() {
  runAttention({WEFT_F32, {3}, 7, 0, 8, 8, false, 1e-5, 1e-5});
  runAttention({WEFT_BF16, {2}, 5, 0, 16, 16, true, 2e-2, 1e-2});
  runAttention({WEFT_F32, {2}, 0, 6, 8, 8, true, 1e-5, 1e-5});
}

//===-- Throughput --------------------------------------------------------===//

/// A device copy of a random tensor.
void *randomDevice(int64_t dtype, const Dims &dims) {
  return uploadTensor(randomTensor(dtype, dims, -1, 1, nextSeed++));
}

void *zeroDevice(int64_t dtype, const Dims &dims) {
  return uploadTensor(zeroTensor(dtype, dims));
}

void throughput(int64_t dtype, bool causal, int iters) {
  const Dims lead = {8, 12};
  const int64_t s = 1024, d = 64, b = 96;
  const Dims qd = concat(lead, {s, d}), ld = concat(lead, {s});
  void *q = randomDevice(dtype, qd), *k = randomDevice(dtype, qd),
       *v = randomDevice(dtype, qd), *dout = randomDevice(dtype, qd);
  void *o = zeroDevice(dtype, qd), *lse = zeroDevice(WEFT_F32, ld);
  void *dq = zeroDevice(dtype, qd), *dk = zeroDevice(dtype, qd),
       *dv = zeroDevice(dtype, qd);
  const std::vector<int64_t> attrs = {weftDoubleToAttr(0.125), causal};
  std::vector<std::pair<int64_t, std::vector<int64_t>>> ft = {
      {dtype, qd}, {dtype, qd}, {dtype, qd}, {dtype, qd}, {WEFT_F32, ld}};
  const std::vector<int64_t> fdesc = kernelDesc(ft, attrs);
  std::vector<std::pair<int64_t, std::vector<int64_t>>> bt = {
      {dtype, qd}, {dtype, qd}, {dtype, qd}, {dtype, qd}, {WEFT_F32, ld},
      {dtype, qd}, {dtype, qd}, {dtype, qd}, {dtype, qd}};
  const std::vector<int64_t> bdesc = kernelDesc(bt, attrs);
  void *fbufs[] = {q, k, v, o, lse};
  void *bbufs[] = {q, k, v, o, lse, dout, dq, dk, dv};
  const double fwdMs = gpuMilliseconds(
      [&] { weft_cuda_k_attention(fbufs, fdesc.data()); }, iters);
  const double bwdMs = gpuMilliseconds(
      [&] { weft_cuda_k_attention_grad(bbufs, bdesc.data()); }, iters);
  double flops = 4.0 * b * s * s * d;
  if (causal)
    flops /= 2;
  std::printf("THROUGHPUT attention %s %s%s forward: %.1f TFLOP/s (%.3f ms)\n",
              dtypeName(dtype), dimsName(qd).c_str(), causal ? " causal" : "",
              flops / (fwdMs * 1e-3) / 1e12, fwdMs);
  std::printf("THROUGHPUT attention %s %s%s backward: %.1f TFLOP/s (%.3f "
              "ms)\n",
              dtypeName(dtype), dimsName(qd).c_str(), causal ? " causal" : "",
              2.5 * flops / (bwdMs * 1e-3) / 1e12, bwdMs);
  for (void *p : {q, k, v, dout, o, lse, dq, dk, dv})
    cuda::check(cudaFree(p), "test free");
}

} // namespace

int main() {
  skipWithoutGpu();
  comparisons();
  throughput(WEFT_BF16, true, 20);
  throughput(WEFT_BF16, false, 10);
  throughput(WEFT_F32, true, 3);
  emptySequences();
  if (failures) {
    std::printf("%d attention check(s) failed\n", failures);
    return 1;
  }
  std::printf("all attention checks passed\n");
  return 0;
}
