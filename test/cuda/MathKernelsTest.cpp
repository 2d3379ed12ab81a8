//===- MathKernelsTest.cpp - GPU math kernels against their CPU twins -----===//
//
// Runs every GEMM, normalization, softmax, loss, optimizer, convolution and
// pooling kernel of runtime/kernels/cuda on the CPU and the GPU with the
// same inputs and compares (KernelCheck.h): odd shapes, every transpose and
// broadcast form of matmul, f32 / bf16 / f16, in-place optimizer updates,
// grouped, strided, padded and dilated convs, ceil-mode pools.
// MathKernelsRepeatTest.cpp, in the same executable, checks that the
// reductions repeat bitwise, that a bad label reaches the device error word,
// and prints throughput lines. Exits 77 without a GPU, 1 on any failure.
//
//===----------------------------------------------------------------------===//

#include "KernelDesc.h"
#include "MathKernelsCommon.h"

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/Gemm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace weft;
using namespace weft::test;

namespace weft::test::math {

//===-- f16 reference -----------------------------------------------------===//

/// The CPU matmul has no f16: this reference widens f16 tensors to f32,
/// runs weft_k_matmul and rounds the f16 result once.
void cpuMatmulViaF32(void *const *bufs, const int64_t *desc) {
  const int64_t count = desc[0];
  std::vector<int64_t> wide(desc, desc + 1);
  std::vector<std::vector<float>> copies(count);
  std::vector<void *> ptrs(bufs, bufs + count);
  std::vector<int64_t> numel(count), dtype(count);
  const int64_t *p = desc + 1;
  for (int64_t t = 0; t < count; ++t) {
    dtype[t] = p[0];
    const int64_t rank = p[1];
    numel[t] = 1;
    for (int64_t d = 0; d < rank; ++d)
      numel[t] *= p[2 + d];
    wide.push_back(dtype[t] == WEFT_F16 ? int64_t{WEFT_F32} : dtype[t]);
    wide.insert(wide.end(), p + 1, p + 2 + rank);
    p += 2 + rank;
  }
  wide.insert(wide.end(), p, p + 1 + p[0]);
  for (int64_t t = 0; t < count; ++t) {
    if (dtype[t] != WEFT_F16)
      continue;
    copies[t].resize(numel[t]);
    const uint16_t *src = static_cast<const uint16_t *>(bufs[t]);
    for (int64_t i = 0; i < numel[t]; ++i)
      copies[t][i] = halfToFloat(src[i]);
    ptrs[t] = copies[t].data();
  }
  weft_k_matmul(ptrs.data(), wide.data());
  if (dtype[count - 1] == WEFT_F16) {
    uint16_t *dst = static_cast<uint16_t *>(bufs[count - 1]);
    for (int64_t i = 0; i < numel[count - 1]; ++i)
      dst[i] = floatToHalf(copies[count - 1][i]);
  }
}

//===-- matmul ------------------------------------------------------------===//

struct MatmulSpec {
  Dims batchA, batchB, batchC;
  int64_t m, k, n;
  bool transA = false, transB = false;
  int64_t ta = WEFT_F32, tb = WEFT_F32, tc = WEFT_F32;
};

void matmulCase(const MatmulSpec &s, double rtol, double atol,
                const char *tag = "") {
  Dims a = concat(s.batchA, s.transA ? Dims{s.k, s.m} : Dims{s.m, s.k});
  Dims b = concat(s.batchB, s.transB ? Dims{s.n, s.k} : Dims{s.k, s.n});
  Dims c = concat(s.batchC, Dims{s.m, s.n});
  const bool half = s.ta == WEFT_F16;
  std::string name =
      std::string("matmul") + tag + " " + weftDTypeName(s.ta) + dimsName(a) +
      " x " + weftDTypeName(s.tb) + dimsName(b) + " -> " + weftDTypeName(s.tc) +
      " tA=" + std::to_string(s.transA) + " tB=" + std::to_string(s.transB);
  check(name, half ? cpuMatmulViaF32 : weft_k_matmul, weft_cuda_k_matmul,
        {rnd(s.ta, a), rnd(s.tb, b)}, {zeroTensor(s.tc, c)},
        {s.transA, s.transB}, rtol, atol);
}

void matmulTests() {
  // Every transpose pair on odd and small shapes.
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      for (auto mkn : {Dims{17, 65, 33}, Dims{1, 1, 1}, Dims{64, 128, 32},
                       Dims{3, 300, 5}}) {
        MatmulSpec s;
        s.m = mkn[0];
        s.k = mkn[1];
        s.n = mkn[2];
        s.transA = ta;
        s.transB = tb;
        matmulCase(s, 1e-5, 1e-5);
      }
      // bf16 operands and result; mixed dtypes.
      MatmulSpec s;
      s.m = 17;
      s.k = 65;
      s.n = 33;
      s.transA = ta;
      s.transB = tb;
      s.ta = s.tb = s.tc = WEFT_BF16;
      matmulCase(s, 1e-2, 1e-2);
      s.tc = WEFT_F32;
      matmulCase(s, 1e-4, 1e-4);
      s.ta = WEFT_F32;
      matmulCase(s, 1e-4, 1e-4);
      s.tb = WEFT_F32;
      s.tc = WEFT_BF16;
      matmulCase(s, 1e-2, 1e-2);
      // f16 (no CPU kernel: compared with f32 on widened values).
      s.ta = s.tb = s.tc = WEFT_F16;
      matmulCase(s, 2e-3, 2e-3);
      s.tc = WEFT_F32;
      matmulCase(s, 1e-4, 1e-4);
    }
  // Batches: folded into M, strided, broadcast whole, partly broadcast.
  struct B {
    Dims a, b, c;
  };
  for (const B &bt : {B{{2, 3}, {}, {2, 3}}, B{{4}, {4}, {4}}, B{{}, {5}, {5}},
                      B{{2, 1}, {1, 3}, {2, 3}}, B{{3, 1}, {4}, {3, 4}},
                      B{{2, 3, 4}, {3, 1}, {2, 3, 4}}, B{{1, 1}, {1}, {1, 1}},
                      B{{6}, {1}, {6}}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        MatmulSpec s;
        s.batchA = bt.a;
        s.batchB = bt.b;
        s.batchC = bt.c;
        s.m = 7;
        s.k = 19;
        s.n = 11;
        s.transA = ta;
        s.transB = tb;
        matmulCase(s, 1e-5, 1e-5);
        s.ta = s.tb = s.tc = WEFT_BF16;
        matmulCase(s, 1e-2, 1e-2);
      }
  // Empty inner dim: c = 0.
  MatmulSpec empty;
  empty.m = 3;
  empty.k = 0;
  empty.n = 4;
  matmulCase(empty, 0, 0);
  // The fallback kernel that serves layouts cuBLASLt declines.
  cuda::math::gemmForceFallbackForTesting(true);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      MatmulSpec s;
      s.batchA = {2, 1};
      s.batchB = {3};
      s.batchC = {2, 3};
      s.m = 17;
      s.k = 65;
      s.n = 33;
      s.transA = ta;
      s.transB = tb;
      matmulCase(s, 1e-5, 1e-5, " (fallback)");
      s.ta = s.tb = s.tc = WEFT_BF16;
      matmulCase(s, 1e-2, 1e-2, " (fallback)");
      s.ta = s.tb = s.tc = WEFT_F16;
      matmulCase(s, 2e-3, 2e-3, " (fallback)");
    }
  cuda::math::gemmForceFallbackForTesting(false);
}

