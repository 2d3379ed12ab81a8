//===- DeviceExecutorTest.cpp - The executor on the GPU -------------------===//
//
// A hand-written --target cuda training model that uses no kernels, only the
// calls a cuda model makes besides them (ModelABI.h: weft_rt_constant,
// weft_rt_copy, weft_rt_load_i64), driven through weft::Executor linked with
// libweft_runtime_cuda: the params are uploaded by prepare(), the inputs
// before and the outputs after every run(), the params come back only with
// fetchParams(), and the arena has the signature's alignment.
//
// CUDA graphs (CudaDevice.cpp's runModel): a model that reads a value on
// the host (weft_rt_load_i64) cannot be recorded, so it runs eagerly every
// time, recording attempt included; one that only enqueues work runs
// twice (eagerly, then recorded) and is replayed after, with each run's
// inputs. WEFT_CUDA_GRAPHS=0 (a second ctest entry) runs every run
// eagerly. Without a GPU it exits 77 (ctest: skipped).
//
//===----------------------------------------------------------------------===//

#include "GpuSkip.h"

#include "weft/runtime/Device.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/ModelABI.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char kSignature[] =
    R"({"format_version": 1, "arena_bytes": 64, "arena_alignment": 4096,)"
    R"( "mode": "train", "target": "cuda",)"
    R"( "params": [{"name": "w", "dtype": "f32", "shape": [4],)"
    R"( "role": "param", "trainable": true},)"
    R"( {"name": "step", "dtype": "i64", "shape": [], "role": "step"}],)"
    R"( "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 4],)"
    R"( "batch_dim": 0}],)"
    R"( "outputs": [{"name": "loss", "dtype": "f32", "shape": []},)"
    R"( {"name": "stage", "dtype": "i64", "shape": []}]})";

const float kLoss = 0.5f;
const int64_t kStage = 7;
int failures = 0;
int64_t loaded = -1;
int modelCalls = 0, replayCalls = 0;

bool graphsOn() {
  const char *v = std::getenv("WEFT_CUDA_GRAPHS");
  return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0));
}

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

/// One "step": the loss is a constant, w becomes x's first row, and the
/// stage output is an i64 constant read back through the arena.
void modelRun(void *arena, void *const *params, void *const *inputs,
              void *const *outputs) {
  expect(reinterpret_cast<uintptr_t>(arena) % 4096 == 0,
         "the arena is aligned to the signature's 4096 bytes");
  weft_rt_copy(outputs[0], weft_rt_constant(0, &kLoss, sizeof kLoss),
               sizeof kLoss);
  weft_rt_copy(params[0], inputs[0], 4 * sizeof(float));
  weft_rt_copy(arena, weft_rt_constant(1, &kStage, sizeof kStage),
               sizeof kStage);
  loaded = weft_rt_load_i64(arena);
  weft_rt_copy(outputs[1], arena, sizeof kStage);
  ++modelCalls;
}

/// The same step without the host read: a CUDA graph can hold it.
void replayableRun(void *arena, void *const *params, void *const *inputs,
                   void *const *outputs) {
  weft_rt_copy(outputs[0], weft_rt_constant(0, &kLoss, sizeof kLoss),
               sizeof kLoss);
  weft_rt_copy(params[0], inputs[0], 4 * sizeof(float));
  weft_rt_copy(arena, weft_rt_constant(1, &kStage, sizeof kStage),
               sizeof kStage);
  weft_rt_copy(outputs[1], arena, sizeof kStage);
  ++replayCalls;
}

weft::HostTensor tensor(WeftDType dtype, std::vector<int64_t> shape,
                        const void *data, size_t bytes) {
  weft::HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.allocate(bytes);
  std::memcpy(t.data.data(), data, bytes);
  return t;
}

std::vector<float> floats(const weft::HostTensor &t) {
  std::vector<float> v(t.byteSize() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), t.byteSize());
  return v;
}

/// Runs `executor` (a model of kSignature) `runs` times with other inputs
/// each time and checks every run's outputs and fetched w.
void runAndCheck(weft::Executor &executor, int runs, const std::string &name) {
  const float w0[4] = {1, 2, 3, 4};
  const int64_t step0 = 0;
  executor.mutableParam(0) = tensor(WEFT_F32, {4}, w0, sizeof w0);
  executor.mutableParam(1) = tensor(WEFT_I64, {}, &step0, sizeof step0);
  weft::Status status = executor.allocateInputs();
  expect(status.ok(), name + ": allocateInputs: " + status.message);
  status = executor.prepare();
  expect(status.ok(), name + ": prepare: " + status.message);
  if (!status.ok())
    return;
  for (int run = 0; run < runs; ++run) {
    const std::string at = name + " run " + std::to_string(run);
    float *x = static_cast<float *>(executor.mutableInput(0).data.data());
    for (int i = 0; i < 8; ++i)
      x[i] = static_cast<float>(10 * (run + 1) + i);
    executor.run();
    float loss = 0;
    int64_t stage = 0;
    std::memcpy(&loss, executor.output(0).data.data(), sizeof loss);
    std::memcpy(&stage, executor.output(1).data.data(), sizeof stage);
    expect(loss == kLoss,
           at + ": loss " + std::to_string(loss) + ", expected 0.5");
    expect(stage == kStage,
           at + ": stage output " + std::to_string(stage) + ", expected 7");
    // The host copy of w changes only when fetched.
    std::vector<float> before = floats(executor.param(0));
    if (run == 0)
      expect(before == std::vector<float>(w0, w0 + 4),
             at + ": param w is not downloaded by run()");
    executor.fetchParams();
    std::vector<float> after = floats(executor.param(0));
    std::vector<float> want(x, x + 4);
    expect(after == want, at + ": fetched w is x's first row");
  }
}

} // namespace

int main() {
  weft::test::skipWithoutGpu();

  weft::Executor executor;
  weft::Status status = executor.init(kSignature, modelRun);
  expect(status.ok(), "init: " + status.message);
  expect(executor.onDevice(), "libweft_runtime_cuda runs models on the GPU");
  expect(std::string(weft::deviceBackend().target()) == "cuda",
         "the backend's target is cuda");

  if (failures)
    return 1;
  runAndCheck(executor, 3, "host-reading model");
  expect(loaded == kStage, "weft_rt_load_i64 read " + std::to_string(loaded));
  // Run 1's recording fails at the read and runs it again eagerly.
  const int wantModelCalls = graphsOn() ? 4 : 3;
  expect(modelCalls == wantModelCalls,
         "the host-reading model was called " + std::to_string(modelCalls) +
             " times for 3 runs, expected " + std::to_string(wantModelCalls));

  weft::Executor replayed;
  status = replayed.init(kSignature, replayableRun);
  expect(status.ok(), "init (replayable model): " + status.message);
  runAndCheck(replayed, 5, "replayable model");
  // Runs 0 and 1 call the model (eagerly, then recorded); 2..4 replay.
  const int wantReplayCalls = graphsOn() ? 2 : 5;
  expect(replayCalls == wantReplayCalls,
         "the replayable model was called " + std::to_string(replayCalls) +
             " times for 5 runs, expected " + std::to_string(wantReplayCalls));

  // A cpu model is refused by the cuda runtime.
  weft::Executor cpuModel;
  std::string cpuSignature = kSignature;
  cpuSignature.replace(cpuSignature.find("\"cuda\""), 6, "\"cpu\"");
  status = cpuModel.init(cpuSignature, modelRun);
  expect(!status.ok() &&
             status.message.find("--target cpu") != std::string::npos,
         "a cpu model is refused: '" + status.message + "'");

  std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
