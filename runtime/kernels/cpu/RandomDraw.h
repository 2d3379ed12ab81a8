//===- RandomDraw.h - weft_k_random's draws, CPU and GPU ------------------===//
//
// weft.random's numbers come from weft.dropout's generator (DropoutDraw.h:
// Philox4x32-10 keyed by the seed, counting over the element's position in
// the whole tensor, the step and the stream):
//   uniform  the element at position p takes the top 24 bits of word p % 4
//            of block p / 4: u in [0, 1), a + (b - a) u;
//   normal   it takes words 2 (p % 2) and 2 (p % 2) + 1 of block p / 2
//            (32 bits each): u1 in (0, 1], u2 in [0, 1), and the Box-Muller
//            transform a + b sqrt(-2 ln u1) cos(2 pi u2), in double.
// Every rank's block, host and device, and a rerun draw the same numbers.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_RANDOMDRAW_H
#define WEFT_RUNTIME_KERNELS_CPU_RANDOMDRAW_H

#include "runtime/kernels/cpu/DropoutDraw.h"

#include <cmath>

namespace weft {

/// A checked weft_k_random call: like, step, offsets -> y.
struct RandomCall : BlockPositions {
  const cpu::TensorArg *y;
  const int64_t *step;
  bool normal;
  double a, b;
  uint64_t seed;
  uint32_t stream;

  WEFT_DROPOUT_HD DropoutStream drawsOf(int64_t stepValue) const {
    return {seed, uint32_t(stepValue), stream};
  }
  /// The number at `position` of the whole tensor.
  WEFT_DROPOUT_HD double draw(const DropoutStream &draws,
                              uint64_t position) const {
    if (!normal) {
      const uint32_t word = draws.block(position >> 2).w[position & 3];
      return a + (b - a) * double(DropoutStream::uniform(word));
    }
    const PhiloxBlock block = draws.block(position >> 1);
    const int pair = int(position & 1) * 2;
    const double u1 = (double(block.w[pair]) + 1.0) * (1.0 / 4294967296.0);
    const double u2 = double(block.w[pair + 1]) * (1.0 / 4294967296.0);
    const double twoPi = 6.283185307179586476925286766559;
    return a + b * (sqrt(-2.0 * log(u1)) * cos(twoPi * u2));
  }
};

/// Checks the call's tensors and attributes (KernelABI.h) and stops with the
/// kernel's error when they do not fit.
inline RandomCall checkRandomCall(const cpu::KernelArgs &args) {
  args.expectTensors(4, 4);
  args.expectAttrs(5);
  args.expectSameNumel(0, 3);
  const int64_t distribution = args.attr(0);
  if (distribution != 0 && distribution != 1)
    args.invalid("distribution must be 0 (uniform) or 1 (normal)");
  RandomCall call{};
  // The result's block: `like` has its shape, not necessarily its type.
  static_cast<BlockPositions &>(call) = checkBlockPositions(args, 3, 1, 2, 5);
  call.y = &args.tensor(3);
  call.step = args.tensor(1).as<int64_t>();
  call.normal = distribution == 1;
  call.a = args.attrDouble(1);
  call.b = args.attrDouble(2);
  if (!std::isfinite(call.a) || !std::isfinite(call.b) ||
      (call.normal && call.b < 0))
    args.invalid("a and b must be finite (and a normal scale b >= 0)");
  call.seed = uint64_t(args.attr(3));
  call.stream = uint32_t(args.attr(4));
  return call;
}

} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_RANDOMDRAW_H