//===-- softmax, layer_norm, batch_norm -----------------------------------===//

void softmaxTests() {
  struct S {
    Dims dims;
    int64_t axis;
  };
  for (const S &s :
       {S{{5, 1}, 1}, S{{4, 7}, 1}, S{{6, 1024}, 1}, S{{3, 1000}, 1},
        S{{2, 50257}, 1}, S{{3, 4096}, 1}, S{{2, 2051}, 1}, S{{33, 128}, 1},
        S{{2, 5, 7}, 1}, S{{6, 3, 4}, 0}, S{{2, 3, 600}, 1}, S{{}, 0}})
    for (int log = 0; log < 2; ++log) {
      std::string tag = std::string(log ? "log_softmax " : "softmax ") +
                        dimsName(s.dims) + " axis " + std::to_string(s.axis);
      check(tag, weft_k_softmax, weft_cuda_k_softmax,
            {rnd(WEFT_F32, s.dims, -4, 4)}, {zeroTensor(WEFT_F32, s.dims)},
            {s.axis, log}, 2e-5, 1e-6);
      // y like a softmax output: each row sums to about 1 (else sum(dy * y)
      // grows with the row and cancellation swamps the comparison).
      const double n =
          s.dims.empty() ? 1.0 : static_cast<double>(s.dims[s.axis]);
      HostTensor y = log ? rnd(WEFT_F32, s.dims, -6, 0)
                         : rnd(WEFT_F32, s.dims, 0, 2.0 / n);
      check(tag + " grad", weft_k_softmax_grad, weft_cuda_k_softmax_grad,
            {y, rnd(WEFT_F32, s.dims)}, {zeroTensor(WEFT_F32, s.dims)},
            {s.axis, log}, 2e-5, 2e-5);
    }
}

/// The GPU layer norm with a bf16 / f16 result (`out`) against its own f32
/// result rounded on the host as the cast kernel rounds: bitwise.
bool layerNormRoundsOnce(const std::vector<HostTensor> &ops, int64_t axis,
                         int64_t out) {
  const Dims &dims = ops[0].dims;
  HostTensor wide = zeroTensor(WEFT_F32, dims);
  HostTensor narrow = zeroTensor(out, dims);
  std::vector<void *> dev;
  for (const HostTensor &t : ops)
    dev.push_back(uploadTensor(t));
  dev.push_back(uploadTensor(wide));
  dev.push_back(uploadTensor(narrow));
  for (int64_t dtype : {int64_t{WEFT_F32}, out}) {
    std::vector<std::pair<int64_t, Dims>> tensors;
    for (const HostTensor &t : ops)
      tensors.push_back({t.dtype, t.dims});
    tensors.push_back({dtype, dims});
    std::vector<int64_t> desc = kernelDesc(tensors, {axis, bits(1e-5), 1});
    void *bufs[4] = {dev[0], dev[1], dev[2], dev[dtype == out ? 4 : 3]};
    weft_cuda_k_layer_norm(bufs, desc.data());
  }
  cuda::synchronize();
  cuda::checkDeviceErrors();
  for (auto [t, d] : {std::pair{&wide, dev[3]}, std::pair{&narrow, dev[4]}})
    cuda::check(
        cudaMemcpy(t->bytes.data(), d, t->bytes.size(), cudaMemcpyDeviceToHost),
        "test download");
  for (void *d : dev)
    cudaFree(d);
  std::vector<float> f(wide.numel());
  std::memcpy(f.data(), wide.bytes.data(), wide.bytes.size());
  std::vector<uint16_t> h(narrow.numel());
  std::memcpy(h.data(), narrow.bytes.data(), narrow.bytes.size());
  int64_t mismatches = 0;
  for (size_t i = 0; i < f.size(); ++i)
    mismatches +=
        h[i] != (out == WEFT_BF16 ? floatToBFloat16(f[i]) : floatToHalf(f[i]));
  std::printf("%s layer_norm %s -> %s: the f32 result rounded once, %lld of "
              "%zu values differ\n",
              mismatches ? "FAIL" : "PASS", dimsName(dims).c_str(),
              weftDTypeName(out), static_cast<long long>(mismatches), f.size());
  return mismatches == 0;
}

