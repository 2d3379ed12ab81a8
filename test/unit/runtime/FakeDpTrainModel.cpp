//===- FakeDpTrainModel.cpp - A hand-written 2-rank data-parallel model ---===//
//
// What weftc emits for `weftc compile --train --dp 2` of a linear
// regression, written by hand (ModelABI.h): world size 2 on mesh dp=[2];
// the inputs x f32[4,4] and y f32[4,1] are this rank's half of a global
// batch of 8 rows ("shard" over mesh axis 0). One call is one SGD step (lr
// 0.1) of pred = x @ w + b with the mean squared error over the global
// batch: each rank sums its rows' squared errors and gradients, the sums
// are added over the ranks (weft_k_all_reduce_start + weft_k_comm_wait, so
// the executor's collective context is what the kernels use), and every
// rank applies the same update to its replicated w, b, "sgd.step_count"
// and "step". "local_sq" f32[1] (optimizer state split over dp: the whole
// tensor is f32[2]) accumulates this rank's own squared errors, so the
// ranks' checkpoints differ. Output: the loss (replicated).
//
// Failure injection for fake_dp_test.py, read from the environment each
// step: FAKE_DP_FAIL_RANK=R and FAKE_DP_FAIL_STEP=S make rank R, at step
// S, exit (FAKE_DP_FAIL=exit, code 7), SIGKILL itself (kill) or stop
// answering (hang) before the collective; FAKE_DP_SKIP_WAIT=1 leaves the
// collective without its comm_wait.
//
// Built twice: the "other" build (WEFT_FAKE_OTHER_MODEL) marks local_sq a
// (non-trainable) parameter, so its signature, executable and `weft
// export` behaviour differ.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/KernelABI.h"
#include "weft/runtime/ModelABI.h"

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#ifdef WEFT_FAKE_OTHER_MODEL
#define LOCAL_SQ_ROLE R"("role":"param","trainable":false)"
#else
#define LOCAL_SQ_ROLE R"("role":"optimizer_state")"
#endif

extern "C" const char weft_model_signature[] =
    R"({"format_version":1,"mode":"train","arena_bytes":128,)"
    R"("arena_alignment":64,"world_size":2,)"
    R"("mesh":{"axes":["dp"],"shape":[2]},)"
    R"("params":[)"
    R"({"name":"w","dtype":"f32","shape":[4,1],"role":"param","trainable":true},)"
    R"({"name":"b","dtype":"f32","shape":[1],"role":"param","trainable":true},)"
    R"({"name":"sgd.step_count","dtype":"f32","shape":[],)"
    R"("role":"optimizer_state"},)"
    R"({"name":"local_sq","dtype":"f32","shape":[1],)" LOCAL_SQ_ROLE
    R"(,"shard":{"dim":0,"mesh_axes":[0]}},)"
    R"({"name":"step","dtype":"i64","shape":[],"role":"step"}],)"
    R"("inputs":[{"name":"x","dtype":"f32","shape":[4,4],"batch_dim":0,)"
    R"("shard":{"dim":0,"mesh_axes":[0]}},)"
    R"({"name":"y","dtype":"f32","shape":[4,1],"batch_dim":0,)"
    R"("shard":{"dim":0,"mesh_axes":[0]}}],)"
    R"("outputs":[{"name":"loss","dtype":"f32","shape":[]}]})";

namespace {

/// The desc of an f32[6] -> f32[6] collective over mesh axis 0 with
/// leading attributes `a0` and `a1`.
struct Desc {
  int64_t v[12];
  Desc(int64_t a0, int64_t a1)
      : v{2, WEFT_F32, 1, 6, WEFT_F32, 1, 6, 4, a0, a1, 1, 0} {}
};

void injectFailure(int64_t step) {
  const char *rank = std::getenv("FAKE_DP_FAIL_RANK");
  const char *at = std::getenv("FAKE_DP_FAIL_STEP");
  const char *how = std::getenv("FAKE_DP_FAIL");
  const char *me = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank || !at || !how || !me || std::string(rank) != me ||
      std::atoll(at) != step)
    return;
  std::string kind = how;
  if (kind == "exit")
    ::_exit(7);
  if (kind == "kill")
    std::raise(SIGKILL);
  if (kind == "hang")
    for (;;)
      ::pause();
}

} // namespace

extern "C" void weft_model_run(void *arena, void *const *params,
                               void *const *inputs, void *const *outputs) {
  float *w = static_cast<float *>(params[0]);
  float *b = static_cast<float *>(params[1]);
  float *stepCount = static_cast<float *>(params[2]);
  float *localSq = static_cast<float *>(params[3]);
  int64_t *step = static_cast<int64_t *>(params[4]);
  const float *x = static_cast<const float *>(inputs[0]);
  const float *y = static_cast<const float *>(inputs[1]);
  float *loss = static_cast<float *>(outputs[0]);
  injectFailure(*step + 1);

  // This rank's sums: [squared errors, x^T err (4), errors].
  float *sums = static_cast<float *>(arena);
  float *total = sums + 16; // another 64-byte line of the arena
  const int rows = 4, cols = 4;
  float err[4];
  for (int i = 0; i < rows; ++i) {
    float p = b[0];
    for (int k = 0; k < cols; ++k)
      p = p + x[i * cols + k] * w[k];
    err[i] = p - y[i];
  }
  float sq = 0.0f;
  for (int i = 0; i < rows; ++i)
    sq = sq + err[i] * err[i];
  sums[0] = sq;
  for (int k = 0; k < cols; ++k) {
    float g = 0.0f;
    for (int i = 0; i < rows; ++i)
      g = g + x[i * cols + k] * err[i];
    sums[1 + k] = g;
  }
  float gb = 0.0f;
  for (int i = 0; i < rows; ++i)
    gb = gb + err[i];
  sums[5] = gb;

  // The sums over both ranks, started and finished like compiled code.
  Desc start(/*slot=*/3, /*reduction=*/0);
  void *startBufs[] = {sums, total};
  weft_k_all_reduce_start(startBufs, start.v);
  sums[0] = -1.0f; // the operand may be reused once the start returns
  if (!std::getenv("FAKE_DP_SKIP_WAIT")) {
    int64_t wait[] = {1, WEFT_F32, 1, 6, 1, 3};
    void *waitBufs[] = {total};
    weft_k_comm_wait(waitBufs, wait);
  }

  *loss = total[0] / 8.0f;
  const float lr = 0.1f, scale = 0.25f;
  for (int k = 0; k < cols; ++k)
    w[k] = w[k] - lr * (total[1 + k] * scale);
  b[0] = b[0] - lr * (total[5] * scale);
  *stepCount = *stepCount + 1.0f;
  localSq[0] = localSq[0] + sq;
  *step = *step + 1;
}
