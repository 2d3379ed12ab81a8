//===- BundleWriter.cpp - Writes a bundle directory -----------------------===//
#include "tools/weftc/BundleWriter.h"

#include <cstring>

#include "frontends/onnx/OnnxModelLoader.h"
#include "passes/Passes.h"
#include "weft/runtime/MeshIndex.h"
#include "weft/runtime/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace weft;
namespace fs = llvm::sys::fs;

static const char *kManifest = "manifest.json";
static const char *kSourceModel = "source.onnx";

bool BundleWriter::begin(const std::string &finalPathIn, std::string &error) {
  finalPath = finalPathIn;
  while (finalPath.size() > 1 && finalPath.back() == '/')
    finalPath.pop_back();
  if (fs::exists(finalPath)) {
    llvm::SmallString<256> manifest(finalPath);
    llvm::sys::path::append(manifest, kManifest);
    bool isDir = fs::is_directory(finalPath);
    std::error_code ec;
    bool empty = isDir && fs::directory_iterator(finalPath, ec) ==
                              fs::directory_iterator();
    if (!isDir || (!empty && !fs::exists(manifest))) {
      error = "refusing to overwrite '" + finalPath +
              "': it exists and is not a weft bundle";
      return false;
    }
  }
  scratchPath = finalPath + ".partial-" +
                std::to_string(llvm::sys::Process::getProcessId());
  fs::remove_directories(scratchPath);
  if (std::error_code ec = fs::create_directories(scratchPath)) {
    error = "cannot create '" + scratchPath + "': " + ec.message();
    return false;
  }
  return true;
}

