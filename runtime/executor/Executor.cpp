//===- Executor.cpp - Runs a compiled model on .npy inputs ----------------===//

#include "weft/runtime/Executor.h"

#include "weft/runtime/Comm.h"
#include "weft/runtime/Diagnostics.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/MeshIndex.h"
#include "weft/runtime/Npy.h"
#include "weft/runtime/Safetensors.h"
#include "weft/runtime/Sha256.h"

#include "RankStart.h"
#include "Trace.h"
#include "Trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace weft {

bool splitOptionValue(const std::string &arg, std::string &flag,
                      std::string &value) {
  size_t eq = arg.find('=');
  bool inlineValue = eq != std::string::npos && arg.compare(0, 2, "--") == 0;
  flag = inlineValue ? arg.substr(0, eq) : arg;
  value = inlineValue ? arg.substr(eq + 1) : std::string();
  return inlineValue;
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

std::string runUsage(const std::string &prog) {
  return "usage: " + prog +
         " [--bundle DIR] --input NAME=FILE.npy ... --output-dir DIR "
         "[--repeat N] [--warmup N] [--quiet]";
}

bool parseInt64(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || !end || *end != '\0')
    return false;
  out = v;
  return true;
}

Status parseRunOptions(int argc, char *const *argv, RunOptions &out) {
  bool haveOutputDir = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    if (arg == "--quiet" || arg == "-q") {
      out.quiet = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-')
      return Status::badUsage("unexpected argument '" + arg + "'");
    // Options with a value: "--opt VALUE" or "--opt=VALUE".
    std::string flag, value;
    bool inlineValue = splitOptionValue(arg, flag, value);
    if (flag != "--bundle" && flag != "--input" && flag != "--output-dir" &&
        flag != "--repeat" && flag != "--warmup")
      return Status::badUsage("unknown option '" + arg + "'");
    if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::badUsage("option '" + flag + "' needs a value");
      value = argv[++i];
    }
    if (flag == "--bundle") {
      if (value.empty())
        return Status::badUsage("--bundle needs a directory");
      out.bundleDir = value;
    } else if (flag == "--output-dir") {
      if (value.empty())
        return Status::badUsage("--output-dir needs a directory");
      out.outputDir = value;
      haveOutputDir = true;
    } else if (flag == "--input") {
      size_t sep = value.find('=');
      if (sep == std::string::npos || sep == 0 || sep + 1 == value.size())
        return Status::badUsage("--input expects NAME=FILE.npy, got '" + value +
                                "'");
      out.inputs.emplace_back(value.substr(0, sep), value.substr(sep + 1));
    } else if (flag == "--repeat") {
      if (!parseInt64(value, out.repeat) || out.repeat < 1)
        return Status::badUsage("--repeat expects a positive integer, got '" +
                                value + "'");
      out.timed = true;
    } else { // --warmup
      if (!parseInt64(value, out.warmup) || out.warmup < 0)
        return Status::badUsage(
            "--warmup expects a non-negative integer, got '" + value + "'");
    }
  }
  if (!out.help && !haveOutputDir && !out.timed)
    return Status::badUsage("--output-dir is required");
  return Status::success();
}

Status currentRank(int64_t &rank) {
  rank = 0;
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "RANK", "SLURM_PROCID"}) {
    const char *value = std::getenv(var);
    if (!value || !*value)
      continue;
    if (!parseInt64(value, rank) || rank < 0)
      return Status::badInput(std::string("invalid rank in ") + var + "='" +
                              value + "'");
    return Status::success();
  }
  return Status::success();
}

std::string paramsFileName(int64_t rank) {
  return "params.rank" + std::to_string(rank) + ".safetensors";
}

std::string outputFileName(const std::string &name) {
  std::string file = name;
  for (char &c : file) {
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!keep)
      c = '_';
  }
  // "." and ".." would not name a file inside the output directory.
  if (file == "." || file == "..")
    file = std::string(file.size(), '_');
  return file + ".npy";
}

//===----------------------------------------------------------------------===//
// Split tensors ("shard")
//===----------------------------------------------------------------------===//

/// The whole tensor of which `spec` is one of `parts` blocks.
static std::vector<int64_t> wholeShape(const TensorSpec &spec, int64_t parts) {
  std::vector<int64_t> shape = spec.shape;
  shape[spec.shardDim] *= parts;
  return shape;
}

