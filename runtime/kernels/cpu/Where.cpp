//===- Where.cpp - where kernel -------------------------------------------===//
//
// z = cond ? x : y with numpy broadcasting of all three. Elements are moved
// as unsigned integers of the dtype's size, so every dtype is handled.
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "ElementwiseLoops.h"

using namespace weft;
using namespace weft::cpu;

namespace {

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