void layerNormTests() {
  struct S {
    Dims dims;
    int64_t axis;
  };
  for (const S &s :
       {S{{4, 6, 8}, 2}, S{{4, 6, 8}, 1}, S{{4, 6, 8}, 0}, S{{4, 6, 8}, 3},
        S{{5, 1024}, 1}, S{{3, 1000}, 1}, S{{3, 4096}, 1}, S{{2, 1027}, 1},
        S{{300, 64}, 1}, S{{2, 3, 5, 7}, 2}})
    for (int bias = 0; bias < 2; ++bias) {
      Dims inner(s.dims.begin() + s.axis, s.dims.end());
      std::string tag = "layer_norm " + dimsName(s.dims) + " axis " +
                        std::to_string(s.axis) + (bias ? " bias" : "");
      std::vector<HostTensor> ops = {rnd(WEFT_F32, s.dims, -3, 3),
                                     rnd(WEFT_F32, inner, 0.5, 1.5)};
      if (bias)
        ops.push_back(rnd(WEFT_F32, inner));
      check(tag, weft_k_layer_norm, weft_cuda_k_layer_norm, ops,
            {zeroTensor(WEFT_F32, s.dims)}, {s.axis, bits(1e-5), bias}, 1e-5,
            1e-5);
    }
  // A folded cast (weft-fuse-elementwise): bf16 / f16 results, against the
  // CPU (one rounding apart at most: the f32 values may differ in the last
  // bit) and bitwise against the GPU's own f32 result rounded on the host.
  for (const S &s : {S{{300, 64}, 1}, S{{4, 6, 8}, 1}, S{{5, 1024}, 1},
                     S{{3, 4096}, 1}, S{{2, 1027}, 1}, S{{2, 3, 5, 7}, 2}})
    for (int64_t out : {int64_t{WEFT_BF16}, int64_t{WEFT_F16}}) {
      Dims inner(s.dims.begin() + s.axis, s.dims.end());
      std::string tag = "layer_norm " + dimsName(s.dims) + " axis " +
                        std::to_string(s.axis) + " -> " + weftDTypeName(out);
      std::vector<HostTensor> ops = {rnd(WEFT_F32, s.dims, -3, 3),
                                     rnd(WEFT_F32, inner, 0.5, 1.5),
                                     rnd(WEFT_F32, inner)};
      check(tag, weft_k_layer_norm, weft_cuda_k_layer_norm, ops,
            {zeroTensor(out, s.dims)}, {s.axis, bits(1e-5), 1},
            out == WEFT_BF16 ? 1.0 / 128 : 1.0 / 1024, 1e-6);
      expect(layerNormRoundsOnce(ops, s.axis, out),
             tag + ": not the f32 result rounded once");
    }
  for (const S &s :
       {S{{4, 6, 8}, 2}, S{{4, 6, 8}, 1}, S{{4, 6, 8}, 0}, S{{5, 1024}, 1},
        S{{3, 1000}, 1}, S{{3, 4096}, 1}, S{{2, 1027}, 1}, S{{2000, 64}, 1},
        S{{700, 3, 5}, 1}, S{{4, 6, 8}, 3}}) {
    Dims inner(s.dims.begin() + s.axis, s.dims.end());
    check("layer_norm_grad " + dimsName(s.dims) + " axis " +
              std::to_string(s.axis),
          weft_k_layer_norm_grad, weft_cuda_k_layer_norm_grad,
          {rnd(WEFT_F32, s.dims, -3, 3), rnd(WEFT_F32, inner, 0.5, 1.5),
           rnd(WEFT_F32, s.dims)},
          {zeroTensor(WEFT_F32, s.dims), zeroTensor(WEFT_F32, inner),
           zeroTensor(WEFT_F32, inner)},
          {s.axis, bits(1e-5)}, 1e-4, 1e-4);
  }
}