InputBlock inputBlockOf(const TensorSpec &spec) {
  InputBlock block;
  block.whole = spec.shape;
  if (spec.shardDim < 0)
    return block;
  const int64_t count = static_cast<int64_t>(spec.shardAxes.size());
  block.parts = comm::groupSize(spec.shardAxes.data(), count);
  block.index = comm::groupIndex(spec.shardAxes.data(), count);
  block.whole = wholeShape(spec, block.parts);
  if (spec.sequenceDim == 1) {
    const int64_t seqCount = static_cast<int64_t>(spec.sequenceAxes.size());
    block.sequenceParts = comm::groupSize(spec.sequenceAxes.data(), seqCount);
    block.sequenceIndex = comm::groupIndex(spec.sequenceAxes.data(), seqCount);
    block.whole[1] *= block.sequenceParts;
  }
  return block;
}

/// Copies block `index` between `whole` and `local` (toLocal: whole ->
/// local). The split dim is viewed as [shardOuter, rest] and every outer
/// chunk gives its part, so shardOuter 1 is a plain block.
static void copyBlock(const TensorSpec &spec, int64_t parts, int64_t index,
                      void *whole, void *local, bool toLocal) {
  const int64_t dim = spec.shardDim, o = spec.shardOuter;
  int64_t chunks = o, inner = weftDTypeSize(spec.dtype);
  for (int64_t d = 0; d < dim; ++d)
    chunks *= spec.shape[d];
  for (size_t d = dim + 1; d < spec.shape.size(); ++d)
    inner *= spec.shape[d];
  const int64_t part = spec.shape[dim] / o, full = part * parts;
  uint8_t *w = static_cast<uint8_t *>(whole);
  uint8_t *l = static_cast<uint8_t *>(local);
  for (int64_t q = 0; q < chunks; ++q) {
    uint8_t *wp = w + (q * full + index * part) * inner;
    uint8_t *lp = l + q * part * inner;
    if (toLocal)
      std::memcpy(lp, wp, static_cast<size_t>(part * inner));
    else
      std::memcpy(wp, lp, static_cast<size_t>(part * inner));
  }
}

/// Copies this rank's block of an input split along its rows (dim 0, block
/// `row`) and its sequence (dim 1, block `column` of
/// `columnParts`) out of the whole tensor.
static void copyRowsAndSequence(const TensorSpec &spec, int64_t row,
                                int64_t columnParts, int64_t column,
                                const void *whole, void *local) {
  int64_t inner = weftDTypeSize(spec.dtype);
  for (size_t d = 2; d < spec.shape.size(); ++d)
    inner *= spec.shape[d];
  const int64_t rows = spec.shape[0], part = spec.shape[1] * inner;
  const uint8_t *w = static_cast<const uint8_t *>(whole);
  uint8_t *l = static_cast<uint8_t *>(local);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(l + r * part,
                w + ((row * rows + r) * columnParts + column) * part,
                static_cast<size_t>(part));
}

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

Status Executor::init(std::string_view signatureJson, WeftModelRunFn run) {
  // Before anything else: a cuda bundle on a machine without a usable GPU
  // stops here (exit code 1, with the reason).
  DeviceBackend &backend = deviceBackend();
  backend.requireDevice();
  device_ = backend.isHost() ? nullptr : &backend;
  std::string error;
  if (!parseModelSignature(signatureJson, sig_, error))
    return Status::failure(error);
  if (sig_.target != backend.target())
    return Status::failure(
        std::string("the model was compiled for --target ") + sig_.target +
        " but linked with the " + backend.target() + " runtime (" +
        (backend.isHost() ? "libweft_runtime" : "libweft_runtime_cuda") +
        "): relink it with 'weft relink BUNDLE' or compile it again");
  run_ = run;
  params_.clear();
  params_.resize(sig_.params.size());
  inputs_.clear();
  inputs_.resize(sig_.inputs.size());
  inputSet_.assign(sig_.inputs.size(), false);
  outputs_.clear();
  outputs_.resize(sig_.outputs.size());
  // Two outputs must not land in the same file.
  std::unordered_map<std::string, std::string> files;
  for (const TensorSpec &out : sig_.outputs) {
    std::string file = outputFileName(out.name);
    auto inserted = files.emplace(file, out.name);
    if (!inserted.second)
      return Status::failure("outputs '" + inserted.first->second + "' and '" +
                             out.name + "' would both be written to " + file);
  }
  return Status::success();
}

