//===- CalibrateCalls.h - weft calibrate's kernel calls ---------*- C++ -*-===//
//-*-===//
//
// The calls of weft's CPU kernels that CalibrateDevice.cpp times: streams
// (add, copy, AdamW, and the kernels rated by their own speed) over arrays
// laid out as a rank's arena holds them, products whose weights come from
// beyond the caches, and fused attention.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_CALIBRATECALLS_H
#define WEFT_TOOLS_WEFT_CALIBRATECALLS_H

#include "tools/weft/Calibrate.h"

#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

namespace weft::calibrate {

//===----------------------------------------------------------------------===//
// Kernel calls
//===----------------------------------------------------------------------===//

/// Median seconds per call of `fn`: after two warm-up calls, `trials`
/// trials of as many calls as fit in budget / trials (at least one each).
template <class F> double timePerCall(F &&fn, double budget, int trials) {
  fn();
  double t0 = now();
  fn();
  double one = std::max(now() - t0, 1e-9);
  int64_t calls =
      std::max<int64_t>(1, static_cast<int64_t>(budget / trials / one + 0.5));
  std::vector<double> per;
  for (int t = 0; t < trials; ++t) {
    t0 = now();
    for (int64_t i = 0; i < calls; ++i)
      fn();
    per.push_back((now() - t0) / static_cast<double>(calls));
  }
  return median(per);
}

/// A streaming kernel call over arrays of its own.
class Stream {
public:
  virtual ~Stream() = default;
  virtual void operator()() = 0;
  /// Bytes one call moves as the cost model counts them
  /// (tools/weftc/planner/Cluster.h): operands and results, plus the
  /// results again (a CPU reads each line it writes: write-allocate).
  virtual double traffic() const = 0;
};

/// `count` f32 arrays of `n` elements each, one after the other in one
/// 64-byte aligned block (filled with `values`), as a rank's arena holds its
/// buffers. Arrays of their own (a std::vector each, a separate mapping of
/// the same size apiece) streamed at 28-46 GB/s in an AdamW loop on this
/// project's VM, varying from process to process, where the same loop over
/// one block ran at 84-112 GB/s every time: separate arrays measured a memory
/// the compiled steps do not see.
class Arrays {
public:
  Arrays(int64_t n, std::initializer_list<float> values) : n_(n) {
    size_t total = static_cast<size_t>(n) * values.size();
    size_t bytes = std::max<size_t>(total, 1) * sizeof(float);
    void *p = nullptr;
    if (posix_memalign(&p, 64, bytes) != 0) {
      std::fprintf(stderr,
                   "weft calibrate: cannot allocate %zu bytes for a "
                   "streaming test\n",
                   bytes);
      std::exit(2);
    }
    base_.reset(static_cast<float *>(p));
    size_t k = 0;
    for (float v : values)
      std::fill_n(base_.get() + k++ * static_cast<size_t>(n),
                  static_cast<size_t>(n), v);
  }
  float *operator[](size_t k) const {
    return base_.get() + k * static_cast<size_t>(n_);
  }
  size_t size() const { return static_cast<size_t>(n_); }

private:
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  int64_t n_;
  std::unique_ptr<float, Free> base_;
};

/// One weft_k_binary add of `n`-element f32 arrays (c = a + b).
class AddCall final : public Stream {
public:
  explicit AddCall(int64_t n) : arrays_(n, {1.0f, 2.0f, 0.0f}) {
    desc_ = {3, WEFT_F32, 1, n, WEFT_F32, 1,
             n, WEFT_F32, 1, n, 1,        WEFT_BINARY_ADD};
    for (size_t k = 0; k < 3; ++k)
      bufs_[k] = arrays_[k];
  }
  void operator()() override { weft_k_binary(bufs_, desc_.data()); }
  /// Bytes one call reads and writes (two operands, one result).
  double readWritten() const {
    return 3.0 * 4.0 * static_cast<double>(arrays_.size());
  }
  double traffic() const override {
    return 4.0 * 4.0 * static_cast<double>(arrays_.size());
  }

private:
  Arrays arrays_;
  std::vector<int64_t> desc_;
  void *bufs_[3];
};

/// One weft_k_adamw step of `n` parameters, updated in place (the results
/// share the operands' buffers, as in compiled training steps).
class AdamwCall final : public Stream {
public:
  explicit AdamwCall(int64_t n) : arrays_(n, {0.5f, 0.01f, 0.0f, 0.0f}) {
    desc_ = {8,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_I64,
             0,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             5,
             weftDoubleToAttr(1e-3),
             weftDoubleToAttr(0.9),
             weftDoubleToAttr(0.999),
             weftDoubleToAttr(1e-8),
             weftDoubleToAttr(1e-2)};
    void *bufs[8] = {arrays_[0], arrays_[1], arrays_[2], arrays_[3],
                     &step_,     arrays_[0], arrays_[2], arrays_[3]};
    std::memcpy(bufs_, bufs, sizeof bufs);
  }
  void operator()() override { weft_k_adamw(bufs_, desc_.data()); }
  /// Four operands, three results, the results again.
  double traffic() const override {
    return 10.0 * 4.0 * static_cast<double>(arrays_.size());
  }

private:
  Arrays arrays_;
  int64_t step_ = 1;
  std::vector<int64_t> desc_;
  void *bufs_[8];
};

/// One weft_k_copy of `n` f32 elements.
class CopyCall {
public:
  explicit CopyCall(int64_t n) : arrays_(n, {1.0f, 0.0f}) {
    desc_ = {2, WEFT_F32, 1, n, WEFT_F32, 1, n, 0};
    bufs_[0] = arrays_[0];
    bufs_[1] = arrays_[1];
  }
  void operator()() { weft_k_copy(bufs_, desc_.data()); }

private:
  Arrays arrays_;
  std::vector<int64_t> desc_;
  void *bufs_[2];
};

/// One call of a runtime kernel on tensors of its own (operands, then
/// results, as KernelABI.h lists them) with `attrs`: the element-wise,
/// data-movement, normalization and loss kernels whose own rate, not the
/// memory's, bounds them on cache-sized data.
class KernelStream final : public Stream {
public:
  struct Tensor {
    std::vector<int64_t> dims;
    int64_t dtype = WEFT_F32;
    bool result = false;
    /// i64 tensors (labels) hold values in [0, bound).
    int64_t bound = 1;
  };
  using Fn = void (*)(void *const *, const int64_t *);