void batchNormTests() {
  for (const Dims &dims : {Dims{2, 3, 4, 5}, Dims{4, 7}, Dims{2, 5, 3, 2, 2}}) {
    Dims c = {dims[1]};
    check("batch_norm " + dimsName(dims), weft_k_batch_norm,
          weft_cuda_k_batch_norm,
          {rnd(WEFT_F32, dims, -3, 3), rnd(WEFT_F32, c, 0.5, 1.5),
           rnd(WEFT_F32, c), rnd(WEFT_F32, c), rnd(WEFT_F32, c, 0.1, 2)},
          {zeroTensor(WEFT_F32, dims)}, {bits(1e-5)}, 1e-6, 1e-6);
  }
}

//===-- softmax_xent ------------------------------------------------------===//

void xentTests() {
  for (const Dims &scores : {Dims{6, 10}, Dims{9, 1000}, Dims{4, 50257},
                             Dims{33, 128}, Dims{2, 5, 3, 4}, Dims{3, 7, 9}})
    for (int64_t labelType : {WEFT_I64, WEFT_I32})
      for (int64_t reduction : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN, WEFT_LOSS_SUM})
        for (int weights = 0; weights < 2; ++weights)
          for (int ignore = 0; ignore < 2; ++ignore) {
            if (labelType == WEFT_I32 && (weights || ignore))
              continue; // i32 labels: one pass over the reductions suffices
            const int64_t c = scores[1];
            Dims labels = scores;
            labels.erase(labels.begin() + 1);
            const int64_t ignoreIndex = ignore ? -100 : 0;
            HostTensor lab =
                labelsOf(labelType, labels, c, ignoreIndex, ignore ? 3 : 0);
            std::vector<HostTensor> ops = {rnd(WEFT_F32, scores, -5, 5), lab};
            if (weights)
              ops.push_back(rnd(WEFT_F32, {c}, 0.2, 2));
            const Dims lossDims = reduction == WEFT_LOSS_NONE ? labels : Dims{};
            std::string tag = "softmax_xent " + dimsName(scores) + " " +
                              weftDTypeName(labelType) + " reduction " +
                              std::to_string(reduction) +
                              (weights ? " weights" : "") +
                              (ignore ? " ignore" : "");
            for (int logProb = 0; logProb < 2; ++logProb) {
              std::vector<HostTensor> res = {zeroTensor(WEFT_F32, lossDims)};
              if (logProb)
                res.push_back(zeroTensor(WEFT_F32, scores));
              check(tag + (logProb ? " log_prob" : ""), weft_k_softmax_xent,
                    weft_cuda_k_softmax_xent, ops, res,
                    {reduction, ignore, ignoreIndex, weights, logProb}, 2e-5,
                    1e-5);
            }
            std::vector<HostTensor> gops = ops;
            gops.push_back(rnd(WEFT_F32, lossDims, 0.5, 2));
            check(tag + " grad", weft_k_softmax_xent_grad,
                  weft_cuda_k_softmax_xent_grad, gops,
                  {zeroTensor(WEFT_F32, scores)},
                  {reduction, ignore, ignoreIndex, weights}, 2e-5, 1e-7);
          }
  // Every position ignored: the mean is NaN, the gradient 0.
  Dims scores = {4, 6};
  HostTensor lab = tensorOf(WEFT_I64, {4}, {-1, -1, -1, -1});
  check("softmax_xent all ignored mean", weft_k_softmax_xent,
        weft_cuda_k_softmax_xent, {rnd(WEFT_F32, scores), lab},
        {zeroTensor(WEFT_F32, {})}, {WEFT_LOSS_MEAN, 1, -1, 0, 0}, 0, 0);
  check("softmax_xent_grad all ignored mean", weft_k_softmax_xent_grad,
        weft_cuda_k_softmax_xent_grad,
        {rnd(WEFT_F32, scores), lab, tensorOf(WEFT_F32, {}, {1.0})},
        {zeroTensor(WEFT_F32, scores)}, {WEFT_LOSS_MEAN, 1, -1, 0}, 0, 0);
}

//===-- softmax_xent on bf16 / f16 scores and padded classes --------------===//

/// Runs `gpu` on `operands` with its `results` (their dims and dtypes)
/// prefilled with garbage, and returns the results it wrote.
std::vector<HostTensor> gpuResults(KernelFn gpu,
                                   const std::vector<HostTensor> &operands,
                                   std::vector<HostTensor> results,
                                   const std::vector<int64_t> &attrs) {
  KernelCase c;
  c.operands = operands;
  c.results = results;
  c.attrs = attrs;
  const std::vector<int64_t> desc = kernelDesc(c);
  std::vector<void *> bufs;
  for (const HostTensor &t : operands)
    bufs.push_back(uploadTensor(t));
  for (const HostTensor &t : results) {
    void *p = uploadTensor(t);
    // 0x5a bytes: 1.5e16 in f32 and bf16, 203 in f16.
    cuda::check(cudaMemset(p, 0x5a, t.bytes.size()), "test fill");
    bufs.push_back(p);
  }
  gpu(bufs.data(), desc.data());
  cuda::checkLaunch("gpuResults");
  cuda::synchronize();
  cuda::checkDeviceErrors();
  for (size_t r = 0; r < results.size(); ++r)
    cuda::check(cudaMemcpy(results[r].bytes.data(), bufs[operands.size() + r],
                           results[r].bytes.size(), cudaMemcpyDeviceToHost),
                "test download");
  for (void *p : bufs)
    cuda::check(cudaFree(p), "test free");
  return results;
}