static std::string listNames(const std::vector<TensorSpec> &specs) {
  std::string s;
  for (const TensorSpec &spec : specs) {
    if (!s.empty())
      s += ", ";
    s += spec.name;
  }
  return s.empty() ? "none" : s;
}

Status Executor::loadParams(const std::string &path) {
  if (sig_.params.empty())
    return Status::success();
  SafetensorsReader reader;
  std::string error;
  if (!reader.open(path, error)) {
    std::string needed = "'" + sig_.params[0].name + "'";
    if (sig_.params.size() > 1)
      needed += " and " + std::to_string(sig_.params.size() - 1) + " more";
    return Status::badInput("cannot read parameters: " + error +
                            " (needed for " + needed + ")");
  }
  const int64_t rank = comm::active() ? comm::rank() : 0;
  for (size_t i = 0; i < sig_.params.size(); ++i) {
    const TensorSpec &spec = sig_.params[i];
    if (!paramHeldBy(sig_, spec, rank))
      continue; // another pipeline stage's
    const SafetensorsEntry *entry = reader.find(spec.name);
    if (!entry)
      return Status::badInput(path + ": parameter '" + spec.name +
                              "' is missing (expected " +
                              formatTensorType(spec.dtype, spec.shape) + ")");
    if (entry->dtype != spec.dtype || entry->shape != spec.shape)
      return Status::badInput(
          path + ": parameter '" + spec.name + "': expected " +
          formatTensorType(spec.dtype, spec.shape) + ", got " +
          formatTensorType(entry->dtype, entry->shape));
    if (!reader.readTensor(*entry, params_[i], error))
      return Status::badInput(error);
  }
  return Status::success();
}

Status Executor::setInput(size_t index, HostTensor tensor) {
  const TensorSpec &spec = sig_.inputs[index];
  if (tensor.dtype != spec.dtype || tensor.shape != spec.shape)
    return Status::badInput("input '" + spec.name + "': expected " +
                            formatTensorType(spec.dtype, spec.shape) +
                            ", got " +
                            formatTensorType(tensor.dtype, tensor.shape));
  inputs_[index] = std::move(tensor);
  inputSet_[index] = true;
  return Status::success();
}

Status Executor::loadInputs(
    const std::vector<std::pair<std::string, std::string>> &inputs) {
  // Names first: unknown, duplicate and missing inputs are reported before
  // any file is read.
  std::vector<int> fileOf(sig_.inputs.size(), -1);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string &name = inputs[k].first;
    size_t index = sig_.inputs.size();
    for (size_t i = 0; i < sig_.inputs.size(); ++i)
      if (sig_.inputs[i].name == name)
        index = i;
    if (index == sig_.inputs.size())
      return Status::badInput(
          "unknown input '" + name + "' (in " + inputs[k].second +
          "); the model's inputs are: " + listNames(sig_.inputs));
    if (fileOf[index] >= 0)
      return Status::badInput("input '" + name + "' is given twice (" +
                              inputs[fileOf[index]].second + " and " +
                              inputs[k].second + ")");
    fileOf[index] = static_cast<int>(k);
  }
  for (size_t i = 0; i < sig_.inputs.size(); ++i) {
    const TensorSpec &spec = sig_.inputs[i];
    if (fileOf[i] < 0)
      return Status::badInput("missing input '" + spec.name + "' (expected " +
                              formatTensorType(spec.dtype, spec.shape) +
                              "); pass --input " + spec.name + "=FILE.npy");
  }
  for (size_t i = 0; i < sig_.inputs.size(); ++i) {
    const TensorSpec &spec = sig_.inputs[i];
    const std::string &file = inputs[fileOf[i]].second;
    HostTensor tensor;
    std::string error;
    if (!readNpy(file, tensor, error, spec.dtype))
      return Status::badInput("input '" + spec.name + "': " + error);
    if (spec.shardDim < 0) {
      if (tensor.dtype != spec.dtype || tensor.shape != spec.shape)
        return Status::badInput(
            "input '" + spec.name + "' (in " + file + "): expected " +
            formatTensorType(spec.dtype, spec.shape) + ", got " +
            formatTensorType(tensor.dtype, tensor.shape));
      inputs_[i] = std::move(tensor);
      inputSet_[i] = true;
      continue;
    }
    // A split input: the file holds the whole tensor, this rank its block.
    const InputBlock block = inputBlockOf(spec);
    if (tensor.dtype != spec.dtype || tensor.shape != block.whole)
      return Status::badInput(
          "input '" + spec.name + "' (in " + file + "): expected " +
          formatTensorType(spec.dtype, block.whole) +
          " (the whole input; each of " +
          std::to_string(block.parts * block.sequenceParts) +
          " ranks takes its block along dim " + std::to_string(spec.shardDim) +
          (block.sequenceParts > 1 ? " and dim 1" : "") + "), got " +
          formatTensorType(tensor.dtype, tensor.shape));
    HostTensor &local = inputs_[i];
    local.dtype = spec.dtype;
    local.shape = spec.shape;
    if (!local.data.allocate(spec.byteSize, AlignedBuffer::kAlignment,
                             /*zero=*/false))
      return Status::failure("out of memory allocating input '" + spec.name +
                             "'");
    if (block.sequenceParts > 1)
      copyRowsAndSequence(spec, block.index, block.sequenceParts,
                          block.sequenceIndex, tensor.data.data(),
                          local.data.data());
    else
      copyBlock(spec, block.parts, block.index, tensor.data.data(),
                local.data.data(), /*toLocal=*/true);
    inputSet_[i] = true;
  }
  return Status::success();
}