  KernelStream(Fn fn, std::vector<Tensor> tensors, std::vector<int64_t> attrs)
      : fn_(fn) {
    desc_.push_back(static_cast<int64_t>(tensors.size()));
    for (const Tensor &t : tensors) {
      int64_t n = 1;
      for (int64_t d : t.dims)
        n *= d;
      const int64_t size = t.dtype == WEFT_I64   ? 8
                           : t.dtype == WEFT_F32 ? 4
                                                 : 2;
      storage_.emplace_back(static_cast<size_t>(std::max<int64_t>(1, n)) *
                            static_cast<size_t>(size));
      std::vector<uint8_t> &bytes = storage_.back();
      if (t.dtype == WEFT_F32) {
        // Values of a few units, varied: softmax and losses stay finite.
        auto *f = reinterpret_cast<float *>(bytes.data());
        for (int64_t i = 0; i < n; ++i)
          f[i] = 0.03125f * static_cast<float>(i % 67) - 1.0f;
      } else if (t.dtype == WEFT_I64) {
        auto *v = reinterpret_cast<int64_t *>(bytes.data());
        for (int64_t i = 0; i < n; ++i)
          v[i] = (i * 7) % t.bound;
      }
      bufs_.push_back(bytes.data());
      desc_.push_back(t.dtype);
      desc_.push_back(static_cast<int64_t>(t.dims.size()));
      desc_.insert(desc_.end(), t.dims.begin(), t.dims.end());
      // Operands and results, plus the results again (write-allocate).
      traffic_ += static_cast<double>(n * size) * (t.result ? 2.0 : 1.0);
    }
    desc_.push_back(static_cast<int64_t>(attrs.size()));
    desc_.insert(desc_.end(), attrs.begin(), attrs.end());
  }
  void operator()() override { fn_(bufs_.data(), desc_.data()); }
  double traffic() const override { return traffic_; }

private:
  Fn fn_;
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<void *> bufs_;
  std::vector<int64_t> desc_;
  double traffic_ = 0;
};

/// The kernels `weft calibrate` rates, each as a maker of one call on
/// about `n` f32 elements per tensor, in shapes a transformer's step has
/// (rows of 128 for the normalizations, 32 for attention's softmax, 256
/// classes for the loss).
struct RatedKernel {
  const char *name;
  std::function<std::unique_ptr<Stream>(int64_t)> make;
};

std::vector<RatedKernel> ratedKernels();

/// weft_k_matmul of (m x k) (k x n) f32 operands whose B is, call by
/// call, the next of a pool of kWeightPoolBytes of weights: each product
/// fetches its weight from beyond the core's caches, as a training step
/// that reads every weight once per step does.
class WeightPoolMatmul {
public:
  WeightPoolMatmul(int64_t m, int64_t k, int64_t n)
      : a_(static_cast<size_t>(m * k), 0.5f), c_(static_cast<size_t>(m * n)) {
    const int64_t count = std::max<int64_t>(2, kWeightPoolBytes / (4 * k * n));
    for (int64_t i = 0; i < count; ++i)
      pool_.emplace_back(static_cast<size_t>(k * n), 0.25f);
    desc_ = {3, WEFT_F32, 2, m, k, WEFT_F32, 2, k,
             n, WEFT_F32, 2, m, n, 2,        0, 0};
  }
  void operator()() {
    void *bufs[3] = {a_.data(), pool_[next_].data(), c_.data()};
    next_ = (next_ + 1) % pool_.size();
    weft_k_matmul(bufs, desc_.data());
  }

private:
  std::vector<float> a_, c_;
  std::vector<std::vector<float>> pool_;
  size_t next_ = 0;
  std::vector<int64_t> desc_;
};

/// Fused attention on f32 [kB, kH, kS, kD] causal operands (a small
/// language model's): forward() is weft_k_attention, backward()
/// weft_k_attention_grad from the forward's own o and lse.
class AttentionCalls {
public:
  static constexpr int64_t kB = 2, kH = 4, kS = 256, kD = 64;
  /// FLOPs of one forward as the cost model counts them (Cost.cpp: per
  /// query-key pair of the causal half, 4 D for the two products and 5 for
  /// the softmax; the backward is 2.5 times that).
  static constexpr double kForwardFlops =
      kB * kH * kS * kS / 2.0 * (4 * kD + 5);