/// Labels [N, d...] of scores [N, C, d...]: in [0, classes), every 5th
/// one ignore_index (-100) when `ignore`.
HostTensor xentLabels(const Dims &scores, int64_t classes, bool ignore) {
  Dims labels = scores;
  labels.erase(labels.begin() + 1);
  return labelsOf(WEFT_I64, labels, classes, -100, ignore ? 5 : 0);
}

/// softmax_xent and softmax_xent_grad on `dtype` scores whose first
/// `classes` entries of dim 1 are classes (the rest padding), against the
/// CPU: the loss alone (f32 from the same widened scores: tight), the loss
/// with log_prob and the gradient (the scores' dtype: one rounding apart),
/// then that the GPU writes -inf (log_prob) and +0 (dscores) into every
/// padding entry, ignored positions included.
void paddedXentCase(int64_t dtype, const Dims &scores, int64_t classes,
                    int64_t reduction, bool weights, bool ignore) {
  const int64_t c = scores[1];
  HostTensor lab = xentLabels(scores, classes, ignore);
  std::vector<HostTensor> ops = {rnd(dtype, scores, -5, 5), lab};
  if (weights)
    ops.push_back(rnd(WEFT_F32, {classes}, 0.2, 2));
  const Dims lossDims = reduction == WEFT_LOSS_NONE ? lab.dims : Dims{};
  const bool f32 = dtype == WEFT_F32;
  // One rounding of the result dtype; f16 results below 6e-5 are
  // subnormal, whose steps are 6e-8 apart.
  const double rtol = f32 ? 2e-5 : 1e-2;
  const double gradAtol = f32 ? 1e-7 : (dtype == WEFT_F16 ? 1e-7 : 1e-9);
  const std::vector<int64_t> attrs = {reduction, ignore, -100,
                                      weights,   0,      classes};
  std::vector<int64_t> lpAttrs = attrs;
  lpAttrs[4] = 1;
  const std::vector<int64_t> gradAttrs = {reduction, ignore, -100, weights,
                                          classes};
  const std::string tag =
      "softmax_xent " + std::string(weftDTypeName(dtype)) + dimsName(scores) +
      " classes " + std::to_string(classes) + " reduction " +
      std::to_string(reduction) + (weights ? " weights" : "") +
      (ignore ? " ignore" : "");
  check(tag, weft_k_softmax_xent, weft_cuda_k_softmax_xent, ops,
        {zeroTensor(WEFT_F32, lossDims)}, attrs, f32 ? 2e-5 : 1e-5, 1e-5);
  check(tag + " log_prob", weft_k_softmax_xent, weft_cuda_k_softmax_xent, ops,
        {zeroTensor(WEFT_F32, lossDims), zeroTensor(dtype, scores)}, lpAttrs,
        rtol, 1e-5);
  std::vector<HostTensor> gops = ops;
  gops.push_back(rnd(WEFT_F32, lossDims, 0.5, 2));
  check(tag + " grad", weft_k_softmax_xent_grad, weft_cuda_k_softmax_xent_grad,
        gops, {zeroTensor(dtype, scores)}, gradAttrs, rtol, gradAtol);

  // The padding, on the GPU alone.
  const int64_t n = scores[0], d = lab.numel() / n;
  const HostTensor logProb = gpuResults(
      weft_cuda_k_softmax_xent, ops,
      {zeroTensor(WEFT_F32, lossDims), zeroTensor(dtype, scores)}, lpAttrs)[1];
  const HostTensor dscores =
      gpuResults(weft_cuda_k_softmax_xent_grad, gops,
                 {zeroTensor(dtype, scores)}, gradAttrs)[0];
  int64_t bad = 0;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t k = classes; k < c; ++k)
      for (int64_t j = 0; j < d; ++j) {
        const int64_t i = (s * c + k) * d + j;
        const double lp = logProb.at(i), g = dscores.at(i);
        bad += !(std::isinf(lp) && lp < 0) + !(g == 0 && !std::signbit(g));
      }
  expect(bad == 0, tag + ": " + std::to_string(bad) +
                       " padding entries are not -inf (log_prob) or +0 "
                       "(dscores)");
  if (bad == 0)
    std::printf("PASS %s padding\n", tag.c_str());
}

