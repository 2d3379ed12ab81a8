//===- Where.cpp - where kernel -------------------------------------------===//
//
// z = cond ? x : y with numpy broadcasting of all three. Elements are moved
// as unsigned integers of the dtype's size, so every dtype is handled; rows
// of 4-byte elements under a per-element condition are blended 16 lanes at
// a time on AVX-512.
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "ElementwiseLoops.h"
#include "Simd512.h"

using namespace weft;
using namespace weft::cpu;

namespace {

#if WEFT_HAVE_AVX512_KERNELS
/// z[i] = c[i] ? x[i * sx] : y[i * sy] for i < n, 4-byte elements, row
/// strides 0 or 1: 16 lanes a step, a blend under the condition's mask (a
/// branch per element mispredicts on the masks of ReLUs and clips).
WEFT_TARGET_AVX512 void select32(const uint8_t *c, const uint32_t *x,
                                 int64_t sx, const uint32_t *y, int64_t sy,
                                 uint32_t *z, int64_t n) {
  const __m512i xs = _mm512_set1_epi32(static_cast<int>(*x));
  const __m512i ys = _mm512_set1_epi32(static_cast<int>(*y));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = lanesBelow(n - i);
    const __m128i cv = _mm_maskz_loadu_epi8(live, c + i);
    const __mmask16 pick = _mm_test_epi8_mask(cv, cv);
    const __m512i xv = sx ? _mm512_maskz_loadu_epi32(live, x + i) : xs;
    const __m512i yv = sy ? _mm512_maskz_loadu_epi32(live, y + i) : ys;
    _mm512_mask_storeu_epi32(z + i, live,
                             _mm512_mask_blend_epi32(pick, yv, xv));
  }
}
#endif

template <class U>
void whereRows(const BroadcastPlan<3> &plan, const uint8_t *cond, const U *x,
               const U *y, U *z) {
  const int64_t sc = plan.rowStride(0);
  const int64_t sx = plan.rowStride(1);
  const int64_t sy = plan.rowStride(2);
  parallelFor(plan.numel, kParallelGrain, [&](int64_t begin, int64_t end) {
    forEachRow(plan, begin, end,
               [&](const int64_t *off, int64_t outOff, int64_t n) {
                 const uint8_t *pc = cond + off[0];
                 const U *px = x + off[1];
                 const U *py = y + off[2];
                 U *pz = z + outOff;
#if WEFT_HAVE_AVX512_KERNELS
                 if constexpr (sizeof(U) == 4)
                   if (sc && gemmUsesOwnKernels())
                     return select32(pc, reinterpret_cast<const uint32_t *>(px),
                                     sx, reinterpret_cast<const uint32_t *>(py),
                                     sy, reinterpret_cast<uint32_t *>(pz), n);
#endif
                 if (sc && sx && sy) {
                   for (int64_t i = 0; i < n; ++i)
                     pz[i] = pc[i] ? px[i] : py[i];
                 } else if (sc == 0) {
                   // One condition for the whole row: a copy or a fill.
                   const U *src = *pc ? px : py;
                   int64_t s = *pc ? sx : sy;
                   if (s)
                     for (int64_t i = 0; i < n; ++i)
                       pz[i] = src[i];
                   else
                     for (int64_t i = 0; i < n; ++i)
                       pz[i] = *src;
                 } else if (sx && !sy) {
                   // One side a broadcast value (ReLU's gradient: where(x
                   // > 0, g, 0)): a select the compiler vectorizes.
                   const U v = *py;
                   for (int64_t i = 0; i < n; ++i)
                     pz[i] = pc[i] ? px[i] : v;
                 } else if (!sx && sy) {
                   const U v = *px;
                   for (int64_t i = 0; i < n; ++i)
                     pz[i] = pc[i] ? v : py[i];
                 } else {
                   const U a = *px, b = *py;
                   for (int64_t i = 0; i < n; ++i)
                     pz[i] = pc[i] ? a : b;
                 }
               });
  });
}

} // namespace

extern "C" void weft_k_where(void *const *bufs, const int64_t *desc) {
  KernelArgs args("where", bufs, desc);
  args.expectTensors(4, 4);
  const TensorArg &cond = args.tensor(0);
  const TensorArg &x = args.tensor(1);
  const TensorArg &y = args.tensor(2);
  const TensorArg &z = args.tensor(3);
  args.expectDType(0, WEFT_BOOL);
  args.expectDType(2, x.dtype);
  args.expectDType(3, x.dtype);
  const TensorArg *ins[3] = {&cond, &x, &y};
  BroadcastPlan<3> plan = makeBroadcastPlan(args, z, ins);
  dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    whereRows<U>(plan, cond.as<uint8_t>(), x.as<U>(), y.as<U>(), z.as<U>());
  });
}
