//===- Executor.h - Runs a compiled model on .npy inputs ------------------===//
//
// The bundle executable's main() is
//
//   int main(int argc, char **argv) {
//     return weft::executorMain(argc, argv, weft_model_signature,
//                               weft_model_run);
//   }
//
// and its command line is
//
//   model [--bundle DIR] --input NAME=FILE.npy ... --output-dir DIR
//         [--repeat N] [--warmup W] [--quiet]
//   model [--bundle DIR] --train --data NAME=FILE.npy ... --steps K ...
//         (training bundles; see Trainer.h)
//   model --print-signature
//         (prints weft_model_signature and a newline on stdout, and exits:
//         `weft export` matches checkpoints to the bundle with it)
//
// Parameters come from DIR/params.rank<R>.safetensors (R: the MPI rank of
// a multi-rank bundle; for a single-rank one OMPI_COMM_WORLD_RANK, RANK or
// SLURM_PROCID, else 0; DIR defaults to the executable's directory);
// outputs go to OUTPUT_DIR/<name>.npy. A multi-rank bundle ("world_size" >
// 1) starts its ranks first (RankStart.h: under mpirun or srun, every rank
// running the same program); every rank reads the whole input files and
// keeps its block of split inputs, and rank 0 writes the outputs and the
// timing line. With
// --repeat, W untimed and N timed runs are made and one JSON line
// {"iterations":N,"mean_s":...,"median_s":...,"min_s":...} is printed
// (--quiet drops it; --output-dir is optional then). Exit codes: 0 ok, 2 bad
// usage or input, 1 anything else.
//
// Everything is also available piecewise (the Executor class) so tests can
// drive it without a compiled model.
//
// A --target cuda bundle links libweft_runtime_cuda, whose DeviceBackend
// (Device.h) puts the model's buffers on this rank's GPU: the Executor then
// keeps the tensors below as host copies for I/O, uploads the params once
// (prepare()) and the inputs before every run(), and downloads the outputs
// after every run() and the params only when fetchParams() asks. A cuda
// bundle on a machine without a usable GPU fails in init(), before it
// reads anything (exit code 1).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_H
#define WEFT_RUNTIME_EXECUTOR_H

#include "weft/runtime/Device.h"
#include "weft/runtime/ModelABI.h"
#include "weft/runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft {

/// Splits "--opt=VALUE" into flag and value and returns true; otherwise sets
/// flag to `arg` and returns false (the value, if any, is the next argument).
bool splitOptionValue(const std::string &arg, std::string &flag,
                      std::string &value);

/// The outcome of a step: exit code 0 (ok), 2 (bad usage or input) or 1.
struct Status {
  int code = 0;
  std::string message;
  bool showUsage = false; ///< print the usage line after the message
  /// Several ranks: every rank has this very status (rank 0 reports it).
  bool sameOnEveryRank = false;
  /// Another rank failed and reports why; this one only exits with `code`.
  bool quiet = false;

  static Status success() { return Status(); }
  static Status badInput(std::string message) {
    return Status{2, std::move(message), false};
  }
  static Status badUsage(std::string message) {
    return Status{2, std::move(message), true};
  }
  static Status failure(std::string message) {
    return Status{1, std::move(message), false};
  }
  bool ok() const { return code == 0; }
  Status &everyRank() {
    sameOnEveryRank = true;
    return *this;
  }
};

/// What a "params" entry of a training signature holds ("role").
enum class StateRole { None, Param, OptimizerState, Step };

/// "param", "optimizer_state", "step"; "" for None.
const char *stateRoleName(StateRole role);

struct TensorSpec {
  std::string name;
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  uint64_t byteSize = 0;
  StateRole role = StateRole::None; ///< params of training signatures
  bool trainable = false;           ///< role Param: "trainable"
  int64_t batchDim = -1;            ///< inputs: "batch_dim" (-1: none)
  /// "shard": this rank holds block (its index over shardAxes) of dim
  /// shardDim, viewed as [shardOuter, rest] (-1: whole on every rank).
  int64_t shardDim = -1;
  std::vector<int64_t> shardAxes;
  int64_t shardOuter = 1;
  /// Inputs only, "sequence_shard": with data and sequence parallelism an
  /// input's rows are split over dp ("shard", dim 0) and each row's
  /// sequence over tp (dim 1): this rank's block of that dim over these
  /// axes (-1: none).
  int64_t sequenceDim = -1;
  std::vector<int64_t> sequenceAxes;
  /// A pipeline's parameter: the stage whose ranks hold and update it (-1:
  /// every rank's copy is live).
  int64_t stage = -1;
};

