//===- Optimizers.cpp - In-place optimizer updates ------------------------===//
//
// AdamW and SGD with the operation order of torch.optim (1.13's single-tensor
// paths), so trajectories follow PyTorch's; the learning rate of each update
// follows the schedule in the trailing attributes (LrSchedule.h). Every element
// is read before it is written, so results may share buffers with the operands
// they replace: the compiler updates parameters and optimizer state in place.
//
//===----------------------------------------------------------------------===//
#include "KernelArgs.h"
#include "Parallel.h"

#include <cmath>

using namespace weft;
using namespace weft::cpu;

namespace {

int64_t stepNumber(const KernelArgs &args, int index) {
  const TensorArg &step = args.tensor(index);
  if (step.dtype != WEFT_I64 || step.numel != 1)
    args.invalid("the step must be one i64");
  int64_t t = *step.as<int64_t>();
  if (t < 1)
    args.invalid("the step number must be at least 1");
  return t;
}

void expectF32Like(const KernelArgs &args, int first, int last) {
  for (int i = first; i <= last; ++i) {
    args.expectDType(i, WEFT_F32);
    args.expectSameNumel(first, i);
  }
}

} // namespace

extern "C" void weft_k_adamw(void *const *bufs, const int64_t *desc) {
  KernelArgs args("adamw", bufs, desc);
  args.expectTensors(8, 8);
  args.expectAttrs(5);
  expectF32Like(args, 0, 3);
  expectF32Like(args, 5, 7);
  args.expectSameNumel(0, 5);
  const int64_t t = stepNumber(args, 4);
  const double lr = scheduledLr(args.lrSchedule(5), args.attrDouble(0), t),
               beta1 = args.attrDouble(1), beta2 = args.attrDouble(2),
               eps = args.attrDouble(3), weightDecay = args.attrDouble(4);
  const float *param = args.tensor(0).as<float>();
  const float *grad = args.tensor(1).as<float>();
  const float *m = args.tensor(2).as<float>();
  const float *v = args.tensor(3).as<float>();
  float *paramOut = args.tensor(5).as<float>();
  float *mOut = args.tensor(6).as<float>();
  float *vOut = args.tensor(7).as<float>();

  const float decay = static_cast<float>(1.0 - lr * weightDecay);
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  const float oneMinusB1 = static_cast<float>(1.0 - beta1);
  const float oneMinusB2 = static_cast<float>(1.0 - beta2);
  const double correction1 = 1.0 - std::pow(beta1, static_cast<double>(t));
  const double correction2 = 1.0 - std::pow(beta2, static_cast<double>(t));
  const float stepSize = static_cast<float>(lr / correction1);
  const float correction2Sqrt = static_cast<float>(std::sqrt(correction2));
  const float epsF = static_cast<float>(eps);
  // ivdep: element i reads and writes index i only, so the in-place results
  // (paramOut == param, ...) carry nothing from one element to the next;
  // without it the compiler assumes they might and runs the loop one element
  // at a time (scalar sqrt and two divisions: about half the memory's speed).
  // Vector sqrt and division round as the scalar ones: the same bits.
  parallelFor(args.tensor(0).numel, 1 << 14, [&](int64_t b, int64_t e) {
#pragma GCC ivdep
    for (int64_t i = b; i < e; ++i) {
      float p = param[i] * decay;
      float g = grad[i];
      float mi = m[i] * b1 + g * oneMinusB1;
      float vi = v[i] * b2 + g * g * oneMinusB2;
      float denom = std::sqrt(vi) / correction2Sqrt + epsF;
      paramOut[i] = p - stepSize * (mi / denom);
      mOut[i] = mi;
      vOut[i] = vi;
    }
  });
}

extern "C" void weft_k_sgd(void *const *bufs, const int64_t *desc) {
  KernelArgs args("sgd", bufs, desc);
  args.expectAttrs(6);
  const bool hasBuffer = args.attr(5) != 0;
  args.expectTensors(hasBuffer ? 6 : 4, hasBuffer ? 6 : 4);
  const int stepIndex = hasBuffer ? 3 : 2;
  const int firstOut = stepIndex + 1;
  expectF32Like(args, 0, hasBuffer ? 2 : 1);
  expectF32Like(args, firstOut, args.numTensors() - 1);
  args.expectSameNumel(0, firstOut);
  const int64_t t = stepNumber(args, stepIndex);
  const float lr = static_cast<float>(
      scheduledLr(args.lrSchedule(6), args.attrDouble(0), t));
  const float momentum = static_cast<float>(args.attrDouble(1));
  const float dampening = static_cast<float>(1.0 - args.attrDouble(2));
  const float weightDecay = static_cast<float>(args.attrDouble(3));
  const bool nesterov = args.attr(4) != 0;
  const float *param = args.tensor(0).as<float>();
  const float *grad = args.tensor(1).as<float>();
  const float *buf = hasBuffer ? args.tensor(2).as<float>() : nullptr;
  float *paramOut = args.tensor(firstOut).as<float>();
  float *bufOut = hasBuffer ? args.tensor(firstOut + 1).as<float>() : nullptr;
  // PyTorch creates the momentum buffer on the first step as a copy of the
  // (decayed) gradient; later steps blend it.
  const bool firstStep = t == 1;
  parallelFor(args.tensor(0).numel, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float d = grad[i];
      if (weightDecay != 0.0f)
        d = d + param[i] * weightDecay;
      if (hasBuffer) {
        float bi = firstStep ? d : buf[i] * momentum + d * dampening;
        bufOut[i] = bi;
        d = nesterov ? d + bi * momentum : bi;
      }
      paramOut[i] = param[i] - d * lr;
    }
  });
}