std::string BundleWriter::path(const std::string &name) const {
  llvm::SmallString<256> p(scratchPath);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

bool BundleWriter::writeParams(const ProgramSummary &summary,
                               const ParamTable &table, std::string &error) {
  // Per parameter: its data, and its cut when the plan splits it (ZeRO).
  struct Slot {
    const ParamEntry *entry;
    std::vector<int64_t> localShape;
    int64_t dim = -1, outer = 1;
    std::vector<int64_t> axes;
    int64_t stage = -1; // a pipeline's: only its stage's ranks hold it
  };
  std::vector<Slot> slots;
  bool anySplit = false;
  for (mlir::Attribute a : summary.params) {
    auto dict = mlir::cast<mlir::DictionaryAttr>(a);
    std::string name = mlir::cast<mlir::StringAttr>(dict.get("name")).str();
    const ParamEntry *entry = table.lookup(name);
    if (!entry) {
      error = "parameter '" + name + "' has no data";
      return false;
    }
    auto type = mlir::cast<mlir::RankedTensorType>(
        mlir::cast<mlir::TypeAttr>(dict.get("type")).getValue());
    Slot slot{entry, std::vector<int64_t>(type.getShape().begin(),
                                          type.getShape().end())};
    if (auto stage = dict.getAs<mlir::IntegerAttr>("stage")) {
      slot.stage = stage.getInt();
      anySplit = true; // the stages' files differ
    }
    if (auto shard = dict.getAs<mlir::DictionaryAttr>("shard")) {
      slot.dim = shard.getAs<mlir::IntegerAttr>("dim").getInt();
      if (auto outer = shard.getAs<mlir::IntegerAttr>("outer"))
        slot.outer = outer.getInt();
      for (mlir::Attribute axis : shard.getAs<mlir::ArrayAttr>("mesh_axes"))
        slot.axes.push_back(mlir::cast<mlir::IntegerAttr>(axis).getInt());
      // Optimizer state starts as zeros of the local shape already.
      anySplit |= entry->shape != slot.localShape;
    }
    slots.push_back(std::move(slot));
  }
  int64_t ranks = summary.worldSize();
  int64_t pipelineAxis = -1;
  for (auto [i, axis] : llvm::enumerate(summary.meshAxes))
    if (axis == "pp")
      pipelineAxis = static_cast<int64_t>(i);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::string name = "params.rank" + std::to_string(rank) + ".safetensors";
    if (rank > 0 && !anySplit) {
      // Every parameter is whole on every rank: the same bytes, linked
      // (copied where links fail).
      if (fs::create_hard_link(path("params.rank0.safetensors"), path(name)) &&
          fs::copy_file(path("params.rank0.safetensors"), path(name))) {
        error = "cannot write '" + path(name) + "'";
        return false;
      }
      continue;
    }
    std::vector<std::vector<uint8_t>> blocks;
    std::vector<SafetensorsTensorRef> tensors;
    blocks.reserve(slots.size());
    for (const Slot &slot : slots) {
      const ParamEntry *entry = slot.entry;
      if (slot.stage >= 0 && pipelineAxis >= 0 &&
          meshGroupIndex(rank, summary.meshShape, &pipelineAxis, 1) !=
              slot.stage)
        continue; // another pipeline stage's parameter
      if (slot.dim < 0 || entry->shape == slot.localShape) {
        tensors.push_back(
            {entry->name, entry->dtype, entry->shape, entry->data.data()});
        continue;
      }
      // The split dim is [outer, rest]; each outer block gives its part.
      int64_t elem = weftDTypeSize(entry->dtype);
      int64_t outer = slot.outer, inner = elem;
      for (int64_t d = 0; d < slot.dim; ++d)
        outer *= entry->shape[d];
      for (size_t d = slot.dim + 1; d < entry->shape.size(); ++d)
        inner *= entry->shape[d];
      int64_t full = entry->shape[slot.dim] / slot.outer;
      int64_t part = slot.localShape[slot.dim] / slot.outer;
      int64_t start = meshGroupIndex(rank, summary.meshShape, slot.axes.data(),
                                     slot.axes.size()) *
                      part;
      std::vector<uint8_t> block(static_cast<size_t>(outer * part * inner));
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(block.data() + o * part * inner,
                    entry->data.data() + (o * full + start) * inner,
                    static_cast<size_t>(part * inner));
      blocks.push_back(std::move(block));
      tensors.push_back(
          {entry->name, entry->dtype, slot.localShape, blocks.back().data()});
    }
    SafetensorsMetadata metadata;
    metadata.emplace_back("format", "weft");
    metadata.emplace_back("rank", std::to_string(anySplit ? rank : 0));
    if (!writeSafetensors(path(name), tensors, metadata, error))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The source model
//===----------------------------------------------------------------------===//

namespace {
/// Calls `fn(tensor, what)` for every TensorProto of `graph`, its nodes'
/// attributes and its subgraphs.
template <typename Fn>
void forEachTensor(const onnx::GraphProto &graph, Fn &fn);

template <typename Fn>
void forEachTensor(const onnx::SparseTensorProto &sparse, Fn &fn) {
  fn(sparse.values(), "sparse tensor '" + sparse.values().name() + "'");
  fn(sparse.indices(),
     "indices of sparse tensor '" + sparse.values().name() + "'");
}

template <typename Fn> void forEachTensor(const onnx::NodeProto &node, Fn &fn) {
  for (const onnx::AttributeProto &attr : node.attribute()) {
    std::string what = "attribute '" + attr.name() + "' of node '" +
                       node.name() + "' (" + node.op_type() + ")";
    if (attr.has_t())
      fn(attr.t(), what);
    for (const onnx::TensorProto &t : attr.tensors())
      fn(t, what);
    if (attr.has_sparse_tensor())
      forEachTensor(attr.sparse_tensor(), fn);
    for (const onnx::SparseTensorProto &t : attr.sparse_tensors())
      forEachTensor(t, fn);
    if (attr.has_g())
      forEachTensor(attr.g(), fn);
    for (const onnx::GraphProto &g : attr.graphs())
      forEachTensor(g, fn);
  }
}

template <typename Fn>
void forEachTensor(const onnx::GraphProto &graph, Fn &fn) {
  for (const onnx::TensorProto &t : graph.initializer())
    fn(t, "initializer '" + t.name() + "'");
  for (const onnx::SparseTensorProto &t : graph.sparse_initializer())
    forEachTensor(t, fn);
  for (const onnx::NodeProto &node : graph.node())
    forEachTensor(node, fn);
}

template <typename Fn>
void forEachTensor(const onnx::ModelProto &model, Fn fn) {
  forEachTensor(model.graph(), fn);
  for (const onnx::TrainingInfoProto &info : model.training_info()) {
    forEachTensor(info.initialization(), fn);
    forEachTensor(info.algorithm(), fn);
  }
  for (const onnx::FunctionProto &function : model.functions())
    for (const onnx::NodeProto &node : function.node())
      forEachTensor(node, fn);
}

/// Whether `location` (a relative path) would land on one of the bundle's
/// own files.
bool collidesWithBundle(llvm::StringRef location) {
  llvm::StringRef first = *llvm::sys::path::begin(location);
  return first == kManifest || first == kSourceModel || first == "model" ||
         first == "model.o" || first == "plan.txt" ||
         first.starts_with("params.");
}
} // namespace

bool BundleWriter::writeSourceModel(const std::string &modelPath,
                                    std::string &error) {
  namespace path = llvm::sys::path;
  onnx::ModelProto model;
  if (!onnx_import::loadOnnxModel(modelPath, model, error)) {
    error = modelPath + ": " + error;
    return false;
  }
  std::string modelDir = path::parent_path(modelPath).str();
  if (modelDir.empty())
    modelDir = ".";
  // location (normalized) -> resolved source file, in a stable order.
  std::map<std::string, std::string> files;
  bool ok = true;
  forEachTensor(
      model, [&](const onnx::TensorProto &tensor, const std::string &what) {
        if (!ok || tensor.data_location() != onnx::TensorProto::EXTERNAL)
          return;
        std::string location;
        for (const onnx::StringStringEntryProto &entry : tensor.external_data())
          if (entry.key() == "location")
            location = entry.value();
        std::string real;
        if (!onnx_import::resolveExternalDataLocation(location, modelDir, what,
                                                      real, error)) {
          error = modelPath + ": " + error;
          ok = false;
          return;
        }
        llvm::SmallString<128> normalized(location);
        path::remove_dots(normalized, /*remove_dot_dot=*/false);
        files.emplace(std::string(normalized), real);
      });
  if (!ok)
    return false;

  std::string dir;
  for (auto &entry : files)
    if (collidesWithBundle(entry.first))
      dir = "source";
  auto copy = [&](const std::string &from, const std::string &relative) {
    llvm::SmallString<256> to(scratchPath);
    path::append(to, dir, relative);
    std::error_code ec = fs::create_directories(path::parent_path(to));
    if (!ec)
      ec = fs::copy_file(from, to);
    if (ec)
      error = "cannot copy '" + from + "' into the bundle: " + ec.message();
    return !ec;
  };
  if (!copy(modelPath, kSourceModel))
    return false;
  for (auto &entry : files)
    if (!copy(entry.second, entry.first))
      return false;
  sourceModelFile = dir.empty() ? kSourceModel : dir + "/" + kSourceModel;
  return true;
}

static llvm::json::Array slotsJson(mlir::ArrayAttr slots) {
  llvm::json::Array out;
  for (mlir::Attribute a : slots) {
    auto dict = mlir::cast<mlir::DictionaryAttr>(a);
    auto type = mlir::cast<mlir::RankedTensorType>(
        mlir::cast<mlir::TypeAttr>(dict.get("type")).getValue());
    llvm::json::Array shape;
    for (int64_t d : type.getShape())
      shape.push_back(d);
    out.push_back(llvm::json::Object{
        {"name", mlir::cast<mlir::StringAttr>(dict.get("name")).getValue()},
        {"shape", std::move(shape)},
        {"dtype", getDTypeName(type.getElementType())}});
  }
  return out;
}

static bool writeTextFile(const std::string &path, const std::string &text,
                          std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec) {
    error = "cannot write '" + path + "': " + ec.message();
    return false;
  }
  out << text;
  out.close();
  if (out.has_error()) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

/// The cost model's view of the plan, for the manifest.
static llvm::json::Value costModelJson(const ProgramSummary &summary) {
  if (!summary.prediction)
    return nullptr;
  const ProgramSummary::Prediction &p = *summary.prediction;
  return llvm::json::Object{
      {"cluster", p.cluster},
      {"plan_chosen_by", p.chosenBySearch ? "search" : "flags"},
      {"plans_searched", p.plansSearched},
      {"step_time_s", p.stepTime},
      {"compute_s", p.compute},
      {"exposed_comm_s", p.exposedComm},
      {"bubble_s", p.bubble},
      {"memory_bytes_per_rank", p.memoryBytes},
      {"capacity_bytes_per_rank", p.capacityBytes}};
}

bool BundleWriter::writeManifest(const std::string &modelPath,
                                 const std::string &target,
                                 const ProgramSummary &summary,
                                 std::string &error) {
  int64_t peak = summary.arenaBytes + summary.paramBytes + summary.ioBytes;
  llvm::json::Array meshAxes, meshShape, ranks;
  for (const std::string &axis : summary.meshAxes)
    meshAxes.push_back(axis);
  for (int64_t d : summary.meshShape)
    meshShape.push_back(d);
  for (int64_t rank = 0; rank < summary.worldSize(); ++rank)
    ranks.push_back(llvm::json::Object{
        {"rank", rank},
        {"params_file",
         "params.rank" + std::to_string(rank) + ".safetensors"}});
  llvm::json::Object manifest{
      {"format_version", 1},
      {"weft_version", "0.1.0"},
      {"source_model", llvm::sys::path::filename(modelPath)},
      {"mode", summary.mode},
      {"target", target},
      {"world_size", summary.worldSize()},
      {"mesh", llvm::json::Object{{"axes", std::move(meshAxes)},
                                  {"shape", std::move(meshShape)}}},
      {"plan", llvm::json::Object{{"dp", summary.dp},
                                  {"tp", summary.tp},
                                  {"pp", summary.pp},
                                  {"zero", summary.zero},
                                  {"schedule", summary.schedule},
                                  {"virtual_stages", summary.virtualStages},
                                  {"recompute", summary.recompute},
                                  {"microbatches", summary.microbatches},
                                  {"compute_dtype", summary.computeDType},
                                  {"stage_boundaries", llvm::json::Array{}}}},
      {"executable", "model"},
      {"ranks", std::move(ranks)},
      {"inputs", slotsJson(summary.inputs)},
      {"outputs", slotsJson(summary.outputs)},
      {"predicted",
       llvm::json::Object{
           {"peak_memory_bytes_per_rank", peak},
           {"memory_breakdown_bytes",
            llvm::json::Object{
                {"parameters", summary.paramBytes - summary.optimizerBytes},
                {"optimizer_state", summary.optimizerBytes},
                {"gradients", summary.gradientBytes},
                {"intermediates_arena", summary.arenaBytes},
                {"intermediates_arena_per_stage",
                 llvm::json::Array(summary.stageArenaBytes)},
                {"inputs_outputs", summary.ioBytes}}},
           {"step_time_s",
            summary.prediction ? llvm::json::Value(summary.prediction->stepTime)
                               : llvm::json::Value(nullptr)},
           {"cost_model", costModelJson(summary)}}}};
  if (!sourceModelFile.empty())
    manifest["source_model_file"] = sourceModelFile;
  if (!summary.optimizer.empty())
    manifest["optimizer"] =
        llvm::json::Object{{"lr", summary.lr},
                           {"lr_schedule", summary.lrSchedule},
                           {"warmup_steps", summary.warmupSteps},
                           {"decay_steps", summary.decaySteps},
                           {"min_lr", summary.minLr}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  return writeTextFile(path(kManifest), text, error);
}

/// Bytes in the largest unit that keeps the number at least 1.
static std::string humanBytes(int64_t bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double v = bytes / 1024.0;
  int unit = 0;
  while (v >= 1024.0 && unit < 3) {
    v /= 1024.0;
    ++unit;
  }
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2f ", v) << units[unit];
  return s;
}

/// The parameters (and optimizer state) the plan splits: each rank's block
/// of which dim, over which mesh axes.
static void writeSplitParams(llvm::raw_ostream &os,
                             const ProgramSummary &summary) {
  std::string lines;
  llvm::raw_string_ostream ls(lines);
  for (mlir::Attribute a : summary.params) {
    auto dict = mlir::cast<mlir::DictionaryAttr>(a);
    auto shard = dict.getAs<mlir::DictionaryAttr>("shard");
    if (!shard)
      continue;
    auto type = mlir::cast<mlir::RankedTensorType>(
        mlir::cast<mlir::TypeAttr>(dict.get("type")).getValue());
    int64_t dim = shard.getAs<mlir::IntegerAttr>("dim").getInt();
    int64_t outer = 1;
    if (auto o = shard.getAs<mlir::IntegerAttr>("outer"))
      outer = o.getInt();
    ls << "  " << mlir::cast<mlir::StringAttr>(dict.get("name")).getValue()
       << ": dim " << dim << " over ";
    int64_t g = 1;
    llvm::interleave(
        shard.getAs<mlir::ArrayAttr>("mesh_axes"), ls,
        [&](mlir::Attribute axis) {
          int64_t i = mlir::cast<mlir::IntegerAttr>(axis).getInt();
          g *= summary.meshShape[i];
          ls << (i < static_cast<int64_t>(summary.meshAxes.size())
                     ? summary.meshAxes[i]
                     : "axis " + std::to_string(i));
        },
        "+");
    ls << ", " << type.getDimSize(dim) << " of " << type.getDimSize(dim) * g
       << " per rank";
    if (outer != 1)
      ls << " (in " << outer << " strided blocks)";
    ls << "\n";
  }
  if (!lines.empty())
    os << "\nsplit parameters (each rank holds a block):\n" << lines;
}

bool BundleWriter::writePlanText(const std::string &modelPath,
                                 const std::string &target,
                                 const ProgramSummary &summary,
                                 std::string &error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "weft plan for " << llvm::sys::path::filename(modelPath) << "\n"
     << "target: " << target << ", world size " << summary.worldSize()
     << (summary.worldSize() == 1 ? " (single device), " : ", ")
     << (summary.mode == "train" ? "training step" : "inference") << "\n"
     << "parallelism: dp=" << summary.dp << " tp=" << summary.tp
     << " pp=" << summary.pp << " zero=" << summary.zero
     << (summary.sequenceParallel ? " sequence-parallel" : "")
     << (summary.microbatches > 1
             ? ", " + std::to_string(summary.microbatches) +
                   " microbatches per step" +
                   (summary.mode == "train" ? " (gradients accumulated)" : "") +
                   (summary.pp > 1 ? ", schedule " + summary.schedule : "") +
                   (summary.virtualStages > 1
                        ? " with " + std::to_string(summary.virtualStages) +
                              " virtual stages per rank"
                        : "")
             : std::string())
     << "\n"
     << (summary.scheduleNote.empty()
             ? std::string()
             : "pipeline schedule: " + summary.scheduleNote + "\n")
     << (summary.tpSplits.empty()
             ? std::string()
             : "tensor-parallel splits: " + summary.tpSplits + "\n")
     << (summary.recompute != "none"
             ? "activation recomputation: " + summary.recompute +
                   " (forward activations the backward reads are made "
                   "again, per segment of about sqrt(n) layers)\n"
             : std::string())
     << (summary.optimizer.empty() ? std::string()
                                   : "optimizer: " + summary.optimizer + "\n")
     << "compute dtype: " << summary.computeDType
     << (summary.computeDType == "fp32"
             ? "\n\n"
             : " (matmul and conv; the rest, parameters and optimizer state "
               "fp32)\n\n")
     << "memory per rank (planned):\n"
     << "  parameters            "
     << humanBytes(summary.paramBytes - summary.optimizerBytes) << "\n"
     << "  optimizer state       " << humanBytes(summary.optimizerBytes) << "\n"
     << "  intermediates arena   " << humanBytes(summary.arenaBytes)
     << " (static liveness-based buffer plan)\n";
  if (!summary.stageArenaBytes.empty()) {
    os << "    per pipeline stage  ";
    for (auto [s, bytes] : llvm::enumerate(summary.stageArenaBytes))
      os << (s ? ", " : "") << "stage " << s << " " << humanBytes(bytes);
    os << " (what its ranks allocate)\n";
  }
  if (summary.gradientBytes > 0)
    os << "  gradients             " << humanBytes(summary.gradientBytes)
       << " (as the optimizer reads them; they live in the arena)\n";
  os << "  inputs and outputs    " << humanBytes(summary.ioBytes) << "\n"
     << "  peak                  "
     << humanBytes(summary.paramBytes + summary.arenaBytes + summary.ioBytes)
     << "\n";
  if (summary.prediction) {
    const ProgramSummary::Prediction &p = *summary.prediction;
    os << "\ncost model (cluster " << p.cluster << "): "
       << (p.chosenBySearch ? "plan chosen by the search over " +
                                  std::to_string(p.plansSearched) + " plans"
                            : std::string("plan given by the flags"))
       << "\n"
       << llvm::format("  predicted step time  %.4g s (compute %.4g s, exposed "
                       "communication %.4g s, pipeline bubble %.4g s)\n",
                       p.stepTime, p.compute, p.exposedComm, p.bubble)
       << "  predicted memory     "
       << humanBytes(static_cast<int64_t>(p.memoryBytes)) << " per rank of "
       << humanBytes(static_cast<int64_t>(p.capacityBytes)) << "\n";
  }
  writeSplitParams(os, summary);
  os << "\nkernel launches per run (each rank):\n";
  for (auto &[kernel, count] : summary.kernelCounts)
    os << "  " << kernel << ": " << count << "\n";
  return writeTextFile(path("plan.txt"), text, error);
}

bool BundleWriter::commit(std::string &error) {
  if (fs::exists(finalPath)) {
    std::string old = finalPath + ".old-" +
                      std::to_string(llvm::sys::Process::getProcessId());
    if (std::error_code ec = fs::rename(finalPath, old)) {
      error = "cannot replace '" + finalPath + "': " + ec.message();
      return false;
    }
    if (std::error_code ec = fs::rename(scratchPath, finalPath)) {
      fs::rename(old, finalPath);
      error = "cannot move the bundle to '" + finalPath + "': " + ec.message();
      return false;
    }
    fs::remove_directories(old);
    return true;
  }
  if (std::error_code ec = fs::rename(scratchPath, finalPath)) {
    error = "cannot move the bundle to '" + finalPath + "': " + ec.message();
    return false;
  }
  return true;
}

void BundleWriter::abandon() {
  if (!scratchPath.empty())
    fs::remove_directories(scratchPath);
}