Status Executor::allocateInputs() {
  for (size_t i = 0; i < sig_.inputs.size(); ++i) {
    const TensorSpec &spec = sig_.inputs[i];
    inputs_[i].dtype = spec.dtype;
    inputs_[i].shape = spec.shape;
    if (!inputs_[i].data.allocate(spec.byteSize, AlignedBuffer::kAlignment,
                                  /*zero=*/true))
      return Status::failure("out of memory allocating input '" + spec.name +
                             "' (" + std::to_string(spec.byteSize) + " bytes)");
    inputSet_[i] = true;
  }
  return Status::success();
}

Status Executor::prepare() {
  for (size_t i = 0; i < sig_.inputs.size(); ++i)
    if (!inputSet_[i])
      return Status::badInput("missing input '" + sig_.inputs[i].name + "'");
  const int64_t rank = comm::active() ? comm::rank() : 0;
  for (size_t i = 0; i < sig_.params.size(); ++i)
    if (!params_[i].data.data() && paramHeldBy(sig_, sig_.params[i], rank))
      return Status::badInput("parameter '" + sig_.params[i].name +
                              "' was not loaded");
  // A pipeline stage's ranks need only that stage's part of the arena.
  uint64_t planned = sig_.arenaBytes;
  int64_t stage = sig_.pipelineAxis < 0
                      ? -1
                      : meshGroupIndex(comm::active() ? comm::rank() : 0,
                                       sig_.meshShape, &sig_.pipelineAxis, 1);
  if (stage >= 0 && static_cast<size_t>(stage) < sig_.stageArenaBytes.size())
    planned = sig_.stageArenaBytes[static_cast<size_t>(stage)];
  uint64_t arenaBytes = std::max<uint64_t>(planned, 64);
  arenaBytes_ = arenaBytes;
  if (!device_ &&
      !arena_.allocate(arenaBytes, sig_.arenaAlignment, /*zero=*/true))
    return Status::failure("out of memory allocating the " +
                           std::to_string(arenaBytes) + "-byte arena");
  for (size_t i = 0; i < sig_.outputs.size(); ++i) {
    const TensorSpec &spec = sig_.outputs[i];
    outputs_[i].dtype = spec.dtype;
    outputs_[i].shape = spec.shape;
    if (!outputs_[i].data.allocate(spec.byteSize, AlignedBuffer::kAlignment,
                                   /*zero=*/true))
      return Status::failure("out of memory allocating output '" + spec.name +
                             "' (" + std::to_string(spec.byteSize) + " bytes)");
  }
  paramPtrs_.clear();
  inputPtrs_.clear();
  outputPtrs_.clear();
  if (device_)
    return prepareDevice(arenaBytes);
  arenaPtr_ = arena_.data();
  for (HostTensor &t : params_)
    paramPtrs_.push_back(t.data.data());
  for (HostTensor &t : inputs_)
    inputPtrs_.push_back(t.data.data());
  for (HostTensor &t : outputs_)
    outputPtrs_.push_back(t.data.data());
  return Status::success();
}