void paddedXentTests() {
  // Rows per warp (C <= 1024; 4 bf16 per access where C % 4 == 0).
  for (int64_t reduction : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN, WEFT_LOSS_SUM})
    paddedXentCase(WEFT_BF16, {37, 1000}, 993, reduction, false, true);
  paddedXentCase(WEFT_BF16, {37, 1000}, 993, WEFT_LOSS_MEAN, true, true);
  paddedXentCase(WEFT_F16, {9, 203}, 200, WEFT_LOSS_SUM, false, true);
  paddedXentCase(WEFT_BF16, {6, 10}, 10, WEFT_LOSS_MEAN, false, false);
  // Trailing dims: one thread per position.
  for (int64_t reduction : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN})
    paddedXentCase(WEFT_F16, {4, 9, 3}, 7, reduction, false, true);
  paddedXentCase(WEFT_BF16, {3, 12, 5}, 12, WEFT_LOSS_SUM, true, false);
  // Rows per block in registers: entry by entry (f32; bf16 with C % 8 !=
  // 0) and 16-byte chunks of bf16/f16.
  for (int64_t reduction : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN, WEFT_LOSS_SUM})
    paddedXentCase(WEFT_F32, {64, 1031}, 1024, reduction, true, true);
  paddedXentCase(WEFT_F32, {5, 9000}, 8999, WEFT_LOSS_MEAN, false, true);
  paddedXentCase(WEFT_BF16, {7, 2051}, 2050, WEFT_LOSS_MEAN, false, true);
  paddedXentCase(WEFT_BF16, {11, 4104}, 4097, WEFT_LOSS_NONE, true, true);
  paddedXentCase(WEFT_F16, {5, 20480}, 20475, WEFT_LOSS_MEAN, false, true);
  paddedXentCase(WEFT_BF16, {6, 50264}, 50257, WEFT_LOSS_SUM, false, true);
  paddedXentCase(WEFT_BF16, {3, 57344}, 57340, WEFT_LOSS_NONE, true, true);
  // Rows too long for registers: read again from memory.
  paddedXentCase(WEFT_F16, {3, 57352}, 57352, WEFT_LOSS_SUM, false, true);
  paddedXentCase(WEFT_BF16, {3, 70008}, 70001, WEFT_LOSS_MEAN, false, true);
  paddedXentCase(WEFT_F32, {3, 20000}, 19990, WEFT_LOSS_NONE, true, true);

  // GPT-2's LM head: bf16 logits [8192, 50264], 50257 classes, mean.
  const Dims scores = {8192, 50264};
  const int64_t classes = 50257;
  std::vector<HostTensor> ops = {rnd(WEFT_BF16, scores, -5, 5),
                                 xentLabels(scores, classes, true)};
  const std::string tag =
      "softmax_xent bf16" + dimsName(scores) + " classes 50257 mean ignore";
  check(tag, weft_k_softmax_xent, weft_cuda_k_softmax_xent, ops,
        {zeroTensor(WEFT_F32, {})}, {WEFT_LOSS_MEAN, 1, -100, 0, 0, classes},
        1e-5, 1e-5);
  ops.push_back(tensorOf(WEFT_F32, {}, {1.0}));
  check(tag + " grad", weft_k_softmax_xent_grad, weft_cuda_k_softmax_xent_grad,
        ops, {zeroTensor(WEFT_BF16, scores)},
        {WEFT_LOSS_MEAN, 1, -100, 0, classes}, 1e-2, 1e-12);
}

//===-- Optimizers --------------------------------------------------------===//

void optimizerTests() {
  for (int64_t step : {1, 3, 1000})
    for (double wd : {0.0, 1e-2}) {
      Dims d = {1037};
      check("adamw step " + std::to_string(step) + " wd " + std::to_string(wd),
            weft_k_adamw, weft_cuda_k_adamw,
            {rnd(WEFT_F32, d), rnd(WEFT_F32, d), rnd(WEFT_F32, d, -0.1, 0.1),
             rnd(WEFT_F32, d, 0, 0.01),
             tensorOf(WEFT_I64, {}, {static_cast<double>(step)})},
            {zeroTensor(WEFT_F32, d), zeroTensor(WEFT_F32, d),
             zeroTensor(WEFT_F32, d)},
            {bits(1e-3), bits(0.9), bits(0.999), bits(1e-8), bits(wd)}, 1e-6,
            1e-7, {0, 2, 3});
    }
  for (int64_t step : {1, 5})
    for (int nesterov = 0; nesterov < 2; ++nesterov)
      for (double wd : {0.0, 1e-2}) {
        Dims d = {777};
        std::string tag = "sgd momentum step " + std::to_string(step) +
                          (nesterov ? " nesterov" : "") + " wd " +
                          std::to_string(wd);
        check(tag, weft_k_sgd, weft_cuda_k_sgd,
              {rnd(WEFT_F32, d), rnd(WEFT_F32, d), rnd(WEFT_F32, d),
               tensorOf(WEFT_I64, {}, {static_cast<double>(step)})},
              {zeroTensor(WEFT_F32, d), zeroTensor(WEFT_F32, d)},
              {bits(0.01), bits(0.9), bits(nesterov ? 0.0 : 0.1), bits(wd),
               nesterov, 1},
              1e-6, 1e-7, {0, 2});
      }
  Dims d = {500};
  check("sgd plain", weft_k_sgd, weft_cuda_k_sgd,
        {rnd(WEFT_F32, d), rnd(WEFT_F32, d), tensorOf(WEFT_I64, {}, {2})},
        {zeroTensor(WEFT_F32, d)},
        {bits(0.1), bits(0.0), bits(0.0), bits(1e-4), 0, 0}, 1e-6, 1e-7, {0});
  // Learning-rate schedules (LrSchedule.h; kind, warmup, decay, minimum
  // ratio after the kernels' own attributes): in the warmup, within the
  // cosine and linear decays, and past their end.
  for (int64_t step : {1, 3, 7, 40})
    for (int64_t kind : {1, 2}) {
      std::string tag = std::string(kind == 2 ? "cosine" : "linear") +
                        " schedule step " + std::to_string(step);
      check("adamw " + tag, weft_k_adamw, weft_cuda_k_adamw,
            {rnd(WEFT_F32, d), rnd(WEFT_F32, d), rnd(WEFT_F32, d, -0.1, 0.1),
             rnd(WEFT_F32, d, 0, 0.01),
             tensorOf(WEFT_I64, {}, {static_cast<double>(step)})},
            {zeroTensor(WEFT_F32, d), zeroTensor(WEFT_F32, d),
             zeroTensor(WEFT_F32, d)},
            {bits(1e-3), bits(0.9), bits(0.999), bits(1e-8), bits(1e-2), kind,
             4, 30, bits(0.1)},
            1e-6, 1e-7, {0, 2, 3});
      check("sgd " + tag, weft_k_sgd, weft_cuda_k_sgd,
            {rnd(WEFT_F32, d), rnd(WEFT_F32, d), rnd(WEFT_F32, d),
             tensorOf(WEFT_I64, {}, {static_cast<double>(step)})},
            {zeroTensor(WEFT_F32, d), zeroTensor(WEFT_F32, d)},
            {bits(0.01), bits(0.9), bits(0.1), bits(1e-2), 0, 1, kind, 4, 30,
             bits(0.1)},
            1e-6, 1e-7, {0, 2});
    }
}

