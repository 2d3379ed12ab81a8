//===- FakeModel.cpp - A hand-written stand-in for a compiled model -------===//
//
// Exports what weftc's object files export (ModelABI.h): a signature with
// two f32 inputs a[2,3] and b[2,3], one parameter bias f32[3] and one output
// y = a + b + bias (bias broadcast over rows). Linked with weft_runtime_main
// into `weft-fake-model`, which fake_model_test.py drives.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/ModelABI.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" const char weft_model_signature[] =
    R"({"format_version":1,"arena_bytes":24,"arena_alignment":64,)"
    R"("params":[{"name":"bias","dtype":"f32","shape":[3]}],)"
    R"("inputs":[{"name":"a","dtype":"f32","shape":[2,3]},)"
    R"({"name":"b","dtype":"f32","shape":[2,3]}],)"
    R"("outputs":[{"name":"y","dtype":"f32","shape":[2,3]}]})";

static void checkAligned(const void *p, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % 64 != 0) {
    std::fprintf(stderr, "fake model: %s is not 64-byte aligned\n", what);
    std::abort();
  }
}

extern "C" void weft_model_run(void *arena, void *const *params,
                               void *const *inputs, void *const *outputs) {
  checkAligned(arena, "the arena");
  checkAligned(params[0], "bias");
  checkAligned(inputs[0], "a");
  checkAligned(inputs[1], "b");
  checkAligned(outputs[0], "y");
  const float *bias = static_cast<const float *>(params[0]);
  const float *a = static_cast<const float *>(inputs[0]);
  const float *b = static_cast<const float *>(inputs[1]);
  float *y = static_cast<float *>(outputs[0]);
  // Like compiled code: the temporary a + b lives in the arena.
  float *sum = static_cast<float *>(arena);
  for (int i = 0; i < 6; ++i)
    sum[i] = a[i] + b[i];
  for (int i = 0; i < 6; ++i)
    y[i] = sum[i] + bias[i % 3];
}