/// This rank's block of a split input (TensorSpec::shardDim >= 0): block
/// `index` of `parts` along shardDim and, with "sequence_shard", block
/// `sequenceIndex` of `sequenceParts` along dim 1; `whole` is the whole
/// input's shape. Reads the started ranks' mesh (Comm.h).
struct InputBlock {
  int64_t parts = 1, index = 0;
  int64_t sequenceParts = 1, sequenceIndex = 0;
  std::vector<int64_t> whole;
};
InputBlock inputBlockOf(const TensorSpec &spec);

enum class ModelMode { Inference, Train };

/// One kernel launch of the compiled step ("launches", in program order):
/// what traces label it with.
struct LaunchSpec {
  std::string kernel;
  int64_t stage = -1;      ///< pipeline stage (-1: every rank runs it)
  int64_t microbatch = -1; ///< -1: not a microbatch's work
  int64_t chunk = -1;      ///< interleaved pipelines: the stage's chunk
  bool backward = false;
  bool weightGrad = false; ///< a weight gradient's work (zero-bubble "W")
  /// "tensors": its operands' and results' types ("16x64x8x8xf32").
  std::vector<std::string> tensors;
};

struct ModelSignature {
  int64_t formatVersion = 0;
  /// "target": the device the model's buffers live on ("cpu" when absent).
  std::string target = "cpu";
  uint64_t arenaBytes = 0;
  uint64_t arenaAlignment = 64;
  ModelMode mode = ModelMode::Inference; ///< "mode" (absent: inference)
  int64_t worldSize = 1;                 ///< "world_size"
  std::vector<int64_t> meshShape;        ///< "mesh"."shape"
  int64_t pipelineAxis = -1;             ///< "pipeline_axis" (-1: none)
  /// "stage_arena_bytes": the arena a pipeline stage's ranks allocate.
  std::vector<uint64_t> stageArenaBytes;
  std::vector<std::string> meshAxes; ///< "mesh"."axes" (may be empty)
  /// "model_sha256": the source model's SHA-256, whatever the plan (empty
  /// when absent).
  std::string modelSha256;
  std::vector<TensorSpec> params, inputs, outputs;
  std::vector<LaunchSpec> launches; ///< "launches" (may be absent)

  bool isTraining() const { return mode == ModelMode::Train; }
  /// Training signatures: this rank's batch, shape[0] of every input.
  int64_t localBatch() const {
    return inputs.empty() || inputs[0].shape.empty() ? 0 : inputs[0].shape[0];
  }
  /// Training signatures: the global batch (the local one times the ranks
  /// it is split over).
  int64_t globalBatch() const;
};

/// Whether `rank` holds parameter slot `spec`: in a pipeline only the ranks
/// of its stage do (they load, update and checkpoint it); otherwise all.
bool paramHeldBy(const ModelSignature &sig, const TensorSpec &spec,
                 int64_t rank);

/// Parses and validates weft_model_signature (see ModelABI.h). A training
/// signature ("mode": "train") must also give every params entry a role,
/// every input "batch_dim": 0 and the same non-zero dim 0, and have a float
/// scalar as its first output (the loss).
bool parseModelSignature(std::string_view json, ModelSignature &out,
                         std::string &error);

struct RunOptions {
  std::string bundleDir; ///< empty: the executable's directory
  std::vector<std::pair<std::string, std::string>> inputs; ///< name, file
  std::string outputDir;
  int64_t repeat = 1;
  int64_t warmup = 0;
  bool timed = false; ///< --repeat given
  bool quiet = false;
  bool help = false;
};

/// Parses the executable's arguments (argv[0] excluded: pass argc-1,
/// argv+1).
Status parseRunOptions(int argc, char *const *argv, RunOptions &out);

/// The usage line for program `prog`.
std::string runUsage(const std::string &prog);

/// This process's rank: OMPI_COMM_WORLD_RANK, RANK or SLURM_PROCID (the first
/// one set), else 0.
Status currentRank(int64_t &rank);

/// "params.rank<R>.safetensors".
std::string paramsFileName(int64_t rank);

/// The file name an output is written to: `name` with characters outside
/// [A-Za-z0-9._-] replaced by '_', plus ".npy".
std::string outputFileName(const std::string &name);