Status Executor::prepareDevice(uint64_t arenaBytes) {
  DeviceBackend &device = *device_;
  using Kind = DeviceBuffer::Kind;
  auto outOfMemory = [&](const std::string &what, uint64_t bytes) {
    return Status::failure(std::string("out of ") + device.target() +
                           " device memory allocating " + what + " (" +
                           std::to_string(bytes) + " bytes)");
  };
  if (!deviceArena_.allocate(device, Kind::Device, arenaBytes,
                             sig_.arenaAlignment, /*zero=*/true))
    return outOfMemory("the arena", arenaBytes);
  arenaPtr_ = deviceArena_.data();
  // The params buffers this rank holds, uploaded once: from here on the
  // device has the model's state (fetchParams() brings it back).
  deviceParams_.clear();
  deviceParams_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    HostTensor &host = params_[i];
    if (!host.data.data()) { // another pipeline stage's
      paramPtrs_.push_back(nullptr);
      continue;
    }
    if (!deviceParams_[i].allocate(device, Kind::Device, host.byteSize()))
      return outOfMemory("parameter '" + sig_.params[i].name + "'",
                         host.byteSize());
    device.upload(deviceParams_[i].data(), host.data.data(), host.byteSize());
    paramPtrs_.push_back(deviceParams_[i].data());
  }
  // Inputs and outputs: device buffers and page-locked staging.
  auto allocateIo = [&](std::vector<HostTensor> &host,
                        const std::vector<TensorSpec> &specs,
                        std::vector<DeviceBuffer> &onDevice,
                        std::vector<DeviceBuffer> &staged,
                        std::vector<void *> &ptrs) {
    onDevice.clear();
    onDevice.resize(host.size());
    staged.clear();
    staged.resize(host.size());
    for (size_t i = 0; i < host.size(); ++i) {
      uint64_t bytes = host[i].byteSize();
      if (!onDevice[i].allocate(device, Kind::Device, bytes, 64, /*zero=*/true))
        return outOfMemory("'" + specs[i].name + "'", bytes);
      if (!staged[i].allocate(device, Kind::Pinned, bytes))
        return Status::failure("out of page-locked host memory staging '" +
                               specs[i].name + "' (" + std::to_string(bytes) +
                               " bytes)");
      ptrs.push_back(onDevice[i].data());
    }
    return Status::success();
  };
  Status status = allocateIo(inputs_, sig_.inputs, deviceInputs_, stagedInputs_,
                             inputPtrs_);
  if (status.ok())
    status = allocateIo(outputs_, sig_.outputs, deviceOutputs_, stagedOutputs_,
                        outputPtrs_);
  device.synchronize(); // the uploads read the host tensors
  paramsChangedOnDevice_ = false;
  return status;
}

void Executor::run() {
  if (device_) {
    // Each input through its page-locked buffer (free again: the last run
    // ended with a synchronize()).
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const uint64_t bytes = inputs_[i].byteSize();
      std::memcpy(stagedInputs_[i].data(), inputs_[i].data.data(),
                  static_cast<size_t>(bytes));
      device_->upload(deviceInputs_[i].data(), stagedInputs_[i].data(), bytes);
    }
  }
  if (device_) {
    // The same buffers and entry make the same work: a CUDA graph's key.
    uint64_t key = 1469598103934665603ull;
    auto mix = [&key](const void *p) {
      key = (key ^ reinterpret_cast<uintptr_t>(p)) * 1099511628211ull;
    };
    mix(reinterpret_cast<const void *>(run_));
    mix(arenaPtr_);
    for (const std::vector<void *> *ptrs :
         {&paramPtrs_, &inputPtrs_, &outputPtrs_})
      for (void *p : *ptrs)
        mix(p);
    // Traces wait after every launch; collectives and pipelines are left
    // to run eagerly (not yet recorded and replayed on real ranks).
    const bool replayable = comm::context().size() == 1 && !trace::enabled();
    device_->runModel(
        [](void *self) {
          Executor &e = *static_cast<Executor *>(self);
          e.run_(e.arenaPtr_, e.paramPtrs_.data(), e.inputPtrs_.data(),
                 e.outputPtrs_.data());
        },
        this, key, replayable);
  } else {
    run_(arenaPtr_, paramPtrs_.data(), inputPtrs_.data(), outputPtrs_.data());
  }
  // A started collective must finish inside the call that started it.
  std::string pending = comm::context().pendingSlots();
  if (!pending.empty())
    fatal(kExitFailure,
          "weft_model_run returned with collectives started and not waited "
          "for (comm_wait) on slots %s",
          pending.c_str());
  if (!device_)
    return;
  // The outputs (a training step's loss) after every run.
  for (size_t i = 0; i < outputs_.size(); ++i)
    device_->download(stagedOutputs_[i].data(), deviceOutputs_[i].data(),
                      outputs_[i].byteSize());
  device_->synchronize();
  for (size_t i = 0; i < outputs_.size(); ++i)
    std::memcpy(outputs_[i].data.data(), stagedOutputs_[i].data(),
                static_cast<size_t>(outputs_[i].byteSize()));
  device_->checkErrors();
  paramsChangedOnDevice_ = true;
}