//===-- conv --------------------------------------------------------------===//

int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe,
                  int64_t dil, bool ceilMode) {
  const int64_t span = in + pb + pe - dil * (k - 1) - 1;
  int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
  // PyTorch: the last window must start inside the input or left padding.
  if (ceilMode && (out - 1) * s >= in + pb)
    --out;
  return out;
}

struct ConvSpec {
  Dims x;
  int64_t outChannels, groups;
  Dims kernel, strides, pads, dilations;
  bool bias;
  int64_t dtype = WEFT_F32;
};

void convCase(const ConvSpec &c) {
  const size_t s = c.kernel.size();
  Dims y = {c.x[0], c.outChannels};
  Dims w = {c.outChannels, c.x[1] / c.groups};
  for (size_t i = 0; i < s; ++i) {
    y.push_back(windowOut(c.x[2 + i], c.kernel[i], c.strides[i], c.pads[i],
                          c.pads[s + i], c.dilations[i], false));
    w.push_back(c.kernel[i]);
  }
  std::vector<int64_t> geometry =
      concat(concat(c.strides, c.pads), c.dilations);
  std::vector<int64_t> attrs = concat({c.bias, c.groups}, geometry);
  std::vector<int64_t> gradAttrs = concat({c.groups}, geometry);
  const bool bf16 = c.dtype == WEFT_BF16;
  const double rtol = bf16 ? 1e-2 : 1e-4, atol = bf16 ? 1e-2 : 1e-4;
  std::string tag = std::string(weftDTypeName(c.dtype)) + " x" + dimsName(c.x) +
                    " w" + dimsName(w) + " g" + std::to_string(c.groups) +
                    " s" + dimsName(c.strides) + " p" + dimsName(c.pads) +
                    " d" + dimsName(c.dilations) + (c.bias ? " bias" : "");
  std::vector<HostTensor> ops = {rnd(c.dtype, c.x), rnd(c.dtype, w)};
  if (c.bias)
    ops.push_back(rnd(c.dtype, {c.outChannels}));
  check("conv " + tag, weft_k_conv, weft_cuda_k_conv, ops,
        {zeroTensor(c.dtype, y)}, attrs, rtol, atol);
  check("conv_grad_input " + tag, weft_k_conv_grad_input,
        weft_cuda_k_conv_grad_input, {rnd(c.dtype, y), rnd(c.dtype, w)},
        {zeroTensor(c.dtype, c.x)}, gradAttrs, rtol, atol);
  check("conv_grad_weight " + tag, weft_k_conv_grad_weight,
        weft_cuda_k_conv_grad_weight, {rnd(c.dtype, c.x), rnd(c.dtype, y)},
        {zeroTensor(c.dtype, w)}, gradAttrs, rtol, atol);
}

