//===- CompileOptions.h - Flags of weftc compile ------------------*- C++
//-*-===//
//
// Every flag DESIGN.md lists for `weftc compile` is parsed and validated
// here, so the names stay fixed while the features behind them arrive issue by
// issue; a flag whose feature does not exist yet is refused by
// checkImplemented() with "not implemented yet".
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_COMPILEOPTIONS_H
#define WEFT_TOOLS_WEFTC_COMPILEOPTIONS_H

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Diagnostic;
class PassManager;
} // namespace mlir

namespace weft {

/// The prices an integer program chooses tensor-parallel splits by
/// (weft-annotate-sharding's tp-* options), for one tp degree.
struct TensorParallelPrices {
  double flopSeconds = 0, byteSeconds = 0, latency = 0, memoryBytes = 0;
};

struct CompileOptions {
  std::string model;
  std::string output;
  std::string target = "cpu";
  int64_t devices = 1;
  bool devicesGiven = false; // --devices was given
  std::string cluster;
  bool autoPlan = false;
  std::optional<int64_t> dp, tp, pp, zero, microbatches, virtualStages;
  std::string schedule;
  /// Whether --schedule gave it (a plan's choice may fill `schedule`).
  bool scheduleGiven = false;
  /// Where pipeline stages 1, 2, ... start: op or parameter name prefixes.
  std::vector<std::string> stageBoundaries;
  std::string recompute = "none";
  bool recomputeGiven = false; // --recompute was given
  bool train = false;
  std::string loss, lossTarget, optimizer;
  std::vector<std::string> freeze;
  std::optional<double> lr, weightDecay, beta1, beta2, eps, momentum,
      clipGradNorm;
  /// --lr-schedule (empty: constant), --warmup-steps, --decay-steps,
  /// --min-lr (LrSchedule.h).
  std::string lrSchedule;
  std::optional<int64_t> warmupSteps, decaySteps;
  std::optional<double> minLr;
  std::string dtype = "fp32";
  /// --fuse: "elementwise" runs weft-fuse-elementwise before the lowering,
  /// "none" does not; empty picks by target (cuda fuses, cpu does not).
  std::string fuse;
  /// --align-products: "on" runs weft-align-products (odd output dimensions
  /// of products padded to a multiple of 8), "off" does not; empty picks by
  /// target (cuda aligns, cpu does not). Never under tensor parallelism.
  std::string alignProducts;
  /// --fuse-attention: "on" runs weft-fuse-attention (written-out attention
  /// as one weft.attention), "off" does not; empty picks by target (cuda
  /// fuses, cpu does not).
  std::string fuseAttention;
  /// --fuse-recompute: "off" keeps weft-recompute-elementwise from running
  /// after the fusion (default: it runs wherever weftc fuses).
  std::string fuseRecompute;
  /// --attention-seq-major on|off: fused attention reads q, k, v as [..., S,
  /// H, D] instead of after the heads' transpose (default: on for cpu, off
  /// for cuda until its kernels are checked on a GPU).
  std::string attentionSeqMajor;
  /// --fold-norm-casts on|off: weft-fold-casts lets a layer norm write the
  /// bf16/f16 its one reader, a cast, made of it (default: on for cpu, off
  /// for cuda until its kernel is checked on a GPU).
  std::string foldNormCasts;
  /// --merge-products on|off: weft-merge-products joins a sum of 2-D
  /// products (a recurrent weight's per-step gradients) into one product
  /// (default: on).
  std::string mergeProducts;
  /// Gradient all_reduce buckets, in MiB (weft-bucket-collectives).
  double bucketMb = 25.0;
  /// Activations split along the sequence over the tensor-parallel ranks.
  bool sequenceParallel = false;
  /// --no-sequence-parallel: a plan search considers plans without it only
  /// (without either flag it weighs both for language models).
  bool noSequenceParallel = false;
  /// By tp degree: the plan search prices tensor-parallel splits on its
  /// cluster; without an entry the splits are Megatron's (a pinned --tp).
  std::map<int64_t, TensorParallelPrices> tpPrices;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Developer flag: differentiate the model's first output (a scalar loss)
  /// and make the bundle return the loss and the gradients of the trainable
  /// parameters (weft-autodiff), to check gradient rules end to end.
  bool emitGradients = false;
  /// --mlir-* flags, handed to MLIR's own command-line options.
  std::vector<std::string> mlirFlags;
  bool help = false;
};

/// Parses argv (argv[0] is the program name). On failure returns false with
/// the reason in `error`.
bool parseCompileOptions(int argc, char **argv, CompileOptions &opts,
                         std::string &error, bool needOutput = true);

/// How far addLoweringPasses goes: for the planner, the forward model with
/// its loss (ProfileForward), then from there the whole training step
/// before any partitioning, every forward op its own unit
/// (weft-pipeline-stages unit-stages; ProfileStep); through weft-pipeline
/// (the scheduled, partitioned step: what a schedule diagram reads); or
/// through buffer assignment (what the bundle is made of).
enum class LowerUntil { ProfileForward, ProfileStep, Pipeline, Buffers };

/// Prints a pass's diagnostic to stderr ("LOC: error: ..."); the handler
/// weftc's commands install.
mlir::LogicalResult printDiagnostic(mlir::Diagnostic &diag);

/// Hands --mlir-* flags (IR printing, timing) to MLIR's own options.
bool applyMlirFlags(const std::vector<std::string> &flags);

/// A model imported for addLoweringPasses, with the context that owns it.
struct LoweringInput {
  std::unique_ptr<mlir::MLIRContext> context;
  std::optional<OnnxImportResult> imported;
};

/// Applies --mlir-* flags, makes a context with weft's dialects and imports
/// opts.model; on failure the reason is in `error` (bad input). With
/// `structureOnly`, initializers stored as external data are not read (the
/// planner needs their shapes only).
bool importForLowering(const CompileOptions &opts, LoweringInput &input,
                       std::string &error, bool structureOnly = false);

/// The passes from the imported model to the options' program.
void addLoweringPasses(mlir::PassManager &pm, const CompileOptions &opts,
                       LowerUntil until);

/// Whether weft-align-products pads the options' products (--align-products
/// on, or by default for --target cuda; not under tensor parallelism, whose
/// vocabulary split expects the real width).
bool alignsProducts(const CompileOptions &opts);

/// The passes on one rank's partitioned step before it is lowered to
/// runtime calls: merged slice gradients, then (--fuse elementwise, or by
/// default for --target cuda) elementwise fusion. The planner's profile
/// (`profile`) runs them on each tensor-parallel partition, fusing across
/// its per-op units as a one-stage program would.
void addRankStepPasses(mlir::PassManager &pm, const CompileOptions &opts,
                       bool profile = false);

/// The pipeline schedule the options ask for: "none" without --pp, else
/// --schedule, by default interleaved with --virtual-stages, else 1f1b.
std::string pipelineSchedule(const CompileOptions &opts);

/// Model chunks per pipeline stage: --virtual-stages (2 by default) for the
/// interleaved schedule, else 1.
int64_t pipelineVirtualStages(const CompileOptions &opts);

/// Refuses, with the reason, options whose feature is not implemented yet.
bool checkImplemented(const CompileOptions &opts, std::string &error);

/// Reconciles --devices with the parallel degrees (--devices defaults to
/// their product; a mismatch is an error) and sets opts.devices.
bool resolveDevices(CompileOptions &opts, std::string &error);

/// Parses NAME=D0xD1x... (a scalar is NAME=). Used by import and compile.
bool parseInputShape(const std::string &spec, std::string &name,
                     std::vector<int64_t> &dims, std::string &error);

extern const char *const kCompileUsage;

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_COMPILEOPTIONS_H
