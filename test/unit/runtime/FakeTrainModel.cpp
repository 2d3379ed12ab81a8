//===- FakeTrainModel.cpp - A hand-written stand-in for a training model --===//
//
// Exports what weftc's object files export for `weftc compile --train`
// (ModelABI.h): one call is one SGD step (lr 0.1) of linear regression
// pred = x @ w + b with the mean squared error loss, on a global batch of 8
// rows x f32[8,4], y f32[8,1]. The state is w f32[4,1] and b f32[1]
// (trainable parameters), "sgd.step_count" f32[] (optimizer state, counts
// the updates) and "step" i64[] (the step counter); every one is updated in
// place. Outputs: the loss, then the predictions f32[8,1] (before the
// update).
//
// The arithmetic is spelled out in a fixed order so fake_train_test.py can
// repeat it bitwise in numpy float32. Built twice: weft-fake-train-model and,
// with WEFT_FAKE_OTHER_MODEL, weft-fake-train-model-other, whose signature
// differs only in its arena size (so only the signature hash tells their
// checkpoints apart).
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/ModelABI.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifdef WEFT_FAKE_OTHER_MODEL
#define FAKE_ARENA_BYTES "128"
#else
#define FAKE_ARENA_BYTES "64"
#endif

extern "C" const char weft_model_signature[] =
    R"({"format_version":1,"mode":"train","arena_bytes":)" FAKE_ARENA_BYTES
    R"(,"arena_alignment":64,)"
    R"("params":[)"
    R"({"name":"w","dtype":"f32","shape":[4,1],"role":"param","trainable":true},)"
    R"({"name":"b","dtype":"f32","shape":[1],"role":"param","trainable":true},)"
    R"({"name":"sgd.step_count","dtype":"f32","shape":[],)"
    R"("role":"optimizer_state"},)"
    R"({"name":"step","dtype":"i64","shape":[],"role":"step"}],)"
    R"("inputs":[{"name":"x","dtype":"f32","shape":[8,4],"batch_dim":0},)"
    R"({"name":"y","dtype":"f32","shape":[8,1],"batch_dim":0}],)"
    R"("outputs":[{"name":"loss","dtype":"f32","shape":[]},)"
    R"({"name":"pred","dtype":"f32","shape":[8,1]}]})";

static void checkAligned(const void *p, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % 64 != 0) {
    std::fprintf(stderr, "fake train model: %s is not 64-byte aligned\n", what);
    std::abort();
  }
}

extern "C" void weft_model_run(void *arena, void *const *params,
                               void *const *inputs, void *const *outputs) {
  checkAligned(arena, "the arena");
  for (int i = 0; i < 4; ++i)
    checkAligned(params[i], "a params buffer");
  checkAligned(inputs[0], "x");
  checkAligned(inputs[1], "y");
  checkAligned(outputs[0], "loss");
  checkAligned(outputs[1], "pred");
  float *w = static_cast<float *>(params[0]);
  float *b = static_cast<float *>(params[1]);
  float *stepCount = static_cast<float *>(params[2]);
  int64_t *step = static_cast<int64_t *>(params[3]);
  const float *x = static_cast<const float *>(inputs[0]);
  const float *y = static_cast<const float *>(inputs[1]);
  float *loss = static_cast<float *>(outputs[0]);
  float *pred = static_cast<float *>(outputs[1]);
  // Like compiled code: the residuals live in the arena, written before
  // they are read.
  float *err = static_cast<float *>(arena);
  const int rows = 8, cols = 4;
  for (int i = 0; i < rows; ++i) {
    float p = b[0];
    for (int k = 0; k < cols; ++k)
      p = p + x[i * cols + k] * w[k];
    pred[i] = p;
    err[i] = p - y[i];
  }
  float sum = 0.0f;
  for (int i = 0; i < rows; ++i)
    sum = sum + err[i] * err[i];
  *loss = sum / 8.0f;
  // d(loss)/d(pred_i) = 2 err_i / 8.
  const float lr = 0.1f, scale = 0.25f;
  float gw[4];
  for (int k = 0; k < cols; ++k) {
    float g = 0.0f;
    for (int i = 0; i < rows; ++i)
      g = g + x[i * cols + k] * err[i];
    gw[k] = g * scale;
  }
  float gb = 0.0f;
  for (int i = 0; i < rows; ++i)
    gb = gb + err[i];
  gb = gb * scale;
  for (int k = 0; k < cols; ++k)
    w[k] = w[k] - lr * gw[k];
  b[0] = b[0] - lr * gb;
  *stepCount = *stepCount + 1.0f;
  *step = *step + 1;
}