void convTests() {
  // 1-D: groups, stride, asymmetric pads, dilation.
  convCase({{2, 4, 11}, 6, 2, {3}, {2}, {1, 2}, {2}, true});
  convCase({{3, 5, 16}, 4, 1, {5}, {1}, {2, 2}, {1}, false});
  // 2-D.
  convCase({{2, 6, 9, 8}, 4, 2, {3, 3}, {1, 2}, {1, 0, 1, 2}, {1, 2}, true});
  convCase({{2, 6, 9, 8}, 4, 2, {3, 3}, {1, 2}, {1, 0, 1, 2}, {1, 2}, false});
  convCase({{2, 8, 14, 14}, 16, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
  convCase({{2, 3, 32, 32}, 8, 1, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, true});
  convCase({{2, 16, 7, 7}, 32, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false});
  convCase({{2, 16, 8, 8}, 8, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true});
  // Depthwise (one input channel per group), with 2 outputs per group.
  convCase({{2, 4, 7, 7}, 8, 4, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
  convCase({{2, 4, 9, 9}, 4, 4, {3, 3}, {2, 2}, {1, 1, 1, 1}, {2, 1}, false});
  // 3-D.
  convCase({{1, 2, 5, 6, 4},
            3,
            1,
            {2, 3, 2},
            {1, 2, 1},
            {0, 1, 1, 1, 0, 0},
            {2, 1, 1},
            true});
  // bf16.
  convCase({{2, 6, 9, 8},
            4,
            2,
            {3, 3},
            {1, 2},
            {1, 0, 1, 2},
            {1, 2},
            true,
            WEFT_BF16});
  convCase({{2, 4, 7, 7},
            8,
            4,
            {3, 3},
            {1, 1},
            {1, 1, 1, 1},
            {1, 1},
            true,
            WEFT_BF16});
}

//===-- Pooling -----------------------------------------------------------===//

struct PoolSpec {
  Dims x;
  Dims kernel, strides, pads, dilations;
  bool ceilMode;
};

/// Values from a few levels, so windows hold ties (first maximum wins).
HostTensor tiedTensor(Dims dims) {
  std::mt19937 gen(nextSeed++);
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  std::vector<double> v(count);
  for (double &e : v)
    e = static_cast<double>(gen() % 4);
  return tensorOf(WEFT_F32, std::move(dims), v);
}

void poolCase(const PoolSpec &p) {
  const size_t s = p.kernel.size();
  Dims y = {p.x[0], p.x[1]};
  for (size_t i = 0; i < s; ++i)
    y.push_back(windowOut(p.x[2 + i], p.kernel[i], p.strides[i], p.pads[i],
                          p.pads[s + i], p.dilations[i], p.ceilMode));
  std::string tag = dimsName(p.x) + " k" + dimsName(p.kernel) + " s" +
                    dimsName(p.strides) + " p" + dimsName(p.pads) + " d" +
                    dimsName(p.dilations) + (p.ceilMode ? " ceil" : "");
  std::vector<int64_t> maxAttrs =
      concat(concat(concat(p.kernel, p.strides), p.pads), p.dilations);
  for (int tied = 0; tied < 2; ++tied) {
    HostTensor x = tied ? tiedTensor(p.x) : rnd(WEFT_F32, p.x);
    std::string t = tag + (tied ? " ties" : "");
    check("max_pool " + t, weft_k_max_pool, weft_cuda_k_max_pool, {x},
          {zeroTensor(WEFT_F32, y)}, maxAttrs, 0, 0);
    check("max_pool_grad " + t, weft_k_max_pool_grad, weft_cuda_k_max_pool_grad,
          {x, rnd(WEFT_F32, y)}, {zeroTensor(WEFT_F32, p.x)}, maxAttrs, 1e-6,
          1e-7);
  }
  bool dilated = false;
  for (int64_t d : p.dilations)
    dilated = dilated || d != 1;
  if (dilated)
    return; // avg_pool has no dilations
  for (int countPad = 0; countPad < 2; ++countPad) {
    std::vector<int64_t> avgAttrs =
        concat(concat(concat({countPad}, p.kernel), p.strides), p.pads);
    std::string t = tag + (countPad ? " count_include_pad" : "");
    check("avg_pool " + t, weft_k_avg_pool, weft_cuda_k_avg_pool,
          {rnd(WEFT_F32, p.x)}, {zeroTensor(WEFT_F32, y)}, avgAttrs, 1e-6,
          1e-7);
    check("avg_pool_grad " + t, weft_k_avg_pool_grad, weft_cuda_k_avg_pool_grad,
          {rnd(WEFT_F32, y)}, {zeroTensor(WEFT_F32, p.x)}, avgAttrs, 1e-6,
          1e-7);
  }
}

void poolTests() {
  poolCase({{2, 3, 9, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true});
  poolCase({{2, 3, 9, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false});
  poolCase({{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false});
  poolCase({{1, 2, 11, 12}, {3, 2}, {2, 3}, {1, 0, 0, 1}, {1, 1}, true});
  poolCase({{2, 2, 10, 10}, {3, 3}, {1, 2}, {1, 1, 1, 1}, {2, 2}, true});
  poolCase({{2, 3, 13}, {4}, {3}, {1, 2}, {1}, true});
  poolCase({{1, 2, 5, 6, 7},
            {2, 3, 2},
            {2, 2, 1},
            {0, 1, 1, 1, 0, 0},
            {1, 1, 1},
            true});
  // Global average pools (the CPU's 8-way sums): with and without a tail.
  poolCase({{2, 5, 7, 7}, {7, 7}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false});
  poolCase({{3, 4, 4, 4}, {4, 4}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false});
}

} // namespace weft::test::math

using namespace weft::test::math;

/// Runs every group, or (arguments) only the named ones: matmul softmax
/// layer_norm batch_norm xent xent_padded optimizers conv pool determinism
/// errors throughput.
int main(int argc, char **argv) {
  skipWithoutGpu();
  const std::vector<std::pair<const char *, void (*)()>> groups = {
      {"matmul", matmulTests},
      {"softmax", softmaxTests},
      {"layer_norm", layerNormTests},
      {"batch_norm", batchNormTests},
      {"xent", xentTests},
      {"xent_padded", paddedXentTests},
      {"optimizers", optimizerTests},
      {"conv", convTests},
      {"pool", poolTests},
      {"determinism", determinismTests},
      {"errors", deviceErrorTests},
      {"throughput", throughput}};
  for (const auto &g : groups) {
    bool selected = argc == 1;
    for (int i = 1; i < argc; ++i)
      selected = selected || std::strcmp(argv[i], g.first) == 0;
    if (selected)
      g.second();
  }
  if (failures) {
    std::printf("%d FAILED\n", failures);
    return 1;
  }
  std::printf("all math kernel checks passed\n");
  return 0;
}