  AttentionCalls() {
    const size_t n = kB * kH * kS * kD;
    // q k v o lse do dq dk dv
    for (int i = 0; i < 9; ++i)
      data_[i].assign(i == 4 ? n / kD : n, 0.0f);
    for (int i : {0, 1, 2, 5})
      for (size_t j = 0; j < n; ++j)
        data_[i][j] = 0.125f * static_cast<float>((j * (i + 3)) % 17) - 1.0f;
    const std::vector<int64_t> dims = {WEFT_F32, 4, kB, kH, kS, kD};
    const std::vector<int64_t> rows = {WEFT_F32, 3, kB, kH, kS};
    const int64_t scale = weftDoubleToAttr(1.0 / std::sqrt(double(kD)));
    auto describe = [&](std::vector<int64_t> &desc, int count) {
      desc = {count};
      for (int i = 0; i < count; ++i)
        desc.insert(desc.end(), i == 4 ? rows.begin() : dims.begin(),
                    i == 4 ? rows.end() : dims.end());
      desc.insert(desc.end(), {2, scale, 1});
    };
    describe(forwardDesc_, 5);
    describe(backwardDesc_, 9);
    for (int i = 0; i < 9; ++i)
      bufs_[i] = data_[i].data();
    forward();
  }
  void forward() { weft_k_attention(bufs_, forwardDesc_.data()); }
  void backward() { weft_k_attention_grad(bufs_, backwardDesc_.data()); }

private:
  std::vector<float> data_[9];
  std::vector<int64_t> forwardDesc_, backwardDesc_;
  void *bufs_[9];
};

} // namespace weft::calibrate

#endif // WEFT_TOOLS_WEFT_CALIBRATECALLS_H
