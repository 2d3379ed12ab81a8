//===- BundleWriter.h - Writes a bundle directory ----------------*- C++
//-*-===//
//
// A bundle (DESIGN.md) is built in a scratch directory beside its final
// place and renamed over it only when complete, so a failed compile never
// leaves a half-written bundle, and an existing one stays intact.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_BUNDLEWRITER_H
#define WEFT_TOOLS_WEFTC_BUNDLEWRITER_H

#include "frontends/onnx/ParamTable.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace weft {

/// What the compiler knows about one rank's program once buffers are
/// assigned: its signature slots and memory plan.
struct ProgramSummary {
  mlir::ArrayAttr inputs, params, outputs; // {name, type} dictionaries
  std::string mode = "inference";          // or "train"
  std::string computeDType = "fp32";       // or "bf16" (--dtype)
  std::vector<int64_t> meshShape;          // empty: one device
  std::vector<std::string> meshAxes;
  int64_t dp = 1, tp = 1, pp = 1, zero = 0, microbatches = 1;
  std::string schedule = "none";
  /// Why the schedule run is not the one asked for (empty: it is).
  std::string scheduleNote;
  int64_t virtualStages = 1;      // model chunks per stage (interleaved)
  std::string recompute = "none"; // activation recomputation (--recompute)
  bool sequenceParallel = false;  // --sequence-parallel (tp > 1)
  /// The training step's optimizer in words (empty: inference).
  std::string optimizer;
  /// Its learning rate and schedule (manifest.json's "optimizer"; the
  /// trainer reports each step's rate from them).
  double lr = 0, minLr = 0;
  std::string lrSchedule = "constant";
  int64_t warmupSteps = 0, decaySteps = 0;
  /// How the search's integer program split the tensor-parallel weights
  /// (empty: Megatron's splits, as for a pinned --tp).
  std::string tpSplits;
  int64_t worldSize() const {
    int64_t n = 1;
    for (int64_t d : meshShape)
      n *= d;
    return n;
  }
  int64_t arenaBytes = 0;
  std::vector<int64_t> stageArenaBytes; // a pipeline: each stage's part
  int64_t paramBytes = 0;               // every persistent buffer
  int64_t optimizerBytes = 0;           // of which optimizer state and step
  int64_t ioBytes = 0;
  int64_t gradientBytes = 0; // read by the optimizer (inside the arena)
  std::map<std::string, int64_t> kernelCounts;
  /// The cost model's prediction for this plan (absent when the model
  /// could not be profiled).
  struct Prediction {
    std::string cluster;
    bool chosenBySearch = false;
    int64_t plansSearched = 0;
    double stepTime = 0, compute = 0, exposedComm = 0, bubble = 0;
    double memoryBytes = 0, capacityBytes = 0;
  };
  std::optional<Prediction> prediction;
};

class BundleWriter {
public:
  /// Prepares a scratch directory for the bundle at `finalPath`. Refuses a
  /// `finalPath` that exists and is not a weft bundle.
  bool begin(const std::string &finalPath, std::string &error);
  /// Path of a file inside the scratch directory.
  std::string path(const std::string &name) const;
  /// Writes the parameters listed in `summary.params`, in that order.
  bool writeParams(const ProgramSummary &summary, const ParamTable &table,
                   std::string &error);
  /// Copies the ONNX model at `modelPath` into the bundle byte for byte as
  /// source.onnx, and every external data file it names to the same place
  /// relative to it (locations are checked as the importer checks them).
  /// When a location would collide with a file of the bundle itself, the
  /// model and its data go to the subdirectory source/ instead. The manifest
  /// names the copy ("source_model_file"); `weft export` rewrites it.
  bool writeSourceModel(const std::string &modelPath, std::string &error);
  bool writeManifest(const std::string &modelPath, const std::string &target,
                     const ProgramSummary &summary, std::string &error);
  bool writePlanText(const std::string &modelPath, const std::string &target,
                     const ProgramSummary &summary, std::string &error);
  /// Moves the finished bundle into place.
  bool commit(std::string &error);
  /// Removes the scratch directory (after a failure).
  void abandon();

private:
  std::string finalPath, scratchPath;
  std::string sourceModelFile; ///< relative to the bundle; "" until written
};

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_BUNDLEWRITER_H