class Executor {
public:
  /// First makes sure the runtime's device is usable (a cuda runtime on a
  /// machine without a GPU exits here with code 1), then parses the
  /// signature (a bad one, or one compiled for another target than the
  /// runtime's, is a failure, exit code 1).
  Status init(std::string_view signatureJson, WeftModelRunFn run);
  const ModelSignature &signature() const { return sig_; }
  /// The arena this rank allocated (after prepare()): its pipeline stage's
  /// part of the plan, else all of it.
  uint64_t arenaBytes() const { return arenaBytes_; }
  /// Whether the model runs on a device (its buffers are device copies of
  /// the host tensors here; see above).
  bool onDevice() const { return device_ != nullptr; }

  /// Reads every parameter from a safetensors file, checking presence,
  /// dtype and shape. A model without parameters needs no file.
  Status loadParams(const std::string &path);
  /// Reads the inputs from (name, .npy file) pairs: each signature input
  /// exactly once, with its dtype and shape. The file of a split input
  /// ("shard") holds the whole tensor; this rank keeps its block.
  Status
  loadInputs(const std::vector<std::pair<std::string, std::string>> &inputs);
  /// Sets input `index` directly (dtype and shape are checked).
  Status setInput(size_t index, HostTensor tensor);
  /// Allocates the arena and the outputs. On a device: allocates the
  /// device buffers and uploads the params (load or resume them first).
  Status prepare();
  /// Runs the model once (after prepare()). On a device: uploads the inputs
  /// first, then downloads the outputs and checks the kernels' errors.
  void run();
  /// On a device: downloads the params buffers (parameters, optimizer
  /// state, step) when run() has updated them since, so param() shows the
  /// model's current state (checkpoints). Nothing on the host.
  void fetchParams();
  /// On a device, collective over the ranks: starts the device's
  /// communicators once every rank has prepared (startDevice) and ends them
  /// before the ranks finish (finishDevice). Nothing on the host.
  void startDevice();
  void finishDevice();
  /// Writes every output to `dir`/outputFileName(name), creating `dir`.
  /// Several ranks: collective; rank 0 writes, a split output ("shard")
  /// put together from every rank's block.
  Status writeOutputs(const std::string &dir) const;

  const HostTensor &output(size_t index) const { return outputs_[index]; }
  const HostTensor &input(size_t index) const { return inputs_[index]; }
  const HostTensor &param(size_t index) const { return params_[index]; }

  /// Training: gives every input a zeroed buffer of its signature type (the
  /// trainer copies each step's rows into it in place).
  Status allocateInputs();
  /// In-place access for training (the buffers must keep their size: the
  /// model is handed their addresses by prepare(); on a device, params
  /// changed after prepare() are not uploaded again).
  HostTensor &mutableInput(size_t index) { return inputs_[index]; }
  HostTensor &mutableParam(size_t index) { return params_[index]; }

private:
  Status prepareDevice(uint64_t arenaBytes);

  ModelSignature sig_;
  WeftModelRunFn run_ = nullptr;
  AlignedBuffer arena_;
  std::vector<HostTensor> params_, inputs_, outputs_;
  std::vector<bool> inputSet_;
  /// What weft_model_run gets: host tensors, or their device copies.
  void *arenaPtr_ = nullptr;
  uint64_t arenaBytes_ = 0;
  std::vector<void *> paramPtrs_, inputPtrs_, outputPtrs_;
  /// A device's buffers (null on the host) and page-locked staging for the
  /// inputs and outputs.
  DeviceBackend *device_ = nullptr;
  DeviceBuffer deviceArena_;
  std::vector<DeviceBuffer> deviceParams_, deviceInputs_, deviceOutputs_;
  std::vector<DeviceBuffer> stagedInputs_, stagedOutputs_;
  bool paramsChangedOnDevice_ = false; ///< since the last fetchParams()
  bool deviceStarted_ = false;
};

/// The whole program: parses the arguments, loads, runs, writes outputs and
/// reports errors ("weft: error: ..." on stderr). Returns the exit code.
/// With --train among the arguments it trains instead (trainMain, Trainer.h);
/// a training bundle refuses inference runs and vice versa (exit code 2).
int executorMain(int argc, char **argv, const char *signatureJson,
                 WeftModelRunFn run);

/// Prints "weft: error: <message>" (and `usage` for a usage error) on stderr
/// unless `status` is ok, quiet, or the same on every rank and this is not
/// rank 0; returns its exit code.
int reportStatus(const Status &status, const std::string &usage);

/// Several ranks: the outcome every rank agrees on. A rank whose own
/// status is ok but another failed gets a quiet failure with the worst
/// exit code. Collective; one rank: `mine`.
Status agreeAcrossRanks(Status mine);

/// Parses a decimal int64 (the whole string).
bool parseInt64(const std::string &text, int64_t &out);

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_H
