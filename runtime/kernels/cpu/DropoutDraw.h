//===- DropoutDraw.h - weft_k_dropout's random draws, CPU and GPU --------===//
//
// Each element of a dropout draws a uniform number from Philox4x32-10
// (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): the key is the 64-bit seed, the counter (position / 4 low
// and high words, step, stream), and the element takes word position % 4, of
// which the top 24 bits make a float in [0, 1). The draw depends on nothing
// but those numbers, so host and device, every rank's block and a recomputed
// forward all see the same mask. The checks of a call are shared too.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_DROPOUTDRAW_H
#define WEFT_RUNTIME_KERNELS_CPU_DROPOUTDRAW_H

#include "runtime/kernels/cpu/KernelArgs.h"

#include <cstdint>

#ifdef __CUDACC__
#define WEFT_DROPOUT_HD __host__ __device__
#else
#define WEFT_DROPOUT_HD
#endif

namespace weft {

struct PhiloxBlock {
  uint32_t w[4];
};

/// Philox4x32 with 10 rounds of the paper's multipliers and key increments.
WEFT_DROPOUT_HD inline PhiloxBlock philox4x32(uint32_t c0, uint32_t c1,
                                              uint32_t c2, uint32_t c3,
                                              uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

/// The four draws of positions [4 * group, 4 * group + 4), as floats in
/// [0, 1) with 24 random bits.
struct DropoutStream {
  uint64_t seed;
  uint32_t step, stream;

  WEFT_DROPOUT_HD inline PhiloxBlock block(uint64_t group) const {
    return philox4x32(uint32_t(group), uint32_t(group >> 32), step, stream,
                      uint32_t(seed), uint32_t(seed >> 32));
  }
  WEFT_DROPOUT_HD static inline float uniform(uint32_t word) {
    return float(word >> 8) * (1.0f / 16777216.0f);
  }
  /// Whether the element at `position` of the whole tensor is kept.
  WEFT_DROPOUT_HD inline bool keeps(uint64_t position, float ratio) const {
    return uniform(block(position >> 2).w[position & 3]) >= ratio;
  }
};

/// Where a block of a tensor lies in the whole one: the positions a
/// kernel's draws are counted at (the offsets stay where the call has them:
/// device memory for a GPU call).
struct BlockPositions {
  const int64_t *offsets;
  int rank;
  /// The block's dims, and the whole tensor's dims and row-major strides.
  int64_t dims[cpu::kMaxRank], global[cpu::kMaxRank], strides[cpu::kMaxRank];

  /// The position in the whole tensor of the block's element `index`.
  WEFT_DROPOUT_HD uint64_t positionOf(int64_t index) const {
    uint64_t position = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t i = index % dims[d];
      index /= dims[d];
      position += uint64_t(i + offsets[d]) * uint64_t(strides[d]);
    }
    return position;
  }
};

/// The block of `block` (tensor `tensorIndex` of the call) in the whole
/// tensor whose dims are attributes `globalAttr`..; `offsets` is the call's
/// tensor `offsetsIndex` (i64, one per dim) and the step `stepIndex` (an
/// i64 scalar). Stops with the kernel's error when they do not fit.
inline BlockPositions checkBlockPositions(const cpu::KernelArgs &args,
                                          int tensorIndex, int stepIndex,
                                          int offsetsIndex, int globalAttr) {
  const cpu::TensorArg &block = args.tensor(tensorIndex);
  const cpu::TensorArg &step = args.tensor(stepIndex);
  const cpu::TensorArg &offsets = args.tensor(offsetsIndex);
  args.expectDType(stepIndex, WEFT_I64);
  args.expectDType(offsetsIndex, WEFT_I64);
  if (step.numel != 1 || offsets.numel != block.rank)
    args.invalid("step must be a scalar and offsets hold one entry per dim");
  const int64_t *global = args.attrArray(globalAttr, block.rank);
  BlockPositions p{};
  p.offsets = offsets.as<int64_t>();
  p.rank = block.rank;
  int64_t stride = 1;
  for (int d = block.rank - 1; d >= 0; --d) {
    if (block.dims[d] > global[d])
      args.invalid("the block is larger than the global shape");
    p.dims[d] = block.dims[d];
    p.global[d] = global[d];
    p.strides[d] = stride;
    stride *= global[d];
  }
  return p;
}

/// Host side: stops with the kernel's error when the block's offsets put it
/// outside the whole tensor (a GPU call's offsets are on the device).
inline void checkBlockInside(const cpu::KernelArgs &args,
                             const BlockPositions &p) {
  for (int d = 0; d < p.rank; ++d)
    if (p.offsets[d] < 0 || p.offsets[d] + p.dims[d] > p.global[d])
      args.invalid("the block lies outside the global shape");
}

/// A checked weft_k_dropout call: x, step, offsets -> y, mask. The step
/// and the offsets stay where the call has them (device memory for a GPU
/// call): `positionOf` reads the offsets, the caller the step.
struct DropoutCall : BlockPositions {
  const cpu::TensorArg *x, *y, *mask;
  const int64_t *step;
  float ratio, scale;
  uint64_t seed;
  uint32_t stream;

  WEFT_DROPOUT_HD DropoutStream drawsOf(int64_t stepValue) const {
    return {seed, uint32_t(stepValue), stream};
  }
};

/// Checks the call's tensors and attributes (KernelABI.h) and stops with the
/// kernel's error when they do not fit.
inline DropoutCall checkDropoutCall(const cpu::KernelArgs &args) {
  args.expectTensors(5, 5);
  args.expectAttrs(3);
  const cpu::TensorArg &x = args.tensor(0);
  args.expectDType(3, x.dtype);
  args.expectDType(4, WEFT_BOOL);
  args.expectSameNumel(0, 3);
  args.expectSameNumel(0, 4);
  const double ratio = args.attrDouble(0);
  if (!(ratio >= 0.0 && ratio < 1.0))
    args.invalid("ratio must be in [0, 1)");
  DropoutCall call{};
  static_cast<BlockPositions &>(call) = checkBlockPositions(args, 0, 1, 2, 3);
  call.x = &x;
  call.y = &args.tensor(3);
  call.mask = &args.tensor(4);
  call.step = args.tensor(1).as<int64_t>();
  call.ratio = float(ratio);
  call.scale = float(1.0 / (1.0 - ratio));
  call.seed = uint64_t(args.attr(1));
  call.stream = uint32_t(args.attr(2));
  return call;
}

} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_DROPOUTDRAW_H