void Executor::fetchParams() {
  if (!device_ || !paramsChangedOnDevice_)
    return;
  for (size_t i = 0; i < params_.size(); ++i)
    if (deviceParams_[i].data())
      device_->download(params_[i].data.data(), deviceParams_[i].data(),
                        params_[i].byteSize());
  device_->synchronize();
  paramsChangedOnDevice_ = false;
}

void Executor::startDevice() {
  if (!device_ || deviceStarted_)
    return;
  device_->startComms();
  deviceStarted_ = true;
}

void Executor::finishDevice() {
  if (!deviceStarted_)
    return;
  device_->synchronize();
  device_->finishComms();
  deviceStarted_ = false;
}

Status Executor::writeOutputs(const std::string &dir) const {
  const bool writer = comm::rank() == 0;
  std::string error;
  if (writer && !makeDirectories(dir, error))
    return Status::badInput("output directory: " + error);
  for (size_t i = 0; i < sig_.outputs.size(); ++i) {
    const TensorSpec &spec = sig_.outputs[i];
    const HostTensor *out = &outputs_[i];
    HostTensor whole;
    if (spec.shardDim >= 0 && comm::active()) {
      // Every rank's block (collective), put together on rank 0 from the
      // members of its group in group-index order.
      std::vector<uint8_t> blocks = comm::allGatherBytes(
          out->data.data(), static_cast<int64_t>(spec.byteSize));
      const int64_t *axes = spec.shardAxes.data();
      const int64_t count = static_cast<int64_t>(spec.shardAxes.size());
      const int64_t parts = comm::groupSize(axes, count);
      std::vector<int64_t> members =
          comm::context().mesh().groupMembers(axes, count);
      whole.dtype = spec.dtype;
      whole.shape = wholeShape(spec, parts);
      if (!whole.data.allocate(spec.byteSize * static_cast<uint64_t>(parts),
                               AlignedBuffer::kAlignment, /*zero=*/false))
        return Status::failure("out of memory gathering output '" + spec.name +
                               "'");
      for (int64_t k = 0; k < parts; ++k)
        copyBlock(spec, parts, k, whole.data.data(),
                  blocks.data() + members[k] * spec.byteSize,
                  /*toLocal=*/false);
      out = &whole;
    }
    if (!writer)
      continue;
    std::string path = joinPath(dir, outputFileName(spec.name));
    if (!writeNpy(path, *out, error))
      return Status::failure("cannot write output '" + spec.name +
                             "': " + error);
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// main()
//===----------------------------------------------------------------------===//

int reportStatus(const Status &status, const std::string &usage) {
  if (status.ok())
    return 0;
  if (status.quiet ||
      (status.sameOnEveryRank && comm::active() && comm::rank() != 0))
    return status.code;
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: %s\n", status.message.c_str());
  if (status.showUsage)
    std::fprintf(stderr, "%s\n", usage.c_str());
  std::fflush(stderr);
  return status.code;
}

Status agreeAcrossRanks(Status mine) {
  if (!comm::active())
    return mine;
  // Every rank's code and message digest: a failure every rank has alike
  // (bad data, say) is reported once, by rank 0.
  struct Record {
    int64_t code = 0;
    char digest[64] = {};
  } record;
  record.code = mine.code;
  if (!mine.ok()) {
    std::string digest = sha256Hex(mine.message);
    std::memcpy(record.digest, digest.data(), sizeof record.digest);
  }
  std::vector<uint8_t> all = comm::allGatherBytes(&record, sizeof record);
  std::vector<Record> records(static_cast<size_t>(comm::size()));
  std::memcpy(records.data(), all.data(), all.size());
  int64_t worst = 0;
  bool alike = true;
  for (const Record &r : records) {
    worst = std::max(worst, r.code);
    alike &= r.code == record.code &&
             std::memcmp(r.digest, record.digest, sizeof r.digest) == 0;
  }
  if (mine.ok() && worst != 0) {
    mine.code = static_cast<int>(worst);
    mine.quiet = true;
  } else if (!mine.ok()) {
    // Rank 0 alone reports a failure every rank has. One marked so
    // (everyRank()) that only some ranks have is reported by each of them:
    // else rank 0 (fine) and they would all exit without a word.
    mine.sameOnEveryRank = alike;
  }
  return mine;
}

static int report(const Status &status, const std::string &prog) {
  return reportStatus(status, runUsage(prog));
}

int executorMain(int argc, char **argv, const char *signatureJson,
                 WeftModelRunFn run) {
  // `weft export` reads the signature this way: it identifies the model a
  // checkpoint belongs to and names the roles of its state.
  if (argc == 2 && std::strcmp(argv[1], "--print-signature") == 0) {
    std::printf("%s\n", signatureJson ? signatureJson : "");
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--train") == 0)
      return trainMain(argc, argv, signatureJson, run);
  std::string prog = argc > 0 ? fileName(argv[0]) : "model";
  RunOptions options;
  Status status = parseRunOptions(argc > 0 ? argc - 1 : 0,
                                  argc > 0 ? argv + 1 : argv, options);
  if (!status.ok())
    return report(status, prog);
  if (options.help) {
    std::printf("%s\n", runUsage(prog).c_str());
    return 0;
  }

  Executor executor;
  if (!(status = executor.init(signatureJson ? signatureJson : "", run)).ok())
    return report(status, prog);
  if (executor.signature().isTraining())
    return report(
        Status::badInput("this bundle was compiled for training (weftc "
                         "compile --train): run it with 'weft train BUNDLE "
                         "--data NAME=FILE.npy ... --steps K', not --input"),
        prog);

  std::string bundle = options.bundleDir;
  if (bundle.empty()) {
    bundle = executableDirectory();
    if (bundle.empty())
      return report(Status::failure("cannot find the executable's directory; "
                                    "pass --bundle DIR"),
                    prog);
  } else if (!isDirectory(bundle)) {
    return report(
        Status::badInput("bundle directory '" + bundle + "' does not exist"),
        prog);
  }
  int64_t rank = 0;
  status = startRanks(executor.signature(), bundle, rank);
  if (status.ok())
    status = executor.loadParams(joinPath(bundle, paramsFileName(rank)));
  if (status.ok())
    status = executor.loadInputs(options.inputs);
  // Create the output directory before running, so a bad one fails fast.
  if (status.ok() && !options.outputDir.empty() && comm::rank() == 0) {
    std::string error;
    if (!makeDirectories(options.outputDir, error))
      status = Status::badInput("output directory: " + error);
  }
  if (status.ok())
    status = executor.prepare();
  // Ranks fail together, before any of them runs.
  status = agreeAcrossRanks(status);
  const bool leader = comm::rank() == 0;
  if (!status.ok()) {
    int code = report(status, prog);
    comm::finalize();
    return code;
  }
  executor.startDevice();

  for (int64_t i = 0; i < options.warmup; ++i)
    executor.run();
  std::vector<double> times;
  times.reserve(static_cast<size_t>(options.repeat));
  for (int64_t i = 0; i < options.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    executor.run();
    auto end = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(end - start).count());
  }

  if (!options.outputDir.empty())
    status = executor.writeOutputs(options.outputDir);
  executor.finishDevice();
  int code = report(status, prog);
  comm::finalize();
  if (code != 0)
    return code;

  if (options.timed && !options.quiet && leader) {
    double sum = 0;
    for (double t : times)
      sum += t;
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    double median =
        n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    JsonValue line = JsonValue::object();
    line.set("iterations", JsonValue::integer(options.repeat));
    line.set("mean_s", JsonValue::number(sum / static_cast<double>(n)));
    line.set("median_s", JsonValue::number(median));
    line.set("min_s", JsonValue::number(sorted.front()));
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

} // namespace weft
