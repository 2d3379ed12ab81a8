//===- Profile.h - What a model's training step costs, op by op -*- C++ -*-===//
//
// The planner's view of a model: the training step built once (loss,
// autodiff, optimizer; every forward op tagged with its position by
// weft-pipeline-stages' unit mode, which autodiff passes on to the gradient
// ops), then partitioned for each tensor-parallel degree by weft's own
// partitioner, so the per-rank work and the collectives are those weft
// would compile. Each op becomes a record: its unit (the forward op it
// belongs to), its phase, FLOPs and bytes per rank for the whole global
// batch, and whether it scales with the batch rows. Data parallelism,
// ZeRO, microbatches and pipeline stages are applied analytically by the
// cost model (CostModel.h); the stage cuts come from the same analysis
// weft-pipeline-stages uses (passes/StageCuts.h).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_PROFILE_H
#define WEFT_TOOLS_WEFTC_PLANNER_PROFILE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace weft {
struct CompileOptions;
}

namespace weft::planner {

enum class Phase : uint8_t { Forward, Backward, WeightGrad, Optimizer };

struct OpRecord {
  int32_t unit = 0;
  Phase phase = Phase::Forward;
  /// A product (matmul, convolution): runs at the GEMM rate of its dtype.
  bool product = false;
  bool bf16 = false;
  /// Work proportional to the batch rows (else fixed per execution).
  bool batch = false;
  double flops = 0, bytes = 0;
  /// Of `bytes`, the results' (written).
  double resultBytes = 0;
  /// A matrix product's smallest GEMM dimension for the whole batch, and
  /// whether that dimension shrinks with the batch rows (a skinny product
  /// runs below the GEMM rate of its FLOPs).
  double minDim = 1e9;
  bool minDimScales = false;
  /// The runtime kernel (ModelProfile::kernels), for calibrated rates.
  uint16_t kernel = 0;
  /// Of a product's operands and results, the bytes that do not scale with
  /// the batch (weights, weight gradients): a step touches each once, so
  /// they come from beyond the core's cache when the model outgrows it.
  double stateBytes = 0;
};

/// A collective the tensor-parallel partition put in the step.
struct CollectiveRecord {
  int32_t unit = 0;
  Phase phase = Phase::Forward;
  std::string kind; // all_reduce, all_gather, reduce_scatter, all_to_all
  double bytes = 0; // full (gathered) size per rank
  bool batch = false;
  /// Where weft-async-collectives starts it and waits for it, as positions
  /// in TpProfile::ops: the records before its start and before its wait.
  /// The ops in between run while it travels; equal: it blocks.
  int32_t start = 0, wait = 0;
  /// A gather of a parameter, prefetched: it starts where the one before
  /// it is waited for.
  bool prefetch = false;
};

/// A statistic of the whole batch that rows of the step wait for, such as
/// a training-mode BatchNormalization's mean and variance (forward) and
/// the sums its input gradient needs (backward). weft-microbatch sums it
/// over the microbatches and data parallelism all-reduces it before any
/// row goes on, so every microbatch's activations up to it are alive at
/// once, and a pipeline stage that computes it from another stage's
/// activations needs all the microbatches' forwards first. Statistics of
/// the inputs alone (a loss's label count) do not count.
struct BatchCoupling {
  int32_t unit = 0;   ///< the earliest unit whose rows read it
  int32_t source = 0; ///< the earliest unit of the activations it sums
  Phase phase = Phase::Forward;
  double bytes = 0; ///< what a data-parallel all-reduce of it carries
};

/// Per unit, bytes one tensor-parallel rank holds.
struct UnitBytes {
  double params = 0, gradients = 0, optimizer = 0;
  /// Forward activations kept for the backward, for the whole batch;
  /// `products` of them are matmul/conv outputs.
  double saved = 0, savedProducts = 0;
};

/// A parameter the forward ops of several units read (tied embeddings and
/// LM head): it lives on the stage of the first, and weft-pipeline sends
/// its value to every other stage that reads it once per step, and that
/// stage's sum of its gradient back once per step.
struct SharedParam {
  std::vector<int32_t> units; ///< the units that read it, in order
  double bytes = 0;           ///< per rank
  bool trainable = false;
};

struct TpProfile {
  int64_t tp = 1;
  /// In the order of the whole model's program (a left-out identical
  /// layer's records are copies of its template layer's).
  std::vector<OpRecord> ops;
  std::vector<CollectiveRecord> collectives;
  std::vector<UnitBytes> units;
  /// The workspace: the most batch-sized bytes one op reads and writes
  /// that are not activations kept for the backward, for the whole batch.
  double largestOpBytes = 0;
  /// The largest parameter one rank holds (ZeRO-3 gathers one at a time).
  double largestParamBytes = 0;
  std::vector<SharedParam> sharedParams;
  /// What the integer program chose for the tensor-parallel splits (empty
  /// for Megatron's; weft-annotate-sharding's weft.tp_plan).
  std::string splits;
};

struct ModelProfile {
  std::string model;
  bool train = false;
  std::string dtype = "fp32";
  int64_t batch = 1;  // rows of the global batch
  int64_t units = 0;  // forward compute ops
  double ioBytes = 0; // inputs and outputs of the whole batch
  double paramCount = 0;
  /// From passes/StageCuts.h, on the forward model.
  std::vector<int64_t> layerBoundaries, cost, crossingBytes;
  /// Per tensor-parallel degree, its program's profile; under key -tp,
  /// its sequence-parallel variant's (tpProfileKey).
  std::map<int64_t, TpProfile> byTp;
  /// Kernel names OpRecord::kernel indexes ("" first: not a kernel).
  std::vector<std::string> kernels{""};
  /// The batch statistics of the training step (found on a copy
  /// partitioned over two microbatches; empty when the batch is odd).
  std::vector<BatchCoupling> couplings;
  /// Degrees the partition refused, with its reason.
  std::map<int64_t, std::string> tpRefused;
  double seconds = 0; // time to build the profile
  /// Identical layers found (0: none); all but three were left out of the
  /// profile and stand in for by the middle one.
  int64_t repeatedLayers = 0;
};

/// Builds the profile of opts' model (imported structure-only: external
/// initializer data need not exist) for each degree in `tpDegrees`.
/// The key of ModelProfile::byTp and tpRefused for a plan's program.
inline int64_t tpProfileKey(int64_t tp, bool sequenceParallel) {
  return sequenceParallel && tp > 1 ? -tp : tp;
}

/// Which programs buildProfile profiles at each degree above 1: as
/// opts.sequenceParallel says, or both with and without sequence
/// parallelism (for a search that may choose it; the sequence-parallel one
/// only for a model with token inputs, [batch, sequence] of integers).
enum class SequenceVariants { AsOptions, Both };

bool buildProfile(const CompileOptions &opts,
                  const std::vector<int64_t> &tpDegrees, ModelProfile &profile,
                  std::string &error,
                  SequenceVariants sequence = SequenceVariants::AsOptions);

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_PROFILE_H
